# SPDX-License-Identifier: Apache-2.0
"""Schema building blocks of the tensor-fusion.ai/v1 CRDs (deploy/gen_crds.py).

Helpers for OpenAPI v3 structural schemas, and the types several kinds share: Kubernetes
quantities, TensorFusion's resource pairs, conditions, label and node selectors, node affinity.
Field names, types, enums and defaults follow upstream TensorFusion's API (github.com/NexusGPU/
tensor-fusion, api/v1) so that its users' objects validate here unchanged; the descriptions are
ours.
"""

# The Kubernetes resource.Quantity syntax (apimachinery), as every CRD generator writes it.
QUANTITY_PATTERN = (r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$")


def _put(out, desc, kw):
    if desc:
        out["description"] = desc
    out.update({k.replace("_", "-") if k.startswith("x_") else k: v for k, v in kw.items()})
    return out


def s(desc=None, **kw):
    """string (enum=, default=, pattern=, format=, maxLength= ...)"""
    return _put({"type": "string"}, desc, kw)


def i(desc=None, fmt="int32", **kw):
    """integer (format int32 unless fmt= says otherwise; minimum=, maximum=, default=)"""
    out = {"type": "integer"}
    if fmt:
        out["format"] = fmt
    return _put(out, desc, kw)


def b(desc=None, **kw):
    return _put({"type": "boolean"}, desc, kw)


def q(desc=None):
    """A Kubernetes quantity: an integer or a string such as "10", "0.5", "4Gi"."""
    out = {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": QUANTITY_PATTERN,
           "x-kubernetes-int-or-string": True}
    if desc:
        out["description"] = desc
    return out


def obj(props=None, desc=None, required=None, open_=False, **kw):
    """object with PROPS; open_ keeps unknown fields (x-kubernetes-preserve-unknown-fields)."""
    out = {"type": "object"}
    if desc:
        out["description"] = desc
    if props:
        out["properties"] = props
    if required:
        out["required"] = list(required)
    if open_:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return _put(out, None, kw)


def arr(items, desc=None, **kw):
    return _put({"type": "array", "items": items}, desc, kw)


def smap(desc=None, values=None):
    """map of string (or VALUES) by string key"""
    return _put({"type": "object", "additionalProperties": values or {"type": "string"}}, desc,
                {})


def raw(desc=None):
    """Any JSON object, kept as it is (a runtime.RawExtension upstream)."""
    return obj(desc=desc, open_=True)


ISOLATION_MODES = ["shared", "soft", "hard", "partitioned"]
QOS_LEVELS = ["low", "medium", "high", "critical"]


def isolation(desc="isolation mode", **kw):
    return s(desc, enum=ISOLATION_MODES, **kw)


def qos(desc="QoS level", **kw):
    return s(desc, enum=QOS_LEVELS, **kw)


def resource(desc=None):
    """TensorFusion's Resource: per-GPU compute and memory. Upstream requires tflops and vram;
    here every field is optional (a percent-only side is valid, docs/spec.md)."""
    return obj({"tflops": q("TFLOPS (FP16, dense) per GPU, e.g. \"10\" or \"0.5\""),
                "vram": q("memory per GPU, e.g. 4Gi"),
                "compute": q("percent of one GPU's compute (0-100), exclusive with tflops"),
                "computePercent": q("former name of compute, still read; compute is written")},
               desc)


def resource_status(desc=None):
    """A Resource written by our components: tflops and vram required, as upstream."""
    out = resource(desc)
    out["required"] = ["tflops", "vram"]
    return out


def resources(desc=None):
    return obj({"requests": resource("reserved per GPU"),
                "limits": resource("enforced per GPU")}, desc)


def condition():
    """metav1.Condition."""
    return obj({
        "type": s("condition type, CamelCase or foo.example.com/CamelCase", maxLength=316,
                  pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"),
        "status": s(enum=["True", "False", "Unknown"]),
        "observedGeneration": i(fmt="int64", minimum=0),
        "lastTransitionTime": s(format="date-time"),
        "reason": s("CamelCase reason", maxLength=1024, minLength=1,
                    pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
        "message": s(maxLength=32768)},
        "one aspect of the object's state",
        required=["lastTransitionTime", "message", "reason", "status", "type"])


def conditions():
    return arr(condition(), "standard Kubernetes conditions")


def label_selector(desc=None):
    return obj({"matchLabels": smap(), "matchExpressions": arr(obj({
        "key": s(), "operator": s("In, NotIn, Exists or DoesNotExist"),
        "values": arr(s(), x_kubernetes_list_type="atomic")}, required=["key", "operator"]),
        x_kubernetes_list_type="atomic")}, desc, x_kubernetes_map_type="atomic")


def _node_selector_requirements():
    return arr(obj({"key": s(), "operator": s("In, NotIn, Exists, DoesNotExist, Gt or Lt"),
                    "values": arr(s(), x_kubernetes_list_type="atomic")},
                   required=["key", "operator"]), x_kubernetes_list_type="atomic")


def node_selector_term():
    return obj({"matchExpressions": _node_selector_requirements(),
                "matchFields": _node_selector_requirements()},
               x_kubernetes_map_type="atomic")


def node_selector(desc=None):
    return obj({"nodeSelectorTerms": arr(node_selector_term(), "ORed terms",
                                         x_kubernetes_list_type="atomic")}, desc,
               required=["nodeSelectorTerms"], x_kubernetes_map_type="atomic")


def node_affinity(desc=None):
    return obj({
        "requiredDuringSchedulingIgnoredDuringExecution": node_selector(),
        "preferredDuringSchedulingIgnoredDuringExecution": arr(obj(
            {"preference": node_selector_term(), "weight": i("1-100")},
            required=["preference", "weight"]), x_kubernetes_list_type="atomic")}, desc)


def phase(values, default, desc="lifecycle phase"):
    return s(desc, enum=values, default=default)
