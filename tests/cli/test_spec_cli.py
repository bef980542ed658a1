#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# End-to-end tests of `tfctl spec` on the shipped examples: the -o json contract, the merge
# with --profile, multi-document input, -o yaml/table, and invalid input (exit 2, the key on
# stderr, nothing on stdout). Run by meson test (TF_SRCDIR, TF_BUILDDIR set).
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

SRC = os.environ.get("TF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TF_BUILDDIR", os.path.join(SRC, "build", "test"))
TFCTL = os.path.join(BUILD, "src", "cli", "tfctl")
EX = os.path.join(SRC, "examples")


def tfctl(*args, stdin=None):
    p = subprocess.run([TFCTL, *args], input=stdin, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def spec_json(*args):
    rc, out, err = tfctl("spec", *args, "-o", "json")
    if rc != 0:
        raise AssertionError(f"tfctl spec {args} failed ({rc}): {err}")
    return json.loads(out)


GIB = 1 << 30

SEED_001 = {
    "name": None, "namespace": None, "enabled": True, "poolName": None,
    "isolation": "soft", "qos": "medium", "isLocalGPU": True, "gpuCount": 1,
    "requests": {"tflops": 10, "computePercent": None, "vramBytes": 4 * GIB},
    "limits": {"tflops": 20, "computePercent": None, "vramBytes": 4 * GIB},
    "gpuModel": None, "vendor": None, "gpuIndices": [], "dedicatedGPU": False,
    "workloadProfile": "default-profile", "workload": None, "enabledReplicas": None,
    "autoscale": {"enabled": False, "target": None}, "standaloneWorkerMode": None,
    "disableFeatures": [], "containers": {"python": 1},
    "warnings": ["tensor-fusion.ai/workload-profile: WorkloadProfile \"default-profile\" is "
                 "not in the given files (--profile or -f): not applied"],
    "kind": "Deployment", "optedOut": False, "autoMigrated": False, "wholeGPU": False,
    "injectContainers": ["python"], "migratedContainers": [], "containerGPUs": None,
    "gang": None,
}


class SpecCli(unittest.TestCase):
    def test_seed_001_deployment_prints_the_expected_spec(self):
        got = spec_json("-f", os.path.join(EX, "seed-001-deployment.yaml"))
        self.assertEqual(got, [SEED_001])
        # The keys come first, in the documented order.
        self.assertEqual(list(got[0])[:8], ["name", "namespace", "enabled", "poolName",
                                            "isolation", "qos", "isLocalGPU", "gpuCount"])

    def test_seed_profile_fills_what_the_annotations_leave_out(self):
        got = spec_json("-f", os.path.join(EX, "seed-001-deployment.yaml"),
                        "--profile", os.path.join(EX, "seed-001-workloadprofile.yaml"))[0]
        self.assertEqual(got["requests"]["tflops"], 10)  # annotation wins over the profile's 5
        self.assertEqual(got["limits"]["vramBytes"], 4 * GIB)  # not the profile's 3Gi
        self.assertEqual(got["poolName"], "default-pool")
        self.assertEqual(got["gpuModel"], "A100")
        self.assertEqual(got["vendor"], "NVIDIA")
        self.assertTrue(any("example-workload-profile" in w for w in got["warnings"]))

    def test_profile_in_the_same_file_is_matched_by_name(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\n"
                    "metadata: {name: small}\nspec:\n  resources:\n"
                    "    limits: {tflops: '7', vram: 1Gi}\n  qos: low\n---\n"
                    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
                    "  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                    "  annotations: {tensor-fusion.ai/workload-profile: small}\n"
                    "spec: {containers: [{name: c}]}\n")
        try:
            got = spec_json("-f", f.name)
        finally:
            os.unlink(f.name)
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0]["limits"], {"tflops": 7, "computePercent": None,
                                            "vramBytes": GIB})
        self.assertEqual(got[0]["requests"]["tflops"], 7)
        self.assertEqual(got[0]["qos"], "low")
        self.assertEqual(got[0]["warnings"], [])

    def test_multi_document_file_gives_one_entry_per_pod_template(self):
        docs = ""
        for name in ["seed-004-migration.yaml", "pod.yaml", "job.yaml"]:
            with open(os.path.join(EX, name)) as f:
                docs += f.read() + "\n---\n"
        docs += "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\n"
        rc, out, err = tfctl("spec", "-f", "-", "-o", "json", stdin=docs)
        self.assertEqual(rc, 0, err)
        got = json.loads(out)
        self.assertEqual([g["name"] for g in got], ["recommender", "notebook", "train-resnet"])
        self.assertIn("Service", err)  # skipped, and said so
        mig = got[0]
        self.assertEqual(mig["isolation"], "shared")
        self.assertTrue(mig["wholeGPU"])
        self.assertEqual(mig["gpuCount"], 1)
        self.assertEqual(mig["containers"], {"app": 1})
        self.assertEqual(mig["migratedContainers"], ["app"])
        self.assertEqual(mig["enabledReplicas"], 1)
        self.assertEqual(mig["limits"]["computePercent"], 100)
        pod = got[1]
        self.assertEqual(pod["limits"]["tflops"], 60.5)  # 50 % of an L4 (121)
        self.assertEqual(pod["limits"]["computePercent"], 50)
        self.assertEqual(pod["namespace"], "ml-team-a")
        job = got[2]
        self.assertTrue(job["dedicatedGPU"])
        self.assertEqual(job["requests"]["tflops"], 312)
        self.assertEqual(job["disableFeatures"], ["gpu-opt", "mem-manager"])
        self.assertTrue(job["standaloneWorkerMode"])

    def test_every_example_is_accepted(self):
        for name in sorted(os.listdir(EX)):
            if not name.endswith(".yaml") or "workloadprofile" in name:
                continue
            got = spec_json("-f", os.path.join(EX, name))
            self.assertGreaterEqual(len(got), 1, name)
            self.assertTrue(all(g["enabled"] for g in got), name)

    def test_multi_container_example_counts_gpus_per_container(self):
        got = spec_json("-f", os.path.join(EX, "multi-container-pod.yaml"))[0]
        self.assertEqual(got["containers"], {"encoder": 1, "decoder": 2})
        self.assertEqual(got["gpuCount"], 3)

    def test_invalid_examples_exit_2_naming_the_key_with_nothing_on_stdout(self):
        expect = {
            "bad-vram.yaml": ["tensor-fusion.ai/vram-limit", "4GB"],
            "gpu-count-too-large.yaml": ["tensor-fusion.ai/gpu-count", "200"],
            "soft-isolation-without-limiter.yaml": ["soft isolation", "AMD"],
            "dedicated-without-model.yaml": ["tensor-fusion.ai/dedicated-gpu",
                                             "tensor-fusion.ai/gpu-model"],
            "bad-isolation.yaml": ["tensor-fusion.ai/isolation", "strict"],
            "duplicate-gpu-indices.yaml": ["tensor-fusion.ai/gpu-indices", "twice"],
        }
        shipped = sorted(os.listdir(os.path.join(EX, "invalid")))
        self.assertEqual(sorted(expect), shipped)
        for name, keys in expect.items():
            for fmt in ["json", "yaml", "table"]:
                rc, out, err = tfctl("spec", "-f", os.path.join(EX, "invalid", name), "-o", fmt)
                self.assertEqual(rc, 2, name)
                self.assertEqual(out, "", name)
                for k in keys:
                    self.assertIn(k, err, name)

    def test_one_invalid_document_rejects_the_whole_file(self):
        with open(os.path.join(EX, "pod.yaml")) as f:
            good = f.read()
        with open(os.path.join(EX, "invalid", "bad-vram.yaml")) as f:
            bad = f.read()
        rc, out, err = tfctl("spec", "-f", "-", "-o", "json", stdin=good + "\n---\n" + bad)
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("Pod/bad-vram", err)

    def test_yaml_output_is_the_same_data(self):
        path = os.path.join(EX, "statefulset.yaml")
        rc, out, err = tfctl("spec", "-f", path, "-o", "yaml")
        self.assertEqual(rc, 0, err)
        self.assertEqual(yaml.safe_load(out), spec_json("-f", path))
        rc, out, _ = tfctl("spec", "-f", os.path.join(EX, "seed-001-deployment.yaml"), "-o",
                           "yaml")
        self.assertEqual(yaml.safe_load(out), [SEED_001])

    def test_table_is_the_human_default(self):
        rc, out, err = tfctl("spec", "-f", os.path.join(EX, "statefulset.yaml"))
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertTrue(lines[0].startswith("NAME"))
        self.assertIn("llm-serving", lines[1])
        self.assertIn("100/200", lines[1])
        self.assertIn("20Gi/24Gi", lines[1])
        self.assertIn("critical", lines[1])

    def test_usage_errors_exit_2(self):
        self.assertEqual(tfctl("spec")[0], 2)
        rc, out, err = tfctl("spec", "-f", os.path.join(EX, "pod.yaml"), "-o", "xml")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("xml", err)
        rc, out, err = tfctl("spec", "-f", "/nonexistent/x.yaml")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("/nonexistent/x.yaml", err)
        rc, out, err = tfctl("spec", "-f", "-", stdin="kind: Service\nmetadata: {name: s}\n")
        self.assertEqual((rc, out), (2, ""))
        rc, out, err = tfctl("spec", "-f", "-", stdin="a: [unclosed\n")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("line", err)
        rc, out, err = tfctl("spec", "-f", os.path.join(EX, "pod.yaml"), "--profile",
                             os.path.join(EX, "pod.yaml"))
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("WorkloadProfile", err)
        self.assertEqual(tfctl("spec", "--help")[0], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
