#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tf-controller's efficiency reconcilers end to end (seed 002 steps 2, 4, 5), against the
in-memory API server (fakeapi.py) and a fake GreptimeDB (fakegreptime.py):

  * autoscaling: a workload whose pod carries tensor-fusion.ai/autoscale gets
    .status.recommendation from its tf_worker_usage history, and the recommendation is applied
    to the pod's resource annotations; upstream's whole autoScalingConfig, applied with
    kubectl's strict validation, is stored unpruned and acted on (a cron rule's compute
    percentage reaches the pod), and what cannot apply is refused by name (AutoscaleFailed);
  * node compaction: after a manual-compaction annotation, the empty node of an AutoSelect pool
    is labelled tensor-fusion.ai/should-delete=true; a do-not-disrupt node and a node whose
    release would break minResources are not; a Karpenter pool's empty node loses its
    NodeClaim; a stale annotation is refused with a Warning Event;
  * defragmentation: when the pool's cron schedule fires, the pod of an under-used node is
    evicted (its PodDisruptionBudget allows it), a node whose pod has no budget is skipped
    with DefragSkipMissingPDB, and the run is reported with DefragStarted / DefragPodEvicted /
    DefragFinished.

The controller's planner clock is shifted (--clock-offset-ms) to two seconds before the next
03:00 UTC that is at least three hours away: the schedule "0 3 * * *" fires shortly after
start-up, and every object created by the test is hours old for the planners (older than
the 5-minute node age and the 2-hour maxDuration rules). Exit 77 (skip) without kubectl or
the binary.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_e2e as base  # noqa: E402 - Env, wait_for, check, free_port

SRC, BIN, check, wait_for = base.SRC, base.BIN, base.check, base.wait_for
NS = "ml"
GIB = 1 << 30


def fake_start_ms():
    """Two seconds before the first 03:00 UTC at least three hours from now."""
    now = datetime.datetime.now(datetime.timezone.utc)
    t = (now + datetime.timedelta(hours=3)).replace(hour=3, minute=0, second=0, microsecond=0)
    if t < now + datetime.timedelta(hours=3):
        t += datetime.timedelta(days=1)
    return int(t.timestamp() * 1000) - 2000


def http_json(method, url, body=None, ctype="application/json"):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                 method=method, headers={"Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def gpus_for(env, node, pool, n):
    base.heartbeat(env, node, duration_s=3600)  # its hypervisor is up: the GPUNode is Running
    for i in range(n):
        name = "%s-gpu-%d" % (node, i)
        env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPU",
                   "metadata": {"name": name, "labels": {"tensor-fusion.ai/gpupool": pool}}})
        env.kubectl("patch", "gpu", name, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"uuid": "GPU-%s-%d" % (node, i),
                                           "gpuModel": "A100-80GB", "phase": "Running",
                                           "index": i,
                                           "capacity": {"tflops": "312", "vram": "80Gi"},
                                           "available": {"tflops": "312", "vram": "80Gi"},
                                           "message": "",
                                           "nodeSelector": {"kubernetes.io/hostname": node}}}))


def node(env, name, labels=None):
    env.apply({"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": name, "labels": labels or {}}})


def worker_pod(env, name, node_name, pool, gpu, labels=None, extra=None):
    ann = {"tensor-fusion.ai/gpupool": pool, "tensor-fusion.ai/workload": name,
           "tensor-fusion.ai/tflops-request": "50", "tensor-fusion.ai/tflops-limit": "100",
           "tensor-fusion.ai/vram-request": "10Gi", "tensor-fusion.ai/vram-limit": "10Gi",
           "tensor-fusion.ai/gpu-ids": "GPU-%s-%d" % (node_name, gpu)}
    ann.update(extra or {})
    ann = {k: v for k, v in ann.items() if v is not None}
    lab = {"tensor-fusion.ai/enabled": "true", "tensor-fusion.ai/component": "client"}
    lab.update(labels or {})
    env.apply({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": NS, "labels": lab, "annotations": ann},
               "spec": {"nodeName": node_name, "schedulerName": "tensor-fusion-scheduler",
                        "containers": [{"name": "app", "image": "x"}]}})
    env.kubectl("patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"phase": "Running"}}))


def events(env, pool):
    """POOL's events in the order they were recorded (names are generated, so sort by
    resourceVersion)."""
    evs = (env.get("events", "-n", "default") or {"items": []})["items"]
    evs.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e for e in evs if e["involvedObject"].get("name") == pool]


def reasons(env, pool):
    return [e["reason"] for e in events(env, pool)]


