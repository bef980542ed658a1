#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""In-memory Kubernetes API server for the controller tests (DESIGN.md section 3.7).

No kube-apiserver can run on the build machines, so the tests talk to this one. It keeps the
semantics tf-controller relies on, and tests/controller/test_kubectl.sh checks them against the
real kubectl binary:

  * resources: core/v1 pods (status, binding, eviction), nodes (status), namespaces, events,
    services; coordination.k8s.io/v1 leases; apps/v1 deployments, replicasets, statefulsets;
    admissionregistration.k8s.io/v1 mutatingwebhookconfigurations; events.k8s.io/v1 events;
    policy/v1 poddisruptionbudgets; karpenter.sh/v1 nodeclaims; apiextensions.k8s.io/v1
    customresourcedefinitions, and the kinds they define: the chart's CRDs are loaded at start
    (--crds), others can be applied. Custom resources get kube-apiserver's structural-schema
    treatment (fakecrd.py, fakeschema.py): status subresource rules, pruning of unknown fields
    (Warning headers, fieldValidation=Strict refuses, Ignore drops silently), defaults,
    validation with 422 Invalid and field paths, and `kubectl get` tables (Accept
    as=Table) from additionalPrinterColumns.
  * pods/eviction (policy/v1 Eviction) as kube-apiserver does it: the pod's namespace's
    PodDisruptionBudgets whose spec.selector matches it (an empty selector matches all, none
    matches nothing) are checked, unless the pod is Pending, terminal or terminating; more than one is a 500, a budget allowing no disruption a 429
    naming it, otherwise the pod is deleted (201). Without a disruption controller, a budget's
    allowed disruptions are status.disruptionsAllowed when set, else computed from
    minAvailable / maxUnavailable (integers or percentages) over its matching pods, healthy
    meaning Running and not NotReady.
  * one global resourceVersion counter; GET/LIST (limit + continue tokens, labelSelector,
    fieldSelector on metadata.name/metadata.namespace/spec.nodeName/spec.schedulerName),
    WATCH (resourceVersion, allowWatchBookmarks, timeoutSeconds; 410 as an ERROR event once
    the history window no longer holds the requested version), POST (generateName), PUT with
    optimistic locking (409), DELETE, PATCH as JSON merge patch (resourceVersion in the patch
    is a precondition: 409), JSON patch, and a simplified strategic merge patch (lists of
    objects with a "name" key merged by name), status subresources, pods/binding (409 when
    already bound or the Binding's uid is not the pod's; its metadata.annotations merged into
    the pod with the node, as kube-apiserver does).
  * mutating admission: on pod CREATE, and on pod UPDATE (PUT or PATCH of the pod itself, not
    of a subresource) with the stored pod as oldObject, it calls every stored
    MutatingWebhookConfiguration whose rules match the operation (clientConfig.url only; TLS
    verified against caBundle), applies the returned JSONPatch and honours failurePolicy and
    timeoutSeconds, as kube-apiserver does. request.userInfo.username is the requester: the
    user POST /_fake/users {"TOKEN": "username", ...} maps its bearer token to, else
    "fake-admin".
  * fault injection for the client tests: POST /_fake/fail {"status":429,"count":2,
    "retryAfter":0} fails the next COUNT requests; POST /_fake/compact drops the watch history
    (later watches from an older resourceVersion get 410; {"closeWatches": true} also ends
    every open watch without delivering pending events), POST /_fake/pause holds all watch
    delivery until the next compact (together: a watch that was down while history moved on);
    POST /_fake/auth {"token": T}
    makes every request need that bearer token (401 otherwise); GET /_fake/requests lists the
    recorded request lines (with the bearer token seen); GET /_fake/warnings lists every
    Warning sent (unknown fields written), so tests can assert that our code writes none.

Binds 127.0.0.1 only. Usage: fakeapi.py [--port N] [--port-file FILE] [--history N]
                                        [--crds FILE|DIR]...
