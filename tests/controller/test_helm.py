#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Helm chart and the CRDs, with the real helm (tests/controller/helm.py): helm lint --strict
passes with several value sets; the committed CRDs match deploy/gen_crds.py; helm template
renders the objects the issue asks for; the webhook is v1-only with a configurable
failurePolicy and a timeout <= 10 s (more is refused by the chart); the kube-scheduler
profile carries the extender; the default TensorFusionCluster/GPUPool/SchedulingConfigTemplate/
ProviderConfig validate against their CRD schemas (fakeschema.py: nothing pruned, nothing
invalid) and are accepted by kubectl's strict validation against the in-memory API server.
Exit 77 (skip) without python3-yaml or helm.
"""
import copy
import os
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
sys.path.insert(0, os.path.join(SRC, "tests", "controller"))
import fakeschema  # noqa: E402
import helm  # noqa: E402

if helm.missing():
    print("SKIP: helm not installed (scripts/deps.sh test installs it)")
    sys.exit(77)

CHART = os.path.join(SRC, "deploy", "helm", "tensor-fusion")
passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (name, detail))


def render(*sets, values=None):
    """The chart's objects without the CRDs (helm template --include-crds adds them)."""
    return [d for d in helm.template(*sets, values=values)
            if d.get("kind") != "CustomResourceDefinition"]


def find(docs, kind, name=None):
    for d in docs:
        if d.get("kind") == kind and (name is None or d["metadata"]["name"] == name):
            return d
    return None


def flag(args, name):
    return args[args.index(name) + 1] if name in args[:-1] else None


def hv_args(*sets):
    ds = find(render(*sets), "DaemonSet", "tensor-fusion-hypervisor")
    return ds["spec"]["template"]["spec"]["containers"][0]["args"]


def load_crds():
    out = {}
    cdir = os.path.join(CHART, "crds")
    for fn in sorted(os.listdir(cdir)):
        with open(os.path.join(cdir, fn)) as f:
            d = yaml.safe_load(f)
        out[d["spec"]["names"]["kind"]] = d
    return out


def validate(obj, schema):
    """What kube-apiserver would say of OBJ: fields it would prune, then invalid fields
    (fakeschema.py, the in-memory API server's structural-schema rules)."""
    o = copy.deepcopy(obj)
    pruned = []
    fakeschema.prune(o, schema, pruned)
    fakeschema.default(o, schema)
    return ["unknown field %s" % p for p in pruned] + [c.text() for c in
                                                       fakeschema.validate(o, schema)]


