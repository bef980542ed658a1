#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Seed 002 on a simulated cluster, end to end: the in-memory API server (fakeapi.py), two
GPU nodes whose tf-hypervisor --kubernetes runs on the simulated GPU, tf-controller with the
chart's configuration (rendered by the real helm, alert rules included), the GreptimeDB
stand-in (fakegreptime.py, as strict as GreptimeDB about the lines it accepts) and a real
Alertmanager (Debian's prometheus-alertmanager on loopback).

  * a workload runs: a pod admitted by the webhook and bound by the extender runs gpu_burn on
    node-a's simulated GPU under the limiter, held to a 50 % compute limit;
  * metrics land: the hypervisors write tf_gpu_usage / tf_worker_usage, the controller
    tf_worker_resources / tf_node_metrics / tf_pool_metrics, and the four step-1 queries of
    the seed answer with the expected rows;
  * alerts: node-b's idle GPU raises IdleGPU and EmptyGPU in Alertmanager with labels and
    annotations naming the node, pool and GPU; the throttled worker raises
    WorkerTFlopsThrottled; the busy GPU does not raise IdleGPU;
  * autoscaling acts on that history: the workload's recommendation comes from the
    tf_worker_usage rows the hypervisor wrote, and is applied to the pod;
  * live statuses: each GPUNode is Running on its hypervisor's heartbeat Lease, the pool
    ready;
  * an outage of the database loses nothing: while it is down the controller keeps
    reconciling (a new pod is bound and accounted), and once it is back the rows of the
    outage arrive, none dropped.

Exit 77 (skip) without kubectl, helm, prometheus-alertmanager or the simulated GPU.
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
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "controller"))
import test_e2e as base  # noqa: E402 - Env, check, wait_for, free_port
import helm  # noqa: E402

SRC, check, wait_for, free_port = base.SRC, base.check, base.wait_for, base.free_port
NEED_ENV = ("TF_CONTROLLER_BIN", "TF_HYPERVISOR_BIN", "TF_SIM_LIBDIR", "TF_GPU_BURN",
            "TF_TIMER_PTX", "TF_LIMITER_LIB")
AM = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
NS = "ml"


def start(args, log, env=None):
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env)


def port_file(path, timeout=20):
    wait_for(path, lambda: os.path.exists(path), timeout)
    return int(open(path).read().split()[0])


