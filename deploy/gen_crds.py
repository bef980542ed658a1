#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generates the tensor-fusion.ai/v1 CustomResourceDefinitions of the Helm chart
(deploy/helm/tensor-fusion/crds/*.yaml) from the compact field tables below, so the nine CRDs
share one definition of quantities, resource pairs and conditions. The spec/status fields are
those of the seeds (000 architecture, 001 workload configuration, 002 efficiency, 004
migration). Run after editing: python3 deploy/gen_crds.py; tests/controller/test_helm.sh
checks that the committed files match.

Usage: gen_crds.py [--check]   (--check: exit 1 when a committed file differs)
"""
import os
import sys

import yaml

GROUP = "tensor-fusion.ai"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "helm", "tensor-fusion", "crds")


def s(desc=None, **kw):
    out = {"type": "string"}
    if desc:
        out["description"] = desc
    out.update(kw)
    return out


def i(desc=None, **kw):
    out = {"type": "integer"}
    if desc:
        out["description"] = desc
    out.update(kw)
    return out


def b(desc=None):
    out = {"type": "boolean"}
    if desc:
        out["description"] = desc
    return out


def q(desc):
    """A Kubernetes quantity: string or number."""
    out = {"anyOf": [{"type": "integer"}, {"type": "string"}],
           "x-kubernetes-int-or-string": True}
    if desc:
        out["description"] = desc
    return out


def obj(props=None, desc=None, required=None, open_=False):
    out = {"type": "object"}
    if desc:
        out["description"] = desc
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    if open_:
        out["x-kubernetes-preserve-unknown-fields"] = True
    return out


def arr(items, desc=None):
    out = {"type": "array", "items": items}
    if desc:
        out["description"] = desc
    return out


def strmap(desc=None):
    out = {"type": "object", "additionalProperties": {"type": "string"}}
    if desc:
        out["description"] = desc
    return out


def res(desc):
    return obj({"tflops": q("FP16 TFLOPS per GPU, e.g. \"10\" or \"0.5\""),
                "vram": q("VRAM per GPU, Kubernetes quantity, e.g. 4Gi"),
                "computePercent": q("percent of one GPU (0-100), exclusive with tflops")}, desc)


def req_lim(desc):
    return obj({"requests": res("reserved per GPU"), "limits": res("enforced per GPU")}, desc)


ISOLATION = s("isolation mode", enum=["shared", "soft", "hard", "partitioned"])
QOS = s("QoS level", enum=["low", "medium", "high", "critical"])
CONDITIONS = arr(obj({"type": s(), "status": s(), "reason": s(), "message": s(),
                      "lastTransitionTime": s(format="date-time"),
                      "observedGeneration": i()}, required=["type", "status"]),
                 "standard Kubernetes conditions")
PHASE = s("lifecycle phase")
CAPACITY = obj({"tflops": q("TFLOPS"), "vram": q("VRAM bytes as a quantity")})
LABEL_SELECTOR = obj({"matchLabels": strmap(), "matchExpressions": arr(obj({
    "key": s(), "operator": s(), "values": arr(s())}, required=["key", "operator"]))})
AUTOSCALING = obj({
    "autoSetResources": obj({"enable": b(), "targetResource": s(enum=["compute", "vram", "all"]),
                             "targetCPUPercentile": s(), "lowerBoundPercentile": s(),
                             "upperBoundPercentile": s(), "requestMarginFraction": s(),
                             "confidenceInterval": s(), "historyLength": s()}),
    "autoSetReplicas": obj(open_=True), "cronScalingRules": arr(obj(open_=True))},
    "autoscaling (seed 002)", open_=True)

WORKLOAD_FIELDS = {
    "resources": req_lim("per-GPU compute and VRAM"),
    "replicas": i("number of workers, usually the Deployment's replicas", minimum=0),
    "isLocalGPU": b("run on the GPU node that hosts the worker"),
    "poolName": s("GPUPool"),
    "qos": QOS,
    "isolation": ISOLATION,
    "gpuCount": i("GPUs per worker", minimum=1, maximum=128),
    "gpuModel": s("GPU model, e.g. A100"),
    "vendor": s("GPU vendor"),
    "gpuIndices": arr(i(minimum=0, maximum=127), "candidate device indices"),
    "dedicatedGPU": b("take whole GPUs of gpuModel"),
    "autoScalingConfig": AUTOSCALING,
}

POOL_SPEC = obj({
    "capacityConfig": obj({
        "minResources": CAPACITY, "maxResources": CAPACITY, "warmResources": CAPACITY,
        "oversubscription": obj({
            "tflopsOversellRatio": i("virtual TFLOPS capacity in percent (default 500)"),
            "vramExpandToHostMem": i("percent of VRAM that may spill to host memory"),
            "vramExpandToHostDisk": i("percent of VRAM that may spill to host disk")})}),
    "nodeManagerConfig": obj({
        "provisioningMode": s(enum=["AutoSelect", "Provisioned", "Karpenter"]),
        "defaultIsolationMode": ISOLATION,
        "isolationModeRules": arr(obj({"isolation": ISOLATION, "nodeSelector": LABEL_SELECTOR})),
        "nodeSelector": obj({"nodeSelectorTerms": arr(obj(open_=True))}, open_=True),
        "nodeCompaction": obj({"period": s(), "defrag": obj({
            "enabled": b(), "schedule": s("5-field cron"), "timezone": s("IANA time zone"),
            "maxDuration": s(), "utilizationThresholdPercent": i(minimum=0, maximum=100)})}),
        "nodePoolRollingUpdatePolicy": obj(open_=True)}),
    "qosConfig": obj({"defaultQoS": QOS, "definitions": arr(obj(open_=True)),
                      "pricing": arr(obj({"qos": QOS, "requests": obj(open_=True),
                                          "limitsOverRequests": obj(open_=True)}, open_=True))}),
    "schedulingConfigTemplate": s("SchedulingConfigTemplate name"),
    "defaultUsingLocalGPU": b("local GPU mode unless a pod says otherwise (default true)"),
    "componentConfig": obj(open_=True),
}, "pool settings")

POOL_STATUS = {
    "phase": PHASE, "conditions": CONDITIONS,
    "totalNodes": i(), "readyNodes": i(), "notReadyNodes": i(), "totalGPUs": i(),
    "totalTFlops": q("sum of GPU TFLOPS"), "totalVRAM": q("sum of GPU VRAM"),
    "virtualTFlops": q("TFLOPS after oversubscription"),
    "availableTFlops": q(""), "availableVRAM": q(""),
    "allocatedTFlops": q(""), "allocatedVRAM": q(""), "runningAppsCnt": i(),
}

CRDS = [
    dict(kind="TensorFusionCluster", plural="tensorfusionclusters", short=["tfc"],
         scoped="Cluster",
         spec={"gpuPools": arr(obj({"name": s("pool name; the derived GPUPool's name"),
                                    "isDefault": b("the pool pods use when they name none"),
                                    "specTemplate": POOL_SPEC}, required=["name"])),
               "computingVendor": obj({"name": s(), "type": s(), "params": obj(open_=True)}),
               "storageVendor": obj(open_=True), "dataPipelines": obj(open_=True)},
         status={"phase": PHASE, "conditions": CONDITIONS, "totalPools": i(), "totalNodes": i(),
                 "totalGPUs": i(), "totalTFlops": q(""), "totalVRAM": q(""),
                 "availableTFlops": q(""), "availableVRAM": q(""),
                 "readyGPUPools": arr(s()), "notReadyGPUPools": arr(s())},
         columns=[("Phase", ".status.phase"), ("Pools", ".status.totalPools", "integer"),
                  ("GPUs", ".status.totalGPUs", "integer")]),
    dict(kind="GPUPool", plural="gpupools", short=["gp"], scoped="Cluster",
         spec=POOL_SPEC["properties"], status=POOL_STATUS,
         columns=[("Phase", ".status.phase"), ("Nodes", ".status.totalNodes", "integer"),
                  ("GPUs", ".status.totalGPUs", "integer"),
                  ("Available TFLOPS", ".status.availableTFlops"),
                  ("Available VRAM", ".status.availableVRAM")]),
    dict(kind="GPUNode", plural="gpunodes", short=["gn"], scoped="Cluster",
         spec={"manageMode": s(enum=["Auto", "Manual", "Provisioned"]),
               "costPerHour": s(), "instanceType": s(), "region": s(), "zone": s()},
         status={"phase": PHASE, "conditions": CONDITIONS, "totalGPUs": i(), "managedGPUs": i(),
                 "managedGPUDeviceIDs": arr(s()), "totalTFlops": q(""), "totalVRAM": q(""),
                 "availableTFlops": q(""), "availableVRAM": q(""),
                 "allocatedPods": {"type": "object", "additionalProperties": arr(s()),
                                   "description": "GPU uuid -> namespace/pod allocated on it"},
                 "nodeInfo": obj({"hostname": s(), "ip": s(), "kernelVersion": s(),
                                  "os": s(), "driverVersion": s(), "cudaVersion": s()},
                                 open_=True),
                 "hypervisorStatus": obj(open_=True), "message": s()},
         columns=[("Phase", ".status.phase"), ("GPUs", ".status.totalGPUs", "integer"),
                  ("Total TFLOPS", ".status.totalTFlops"),
                  ("Available TFLOPS", ".status.availableTFlops"),
                  ("Available VRAM", ".status.availableVRAM")]),
    dict(kind="GPU", plural="gpus", short=[], scoped="Cluster",
         spec=None,
         status={"phase": PHASE, "uuid": s("device UUID"), "gpuModel": s("model, e.g. A100-80GB"),
                 "vendor": s(), "index": i(), "numaNode": i(),
                 "nodeSelector": strmap("kubernetes.io/hostname of the node"),
                 "capacity": CAPACITY, "available": CAPACITY,
                 "isolationMode": ISOLATION, "partitionTemplates": arr(obj(open_=True)),
                 "runningApps": arr(obj({"name": s(), "namespace": s(), "count": i()})),
                 "message": s()},
         columns=[("Model", ".status.gpuModel"), ("Phase", ".status.phase"),
                  ("Node", ".status.nodeSelector.kubernetes\\.io/hostname"),
                  ("TFLOPS", ".status.capacity.tflops"), ("VRAM", ".status.capacity.vram"),
                  ("Available TFLOPS", ".status.available.tflops"),
                  ("Available VRAM", ".status.available.vram")]),
    dict(kind="TensorFusionWorkload", plural="tensorfusionworkloads", short=["tfw"],
         scoped="Namespaced",
         spec=WORKLOAD_FIELDS,
         status={"phase": PHASE, "conditions": CONDITIONS, "workerCount": i(),
                 "readyWorkers": i(), "podTemplateHash": s(),
                 "workerStatuses": arr(obj({"name": s(), "phase": s(), "node": s(),
                                            "gpuIds": arr(s())}, open_=True)),
                 "recommendation": req_lim("autoscaler recommendation (seed 002)"),
                 "activeCronScalingRule": obj(open_=True)},
         columns=[("Pool", ".spec.poolName"), ("Isolation", ".spec.isolation"),
                  ("Workers", ".status.workerCount", "integer"),
                  ("Ready", ".status.readyWorkers", "integer"), ("Phase", ".status.phase")]),
    dict(kind="TensorFusionConnection", plural="tensorfusionconnections", short=["tfconn"],
         scoped="Namespaced",
         spec={"workloadName": s("TensorFusionWorkload the client belongs to"),
               "clientPod": s("the remote client pod")},
         status={"phase": PHASE, "workerName": s("the worker pod paired with the client"),
                 "connectionURL": s("tcp://host:port the client dials"),
                 "resourceVersion": s(), "conditions": CONDITIONS},
         columns=[("Worker", ".status.workerName"), ("URL", ".status.connectionURL"),
                  ("Phase", ".status.phase")]),
    dict(kind="WorkloadProfile", plural="workloadprofiles", short=["wp"], scoped="Namespaced",
         spec=WORKLOAD_FIELDS, status=None,
         columns=[("Pool", ".spec.poolName"), ("QoS", ".spec.qos")]),
    dict(kind="SchedulingConfigTemplate", plural="schedulingconfigtemplates", short=["sct"],
         scoped="Cluster",
         spec={"placement": obj({
             "mode": s(enum=["CompactFirst", "LowLoadFirst", "NodeCompactGPULowLoad"]),
             "allowUsingLocalGPU": b(), "gpuFilters": arr(obj(open_=True)),
             "vramWeight": s("score weight of VRAM (default 0.7)"),
             "tflopsWeight": s("score weight of TFLOPS (default 0.3)")}),
               "verticalScalingRules": arr(obj(open_=True)),
               "hypervisor": obj(open_=True), "reBalancer": obj(open_=True)},
         status=None, columns=[("Placement", ".spec.placement.mode")]),
    dict(kind="GPUResourceQuota", plural="gpuresourcequotas", short=["gq"],
         scoped="Namespaced",
         spec={"total": obj({"requests": res(""), "limits": res(""),
                             "maxWorkers": i(minimum=0),
                             "alertThresholdPercent": i(minimum=0, maximum=100)}),
               "single": obj({"maxRequests": res(""), "maxLimits": res(""),
                              "minRequests": res(""), "defaultRequests": res(""),
                              "defaultLimits": res(""), "maxGPUCount": i(minimum=1)})},
         status={"used": obj({"requests": res(""), "limits": res(""), "workers": i()}),
                 "availablePercent": obj({"requestsTFlops": s(), "requestsVRAM": s(),
                                          "limitsTFlops": s(), "limitsVRAM": s(),
                                          "workers": s()}),
                 "conditions": CONDITIONS},
         columns=[("Used TFLOPS", ".status.used.requests.tflops"),
                  ("Used VRAM", ".status.used.requests.vram"),
                  ("Workers", ".status.used.workers", "integer")]),
]


def crd(d):
    props = {"apiVersion": s(), "kind": s(), "metadata": {"type": "object"}}
    if d["spec"] is not None:
        props["spec"] = obj(d["spec"])
    if d["status"] is not None:
        props["status"] = obj(d["status"])
    version = {"name": "v1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": obj(props, "%s (tensor-fusion.ai/v1)" % d["kind"])}}
    if d["status"] is not None:
        version["subresources"] = {"status": {}}
    cols = [{"name": c[0], "jsonPath": c[1], "type": c[2] if len(c) > 2 else "string"}
            for c in d["columns"]]
    cols.append({"name": "Age", "jsonPath": ".metadata.creationTimestamp", "type": "date"})
    version["additionalPrinterColumns"] = cols
    names = {"kind": d["kind"], "listKind": d["kind"] + "List", "plural": d["plural"],
             "singular": d["kind"].lower()}
    if d["short"]:
        names["shortNames"] = d["short"]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (d["plural"], GROUP)},
            "spec": {"group": GROUP, "names": names, "scope": d["scoped"],
                     "versions": [version]}}


def main():
    check = "--check" in sys.argv[1:]
    os.makedirs(OUT, exist_ok=True)
    bad = 0
    for d in CRDS:
        text = ("# Generated by deploy/gen_crds.py: edit that file, not this one.\n" +
                yaml.safe_dump(crd(d), sort_keys=False, default_flow_style=False, width=100))
        path = os.path.join(OUT, "%s.%s.yaml" % (d["plural"], GROUP))
        if check:
            try:
                with open(path) as f:
                    same = f.read() == text
            except OSError:
                same = False
            if not same:
                print("stale: %s (run python3 deploy/gen_crds.py)" % path)
                bad = 1
        else:
            with open(path, "w") as f:
                f.write(text)
    sys.exit(bad)


if __name__ == "__main__":
    main()