def test_crds():
    r = subprocess.run([sys.executable, os.path.join(SRC, "deploy", "gen_crds.py"), "--check"],
                       capture_output=True, text=True)
    check("committed CRDs match deploy/gen_crds.py", r.returncode == 0, r.stdout)
    crds = load_crds()
    want = {"TensorFusionCluster": "Cluster", "GPUPool": "Cluster", "GPUNode": "Cluster",
            "GPU": "Cluster", "TensorFusionWorkload": "Namespaced",
            "TensorFusionConnection": "Namespaced", "WorkloadProfile": "Namespaced",
            "SchedulingConfigTemplate": "Cluster", "GPUResourceQuota": "Namespaced",
            "ProviderConfig": "Cluster", "GPUNodeClaim": "Cluster", "GPUNodeClass": "Cluster"}
    check("twelve CRDs", set(crds) == set(want), sorted(crds))
    for kind, scope in want.items():
        d = crds.get(kind)
        if not d:
            continue
        spec = d["spec"]
        check(kind + " group", spec["group"] == "tensor-fusion.ai")
        check(kind + " scope", spec["scope"] == scope, spec["scope"])
        v = spec["versions"][0]
        check(kind + " v1 served+storage", v["name"] == "v1" and v["served"] and v["storage"])
        props = v["schema"]["openAPIV3Schema"]["properties"]
        # As upstream: every kind has a status subresource but ProviderConfig.
        check(kind + " status subresource as upstream",
              ("status" in v.get("subresources", {})) == (kind != "ProviderConfig"))
        check(kind + " name", d["metadata"]["name"] == spec["names"]["plural"] +
              ".tensor-fusion.ai")
    # Fields users read (seed 004: kubectl get gpu -o custom-columns ...).
    gpu = crds["GPU"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    for f in ("gpuModel", "capacity", "available"):
        check("GPU status." + f, f in gpu["status"]["properties"])
    # Seed 001 WorkloadProfile example validates.
    with open(os.path.join(SRC, "examples", "seed-001-workloadprofile.yaml")) as f:
        prof = yaml.safe_load(f)
    errs = validate(prof, crds["WorkloadProfile"]["spec"]["versions"][0]["schema"]
                    ["openAPIV3Schema"])
    check("seed 001 WorkloadProfile validates", not errs, errs)
    bad = dict(prof, spec=dict(prof["spec"], qos="urgent"))
    check("schema validation can fail", validate(bad, crds["WorkloadProfile"]["spec"]["versions"]
                                                 [0]["schema"]["openAPIV3Schema"]))


def webhook_problems(docs):
    mwc = find(docs, "MutatingWebhookConfiguration")
    probs = []
    if not mwc:
        return ["no MutatingWebhookConfiguration"]
    for w in mwc["webhooks"]:
        if w.get("admissionReviewVersions") != ["v1"]:
            probs.append("admissionReviewVersions %r" % w.get("admissionReviewVersions"))
        if not isinstance(w.get("timeoutSeconds"), int) or not 1 <= w["timeoutSeconds"] <= 10:
            probs.append("timeoutSeconds %r" % w.get("timeoutSeconds"))
        if w.get("failurePolicy") not in ("Fail", "Ignore"):
            probs.append("failurePolicy %r" % w.get("failurePolicy"))
        if w.get("sideEffects") not in ("None", "NoneOnDryRun"):
            probs.append("sideEffects %r" % w.get("sideEffects"))
    return probs


def rules_of(docs, sa):
    """The (apiGroup, resource, verb) triples the ClusterRoles bound to service account SA
    grant."""
    got = set()
    for rb in docs:
        if rb["kind"] != "ClusterRoleBinding" or not any(
                s.get("kind") == "ServiceAccount" and s.get("name") == sa
                for s in rb.get("subjects", [])):
            continue
        role = find(docs, "ClusterRole", rb["roleRef"]["name"])
        for r in role["rules"]:
            for g in r["apiGroups"]:
                for res in r["resources"]:
                    for v in r["verbs"]:
                        got.add((g, res, v))
    return got


def check_node_agent(docs, ds):
    """The hypervisor runs as the node agent: its node name, the shm root the webhook mounts
    into soft pods, and the API rights it needs (and no more than that on pods)."""
    spec = ds["spec"]["template"]["spec"]
    c = spec["containers"][0]
    args = c["args"]
    arg = lambda k: args[args.index(k) + 1] if k in args else None  # noqa: E731
    check("hypervisor runs the node agent", "--kubernetes" in args, args)
    check("node name from the downward API", arg("--node-name") == "$(NODE_NAME)" and
          {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
          in c["env"], c.get("env"))
    shm = arg("--shm-root")
    vols = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    check("shm root is the host directory the webhook mounts",
          shm == "/run/tensor-fusion/shm" and mounts.get(shm) in vols and
          vols[mounts[shm]].get("hostPath", {}).get("path") == shm, (shm, mounts))
    cfg = yaml.safe_load(find(docs, "ConfigMap", "tensor-fusion-config")["data"]["config.yaml"])
    check("controller injects the same shm directory", cfg.get("shmDir") == shm, cfg)
    check("hypervisor sees the pods' processes", spec.get("hostPID") is True)
    sa = spec["serviceAccountName"]
    got = rules_of(docs, sa)
    need = [("tensor-fusion.ai", "gpus", v) for v in ("get", "list", "watch", "create", "patch")]
    need += [("tensor-fusion.ai", "gpus/status", v) for v in ("get", "patch")]
    need += [("", "pods", v) for v in ("get", "list", "watch")]
    missing = [n for n in need if n not in got]
    check("hypervisor RBAC covers gpus, gpus/status and pods", not missing, missing)
    check("hypervisor cannot change pods",
          not any(g == "" and r.startswith("pods") and v not in ("get", "list", "watch")
                  for (g, r, v) in got), sorted(got))


def test_chart():
    docs = render()
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    for k in [("Deployment", "tensor-fusion-controller"), ("Service", "tensor-fusion"),
              ("ClusterRole", "tensor-fusion-controller"),
              ("ClusterRoleBinding", "tensor-fusion-controller"),
              ("ServiceAccount", "tensor-fusion"), ("Deployment", "tensor-fusion-scheduler"),
              ("ConfigMap", "tensor-fusion-scheduler-config"),
              ("MutatingWebhookConfiguration", "tensor-fusion-webhook"),
              ("DaemonSet", "tensor-fusion-hypervisor"),
              ("TensorFusionCluster", "tensor-fusion-cluster"), ("GPUPool", "tensor-fusion-cluster-default-pool"),
              ("SchedulingConfigTemplate", "tf-scheduling-config"),
              ("ProviderConfig", "nvidia-provider")]:
        check("renders %s/%s" % k, k in kinds)
    pc = find(docs, "ProviderConfig")["spec"]
    check("NVIDIA ProviderConfig takes over nvidia.com/gpu and MIG resources",
          pc["vendor"] == "NVIDIA" and "nvidia.com/gpu" in pc["inUseResourceNames"] and
          "nvidia.com/mig-1g.10gb" in pc["inUseResourceNames"] and
          pc["devicePluginDetection"]["resourceNamePrefixes"] == ["nvidia.com/gpu",
                                                                   "nvidia.com/mig"], pc)
    check("the ProviderConfig can be left out", find(render(
        "providerConfigs.nvidia.enabled=false"), "ProviderConfig") is None)
    check("webhook shape", not webhook_problems(docs), webhook_problems(docs))
    err = helm.template_error("webhook.timeoutSeconds=30")
    check("the chart refuses a webhook timeout over 10 s",
          err is not None and "webhook.timeoutSeconds" in err, err)
    check("the shape check catches what the chart would let through",
          webhook_problems([{"kind": "MutatingWebhookConfiguration", "webhooks": [
              {"admissionReviewVersions": ["v1"], "timeoutSeconds": 30,
               "failurePolicy": "Fail", "sideEffects": "None"}]}]) == ["timeoutSeconds 30"])
    mwc = find(render("webhook.failurePolicy=Ignore"), "MutatingWebhookConfiguration")
    check("failurePolicy is configurable", mwc["webhooks"][0]["failurePolicy"] == "Ignore")
    w = find(docs, "MutatingWebhookConfiguration")["webhooks"][0]
    check("webhook excludes its own namespace", "tensor-fusion-sys" in
          w["namespaceSelector"]["matchExpressions"][0]["values"])
    check("webhook goes to the controller service",
          w["clientConfig"]["service"] == {"name": "tensor-fusion",
                                           "namespace": "tensor-fusion-sys",
                                           "path": "/mutate-v1-pod", "port": 9443})
    ds = find(docs, "DaemonSet", "tensor-fusion-hypervisor")
    check("hypervisor on nvidia.com/gpu.present=true",
          ds["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.present": "true"})
    hv = ds["spec"]["template"]["spec"]["containers"][0]
    args = hv["args"]
    check("hypervisor runs the device plugin",
          (flag(args, "--device-plugin"), flag(args, "--kubelet-dir"),
           flag(args, "--vgpu-slots")) == ("on", "/var/lib/kubelet/device-plugins", "16"), args)
    vols = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in hv["volumeMounts"]}
    check("kubelet plugin directory mounted at the --kubelet-dir path",
          vols["device-plugins"]["hostPath"]["path"] == mounts["device-plugins"] ==
          "/var/lib/kubelet/device-plugins", (vols.get("device-plugins"), mounts))
    off = hv_args("hypervisor.devicePlugin.enabled=false")
    check("device plugin can be turned off", flag(off, "--device-plugin") is None, off)
    check("vgpuSlots reaches the flag",
          flag(hv_args("hypervisor.devicePlugin.vgpuSlots=4"), "--vgpu-slots") == "4")
    check_node_agent(docs, ds)
    cm = find(docs, "ConfigMap", "tensor-fusion-scheduler-config")
    sc = yaml.safe_load(cm["data"]["scheduler-config.yaml"])
    check("scheduler profile", [p["schedulerName"] for p in sc["profiles"]] ==
          ["tensor-fusion-scheduler"])
    ext = sc["extenders"][0]
    check("extender verbs", (ext["filterVerb"], ext["prioritizeVerb"], ext["bindVerb"]) ==
          ("filter", "prioritize", "bind"))
    check("extender nodeCacheCapable", ext["nodeCacheCapable"] is True)
    check("extender managed resources: vgpu and the 16 pod-index resources, all ignored by the "
          "scheduler", ext["managedResources"] ==
          [{"name": "tensor-fusion.ai/vgpu", "ignoredByScheduler": True}] +
          [{"name": "tensor-fusion.ai/index_%x" % k, "ignoredByScheduler": True}
           for k in range(16)], ext["managedResources"])
    check("extender url", ext["urlPrefix"] ==
          "https://tensor-fusion.tensor-fusion-sys.svc:9443/scheduler")
    cfg = yaml.safe_load(find(render("dynamicConfig.autoMigration.enable=true"), "ConfigMap",
                              "tensor-fusion-config")["data"]["config.yaml"])
    check("autoMigration values reach the controller config",
          cfg["autoMigration"]["enable"] is True and
          cfg["autoMigration"]["scope"]["includes"]["namespaceNames"] == [])
    ctl = find(render("webhook.certManager=true"), "Deployment", "tensor-fusion-controller")
    args = ctl["spec"]["template"]["spec"]["containers"][0]["args"]
    check("cert-manager mode mounts certs", "--cert-dir=/etc/tensor-fusion/certs" in args)
    rules = find(docs, "ClusterRole", "tensor-fusion-controller")["rules"]
    check("controller may evict pods and read budgets",
          any("pods/eviction" in r["resources"] and "create" in r["verbs"] for r in rules) and
          any("poddisruptionbudgets" in r["resources"] and "watch" in r["verbs"] for r in rules),
          rules)
    check("controller may list Events and make Secrets (the web console's actions page and "
          "token)",
          any("events" in r["resources"] and "list" in r["verbs"] for r in rules) and
          any("secrets" in r["resources"] and {"get", "create"} <= set(r["verbs"])
              for r in rules), rules)
    pcs = {d["metadata"]["name"]: d for d in docs if d["kind"] == "PriorityClass"}
    cfg = yaml.safe_load(find(docs, "ConfigMap", "tensor-fusion-config")["data"]["config.yaml"])
    check("QoS PriorityClasses rendered and named in the controller config",
          sorted(pcs) == ["tensor-fusion-critical", "tensor-fusion-high"] and
          cfg["priorityClassHigh"] == "tensor-fusion-high" and
          cfg["priorityClassCritical"] == "tensor-fusion-critical" and
          pcs["tensor-fusion-critical"]["value"] > pcs["tensor-fusion-high"]["value"] > 0 and
          not any(p["globalDefault"] for p in pcs.values()), (pcs, cfg))
    check("controller may read PriorityClasses",
          {("scheduling.k8s.io", "priorityclasses", v) for v in ("get", "list", "watch")} <=
          rules_of(docs, "tensor-fusion"))
    off = render("priorityClasses.enabled=false")
    cfg = yaml.safe_load(find(off, "ConfigMap", "tensor-fusion-config")["data"]["config.yaml"])
    check("PriorityClasses can be turned off",
          not any(d["kind"] == "PriorityClass" for d in off) and
          cfg["priorityClassHigh"] == cfg["priorityClassCritical"] == "", cfg)
    crds = load_crds()
    for kind in ("TensorFusionCluster", "GPUPool", "SchedulingConfigTemplate", "ProviderConfig"):
        obj = find(docs, kind)
        errs = validate(obj, crds[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        check("default %s validates" % kind, not errs, errs)
    check("PriorityClass values are integers (int32 in the API)",
          all(isinstance(p["value"], int) for p in pcs.values()), pcs)
    crds = [d for d in helm.template() if d.get("kind") == "CustomResourceDefinition"]
    check("helm installs the CRDs of crds/",
          {d["spec"]["names"]["kind"] for d in crds} >= set(load_crds()), len(crds))
    return docs


def container(docs, kind, name):
    return find(docs, kind, name)["spec"]["template"]["spec"]["containers"][0]


def env_of(c, name):
    return next((e for e in c.get("env", []) if e["name"] == name), None)


def test_metrics_and_alerts():
    """GreptimeDB (installed or existing) for every writer and reader; Alertmanager for the
    alert rules."""
    docs = render()
    gdb = find(docs, "StatefulSet", "greptimedb-standalone")
    check("GreptimeDB standalone in namespace greptimedb",
          gdb is not None and gdb["metadata"]["namespace"] == "greptimedb" and
          find(docs, "Service", "greptimedb-standalone") is not None)
    url = "http://greptimedb-standalone.greptimedb.svc.cluster.local:4000"
    ctl = container(docs, "Deployment", "tensor-fusion-controller")
    hv = container(docs, "DaemonSet", "tensor-fusion-hypervisor")
    for who, c in (("controller", ctl), ("hypervisor", hv)):
        check("%s gets GreptimeDB's URL" % who,
              env_of(c, "TF_GREPTIME_URL") == {"name": "TF_GREPTIME_URL", "value": url},
              c.get("env"))
    check("controller writes and reads GreptimeDB",
          "--metrics-url=$(TF_GREPTIME_URL)" in ctl["args"] and
          "--metrics-db=public" in ctl["args"] and
          "--metrics-interval-ms=60000" in ctl["args"], ctl["args"])
    check("hypervisors write to GreptimeDB's line-protocol endpoint",
          flag(hv["args"], "--metrics-sink") ==
          "$(TF_GREPTIME_URL)/v1/influxdb/api/v2/write?db=public&precision=ms" and
          flag(hv["args"], "--metrics-interval") == "5000", hv["args"])
    ext = render("greptime.installStandalone=false", "greptime.host=gt.example",
                 "greptime.user=u", "greptime.password=p@ss w", "greptime.isCloud=true")
    sec = find(ext, "Secret", "tensor-fusion-greptime")
    check("an existing GreptimeDB: nothing installed, credentials in a Secret",
          find(ext, "StatefulSet", "greptimedb-standalone") is None and sec is not None and
          sec["stringData"]["url"] == "https://u:p%40ss+w@gt.example:4000", sec)
    check("pods read the URL from the Secret",
          env_of(container(ext, "DaemonSet", "tensor-fusion-hypervisor"), "TF_GREPTIME_URL") ==
          {"name": "TF_GREPTIME_URL",
           "valueFrom": {"secretKeyRef": {"name": "tensor-fusion-greptime", "key": "url"}}})
    own = container(render("controller.metrics.url=http://mine:4000"), "Deployment",
                    "tensor-fusion-controller")
    check("controller.metrics.url wins",
          env_of(own, "TF_GREPTIME_URL")["value"] == "http://mine:4000")
    err = helm.template_error("greptime.port=4002")
    check("the MySQL port is refused with the reason", err is not None and "HTTP API" in err, err)
    # Alerts.
    am = find(docs, "StatefulSet", "alert-manager")
    check("Alertmanager installed", am is not None and
          find(docs, "Service", "alert-manager") is not None)
    check("controller evaluates alerts and posts to the chart's Alertmanager",
          "--enable-alert" in ctl["args"] and
          "--alertmanager-url=http://alert-manager.tensor-fusion-sys.svc:9093" in ctl["args"],
          ctl["args"])
    cfg = yaml.safe_load(find(docs, "ConfigMap", "tensor-fusion-config")["data"]["config.yaml"])
    names = [r["name"] for r in cfg.get("alertRules", [])]
    check("seed 002 alert rules in the controller config",
          {"IdleGPU", "EmptyGPU", "WorkerTFlopsThrottled", "PoolCapacityExhausted"} <= set(names)
          and all("{{ .Conditions }}" in r["query"] for r in cfg["alertRules"]), names)
    amcfg = find(docs, "ConfigMap", "alert-manager-config")["data"]["alertmanager.yml"]
    if shutil.which("amtool"):
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
            f.write(amcfg)
            f.flush()
            r = subprocess.run(["amtool", "check-config", f.name], capture_output=True,
                               text=True)
        check("amtool accepts the rendered Alertmanager configuration", r.returncode == 0,
              r.stdout + r.stderr)
    off = render("alert.enabled=false")
    c = container(off, "Deployment", "tensor-fusion-controller")
    check("alerts can be turned off", find(off, "StatefulSet", "alert-manager") is None and
          "--enable-alert" not in c["args"], c["args"])
    mine = render("alert.url=http://am.example:9093")
    c = container(mine, "Deployment", "tensor-fusion-controller")
    check("an existing Alertmanager", find(mine, "StatefulSet", "alert-manager") is None and
          "--alertmanager-url=http://am.example:9093" in c["args"], c["args"])
    pool = find(docs, "GPUPool", "tensor-fusion-cluster-default-pool")
    check("the default pool prices every QoS",
          {p["qos"] for p in pool["spec"]["qosConfig"]["pricing"]} ==
          {"low", "medium", "high", "critical"})


def test_lint():
    for sets in ((), ("webhook.certManager=true",), ("priorityClasses.enabled=false",),
                 ("hypervisor.devicePlugin.enabled=false", "webhook.failurePolicy=Ignore"),
                 ("greptime.installStandalone=false", "greptime.user=u", "greptime.password=p",
                  "alert.url=http://am:9093")):
        ok, out = helm.lint(*sets)
        check("helm lint --strict %s" % " ".join(sets), ok, out)


def test_kubectl_accepts_defaults(docs):
    if subprocess.run(["sh", "-c", "command -v kubectl"], capture_output=True).returncode:
        print("SKIP: kubectl not installed (default CRs not applied)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        pf = os.path.join(tmp, "port")
        fake = subprocess.Popen([sys.executable, os.path.join(SRC, "tests", "controller",
                                                              "fakeapi.py"),
                                 "--port", "0", "--port-file", pf], stdout=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(pf):
                    break
                time.sleep(0.02)
            port = open(pf).read().strip()
            path = os.path.join(tmp, "defaults.yaml")
            with open(path, "w") as f:
                yaml.safe_dump_all([find(docs, k) for k in ("TensorFusionCluster", "GPUPool",
                                                             "SchedulingConfigTemplate",
                                                             "ProviderConfig")], f)
            env = dict(os.environ, KUBECONFIG=os.path.join(tmp, "none"))
            r = subprocess.run(["kubectl", "--server=http://127.0.0.1:" + port,
                                "--cache-dir=" + os.path.join(tmp, "cache"), "apply",
                                "-f", path], capture_output=True, text=True,
                               env=env)
            check("kubectl applies the default CRs", r.returncode == 0 and
                  "tensorfusioncluster.tensor-fusion.ai/tensor-fusion-cluster created" in
                  r.stdout, r.stdout + r.stderr)
            r = subprocess.run(["kubectl", "--server=http://127.0.0.1:" + port,
                                "--cache-dir=" + os.path.join(tmp, "cache"), "get", "gpupool",
                                "tensor-fusion-cluster-default-pool", "-o",
                                "jsonpath={.spec.capacityConfig.oversubscription."
                                "tflopsOversellRatio}"], capture_output=True, text=True, env=env)
            check("default pool oversubscription", r.stdout == "500", r.stdout + r.stderr)
        finally:
            fake.terminate()
            fake.wait()


def main():
    test_lint()
    test_crds()
    test_metrics_and_alerts()
    docs = test_chart()
    test_kubectl_accepts_defaults(docs)
    print("helm chart: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