def setup(env, api, gport, t0):
    for ns in ("tensor-fusion-sys", NS):
        env.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # Pool A: compaction (AutoSelect), minResources = 3 GPUs' TFLOPS.
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool",
               "metadata": {"name": "pool-a"},
               "spec": {"capacityConfig": {"minResources": {"tflops": "936"}},
                        "nodeManagerConfig": {"provisioningMode": "AutoSelect",
                                              "nodeCompaction": {"period": "24h"}}}})
    for name, n, labels in (("a-busy", 1, None),
                            ("a-dnd", 1, {"tensor-fusion.ai/do-not-disrupt": "true"}),
                            ("a-empty", 2, None), ("a-min", 1, None)):
        node(env, name, labels)
        gpus_for(env, name, "pool-a", n)
    # The autoscaled workload runs on a-busy.
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "TensorFusionWorkload",
               "metadata": {"name": "infer", "namespace": NS},
               "spec": {"poolName": "pool-a", "isLocalGPU": True,
                        "resources": {"requests": {"tflops": "100", "vram": "40Gi"},
                                      "limits": {"tflops": "200", "vram": "40Gi"}}}})
    worker_pod(env, "infer-0", "a-busy", "pool-a", 0,
               extra={"tensor-fusion.ai/workload": "infer",
                      "tensor-fusion.ai/tflops-request": "100",
                      "tensor-fusion.ai/tflops-limit": "200",
                      "tensor-fusion.ai/vram-request": "40Gi",
                      "tensor-fusion.ai/vram-limit": "40Gi",
                      "tensor-fusion.ai/autoscale": "true",
                      "tensor-fusion.ai/autoscale-target": "all"})
    rows = [{"greptime_timestamp": t0 - 7200000 + i * 60000, "node": "a-busy", "pool": "pool-a",
             "uuid": "GPU-a-busy-0", "worker": "infer-0", "namespace": NS, "workload": "infer",
             "compute_tflops": 20.0 + (i % 5) * 0.5, "memory_bytes": 10 * GIB}
            for i in range(118)]
    http_json("POST", "http://127.0.0.1:%d/_fake/insert" % gport,
              {"table": "tf_worker_usage", "rows": rows})
    upstream_autoscaling(env)
    # Pool K: compaction of a Karpenter pool deletes the node's NodeClaim.
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool",
               "metadata": {"name": "pool-k"},
               "spec": {"nodeManagerConfig": {"provisioningMode": "Karpenter",
                                              "nodeCompaction": {"period": "24h"}}}})
    node(env, "k-empty")
    gpus_for(env, "k-empty", "pool-k", 1)
    env.apply({"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
               "metadata": {"name": "claim-k"}, "spec": {}})
    env.kubectl("patch", "nodeclaim", "claim-k", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"nodeName": "k-empty"}}))
    # Pool B: defragmentation at 03:00 UTC.
    env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUPool",
               "metadata": {"name": "pool-b"},
               "spec": {"nodeManagerConfig": {"nodeCompaction": {
                   "period": "24h",
                   "defrag": {"enabled": True, "schedule": "0 3 * * *", "timezone": "UTC",
                              "maxDuration": "2h", "utilizationThresholdPercent": 40}}}}})
    for name in ("b1-nopdb", "b2-low", "b3-full"):
        node(env, name)
        gpus_for(env, name, "pool-b", 4)
    worker_pod(env, "solo-0", "b1-nopdb", "pool-b", 0, labels={"app": "solo"})
    worker_pod(env, "move-0", "b2-low", "pool-b", 0, labels={"app": "movable"})
    for i in range(3):
        worker_pod(env, "full-%d" % i, "b3-full", "pool-b", i, labels={"app": "movable"})
    env.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "movable", "namespace": NS},
               "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "movable"}}}})


# Upstream's whole autoScalingConfig (api/v1 AutoScalingConfig), every field spelled as upstream
# spells it. The controller's clock stands just before 03:00 UTC: the 02:00-04:00 rule is on.
UPSTREAM_AUTOSCALING = {
    "autoSetResources": {
        "enable": False, "targetResource": "all", "targetComputePercentile": "0.9",
        "lowerBoundComputePercentile": "0.5", "upperBoundComputePercentile": "0.98",
        "targetVRAMPercentile": "0.9", "lowerBoundVRAMPercentile": "0.5",
        "upperBoundVRAMPercentile": "0.99", "marginFraction": "0.15", "updateThreshold": "0.1",
        "historyDataPeriod": "2h", "minVRAMResourcesRatio": "0.2", "maxVRAMResourcesRatio": "5",
        "minComputeResourcesRatio": "0.1", "maxComputeResourcesRatio": "10",
        "initialDelayPeriod": "0s", "interval": "1s"},
    "cronScalingRules": [{
        "enable": True, "name": "nightly", "start": "0 2 * * *", "end": "0 4 * * *",
        "desiredResources": {"requests": {"compute": "40", "vram": "6Gi"},
                             "limits": {"compute": "60", "vram": "6Gi"}}}],
    "externalScaler": {"enable": False, "url": "http://scaler.example:8080/scale",
                       "apiKeySecretRef": {"name": "scaler-key", "namespace": NS},
                       "initialDelayPeriod": "10m", "interval": "1m"},
}