"""
import argparse
import base64
import copy
import datetime
import json
import os
import random
import ssl
import string
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import fakecrd
import fakeschema

try:
    import jsonpatch  # python3-jsonpatch (Debian)
except ImportError:  # pragma: no cover
    jsonpatch = None

# (group, version, plural) -> (kind, namespaced, has_status). Custom resources are added by
# their CRDs (fakecrd.py): the chart's CRDs are loaded at start-up (--crds).
RESOURCES = {
    ("", "v1", "pods"): ("Pod", True, True),
    ("", "v1", "nodes"): ("Node", False, True),
    ("", "v1", "namespaces"): ("Namespace", False, True),
    ("", "v1", "events"): ("Event", True, False),
    ("", "v1", "services"): ("Service", True, True),
    ("", "v1", "configmaps"): ("ConfigMap", True, False),
    ("", "v1", "secrets"): ("Secret", True, False),
    ("events.k8s.io", "v1", "events"): ("Event", True, False),
    ("coordination.k8s.io", "v1", "leases"): ("Lease", True, False),
    ("apps", "v1", "deployments"): ("Deployment", True, True),
    ("apps", "v1", "replicasets"): ("ReplicaSet", True, True),
    ("apps", "v1", "statefulsets"): ("StatefulSet", True, True),
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"):
        ("MutatingWebhookConfiguration", False, False),
    fakecrd.CRD_KEY: ("CustomResourceDefinition", False, True),
    ("policy", "v1", "poddisruptionbudgets"): ("PodDisruptionBudget", True, True),
    ("scheduling.k8s.io", "v1", "priorityclasses"): ("PriorityClass", False, False),
    ("karpenter.sh", "v1", "nodeclaims"): ("NodeClaim", False, True),
}
DEFAULT_CRDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy",
                            "helm", "tensor-fusion", "crds")
SHORT = {"pods": ["po"], "nodes": ["no"], "namespaces": ["ns"], "events": ["ev"],
         "services": ["svc"], "deployments": ["deploy"], "replicasets": ["rs"],
         "statefulsets": ["sts"], "configmaps": ["cm"], "poddisruptionbudgets": ["pdb"],
         "customresourcedefinitions": ["crd", "crds"]}
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]
BOOKMARK_INTERVAL = 1.0


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def api_version(group, version):
    return version if group == "" else group + "/" + version


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason, "code": self.code}
        if self.details:
            st["details"] = self.details
        return st


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_patch(target, patch):
    """Simplified strategic merge: maps merge, lists of named objects merge by name,
    $patch: delete removes, $setElementOrder/$retainKeys directives are ignored."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and isinstance(out.get(k), list) and v and all(
                isinstance(e, dict) and "name" in e for e in v) and all(
                isinstance(e, dict) and "name" in e for e in out[k]):
            merged = [copy.deepcopy(e) for e in out[k]]
            for e in v:
                idx = next((i for i, m in enumerate(merged) if m["name"] == e["name"]), None)
                if e.get("$patch") == "delete":
                    if idx is not None:
                        merged.pop(idx)
                elif idx is None:
                    merged.append(strategic_patch({}, e))
                else:
                    merged[idx] = strategic_patch(merged[idx], e)
            out[k] = merged
        else:
            out[k] = strategic_patch(out.get(k), v)
    return out


def parse_label_selector(sel):
    """Equality-based and set-based (in, notin, exists, !exists) selectors."""
    reqs = []
    if not sel:
        return reqs
    parts, depth, cur = [], 0, ""
    for ch in sel:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in (x.strip() for x in parts):
        if not p:
            continue
        if " notin " in p or " in " in p:
            op = "notin" if " notin " in p else "in"
            key, vals = p.split(" " + op + " ", 1)
            vals = [v.strip() for v in vals.strip().strip("()").split(",")]
            reqs.append((key.strip(), op, vals))
        elif "!=" in p:
            k, v = p.split("!=", 1)
            reqs.append((k.strip(), "!=", [v.strip()]))
        elif "==" in p or "=" in p:
            k, v = p.split("==", 1) if "==" in p else p.split("=", 1)
            reqs.append((k.strip(), "=", [v.strip()]))
        elif p.startswith("!"):
            reqs.append((p[1:].strip(), "!exists", []))
        else:
            reqs.append((p, "exists", []))
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has = key in labels
        if op == "=" and (not has or labels[key] != vals[0]):
            return False
        if op == "!=" and has and labels[key] == vals[0]:
            return False
        if op == "in" and (not has or labels[key] not in vals):
            return False
        if op == "notin" and has and labels[key] in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


def field_value(obj, path):
    if path == "source" and obj.get("kind") == "Event":  # the API server's field for events
        return str((obj.get("source") or {}).get("component") or "")
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    return "" if cur is None else str(cur)


def fields_match(sel, obj):
    if not sel:
        return True
    for p in sel.split(","):
        p = p.strip()
        if not p:
            continue
        neg = "!=" in p
        k, v = p.split("!=" if neg else ("==" if "==" in p else "="), 1)
        if (field_value(obj, k.strip()) == v.strip()) == neg:
            return False
    return True


