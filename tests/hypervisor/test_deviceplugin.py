#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The hypervisor's kubelet device plugin against a fake kubelet (Python grpcio, stubs made by
grpc_tools.protoc from the vendored api.proto at run time): tf-hypervisor --device-plugin on
with the fake NVML registers tensor-fusion.ai/vgpu on <tmp>/kubelet.sock (the fake kubelet,
like the real one, dials the plugin back and asks for its options before answering Register);
ListAndWatch streams slots x GPUs devices with IDs "<uuid>::<k>", resent when a GPU disappears
(Unhealthy), comes back or is added; Allocate, GetPreferredAllocation, PreStartContainer and
their refusals (unknown ID, unhealthy slot, malformed protobuf, unknown method); the kubelet
restarting (its socket recreated, with and without the plugin sockets wiped, as kubelet does)
brings a new Register and a working server; a refused Register is retried; SIGTERM exits cleanly and removes the socket.
The pod-index plugins (tensor-fusion.ai/index_0..f, upstream's names) register beside it, each
with 36 devices "<k>-<j>" and no preferred allocation; their Allocate decodes the pod index from
the resource and the device count and refuses what no pod can hold (here, without the node
agent, every index: the cluster test cluster_pools covers the partitioned pod's answer).
Exit 77 (skip) without python3-grpcio / python3-grpc-tools.
"""
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures

try:
    import grpc
    from grpc_tools import protoc
except ImportError:
    print("SKIP: python3-grpcio / python3-grpc-tools not installed")
    sys.exit(77)

SRC = os.environ.get("TF_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                  "..", ".."))
HV = os.environ["TF_HYPERVISOR_BIN"]
FAKE_NVML = os.environ["TF_FAKE_NVML"]
PROTO_DIR = os.path.join(SRC, "src", "hypervisor", "deviceplugin")
UA = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
UB = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
UC = "GPU-cccccccc-1111-2222-3333-444444444444"
SLOTS = 4
ENDPOINT = "tensor-fusion-vgpu.sock"
WAIT = 20  # seconds, generous: the machine may be loaded

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail), flush=True)
    return cond


tmp = tempfile.mkdtemp(prefix="tf-dp-")
gen = os.path.join(tmp, "gen")
os.makedirs(gen)
if protoc.main(["protoc", "-I" + PROTO_DIR, "--python_out=" + gen, "--grpc_python_out=" + gen,
                os.path.join(PROTO_DIR, "api.proto")]) != 0:
    print("FAIL: grpc_tools.protoc could not compile api.proto")
    sys.exit(1)
sys.path.insert(0, gen)
import api_pb2  # noqa: E402
import api_pb2_grpc  # noqa: E402

kdir = os.path.join(tmp, "kubelet")
os.makedirs(kdir)
ksock = os.path.join(kdir, "kubelet.sock")
psock = os.path.join(kdir, ENDPOINT)
devfile = os.path.join(tmp, "devices")


# GPU B sits on PCI bus 0x3b, which the fake sysfs puts on NUMA node 1; A has no PCI info.
BUS = {}
sysfs = os.path.join(tmp, "sys")
os.makedirs(os.path.join(sysfs, "bus/pci/devices/0000:3b:00.0"))
with open(os.path.join(sysfs, "bus/pci/devices/0000:3b:00.0/numa_node"), "w") as f:
    f.write("1\n")


def set_devices(*uuids):
    with open(devfile + ".tmp", "w") as f:
        for u in uuids:
            f.write("NVIDIA A100-SXM4-80GB|%s|85899345920|0|0%s\n" %
                    (u, "|" + BUS[u] if u in BUS else ""))
    os.rename(devfile + ".tmp", devfile)


def ids(*uuids):
    return ["%s::%d" % (u, k) for u in uuids for k in range(SLOTS)]


class FakeKubelet(api_pb2_grpc.RegistrationServicer):
    """Serves v1beta1.Registration; on Register dials the plugin back and calls
    GetDevicePluginOptions before answering, as kubelet's device manager does."""

    def __init__(self, reject=0):
        self.reject = reject  # refuse this many Register calls first, per resource
        self.attempts = {}    # resource -> Register calls
        self.registrations = queue.Queue()  # tensor-fusion.ai/vgpu
        self.index_regs = {}  # pod-index resources -> (request, options)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        api_pb2_grpc.add_RegistrationServicer_to_server(self, self.server)
        self.server.add_insecure_port("unix:" + ksock)
        self.server.start()

    def Register(self, request, context):
        n = self.attempts[request.resource_name] = self.attempts.get(request.resource_name, 0) + 1
        if n <= self.reject:
            context.abort(grpc.StatusCode.UNAVAILABLE, "not ready yet")
        if request.version != "v1beta1":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "version %s" % request.version)
        with grpc.insecure_channel("unix:" + os.path.join(kdir, request.endpoint)) as ch:
            try:
                opts = api_pb2_grpc.DevicePluginStub(ch).GetDevicePluginOptions(
                    api_pb2.Empty(), timeout=10)
            except grpc.RpcError as e:
                self.registrations.put(("dial-back failed", e))
                context.abort(grpc.StatusCode.UNAVAILABLE, "cannot reach the plugin")
        if request.resource_name == "tensor-fusion.ai/vgpu":
            self.registrations.put((request, opts))
        else:
            self.index_regs[request.resource_name] = (request, opts)
        return api_pb2.Empty()

    def stop(self):
        self.server.stop(0).wait(10)
        if os.path.exists(ksock):
            os.unlink(ksock)


class Watch:
    """A ListAndWatch stream read on its own thread; lists arrive in self.lists."""

    def __init__(self, sock=None):
        self.channel = grpc.insecure_channel("unix:" + (sock or psock))
        self.lists = queue.Queue()
        self.topology = {}  # device ID -> NUMA node IDs, as of the latest list
        self.ended = threading.Event()
        self.stream = api_pb2_grpc.DevicePluginStub(self.channel).ListAndWatch(api_pb2.Empty())
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        try:
            for resp in self.stream:
                self.topology = {d.ID: [n.ID for n in d.topology.nodes] for d in resp.devices}
                self.lists.put({d.ID: d.health for d in resp.devices})
        except grpc.RpcError:
            pass
        self.ended.set()

    def wait_for(self, pred, what):
        deadline = time.monotonic() + WAIT
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.lists.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if pred(last):
                return last
        check(what, False, "last list: %s" % last)
        return last

    def close(self):
        self.stream.cancel()
        self.channel.close()


def stub(sock=None):
    ch = grpc.insecure_channel("unix:" + (sock or psock))
    return ch, api_pb2_grpc.DevicePluginStub(ch)


def rpc_code(fn):
    try:
        fn()
    except grpc.RpcError as e:
        return e.code(), e.details()
    return grpc.StatusCode.OK, ""


def wait_registration(k, what):
    try:
        reg, opts = k.registrations.get(timeout=WAIT)
    except queue.Empty:
        check(what, False, "no Register within %d s" % WAIT)
        return None, None
    check(what + ": dial-back", reg != "dial-back failed", str(opts))
    return reg, opts


def all_health(lst, uuids, health):
    return all(lst.get(i) == health for i in ids(*uuids))


hv = None
log = open(os.path.join(tmp, "hypervisor.log"), "w")
try:
    BUS[UB] = "3b"
    set_devices(UA, UB)
    kubelet = FakeKubelet()
    env = dict(os.environ, TF_FAKE_NVML_FILE=devfile, TF_NVML_LIBRARY=FAKE_NVML,
               TF_SYSFS_ROOT=sysfs)
    hv = subprocess.Popen([HV, "--state-dir", os.path.join(tmp, "state"), "--metrics-sink",
                           "none", "--discovery-interval", "200", "--device-plugin", "on",
                           "--kubelet-dir", kdir, "--vgpu-slots", str(SLOTS)],
                          env=env, stdout=log, stderr=subprocess.STDOUT)

    # Registration, with the kubelet's dial-back answered while Register is pending.
    reg, opts = wait_registration(kubelet, "first registration")
    if reg is None or reg == "dial-back failed":
        raise SystemExit(1)
    check("register version", reg.version == "v1beta1", reg.version)
    check("register endpoint", reg.endpoint == ENDPOINT, reg.endpoint)
    check("register resource", reg.resource_name == "tensor-fusion.ai/vgpu", reg.resource_name)
    check("register options", reg.options.get_preferred_allocation_available and
          not reg.options.pre_start_required, str(reg.options))
    check("GetDevicePluginOptions", opts.get_preferred_allocation_available and
          not opts.pre_start_required, str(opts))

    # The pod-index plugins: index_0..f on tensor-fusion-index-<k>.sock, 36 devices each.
    deadline = time.monotonic() + WAIT
    while len(kubelet.index_regs) < 16 and time.monotonic() < deadline:
        time.sleep(0.05)
    want = {"tensor-fusion.ai/index_%x" % k: "tensor-fusion-index-%d.sock" % k
            for k in range(16)}
    check("16 pod-index plugins registered (upstream's resource names and endpoints)",
          {r: q.endpoint for r, (q, _) in kubelet.index_regs.items()} == want,
          str(sorted(kubelet.index_regs)))
    check("pod-index plugins offer no preferred allocation",
          all(not q.options.get_preferred_allocation_available and
              not o.get_preferred_allocation_available for q, o in kubelet.index_regs.values()))
    isock = os.path.join(kdir, "tensor-fusion-index-10.sock")
    iw = Watch(isock)
    ilist = iw.wait_for(lambda l: len(l) == 36, "index_a lists 36 devices")
    check("index devices are <k>-<j>, healthy", sorted(ilist or {}) == sorted(
        "10-%d" % j for j in range(1, 37)) and set((ilist or {}).values()) == {"Healthy"},
        str(sorted(ilist or {})))
    iw.close()
    ich, idp = stub(isock)

    def ialloc(*devs):
        return rpc_code(lambda: idp.Allocate(api_pb2.AllocateRequest(container_requests=[
            api_pb2.ContainerAllocateRequest(devices_ids=list(devs))]), timeout=20))
    code, details = ialloc("10-1", "10-2", "10-3")
    check("index Allocate without the node agent: FAILED_PRECONDITION, naming it",
          code == grpc.StatusCode.FAILED_PRECONDITION and "--kubernetes" in details,
          "%s %s" % (code, details))
    code, details = ialloc(*["10-%d" % j for j in range(1, 10)])
    check("index Allocate of 9 devices (an index asks for 1..8): INVALID_ARGUMENT",
          code == grpc.StatusCode.INVALID_ARGUMENT and "1..8" in details, "%s %s" % (code, details))
    code, details = ialloc("10-1", "3-1")
    check("index Allocate of another bucket's device: NOT_FOUND",
          code == grpc.StatusCode.NOT_FOUND and "3-1" in details, "%s %s" % (code, details))
    code, details = ialloc("10-1", "10-1")
    check("index Allocate of a repeated device: INVALID_ARGUMENT",
          code == grpc.StatusCode.INVALID_ARGUMENT, "%s %s" % (code, details))
    code, _ = rpc_code(lambda: idp.GetPreferredAllocation(api_pb2.PreferredAllocationRequest(
        container_requests=[api_pb2.ContainerPreferredAllocationRequest(
            available_deviceIDs=["10-1"], allocation_size=1)]), timeout=10))
    check("index GetPreferredAllocation: UNIMPLEMENTED", code == grpc.StatusCode.UNIMPLEMENTED,
          str(code))
    ich.close()

    # ListAndWatch: SLOTS devices per GPU, healthy.
    w = Watch()
    first = w.wait_for(lambda l: len(l) == 2 * SLOTS, "first list has 2 x %d devices" % SLOTS)
    check("device IDs are <uuid>::<k>", sorted(first or {}) == sorted(ids(UA, UB)),
          str(sorted(first or {})))
    check("all healthy", first and all_health(first, [UA, UB], "Healthy"), str(first))
    topo = w.topology
    check("GPU B's slots carry NUMA node 1 (from sysfs), A's no topology",
          all(topo.get(i) == [1] for i in ids(UB)) and all(topo.get(i) == [] for i in ids(UA)),
          str(topo))

    ch, dp = stub()
    # Allocate: the slot IDs in TF_VGPU_IDS, per container; no mounts or device nodes.
    a0, a1, b1 = "%s::0" % UA, "%s::1" % UA, "%s::1" % UB
    req = api_pb2.AllocateRequest(container_requests=[
        api_pb2.ContainerAllocateRequest(devices_ids=[a0, b1]),
        api_pb2.ContainerAllocateRequest(devices_ids=[a1])])
    resp = dp.Allocate(req, timeout=10)
    check("allocate: one response per container", len(resp.container_responses) == 2)
    c0, c1 = resp.container_responses
    check("allocate: env", dict(c0.envs) == {"TF_VGPU_IDS": a0 + "," + b1}, str(c0.envs))
    check("allocate: second container env", dict(c1.envs) == {"TF_VGPU_IDS": a1}, str(c1.envs))
    check("allocate: no mounts, devices or CDI", not c0.mounts and not c0.devices and
          not c0.cdi_devices and not c0.annotations, str(c0))
    code, details = rpc_code(lambda: dp.Allocate(api_pb2.AllocateRequest(container_requests=[
        api_pb2.ContainerAllocateRequest(devices_ids=[a0, UA + "::99"])]), timeout=10))
    check("allocate unknown ID: NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, str(code))
    check("allocate unknown ID: names it", UA + "::99" in details, details)
    raw = ch.unary_unary("/v1beta1.DevicePlugin/Allocate", request_serializer=lambda b: b,
                         response_deserializer=lambda b: b)
    code, details = rpc_code(lambda: raw(b"\x0a\x05\x0a", timeout=10))
    check("malformed AllocateRequest: INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT,
          "%s %s" % (code, details))
    nope = ch.unary_unary("/v1beta1.DevicePlugin/Nope", request_serializer=lambda b: b,
                          response_deserializer=lambda b: b)
    code, _ = rpc_code(lambda: nope(b"", timeout=10))
    check("unknown method: UNIMPLEMENTED", code == grpc.StatusCode.UNIMPLEMENTED, str(code))

    # GetPreferredAllocation spreads over GPUs, must-include first.
    pref = dp.GetPreferredAllocation(api_pb2.PreferredAllocationRequest(container_requests=[
        api_pb2.ContainerPreferredAllocationRequest(available_deviceIDs=ids(UA, UB),
                                                    allocation_size=2),
        api_pb2.ContainerPreferredAllocationRequest(available_deviceIDs=ids(UA, UB),
                                                    must_include_deviceIDs=[a1],
                                                    allocation_size=3)]), timeout=10)
    got = [list(r.deviceIDs) for r in pref.container_responses]
    check("preferred: one slot per GPU", got[:1] == [[UA + "::0", UB + "::0"]], str(got))
    check("preferred: must-include first, then spread", got[1:] == [[a1, UB + "::0", a0]],
          str(got))
    dp.PreStartContainer(api_pb2.PreStartContainerRequest(devices_ids=[a0]), timeout=10)
    check("PreStartContainer", True)

    # Health: a GPU that disappears turns its slots Unhealthy; back → Healthy; a new GPU adds.
    set_devices(UA)
    lst = w.wait_for(lambda l: all_health(l, [UB], "Unhealthy"), "GPU B gone → Unhealthy")
    check("GPU A still healthy", lst and all_health(lst, [UA], "Healthy"), str(lst))
    code, details = rpc_code(lambda: dp.Allocate(api_pb2.AllocateRequest(container_requests=[
        api_pb2.ContainerAllocateRequest(devices_ids=[b1])]), timeout=10))
    check("allocate unhealthy: FAILED_PRECONDITION", code == grpc.StatusCode.FAILED_PRECONDITION,
          "%s %s" % (code, details))
    set_devices(UA, UB, UC)
    lst = w.wait_for(lambda l: len(l) == 3 * SLOTS and all_health(l, [UA, UB, UC], "Healthy"),
                     "GPU B back and GPU C added")
    ch.close()

    # Kubelet restart, the way kubelet does it: plugin sockets wiped, kubelet.sock recreated.
    kubelet.stop()
    os.unlink(psock)
    check("old stream ends when the plugin re-serves", w.ended.wait(WAIT))
    w.close()
    deadline = time.monotonic() + WAIT
    while not os.path.exists(psock) and time.monotonic() < deadline:
        time.sleep(0.05)
    check("plugin socket recreated", os.path.exists(psock))
    kubelet = FakeKubelet()
    reg, _ = wait_registration(kubelet, "re-registration after kubelet restart")
    check("re-registration resource", reg is not None and reg != "dial-back failed" and
          reg.resource_name == "tensor-fusion.ai/vgpu")
    w = Watch()
    w.wait_for(lambda l: len(l) == 3 * SLOTS, "ListAndWatch after restart")
    w.close()

    # A kubelet.sock recreated without the plugin socket wiped is a restart too; a refused
    # Register is retried.
    kubelet.stop()
    kubelet = FakeKubelet(reject=1)
    reg, _ = wait_registration(kubelet, "re-registration on a recreated kubelet.sock")
    check("refused Register retried", kubelet.attempts.get("tensor-fusion.ai/vgpu") == 2,
          str(kubelet.attempts))

    # Clean stop: exit 0 (sanitizers included), socket removed.
    hv.send_signal(signal.SIGTERM)
    try:
        rc = hv.wait(WAIT)
    except subprocess.TimeoutExpired:
        rc = None
    check("SIGTERM: exit 0", rc == 0, str(rc))
    check("SIGTERM: plugin socket removed", not os.path.exists(psock))
    kubelet.stop()
finally:
    if hv and hv.poll() is None:
        hv.kill()
        hv.wait()
    log.close()
    if failed:
        with open(os.path.join(tmp, "hypervisor.log")) as f:
            print("---- hypervisor log ----\n" + f.read()[-6000:])
    shutil.rmtree(tmp, ignore_errors=True)

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
