#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Conformance of our CRDs with upstream TensorFusion's custom resources (issue 16).

The fixtures in tests/conformance/crs/ are written from upstream's documented samples and chart
defaults, one or more objects of every kind. Each is applied with the real `kubectl apply`
(strict field validation, kubectl's default) to the in-memory API server serving the chart's
CRDs, with kube-apiserver's structural-schema rules (fakecrd.py): every object must be
accepted, and read back with nothing pruned (every field of the fixture is stored as written).
Status fixtures go through the status subresource. `kubectl get` must print upstream's printer
columns. Then the objects as stored (the API server's defaults applied) are given to our C
parsers (crd_meaning.c) and must mean what upstream means by them.

Exit 77 (skip) without kubectl, python3-yaml or the crd_meaning helper (TF_CRD_MEANING).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml not installed")
    sys.exit(77)

SRC = os.environ.get("TF_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                  "..", ".."))
FIXTURES = os.path.join(SRC, "tests", "conformance", "crs")
MEANING = os.environ.get("TF_CRD_MEANING")
GiB = 1 << 30
passed = failed = 0

# Upstream's additionalPrinterColumns, as `kubectl get` heads them (Name first).
COLUMNS = {
    "gpus": ["GPU MODEL", "PHASE", "TOTAL TFLOPS", "TOTAL VRAM", "AVAILABLE TFLOPS",
             "AVAILABLE VRAM", "DEVICE UUID", "USED BY", "NODE"],
    "gpunodes": ["PHASE", "TOTAL TFLOPS", "TOTAL VRAM", "VIRTUAL TFLOPS", "VIRTUAL VRAM",
                 "AVAILABLE TFLOPS", "AVAILABLE VRAM", "GPU COUNT"],
    "gpupools": ["PHASE", "TFLOPS OVERSUBSCRIPTION", "MODE", "DEFAULT SCHEDULING STRATEGY",
                 "TOTAL NODES", "TOTAL GPU", "TOTAL TFLOPS", "TOTAL VRAM", "AVAILABLE TFLOPS",
                 "AVAILABLE VRAM"],
    "tensorfusionclusters": ["PHASE", "TOTAL POOLS", "TOTAL NODES", "TOTAL GPU", "TOTAL TFLOPS",
                             "TOTAL VRAM", "AVAILABLE TFLOPS", "AVAILABLE VRAM"],
    "tensorfusionworkloads": ["PHASE", "WORKER COUNT", "READY WORKERS", "POD TEMPLATE HASH",
                              "POOL NAME", "QOS", "IS LOCAL GPU", "GPU NUMBER", "REPLICAS"],
    "workloadprofiles": ["POOL NAME", "QOS", "IS LOCAL GPU", "GPU NUMBER", "REPLICAS"],
    "tensorfusionconnections": ["PHASE", "CONNECTION URL", "WORKER NAME", "WORKLOAD NAME",
                                "CLIENT POD"],
    "schedulingconfigtemplates": ["MODE", "ALLOW LOCAL GPU", "AUTOFREEZE"],
    "gpuresourcequotas": ["REQUESTS TFLOPS USED", "REQUESTS VRAM USED", "WORKERS USED",
                          "ALERT THRESHOLD", "AGE"],
    "providerconfigs": ["VENDOR", "AGE"],
    "gpunodeclasses": ["AGE"],
    "gpunodeclaims": ["PHASE"],
}


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))
    return cond


def missing(want, have, path=""):
    """Paths of WANT (a fixture) absent from or different in HAVE (what was stored)."""
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return [path or "."]
        out = []
        for k, v in want.items():
            out += missing(v, have.get(k), "%s.%s" % (path, k)) if k in have else \
                ["%s.%s" % (path, k)]
        return out
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) != len(want):
            return [path]
        out = []
        for i, (a, b) in enumerate(zip(want, have)):
            out += missing(a, b, "%s[%d]" % (path, i))
        return out
    return [] if want == have else ["%s: %r stored as %r" % (path, want, have)]


class Kube:
    def __init__(self, tmp, port):
        self.base = ["kubectl", "--server=http://127.0.0.1:%s" % port, "--request-timeout=10s",
                     "--cache-dir=" + os.path.join(tmp, "cache")]
        self.env = dict(os.environ, KUBECONFIG=os.path.join(tmp, "none"))

    def run(self, *args, stdin=None):
        return subprocess.run(self.base + list(args), input=stdin, capture_output=True,
                              text=True, env=self.env)

    def get(self, kind, name, ns=None):
        r = self.run("get", kind, name, "-o", "json", *(["-n", ns] if ns else []))
        return json.loads(r.stdout) if r.returncode == 0 else None