class Store:
    def __init__(self, history, crd_paths=()):
        self.lock = threading.Condition()
        self.crds = fakecrd.Registry(RESOURCES, SHORT)
        self.warnings = []  # (request line, warning) for every warning sent
        self.rv = 0
        self.objects = {}  # (group, plural, ns, name) -> obj
        self.history = []  # (rv, type, group, plural, obj)
        self.history_max = history
        self.oldest_rv = 0  # watches from an rv < this get 410
        self.fail = []  # list of [status, retryAfter] for the next requests
        self.requests = []
        self.paused = False  # watches deliver nothing while set
        self.epoch = 0  # bumped to end every open watch without delivering what is pending
        self.token = None  # when set, requests must carry "Authorization: Bearer <token>"
        self.users = {}  # bearer token -> username (admission userInfo), else "fake-admin"
        with self.lock:
            for ns in ("default", "kube-system", "kube-public"):
                self.create("", "v1", "namespaces", None,
                            {"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": ns}})
            for crd in self.crds.load_files(crd_paths):
                self.create(*fakecrd.CRD_KEY, None, crd)

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def record(self, typ, group, plural, obj):
        self.history.append((int(obj["metadata"]["resourceVersion"]), typ, group, plural,
                             copy.deepcopy(obj)))
        if len(self.history) > self.history_max:
            drop = self.history[: len(self.history) - self.history_max]
            self.history = self.history[len(drop):]
            self.oldest_rv = drop[-1][0]
        self.lock.notify_all()

    def compact(self):
        with self.lock:
            self.history = []
            self.oldest_rv = self.rv
            self.lock.notify_all()

    def get(self, group, plural, ns, name):
        obj = self.objects.get((group, plural, ns or "", name))
        if obj is None:
            kind = RESOURCES[self.resource_key(group, plural)][0]
            raise ApiError(404, "NotFound", '%s "%s" not found' % (plural_display(group, plural,
                                                                                   kind), name))
        return obj

    def resource_key(self, group, plural):
        for (g, v, p) in RESOURCES:
            if g == group and p == plural:
                return (g, v, p)
        raise ApiError(404, "NotFound", "the server could not find the requested resource")

    def create(self, group, version, plural, ns, obj, ctx=None):
        """Stores OBJ. CTX: {"validation": fieldValidation, "warnings": [...]} (CRs only)."""
        kind, namespaced, _ = RESOURCES[(group, version, plural)]
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "request body is not an object")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise ApiError(400, "BadRequest", "metadata must be an object")
        if namespaced:
            if meta.get("namespace") and meta["namespace"] != ns:
                raise ApiError(400, "BadRequest",
                               "the namespace of the provided object does not match the "
                               "namespace sent on the request")
            if ("", "namespaces", "", ns) not in self.objects:
                raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns)
            meta["namespace"] = ns
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(
                    random.choice(string.ascii_lowercase + string.digits) for _ in range(5))
            else:
                raise ApiError(422, "Invalid", "%s is invalid: metadata.name: Required value: "
                               "name or generateName is required" % kind)
        key = (group, plural, meta.get("namespace", ""), meta["name"])
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (
                plural_display(group, plural, kind), meta["name"]))
        obj["apiVersion"], obj["kind"] = api_version(group, version), kind
        self.admit(group, version, plural, obj, None, None, ctx)
        if (group, version, plural) == fakecrd.CRD_KEY:
            self.register_crd(obj)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_ts()
        meta["generation"] = 1
        meta["resourceVersion"] = self.next_rv()
        meta.pop("deletionTimestamp", None)
        if kind == "Namespace":
            obj.setdefault("status", {"phase": "Active"})
            meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        if kind == "Pod":
            obj.setdefault("status", {"phase": "Pending"})
            obj.setdefault("spec", {}).setdefault("schedulerName", "default-scheduler")
        self.objects[key] = obj
        self.record("ADDED", group, plural, obj)
        return obj

    def admit(self, group, version, plural, obj, old, subresource, ctx):
        """Custom resources: status rules, pruning, defaults, validation (fakecrd.py)."""
        info = self.crds.info(group, version, plural)
        if info is None:
            return
        ctx = ctx if ctx is not None else {}
        try:
            self.crds.admit(info, obj, old, subresource, ctx.get("validation"),
                            ctx.setdefault("warnings", []))
        except fakecrd.Invalid as e:
            raise ApiError(422, "Invalid", str(e), e.details())
        except fakecrd.StrictError as e:
            raise ApiError(400, "BadRequest", str(e))

    def register_crd(self, crd):
        try:
            self.crds.register(crd)
        except ValueError as e:
            raise ApiError(422, "Invalid", str(e))
        crd["status"] = fakecrd.crd_status(crd)

    def replace(self, group, version, plural, ns, name, new, subresource=None, patch_rv=None,
                ctx=None):
        """Stores NEW in place of the object (update or patch result)."""
        kind, _, has_status = RESOURCES[(group, version, plural)]
        old = self.get(group, plural, ns, name)
        if not isinstance(new, dict) or not isinstance(new.get("metadata", {}), dict):
            raise ApiError(400, "BadRequest", "object must be a JSON object with metadata")
        meta = new.setdefault("metadata", {})
        want = patch_rv if patch_rv is not None else meta.get("resourceVersion")
        if want not in (None, "") and want != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict",
                           'Operation cannot be fulfilled on %s "%s": the object has been '
                           "modified; please apply your changes to the latest version and try "
                           "again" % (plural_display(group, plural, kind), name))
        if meta.get("name", name) != name:
            raise ApiError(400, "BadRequest", "the name of the object (%s) does not match the "
                           "name on the URL (%s)" % (meta.get("name"), name))
        for k in ("name", "namespace", "uid", "creationTimestamp"):
            if k in old["metadata"]:
                meta[k] = old["metadata"][k]
        new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
        if self.crds.info(group, version, plural):
            self.admit(group, version, plural, new, old, subresource, ctx)
        elif subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
        elif has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        if kind == "Pod":
            old_node = old.get("spec", {}).get("nodeName")
            if old_node and new.get("spec", {}).get("nodeName") != old_node:
                raise ApiError(422, "Invalid", 'Pod "%s" is invalid: spec: Forbidden: pod '
                               "updates may not change fields other than image, "
                               "activeDeadlineSeconds, tolerations" % name)
        gen = old["metadata"].get("generation", 1)
        if new.get("spec") != old.get("spec"):
            gen += 1
        new["metadata"]["generation"] = gen
        if (group, version, plural) == fakecrd.CRD_KEY:
            self.register_crd(new)
        if strip_rv(new) == strip_rv(old):
            return old  # no-op writes do not bump the resourceVersion, as in kube-apiserver
        new["metadata"]["resourceVersion"] = self.next_rv()
        self.objects[(group, plural, ns or "", name)] = new
        self.record("MODIFIED", group, plural, new)
        return new

    def delete(self, group, plural, ns, name):
        obj = self.get(group, plural, ns, name)
        del self.objects[(group, plural, ns or "", name)]
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = self.next_rv()
        self.record("DELETED", group, plural, obj)
        if plural == "namespaces":
            for key in [k for k in self.objects if k[2] == name]:
                self.delete(key[0], key[1], key[2], key[3])
        if (group, plural) == (fakecrd.CRD_KEY[0], fakecrd.CRD_KEY[2]):
            spec = obj.get("spec") or {}
            gone = self.crds.unregister_plural(spec.get("group"),
                                              (spec.get("names") or {}).get("plural"))
            for key in [k for k in self.objects if gone and k[0] == gone[0] and
                        k[1] == gone[2]]:
                self.delete(key[0], key[1], key[2], key[3])
        return obj


