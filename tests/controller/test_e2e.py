#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tf-controller end to end against the in-memory API server, driven with the real kubectl:
start-up (certificates into a Secret, caBundle patched into the MutatingWebhookConfiguration,
leader Lease), the cluster -> pool reconciler, pod creation through the HTTPS webhook (the
fake API server calls it as kube-apiserver does, verifying the caBundle), denial of invalid
annotations with the spec's message, GPU/GPUNode/pool status from allocations recorded on
pods, remote workers and TensorFusionConnection pairing with /api/connection, quota usage,
and a clean shutdown that releases the lease. Exit 77 (skip) without kubectl or the binary.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SRC = os.environ.get("TF_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                  "..", ".."))
BIN = os.environ.get("TF_CONTROLLER_BIN")
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail), flush=True)
    return cond


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Env:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []

    def write_kubeconfig(self, api, ns, name="kubeconfig", token="t"):
        """A kubeconfig for the fake API server at API, default namespace NS, authenticating
        with TOKEN; returns its path (the first one is the tenant's, used by kubectl)."""
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: fake\nclusters:\n- name: fake\n"
                    "  cluster: {server: '%s'}\nusers:\n- name: u\n  user: {token: %s}\n"
                    "contexts:\n- name: fake\n  context: {cluster: fake, user: u, namespace: %s}\n"
                    % (api, token, ns))
        if not hasattr(self, "kubeconfig"):
            self.kubeconfig = path
        return path

    def kubectl(self, *args, stdin=None, ok=True):
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, "--request-timeout=15s",
                            "--cache-dir=" + os.path.join(self.tmp, "cache")]
                           + list(args), input=stdin, capture_output=True, text=True)
        if ok and r.returncode:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), r.stderr))
        return r

    def get(self, *args):
        r = self.kubectl("get", *args, "-o", "json", ok=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def apply(self, obj):
        return self.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(obj))


def heartbeat(env, node, age_s=0, duration_s=40):
    """The Lease a node's tf-hypervisor renews (src/hypervisor/k8s_gpus.h), renewed AGE_S
    seconds ago, valid DURATION_S seconds."""
    t = time.gmtime(time.time() - age_s)
    env.apply({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "tf-hypervisor-" + node, "namespace": "tensor-fusion-sys",
                            "labels": {"tensor-fusion.ai/component": "hypervisor",
                                       "tensor-fusion.ai/node": node}},
               "spec": {"holderIdentity": node, "leaseDurationSeconds": duration_s,
                        "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", t)}})


def remote_client_end_to_end(tmp, hport, tok):
    """The client library as a remote pod runs it: it finds its worker through the
    controller's /api/connection and authenticates with the workload's token. The worker is a
    real tf-worker on the simulated GPU at the address the connection names (the worker pod's
    IP is 127.0.0.1 here)."""
    tokf = os.path.join(tmp, "worker-token")
    with open(tokf, "w") as f:
        f.write(tok + "\n")
    ready = os.path.join(tmp, "worker-ready")
    wenv = dict(os.environ, LD_LIBRARY_PATH=os.environ["TF_SIM_LIBDIR"],
                TF_SIM_SHM_PREFIX=os.path.join(tmp, "sim-"), TF_SIM_DEVICES="A100:4Gi",
                TF_LOG_LEVEL="error")
    worker = subprocess.Popen([os.environ["TF_WORKER"], "--listen", "tcp://127.0.0.1:8001",
                               "--token-file", tokf, "--ready-file", ready], env=wenv)
    try:
        up = wait_for("tf-worker on 127.0.0.1:8001", lambda: os.path.exists(ready) or
                      worker.poll() is not None)
        check("tf-worker listens on the connection's address", up and worker.poll() is None)

        # A CUDA runtime program as users build it (plain nvcc), unmodified; the driver-API
        # cuda_attrs where nvcc is missing.
        prog = os.environ.get("TF_CUDART_PROG") or os.environ["TF_CUDA_ATTRS"]

        def client(token):
            cenv = {k: v for k, v in os.environ.items() if k != "TF_REMOTE"}
            cenv.update(LD_LIBRARY_PATH=os.environ["TF_CLIENT_DIR"], TF_TOKEN=token,
                        TF_CONTROLLER_URL="http://127.0.0.1:%d/api/connection" % hport,
                        TF_CONNECTION_NAME="client", TF_CONNECTION_NAMESPACE="ml",
                        TF_CONNECT_WAIT_MS="10000", TF_LOG_LEVEL="error")
            if os.environ.get("TF_CUDART_PRELOAD"):  # (sanitizer builds: ASan's runtime first)
                cenv.update(LD_PRELOAD=os.environ["TF_CUDART_PRELOAD"],
                            ASAN_OPTIONS="detect_leaks=0:verify_asan_link_order=0")
            return subprocess.run([prog], env=cenv, capture_output=True, text=True, timeout=60)
        r = client(tok)
        if os.environ.get("TF_CUDART_PROG"):
            ok = r.returncode == 0 and "matmul: PASS" in r.stdout
        else:
            ok = (r.returncode == 0 and "mem 4294967296" in r.stdout and
                  r.stdout.startswith("name "))
        check("remote client reaches its worker through the controller", ok,
              (r.returncode, r.stdout[:200], r.stderr[-400:]))
        r = client("0" * 48)
        check("a wrong token is refused", r.returncode != 0, (r.returncode, r.stdout[:200]))
    finally:
        worker.terminate()
        worker.wait(timeout=20)


