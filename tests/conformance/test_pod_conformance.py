#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Pod conformance with upstream TensorFusion through `tfctl spec`: every fixture of
# tests/conformance/pods (pods of every annotation rule and upstream's getting-started examples,
# each with the upstream behaviour it follows in its header) is read with the cluster objects
# it carries, and checked against its `kind: Expect` document: the normalised spec (a subset of
# the -o json contract), warnings (substrings), or a denial (exit 2, the substring on stderr,
# nothing on stdout). tests/controller/test_conformance.c checks the same fixtures through the
# webhook's AdmissionReview path. Run by meson test (TF_SRCDIR, TF_BUILDDIR set).
import json
import os
import subprocess
import sys
import unittest

import yaml

SRC = os.environ.get("TF_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TF_BUILDDIR", os.path.join(SRC, "build", "test"))
TFCTL = os.path.join(BUILD, "src", "cli", "tfctl")
PODS = os.path.join(SRC, "tests", "conformance", "pods")


def fixtures():
    for name in sorted(os.listdir(PODS)):
        if name.endswith(".yaml"):
            with open(os.path.join(PODS, name)) as f:
                docs = [d for d in yaml.safe_load_all(f) if d]
            expect = [d for d in docs if d.get("kind") == "Expect"]
            yield name, expect[0] if expect else None


def subset(want, got, path=""):
    """Every key of WANT is in GOT with the same value (recursively for maps)."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{path}: {got!r} is not a map"
        for k, v in want.items():
            if k not in got:
                return f"{path}.{k}: missing"
            why = subset(v, got[k], f"{path}.{k}")
            if why:
                return why
        return None
    return None if want == got else f"{path}: {got!r} != {want!r}"


class PodConformance(unittest.TestCase):
    def test_every_fixture_has_an_expectation(self):
        names = [n for n, _ in fixtures()]
        self.assertGreaterEqual(len(names), 20)
        for name, exp in fixtures():
            self.assertIsNotNone(exp, name)
            self.assertTrue(("spec" in exp) != ("denied" in exp), name)

    def test_every_fixture_normalises_as_upstream_through_tfctl_spec(self):
        for name, exp in fixtures():
            with self.subTest(fixture=name):
                p = subprocess.run([TFCTL, "spec", "-f", os.path.join(PODS, name), "-o", "json"],
                                   capture_output=True, text=True, timeout=60)
                if "denied" in exp:
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(p.stdout, "")
                    self.assertIn(exp["denied"], p.stderr)
                    continue
                self.assertEqual(p.returncode, 0, p.stderr)
                got = json.loads(p.stdout)
                self.assertEqual(len(got), 1, got)
                why = subset(exp["spec"], got[0])
                self.assertIsNone(why, json.dumps(got[0], indent=1))
                for w in exp.get("warnings", []):
                    self.assertTrue(any(w in g for g in got[0]["warnings"]),
                                    f"warning {w!r} not in {got[0]['warnings']}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
