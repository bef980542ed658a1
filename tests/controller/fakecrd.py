# SPDX-License-Identifier: Apache-2.0
"""CustomResourceDefinitions in the in-memory API server (fakeapi.py).

A CRD (loaded from files at start-up, or created through apiextensions.k8s.io/v1 as
`kubectl apply -f crds/` does) registers its kind: the resource becomes servable (discovery
with short names, status subresource when the CRD has one) and every write of an object of that
kind goes through admit() below, which does what kube-apiserver's custom-resource handler does:

  * create of a kind with a status subresource drops .status; an update or patch of the main
    resource keeps the stored .status, a /status write keeps everything but .status;
  * the object is pruned, defaulted and validated against the version's structural schema
    (fakeschema.py); unknown fields become warnings ("unknown field \"spec.foo\"", the
    fieldValidation=Warn default), are refused with fieldValidation=Strict (400) or dropped
    silently with fieldValidation=Ignore; invalid objects are refused with 422 Invalid naming
    every field, as kube-apiserver does;
  * custom resource names must be DNS-1123 subdomains.

Deleting the CRD deletes its objects and unregisters the kind. Only one served version per CRD
(ours and upstream TensorFusion's CRDs have one).
"""
import copy
import glob
import os

import fakeschema

try:
    import yaml  # python3-yaml (Debian)
except ImportError:  # pragma: no cover
    yaml = None

CRD_KEY = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


class Invalid(Exception):
    """422 Invalid with kube-apiserver's causes."""

    def __init__(self, kind, group, name, causes):
        self.kind, self.group, self.name, self.causes = kind, group, name, causes
        text = causes[0].text() if len(causes) == 1 else "[" + ", ".join(
            c.text() for c in causes) + "]"
        super().__init__('%s.%s "%s" is invalid: %s' % (kind, group, name, text))

    def details(self):
        return {"name": self.name, "group": self.group, "kind": self.kind,
                "causes": [c.status() for c in self.causes]}


class StrictError(Exception):
    """400 BadRequest of fieldValidation=Strict."""