def provisioned_pool(env):
    """A Provisioned pool short of its minimum records a node request (GPUNodeClaim) once,
    which becomes Bound when a node registers for it and goes when that node leaves."""
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNodeClass",
               "metadata": {"name": "aws-gpu"}, "spec": {"instanceProfile": "tf-gpu"}})
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {
        "name": "burst"}, "spec": {
        "capacityConfig": {"minResources": {"tflops": "300", "vram": "80Gi"}},
        "nodeManagerConfig": {"provisioningMode": "Provisioned", "nodeProvisioner": {
            "nodeClass": "aws-gpu", "gpuRequirements": [
                {"key": "node.kubernetes.io/instance-type", "values": ["p4d.24xlarge"]},
                {"key": "karpenter.sh/capacity-type", "values": ["spot"]}]}}}})

    def claims():
        return (env.get("gpunodeclaims", "-l", "tensor-fusion.ai/owner=burst") or
                {"items": []})["items"]

    got = wait_for("GPUNodeClaim of the Provisioned pool", lambda: [
        c for c in claims() if c.get("status", {}).get("phase") == "Pending"])
    if not check("node request recorded", bool(got)):
        return
    c = got[0]
    name = c["metadata"]["name"]
    check("claim asks for the pool's gap with its class and requirements", c["spec"] == {
        "nodeClassRef": {"group": "tensor-fusion.ai", "version": "v1", "kind": "GPUNodeClass",
                         "name": "aws-gpu"}, "tflopsOffered": "300", "vramOffered": "80Gi",
        "gpuDeviceOffered": 1, "instanceType": "p4d.24xlarge", "capacityType": "Spot"} and
          c["metadata"]["ownerReferences"][0]["name"] == "burst", c)
    check("pending claim says what it waits for", "tensor-fusion.ai/node-provisioner=" + name in
          c["status"]["message"], c["status"])
    time.sleep(1.0)
    check("the request is not repeated while pending", len(claims()) == 1, claims())
    env.apply({"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "burst-node-1", "labels": {"tensor-fusion.ai/node-provisioner": name}},
        "spec": {"providerID": "aws:///us-east-1a/i-0abc"}})
    bound = wait_for("claim Bound", lambda: [x for x in claims() if x["metadata"]["name"] == name
                                             and x["status"].get("phase") == "Bound"])
    check("claim bound to the node that joined", bool(bound) and bound[0]["status"][
        "instanceID"] == "aws:///us-east-1a/i-0abc", bound)
    ev = [e["reason"] for e in (env.get("events", "-n", "default") or {"items": []})["items"]
          if e.get("involvedObject", {}).get("name") == "burst"]
    check("pool events", "ManagedNodeRequested" in ev and "GPUNodeClaimBound" in ev, ev)
    env.kubectl("delete", "node", "burst-node-1")
    again = wait_for("claim released and asked again", lambda: (lambda cs: cs if cs and all(
        x["metadata"]["name"] != name for x in cs) else None)(claims()))
    check("a claim whose node left is deleted; the pool, still short, asks again", bool(again),
          claims())


def worker_counts(env, remote):
    """How many remote workers a workload gets (issue 18 item 8): pods naming one workload
    (tensor-fusion.ai/workload) share its worker; a workload the webhook made for its pods'
    owner gets one per client pod and scales down with them; a WorkloadProfile's replicas fixes
    the count; disable-features reach the worker pod; maxResources on a pool that provisions
    nothing is reported."""
    def workers(wl):
        return [p for p in (env.get("pods", "-n", "ml", "-l",
                                    "tensor-fusion.ai/component=worker,tensor-fusion.ai/workload="
                                    + wl) or {"items": []})["items"]
                if not p["metadata"].get("deletionTimestamp")]

    def client(name, anns, owner=None):
        c = json.loads(json.dumps(remote))
        c["metadata"]["name"] = name
        a = {k: v for k, v in c["metadata"]["annotations"].items()
             if k != "tensor-fusion.ai/workload"}
        a.update(anns)
        c["metadata"]["annotations"] = a
        if owner:
            c["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                 "name": owner, "uid": "uid-" + owner,
                                                 "controller": True}]
        env.apply(c)

    client("client-2", {"tensor-fusion.ai/workload": "inference"})
    client("gen-a", {}, "gen-rs")
    client("gen-b", {}, "gen-rs")
    gen = wait_for("one worker per client of a generated workload",
                   lambda: len(workers("gen-rs")) == 2)
    check("generated workload: one worker per client pod", gen, len(workers("gen-rs")))
    wl = env.get("tensorfusionworkload", "gen-rs", "-n", "ml") or {}
    check("the webhook marks the workload it generated", wl.get("metadata", {}).get(
        "annotations", {}).get("tensor-fusion.ai/generated-workload") == "true", wl)
    check("pods naming a workload share its worker", len(workers("inference")) == 1,
          [p["metadata"]["name"] for p in workers("inference")])
    env.kubectl("delete", "pod", "gen-b", "-n", "ml", "--wait=false")
    check("a client gone: its workload scales down to one worker",
          wait_for("generated workload scaled down", lambda: len(workers("gen-rs")) == 1))
    ev = [e["message"] for e in (env.get("events", "-n", "ml") or {"items": []})["items"]
          if e["reason"] == "WorkersScaledDown" and
          e.get("involvedObject", {}).get("name") == "gen-rs"]
    check("scale-down event says why", any("one per client pod" in m for m in ev), ev)

    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "WorkloadProfile",
               "metadata": {"name": "two-workers", "namespace": "ml"},
               "spec": {"replicas": 2, "isLocalGPU": False,
                        "resources": {"limits": {"tflops": "20", "vram": "4Gi"}}}})
    client("prof-client", {"tensor-fusion.ai/workload-profile": "two-workers",
                           "tensor-fusion.ai/workload": "prof-wl"})
    check("WorkloadProfile replicas: 2 workers for one client",
          wait_for("profile replicas", lambda: len(workers("prof-wl")) == 2))
    time.sleep(1.0)
    check("and no more", len(workers("prof-wl")) == 2, len(workers("prof-wl")))
    wl = env.get("tensorfusionworkload", "prof-wl", "-n", "ml") or {}
    check("the workload carries the profile's replicas", wl.get("spec", {}).get("replicas") == 2,
          wl.get("spec"))

    client("dbg-client", {"tensor-fusion.ai/workload": "dbg",
                          "tensor-fusion.ai/disable-features": "start-worker"})
    client("nolim-client", {"tensor-fusion.ai/workload": "nolim",
                            "tensor-fusion.ai/disable-features": "gpu-limiter"})
    dbg = wait_for("debug worker", lambda: workers("dbg"))
    check("start-worker disabled: the worker sleeps", dbg and dbg[0]["spec"]["containers"][0][
        "command"] == ["sleep", "infinity"], dbg and dbg[0]["spec"]["containers"][0]["command"])
    nl = wait_for("unlimited worker", lambda: workers("nolim"))
    cmd = nl[0]["spec"]["containers"][0]["command"] if nl else []
    check("gpu-limiter disabled: the worker enforces no limits",
          "--limits-region" not in cmd and "--token-file" in cmd, cmd)

    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool",
               "metadata": {"name": "capped"},
               "spec": {"capacityConfig": {"maxResources": {"tflops": "100", "vram": "80Gi"}}}})
    ev = wait_for("MaxResourcesIgnored", lambda: [
        e["message"] for e in (env.get("events", "-n", "default") or {"items": []})["items"]
        if e["reason"] == "MaxResourcesIgnored" and
        e.get("involvedObject", {}).get("name") == "capped"])
    check("maxResources on an AutoSelect pool is reported, not silently inert",
          bool(ev) and "AutoSelect" in ev[0], ev)
    for n in ("client-2", "gen-a", "prof-client", "dbg-client", "nolim-client"):
        env.kubectl("delete", "pod", n, "-n", "ml", "--wait=false", ok=False)


