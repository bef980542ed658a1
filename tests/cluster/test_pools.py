#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Pools by selector on a simulated cluster, end to end: the in-memory API server (fakeapi.py),
three GPU nodes whose tf-hypervisor --kubernetes runs on simulated GPUs (started without
--pool: the controller assigns their pools), and tf-controller under isolationModePolicy
static. Everything a user writes goes through the real kubectl.

  * two pools select their nodes by label (nodeSelector): "train" (A100 nodes, CompactFirst,
    soft by default, partitioned where a node is labelled mig=on) and "infer" (L4 nodes,
    LowLoadFirst, hard); each GPU and GPUNode carries its pool (tensor-fusion.ai/gpupool) and
    each GPU its node's isolation mode;
  * pods admitted by the webhook and placed by the extender follow their pool's rules: two
    soft train pods pack onto one GPU of the soft A100 node (never the partitioned one), two
    hard infer pods spread over the L4 node's two GPUs; a soft pod cannot land on the hard
    pool's node;
  * a third pool whose selector overlaps infer's is a conflict: the GPUNode gets the
    PoolConflict condition and a Warning Event, the node stays where it is;
  * partitioned pods get their partition: the extender records the template
    (tensor-fusion.ai/partition), the node's hypervisor creates a MIG device of it on the
    simulated GPU through NVML and records it in the GPU's status.allocatedPartitions, GPU
    availability is the templates'; the partition goes with its pod and a restarted hypervisor
    keeps the live ones;
  * a partitioned pod's containers get their partition: the webhook gave it a pod index
    (tensor-fusion.ai/index, resource tensor-fusion.ai/index_<k>: <n>), and Allocate on the
    node's pod-index device plugin (called as the kubelet does, over its unix socket) answers
    NVIDIA_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES = its MIG device, waiting for the partition
    when the kubelet asks before it exists; a CUDA program started with that env on the
    simulated GPU sees one device with the partition's memory only;
  * a node whose hypervisor stops renewing its heartbeat goes Unknown, with its GPUs: no new
    pod is placed there until the hypervisor is back.

Exit 77 (skip) without kubectl or the simulated GPU (the Allocate checks need python3-grpcio
and python3-grpc-tools, like deviceplugin_kubelet).
"""
import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
import test_e2e as base  # noqa: E402 - Env, check, wait_for, free_port

SRC, check, wait_for, free_port = base.SRC, base.check, base.wait_for, base.free_port
NEED_ENV = ("TF_CONTROLLER_BIN", "TF_HYPERVISOR_BIN", "TF_SIM_LIBDIR")
NS = "ml"
NODES = {  # name -> (labels, simulated devices)
    "node-a": ({"gpu": "a100"}, "A100-80GB,A100-80GB"),
    "node-p": ({"gpu": "a100", "mig": "on"}, "A100-80GB"),
    "node-l": ({"gpu": "l4"}, "L4,L4"),
}


def start(args, log, env=None):
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)


def port_file(path, timeout=20):
    wait_for(path, lambda: os.path.exists(path), timeout)
    return int(open(path).read().split()[0])


def selector(**match_in):
    return {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": k, "operator": "In", "values": v} for k, v in match_in.items()]}]}


def pool(name, template, sel, default_mode, rules=None):
    nmc = {"nodeSelector": sel, "defaultIsolationMode": default_mode}
    if rules:
        nmc["isolationModeRules"] = rules
    return {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool", "metadata": {"name": name},
            "spec": {"schedulingConfigTemplate": template, "nodeManagerConfig": nmc}}


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.env = base.Env(tmp)
        self.procs = []
        self.hv = {}
        self.log = open(os.path.join(tmp, "log"), "w")

    def kapply(self, obj):
        """kubectl apply with kubectl's own (strict) validation of custom resources."""
        kind = obj["kind"]
        strict = "--validate=strict" if obj["apiVersion"].startswith("tensor-fusion") else \
            "--validate=false"
        return self.env.kubectl("apply", strict, "-f", "-", stdin=json.dumps(obj)) and kind

    def start_hypervisor(self, node):
        """node-p also serves the kubelet device plugins in <tmp>/node-p/kubelet."""
        d = os.path.join(self.tmp, node)
        os.makedirs(os.path.join(d, "kubelet"), exist_ok=True)
        simenv = dict(TF_SIM_DEVICES=NODES[node][1], TF_SIM_SEED=node,
                      TF_SIM_SHM_PREFIX=os.path.join(d, "sim-"),
                      LD_LIBRARY_PATH=os.environ["TF_SIM_LIBDIR"])
        hvenv = dict(os.environ, **simenv, TF_NVML_LIBRARY=os.path.join(
            os.environ["TF_SIM_LIBDIR"], "libnvidia-ml.so.1"))
        p = start([os.environ["TF_HYPERVISOR_BIN"], "--state-dir", d, "--kubernetes",
                   "--node-name", node, "--server", self.api, "--shm-root",
                   os.path.join(d, "shm"), "--metrics-sink", "none"] +
                  (["--device-plugin", "on", "--kubelet-dir", os.path.join(d, "kubelet")]
                   if node == "node-p" else []), self.log, hvenv)
        self.procs.append(p)
        self.hv[node] = p
        return p

    def gpus_of(self, node):
        items = (self.env.get("gpus") or {"items": []})["items"]
        return sorted((g for g in items if g.get("status", {}).get("nodeSelector", {}).get(
            "kubernetes.io/hostname") == node and g["status"].get("uuid")),
            key=lambda g: g["status"].get("index", 0))


