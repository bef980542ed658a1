#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A renderer for the subset of Helm's Go templating that deploy/helm/tensor-fusion uses
(helm itself is not installed on the build machines). Anything outside the subset is an
error, so a template that strays from it fails the test instead of rendering wrongly.

Supported: {{ expr }} and the trimming forms {{- and -}}; expressions are .Values.a.b,
.Release.Namespace, .Release.Name, .Chart.Name, .Chart.Version, "string" and integer
literals, pipelines (x | f a b means f a b x) over the functions quote, toYaml, nindent,
indent, default, not, eq; control: if EXPR / else / end (nesting allowed).

Usage: helm_render.py CHART [--namespace NS] [--name NAME] [--set a.b=v ...]
prints the rendered templates as one multi-document YAML stream, like `helm template`.
"""
import argparse
import os
import re
import sys

import yaml

ACTION = re.compile(r"{{(-?)\s*(.*?)\s*(-?)}}", re.S)


class TemplateError(Exception):
    pass


def tokenize(expr):
    return re.findall(r'"(?:[^"\\]|\\.)*"|\||[^\s|]+', expr)


def lookup(ctx, path):
    cur = ctx
    for part in path.strip(".").split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=False).rstrip("\n")


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        raise TemplateError("cannot print a map or list without toYaml: %r" % (v,))
    return str(v)


FUNCS = {
    "quote": lambda v: '"%s"' % scalar(v).replace("\\", "\\\\").replace('"', '\\"'),
    "toYaml": to_yaml,
    "nindent": lambda n, v: "\n" + "\n".join(" " * int(n) + l if l else l
                                             for l in str(v).split("\n")),
    "indent": lambda n, v: "\n".join(" " * int(n) + l if l else l for l in str(v).split("\n")),
    "default": lambda d, v: v if v not in (None, "", [], {}, False) else d,
    "not": lambda v: not truthy(v),
    "eq": lambda a, b: a == b,
}


def truthy(v):
    return v not in (None, False, 0, "", [], {})


def atom(tok, ctx):
    if tok.startswith('"'):
        return bytes(tok[1:-1], "utf-8").decode("unicode_escape")
    if re.fullmatch(r"-?\d+", tok):
        return int(tok)
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("."):
        return lookup(ctx, tok)
    raise TemplateError("unsupported token %r" % tok)


def evaluate(expr, ctx):
    stages = []
    cur = []
    for t in tokenize(expr):
        if t == "|":
            stages.append(cur)
            cur = []
        else:
            cur.append(t)
    stages.append(cur)
    value = None
    for n, stage in enumerate(stages):
        if not stage:
            raise TemplateError("empty pipeline stage in %r" % expr)
        head, args = stage[0], [atom(a, ctx) for a in stage[1:]]
        if n > 0:
            args.append(value)
        if head in FUNCS:
            value = FUNCS[head](*args)
        elif n == 0 and not stage[1:]:
            value = atom(head, ctx)
        else:
            raise TemplateError("unsupported function %r" % head)
    return value


def render(text, ctx):
    out = []
    stack = []  # (active_parent, condition_taken, in_else)
    active = True
    pos = 0
    for m in ACTION.finditer(text):
        lit = text[pos:m.start()]
        if m.group(1):
            lit = lit.rstrip(" \t\n")
        if active:
            out.append(lit)
        pos = m.end()
        body = m.group(2)
        trim_right = bool(m.group(3))
        if body.startswith("/*"):
            pass
        elif body.startswith("if "):
            cond = truthy(evaluate(body[3:], ctx)) if active else False
            stack.append((active, cond))
            active = active and cond
        elif body == "else":
            if not stack:
                raise TemplateError("else without if")
            parent, cond = stack[-1]
            active = parent and not cond
        elif body == "end":
            if not stack:
                raise TemplateError("end without if")
            active, _ = stack.pop()
        else:
            if active:
                v = evaluate(body, ctx)
                out.append(scalar(v) if not isinstance(v, str) else v)
        if trim_right:
            rest = text[pos:]
            stripped = rest.lstrip(" \t\n")
            pos += len(rest) - len(stripped)
    if stack:
        raise TemplateError("if without end")
    if active:
        out.append(text[pos:])
    return "".join(out)


def set_value(values, assignment):
    key, _, raw = assignment.partition("=")
    cur = values
    parts = key.split(".")
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
    cur[parts[-1]] = yaml.safe_load(raw) if raw != "" else ""


def render_chart(chart, namespace="tensor-fusion-sys", name="tensor-fusion", sets=()):
    with open(os.path.join(chart, "Chart.yaml")) as f:
        meta = yaml.safe_load(f)
    with open(os.path.join(chart, "values.yaml")) as f:
        values = yaml.safe_load(f) or {}
    for a in sets:
        set_value(values, a)
    ctx = {"Values": values, "Release": {"Namespace": namespace, "Name": name},
           "Chart": {"Name": meta["name"], "Version": meta["version"]}}
    docs = []
    tdir = os.path.join(chart, "templates")
    for fn in sorted(os.listdir(tdir)):
        if not fn.endswith(".yaml"):
            continue
        with open(os.path.join(tdir, fn)) as f:
            try:
                docs.append("# Source: tensor-fusion/templates/%s\n%s" % (fn, render(f.read(),
                                                                                    ctx)))
            except TemplateError as e:
                raise TemplateError("%s: %s" % (fn, e))
    return "\n---\n".join(docs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("chart")
    ap.add_argument("--namespace", default="tensor-fusion-sys")
    ap.add_argument("--name", default="tensor-fusion")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    try:
        print(render_chart(a.chart, a.namespace, a.name, a.set))
    except TemplateError as e:
        print("error: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
