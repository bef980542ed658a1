#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `tfctl plan compaction|defrag|autoscale` and `tfctl cron next` on the
# shipped example (examples/efficiency) and on states built here from Kubernetes objects:
# PodDisruptionBudget selectors, pods using GPUs outside TensorFusion, cordoned nodes, GPUNode
# phases and ages, the manual-compaction annotation, the local metrics database (--query),
# and invalid input (exit 2, the offending key on stderr, nothing on stdout).
import json
import os
import sqlite3
import subprocess
import tempfile
import unittest

import yaml

SRC = os.environ.get("TF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TF_BUILDDIR", os.path.join(SRC, "build", "test"))
TFCTL = os.path.join(BUILD, "src", "cli", "tfctl")
EX = os.path.join(SRC, "examples", "efficiency")
CLUSTER = os.path.join(EX, "cluster.yaml")
STATE = os.path.join(EX, "state.yaml")
GIB = 1 << 30


def tfctl(*args):
    p = subprocess.run([TFCTL, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def ok_json(*args):
    rc, out, err = tfctl(*args, "-o", "json")
    if rc != 0:
        raise AssertionError(f"tfctl {args} failed ({rc}): {err}")
    return json.loads(out)


def worker(name, node, gpu, ns="ml", labels=None, created="2024-04-30T12:00:00Z", vram="60Gi"):
    lab = {"app": "llm", "tensor-fusion.ai/enabled": "true"}
    lab.update(labels or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": lab,
                         "creationTimestamp": created,
                         "annotations": {"tensor-fusion.ai/tflops-request": "10",
                                         "tensor-fusion.ai/vram-request": vram,
                                         "tensor-fusion.ai/gpu-ids": gpu}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running"}}


def gpunode(name, phase="Running", created="2024-04-01T00:00:00Z"):
    return {"apiVersion": "tensor-fusion.ai/v1", "kind": "GPUNode",
            "metadata": {"name": name, "creationTimestamp": created}, "status": {"phase": phase}}


PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
       "metadata": {"name": "llm", "namespace": "ml"},
       "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llm"}}}}


class PlanCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, docs):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            if isinstance(docs, str):
                f.write(docs)
            else:
                yaml.safe_dump_all(docs, f)
        return path

    def base_state(self):
        docs = [worker("a", "n1", "GPU-n1-0"), worker("b1", "n2", "GPU-n2-0"),
                worker("b2", "n2", "GPU-n2-1"), worker("c1", "n3", "GPU-n3-0"),
                worker("c2", "n3", "GPU-n3-1"), worker("c3", "n3", "GPU-n3-2"), PDB]
        docs += [gpunode(n) for n in ("n1", "n2", "n3", "n4", "n5")]
        return docs

    # ---- compaction ----

    def test_example_releases_the_idle_node_and_keeps_the_labelled_one(self):
        got = ok_json("plan", "compaction", "--cluster", CLUSTER, "--state", STATE,
                      "--now", "2024-05-01T03:00:01Z")
        pool = got["pools"][0]
        self.assertEqual(pool["pool"], "inference")
        self.assertEqual(pool["release"], ["n4"])
        self.assertEqual(pool["action"], "label tensor-fusion.ai/should-delete=true")
        self.assertEqual(pool["period"], "30m")
        decisions = {n["node"]: n["decision"] for n in pool["nodes"]}
        self.assertEqual(decisions, {"n4": "Release", "n1": "HasWorkers", "n2": "HasWorkers",
                                     "n3": "HasWorkers", "n5": "DoNotDisrupt"})
        self.assertEqual(pool["manualCompaction"]["verdict"], "Trigger")
        self.assertEqual(pool["capacity"]["totalTflops"], "6240")
        self.assertEqual(pool["capacity"]["afterTotalVram"], "1280Gi")
        self.assertEqual(got["warnings"], [])

    def test_manual_compaction_older_than_three_seconds_is_ignored(self):
        got = ok_json("plan", "compaction", "--cluster", CLUSTER, "--state", STATE,
                      "--now", "2024-05-01T03:00:04Z")
        self.assertEqual(got["pools"][0]["manualCompaction"]["verdict"], "Stale")
        got = ok_json("plan", "compaction", "--cluster", CLUSTER, "--state", STATE,
                      "--now", "2024-05-01T03:00:01Z", "--last-manual", "2024-05-01T03:00:00Z")
        self.assertEqual(got["pools"][0]["manualCompaction"]["verdict"], "AlreadyHandled")

    def test_young_or_pending_gpunodes_are_not_released(self):
        docs = [gpunode("n1", created="2024-05-01T02:58:00Z"), gpunode("n2", phase="Pending"),
                gpunode("n3"), gpunode("n4"), gpunode("n5")]
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "compaction", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        d = {n["node"]: n for n in got["pools"][0]["nodes"]}
        self.assertEqual(d["n1"]["decision"], "TooYoung")
        self.assertIn("2m ago", d["n1"]["reason"])
        self.assertEqual(d["n2"]["decision"], "NotRunning")
        self.assertEqual(sorted(got["pools"][0]["release"]), ["n3", "n4"])

    def test_warm_resources_stop_compaction(self):
        with open(CLUSTER) as f:
            cl = yaml.safe_load(f)
        # Keep 4000 TFLOPS free: the pool has 6240 of which 1248 per node.
        cl["pools"][0]["capacityConfig"]["warmResources"]["tflops"] = "4000"
        cluster = self.write("c.yaml", [cl])
        got = ok_json("plan", "compaction", "--cluster", cluster, "--state", STATE,
                      "--now", "2024-05-01T03:00:01Z")
        pool = got["pools"][0]
        self.assertEqual(pool["release"], ["n4"])
        cl["pools"][0]["capacityConfig"]["warmResources"]["tflops"] = "5000"
        cluster = self.write("c.yaml", [cl])
        got = ok_json("plan", "compaction", "--cluster", cluster, "--state", STATE,
                      "--now", "2024-05-01T03:00:01Z")
        d = {n["node"]: n for n in got["pools"][0]["nodes"]}
        self.assertEqual(d["n4"]["decision"], "BelowWarmResources")
        self.assertIn("below warmResources.tflops 5000", d["n4"]["reason"])

    def test_without_gpunodes_every_node_is_assumed_running(self):
        state = self.write("s.yaml", [worker("a", "n1", "GPU-n1-0")])
        got = ok_json("plan", "compaction", "--cluster", CLUSTER, "--state", state)
        self.assertEqual(sorted(got["pools"][0]["release"]), ["n2", "n3", "n4"])

    def test_table_output(self):
        rc, out, err = tfctl("plan", "compaction", "--cluster", CLUSTER, "--state", STATE,
                             "--now", "2024-05-01T03:00:01Z")
        self.assertEqual(rc, 0, err)
        self.assertIn("pool inference: release 1 of 5 nodes", out)
        self.assertRegex(out, r"n5\s+DoNotDisrupt")

    # ---- defrag ----

    def test_example_defrag_evicts_the_lonely_worker(self):
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", STATE,
                      "--now", "2024-05-01T03:00:00Z")
        pool = got["pools"][0]
        self.assertTrue(pool["enabled"])
        self.assertEqual(pool["timezone"], "UTC")
        self.assertEqual(pool["nextRun"], "2024-05-02T03:00:00Z")
        self.assertEqual(pool["deadline"], "2024-05-01T05:00:00Z")
        self.assertEqual([e["reason"] for e in pool["events"]],
                         ["DefragStarted", "DefragPodEvicted", "DefragFinished"])
        self.assertEqual(pool["evictions"], [{"namespace": "ml", "name": "llm-a-0", "node": "n1",
                                              "simulatedTarget": "n3"}])

    def test_pod_without_pdb_skips_its_node(self):
        docs = self.base_state()
        docs[0]["metadata"]["labels"]["app"] = "other"  # pod a no longer matches the PDB
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        ev = got["pools"][0]["events"]
        self.assertEqual([e["reason"] for e in ev],
                         ["DefragStarted", "DefragSkipMissingPDB", "DefragFinished"])
        self.assertEqual(ev[1]["type"], "Warning")
        self.assertIn("pod ml/a is not covered by a PodDisruptionBudget", ev[1]["message"])

    def test_pdb_in_another_namespace_or_without_selector_covers_nothing(self):
        docs = self.base_state()
        docs[6] = dict(PDB, metadata={"name": "llm", "namespace": "other"})
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        self.assertEqual(got["pools"][0]["evictions"], [])
        docs[6] = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "x", "namespace": "ml"}, "spec": {"maxUnavailable": 1}}
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        self.assertEqual(got["pools"][0]["evictions"], [])
        # An empty selector covers the whole namespace.
        docs[6]["spec"]["selector"] = {}
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        self.assertEqual(len(got["pools"][0]["evictions"]), 1)

    def test_native_gpu_pod_and_cordon_skip_the_node(self):
        docs = self.base_state()
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "legacy", "namespace": "ml"},
                     "spec": {"nodeName": "n1", "containers": [
                         {"name": "c", "image": "x",
                          "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
                     "status": {"phase": "Running"}})
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        d = {n["node"]: n for n in got["pools"][0]["nodes"]}
        self.assertEqual(d["n1"]["status"], "ForeignGPUPod")
        self.assertIn("pod ml/legacy uses GPUs outside TensorFusion", d["n1"]["reason"])
        docs = self.base_state()
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                     "spec": {"unschedulable": True}})
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        d = {n["node"]: n for n in got["pools"][0]["nodes"]}
        self.assertEqual(d["n1"]["status"], "Unschedulable")

    def test_max_duration_and_young_workers(self):
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", STATE,
                      "--now", "2024-05-01T05:00:00Z", "--started", "2024-05-01T03:00:00Z")
        pool = got["pools"][0]
        self.assertEqual([e["reason"] for e in pool["events"]], ["DefragFinished"])
        self.assertIn("maxDuration 2h reached", pool["events"][0]["message"])
        docs = self.base_state()
        docs[0]["metadata"]["creationTimestamp"] = "2024-05-01T02:00:00Z"
        state = self.write("s.yaml", docs)
        got = ok_json("plan", "defrag", "--cluster", CLUSTER, "--state", state,
                      "--now", "2024-05-01T03:00:00Z")
        d = {n["node"]: n for n in got["pools"][0]["nodes"]}
        self.assertEqual(d["n1"]["status"], "YoungWorker")

    def test_unknown_timezone_is_an_input_error(self):
        with open(CLUSTER) as f:
            cl = yaml.safe_load(f)
        cl["pools"][0]["nodeManagerConfig"]["nodeCompaction"]["defrag"]["timezone"] = "Mars/Base"
        cluster = self.write("c.yaml", [cl])
        rc, out, err = tfctl("plan", "defrag", "--cluster", cluster, "--state", STATE)
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("pool inference: defrag.timezone: \"Mars/Base\": unknown time zone", err)
        del cl["pools"][0]["nodeManagerConfig"]["nodeCompaction"]["defrag"]["timezone"]
        cluster = self.write("c.yaml", [cl])
        rc, out, err = tfctl("plan", "defrag", "--cluster", cluster, "--state", STATE)
        self.assertEqual(rc, 0, err)  # no timezone: UTC, as upstream's controller

    def test_bad_usage(self):
        for args, needle in [(["plan"], "usage"), (["plan", "shrink"], "unknown planner"),
                             (["plan", "compaction"], "--cluster is required"),
                             (["plan", "compaction", "--cluster", CLUSTER, "--now", "today"],
                              "--now"),
                             (["plan", "defrag", "--cluster", CLUSTER, "--pool", "x"],
                              "no such pool"),
                             (["plan", "compaction", "--cluster", "/nonexistent.yaml"],
                              "No such file")]:
            rc, out, err = tfctl(*args)
            self.assertEqual(rc, 2, args)
            self.assertEqual(out, "")
            self.assertIn(needle, err)

    # ---- autoscale ----

    def usage_csv(self, tflops=5.0, vram=3 * GIB, n=120, start=1714546800000):
        lines = ["greptime_timestamp,compute_tflops,memory_bytes"]
        lines += [f"{start + i * 60000},{tflops},{vram}" for i in range(n)]
        return self.write("usage.csv", "\n".join(lines) + "\n")

    def test_autoscale_from_csv_recommends_lower_requests(self):
        got = ok_json("plan", "autoscale", "--usage", self.usage_csv(), "--requests", "20,8Gi",
                      "--limits", "40,16Gi", "--enable", "--now", "2024-05-01T09:00:00Z")
        self.assertTrue(got["changed"])
        self.assertEqual(got["source"], "percentile")
        rec = got["recommendation"]
        self.assertLess(float(rec["requests"]["tflops"]), 6.1)
        self.assertGreater(float(rec["requests"]["tflops"]), 5.7)
        self.assertEqual(rec["limits"]["tflops"], "40")
        self.assertTrue(rec["requests"]["vram"].endswith("Mi"))
        self.assertEqual(got["estimates"]["compute"]["samples"], 120)
        # Disabled (no --enable, no annotation): nothing changes.
        got = ok_json("plan", "autoscale", "--usage", self.usage_csv(), "--requests", "20,8Gi",
                      "--limits", "40,16Gi", "--now", "2024-05-01T09:00:00Z")
        self.assertFalse(got["changed"])

    def test_autoscale_reads_the_workload_and_pool_rules(self):
        wl = self.write("w.yaml", [{
            "apiVersion": "tensor-fusion.ai/v1", "kind": "TensorFusionWorkload",
            "metadata": {"name": "llm", "namespace": "ml", "labels": {"app": "infer"},
                         "creationTimestamp": "2024-05-01T08:50:00Z"},
            "spec": {"resources": {"requests": {"tflops": "20", "vram": "8Gi"},
                                   "limits": {"tflops": "40", "vram": "16Gi"}},
                     "autoScalingConfig": {"autoSetResources": {"targetResource": "vram"}}}}])
        rules = self.write("r.yaml", [{
            "apiVersion": "tensor-fusion.ai/v1", "kind": "SchedulingConfigTemplate",
            "metadata": {"name": "t"},
            "spec": {"placement": {"mode": "CompactFirst"}, "verticalScalingRules": [
                {"name": "inference", "selector": {"matchLabels": {"app": "infer"}},
                 "autoScaling": {"autoSetResources": {"enable": True,
                                                      "initialDelayPeriod": "5m"}}}]}}])
        got = ok_json("plan", "autoscale", "--usage", self.usage_csv(), "--workload", wl,
                      "--rules", rules, "--now", "2024-05-01T09:00:00Z")
        self.assertEqual(got["workload"], "llm")
        self.assertEqual(got["matchedRule"], "inference")
        self.assertTrue(got["changed"])
        self.assertEqual(got["recommendation"]["requests"]["tflops"], "20")  # vram only
        # Created 10 minutes ago, the rule's initialDelayPeriod 5m has passed; the default
        # 30m would not have.
        got = ok_json("plan", "autoscale", "--usage", self.usage_csv(), "--workload", wl,
                      "--now", "2024-05-01T09:00:00Z", "--enable")
        self.assertFalse(got["changed"])
        self.assertIn("initialDelayPeriod 30m", got["reason"])

    def test_autoscale_queries_the_local_metrics_database(self):
        db = os.path.join(self.tmp.name, "metrics.db")
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE tf_worker_usage (greptime_timestamp TIMESTAMP_MS, node TEXT, "
                    "pool TEXT, uuid TEXT, worker TEXT, namespace TEXT, workload TEXT, "
                    "compute_percentage REAL, compute_tflops REAL, memory_bytes INTEGER, "
                    "memory_percentage REAL)")
        con.execute("CREATE TABLE tf_worker_resources (greptime_timestamp TIMESTAMP_MS, "
                    "worker TEXT, workload TEXT, pool TEXT, namespace TEXT, qos TEXT, "
                    "tflops_request REAL, tflops_limit REAL, vram_bytes_request REAL, "
                    "vram_bytes_limit REAL, gpu_count INTEGER, raw_cost REAL, ready INTEGER)")
        t0 = 1714546800000
        for i in range(120):
            con.execute("INSERT INTO tf_worker_usage (greptime_timestamp, workload, "
                        "compute_tflops, memory_bytes) VALUES (?, ?, ?, ?)",
                        (t0 + i * 60000, "it's-mine", 60.0, 12 * GIB))
            con.execute("INSERT INTO tf_worker_usage (greptime_timestamp, workload, "
                        "compute_tflops, memory_bytes) VALUES (?, ?, ?, ?)",
                        (t0 + i * 60000, "other", 1.0, GIB))
        con.execute("INSERT INTO tf_worker_resources (greptime_timestamp, workload, "
                    "tflops_request, tflops_limit, vram_bytes_request, vram_bytes_limit) VALUES "
                    "(?, ?, 20, 40, ?, ?)", (t0, "it's-mine", 8 * GIB, 16 * GIB))
        con.commit()
        con.close()
        got = ok_json("plan", "autoscale", "--query", "it's-mine", "--db", db, "--enable",
                      "--now", "2024-05-01T09:00:00Z")
        self.assertEqual(got["current"]["requests"], {"tflops": "20", "vram": "8Gi"})
        self.assertEqual(got["estimates"]["compute"]["samples"], 120)
        self.assertGreater(float(got["recommendation"]["requests"]["tflops"]), 60)

    def test_autoscale_bad_input(self):
        bad = self.write("bad.csv", "greptime_timestamp,compute_tflops\n1714546800000,lots\n")
        rc, out, err = tfctl("plan", "autoscale", "--usage", bad, "--requests", "20,8Gi")
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("line 2: compute_tflops \"lots\"", err)
        rc, out, err = tfctl("plan", "autoscale", "--usage", self.usage_csv())
        self.assertEqual(rc, 2)
        self.assertIn("requests are unknown", err)
        rc, out, err = tfctl("plan", "autoscale", "--usage", self.usage_csv(), "--query", "x")
        self.assertEqual(rc, 2)
        rc, out, err = tfctl("plan", "autoscale", "--usage", self.usage_csv(),
                             "--requests", "20")
        self.assertEqual(rc, 2)
        self.assertIn("want TFLOPS,VRAM", err)

    # ---- cron ----

    def test_cron_next_in_a_zone(self):
        got = ok_json("cron", "next", "0 3 * * *", "--timezone", "Asia/Shanghai", "-n", "2",
                      "--after", "2024-05-01T00:00:00Z")
        self.assertEqual(got, [
            {"local": "2024-05-02T03:00:00+08:00", "utc": "2024-05-01T19:00:00Z",
             "abbreviation": "CST"},
            {"local": "2024-05-03T03:00:00+08:00", "utc": "2024-05-02T19:00:00Z",
             "abbreviation": "CST"}])
        rc, out, err = tfctl("cron", "next", "30 2 * * *", "--timezone", "America/New_York",
                             "-n", "1", "--after", "2024-03-10T00:00:00Z")
        self.assertEqual(rc, 0, err)
        self.assertIn("2024-03-10T03:00:00-04:00", out)

    def test_cron_requires_a_timezone_and_rejects_tz_prefixes(self):
        rc, out, err = tfctl("cron", "next", "0 3 * * *")
        self.assertEqual(rc, 2)
        self.assertIn("--timezone is required", err)
        rc, out, err = tfctl("cron", "next", "TZ=UTC 0 3 * * *", "--timezone", "UTC")
        self.assertEqual(rc, 2)
        self.assertIn("remove the TZ= prefix", err)
        rc, out, err = tfctl("cron", "next", "0 3 * * *", "--timezone", "Asia/Shangai")
        self.assertEqual(rc, 2)
        self.assertIn("unknown time zone", err)
        self.assertEqual(out, "")


if __name__ == "__main__":
    unittest.main()