def qmilli(q):
    """A TFLOPS quantity in milli-units."""
    q = str(q or "0")
    return int(q[:-1]) if q.endswith("m") else int(round(float(q) * 1000))


def qbytes(q):
    """A VRAM quantity in bytes (binary or decimal suffixes)."""
    q = str(q or "0")
    for suf, mul in (("Ki", 1 << 10), ("Mi", 1 << 20), ("Gi", 1 << 30), ("Ti", 1 << 40),
                     ("k", 10 ** 3), ("M", 10 ** 6), ("G", 10 ** 9)):
        if q.endswith(suf):
            return int(float(q[:-len(suf)]) * mul)
    return int(q)


SIM_MIGS = r"""
import ctypes, sys
nv = ctypes.CDLL(sys.argv[1])
class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong),
                ("used", ctypes.c_ulonglong)]
assert nv.nvmlInit_v2() == 0
d, m = ctypes.c_void_p(), ctypes.c_void_p()
assert nv.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(d)) == 0
i = 0
while nv.nvmlDeviceGetMigDeviceHandleByIndex(d, i, ctypes.byref(m)) == 0:
    u, mem = ctypes.create_string_buffer(96), Mem()
    assert nv.nvmlDeviceGetUUID(m, u, 96) == 0 and nv.nvmlDeviceGetMemoryInfo(m, ctypes.byref(mem)) == 0
    print(u.value.decode(), mem.total)
    i += 1
nv.nvmlShutdown()
"""