def upstream_autoscaling(env):
    """Workloads carrying upstream's autoScalingConfig, applied with kubectl's strict validation
    (nothing unknown to the CRD): one whose compute is a percentage (the cron rule's compute
    applies), one in TFLOPS given the same rule (refused by name), one enabling the external
    scaler (refused by name)."""
    def wl(name, res, asc):
        env.kubectl("apply", "--validate=strict", "-f", "-", stdin=json.dumps({
            "apiVersion": "tensor-fusion.ai/v1", "kind": "TensorFusionWorkload",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"poolName": "pool-a", "isLocalGPU": True, "resources": res,
                     "autoScalingConfig": asc}}))
    wl("nightly", {"requests": {"compute": "20", "vram": "4Gi"},
                   "limits": {"compute": "30", "vram": "4Gi"}}, UPSTREAM_AUTOSCALING)
    worker_pod(env, "nightly-0", "a-busy", "pool-a", 0, extra={
        "tensor-fusion.ai/workload": "nightly", "tensor-fusion.ai/tflops-request": None,
        "tensor-fusion.ai/tflops-limit": None, "tensor-fusion.ai/compute-percent-request": "20",
        "tensor-fusion.ai/compute-percent-limit": "30", "tensor-fusion.ai/vram-request": "4Gi",
        "tensor-fusion.ai/vram-limit": "4Gi"})
    wl("mixed", {"requests": {"tflops": "10", "vram": "4Gi"}},
       {"cronScalingRules": UPSTREAM_AUTOSCALING["cronScalingRules"]})
    wl("external", {"requests": {"tflops": "10", "vram": "4Gi"}},
       {"externalScaler": dict(UPSTREAM_AUTOSCALING["externalScaler"], enable=True)})


def check_upstream_autoscaling(env):
    got = env.get("tensorfusionworkload", "nightly", "-n", NS)
    check("upstream's autoScalingConfig is stored whole (nothing pruned)",
          got and got["spec"]["autoScalingConfig"] == UPSTREAM_AUTOSCALING,
          got and got["spec"]["autoScalingConfig"])
    wl = wait_for("the cron rule's recommendation", lambda: (lambda w: w if w.get(
        "status", {}).get("activeCronScalingRule") else None)(
            env.get("tensorfusionworkload", "nightly", "-n", NS)), 30)
    if wl:
        st = wl["status"]
        check("status.activeCronScalingRule is the rule (the CRD's object)",
              st["activeCronScalingRule"] == UPSTREAM_AUTOSCALING["cronScalingRules"][0], st)
        check("the recommendation carries the rule's compute percentage",
              st.get("recommendation") == {"requests": {"compute": "40", "vram": "6Gi"},
                                           "limits": {"compute": "60", "vram": "6Gi"}}, st)
    pod = wait_for("the rule applied to the pod", lambda: (lambda p: p if p["metadata"][
        "annotations"].get("tensor-fusion.ai/compute-percent-request") == "40" else None)(
            env.get("pod", "nightly-0", "-n", NS)), 20)
    if pod:
        a = pod["metadata"]["annotations"]
        check("compute percent and VRAM applied, no TFLOPS added",
              a.get("tensor-fusion.ai/compute-percent-limit") == "60" and
              a.get("tensor-fusion.ai/vram-request") == "6Gi" and
              "tensor-fusion.ai/tflops-request" not in a, a)

    def failed(name):
        return [e["message"] for e in (env.get("events", "-n", NS) or {"items": []})["items"]
                if e["reason"] == "AutoscaleFailed" and e["involvedObject"]["name"] == name]
    m = wait_for("AutoscaleFailed for the TFLOPS workload", lambda: failed("mixed"), 20)
    check("a percentage rule on a TFLOPS workload is refused by name", m and
          "desiredResources.requests.compute: this workload's compute is given in TFLOPS" in m[0],
          m)
    m = wait_for("AutoscaleFailed for the external scaler", lambda: failed("external"), 20)
    check("an enabled external scaler is refused by name", m and
          "spec.autoScalingConfig.externalScaler.enable: not supported" in m[0], m)


