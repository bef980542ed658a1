#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `tfctl simulate` on the shipped example clusters and pod streams: the
# -o json contract, placements and reasons, deletions, --placement, --preempt, profiles,
# replicas, invalid documents (refused with their reason, the rest simulated, exit 3) and
# unusable files (exit 2, the offending path on stderr, nothing on stdout).
# Run by meson test (TF_SRCDIR, TF_BUILDDIR set).
import json
import os
import subprocess
import tempfile
import textwrap
import unittest

SRC = os.environ.get("TF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TF_BUILDDIR", os.path.join(SRC, "build", "test"))
TFCTL = os.path.join(BUILD, "src", "cli", "tfctl")
EX = os.path.join(SRC, "examples")
GIB = 1 << 30


def tfctl(*args):
    p = subprocess.run([TFCTL, "simulate", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def simulate(cluster, pods, *extra):
    rc, out, err = tfctl("--cluster", cluster, "--pods", pods, "-o", "json", *extra)
    if rc != 0:
        raise AssertionError(f"simulate {cluster} {pods} {extra} failed ({rc}): {err}")
    return json.loads(out)


def ex(*parts):
    return os.path.join(EX, *parts)


def tmpfile(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(textwrap.dedent(text))
    f.close()
    return f.name


def pod(name, ns="default", **ann):
    """A TensorFusion Pod manifest with the given tensor-fusion.ai/* annotations."""
    annotations = "".join(f"    tensor-fusion.ai/{k.replace('_', '-')}: \"{v}\"\n"
                          for k, v in ann.items())
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels: {{tensor-fusion.ai/enabled: \"true\"}}\n  annotations:\n{annotations}"
            if ann else
            f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {ns}\n"
            f"  labels: {{tensor-fusion.ai/enabled: \"true\"}}\n")


SMALL = tmpfile("""\
    pools:
      - name: p
        placement: CompactFirst
        nodes:
          - name: n1
            gpus: [{model: L4, count: 2}]
          - name: n2
            gpus: [{model: L4, count: 2}]
    """)

GPU_KEYS = {"uuid", "node", "model", "capacityTflops", "availableTflops", "capacityVramBytes",
            "availableVramBytes", "isolation", "workloads"}


class Contract(unittest.TestCase):
    def test_mixed_example_decisions_follow_the_json_contract(self):
        d = simulate(ex("clusters", "mixed-pool.yaml"), ex("pods", "mixed-stream.yaml"))
        self.assertEqual(set(d), {"decisions", "gpus", "nodes"})
        by_pod = {x["pod"]: x for x in d["decisions"]}
        for x in d["decisions"]:
            if x["node"] is None:
                self.assertEqual(set(x), {"pod", "node", "reasons"})
                self.assertTrue(x["reasons"])
            else:
                self.assertEqual(set(x), {"pod", "node", "gpus"})
        self.assertEqual(by_pod["inference/chat-0"],
                         {"pod": "inference/chat-0", "node": "l4-1", "gpus": ["GPU-l4-1-0"]})
        train = by_pod["research/llm-train"]
        self.assertEqual(train["node"], "a100-1")
        self.assertEqual(len(train["gpus"]), 8)
        self.assertEqual(by_pod["research/pipeline"]["gpus"], ["GPU-h100-1-2", "GPU-h100-1-3"])
        self.assertEqual([by_pod[f"inference/embed-{i}"]["node"] for i in range(3)],
                         ["l4-1"] * 3)
        whale = by_pod["research/whale"]
        self.assertIsNone(whale["node"])
        self.assertEqual(len(whale["reasons"]), 5)  # one per node
        self.assertIn("node a100-2: gpu 8/8 available, insufficient VRAM: need 200Gi, "
                      "max free 80Gi", whale["reasons"])
        self.assertIn("node a100-1: gpu 8/8 eligible, none compatible with isolation soft "
                      "(GPUs in use as shared)", whale["reasons"])

    def test_gpus_report_capacity_availability_isolation_and_workloads(self):
        d = simulate(ex("clusters", "mixed-pool.yaml"), ex("pods", "mixed-stream.yaml"))
        gpus = {g["uuid"]: g for g in d["gpus"]}
        self.assertEqual(len(gpus), 24)
        for g in d["gpus"]:
            self.assertEqual(set(g), GPU_KEYS)
            self.assertGreaterEqual(g["availableTflops"], 0)
            self.assertLessEqual(g["availableVramBytes"], g["capacityVramBytes"])
            self.assertEqual(g["isolation"] is None, not g["workloads"])
        nb = gpus["GPU-h100-1-0"]
        self.assertEqual((nb["capacityTflops"], nb["availableTflops"]), (989, 494.5))
        self.assertEqual(nb["availableVramBytes"], 60 * GIB)
        self.assertEqual(gpus["GPU-h100-1-1"]["isolation"], "hard")
        self.assertEqual(gpus["GPU-a100-1-0"]["isolation"], "shared")
        self.assertEqual(gpus["GPU-a100-1-0"]["availableVramBytes"], 0)
        # chat-0 was deleted; chat-2 took its place; workloads are in arrival order.
        self.assertEqual(gpus["GPU-l4-1-0"]["workloads"],
                         ["inference/chat-1", "inference/embed-0", "inference/embed-1",
                          "inference/chat-2"])
        # Every placed, undeleted pod appears on exactly its GPUs.
        held = {}
        for g in d["gpus"]:
            for w in g["workloads"]:
                held.setdefault(w, []).append(g["uuid"])
        for x in d["decisions"]:
            if x["node"] and x["pod"] != "inference/chat-0":
                self.assertEqual(sorted(held[x["pod"]]), sorted(x["gpus"]))
        self.assertNotIn("inference/chat-0", held)
        nodes = {n["name"]: n for n in d["nodes"]}
        self.assertEqual(nodes["h100-1"]["workers"], 3)
        self.assertEqual(nodes["a100-2"]["availableVramBytes"], 8 * 80 * GIB)


class Behaviour(unittest.TestCase):
    def test_placement_override_spreads_or_packs(self):
        pods = tmpfile("---\n".join(pod(f"p{i}", tflops_request=10, vram_request="4Gi")
                                    for i in range(3)))
        packed = simulate(SMALL, pods)
        self.assertEqual({x["gpus"][0] for x in packed["decisions"]}, {"GPU-n1-0"})
        spread = simulate(SMALL, pods, "--placement", "LowLoadFirst")
        self.assertEqual([x["gpus"][0] for x in spread["decisions"]],
                         ["GPU-n1-0", "GPU-n2-0", "GPU-n1-1"])
        node = simulate(SMALL, pods, "--placement", "NodeCompactGPULowLoad")
        self.assertEqual([x["gpus"][0] for x in node["decisions"]],
                         ["GPU-n1-0", "GPU-n1-1", "GPU-n1-0"])

    def test_mig_example_carves_partitions_under_the_static_policy(self):
        d = simulate(ex("clusters", "mig-pool.yaml"), ex("pods", "mig-stream.yaml"))
        by_pod = {x["pod"]: x for x in d["decisions"]}
        self.assertEqual(by_pod["default/mig-small"]["node"], "mig-h100")
        self.assertEqual(by_pod["default/hard-tenant"]["node"], "hard-l40s")
        self.assertEqual(by_pod["default/soft-tenant"]["node"], "soft-l4")
        self.assertIn("node soft-l4: node isolation mode is soft, the pod needs partitioned",
                      by_pod["default/mig-full"]["reasons"])
        gpus = {g["uuid"]: g for g in d["gpus"]}
        # 1g.10gb + 3g.40gb of an H100: 989 x 4/7 TFLOPS and 50Gi reserved.
        self.assertEqual(gpus["GPU-mig-h100-0"]["availableVramBytes"], 30 * GIB)
        self.assertEqual(gpus["GPU-mig-h100-0"]["isolation"], "partitioned")
        # The site profile has no 2g: 6Gi needs the 3g.20gb.
        self.assertEqual(gpus["GPU-mig-a100-0"]["availableVramBytes"], 20 * GIB)

    def test_quota_percent_bypass_defaults_and_preemption(self):
        d = simulate(ex("clusters", "multi-pool.yaml"), ex("pods", "multi-pool-stream.yaml"),
                     "--preempt")
        by_pod = {x["pod"]: x for x in d["decisions"]}
        self.assertEqual(by_pod["team-a/over-quota"]["reasons"],
                         ["namespace team-a: quota total.requests.tflops exceeded: used 320 + "
                          "asked 100 > 400"])
        self.assertIsNotNone(by_pod["team-a/by-percent"]["node"])
        gpus = {g["uuid"]: g for g in d["gpus"]}
        dflt = gpus[by_pod["team-a/defaults"]["gpus"][0]]
        self.assertEqual(dflt["capacityVramBytes"] - dflt["availableVramBytes"], 4 * GIB)
        urgent = by_pod["team-c/urgent"]
        self.assertEqual(urgent["node"], "infer-3")
        self.assertEqual(len(urgent["preempted"]), 2)
        for v in urgent["preempted"]:
            self.assertTrue(v.startswith("team-b/batch-"))
            self.assertFalse(any(v in g["workloads"] for g in d["gpus"]))
        # Without --preempt the contract stays exact and the pod waits.
        d = simulate(ex("clusters", "multi-pool.yaml"), ex("pods", "multi-pool-stream.yaml"))
        self.assertFalse(any("preempted" in x for x in d["decisions"]))
        self.assertIsNone({x["pod"]: x for x in d["decisions"]}["team-c/urgent"]["node"])

    def test_delete_frees_a_pod_or_a_controllers_replicas(self):
        stream = tmpfile(textwrap.dedent("""\
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              replicas: 3
              template:
                metadata:
                  labels: {tensor-fusion.ai/enabled: "true"}
                  annotations: {tensor-fusion.ai/vram-request: 20Gi, tensor-fusion.ai/tflops-request: "1"}
                spec: {}
            ---
            kind: Delete
            metadata: {name: web}
            ---
            """) + pod("after", vram_request="20Gi", tflops_request="1"))
        d = simulate(SMALL, stream)
        self.assertEqual([x["pod"] for x in d["decisions"]],
                         ["default/web-0", "default/web-1", "default/web-2", "default/after"])
        held = [w for g in d["gpus"] for w in g["workloads"]]
        self.assertEqual(held, ["default/after"])

    def test_enabled_replicas_and_opted_out_pods(self):
        stream = tmpfile("""\
            apiVersion: apps/v1
            kind: StatefulSet
            metadata: {name: db}
            spec:
              replicas: 4
              template:
                metadata:
                  labels: {tensor-fusion.ai/enabled: "true"}
                  annotations: {tensor-fusion.ai/enabled-replicas: "2", tensor-fusion.ai/tflops-request: "1", tensor-fusion.ai/vram-request: 1Gi}
                spec: {}
            ---
            apiVersion: v1
            kind: Pod
            metadata: {name: plain, labels: {tensor-fusion.ai/enabled: "false"}}
            """)
        rc, out, err = tfctl("--cluster", SMALL, "--pods", stream, "-o", "json")
        self.assertEqual(rc, 0, err)
        d = json.loads(out)
        self.assertEqual([x["pod"] for x in d["decisions"]], ["default/db-0", "default/db-1"])
        self.assertIn("default/plain is not a TensorFusion pod", err)

    def test_workload_profiles_in_the_stream_are_applied(self):
        stream = tmpfile(textwrap.dedent("""\
            apiVersion: tensor-fusion.ai/v1
            kind: WorkloadProfile
            metadata: {name: big, namespace: default}
            spec:
              resources:
                requests: {tflops: "100", vram: 20Gi}
                limits: {tflops: "100", vram: 20Gi}
            ---
            """) + pod("uses", workload_profile="big"))
        d = simulate(SMALL, stream)
        g = {g["uuid"]: g for g in d["gpus"]}[d["decisions"][0]["gpus"][0]]
        self.assertEqual(g["capacityVramBytes"] - g["availableVramBytes"], 20 * GIB)
        self.assertEqual(g["availableTflops"], 21)
        missing = tmpfile(pod("uses", workload_profile="nope"))
        rc, out, err = tfctl("--cluster", SMALL, "--pods", missing, "-o", "json")
        self.assertEqual(rc, 3)
        self.assertIn("WorkloadProfile default/nope not found", err)
        self.assertIn("WorkloadProfile default/nope not found",
                      json.loads(out)["decisions"][0]["refused"])

    def test_table_output_lists_decisions_gpus_and_nodes(self):
        rc, out, err = tfctl("--cluster", ex("clusters", "mixed-pool.yaml"), "--pods",
                             ex("pods", "mixed-stream.yaml"))
        self.assertEqual(rc, 0, err)
        self.assertIn("research/whale", out)
        self.assertIn("unschedulable", out)
        self.assertIn("    node l4-1: gpu 2/2 available, insufficient VRAM", out)
        self.assertIn("10 of 11 pods placed", out)
        self.assertRegex(out, r"GPU-h100-1-1 +h100-1 +H100 +889/989 +64Gi/80Gi +hard")
        self.assertRegex(out, r"\nh100-1 +default +4 +3 ")


class InvalidInput(unittest.TestCase):
    def expect_2(self, cluster, pods, needle, *extra):
        rc, out, err = tfctl("--cluster", cluster, "--pods", pods, *extra)
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertIn(needle, err)

    def test_bad_cluster_yaml_names_the_path(self):
        bad = tmpfile("""\
            pools:
              - name: p
                nodes:
                  - name: n
                    gpus: [{model: L4}, {model: A1000}]
            """)
        self.expect_2(bad, tmpfile(pod("x")),
                      f"{bad}: pools[0].nodes[0].gpus[1].model: unknown GPU model \"A1000\"")
        self.expect_2(tmpfile("pools:\n- name: p\n  nodes: []\n  extra: 1\n"), tmpfile(pod("x")),
                      "pools[0].extra: unknown key")
        self.expect_2(tmpfile("pools: [\"unclosed\n"), tmpfile(pod("x")), "line")

    def refused(self, pods, *extra):
        """Simulates PODS on SMALL expecting exit 3: returns (decisions by pod, stderr)."""
        rc, out, err = tfctl("--cluster", SMALL, "--pods", pods, "-o", "json", *extra)
        self.assertEqual(rc, 3, err)
        return {d["pod"]: d for d in json.loads(out)["decisions"]}, err

    def test_bad_pods_are_refused_with_the_spec_parsers_message(self):
        cases = [
            (pod("x", vram_limit="4Gb"), "default/x",
             "document 0: tensor-fusion.ai/vram-limit: \"4Gb\" is not a valid quantity"),
            (pod("x", tflops_request="20", gpu_indices="1,1"), "default/x",
             "document 0: tensor-fusion.ai/gpu-indices"),
            ("kind: Service\nmetadata: {name: s}\n", "default/s",
             "document 0: kind: \"Service\" is not a pod"),
            ("kind: Delete\nmetadata: {}\n", "document 0",
             "document 0: metadata.name: required for kind Delete"),
        ]
        for text, key, needle in cases:
            pods = tmpfile(text)
            by_pod, err = self.refused(pods)
            self.assertIn(f"{pods}: {needle}", err)
            d = by_pod[key]
            self.assertEqual(set(d), {"pod", "document", "node", "refused"})
            self.assertIsNone(d["node"])
            self.assertEqual(d["document"], 0)
            self.assertIn(needle, d["refused"])
        by_pod, err = self.refused(tmpfile(pod("x", tflops_request=1) + "---\n" +
                                           pod("x", tflops_request=1)))
        self.assertIn("document 1: pod default/x arrives again without a Delete", err)
        self.assertEqual(by_pod["default/x"]["node"], None)  # the refusal came last

    def test_one_invalid_pod_is_refused_and_the_rest_of_the_stream_is_simulated(self):
        stream = tmpfile(pod("a", tflops_request=10, vram_request="4Gi") + "---\n" +
                         pod("bad", vram_request="lots") + "---\n" +
                         pod("b", tflops_request=10, vram_request="4Gi") + "---\n" +
                         "kind: Delete\nmetadata: {name: a, namespace: default}\n---\n" +
                         pod("c", tflops_request=10, vram_request="4Gi"))
        by_pod, err = self.refused(stream)
        self.assertIn("document 1: tensor-fusion.ai/vram-request: \"lots\"", err)
        self.assertIn("vram-request", by_pod["default/bad"]["refused"])
        for ok in ("default/a", "default/b", "default/c"):
            self.assertIsNotNone(by_pod[ok]["node"], ok)
        rc, out, err = tfctl("--cluster", SMALL, "--pods", stream)
        self.assertEqual(rc, 3)
        self.assertIn("default/bad", out)
        self.assertIn("refused", out)
        self.assertIn("3 of 3 pods placed, 2 holding GPUs now; 1 document refused", out)

    def test_bad_usage(self):
        rc, out, err = tfctl("--cluster", SMALL)
        self.assertEqual(rc, 2)
        self.assertIn("usage: tfctl simulate", err)
        self.expect_2(SMALL, tmpfile(pod("x")), "--placement: unknown mode \"Spread\"",
                      "--placement", "Spread")
        self.expect_2(SMALL, "/nonexistent/pods.yaml", "No such file or directory")
        rc, out, err = tfctl("--cluster", SMALL, "--pods", tmpfile(pod("x")), "-o", "xml")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
