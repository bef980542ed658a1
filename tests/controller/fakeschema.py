# SPDX-License-Identifier: Apache-2.0
"""What kube-apiserver does with a custom resource's structural schema, for fakeapi.py.

kube-apiserver is not available on the build machines, so the in-memory API server must be as
strict as the real one about CRDs, or schema mistakes in our CRDs and in the objects our code
writes go unnoticed. For every write of a custom resource this module applies, in the order the
real server does:

  1. pruning: fields the schema does not declare are dropped (x-kubernetes-preserve-unknown-fields
     keeps a subtree, additionalProperties declares map keys; at the root and in embedded
     resources apiVersion/kind are kept and metadata is cut to ObjectMeta's fields). The dropped
     paths are reported so the caller can warn ("unknown field \"spec.foo\"") or, with
     fieldValidation=Strict, refuse the request;
  2. nulls of fields that are not nullable are dropped;
  3. defaulting: a missing field whose schema has a default gets it (objects that exist only);
  4. validation: type (integer, number, string, boolean, object, array, int-or-string), enum,
     required, pattern, minimum/maximum (exclusive too), minLength/maxLength, minItems/maxItems,
     minProperties/maxProperties, format date-time, allOf/anyOf, with kube-apiserver's messages
     and field paths (spec.qos: Unsupported value: "ultra": supported values: ...).

It also renders `kubectl get` tables (meta.k8s.io/v1 Table) from additionalPrinterColumns with
the simple JSONPath subset CRDs allow (.a.b, escaped dots, ["key"], [n]).

Not modelled: CEL rules (x-kubernetes-validations), list-type set/map uniqueness, ratcheting of
unchanged invalid values, formats other than date-time. Pure functions; no I/O.
"""
import copy
import datetime
import json
import re

OBJECT_META_FIELDS = {
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields",
}
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def join(path, key):
    return key if not path else path + "." + key


def json_type(v):
    """The JSON type name kube-apiserver reports for a value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def go_value(v):
    """A value in an error message, as Go's %#v-ish formatting of kube-apiserver shows it."""
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (int, float)):
        return repr(v)
    return '"%s"' % json_type(v)


def is_int_or_string(s):
    return bool(s.get("x-kubernetes-int-or-string"))


# ---- pruning ---------------------------------------------------------------------------------

def prune(obj, schema, pruned, path="", root=True):
    """Drops from OBJ (in place) what SCHEMA does not declare; appends dropped paths to PRUNED."""
    _prune(obj, schema or {}, pruned, path, root)


def _prune(obj, s, pruned, path, resource):
    if isinstance(obj, dict):
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        keep_all = bool(s.get("x-kubernetes-preserve-unknown-fields"))
        embedded = resource or s.get("x-kubernetes-embedded-resource")
        for k in list(obj):
            p = join(path, k)
            if embedded and k in ("apiVersion", "kind"):
                continue
            if embedded and k == "metadata":
                if isinstance(obj[k], dict):
                    for mk in list(obj[k]):
                        if mk not in OBJECT_META_FIELDS:
                            del obj[k][mk]
                            pruned.append(join(p, mk))
                continue
            if k in props:
                _prune(obj[k], props[k], pruned, p, False)
            elif isinstance(addl, dict):
                _prune(obj[k], addl, pruned, p, False)
            elif addl is True or keep_all:
                continue
            else:
                del obj[k]
                pruned.append(p)
    elif isinstance(obj, list) and isinstance(s.get("items"), dict):
        for i, e in enumerate(obj):
            _prune(e, s["items"], pruned, "%s[%d]" % (path, i), False)


# ---- nulls and defaults ----------------------------------------------------------------------

def default(obj, schema):
    """Drops nulls of non-nullable fields, then fills in defaults, in place."""
    _default(obj, schema or {})


def _default(obj, s):
    if isinstance(obj, dict):
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        for k in list(obj):
            sub = props.get(k) if k in props else (addl if isinstance(addl, dict) else None)
            if sub is None:
                continue
            if obj[k] is None and not sub.get("nullable"):
                del obj[k]
                continue
            _default(obj[k], sub)
        for k, sub in props.items():
            if k not in obj and "default" in sub:
                obj[k] = copy.deepcopy(sub["default"])
                _default(obj[k], sub)
    elif isinstance(obj, list) and isinstance(s.get("items"), dict):
        for e in obj:
            _default(e, s["items"])


# ---- validation ------------------------------------------------------------------------------

class Cause:
    def __init__(self, reason, field, message):
        self.reason, self.field, self.message = reason, field, message

    def text(self):
        return "%s: %s" % (self.field, self.message) if self.field else self.message

    def status(self):
        return {"reason": self.reason, "message": self.message, "field": self.field}


def validate(obj, schema):
    """Returns the list of Causes for OBJ against SCHEMA (empty when valid)."""
    causes = []
    _validate(obj, schema or {}, "", causes)
    return causes


def _invalid(causes, path, value, msg):
    causes.append(Cause("FieldValueInvalid", path, "Invalid value: %s: %s" % (go_value(value),
                                                                              msg)))