def wait_for(what, fn, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = fn()
        except Exception:  # noqa: BLE001 - keep polling through transient errors
            v = None
        if v:
            return v
        time.sleep(0.1)
    check("wait for " + what, False, "(timed out)")
    return None


def make_certs(d, tag):
    """A CA and a serving certificate for 127.0.0.1 in D (ca.crt, tls.crt, tls.key)."""
    os.makedirs(d, exist_ok=True)
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)  # noqa: E731
    ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.crt.new")
    key, csr, crt = (os.path.join(d, n) for n in ("tls.key.new", "tls.csr", "tls.crt.new"))
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=test-ca-" + tag)
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-out", crt, "-days", "2", "-extfile", ext)
    for n in ("ca.crt", "tls.crt", "tls.key"):  # the kubelet swaps files atomically too
        os.replace(os.path.join(d, n + ".new"), os.path.join(d, n))
    with open(os.path.join(d, "ca.crt"), "rb") as f:
        return base64.b64encode(f.read()).decode()


def cert_dir_scenario(env, tmp, cfgfile, log, ctl_kubeconfig):
    certs = os.path.join(tmp, "certs")
    ca1 = make_certs(certs, "one")
    wport, hport = free_port(), free_port()
    mwc = env.get("mutatingwebhookconfiguration", "tensor-fusion-webhook")
    mwc["webhooks"][0]["clientConfig"]["url"] = "https://127.0.0.1:%d/mutate-v1-pod" % wport
    for k in ("resourceVersion", "uid", "creationTimestamp", "generation"):
        mwc["metadata"].pop(k, None)
    env.apply(mwc)
    ports = os.path.join(tmp, "ctl2.ports")
    ctl = subprocess.Popen([BIN, "--kubeconfig", ctl_kubeconfig, "--namespace",
                            "tensor-fusion-sys", "--bind", "127.0.0.1", "--webhook-port",
                            str(wport), "--http-port", str(hport), "--webhook-config",
                            "tensor-fusion-webhook", "--cert-dir", certs, "--config", cfgfile,
                            "--identity", "ctl-b", "--resync-ms", "200", "--lease-seconds", "3",
                            "--port-file", ports], stdout=log, stderr=subprocess.STDOUT)
    bundle = lambda: env.get("mutatingwebhookconfiguration", "tensor-fusion-webhook")[  # noqa
        "webhooks"][0]["clientConfig"].get("caBundle")
    check("caBundle is the mounted CA", bool(wait_for("mounted CA", lambda: bundle() == ca1)))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "after-mount", "namespace": "ml",
                        "labels": {"tensor-fusion.ai/enabled": "true"},
                        "annotations": {"tensor-fusion.ai/isolation": "shared"}},
           "spec": {"containers": [{"name": "app", "image": "x"}]}}
    r = env.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(pod), ok=False)
    check("webhook serves the mounted certificate", "created" in r.stdout, r.stdout + r.stderr)
    time.sleep(1.1)  # a new mtime second
    ca2 = make_certs(certs, "two")
    check("caBundle follows the rotated CA", bool(wait_for("rotated CA", lambda: bundle() == ca2)))
    pod["metadata"]["name"] = "after-rotation"
    r = env.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(pod), ok=False)
    check("webhook serves the rotated certificate", "created" in r.stdout, r.stdout + r.stderr)
    ctl.send_signal(signal.SIGTERM)
    check("second controller exits cleanly", ctl.wait(timeout=20) == 0)
    return None