def sql(gport, q):
    body = urllib.parse.urlencode({"sql": q}).encode()
    req = urllib.request.Request("http://127.0.0.1:%d/v1/sql?db=public" % gport, data=body,
                                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    with urllib.request.urlopen(req, timeout=10) as r:
        rec = json.loads(r.read())["output"][0]["records"]
    names = [c["name"] for c in rec["schema"]["column_schemas"]]
    return [dict(zip(names, row)) for row in rec["rows"]]


def alerts(amport):
    with urllib.request.urlopen("http://127.0.0.1:%d/api/v2/alerts" % amport, timeout=5) as r:
        return json.loads(r.read())


def find_alert(amport, name, **labels):
    for a in alerts(amport):
        lab = a["labels"]
        if lab.get("alertname") == name and all(lab.get(k) == v for k, v in labels.items()):
            return a
    return None


STEP1 = {
    "node": """SELECT node, pool,
       avg(allocated_tflops_percent) AS tflops_allocated_pct,
       avg(allocated_vram_percent)   AS vram_allocated_pct
FROM tf_node_metrics
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY node, pool
ORDER BY tflops_allocated_pct;""",
    "gpu": """SELECT node, uuid,
       avg(compute_percentage) AS compute_used_pct,
       max(memory_percentage)  AS vram_peak_pct
FROM tf_gpu_usage
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY node, uuid
ORDER BY compute_used_pct;""",
    "requests": """SELECT workload,
       avg(tflops_request)                  AS tflops_request,
       avg(vram_bytes_request) / 1073741824 AS vram_request_gib
FROM tf_worker_resources
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY workload;""",
    "usage": """SELECT workload,
       avg(compute_tflops)             AS tflops_avg,
       max(compute_tflops)             AS tflops_peak,
       max(memory_bytes) / 1073741824  AS vram_peak_gib
FROM tf_worker_usage
WHERE greptime_timestamp >= now() - '1d'::INTERVAL
GROUP BY workload;""",
}


def chart_config(tmp):
    """The controller's config.yaml as the chart renders it, with the alert rules' durations
    shortened through the values (as a user would set them)."""
    import yaml
    with open(os.path.join(helm.CHART, "values.yaml")) as f:
        rules = yaml.safe_load(f)["dynamicConfig"]["alertRules"]
    for r in rules:
        r["evaluationInterval"] = "2s"
        r["consecutiveCount"] = 2
    docs = helm.template(values={"dynamicConfig": {"alertRules": rules}})
    cm = next(d for d in docs if d["kind"] == "ConfigMap" and
              d["metadata"]["name"] == "tensor-fusion-config")
    path = os.path.join(tmp, "config.yaml")
    with open(path, "w") as f:
        f.write(cm["data"]["config.yaml"])
    return path, docs


def main():
    missing = [e for e in NEED_ENV if not os.environ.get(e)]
    if missing or not shutil.which("kubectl") or helm.missing() or not AM:
        print("SKIP: needs kubectl, helm, prometheus-alertmanager and %s" % ", ".join(NEED_ENV))
        return 77
    tmp = tempfile.mkdtemp(prefix="tf-seed002-")
    env = base.Env(tmp)
    procs = []
    log = open(os.path.join(tmp, "log"), "w")
    try:
        # The cluster's services.
        pf = os.path.join(tmp, "api.port")
        procs.append(start([sys.executable, os.path.join(SRC, "tests/controller/fakeapi.py"),
                            "--port", "0", "--port-file", pf], log))
        api = "http://127.0.0.1:%d" % port_file(pf)
        env.write_kubeconfig(api, NS)
        gdb = os.path.join(tmp, "greptime.db")
        gpf = os.path.join(tmp, "gdb.port")
        gcmd = [sys.executable, os.path.join(SRC, "tests/controller/fakegreptime.py"), "--db",
                gdb]
        greptime = start(gcmd + ["--port", "0", "--port-file", gpf], log)
        gport = port_file(gpf)
        gurl = "http://127.0.0.1:%d" % gport
        amport = free_port()
        amcfg = os.path.join(tmp, "am.yml")
        with open(amcfg, "w") as f:
            f.write("route: {receiver: default, group_wait: 1s}\nreceivers: [{name: default}]\n")
        procs.append(start([AM, "--config.file=" + amcfg, "--storage.path=" +
                            os.path.join(tmp, "am"), "--web.listen-address=127.0.0.1:%d" % amport,
                            "--cluster.listen-address="], log))
        wait_for("Alertmanager", lambda: alerts(amport) is not None)

        cfgfile, docs = chart_config(tmp)
        for ns in ("tensor-fusion-sys", NS):
            env.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for d in docs:
            if d["kind"] in ("TensorFusionCluster", "SchedulingConfigTemplate"):
                env.apply(d)
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
        # The pod's profile; autoscaling is turned on once the workload has a usage history
        # (seed 002 step 2: "after it ran a while").
        env.apply({"apiVersion": "tensor-fusion.ai/v1", "kind": "WorkloadProfile",
                   "metadata": {"name": "burst", "namespace": NS},
                   "spec": {"autoScalingConfig": {"autoSetResources": {"enable": False}}}})
        ctl = start([os.environ["TF_CONTROLLER_BIN"], "--kubeconfig", env.kubeconfig,
                     "--namespace", "tensor-fusion-sys", "--bind", "127.0.0.1",
                     "--webhook-port", str(wport), "--http-port", str(hport),
                     "--webhook-config", "tensor-fusion-webhook", "--extra-san", "127.0.0.1",
                     "--config", cfgfile, "--identity", "ctl", "--resync-ms", "300",
                     "--lease-seconds", "3", "--metrics-url", gurl,
                     "--metrics-interval-ms", "1000", "--enable-alert",
                     "--alertmanager-url", "http://127.0.0.1:%d" % amport,
                     "--enable-auto-scale", "--autoscale-interval-ms", "2000"], log)
        procs.append(ctl)

        # Two GPU nodes, each a tf-hypervisor on its own simulated A100.
        nodes = {}
        for node in ("node-a", "node-b"):
            d = os.path.join(tmp, node)
            os.makedirs(d)
            simenv = dict(TF_SIM_DEVICES="A100-80GB", TF_SIM_SEED=node,
                          TF_SIM_SHM_PREFIX=os.path.join(d, "sim-"),
                          LD_LIBRARY_PATH=os.environ["TF_SIM_LIBDIR"])
            hvenv = dict(os.environ, **simenv, TF_NVML_LIBRARY=os.path.join(
                os.environ["TF_SIM_LIBDIR"], "libnvidia-ml.so.1"))
            procs.append(start([os.environ["TF_HYPERVISOR_BIN"], "--state-dir", d,
                                "--kubernetes", "--node-name", node, "--server", api,
                                "--shm-root", os.path.join(d, "shm"),
                                "--pool", "tensor-fusion-cluster-default-pool",
                                "--metrics-sink", gurl + "/v1/influxdb/api/v2/write?db=public"
                                "&precision=ms", "--metrics-interval", "500",
                                "--sample-interval", "250"], log, hvenv))
            nodes[node] = {"dir": d, "simenv": simenv}
            env.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})

        def gpu_of(node):
            items = (env.get("gpus") or {"items": []})["items"]
            g = [i for i in items if i.get("status", {}).get("nodeSelector", {}).get(
                "kubernetes.io/hostname") == node and i["status"].get("uuid")]
            return g[0] if g else None
        for node in nodes:
            g = wait_for("GPU object of " + node, lambda: gpu_of(node), 30)
            nodes[node]["uuid"] = g["status"]["uuid"] if g else "?"
        pool = wait_for("both nodes Running on their hypervisors' heartbeats", lambda: (
            lambda p: p if p and p.get("status", {}).get("readyNodes") == 2 else None)(
                env.get("gpupool", "tensor-fusion-cluster-default-pool")), 30)
        check("GPUNode phase from the heartbeat Lease; the pool is ready", pool and
              pool["status"]["phase"] == "Running" and all(
                  (env.get("gpunode", n) or {}).get("status", {}).get("phase") == "Running"
                  for n in nodes), pool and pool["status"])
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

        def run_pod(name, node, anns, profile=None):
            """kubectl apply -> webhook -> extender bind to NODE -> Running and Ready."""
            meta = {"name": name, "namespace": NS,
                    "labels": {"tensor-fusion.ai/enabled": "true"}, "annotations": anns}
            if profile:
                meta["annotations"]["tensor-fusion.ai/workload-profile"] = profile
            env.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                       "spec": {"containers": [{"name": "app", "image": "pytorch/pytorch"}]}})
            pod = env.get("pod", name, "-n", NS)
            fr = wait_for("filter " + name, lambda: extender("filter", {
                "Pod": pod, "Nodes": None, "NodeNames": [node]}))
            check("%s fits %s" % (name, node), fr and fr["NodeNames"] == [node], fr)
            br = extender("bind", {"PodName": name, "PodNamespace": NS,
                                   "PodUID": pod["metadata"]["uid"], "Node": node})
            check("%s bound" % name, br == {"Error": ""}, br)
            env.kubectl("patch", "pod", name, "-n", NS, "--subresource=status", "--type=merge",
                        "-p", json.dumps({"status": {"phase": "Running", "conditions": [
                            {"type": "Ready", "status": "True"}]}}))
            return env.get("pod", name, "-n", NS)

        # 1. A workload runs on node-a: 10 TFLOPS requested, held to 50 % of the GPU.
        pod = run_pod("train", "node-a", {"tensor-fusion.ai/tflops-request": "10",
                                          "tensor-fusion.ai/tflops-limit": "156",
                                          "tensor-fusion.ai/vram-request": "2Gi",
                                          "tensor-fusion.ai/vram-limit": "4Gi"}, "burst")
        check("the pod is on node-a's GPU",
              pod["metadata"]["annotations"].get("tensor-fusion.ai/gpu-ids") ==
              nodes["node-a"]["uuid"], pod["metadata"]["annotations"])
        region = os.path.join(nodes["node-a"]["dir"], "shm", NS, "train", "shm")
        wait_for("the pod's limit region", lambda: os.path.exists(region), 20)
        burn_env = dict(os.environ, **nodes["node-a"]["simenv"],
                        LD_PRELOAD=os.environ["TF_LIMITER_LIB"], TF_SHM_PATH=region,
                        ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0",
                        TF_LOG_LEVEL="warn")
        burn_log = open(os.path.join(tmp, "burn.log"), "w")
        burn = subprocess.Popen([os.environ["TF_GPU_BURN"], os.environ["TF_TIMER_PTX"], "45",
                                 "1024", "1000", "train"], env=burn_env, stdout=burn_log,
                                stderr=subprocess.STDOUT)
        procs.append(burn)

        def busy_rows():
            rows = sql(gport, "SELECT count(*) AS n FROM tf_worker_usage WHERE workload = "
                              "'train' AND compute_tflops > 0")
            return rows[0]["n"] if rows else 0
        check("the workload runs (its usage reaches GreptimeDB)",
              wait_for("usage rows of the running workload", lambda: busy_rows() >= 4, 60))

        # 2. Alerts: node-b idles, node-a works and is throttled.
        b_uuid, a_uuid = nodes["node-b"]["uuid"], nodes["node-a"]["uuid"]
        idle = wait_for("IdleGPU for node-b's GPU in Alertmanager",
                        lambda: find_alert(amport, "IdleGPU", uuid=b_uuid), 40)
        if idle:
            lab, ann = idle["labels"], idle["annotations"]
            check("IdleGPU names node, pool and GPU",
                  lab.get("node") == "node-b" and
                  lab.get("pool") == "tensor-fusion-cluster-default-pool" and
                  lab.get("instance") == b_uuid and lab.get("severity") == "P2", lab)
            check("IdleGPU says what to do", b_uuid in ann.get("summary", "") and
                  "node-b" in ann.get("description", "") and ann.get("runbook_url"), ann)
        empty = wait_for("EmptyGPU for node-b", lambda: find_alert(amport, "EmptyGPU",
                                                                   node="node-b"), 30)
        check("EmptyGPU names the node", empty and empty["labels"]["instance"] == "node-b")
        thr = wait_for("WorkerTFlopsThrottled for train", lambda: find_alert(
            amport, "WorkerTFlopsThrottled", worker="train"), 30)
        check("WorkerTFlopsThrottled names workload and GPU", thr and
              thr["labels"].get("workload") == "train" and thr["labels"].get("uuid") == a_uuid,
              thr)
        time.sleep(5)  # two evaluations of a busy node-a
        check("the busy GPU is not idle", find_alert(amport, "IdleGPU", uuid=a_uuid) is None,
              find_alert(amport, "IdleGPU", uuid=a_uuid))
        check("node-a is not empty", find_alert(amport, "EmptyGPU", node="node-a") is None)
        check("no pool is exhausted", find_alert(amport, "PoolCapacityExhausted") is None)

        # 3. Autoscaling from the history the hypervisor wrote: turned on once 10 s of it are in
        # (the window then holds the running workload, not the seconds before it started).
        wait_for("10 s of usage history", lambda: busy_rows() >= 20, 60)
        asc = {"autoSetResources": {"enable": True, "targetResource": "all",
                                    "initialDelayPeriod": "0s", "historyDataPeriod": "10s",
                                    "confidenceInterval": "5s"}}
        env.kubectl("patch", "tensorfusionworkload", "train", "-n", NS, "--type=merge", "-p",
                    json.dumps({"spec": {"autoScalingConfig": asc}}))
        rec = wait_for("recommendation", lambda: (env.get("tensorfusionworkload", "train", "-n",
                                                          NS) or {}).get("status", {}).get(
            "recommendation"), 30)
        check("the recommendation raises the request the usage outgrew",
              rec and float(rec["requests"]["tflops"]) > 10, rec)
        got = wait_for("recommendation applied to the pod", lambda: (lambda p: p if float(
            p["metadata"]["annotations"]["tensor-fusion.ai/tflops-request"]) > 10 else None)(
                env.get("pod", "train", "-n", NS)), 20)
        check("the pod's request follows", got is not None)
        queries = json.loads(urllib.request.urlopen("http://127.0.0.1:%d/_fake/queries" % gport,
                                                    timeout=5).read())["queries"]
        check("the autoscaler read tf_worker_usage", any(
            "FROM tf_worker_usage" in q and "workload = 'train'" in q for q in queries))

        # 4. The seed's step-1 queries.
        r = {k: sql(gport, q) for k, q in STEP1.items()}
        byn = {x["node"]: x for x in r["node"]}
        check("step 1, allocation per node: both nodes, node-a allocated",
              set(byn) == {"node-a", "node-b"} and byn["node-a"]["tflops_allocated_pct"] > 0 and
              byn["node-b"]["tflops_allocated_pct"] == 0 and
              byn["node-a"]["pool"] == "tensor-fusion-cluster-default-pool", r["node"])
        byg = {x["uuid"]: x for x in r["gpu"]}
        check("step 1, usage per GPU: node-a's GPU did the work",
              set(byg) == {a_uuid, b_uuid} and
              byg[a_uuid]["compute_used_pct"] > byg[b_uuid]["compute_used_pct"] and
              byg[a_uuid]["vram_peak_pct"] > 0, r["gpu"])
        req = {x["workload"]: x for x in r["requests"]}
        check("step 1, requests per workload", "train" in req and
              req["train"]["tflops_request"] >= 10 and 0 < req["train"]["vram_request_gib"] <= 2,
              r["requests"])
        use = {x["workload"]: x for x in r["usage"]}
        check("step 1, usage per workload", "train" in use and use["train"]["tflops_avg"] > 0 and
              use["train"]["tflops_peak"] <= 312 * 1.02 and use["train"]["vram_peak_gib"] == 1,
              r["usage"])
        cost = sql(gport, "SELECT sum(raw_cost) AS c FROM tf_worker_resources WHERE "
                          "workload = 'train'")
        check("the workload's cost accrues from the pool's pricing", cost[0]["c"] > 0, cost)

        # 5. The database goes away; nothing is lost, the controller keeps working.
        t_down = int(time.time() * 1000)
        greptime.send_signal(signal.SIGTERM)
        greptime.wait(timeout=10)
        run_pod("late", "node-b", {"tensor-fusion.ai/tflops-request": "20",
                                   "tensor-fusion.ai/vram-request": "1Gi"})
        g = wait_for("node-b's GPU accounts the new pod", lambda: (lambda x: x if x and x[
            "status"].get("available", {}).get("tflops") == "292" else None)(gpu_of("node-b")))
        check("reconciling goes on while the database is down", g is not None)
        # Down long enough that a slow tick (sanitizers, two loaded cores) still leaves several
        # rows of each writer inside the window.
        time.sleep(max(0.5, 6 - (time.time() * 1000 - t_down) / 1000.0))
        t_up = int(time.time() * 1000)
        greptime = start(gcmd + ["--port", str(gport)], log)
        procs.append(greptime)
        wait_for("GreptimeDB back", lambda: urllib.request.urlopen(
            gurl + "/health", timeout=2).status == 200)

        seen = {}

        def outage_rows():
            rows = sql(gport, "SELECT node, count(*) AS n FROM tf_gpu_usage WHERE "
                              "greptime_timestamp > %d AND greptime_timestamp < %d GROUP BY node"
                       % (t_down, t_up))
            ctl_rows = sql(gport, "SELECT count(*) AS n FROM tf_node_metrics WHERE "
                                  "greptime_timestamp > %d AND greptime_timestamp < %d AND "
                                  "node = 'node-b'" % (t_down, t_up))
            span = (t_up - t_down) / 1000.0
            seen["last"] = (span, rows, ctl_rows)
            # Hypervisors write every 0.5 s, the controller every 1 s: at least half of each.
            ok = len(rows) == 2 and all(x["n"] >= span / 0.5 * 0.5 for x in rows) and \
                ctl_rows[0]["n"] >= span * 0.5
            return (rows, ctl_rows) if ok else None
        got = wait_for("the outage's rows", outage_rows, 45)
        check("rows written during the outage arrived (hypervisors and controller)",
              got is not None, seen.get("last"))
        for node in nodes:
            with open(os.path.join(nodes[node]["dir"], "hypervisor.addr")) as f:
                addr = f.read().strip()
            m = urllib.request.urlopen("http://%s/metrics" % addr, timeout=5).read().decode()
            check("%s dropped no metric point" % node,
                  'tf_metrics_points_total{result="dropped"} 0' in m,
                  [ln for ln in m.splitlines() if ln.startswith("tf_metrics")])
        m = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % hport, timeout=5).read().decode()
        val = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1]) for ln in m.splitlines()
               if ln and not ln.startswith("#")}
        check("the controller dropped no metric point; its alert evaluator saw the outage and "
              "went on", val.get('tf_metrics_points_total{result="dropped"}') == 0 and
              val.get("tf_controller_leader") == 1 and
              val.get('tf_alert_evaluations_total{result="query_failed"}', 0) > 0 and
              val.get('tf_alert_posts_total{result="ok"}', 0) > 0, val)
        ev = 'tf_events_total{component="tf-scheduler",result="%s"}'
        check("the extender's Events were written by its recorder, none dropped",
              val.get(ev % "written", 0) > 0 and val.get(ev % "dropped") == 0, val)
        late = wait_for("the late pod's allocation in tf_node_metrics", lambda: [
            x for x in sql(gport, "SELECT max(allocated_tflops) AS t FROM tf_node_metrics WHERE "
                                  "node = 'node-b' AND greptime_timestamp > %d" % t_down)
            if x["t"] and x["t"] >= 20], 20)
        check("node-b's allocation recorded", bool(late))
        burn.wait(timeout=60)
        burn_log.close()
        out = open(os.path.join(tmp, "burn.log")).read()
        check("the workload ran to its end under the limiter", burn.returncode == 0 and
              "train kernels=" in out, out[-800:])
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()
    if base.failed:
        print(open(os.path.join(tmp, "log")).read()[-6000:])
    print("seed 002 cluster: %d passed, %d failed" % (base.passed, base.failed))
    if not base.failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if base.failed else 0


if __name__ == "__main__":
    sys.exit(main())