def _type_ok(v, t):
    jt = json_type(v)
    if t == "number":
        return jt in ("integer", "number")
    return jt == t


def _validate(v, s, path, causes):
    where = path or "<root>"
    if v is None:
        if s.get("nullable"):
            return
        want = s.get("type") or ("integer,string" if is_int_or_string(s) else None)
        if want:
            _invalid(causes, path, v, "%s in body must be of type %s: \"null\"" % (where, want))
        return
    if is_int_or_string(s):
        if json_type(v) not in ("integer", "string"):
            _invalid(causes, path, json_type(v), "%s in body must be of type integer,string: "
                     "\"%s\"" % (where, json_type(v)))
            return
    elif s.get("type") and not _type_ok(v, s["type"]):
        _invalid(causes, path, json_type(v), "%s in body must be of type %s: \"%s\"" % (
            where, s["type"], json_type(v)))
        return
    if "enum" in s and v not in s["enum"]:
        causes.append(Cause("FieldValueNotSupported", path, "Unsupported value: %s: supported "
                            "values: %s" % (go_value(v), ", ".join(go_value(e)
                                                                  for e in s["enum"]))))
    if isinstance(v, str):
        _validate_string(v, s, path, causes)
    elif json_type(v) in ("integer", "number"):
        _validate_number(v, s, path, causes)
    elif isinstance(v, list):
        _validate_array(v, s, path, causes)
    elif isinstance(v, dict):
        _validate_object(v, s, path, causes)
    for sub in s.get("allOf") or []:
        _validate(v, sub, path, causes)
    if s.get("anyOf") and not is_int_or_string(s):
        tries = [validate_sub(v, sub, path) for sub in s["anyOf"]]
        if all(tries):
            causes.extend(tries[0])


def validate_sub(v, s, path):
    out = []
    _validate(v, s, path, out)
    return out


def _validate_string(v, s, path, causes):
    where = path or "<root>"
    if "pattern" in s and not re.search(s["pattern"], v):
        _invalid(causes, path, v, "%s in body should match '%s'" % (where, s["pattern"]))
    if "maxLength" in s and len(v.encode()) > s["maxLength"]:
        causes.append(Cause("FieldValueTooLong", path, "Too long: may not be more than %d bytes"
                            % s["maxLength"]))
    if "minLength" in s and len(v) < s["minLength"]:
        _invalid(causes, path, v, "%s in body should be at least %d chars long" % (
            where, s["minLength"]))
    if s.get("format") == "date-time" and not DATE_TIME.match(v):
        _invalid(causes, path, v, "%s in body must be of type date-time: %s" % (where,
                                                                               json.dumps(v)))


def _validate_number(v, s, path, causes):
    where = path or "<root>"
    if "minimum" in s:
        if s.get("exclusiveMinimum") and v <= s["minimum"]:
            _invalid(causes, path, v, "%s in body should be greater than %s" % (
                where, go_value(s["minimum"])))
        elif v < s["minimum"]:
            _invalid(causes, path, v, "%s in body should be greater than or equal to %s" % (
                where, go_value(s["minimum"])))
    if "maximum" in s:
        if s.get("exclusiveMaximum") and v >= s["maximum"]:
            _invalid(causes, path, v, "%s in body should be less than %s" % (
                where, go_value(s["maximum"])))
        elif v > s["maximum"]:
            _invalid(causes, path, v, "%s in body should be less than or equal to %s" % (
                where, go_value(s["maximum"])))
    fmt = s.get("format")
    if fmt in ("int32", "int64") and json_type(v) == "integer":
        bits = 31 if fmt == "int32" else 63
        if not -(1 << bits) <= v < (1 << bits):
            _invalid(causes, path, v, "%s in body must be of type %s: %s" % (where, fmt,
                                                                            go_value(v)))


def _validate_array(v, s, path, causes):
    where = path or "<root>"
    if "maxItems" in s and len(v) > s["maxItems"]:
        causes.append(Cause("FieldValueTooMany", path, "Too many: %d: must have at most %d "
                            "items" % (len(v), s["maxItems"])))
    if "minItems" in s and len(v) < s["minItems"]:
        _invalid(causes, path, len(v), "%s in body should have at least %d items" % (
            where, s["minItems"]))
    if isinstance(s.get("items"), dict):
        for i, e in enumerate(v):
            _validate(e, s["items"], "%s[%d]" % (path, i), causes)


def _validate_object(v, s, path, causes):
    where = path or "<root>"
    for k in s.get("required") or []:
        if k not in v:
            causes.append(Cause("FieldValueRequired", join(path, k), "Required value"))
    if "maxProperties" in s and len(v) > s["maxProperties"]:
        causes.append(Cause("FieldValueTooMany", path, "Too many: %d: must have at most %d "
                            "items" % (len(v), s["maxProperties"])))
    if "minProperties" in s and len(v) < s["minProperties"]:
        _invalid(causes, path, len(v), "%s in body should have at least %d properties" % (
            where, s["minProperties"]))
    props = s.get("properties") or {}
    addl = s.get("additionalProperties")
    for k, e in v.items():
        if k in props:
            _validate(e, props[k], join(path, k), causes)
        elif isinstance(addl, dict):
            _validate(e, addl, join(path, k), causes)


