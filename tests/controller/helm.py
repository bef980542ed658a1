# SPDX-License-Identifier: Apache-2.0
"""The real helm binary for the chart tests (scripts/deps.sh test installs it).

  template(*sets, values=None)  -> list of the rendered objects (helm template, CRDs included)
  template_error(*sets)         -> helm's message when rendering fails, else None
  lint(*sets)                   -> (ok, output) of helm lint --strict

SETS are --set assignments ("a.b=v"); VALUES an optional dict written to a values file (-f).
Without helm on PATH, `missing()` says so and the callers skip (exit 77)."""
import os
import shutil
import subprocess
import tempfile

import yaml

SRC = os.environ.get("TF_SRCDIR") or os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                                  "..", ".."))
CHART = os.path.join(SRC, "deploy", "helm", "tensor-fusion")
NAMESPACE = "tensor-fusion-sys"


def missing():
    return shutil.which("helm") is None


def _run(verb, sets, values, extra):
    with tempfile.TemporaryDirectory() as tmp:
        args = ["helm", verb]
        if verb == "template":
            args += ["tensor-fusion", CHART, "--namespace", NAMESPACE, "--include-crds"]
        else:
            args += [CHART, "--strict", "--namespace", NAMESPACE]
        if values is not None:
            vf = os.path.join(tmp, "values.yaml")
            with open(vf, "w") as f:
                yaml.safe_dump(values, f)
            args += ["-f", vf]
        for s in sets:
            args += ["--set", s]
        # helm keeps a cache and config under $HOME: a private one per run.
        env = dict(os.environ, HELM_CACHE_HOME=os.path.join(tmp, "c"),
                   HELM_CONFIG_HOME=os.path.join(tmp, "g"), HELM_DATA_HOME=os.path.join(tmp, "d"))
        return subprocess.run(args + list(extra), capture_output=True, text=True, env=env,
                              timeout=120)


def template(*sets, values=None):
    r = _run("template", sets, values, [])
    if r.returncode:
        raise RuntimeError("helm template %s: %s" % (" ".join(sets), r.stderr))
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def template_error(*sets, values=None):
    r = _run("template", sets, values, [])
    return r.stderr if r.returncode else None


def lint(*sets, values=None):
    r = _run("lint", sets, values, [])
    return r.returncode == 0, r.stdout + r.stderr