def sim_migs(cl, node):
    """(uuid, memory) of the MIG devices on NODE's first simulated GPU, read through NVML."""
    d = os.path.join(cl.tmp, node)
    lib = os.path.join(os.environ["TF_SIM_LIBDIR"], "libnvidia-ml.so.1")
    env = dict(os.environ, TF_SIM_DEVICES=NODES[node][1], TF_SIM_SEED=node,
               TF_SIM_SHM_PREFIX=os.path.join(d, "sim-"),
               ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0")
    out = subprocess.run([sys.executable, "-c", SIM_MIGS, lib], env=env, capture_output=True,
                         text=True, timeout=20)
    return sorted((ln.split()[0], int(ln.split()[1])) for ln in out.stdout.splitlines()
                  if ln.startswith("MIG-"))


SIM_CUDA = r"""
import ctypes, sys
cu = ctypes.CDLL(sys.argv[1])
assert cu.cuInit(0) == 0
n, d, mem = ctypes.c_int(), ctypes.c_int(), ctypes.c_size_t()
assert cu.cuDeviceGetCount(ctypes.byref(n)) == 0
assert cu.cuDeviceGet(ctypes.byref(d), 0) == 0
assert cu.cuDeviceTotalMem_v2(ctypes.byref(mem), d) == 0
print(n.value, mem.value)
"""


def sim_cuda(cl, node, env):
    """(device count, device 0's memory) a CUDA program on NODE's simulated GPU sees with ENV."""
    d = os.path.join(cl.tmp, node)
    e = dict(os.environ, TF_SIM_DEVICES=NODES[node][1], TF_SIM_SEED=node,
             TF_SIM_SHM_PREFIX=os.path.join(d, "sim-"),
             ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0", **env)
    out = subprocess.run([sys.executable, "-c", SIM_CUDA,
                          os.path.join(os.environ["TF_SIM_LIBDIR"], "libcuda.so.1")], env=e,
                         capture_output=True, text=True, timeout=30)
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if len(parts) == 2 else (None, out.stderr[-500:])


def dp_stubs(tmp):
    """The device plugin API's Python stubs (grpc_tools.protoc over the vendored api.proto),
    or None without python3-grpcio / python3-grpc-tools."""
    try:
        import grpc  # noqa: F401
        from grpc_tools import protoc
    except ImportError:
        return None
    gen = os.path.join(tmp, "gen")
    os.makedirs(gen, exist_ok=True)
    proto = os.path.join(SRC, "src", "hypervisor", "deviceplugin")
    if protoc.main(["protoc", "-I" + proto, "--python_out=" + gen, "--grpc_python_out=" + gen,
                    os.path.join(proto, "api.proto")]) != 0:
        return None
    sys.path.insert(0, gen)
    import api_pb2
    import api_pb2_grpc
    return api_pb2, api_pb2_grpc


def allocate(cl, stubs, index, timeout=30):
    """Allocate on node-p's plugin for pod index INDEX as the kubelet asks it: n devices of
    tensor-fusion.ai/index_<k>. (env dict, error)."""
    import grpc
    api_pb2, api_pb2_grpc = stubs
    k, n = (index - 1) // 8, (index - 1) % 8 + 1
    sock = os.path.join(cl.tmp, "node-p", "kubelet", "tensor-fusion-index-%d.sock" % k)
    with grpc.insecure_channel("unix:" + sock) as ch:
        try:
            r = api_pb2_grpc.DevicePluginStub(ch).Allocate(api_pb2.AllocateRequest(
                container_requests=[api_pb2.ContainerAllocateRequest(
                    devices_ids=["%d-%d" % (k, j) for j in range(1, n + 1)])]),
                timeout=timeout)
        except grpc.RpcError as e:
            return None, "%s %s" % (e.code(), e.details())
    return dict(r.container_responses[0].envs), None


def main():
    missing = [e for e in NEED_ENV if not os.environ.get(e)]
    if missing or not shutil.which("kubectl"):
        print("SKIP: needs kubectl and %s" % ", ".join(NEED_ENV))
        return 77
    tmp = tempfile.mkdtemp(prefix="tf-pools-")
    cl = Cluster(tmp)
    env = cl.env
    try:
        pf = os.path.join(tmp, "api.port")
        cl.procs.append(start([sys.executable, os.path.join(SRC, "tests/controller/fakeapi.py"),
                               "--port", "0", "--port-file", pf], cl.log))
        cl.api = "http://127.0.0.1:%d" % port_file(pf)
        env.write_kubeconfig(cl.api, NS)
        for ns in ("tensor-fusion-sys", NS):
            env.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for name, mode in (("pack", "CompactFirst"), ("spread", "LowLoadFirst")):
            cl.kapply({"apiVersion": "tensor-fusion.ai/v1", "kind": "SchedulingConfigTemplate",
                       "metadata": {"name": name}, "spec": {"placement": {"mode": mode}}})
        cl.kapply(pool("train", "pack", selector(gpu=["a100"]), "soft",
                       [{"mode": "partitioned", "selector": {"matchLabels": {"mig": "on"}}}]))
        cl.kapply(pool("infer", "spread", selector(gpu=["l4"]), "hard"))
        for node, (labels, _) in NODES.items():
            env.apply({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": node, "labels": labels}})
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
                                            "operations": ["CREATE"], "resources": ["pods"]}],
                                 "namespaceSelector": {"matchExpressions": [{
                                     "key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                     "values": ["tensor-fusion-sys", "kube-system"]}]}}]})
        cfg = os.path.join(tmp, "config.yaml")
        with open(cfg, "w") as f:
            f.write("defaultPool: train\nisolationModePolicy: static\n")
        # The controller authenticates as its service account (the webhook lets only that
        # identity create pods such as remote workers); kubectl is a tenant (fake-admin).
        ctl_kubeconfig = env.write_kubeconfig(cl.api, NS, "kubeconfig-controller", "ctl-token")
        urllib.request.urlopen(urllib.request.Request(
            cl.api + "/_fake/users", method="POST", data=json.dumps({
                "ctl-token": "system:serviceaccount:tensor-fusion-sys:tensor-fusion"}).encode(),
            headers={"Content-Type": "application/json"}), timeout=10).read()
        ctl_args = [os.environ["TF_CONTROLLER_BIN"], "--kubeconfig", ctl_kubeconfig,
                    "--namespace", "tensor-fusion-sys", "--bind", "127.0.0.1",
                    "--webhook-port", str(wport), "--http-port", str(hport),
                    "--webhook-config", "tensor-fusion-webhook", "--extra-san",
                    "127.0.0.1", "--config", cfg, "--identity", "ctl",
                    "--resync-ms", "300", "--lease-seconds", "3"]
        ctl = start(ctl_args, cl.log)
        cl.procs.append(ctl)
        for node in NODES:
            cl.start_hypervisor(node)

        # 1. Every node's GPUs join the pool that selects it, with the node's mode.
        want = {"node-a": ("train", "soft"), "node-p": ("train", "partitioned"),
                "node-l": ("infer", "hard")}

        def assigned():
            for node, (p, mode) in want.items():
                gs = cl.gpus_of(node)
                if len(gs) != len(NODES[node][1].split(",")) or not all(
                        g["metadata"]["labels"].get("tensor-fusion.ai/gpupool") == p and
                        g["status"].get("isolationMode") == mode and
                        g["status"].get("isolationPolicy") == "Static" for g in gs):
                    return None
            return True
        check("each node's GPUs carry the pool that selects it and the node's mode",
              wait_for("pools assigned", assigned, 40),
              {n: [(g["metadata"]["labels"], g["status"].get("isolationMode"))
                   for g in cl.gpus_of(n)] for n in NODES})
        gn = {n: env.get("gpunode", n) or {} for n in NODES}
        check("each GPUNode carries its pool", all(
            gn[n].get("metadata", {}).get("labels", {}).get("tensor-fusion.ai/gpupool") ==
            want[n][0] for n in NODES), {n: gn[n].get("metadata", {}).get("labels")
                                          for n in NODES})
        pools = {p: wait_for("pool %s status" % p, lambda p=p: (lambda o: o if o and o.get(
            "status", {}).get("readyNodes") == (2 if p == "train" else 1) else None)(
                env.get("gpupool", p)), 30) for p in ("train", "infer")}
        check("pool statuses count their nodes", all(pools.values()),
              {p: (v or {}).get("status") for p, v in pools.items()})
        conds = {c["type"]: c for c in (pools["train"] or {}).get("status", {}).get(
            "conditions", [])}
        check("the isolation rules are applied (condition)",
              conds.get("IsolationModeRules", {}).get("status") == "True", conds)
        evs = [e for e in (env.get("events", "-n", "default") or {"items": []})["items"]
               if e["reason"] == "PoolAssigned"]
        check("PoolAssigned events name node and pool", any(
            "node-l joins pool infer (selected by its nodeSelector)" in e["message"]
            for e in evs), [e["message"] for e in evs])

        # 2. Placement by each pool's rules, through the webhook and the extender.
        sec = wait_for("certificates", lambda: env.get("secret", "tensor-fusion-tls", "-n",
                                                       "tensor-fusion-sys"), 30)
        wait_for("readyz", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d/readyz" % hport, timeout=2).status == 200, 30)
        ctx = ssl.create_default_context(cadata=base64.b64decode(sec["data"]["ca.crt"]).decode())

        def extender(verb, body):
            req = urllib.request.Request("https://127.0.0.1:%d/scheduler/%s" % (wport, verb),
                                         data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return json.loads(r.read())

        def pod(name, pool_name, iso, extra=None):
            anns = {"tensor-fusion.ai/gpupool": pool_name, "tensor-fusion.ai/isolation": iso,
                    "tensor-fusion.ai/tflops-request": "10",
                    "tensor-fusion.ai/vram-request": "2Gi"}
            anns.update(extra or {})
            env.apply({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": NS, "annotations": anns,
                                    "labels": {"tensor-fusion.ai/enabled": "true"}},
                       "spec": {"containers": [{"name": "app", "image": "pytorch/pytorch"}]}})
            return env.get("pod", name, "-n", NS)

        def filt(p):
            return extender("filter", {"Pod": p, "Nodes": None, "NodeNames": list(NODES)})

        def place(name, pool_name, iso, extra=None):
            p = pod(name, pool_name, iso, extra)
            fr = filt(p)
            if len(fr.get("NodeNames") or []) != 1:
                return fr, None
            br = extender("bind", {"PodName": name, "PodNamespace": NS,
                                   "PodUID": p["metadata"]["uid"], "Node": fr["NodeNames"][0]})
            check("%s bound" % name, br == {"Error": ""}, br)
            got = env.get("pod", name, "-n", NS)
            return fr, got["metadata"]["annotations"].get("tensor-fusion.ai/gpu-ids")

        fr, t1 = place("train-1", "train", "soft")
        check("a soft train pod fits only the soft A100 node", fr["NodeNames"] == ["node-a"] and
              "node-l" in fr["FailedNodes"] and "node-p" in fr["FailedNodes"], fr)
        fr2, t2 = place("train-2", "train", "soft")
        check("CompactFirst packs the second train pod onto the same GPU", t1 and t1 == t2,
              (t1, t2))
        fr, i1 = place("infer-1", "infer", "hard")
        check("a hard infer pod fits only the L4 node", fr["NodeNames"] == ["node-l"], fr)
        fr, i2 = place("infer-2", "infer", "hard")
        check("LowLoadFirst spreads the second infer pod to the other GPU",
              i1 and i2 and i1 != i2 and {i1, i2} == {g["status"]["uuid"]
                                                        for g in cl.gpus_of("node-l")}, (i1, i2))
        fr, _ = place("soft-on-infer", "infer", "soft")
        check("a soft pod cannot use the hard pool's node", not fr["NodeNames"] and
              "node-l" in fr["FailedNodes"], fr)

        # 3. Partitioned pods get their partition: the template the scheduler chose
        #    (tensor-fusion.ai/partition), a MIG device of it on the simulated GPU created by
        #    the hypervisor through NVML, recorded on the GPU object; availability is the
        #    templates'; the partition goes with its pod and survives a hypervisor restart.
        stubs = dp_stubs(tmp)
        # part-1 is admitted first; the kubelet's Allocate for its index starts before the
        # extender even binds it (so before its partition exists) and must wait for it.
        pod1 = pod("part-1", "train", "partitioned")
        ann1 = pod1["metadata"]["annotations"]
        idx1 = int(ann1.get("tensor-fusion.ai/index", "0"))
        k1, n1 = (idx1 - 1) // 8, (idx1 - 1) % 8 + 1
        res1 = pod1["spec"]["containers"][0]["resources"]["limits"]
        check("the webhook gave the partitioned pod a pod index as upstream encodes it",
              1 <= idx1 <= 128 and res1.get("tensor-fusion.ai/index_%x" % k1) == str(n1) and
              not any(e["name"] == "NVIDIA_VISIBLE_DEVICES"
                      for e in pod1["spec"]["containers"][0].get("env", [])),
              (idx1, res1))
        early = {}
        waiter = threading.Thread(target=lambda: early.update(
            r=allocate(cl, stubs, idx1))) if stubs else None
        if waiter:
            waiter.start()
            time.sleep(1)
        fr = filt(pod1)
        check("a partitioned pod lands on the partitioned node", fr["NodeNames"] == ["node-p"],
              fr)
        br = extender("bind", {"PodName": "part-1", "PodNamespace": NS,
                               "PodUID": pod1["metadata"]["uid"], "Node": "node-p"})
        check("part-1 bound", br == {"Error": ""}, br)
        if waiter:
            waiter.join(40)
            env1, err1 = early.get("r", (None, "no answer"))
        fr, p2 = place("part-2", "train", "partitioned", {"tensor-fusion.ai/partition": "3g.40gb"})
        tpl = {n: env.get("pod", n, "-n", NS)["metadata"]["annotations"].get(
            "tensor-fusion.ai/partition") for n in ("part-1", "part-2")}
        check("the scheduler records the template: the smallest that fits, or the one asked for",
              tpl == {"part-1": "1g.10gb", "part-2": "3g.40gb"}, tpl)
        gp = cl.gpus_of("node-p")[0]
        uid = {n: env.get("pod", n, "-n", NS)["metadata"]["uid"] for n in ("part-1", "part-2")}

        def parts():
            g = env.get("gpu", gp["metadata"]["name"]) or {}
            return g.get("status", {}).get("allocatedPartitions") or {}

        def recorded(want):
            got = parts()
            return got if {k: v.get("templateId") for k, v in got.items()} == want else None
        got = wait_for("partitions recorded", lambda: recorded(
            {uid["part-1"]: "1g.10gb", uid["part-2"]: "3g.40gb"}), 30)
        check("the hypervisor records each partition on the GPU object (upstream's shape)", got and
              all(v["podName"] in ("part-1", "part-2") and v["namespace"] == NS and
                  v["allocatedSlotEnd"] - v["allocatedSlotStart"] ==
                  (1 if v["templateId"] == "1g.10gb" else 4) for v in got.values()), got)
        migs = sim_migs(cl, "node-p")
        check("the simulated GPU holds the two MIG devices, each with its template's memory",
              sorted(m[1] for m in migs) == [10 << 30, 40 << 30], migs)
        if stubs:
            mig = {m[1]: m[0] for m in migs}
            check("Allocate for part-1's index names its MIG device (1g.10gb), for the "
                  "NVIDIA runtime and CUDA", env1 == {"NVIDIA_VISIBLE_DEVICES": mig.get(10 << 30),
                                                      "CUDA_VISIBLE_DEVICES": mig.get(10 << 30)},
                  (env1, err1, migs))
            p2 = env.get("pod", "part-2", "-n", NS)
            idx2 = int(p2["metadata"]["annotations"].get("tensor-fusion.ai/index", "0"))
            env2, err2 = allocate(cl, stubs, idx2)
            check("part-2 has its own index and Allocate names its 3g.40gb device",
                  idx2 != idx1 and env2 and env2.get("NVIDIA_VISIBLE_DEVICES") ==
                  mig.get(40 << 30), (idx1, idx2, env2, err2))
            seen = sim_cuda(cl, "node-p", env2 or {})
            check("a CUDA program with that env sees one device with the partition's 40 GiB",
                  seen == (1, 40 << 30), seen)
            free = next(i for i in range(1, 129) if i not in (idx1, idx2))
            _, err = allocate(cl, stubs, free, timeout=20)
            check("Allocate for an index no pod of the node holds is refused, saying so",
                  err and "no partitioned pod" in err, err)
        # A remote partitioned client's worker pod (made by the controller) holds its GPUs, so
        # it is the one that gets a pod index (and no NVIDIA_VISIBLE_DEVICES from gpu-ids).
        pod("remote-p", "train", "partitioned", {"tensor-fusion.ai/is-local-gpu": "false"})

        def worker_of_remote():
            ws = [w for w in (env.get("pods", "-n", NS, "-l",
                                      "tensor-fusion.ai/component=worker") or {}).get("items", [])
                  if w["metadata"]["name"].startswith("remote-p")]
            return ws[0] if ws else None
        wk = wait_for("remote-p's worker pod", worker_of_remote, 30)
        live = {int(env.get("pod", n, "-n", NS)["metadata"]["annotations"]["tensor-fusion.ai/index"])
                for n in ("part-1", "part-2")}
        widx = int(((wk or {}).get("metadata", {}).get("annotations") or {}).get(
            "tensor-fusion.ai/index", "0"))
        wc = (wk or {}).get("spec", {}).get("containers", [{}])[0]
        check("a remote partitioned workload's worker pod gets its own pod index",
              1 <= widx <= 128 and widx not in live and
              wc.get("resources", {}).get("limits", {}).get(
                  "tensor-fusion.ai/index_%x" % ((widx - 1) // 8)) == str((widx - 1) % 8 + 1) and
              not any(e["name"] == "NVIDIA_VISIBLE_DEVICES" for e in wc.get("env", [])),
              (widx, live, wc))
        env.kubectl("delete", "pod", "remote-p", "-n", NS)

        def avail():
            g = env.get("gpu", gp["metadata"]["name"]) or {}
            return g.get("status", {}).get("available", {})
        want_avail = (312000 - 312000 * 1 // 7 - 312000 * 3 // 7, (80 - 10 - 40) << 30)
        a = wait_for("availability of the templates", lambda: avail() if (
            qmilli(avail().get("tflops")), qbytes(avail().get("vram"))) == want_avail else None, 20)
        check("GPU availability is capacity less the templates, not the requests", a,
              (avail(), want_avail))
        env.kubectl("delete", "pod", "part-1", "-n", NS)
        check("a deleted pod's partition is destroyed and its record removed", wait_for(
            "part-1 partition gone", lambda: recorded({uid["part-2"]: "3g.40gb"}), 30) and
            [m[1] for m in sim_migs(cl, "node-p")] == [40 << 30], (parts(), sim_migs(cl, "node-p")))
        cl.hv["node-p"].send_signal(signal.SIGKILL)
        cl.hv["node-p"].wait()
        cl.start_hypervisor("node-p")
        time.sleep(3)
        check("a restarted hypervisor keeps the live pod's partition (no second one)",
              recorded({uid["part-2"]: "3g.40gb"}) and
              [m[1] for m in sim_migs(cl, "node-p")] == [40 << 30],
              (parts(), sim_migs(cl, "node-p")))
        # A restarted controller restores part-2 with its template (the signed annotation),
        # not the smallest one its request fits: one more 3g.40gb fits beside it, then no 1g.
        ctl.send_signal(signal.SIGTERM)
        ctl.wait(timeout=20)
        ctl = start(ctl_args, cl.log)
        cl.procs.append(ctl)
        wait_for("readyz after restart", lambda: urllib.request.urlopen(
            "http://127.0.0.1:%d/readyz" % hport, timeout=2).status == 200, 30)
        p3 = pod("part-3", "train", "partitioned", {"tensor-fusion.ai/partition": "3g.40gb"})
        fr = wait_for("extender back", lambda: (lambda r: r if r.get("NodeNames") else None)(
            filt(p3)), 30)
        check("after a controller restart a second 3g.40gb fits the partitioned GPU",
              fr and fr["NodeNames"] == ["node-p"], fr)
        br = fr and extender("bind", {"PodName": "part-3", "PodNamespace": NS,
                                      "PodUID": p3["metadata"]["uid"], "Node": "node-p"})
        check("part-3 bound", br == {"Error": ""}, br)
        fr = filt(pod("part-4", "train", "partitioned", {"tensor-fusion.ai/partition": "1g.10gb"}))
        check("and then no 1g.10gb: the restored partition is the 3g.40gb it holds",
              not fr["NodeNames"] and "node-p" in fr["FailedNodes"], (fr, avail(), parts()))

        # 4. Overlapping selectors: a conflict, reported; the node stays in its pool.
        cl.kapply(pool("overlap", "spread", selector(gpu=["l4", "t4"]), "hard"))

        def conflict():
            g = env.get("gpunode", "node-l") or {}
            c = {x["type"]: x for x in g.get("status", {}).get("conditions", [])}
            return c.get("PoolConflict") if c.get("PoolConflict", {}).get(
                "status") == "True" else None
        c = wait_for("PoolConflict condition", conflict, 20)
        check("the GPUNode reports the conflict, naming both pools", c and
              "infer, overlap" in c["message"] and "assigned to infer" in c["message"], c)
        ev = wait_for("PoolConflict event", lambda: [
            e for e in (env.get("events", "-n", "default") or {"items": []})["items"]
            if e["reason"] == "PoolConflict" and e["type"] == "Warning"], 10)
        check("a Warning Event says what to do", ev and "disjoint" in ev[0]["message"], ev)
        check("the node stays in its pool", all(
            g["metadata"]["labels"].get("tensor-fusion.ai/gpupool") == "infer"
            for g in cl.gpus_of("node-l")))
        env.kubectl("delete", "gpupool", "overlap")
        check("the conflict clears when the selectors no longer overlap",
              wait_for("conflict cleared", lambda: conflict() is None, 20))

        # 5. A node whose hypervisor stops renewing its heartbeat takes no new pods.
        cl.hv["node-l"].send_signal(signal.SIGKILL)
        cl.hv["node-l"].wait()
        env.kubectl("patch", "lease", "tf-hypervisor-node-l", "-n", "tensor-fusion-sys",
                    "--type=merge", "-p", json.dumps({"spec": {
                        "renewTime": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z",
                                                   time.gmtime(time.time() - 120))}}))
        lost = wait_for("GPUs of node-l Unknown", lambda: all(
            g["status"]["phase"] == "Unknown" for g in cl.gpus_of("node-l")) or None, 20)
        check("the node's GPUs go Unknown with the reason", lost and all(
            "heartbeat" in g["status"]["message"] for g in cl.gpus_of("node-l")),
            [g["status"] for g in cl.gpus_of("node-l")])
        check("its GPUNode is Unknown",
              (env.get("gpunode", "node-l") or {}).get("status", {}).get("phase") == "Unknown")
        fr = wait_for("filter refuses node-l", lambda: (lambda r: r if not r["NodeNames"]
                                                        else None)(
            filt(pod("infer-3", "infer", "hard"))), 20)
        check("no new pod lands on the silent node", fr and "node-l" in fr["FailedNodes"], fr)
        check("pods already there keep their GPUs",
              env.get("pod", "infer-1", "-n", NS)["metadata"]["annotations"].get(
                  "tensor-fusion.ai/gpu-ids") == i1)
        cl.start_hypervisor("node-l")
        back = wait_for("node-l back", lambda: all(
            g["status"]["phase"] == "Running" for g in cl.gpus_of("node-l")) or None, 40)
        check("the heartbeat returns: Running again", back)
        fr = wait_for("filter admits node-l", lambda: (lambda r: r if r["NodeNames"] else None)(
            filt(env.get("pod", "infer-3", "-n", NS))), 20)
        check("new pods land there again", fr and fr["NodeNames"] == ["node-l"], fr)

        sys.path.insert(0, os.path.join(SRC, "tests/controller"))
        import fakeapi
        cl.log.flush()
        probs = fakeapi.write_problems(cl.api, open(os.path.join(tmp, "log")).read())
        check("every write was accepted whole", not probs, "\n".join(probs[:10]))
    finally:
        for p in reversed(cl.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in cl.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        cl.log.close()
    if base.failed:
        print(open(os.path.join(tmp, "log")).read()[-8000:])
    print("pools cluster: %d passed, %d failed" % (base.passed, base.failed))
    if not base.failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if base.failed else 0


if __name__ == "__main__":
    sys.exit(main())