def plural(kind):
    return {"GPU": "gpus", "GPUNodeClass": "gpunodeclasses"}.get(kind, kind.lower() + "s")


def apply_fixtures(k, tmp):
    """Applies every fixture document; returns [(doc, stored object)]."""
    for ns in ("tensor-fusion", "production-namespace"):  # JSON: the fake speaks no protobuf
        k.run("apply", "--validate=false", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
    out = []
    for fn in sorted(os.listdir(FIXTURES)):
        with open(os.path.join(FIXTURES, fn)) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for d in docs:
            kind, meta = d["kind"], d["metadata"]
            ns = meta.get("namespace")
            status = d.get("status")
            body = {key: v for key, v in d.items() if key != "status"}
            if k.get(plural(kind), meta["name"], ns) is None:
                r = k.run("apply", "-f", "-", stdin=json.dumps(body))
                check("kubectl apply (strict) accepts %s %s" % (kind, meta["name"]),
                      r.returncode == 0 and "Warning" not in r.stderr, r.stdout + r.stderr)
            if status is not None:
                r = k.run("patch", plural(kind), meta["name"], "--subresource=status",
                          "--type=merge", "-p", json.dumps({"status": status}),
                          *(["-n", ns] if ns else []))
                check("status of %s %s accepted" % (kind, meta["name"]),
                      r.returncode == 0 and "Warning" not in r.stderr, r.stdout + r.stderr)
            stored = k.get(plural(kind), meta["name"], ns)
            if check("%s %s stored" % (kind, meta["name"]), stored is not None):
                lost = missing({key: v for key, v in d.items() if key != "metadata"}, stored)
                check("nothing of %s %s pruned or changed" % (kind, meta["name"]), not lost,
                      lost[:8])
                out.append((d, stored))
    return out


def check_columns(k):
    for res, cols in COLUMNS.items():
        r = k.run("get", res, "-A" if res in ("tensorfusionworkloads", "workloadprofiles",
                                              "tensorfusionconnections",
                                              "gpuresourcequotas") else "--show-kind=false")
        head = re.split(r"\s{2,}", r.stdout.splitlines()[0].strip()) if r.stdout else []
        want = (["NAMESPACE"] if res in ("tensorfusionworkloads", "workloadprofiles",
                                         "tensorfusionconnections", "gpuresourcequotas")
                else []) + ["NAME"] + cols
        check("kubectl get %s prints upstream's columns" % res, head == want, head)
    r = k.run("get", "gpu", "gpu-1f2e3d4c", "--no-headers")
    cells = re.split(r"\s{2,}", r.stdout.strip())
    check("kubectl get gpu shows the device UUID, its user and node as upstream", cells[7:] == [
        "GPU-1F2E3D4C", "tensor-fusion", "map[kubernetes.io/hostname:gpu-node-1]"], cells)
    r = k.run("get", "gpunode", "gpu-node-1", "--no-headers")
    check("GPU Count is an integer column", re.split(r"\s{2,}", r.stdout.strip())[-1] == "2",
          r.stdout)


def check_defaults(k):
    pool = k.get("gpupools", "gpupool-sample")
    nm = pool["spec"]["nodeManagerConfig"]
    check("provisioningMode defaults to AutoSelect", nm.get("provisioningMode") == "AutoSelect",
          nm)
    train = k.get("gpupools", "training")["spec"]["nodeManagerConfig"]
    np = train["nodeProvisioner"]
    check("requirement operator defaults to In", np["gpuRequirements"][1]["operator"] == "In")
    check("budget defaults", np["budget"]["budgetPerMonth"] == "1000" and
          np["budget"]["budgetExceedStrategy"] == "AlertAndTerminateVM", np["budget"])
    check("taint effect defaults to NoSchedule", np["gpuTaints"][0]["effect"] == "NoSchedule")
    check("defrag defaults", train["nodeCompaction"]["defrag"]["maxDuration"] == "2h", train)
    wp = k.get("workloadprofiles", "default-profile", "tensor-fusion")
    check("WorkloadProfile isolation defaults to soft", wp["spec"].get("isolation") == "soft")
    sct = k.get("schedulingconfigtemplates", "tf-scheduling-config")
    check("SchedulingConfigTemplate keeps free-form filter params",
          sct["spec"]["placement"]["gpuFilters"][0]["params"] == {"connectionNum": 150})


def meanings(objs, tmp):
    path = os.path.join(tmp, "objs.json")
    with open(path, "w") as f:
        json.dump(objs, f)
    r = subprocess.run([MEANING, path], capture_output=True, text=True)
    if not check("crd_meaning runs", r.returncode == 0, r.stderr):
        return {}
    return {(m["kind"], m["name"]): m["meaning"] for m in json.loads(r.stdout)}


def check_meanings(m):
    def eq(name, got, want):
        check(name, got == want, "got %r, want %r" % (got, want))

    p = m.get(("GPUPool", "gpupool-sample"), {})
    eq("sample pool capacity", (p.get("min"), p.get("warm")),
       ({"tflopsMilli": 20000, "vramBytes": 10 * GiB}, {"tflopsMilli": 10000,
                                                         "vramBytes": 5 * GiB}))
    eq("sample pool compaction every 5m (default)", p.get("compactionPeriodMs"), 300000)
    t = m.get(("GPUPool", "training"), {})
    eq("Provisioned pool", t.get("provisioningMode"), "Provisioned")
    eq("upstream defrag without timezone runs in UTC", t.get("defrag"), {
        "enabled": True, "schedule": "30 2 * * *", "timezone": "UTC",
        "maxDurationMs": 7200000, "utilizationThresholdPercent": 30})
    c = m.get(("TensorFusionCluster", "tensor-fusion"), {})
    eq("cluster pool shared", (c.get("shared", {}).get("compactionPeriodMs"),
                               c.get("shared", {}).get("max")),
       (1800000, {"tflopsMilli": 100000, "vramBytes": 100 * GiB}))
    eq("cluster pool ascend-shared has the defaults",
       c.get("ascend-shared", {}).get("provisioningMode"), "AutoSelect")
    d = m.get(("WorkloadProfile", "default-profile"), {})
    eq("documented profile", (d.get("requests"), d.get("pool"), d.get("qos"),
                              d.get("isLocalGPU"), d.get("isolation")),
       ({"tflopsMilli": 10000, "percentBp": None, "vramBytes": GiB}, "shared-tensor-fusion",
        "medium", True, "soft"))
    e = m.get(("WorkloadProfile", "everything"), {})
    eq("percent profile: compute with tflops \"0\" (upstream requires tflops) is a percent",
       (e.get("requests"), e.get("limits")),
       ({"tflopsMilli": None, "percentBp": 2500, "vramBytes": 8 * GiB},
        {"tflopsMilli": None, "percentBp": 5000, "vramBytes": 16 * GiB}))
    eq("profile GPUs and replicas", (e.get("gpuCount"), e.get("replicas")), (2, 4))
    a = e.get("autoScaling", {})
    eq("upstream autoScalingConfig read by the autoscaler",
       (a.get("enable"), a.get("target"), a.get("margin"), a.get("targetCompute"),
        a.get("historyMs"), a.get("cronRules")), (True, "compute", 0.15, 0.9, 7200000, 1))
    w = m.get(("TensorFusionWorkload", "fixed-workload"), {})
    eq("documented workload's resources", w.get("original"), {
        "reqTflopsMilli": 10000, "limTflopsMilli": 10000, "reqVramBytes": GiB,
        "limVramBytes": GiB})
    s = m.get(("SchedulingConfigTemplate", "tf-scheduling-config"), {})
    eq("chart's placement", s.get("placement"), "NodeCompactGPULowLoad")
    eq("vertical scaling rule", [(r.get("enable"), r.get("target"), r.get("margin"))
                                 for r in s.get("rules", [])], [(True, "all", 0.15)])
    eq("sample node claim", m.get(("GPUNodeClaim", "gpunodeclaim-sample")), {
        "tflopsMilli": 70000, "vramBytes": 24 * GiB, "gpus": 1, "nodeName": "gpu-node-1",
        "nodeClass": "gpunodeclass-sample"})
    q = m.get(("GPUResourceQuota", "production-namespace"), {})
    eq("sample quota", (q.get("totalRequests"), q.get("maxWorkers"),
                        q.get("alertThresholdPercent"), q.get("maxGPUCount"),
                        q.get("defaultRequests")),
       ({"tflopsMilli": 1000000, "vramBytes": 200 * GiB}, 100, 90, 8,
        {"tflopsMilli": 500, "vramBytes": GiB}))


def main():
    if not shutil.which("kubectl"):
        print("SKIP: kubectl not installed")
        return 77
    if not MEANING or not os.access(MEANING, os.X_OK):
        print("SKIP: TF_CRD_MEANING not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="tf-conformance-")
    pf = os.path.join(tmp, "port")
    fake = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "controller",
                                                          "fakeapi.py"),
                             "--port", "0", "--port-file", pf], stdout=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.exists(pf):
                break
            time.sleep(0.02)
        k = Kube(tmp, open(pf).read().strip())
        pairs = apply_fixtures(k, tmp)
        check_columns(k)
        check_defaults(k)
        check_meanings(meanings([stored for _, stored in pairs], tmp))
    finally:
        fake.terminate()
        fake.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("CRD conformance: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