def placement_attacks(env, ids):
    """A tenant tries to choose, move, grow or fake GPU allocations (docs/security.md)."""
    other = "GPU-1" if ids == "GPU-0" else "GPU-0"
    r = env.kubectl("annotate", "pod", "trainer", "-n", "ml", "--overwrite",
                    "tensor-fusion.ai/gpu-ids=GPU-0,GPU-1", ok=False)
    check("tenant cannot rewrite gpu-ids", r.returncode != 0 and
          "only TensorFusion may set" in r.stderr, r.stderr)
    r = env.kubectl("annotate", "pod", "trainer", "-n", "ml", "--overwrite",
                    "tensor-fusion.ai/vram-limit=80Gi", ok=False)
    check("tenant cannot raise a running pod's limit", r.returncode != 0 and
          "cannot change" in r.stderr, r.stderr)
    r = env.kubectl("label", "pod", "trainer", "-n", "ml", "team=a", ok=False)
    check("tenant still labels its pod", r.returncode == 0, r.stderr)
    squat = {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "squat", "namespace": "ml",
                          "labels": {"tensor-fusion.ai/enabled": "true"},
                          "annotations": {"tensor-fusion.ai/gpu-ids": other,
                                          "tensor-fusion.ai/vram-limit": "80Gi"}},
             "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "app", "image": "x"}]}}
    r = env.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(squat), ok=False)
    check("pod choosing its node and GPU is denied", r.returncode != 0 and
          "spec.nodeName gpu-node-1" in r.stderr, r.stderr)
    sly = json.loads(json.dumps(squat))
    sly["metadata"].update(name="sly", labels={"tensor-fusion.ai/enabled": "false",
                                               "tensor-fusion.ai/component": "worker",
                                               "tensor-fusion.ai/workload": "inference"})
    env.apply(sly)
    got = env.get("pod", "sly", "-n", "ml") or {"metadata": {}}
    check("opted-out pod loses the system keys it brought",
          "tensor-fusion.ai/gpu-ids" not in got["metadata"].get("annotations", {}) and
          "tensor-fusion.ai/component" not in got["metadata"].get("labels", {}), got["metadata"])
    # The webhook bypassed (the controller's namespace is excluded from it): a pod with a
    # complete-looking forged allocation on the other GPU.
    forged = json.loads(json.dumps(squat))
    forged["metadata"].update(name="forged", namespace="tensor-fusion-sys", labels={
        "tensor-fusion.ai/enabled": "true", "tensor-fusion.ai/component": "client"})
    forged["metadata"]["annotations"].update({
        "tensor-fusion.ai/gpupool": "tensor-fusion-cluster-default-pool",
        "tensor-fusion.ai/isolation": "soft",
        "tensor-fusion.ai/vram-request": "80Gi", "tensor-fusion.ai/tflops-request": "300",
        "tensor-fusion.ai/container-gpus": json.dumps({"app": [other]}),
        "tensor-fusion.ai/allocation-signature": "v1:" + "ab" * 32})
    env.apply(forged)
    time.sleep(1.5)  # several reconcile passes
    gpu = env.get("gpu", "gpu-node-1-%s" % other[-1]) or {"status": {}}
    check("forged allocation is not booked", gpu["status"].get("runningApps") == [] and
          gpu["status"].get("available", {}).get("vram") == "80Gi", gpu["status"])
    env.kubectl("delete", "pod", "sly", "-n", "ml", "--wait=false", ok=False)
    env.kubectl("delete", "pod", "forged", "-n", "tensor-fusion-sys", "--wait=false", ok=False)