def main():
    if not shutil.which("kubectl"):
        print("SKIP: kubectl not installed")
        return 77
    if not BIN or not os.access(BIN, os.X_OK):
        print("SKIP: TF_CONTROLLER_BIN not set")
        return 77
    tmp = tempfile.mkdtemp(prefix="tf-eff-")
    env = base.Env(tmp)
    procs = []
    ctl = None
    log = open(os.path.join(tmp, "controller.log"), "w")
    try:
        for name, script in (("api", "fakeapi.py"), ("greptime", "fakegreptime.py")):
            pf = os.path.join(tmp, name + ".port")
            procs.append(subprocess.Popen([sys.executable, os.path.join(
                SRC, "tests/controller", script), "--port", "0", "--port-file", pf],
                stdout=subprocess.DEVNULL))
            wait_for(name + " server", lambda: os.path.exists(pf), 10)
        api = "http://127.0.0.1:%s" % open(os.path.join(tmp, "api.port")).read().strip()
        gport = int(open(os.path.join(tmp, "greptime.port")).read().strip())
        env.write_kubeconfig(api, NS)
        t0 = fake_start_ms()
        setup(env, api, gport, t0)
        cfgfile = os.path.join(tmp, "config.yaml")
        with open(cfgfile, "w") as f:
            f.write("defaultPool: default-pool\n")
        offset = t0 - int(time.time() * 1000)
        ctl = subprocess.Popen([BIN, "--kubeconfig", env.kubeconfig, "--namespace",
                                "tensor-fusion-sys", "--bind", "127.0.0.1", "--webhook-port", "0",
                                "--http-port", "0", "--extra-san", "127.0.0.1", "--config",
                                cfgfile, "--identity", "eff", "--resync-ms", "200",
                                "--lease-seconds", "3", "--enable-auto-scale", "--metrics-url",
                                "http://127.0.0.1:%d" % gport, "--clock-offset-ms", str(offset),
                                "--log-level", "debug"], stdout=log, stderr=subprocess.STDOUT)

        # Step 2: the recommendation, written and applied.
        wl = wait_for("recommendation", lambda: (lambda w: w if w.get("status", {}).get(
            "recommendation") else None)(env.get("tensorfusionworkload", "infer", "-n", NS)), 40)
        if wl:
            rec = wl["status"]["recommendation"]
            check("recommendation shape", set(rec) == {"requests", "limits"} and
                  set(rec["requests"]) == {"tflops", "vram"}, rec)
            t = float(rec["requests"]["tflops"])
            check("compute request follows the ~20 TFLOPS usage", 20 < t < 30, rec)
            check("compute limit keeps the original burst", rec["limits"]["tflops"] == "200", rec)
            pod = wait_for("recommendation applied", lambda: (lambda p: p if p["metadata"][
                "annotations"]["tensor-fusion.ai/tflops-request"] == rec["requests"]["tflops"]
                else None)(env.get("pod", "infer-0", "-n", NS)), 20)
            if pod:
                a = pod["metadata"]["annotations"]
                check("vram request applied", a["tensor-fusion.ai/vram-request"] ==
                      rec["requests"]["vram"], a)
                check("vram limit applied", a["tensor-fusion.ai/vram-limit"] ==
                      rec["limits"]["vram"], a)
            q = http_json("GET", "http://127.0.0.1:%d/_fake/queries" % gport)["queries"]
            check("usage read from GreptimeDB", any("FROM tf_worker_usage" in s and
                                                    "workload = 'infer'" in s for s in q), q)
            ev = wait_for("ResourcesScaled event", lambda: [e for e in (env.get(
                "events", "-n", NS) or {"items": []})["items"] if e["reason"] ==
                "ResourcesScaled" and e["involvedObject"]["name"] == "infer"], 10)
            check("ResourcesScaled event names the pod count", bool(ev) and
                  ev[0]["message"].startswith("1 pod from"), ev)

        check_upstream_autoscaling(env)

        # Step 5: the defrag run (the schedule fired ~2 s after start-up).
        done = wait_for("DefragFinished", lambda: "DefragFinished" in reasons(env, "pool-b"), 40)
        if done:
            rs = reasons(env, "pool-b")
            check("defrag events in order", [r for r in rs if r.startswith("Defrag")] == [
                "DefragStarted", "DefragSkipMissingPDB", "DefragPodEvicted", "DefragFinished"],
                rs)
            skip = [e for e in events(env, "pool-b") if e["reason"] == "DefragSkipMissingPDB"]
            check("DefragSkipMissingPDB names the pod", skip and "ml/solo-0" in skip[0][
                "message"] and skip[0]["type"] == "Warning", skip)
            check("under-used node's pod evicted", env.get("pod", "move-0", "-n", NS) is None)
            check("pod without a budget stays", env.get("pod", "solo-0", "-n", NS) is not None)
            check("full node's pods stay", all(env.get("pod", "full-%d" % i, "-n", NS)
                                               for i in range(3)))
            fin = [e for e in events(env, "pool-b") if e["reason"] == "DefragFinished"]
            check("DefragFinished counts the eviction", "1 of 1 planned pod evicted" in
                  fin[0]["message"], fin)

        # Step 4: manual compaction of pools A and K.
        check("no periodic release before the period",
              "tensor-fusion.ai/should-delete" not in (env.get("node", "a-empty") or {})[
                  "metadata"].get("labels", {}))
        wait_for("GPUNodes", lambda: all((env.get("gpunode", n) or {}).get("status", {}).get(
            "phase") == "Running" for n in ("a-busy", "a-dnd", "a-empty", "a-min", "k-empty")),
            20)

        def manual(pool):
            stamp = datetime.datetime.fromtimestamp((time.time() * 1000 + offset) / 1000,
                                                    datetime.timezone.utc)
            http_json("PATCH", api + "/apis/tensor-fusion.ai/v1/gpupools/" + pool,
                      {"metadata": {"annotations": {"tensor-fusion.ai/manual-compaction":
                                                    stamp.strftime("%Y-%m-%dT%H:%M:%S.") +
                                                    "%03dZ" % (stamp.microsecond // 1000)}}},
                      "application/merge-patch+json")
        manual("pool-a")
        manual("pool-k")
        ok = wait_for("ManualCompaction event", lambda: "ManualCompaction" in reasons(
            env, "pool-a"), 20)
        if ok:
            labelled = {n: (env.get("node", n) or {}).get("metadata", {}).get("labels", {}).get(
                "tensor-fusion.ai/should-delete") for n in ("a-busy", "a-dnd", "a-empty", "a-min")}
            check("empty old node released", labelled["a-empty"] == "true", labelled)
            check("do-not-disrupt node kept", labelled["a-dnd"] is None, labelled)
            check("node needed for minResources kept", labelled["a-min"] is None, labelled)
            check("node with a worker kept", labelled["a-busy"] is None, labelled)
            comp = [e for e in events(env, "pool-a") if e["reason"] == "Compaction"]
            check("Compaction event names the node", len(comp) == 1 and
                  "a-empty" in comp[0]["message"], comp)
            man = [e for e in events(env, "pool-a") if e["reason"] == "ManualCompaction"]
            check("ManualCompaction event counts", "1 of 4 nodes released" in man[0]["message"],
                  man)

        ok = wait_for("Karpenter pool compaction", lambda: "Compaction" in reasons(
            env, "pool-k"), 20)
        if ok:
            check("Karpenter NodeClaim deleted", env.get("nodeclaim", "claim-k") is None)
            check("Karpenter node labelled", (env.get("node", "k-empty") or {}).get(
                "metadata", {}).get("labels", {}).get("tensor-fusion.ai/should-delete") ==
                "true")
        # A stale request is refused with a reason.
        http_json("PATCH", api + "/apis/tensor-fusion.ai/v1/gpupools/pool-k",
                  {"metadata": {"annotations": {"tensor-fusion.ai/manual-compaction":
                                                datetime.datetime.fromtimestamp(
                                                    (time.time() * 1000 + offset - 60000) / 1000,
                                                    datetime.timezone.utc).strftime(
                                                    "%Y-%m-%dT%H:%M:%SZ")}}},
                  "application/merge-patch+json")
        ign = wait_for("ManualCompactionIgnored", lambda: [
            e for e in events(env, "pool-k") if e["reason"] == "ManualCompactionIgnored"], 20)
        check("stale manual compaction explained", bool(ign) and "3" in ign[0]["message"], ign)

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import fakeapi
        log.flush()
        probs = fakeapi.write_problems(api, open(os.path.join(tmp, "controller.log")).read())
        check("controller writes are schema-clean", not probs, "\n".join(probs[:10]))

        ctl.terminate()
        check("controller exits cleanly", ctl.wait(timeout=20) == 0)
        ctl = None
    finally:
        if ctl:
            ctl.kill()
            ctl.wait()
        for p in procs:
            p.terminate()
            p.wait()
        log.close()
        if base.failed:
            print(open(os.path.join(tmp, "controller.log")).read()[-8000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("efficiency e2e: %d passed, %d failed" % (base.passed, base.failed))
    return 1 if base.failed else 0


if __name__ == "__main__":
    sys.exit(main())