def validate_name(name):
    """Custom resource names must be DNS-1123 subdomains (at most 253 characters)."""
    if len(name) > 253:
        return [Cause("FieldValueInvalid", "metadata.name", "Invalid value: %s: must be no more "
                      "than 253 characters" % json.dumps(name))]
    if not DNS1123_SUBDOMAIN.match(name):
        return [Cause("FieldValueInvalid", "metadata.name", "Invalid value: %s: a lowercase RFC "
                      "1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                      "'.', and must start and end with an alphanumeric character (e.g. "
                      "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                      "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')" % json.dumps(name))]
    return []


# ---- printer columns -------------------------------------------------------------------------

def parse_jsonpath(expr):
    """'.status.nodeSelector.kubernetes\\.io/hostname', '.status.used["requests.tflops"]' ->
    a list of keys (str) and indexes (int). Raises ValueError on anything else."""
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1]
    out, i, n = [], 0, len(expr)
    while i < n:
        c = expr[i]
        if c == ".":
            i += 1
            key = ""
            while i < n and expr[i] not in ".[":
                if expr[i] == "\\" and i + 1 < n:
                    i += 1
                key += expr[i]
                i += 1
            if not key:
                raise ValueError("empty key in %r" % expr)
            out.append(key)
        elif c == "[":
            end = expr.index("]", i)
            inner = expr[i + 1:end].strip()
            if inner[:1] in ("'", '"') and inner[-1:] == inner[:1]:
                out.append(inner[1:-1])
            else:
                out.append(int(inner))
            i = end + 1
        else:
            raise ValueError("unsupported JSONPath %r" % expr)
    return out


def lookup(obj, steps):
    cur = obj
    for st in steps:
        if isinstance(st, int):
            if not isinstance(cur, list) or not -len(cur) <= st < len(cur):
                return None
            cur = cur[st]
        elif isinstance(cur, dict) and st in cur:
            cur = cur[st]
        else:
            return None
    return cur


def go_print(v):
    """fmt.Print of a value decoded from JSON, as the JSONPath printer of kube-apiserver."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e21 else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return "[" + " ".join(go_print(e) for e in v) + "]"
    if isinstance(v, dict):
        return "map[" + " ".join("%s:%s" % (k, go_print(v[k])) for k in sorted(v)) + "]"
    return "<nil>"


def human_age(ts, now=None):
    """metav1 ConvertToHumanReadableDateType: '5s', '3m', '2d4h'..."""
    try:
        t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return "<invalid>"
    now = now or datetime.datetime.now(datetime.timezone.utc)
    s = int((now - t).total_seconds())
    if s < 0:
        return "<invalid>"
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm%ds" % (m, s % 60) if s % 60 else "%dm" % m
    if m < 180:
        return "%dm" % m
    h = m // 60
    if h < 8:
        return "%dh%dm" % (h, m % 60) if m % 60 else "%dh" % h
    if h < 48:
        return "%dh" % h
    d = h // 24
    if d < 8:
        return "%dd%dh" % (d, h % 24) if h % 24 else "%dd" % d
    if d < 365 * 2:
        return "%dd" % d
    return "%dy" % (d // 365)


def table_columns(version):
    cols = version.get("additionalPrinterColumns")
    if cols is None:
        cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    defs = [{"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": "Name must be unique within a namespace."}]
    for c in cols:
        defs.append({"name": c["name"], "type": c.get("type", "string"),
                     "format": c.get("format", ""), "description": c.get("description", ""),
                     "priority": c.get("priority", 0)})
    return cols, defs


def table_cell(col, obj):
    v = lookup(obj, parse_jsonpath(col["jsonPath"]))
    if v is None:
        return None
    t = col.get("type", "string")
    if t == "string":
        return go_print(v)
    if t == "date":
        return human_age(v) if isinstance(v, str) else None
    if t == "integer":
        return int(v) if json_type(v) == "integer" else None
    if t == "number":
        return v if json_type(v) in ("integer", "number") else None
    if t == "boolean":
        return v if isinstance(v, bool) else None
    return go_print(v)


def table(version, objs, rv, include="Metadata"):
    """A meta.k8s.io/v1 Table of OBJS for the CRD version VERSION."""
    cols, defs = table_columns(version)
    rows = []
    for o in objs:
        row = {"cells": [o.get("metadata", {}).get("name")] + [table_cell(c, o) for c in cols]}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o.get("metadata", {})}
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": str(rv)}, "columnDefinitions": defs, "rows": rows}


def wants_table(accept):
    """True when an Accept header asks for a meta.k8s.io Table first."""
    first = (accept or "").split(",")[0]
    return "as=Table" in first and "g=meta.k8s.io" in first