class Registry:
    """Registered CRDs, keyed like RESOURCES: (group, version, plural) -> info dict."""

    def __init__(self, resources, short):
        self.resources, self.short = resources, short
        self.crds = {}

    def register(self, crd):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
        versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
        if not group or not plural or not kind or len(versions) != 1:
            raise ValueError("CRD %s: need group, names.plural, names.kind and exactly one served "
                             "version" % (crd.get("metadata") or {}).get("name"))
        v = versions[0]
        has_status = "status" in (v.get("subresources") or {})
        key = (group, v["name"], plural)
        self.unregister_plural(group, plural)
        self.resources[key] = (kind, spec.get("scope") == "Namespaced", has_status)
        self.short[plural] = list(names.get("shortNames") or [])
        self.crds[key] = {"crd": crd["metadata"]["name"], "kind": kind, "group": group,
                          "version": v, "status": has_status,
                          "schema": (v.get("schema") or {}).get("openAPIV3Schema") or {},
                          "singular": names.get("singular") or kind.lower(),
                          "categories": list(names.get("categories") or [])}
        return key

    def unregister_plural(self, group, plural):
        for key in [k for k in self.crds if k[0] == group and k[2] == plural]:
            del self.crds[key]
            self.resources.pop(key, None)
            return key
        return None

    def info(self, group, version, plural):
        return self.crds.get((group, version, plural))

    def load_files(self, paths):
        """CRD documents from files or directories (*.yaml, *.yml, *.json)."""
        out = []
        for p in paths:
            files = sorted(glob.glob(os.path.join(p, "*.y*ml")) + glob.glob(
                os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
            for f in files:
                with open(f) as fh:
                    docs = list(yaml.safe_load_all(fh)) if yaml else []
                out.extend(d for d in docs if isinstance(d, dict) and
                           d.get("kind") == "CustomResourceDefinition")
        return out

    def admit(self, info, obj, old, subresource, validation, warnings):
        """Applies status-subresource rules, pruning, defaults and validation to OBJ (the new
        object, modified in place; OLD is the stored one or None for a create). VALIDATION is
        the fieldValidation directive. Appends warning texts to WARNINGS; raises Invalid or
        StrictError."""
        if info["status"]:
            if old is None:
                obj.pop("status", None)
            elif subresource == "status":
                st = obj.get("status")
                keep = copy.deepcopy(old)  # metadata and spec included, as kube-apiserver
                obj.clear()
                obj.update(keep)
                if st is None:
                    obj.pop("status", None)
                else:
                    obj["status"] = st
            elif "status" in old:
                obj["status"] = copy.deepcopy(old["status"])
            else:
                obj.pop("status", None)
        pruned = []
        fakeschema.prune(obj, info["schema"], pruned)
        if pruned:
            msgs = ['unknown field "%s"' % p for p in pruned]
            if (validation or "Warn") == "Strict":
                raise StrictError('%s in version "%s" cannot be handled as a %s: strict decoding '
                                  'error: %s' % (info["kind"], info["version"]["name"],
                                                 info["kind"], ", ".join(msgs)))
            if (validation or "Warn") == "Warn":
                warnings.extend(msgs)
        fakeschema.default(obj, info["schema"])
        name = (obj.get("metadata") or {}).get("name") or ""
        causes = fakeschema.validate_name(name) if name else []
        causes += fakeschema.validate(obj, info["schema"])
        if causes:
            raise Invalid(info["kind"], info["group"], name, causes)

    def discovery(self, key):
        info = self.crds.get(key)
        if not info:
            return {}
        return {"singularName": info["singular"], "categories": info["categories"]}


def openapi_root(registry):
    """GET /openapi/v3: the group-versions of the registered CRDs (kubectl reads this to learn
    that the server validates fields itself, fieldValidation, before choosing --validate=strict
    over client-side validation)."""
    gvs = sorted({(k[0], k[1]) for k in registry.crds})
    return {"paths": {"apis/%s/%s" % gv: {"serverRelativeURL": "/openapi/v3/apis/%s/%s?hash=0" % gv}
                      for gv in gvs}}


def openapi_gv(registry, group, version):
    """GET /openapi/v3/apis/GROUP/VERSION: the kinds' schemas (kubectl explain) and their paths,
    whose PATCH takes fieldValidation; None when no CRD serves that group-version."""
    schemas, paths = {}, {}
    for (g, v, plural), info in sorted(registry.crds.items()):
        if (g, v) != (group, version):
            continue
        gvk = [{"group": g, "version": v, "kind": info["kind"]}]
        ref = "%s.%s.%s" % (".".join(reversed(g.split("."))), v, info["kind"])
        schemas[ref] = dict(info["schema"], **{"x-kubernetes-group-version-kind": gvk})
        kind, namespaced, _ = registry.resources[(g, v, plural)]
        base = "/apis/%s/%s/%s%s/{name}" % (g, v, "namespaces/{namespace}/" if namespaced else "",
                                           plural)
        op = {"x-kubernetes-group-version-kind": gvk[0],
              "parameters": [{"name": n, "in": "query", "schema": {"type": "string"}}
                             for n in ("dryRun", "fieldManager", "fieldValidation")]}
        paths[base] = {"get": dict(op), "put": dict(op), "patch": dict(op), "delete": dict(op)}
    if not schemas:
        return None
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-fake"},
            "paths": paths, "components": {"schemas": schemas}}


def crd_status(crd):
    """The status kube-apiserver gives an accepted CRD."""
    names = (crd.get("spec") or {}).get("names") or {}
    accepted = {k: v for k, v in names.items()}
    accepted.setdefault("singular", (names.get("kind") or "").lower())
    accepted.setdefault("listKind", (names.get("kind") or "") + "List")
    return {"acceptedNames": accepted,
            "conditions": [{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                            "message": "no conflicts found"},
                           {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                            "message": "the initial names have been accepted"}],
            "storedVersions": [v["name"] for v in (crd.get("spec") or {}).get("versions") or []
                               if v.get("storage")]}