def strip_rv(obj):
    o = copy.deepcopy(obj)
    o.get("metadata", {}).pop("resourceVersion", None)
    return o


def plural_display(group, plural, kind):
    return plural if group == "" else plural + "." + group


def discovery_resources(group, version, crds):
    out = []
    for (g, v, p), (kind, namespaced, has_status) in RESOURCES.items():
        if g != group or v != version:
            continue
        res = {"name": p, "singularName": kind.lower(), "namespaced": namespaced,
               "kind": kind, "verbs": VERBS + (["deletecollection"] if p != "nodes" else []),
               "shortNames": SHORT.get(p, [])}
        res.update(crds.discovery((g, v, p)))
        out.append(res)
        if has_status:
            out.append({"name": p + "/status", "singularName": "", "namespaced": namespaced,
                        "kind": kind, "verbs": ["get", "patch", "update"]})
        if p == "pods":
            out.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                        "kind": "Binding", "verbs": ["create"]})
            out.append({"name": "pods/eviction", "singularName": "", "namespaced": True,
                        "group": "policy", "version": "v1", "kind": "Eviction",
                        "verbs": ["create"]})
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeapi/1"

    def log_message(self, fmt, *args):  # quiet; the tests read /_fake/requests instead
        pass

    # ---- plumbing -------------------------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers.items() if isinstance(headers, dict) else headers or []):
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def reply(self, code, obj, ctx):
        """send_json with a Warning header per warning of CTX (recorded for /_fake/warnings)."""
        warns = ctx.get("warnings") or []
        store = self.server.store
        for w in warns:
            store.warnings.append({"request": "%s %s" % (self.command, self.path), "warning": w})
        self.send_json(code, obj, [("Warning", '299 - %s' % json.dumps(w)) for w in warns])

    def read_body(self):
        limit = 3 * 1024 * 1024
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raw = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
                if len(raw) > limit:
                    raise ApiError(413, "RequestEntityTooLarge", "request is too large")
        else:
            n = int(self.headers.get("Content-Length") or 0)
            if n > limit:
                raise ApiError(413, "RequestEntityTooLarge", "request is too large")
            raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        if "protobuf" in (self.headers.get("Content-Type") or ""):
            raise ApiError(415, "UnsupportedMediaType", "the fake API server speaks JSON only")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid JSON body: %s" % e)

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        store = self.server.store
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/") if p]
        try:
            if parts[:1] == ["_fake"]:
                return self.fake_control(method, parts[1:])
            with store.lock:
                auth = self.headers.get("Authorization") or ""
                store.requests.append("%s %s%s" % (method, self.path,
                                                   " auth=" + auth[7:] if auth else ""))
                if store.token and auth != "Bearer " + store.token:
                    self.read_body()
                    raise ApiError(401, "Unauthorized", "Unauthorized")
                if store.fail:
                    code, retry = store.fail.pop(0)
                    self.read_body()
                    hdr = {"Retry-After": str(retry)} if retry is not None else {}
                    raise_err = ApiError(code, "TooManyRequests" if code == 429 else
                                         "InternalError", "injected failure")
                    return self.send_json(code, raise_err.status(), hdr)
            self.route(method, parts, query)
        except ApiError as e:
            self.send_json(e.code, e.status())
        except BrokenPipeError:
            pass

    def fake_control(self, method, parts):
        store = self.server.store
        body = self.read_body() or {}
        with store.lock:
            if parts == ["fail"]:
                for _ in range(int(body.get("count", 1))):
                    store.fail.append((int(body.get("status", 500)), body.get("retryAfter")))
                return self.send_json(200, {"queued": len(store.fail)})
            if parts == ["pause"]:
                store.paused = True
                return self.send_json(200, {})
            if parts == ["compact"]:
                store.history = []
                store.oldest_rv = store.rv
                if body.get("closeWatches"):
                    store.epoch += 1
                store.paused = False
                store.lock.notify_all()
                return self.send_json(200, {"oldestResourceVersion": str(store.oldest_rv)})
            if parts == ["auth"]:
                store.token = body.get("token")
                return self.send_json(200, {})
            if parts == ["users"]:
                store.users = dict(body)
                return self.send_json(200, {})
            if parts == ["requests"]:
                return self.send_json(200, {"requests": store.requests})
            if parts == ["warnings"]:
                return self.send_json(200, {"warnings": store.warnings})
        raise ApiError(404, "NotFound", "unknown control endpoint")

    # ---- routing --------------------------------------------------------------------------
    def route(self, method, parts, query):
        store = self.server.store
        if method == "GET" and parts in (["version"], ["version", ""]):
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake",
                                        "platform": "linux/amd64"})
        if method == "GET" and parts == ["healthz"]:
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            return self.wfile.write(body)
        if method == "GET" and parts[:2] == ["openapi", "v3"]:
            with store.lock:
                doc = fakecrd.openapi_root(store.crds) if len(parts) == 2 else \
                    fakecrd.openapi_gv(store.crds, *parts[3:5]) if len(parts) == 5 and \
                    parts[2] == "apis" else None
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            return self.send_json(200, doc)
        if method == "GET" and parts == ["api"]:
            return self.send_json(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": []})
        if method == "GET" and parts == ["apis"]:
            groups = sorted({g for (g, _, _) in RESOURCES if g})
            return self.send_json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": g + "/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": g + "/v1", "version": "v1"}}
                for g in groups]})
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            if method != "GET":
                raise ApiError(405, "MethodNotAllowed", "method not allowed")
            res = discovery_resources(group, version, store.crds)
            if not res:
                raise ApiError(404, "NotFound", "the server could not find the requested "
                               "resource")
            return self.send_json(200, {"kind": "APIResourceList", "apiVersion": "v1",
                                        "groupVersion": api_version(group, version),
                                        "resources": res})
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            ns, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (group, version, plural) not in RESOURCES:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        kind, namespaced, has_status = RESOURCES[(group, version, plural)]
        if namespaced and name is not None and ns is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not namespaced and ns is not None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if sub not in (None, "status", "binding", "eviction") or (
                sub == "status" and not has_status) or (
                sub in ("binding", "eviction") and plural != "pods"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")

        if method == "GET" and name is None:
            if query.get("watch") in ("1", "true"):
                return self.watch(group, version, plural, ns, query)
            return self.list(group, version, plural, ns, query)
        if method == "GET":
            with store.lock:
                obj = store.get(group, plural, ns, name)
                info = store.crds.info(group, version, plural)
                if info and fakeschema.wants_table(self.headers.get("Accept")):
                    obj = fakeschema.table(info["version"], [obj], store.rv,
                                           query.get("includeObject", "Metadata"))
                return self.send_json(200, obj)
        if method == "POST" and sub == "binding":
            return self.bind(ns, name, self.read_body())
        if method == "POST" and sub == "eviction":
            return self.evict(ns, name, self.read_body())
        if method == "POST" and name is None:
            body = self.read_body()
            if namespaced and ns is None:
                raise ApiError(405, "MethodNotAllowed", "namespace required")
            if isinstance(body, dict) and kind == "Pod":
                body = self.admit(ns, body, query, "CREATE")
            ctx = {"validation": query.get("fieldValidation"), "warnings": []}
            with store.lock:
                if query.get("dryRun") == "All":
                    if isinstance(body, dict):
                        store.admit(group, version, plural, body, None, None, ctx)
                    return self.reply(201, body, ctx)
                return self.reply(201, store.create(group, version, plural, ns, body, ctx), ctx)
        if name is None:
            raise ApiError(405, "MethodNotAllowed", "method not allowed on a collection")
        ctx = {"validation": query.get("fieldValidation"), "warnings": []}
        if method == "PUT":
            body = self.read_body()
            if kind == "Pod" and sub is None and isinstance(body, dict):
                with store.lock:
                    cur = copy.deepcopy(store.get(group, plural, ns, name))
                body = self.admit(ns, body, query, "UPDATE", cur)
            with store.lock:
                return self.reply(200, store.replace(group, version, plural, ns, name, body, sub,
                                                     None, ctx), ctx)
        if method == "PATCH":
            body = self.read_body()
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            # As kube-apiserver: read, patch, admit (pods), write if nothing changed meanwhile;
            # a patch without a resourceVersion precondition is retried on such a race.
            for _ in range(10):
                with store.lock:
                    cur = copy.deepcopy(store.get(group, plural, ns, name))
                    new, patch_rv = self.apply_patch(ctype, cur, body)
                    new.setdefault("metadata", {})["resourceVersion"] = cur["metadata"][
                        "resourceVersion"]
                if kind == "Pod" and sub is None:
                    new = self.admit(ns, new, query, "UPDATE", cur)
                    new.setdefault("metadata", {})["resourceVersion"] = cur["metadata"][
                        "resourceVersion"]
                with store.lock:
                    now = store.get(group, plural, ns, name)["metadata"]["resourceVersion"]
                    if patch_rv is None and now != cur["metadata"]["resourceVersion"]:
                        continue
                    return self.reply(200, store.replace(group, version, plural, ns, name,
                                                         new, sub, patch_rv, ctx), ctx)
            raise ApiError(409, "Conflict", "too many concurrent changes of %s" % name)
        if method == "DELETE":
            self.read_body()
            with store.lock:
                return self.send_json(200, store.delete(group, plural, ns, name))
        raise ApiError(405, "MethodNotAllowed", "method not allowed")

    @staticmethod
    def apply_patch(ctype, cur, body):
        """(patched copy of CUR, resourceVersion precondition or None)."""
        if ctype == "application/json-patch+json":
            if jsonpatch is None:
                raise ApiError(415, "UnsupportedMediaType", "json patch unavailable")
            try:
                new = jsonpatch.apply_patch(cur, body)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException,
                    TypeError, KeyError, IndexError) as e:
                raise ApiError(422, "Invalid", "the server rejected our request due "
                               "to an error in our request: %s" % e)
            return new, new.get("metadata", {}).get("resourceVersion")
        if ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "patch body must be an object")
            fn = merge_patch if ctype.startswith("application/merge") else strategic_patch
            return fn(cur, body), (body.get("metadata") or {}).get("resourceVersion")
        raise ApiError(415, "UnsupportedMediaType",
                       "the body of the request was in an unknown format - accepted "
                       "media types include: application/json-patch+json, "
                       "application/merge-patch+json, application/strategic-merge-patch+json")

    def list(self, group, version, plural, ns, query):
        store = self.server.store
        reqs = parse_label_selector(query.get("labelSelector", ""))
        fsel = query.get("fieldSelector", "")
        limit = int(query.get("limit") or 0)
        with store.lock:
            cont = query.get("continue")
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                    start_after, list_rv = tok["after"], tok["rv"]
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "BadRequest", "continue key is not valid")
                if list_rv < store.oldest_rv:
                    raise ApiError(410, "Expired", "The provided continue parameter is too "
                                   "old to display a consistent list result. You can start a "
                                   "new list without the continue parameter.")
            else:
                start_after, list_rv = None, store.rv
            keys = sorted(k for k in store.objects if k[0] == group and k[1] == plural and
                          (ns is None or k[2] == ns))
            items = []
            more = None
            for k in keys:
                if start_after is not None and [k[2], k[3]] <= start_after:
                    continue
                obj = store.objects[k]
                if not labels_match(reqs, obj["metadata"].get("labels")) or not fields_match(
                        fsel, obj):
                    continue
                if limit and len(items) == limit:
                    more = [items[-1]["metadata"].get("namespace", ""),
                            items[-1]["metadata"]["name"]]
                    break
                items.append(obj)
            meta = {"resourceVersion": str(list_rv)}
            if more:
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                    {"after": more, "rv": list_rv}).encode()).decode()
                meta["remainingItemCount"] = max(0, len(keys) - len(items))
            kind = RESOURCES[(group, version, plural)][0]
            info = store.crds.info(group, version, plural)
            if info and fakeschema.wants_table(self.headers.get("Accept")):
                tab = fakeschema.table(info["version"], items, list_rv,
                                       query.get("includeObject", "Metadata"))
                tab["metadata"] = meta
                return self.send_json(200, tab)
            return self.send_json(200, {"kind": kind + "List",
                                        "apiVersion": api_version(group, version),
                                        "metadata": meta, "items": items})

    def watch(self, group, version, plural, ns, query):
        store = self.server.store
        reqs = parse_label_selector(query.get("labelSelector", ""))
        fsel = query.get("fieldSelector", "")
        bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        timeout = float(query.get("timeoutSeconds") or 1800)
        rv_arg = query.get("resourceVersion", "")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        info = store.crds.info(group, version, plural)
        as_table = bool(info) and fakeschema.wants_table(self.headers.get("Accept"))

        def emit(typ, obj):
            if as_table and typ in ("ADDED", "MODIFIED", "DELETED"):
                obj = fakeschema.table(info["version"], [obj],
                                       obj["metadata"].get("resourceVersion", ""),
                                       query.get("includeObject", "Metadata"))
            data = json.dumps({"type": typ, "object": obj}).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def matches(g, p, obj):
            if g != group or p != plural:
                return False
            if ns is not None and obj["metadata"].get("namespace") != ns:
                return False
            return labels_match(reqs, obj["metadata"].get("labels")) and fields_match(fsel, obj)

        deadline = time.monotonic() + timeout
        kind = RESOURCES[(group, version, plural)][0]
        try:
            with store.lock:
                if rv_arg in ("", "0"):
                    pos = store.rv
                    for k in sorted(store.objects):
                        if matches(k[0], k[1], store.objects[k]):
                            emit("ADDED", store.objects[k])
                else:
                    try:
                        pos = int(rv_arg)
                    except ValueError:
                        raise ApiError(400, "BadRequest", "invalid resourceVersion")
                    if pos < store.oldest_rv:
                        emit("ERROR", ApiError(410, "Expired", "too old resource version: %d "
                                               "(%d)" % (pos, store.oldest_rv)).status())
                        self.wfile.write(b"0\r\n\r\n")
                        return
                last_bookmark = time.monotonic()
                epoch = store.epoch
                while not self.server.stopping and store.epoch == epoch:
                    if store.paused:
                        store.lock.wait(0.05)
                        continue
                    for (rv, typ, g, p, obj) in store.history:
                        if rv > pos and matches(g, p, obj):
                            emit(typ, obj)
                    pos = store.rv
                    now = time.monotonic()
                    if now >= deadline:
                        break
                    if bookmarks and now - last_bookmark >= BOOKMARK_INTERVAL:
                        emit("BOOKMARK", {"kind": kind, "apiVersion": api_version(group, version),
                                          "metadata": {"resourceVersion": str(store.rv)}})
                        last_bookmark = now
                    store.lock.wait(min(BOOKMARK_INTERVAL, max(0.01, deadline - now)))
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def bind(self, ns, name, body):
        store = self.server.store
        if not isinstance(body, dict) or not isinstance(body.get("target"), dict) or \
                not body["target"].get("name"):
            raise ApiError(400, "BadRequest", "Binding needs target.name")
        if body["target"].get("kind") not in (None, "", "Node"):
            raise ApiError(422, "Invalid", 'Binding.core "%s" is invalid: target.kind: '
                           'Unsupported value: "%s": supported values: "", "Node"' % (
                               name, body["target"]["kind"]))
        meta = body.get("metadata") or {}
        anns = meta.get("annotations") or {}
        if not isinstance(meta, dict) or not isinstance(anns, dict) or \
                not all(isinstance(v, str) for v in anns.values()):
            raise ApiError(400, "BadRequest", "Binding metadata.annotations must map strings to "
                           "strings")
        with store.lock:
            pod = copy.deepcopy(store.get("", "pods", ns, name))
            # As kube-apiserver's BindingREST: the UID is a precondition, a pod being deleted
            # or already bound is refused, and the Binding's annotations are merged into the
            # pod in the same write that sets its node.
            if meta.get("uid") and meta["uid"] != pod["metadata"].get("uid"):
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding '
                               '"%s": Precondition failed: UID in precondition: %s, UID in '
                               'object meta: %s' % (name, meta["uid"],
                                                    pod["metadata"].get("uid")))
            if pod["metadata"].get("deletionTimestamp"):
                raise ApiError(500, "InternalError", "pod %s is being deleted, cannot be "
                               "assigned to a host" % name)
            if pod.get("spec", {}).get("nodeName"):
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding '
                               '"%s": pod %s is already assigned to node "%s"' % (
                                   name, name, pod["spec"]["nodeName"]))
            if anns:
                pod["metadata"].setdefault("annotations", {}).update(anns)
            pod["spec"]["nodeName"] = body["target"]["name"]
            conds = pod.setdefault("status", {}).setdefault("conditions", [])
            conds.append({"type": "PodScheduled", "status": "True",
                          "lastTransitionTime": now_ts()})
            # Bypass the status rule: binding writes both spec.nodeName and the condition.
            pod["metadata"]["resourceVersion"] = store.next_rv()
            store.objects[("", "pods", ns, name)] = pod
            store.record("MODIFIED", "", "pods", pod)
        self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Success", "code": 201})

    def evict(self, ns, name, body):
        store = self.server.store
        if not isinstance(body, dict) or body.get("kind") != "Eviction" or \
                (body.get("metadata") or {}).get("name") != name:
            raise ApiError(400, "BadRequest", "Eviction body must be kind Eviction naming the "
                           "pod in metadata.name")
        with store.lock:
            pod = store.get("", "pods", ns, name)
            # As kube-apiserver: terminal, pending and terminating pods go without a budget check.
            if pod.get("status", {}).get("phase") not in ("Succeeded", "Failed", "Pending") and \
                    not pod["metadata"].get("deletionTimestamp"):
                labels = pod["metadata"].get("labels") or {}
                pdbs = [o for k, o in sorted(store.objects.items())
                        if k[1] == "poddisruptionbudgets" and k[2] == ns and
                        selector_matches((o.get("spec") or {}).get("selector"), labels)]
                if len(pdbs) > 1:
                    raise ApiError(500, "InternalError", "This pod has more than one "
                                   "PodDisruptionBudget, which the eviction subresource does "
                                   "not support.")
                if pdbs and disruptions_allowed(store, pdbs[0]) <= 0:
                    raise ApiError(429, "TooManyRequests", "Cannot evict pod as it would "
                                   "violate the pod's disruption budget. The disruption budget "
                                   "%s does not allow a disruption now"
                                   % pdbs[0]["metadata"]["name"])
            store.delete("", "pods", ns, name)
        self.send_json(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Success", "code": 201})

    # ---- mutating admission ---------------------------------------------------------------
    def admit(self, ns, pod, query, op, old=None):
        store = self.server.store
        auth = self.headers.get("Authorization") or ""
        with store.lock:
            hooks = [copy.deepcopy(o) for k, o in sorted(store.objects.items())
                     if k[1] == "mutatingwebhookconfigurations"]
            ns_obj = copy.deepcopy(store.objects.get(("", "namespaces", "", ns)))
            user = store.users.get(auth[7:] if auth.startswith("Bearer ") else "", "fake-admin")
        for cfg in hooks:
            for hook in cfg.get("webhooks") or []:
                if not hook_matches(hook, ns_obj, pod, op, old):
                    continue
                pod = call_webhook(hook, ns, pod, query.get("dryRun") == "All", op, old, user)
        return pod


def selector_matches(sel, labels):
    """metav1.LabelSelector: None matches nothing (policy/v1), {} everything."""
    if sel is None:
        return False
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        have, op, vals = labels.get(e.get("key")), e.get("operator"), e.get("values") or []
        if (op == "In" and have not in vals) or (op == "NotIn" and have in vals) or (
                op == "Exists" and have is None) or (op == "DoesNotExist" and have is not None):
            return False
    return True


def pod_healthy(pod):
    st = pod.get("status") or {}
    if st.get("phase") != "Running":
        return False
    return all(c.get("status") == "True" for c in st.get("conditions") or []
               if c.get("type") == "Ready")


def disruptions_allowed(store, pdb):
    st = pdb.get("status") or {}
    if "disruptionsAllowed" in st:
        return int(st["disruptionsAllowed"])
    spec = pdb.get("spec") or {}
    ns = pdb["metadata"]["namespace"]
    pods = [o for k, o in store.objects.items() if k[1] == "pods" and k[2] == ns and
            o.get("status", {}).get("phase") not in ("Succeeded", "Failed") and
            selector_matches(spec.get("selector"), o["metadata"].get("labels"))]
    expected, healthy = len(pods), sum(1 for p in pods if pod_healthy(p))

    def count(v, round_up):
        if isinstance(v, str) and v.endswith("%"):
            n = int(v[:-1]) * expected
            return (n + 99) // 100 if round_up else n // 100
        return int(v)
    if spec.get("maxUnavailable") is not None:
        return healthy - (expected - count(spec["maxUnavailable"], True))
    return healthy - count(spec.get("minAvailable", 1), True)


def hook_matches(hook, ns_obj, pod, op, old=None):
    rules = hook.get("rules") or []
    ok = False
    for r in rules:
        if op in r.get("operations", []) or "*" in r.get("operations", []):
            if ("pods" in r.get("resources", []) or "*" in r.get("resources", [])) and \
                    ("" in r.get("apiGroups", []) or "*" in r.get("apiGroups", [])):
                ok = True
    if not ok:
        return False
    def selected(sel, labels):
        for k, v in (sel.get("matchLabels") or {}).items():
            if (labels or {}).get(k) != v:
                return False
        for e in sel.get("matchExpressions") or []:
            have = (labels or {}).get(e["key"])
            o, vals = e["operator"], e.get("values") or []
            if o == "In" and have not in vals:
                return False
            if o == "NotIn" and have is not None and have in vals:
                return False
            if o == "Exists" and have is None:
                return False
            if o == "DoesNotExist" and have is not None:
                return False
        return True
    if not selected(hook.get("namespaceSelector") or {},
                    (ns_obj or {}).get("metadata", {}).get("labels")):
        return False
    # objectSelector: the new object's labels or (UPDATE) the old one's, as kube-apiserver.
    sel = hook.get("objectSelector") or {}
    return selected(sel, pod.get("metadata", {}).get("labels")) or (
        old is not None and selected(sel, old.get("metadata", {}).get("labels")))


def call_webhook(hook, ns, pod, dry_run, op, old, user):
    cc = hook.get("clientConfig") or {}
    fail_open = hook.get("failurePolicy", "Fail") == "Ignore"
    url = cc.get("url")
    try:
        if not url:
            raise RuntimeError("only clientConfig.url is supported by the fake API server")
        ctx = ssl.create_default_context()
        if cc.get("caBundle"):
            ctx.load_verify_locations(cadata=base64.b64decode(cc["caBundle"]).decode())
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": {"uid": str(uuid.uuid4()),
                              "kind": {"group": "", "version": "v1", "kind": "Pod"},
                              "resource": {"group": "", "version": "v1", "resource": "pods"},
                              "requestKind": {"group": "", "version": "v1", "kind": "Pod"},
                              "requestResource": {"group": "", "version": "v1",
                                                  "resource": "pods"},
                              "name": pod.get("metadata", {}).get("name", ""),
                              "namespace": ns, "operation": op,
                              "userInfo": {"username": user}, "object": pod,
                              "oldObject": old, "dryRun": dry_run,
                              "options": {"kind": op.capitalize() + "Options",
                                          "apiVersion": "meta.k8s.io/v1"}}}
        req = urllib.request.Request(url, data=json.dumps(review).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=ctx,
                                    timeout=float(hook.get("timeoutSeconds", 10))) as r:
            resp = json.loads(r.read())
        out = resp.get("response") or {}
        if out.get("uid") != review["request"]["uid"]:
            raise RuntimeError("webhook response uid does not match the request")
        if not out.get("allowed"):
            msg = (out.get("status") or {}).get("message", "")
            raise ApiError(400, "BadRequest", 'admission webhook "%s" denied the request: %s' % (
                hook.get("name"), msg))
        if out.get("patch"):
            if out.get("patchType") != "JSONPatch":
                raise RuntimeError("unsupported patchType %r" % out.get("patchType"))
            ops = json.loads(base64.b64decode(out["patch"]))
            pod = jsonpatch.apply_patch(pod, ops)
        return pod
    except ApiError:
        raise
    except Exception as e:  # network, TLS, JSON, patch errors: failurePolicy decides
        if fail_open:
            return pod
        raise ApiError(500, "InternalError", 'Internal error occurred: failed calling webhook '
                       '"%s": %s' % (hook.get("name"), e))


def write_problems(api, log_text):
    """For the end-to-end tests: what a real API server would have refused or pruned of the
    writes of the component whose log is LOG_TEXT (warnings recorded by the fake API server at
    API, and the component's own failed-write log lines). Empty when all writes were clean."""
    with urllib.request.urlopen(api + "/_fake/warnings", timeout=5) as r:
        out = ["%s: %s" % (w["request"], w["warning"]) for w in json.loads(r.read())["warnings"]]
    for line in log_text.splitlines():
        if any(s in line for s in ("update failed", "cannot create", "cannot update",
                                   "patch failed", "is invalid")):
            out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--history", type=int, default=10000)
    ap.add_argument("--crds", action="append",
                    help="CRD file or directory to serve (repeatable; default the chart's "
                    "deploy/helm/tensor-fusion/crds; --crds= serves none)")
    args = ap.parse_args()
    crds = [c for c in (args.crds if args.crds is not None else [DEFAULT_CRDS]) if c]
    srv = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    srv.daemon_threads = True
    srv.store = Store(args.history, crds)
    srv.stopping = False
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.rename(tmp, args.port_file)
    print(port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