def main():
    if not shutil.which("kubectl") or not shutil.which("helm"):
        print("SKIP: kubectl or helm not installed")
        return 77
    if not BIN or not os.access(BIN, os.X_OK):
        print("SKIP: TF_CONTROLLER_BIN not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="tf-e2e-")
    env = Env(tmp)
    ctl = fake = None
    try:
        pf = os.path.join(tmp, "api.port")
        fake = subprocess.Popen([sys.executable, os.path.join(SRC, "tests/controller/fakeapi.py"),
                                 "--port", "0", "--port-file", pf], stdout=subprocess.DEVNULL)
        wait_for("fake API server", lambda: os.path.exists(pf), 10)
        api = "http://127.0.0.1:%s" % open(pf).read().strip()
        env.write_kubeconfig(api, "ml")
        # The controller authenticates as its service account (the webhook lets only that
        # identity write system annotations); kubectl is a tenant (fake-admin).
        ctl_kubeconfig = env.write_kubeconfig(api, "ml", "kubeconfig-controller", "ctl-token")
        urllib.request.urlopen(urllib.request.Request(
            api + "/_fake/users", method="POST", data=json.dumps({
                "ctl-token": "system:serviceaccount:tensor-fusion-sys:tensor-fusion"}).encode(),
            headers={"Content-Type": "application/json"}), timeout=10).read()
        for ns in ("tensor-fusion-sys", "ml"):  # apply: the fake speaks JSON, not protobuf
            env.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        wport, hport = free_port(), free_port()
        env.apply({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "MutatingWebhookConfiguration",
                   "metadata": {"name": "tensor-fusion-webhook"},
                   "webhooks": [{"name": "mutate-pod.tensor-fusion.ai",
                                 "admissionReviewVersions": ["v1"], "sideEffects": "NoneOnDryRun",
                                 "failurePolicy": "Fail", "timeoutSeconds": 10,
                                 "clientConfig": {"url": "https://127.0.0.1:%d/mutate-v1-pod"
                                                  % wport},
                                 "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                            "operations": ["CREATE", "UPDATE"],
                                            "resources": ["pods"]}],
                                 "namespaceSelector": {"matchExpressions": [{
                                     "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                     "values": ["tensor-fusion-sys", "kube-system"]}]}}]})
        sys.path.insert(0, os.path.join(SRC, "tests", "controller"))
        import helm
        for d in helm.template():
            if d["kind"] in ("TensorFusionCluster", "SchedulingConfigTemplate"):
                env.apply(d)
        for i in range(2):
            env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPU",
                       "metadata": {"name": "gpu-node-1-%d" % i}})
            env.kubectl("patch", "gpu", "gpu-node-1-%d" % i, "--subresource=status",
                        "--type=merge", "-p", json.dumps({"status": {
                            "uuid": "GPU-%d" % i, "gpuModel": "A100-80GB", "phase": "Running",
                            "index": i, "capacity": {"tflops": "312", "vram": "80Gi"},
                            "available": {"tflops": "312", "vram": "80Gi"}, "message": "",
                            "nodeSelector": {"kubernetes.io/hostname": "gpu-node-1"}}}))
        cfgfile = os.path.join(tmp, "config.yaml")
        with open(cfgfile, "w") as f:
            f.write("defaultPool: tensor-fusion-cluster-default-pool\n"
                    "autoMigration: {enable: false}\n")
        # A node whose hypervisor has not renewed its heartbeat yet is Pending.
        # (gpu-node-1's heartbeat comes below, once its GPUNode exists.)
        ports = os.path.join(tmp, "ctl.ports")
        log = open(os.path.join(tmp, "controller.log"), "w")
        ctl = subprocess.Popen([BIN, "--kubeconfig", ctl_kubeconfig, "--namespace",
                                "tensor-fusion-sys", "--bind", "127.0.0.1", "--webhook-port",
                                str(wport), "--http-port", str(hport), "--webhook-config",
                                "tensor-fusion-webhook", "--extra-san", "127.0.0.1",
                                "--config", cfgfile, "--identity", "ctl-a", "--resync-ms", "200",
                                "--lease-seconds", "3", "--port-file", ports],
                               stdout=log, stderr=subprocess.STDOUT)
        wait_for("controller ports", lambda: os.path.exists(ports), 30)

        # Start-up: certificates, caBundle, lease.
        sec = wait_for("certificate secret", lambda: env.get("secret", "tensor-fusion-tls", "-n",
                                                              "tensor-fusion-sys"))
        mwc = wait_for("caBundle", lambda: (lambda m: m if m["webhooks"][0]["clientConfig"].get(
            "caBundle") else None)(env.get("mutatingwebhookconfiguration",
                                           "tensor-fusion-webhook")))
        if sec and mwc:
            check("caBundle is the secret's CA", mwc["webhooks"][0]["clientConfig"]["caBundle"] ==
                  sec["data"]["ca.crt"])
            check("CA is PEM", b"BEGIN CERTIFICATE" in base64.b64decode(sec["data"]["ca.crt"]))
        lease = wait_for("leader lease", lambda: (lambda l: l if l and l["spec"].get(
            "holderIdentity") == "ctl-a" else None)(env.get("lease", "tensor-fusion-controller",
                                                            "-n", "tensor-fusion-sys")))
        check("lease held by the controller", bool(lease))
        ready = wait_for("readyz", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d/readyz" % hport, timeout=2).status == 200)
        check("leader is ready", bool(ready))

        # Cluster -> pool.
        # Named <cluster>-<pool> and marked default, as upstream does.
        pool = wait_for("GPUPool from the cluster", lambda: env.get(
            "gpupool", "tensor-fusion-cluster-default-pool"))
        if pool:
            check("pool spec is the specTemplate", pool["spec"]["capacityConfig"][
                "oversubscription"]["tflopsOversellRatio"] == 500)
            check("pool is the default one", pool["metadata"].get("annotations", {}).get(
                "tensor-fusion.ai/is-default-pool") == "true", pool["metadata"])
        ev = wait_for("GPUPoolCreated event", lambda: [e for e in (env.get(
            "events", "-n", "default") or {"items": []})["items"] if e["reason"] ==
            "GPUPoolCreated"])
        check("GPUPoolCreated event recorded", bool(ev))

        # A pod through the webhook.
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "trainer", "namespace": "ml",
                            "labels": {"tensor-fusion.ai/enabled": "true"},
                            "annotations": {"tensor-fusion.ai/tflops-request": "100",
                                            "tensor-fusion.ai/tflops-limit": "200",
                                            "tensor-fusion.ai/vram-request": "40Gi",
                                            "tensor-fusion.ai/vram-limit": "40Gi"}},
               "spec": {"containers": [{"name": "app", "image": "pytorch/pytorch"}]}}
        r = env.apply(pod)
        check("pod admitted", "pod/trainer created" in r.stdout, r.stdout + r.stderr)
        got = env.get("pod", "trainer", "-n", "ml")
        if check("pod exists", bool(got)):
            check("schedulerName", got["spec"]["schedulerName"] == "tensor-fusion-scheduler")
            a = got["metadata"]["annotations"]
            check("normalised annotations", a.get("tensor-fusion.ai/gpupool") ==
                  "tensor-fusion-cluster-default-pool"
                  and a.get("tensor-fusion.ai/qos") == "medium" and
                  a.get("tensor-fusion.ai/workload") == "trainer", a)
            envs = {e["name"]: e.get("value") for e in got["spec"]["containers"][0]["env"]}
            check("limiter injected", envs.get("LD_PRELOAD") == "/tensor-fusion/libtf_limiter.so")
        wl = wait_for("TensorFusionWorkload", lambda: env.get("tensorfusionworkload", "trainer",
                                                              "-n", "ml"))
        if wl:
            check("workload spec", wl["spec"]["resources"]["requests"]["vram"] == "40Gi" and
                  wl["spec"]["isolation"] == "soft", wl["spec"])
        # Seed 000: a critical pod naming no PriorityClass gets TensorFusion's, with its value.
        env.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                   "metadata": {"name": "tensor-fusion-critical"}, "value": 1000000,
                   "globalDefault": False})
        # (in its own namespace: the quota checks below count namespace ml)
        crit = dict(pod, metadata=dict(pod["metadata"], name="critical", namespace="default",
                                       annotations=dict(pod["metadata"]["annotations"], **{
                                           "tensor-fusion.ai/qos": "critical"})))
        r = env.apply(crit)
        got = env.get("pod", "critical", "-n", "default")
        check("critical pod gets the QoS PriorityClass and its value", got and
              got["spec"].get("priorityClassName") == "tensor-fusion-critical" and
              got["spec"].get("priority") == 1000000, got and got["spec"])
        bad = dict(pod, metadata=dict(pod["metadata"], name="bad", annotations={
            "tensor-fusion.ai/vram-limit": "4Gb"}))
        r = env.kubectl("apply", "--validate=false", "-f", "-", stdin=json.dumps(bad), ok=False)
        check("invalid annotation denied", r.returncode != 0 and "denied the request" in r.stderr
              and "tensor-fusion.ai/vram-limit" in r.stderr and "4Gb" in r.stderr, r.stderr)
        check("denied pod not created", env.get("pod", "bad", "-n", "ml") is None)

        # kube-scheduler's side: ExtenderArgs over HTTPS, trusting the CA from the Secret.
        import ssl
        ctx = ssl.create_default_context(cadata=base64.b64decode(sec["data"]["ca.crt"]).decode())

        def extender(verb, body):
            req = urllib.request.Request("https://127.0.0.1:%d/scheduler/%s" % (wport, verb),
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
                return json.loads(resp.read())

        got = env.get("pod", "trainer", "-n", "ml")
        fr = wait_for("extender filter", lambda: extender("filter", {
            "Pod": got, "Nodes": None, "NodeNames": ["gpu-node-1", "cpu-node"]}))
        if fr:
            check("filter keeps the GPU node", fr["NodeNames"] == ["gpu-node-1"], fr)
            check("filter explains the CPU node", "no TensorFusion GPUs" in
                  fr["FailedNodes"].get("cpu-node", ""), fr)
        pr = extender("prioritize", {"Pod": got, "Nodes": None, "NodeNames": ["gpu-node-1"]})
        # Hosts scoring 0 are left out (kube-scheduler counts a missing host as 0).
        check("prioritize scores 1..10, 0 left out", len(pr) <= 1 and all(
            h["Host"] == "gpu-node-1" and 1 <= h["Score"] <= 10 for h in pr), pr)
        br = extender("bind", {"PodName": "trainer", "PodNamespace": "ml",
                               "PodUID": got["metadata"]["uid"], "Node": "gpu-node-1"})
        check("bind succeeds", br == {"Error": ""}, br)
        got = env.get("pod", "trainer", "-n", "ml")
        check("pod bound to the node", got["spec"].get("nodeName") == "gpu-node-1")
        ids = got["metadata"]["annotations"].get("tensor-fusion.ai/gpu-ids", "")
        check("gpu-ids recorded", ids in ("GPU-0", "GPU-1"), ids)
        check("container-gpus recorded", json.loads(got["metadata"]["annotations"].get(
            "tensor-fusion.ai/container-gpus", "{}")) == {"app": [ids]})
        placement_attacks(env, ids)
        # The allocation reaches the GPU, GPUNode and pool status.
        gname = "gpu-node-1-%s" % (ids[-1] if ids else "0")
        gpu = wait_for("GPU available drops", lambda: (lambda g: g if g and g["status"].get(
            "available", {}).get("vram") == "40Gi" else None)(env.get("gpu", gname)))
        if gpu:
            check("GPU available TFLOPS", gpu["status"]["available"]["tflops"] == "212")
            apps = gpu["status"]["runningApps"]
            check("GPU runningApps: the workload with its pods", len(apps) == 1 and
                  apps[0]["name"] == "trainer" and apps[0]["namespace"] == "ml" and
                  apps[0]["count"] == 1 and [p["name"] for p in apps[0]["pods"]] == ["trainer"],
                  apps)
        gn = wait_for("GPUNode", lambda: (lambda n: n if n and n.get("status", {}).get(
            "allocatedPods") else None)(env.get("gpunode", "gpu-node-1")))
        check("a GPUNode without its hypervisor's heartbeat is Pending",
              gn and gn["status"]["phase"] == "Pending", gn and gn["status"])
        heartbeat(env, "gpu-node-1")
        gn = wait_for("GPUNode Running on its heartbeat", lambda: (lambda n: n if n and n.get(
            "status", {}).get("phase") == "Running" else None)(env.get("gpunode", "gpu-node-1")))
        if gn:
            check("GPUNode totals", gn["status"]["totalGPUs"] == 2 and
                  gn["status"]["totalTFlops"] == "624" and
                  gn["status"]["availableVRAM"] == "120Gi", gn["status"])
            held = gn["status"]["allocatedPods"].get(ids)
            check("GPUNode allocatedPods: upstream's pod entries", held == [{
                "name": "trainer", "namespace": "ml", "uid": got["metadata"]["uid"],
                "qos": "medium", "requests": {"tflops": "100", "vram": "40Gi"},
                "limits": {"tflops": "200", "vram": "40Gi"}}], gn["status"]["allocatedPods"])
        pst = wait_for("pool status", lambda: (lambda p: p if p and p.get("status", {}).get(
            "availableTFlops") == "524" else None)(env.get("gpupool",
                                                 "tensor-fusion-cluster-default-pool")))
        if pst:
            check("pool availability", pst["status"]["totalGPUs"] == 2 and
                  pst["status"]["availableVRAM"] == "120Gi" and
                  pst["status"]["phase"] == "Running" and pst["status"]["readyNodes"] == 1 and
                  pst["status"]["notReadyNodes"] == 0, pst["status"])
        # The heartbeat stops: the node is Unknown, the pool not ready, an Event says why.
        heartbeat(env, "gpu-node-1", age_s=60)
        pst = wait_for("pool not ready", lambda: (lambda p: p if p and p["status"].get(
            "readyNodes") == 0 else None)(env.get("gpupool",
                                                 "tensor-fusion-cluster-default-pool")))
        check("a lost heartbeat makes the node Unknown and the pool not ready", pst and
              pst["status"]["phase"] == "Unknown" and pst["status"]["notReadyNodes"] == 1 and
              env.get("gpunode", "gpu-node-1")["status"]["phase"] == "Unknown",
              pst and pst["status"])
        ev = wait_for("NodeNotReady event", lambda: [e for e in (env.get(
            "events", "-n", "default") or {"items": []})["items"] if e["reason"] ==
            "NodeNotReady" and "heartbeat" in e["message"]])
        check("NodeNotReady names the lost heartbeat", bool(ev))
        heartbeat(env, "gpu-node-1")
        check("back to Running with the next renewal", wait_for("node Running again", lambda: (
            env.get("gpunode", "gpu-node-1") or {}).get("status", {}).get("phase") == "Running"))

        # Remote mode: a worker pod per client, the connection pairs them.
        remote = {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "client", "namespace": "ml",
                               "labels": {"tensor-fusion.ai/enabled": "true"},
                               "annotations": {"tensor-fusion.ai/is-local-gpu": "false",
                                               "tensor-fusion.ai/tflops-limit": "50",
                                               "tensor-fusion.ai/vram-limit": "8Gi",
                                               "tensor-fusion.ai/container-gpu-count":
                                                   '{"app":1}',
                                               "tensor-fusion.ai/workload": "inference"}},
                  "spec": {"containers": [{"name": "app", "image": "x"}]}}
        env.apply(remote)
        worker = wait_for("worker pod", lambda: [p for p in env.get(
            "pods", "-n", "ml", "-l", "tensor-fusion.ai/component=worker")["items"]])
        if worker:
            w = worker[0]
            check("worker holds the vGPU request", w["spec"]["containers"][0]["resources"][
                "limits"]["tensor-fusion.ai/vgpu"] == "1")
            wc = w["spec"]["containers"][0]
            wenv = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in wc.get("env", [])}
            check("worker sees exactly its GPUs", wenv.get("NVIDIA_VISIBLE_DEVICES") ==
                  "metadata.annotations['tensor-fusion.ai/gpu-ids']", wenv)
            check("worker enforces its pod's limit region", wc["command"][-3:] == [
                "--limits-region", "/run/tensor-fusion/pod/shm", "--pinned-staging"] and {
                "name": "tf-shm", "mountPath": "/run/tensor-fusion/pod", "readOnly": True,
                "subPathExpr": "$(POD_NAMESPACE)/$(POD_NAME)"} in wc.get("volumeMounts", []) and {
                "name": "tf-shm", "mountPath": "/run/tensor-fusion/pod/rw",
                "subPathExpr": "$(POD_NAMESPACE)/$(POD_NAME)/rw"} in wc.get("volumeMounts", []) and
                  wenv.get("POD_NAMESPACE") == "metadata.namespace" and
                  {"name": "tf-shm", "hostPath": {"path": "/run/tensor-fusion/shm",
                                                   "type": "DirectoryOrCreate"}} in
                  w["spec"].get("volumes", []), wc)
            # Authenticated: the workload's token Secret, made once with a random token, is
            # the worker's --token-file and the client's TF_TOKEN.
            sec = env.get("secret", "tf-token-inference", "-n", "ml")
            tok = base64.b64decode(sec["data"]["token"]).decode() if sec else ""
            check("token Secret made for the workload", len(tok) == 48 and
                  all(c in "0123456789abcdef" for c in tok) and sec["metadata"][
                      "ownerReferences"][0]["kind"] == "TensorFusionWorkload", sec)
            check("worker requires the token", wc["command"][3:5] == [
                "--token-file", "/run/tensor-fusion/token/token"] and {
                    "name": "tf-token", "mountPath": "/run/tensor-fusion/token",
                    "readOnly": True} in wc["volumeMounts"] and {
                    "name": "tf-token", "secret": {"secretName": "tf-token-inference"}} in
                  w["spec"]["volumes"], wc)
            cl = env.get("pod", "client", "-n", "ml")
            cenv = {e["name"]: e for e in cl["spec"]["containers"][0].get("env", [])}
            check("client presents the token", cenv.get("TF_TOKEN", {}).get("valueFrom") == {
                "secretKeyRef": {"name": "tf-token-inference", "key": "token"}}, cenv)
            check("worker keeps no per-container split of the client",
                  "tensor-fusion.ai/container-gpu-count" not in w["metadata"]["annotations"],
                  w["metadata"]["annotations"])
            # kube-scheduler binds the worker through the extender, which signs its allocation:
            # only such workers are paired with clients.
            br = extender("bind", {"PodName": w["metadata"]["name"], "PodNamespace": "ml",
                                   "PodUID": w["metadata"]["uid"], "Node": "gpu-node-1"})
            check("worker bound by the extender", br == {"Error": ""}, br)
            env.kubectl("patch", "pod", w["metadata"]["name"], "-n", "ml", "--subresource=status",
                        "--type=merge", "-p", json.dumps({"status": {
                            "phase": "Running", "podIP": "127.0.0.1"}}))
            url = wait_for("connection URL", lambda: json.loads(urllib.request.urlopen(
                "http://127.0.0.1:%d/api/connection?name=client&namespace=ml" % hport,
                timeout=2).read())["workerURL"])
            check("/api/connection returns the worker", url == "tcp://127.0.0.1:8001", url)
            if os.environ.get("TF_CUDA_ATTRS"):
                remote_client_end_to_end(tmp, hport, tok)
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/api/connection?name=nope&namespace=ml"
                                   % hport, timeout=2)
            check("unknown connection is 404", False)
        except urllib.error.HTTPError as e:
            check("unknown connection is 404", e.code == 404)

        # Quota usage.
        env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUResourceQuota",
                   "metadata": {"name": "ml-quota", "namespace": "ml"},
                   "spec": {"total": {"requests": {"tflops": "1000", "vram": "400Gi"},
                                      "maxWorkers": 10}}})
        q = wait_for("quota usage", lambda: (lambda o: o if o and o.get("status", {}).get(
            "used") else None)(env.get("gpuresourcequota", "ml-quota", "-n", "ml")))
        if q:
            check("quota used requests", q["status"]["used"]["requests"]["tflops"] == "150" and
                  q["status"]["used"]["workers"] == 2, q["status"])

        # A remote workload on whole GPUs: its worker has no limits to enforce (the node agent
        # writes no region for it), so it must not wait for one.
        whole = json.loads(json.dumps(remote))
        whole["metadata"]["name"] = "client-whole"
        whole["metadata"]["annotations"] = {"tensor-fusion.ai/is-local-gpu": "false",
                                            "tensor-fusion.ai/isolation": "shared",
                                            "tensor-fusion.ai/workload": "whole-inference"}
        env.apply(whole)
        ww = wait_for("whole-GPU worker pod", lambda: [p for p in env.get(
            "pods", "-n", "ml", "-l", "tensor-fusion.ai/workload=whole-inference")["items"]])
        if ww:
            cmd = ww[0]["spec"]["containers"][0]["command"]
            check("whole-GPU worker waits for no region", "--limits-region" not in cmd and
                  "--token-file" in cmd, cmd)

        worker_counts(env, remote)
        provisioned_pool(env)

        # Every write the controller made is one kube-apiserver accepts as it is: nothing
        # refused, nothing pruned by the CRDs' schemas.
        import fakeapi
        log.flush()
        probs = fakeapi.write_problems(api, open(os.path.join(tmp, "controller.log")).read())
        check("controller writes are schema-clean", not probs, "\n".join(probs[:10]))

        # Configuration reload (helm upgrade changing the ConfigMap): auto-migration starts to
        # apply without a restart; an invalid file leaves the running configuration.
        def gpu_pod(name):
            env.apply({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "ml"},
                       "spec": {"containers": [{"name": "app", "image": "x", "resources": {
                           "limits": {"nvidia.com/gpu": "1"}}}]}})
            return env.get("pod", name, "-n", "ml")
        p = gpu_pod("legacy-before")
        check("auto-migration off: an nvidia.com/gpu pod is left alone",
              p and p["spec"].get("schedulerName") != "tensor-fusion-scheduler", p and p["spec"])

        def rewrite(text):
            with open(cfgfile + ".new", "w") as f:
                f.write(text)
            os.rename(cfgfile + ".new", cfgfile)
        rewrite("defaultPool: tensor-fusion-cluster-default-pool\nautoMigration: {enable: true}\n")
        p = wait_for("auto-migration applied after the reload", lambda: (lambda q: q if q and q[
            "spec"].get("schedulerName") == "tensor-fusion-scheduler" else None)(
                gpu_pod("legacy-%d" % int(time.time() * 1000))), 20)
        check("reloaded: an nvidia.com/gpu pod is migrated without a restart", p is not None)
        rewrite("defaultPool: tensor-fusion-cluster-default-pool\nautoMigration: {enable: [oops\n")
        wait_for("invalid config reported", lambda: "running configuration stays" in open(
            os.path.join(tmp, "controller.log")).read(), 10)
        p = gpu_pod("legacy-after-bad")
        check("an invalid config keeps the running one (still migrating)",
              p and p["spec"].get("schedulerName") == "tensor-fusion-scheduler", p and p["spec"])
        check("the controller still runs", ctl.poll() is None)
        rewrite("defaultPool: tensor-fusion-cluster-default-pool\nautoMigration: {enable: false}\n")

        # Clean shutdown releases the lease for a standby.
        ctl.send_signal(signal.SIGTERM)
        check("controller exits cleanly", ctl.wait(timeout=20) == 0)
        ctl = None
        lease = env.get("lease", "tensor-fusion-controller", "-n", "tensor-fusion-sys")
        check("lease released", lease and lease["spec"]["holderIdentity"] == "", lease)

        # Mounted certificates (cert-manager style), rotated while serving.
        if shutil.which("openssl"):
            ctl = cert_dir_scenario(env, tmp, cfgfile, log, ctl_kubeconfig)
        else:
            print("SKIP: openssl not installed (mounted-certificate rotation not checked)")
    finally:
        if ctl:
            ctl.kill()
            ctl.wait()
        if fake:
            fake.terminate()
            fake.wait()
        if failed:
            try:
                print(open(os.path.join(tmp, "controller.log")).read()[-6000:])
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
    print("controller e2e: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
