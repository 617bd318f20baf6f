"""Selective build: a copy of the lite runtime holding only the listed operators.

    python -m ember_lite.build --ops ops.yaml --out DIR     # writes DIR/ember_lite/
                                                            # (or: python -m ember.lite.build)

``ops.yaml`` is torch's operator-list YAML: either the list ``yaml.dump`` writes for
``torch.jit.export_opnames(m)`` (``- aten::conv2d`` lines) or the selective-build form with
an ``operators:`` mapping (``aten::add.Tensor:`` keys with per-operator fields). The copy
keeps ``_kernels.py``'s helpers and only the kernels of listed operators (their
``@kernel`` names narrowed to the listed ones); loading a model that needs another operator
fails naming it. Import the result with ``sys.path.insert(0, DIR); import ember_lite``.
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNTIME_FILES = ("__init__.py", "_format.py", "_interp.py")
PACKAGE = "ember_lite"


def _unquote(s):
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def read_op_list(text):
    """Operator names from torch's YAML op lists (a list, or an ``operators:`` mapping)."""
    lines = [ln.split(" #", 1)[0].rstrip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")
             and ln.strip() != "---"]
    stripped = [ln.strip() for ln in lines]
    if stripped and stripped[0].startswith("[") and "".join(stripped).endswith("]"):
        body = "".join(stripped)[1:-1]
        return [_unquote(x) for x in body.split(",") if x.strip()]
    if any(ln.startswith("operators:") for ln in lines):
        ops, inside, indent = [], False, None
        for ln in lines:
            if not ln.startswith(" ") and not ln.startswith("-"):
                inside = ln.startswith("operators:")
                rest = ln[len("operators:"):].strip() if inside else ""
                if inside and rest.startswith("["):
                    return read_op_list(rest)
                continue
            if not inside:
                continue
            level = len(ln) - len(ln.lstrip())
            item = ln.strip()
            if indent is None:
                indent = level
            if level != indent:
                continue
            if item.startswith("- "):
                ops.append(_unquote(item[2:]))
            elif item.endswith(":"):
                ops.append(_unquote(item[:-1]))
            elif ": " in item and item.startswith(("'", '"')):
                ops.append(_unquote(item.rsplit(": ", 1)[0]))
        return ops
    return [_unquote(s[2:]) for s in stripped if s.startswith("- ")]


def _kernel_names(fn):
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "kernel":
            return d, [a.value for a in d.args if isinstance(a, ast.Constant)]
    return None, None


def prune_kernels(source, selected):
    """``_kernels.py`` source keeping only kernels of ``selected`` operator names."""
    tree = ast.parse(source)
    body = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            deco, names = _kernel_names(node)
            if deco is not None:
                keep = [n for n in names if n in selected]
                if not keep:
                    continue
                deco.args = [ast.Constant(n) for n in keep]
        body.append(node)
    tree.body = body
    return ast.unparse(tree) + "\n"


def available_operators():
    tree = ast.parse(open(os.path.join(HERE, "_kernels.py")).read())
    out = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            _, names = _kernel_names(node)
            out.update(names or ())
    return out


def build(ops, out_dir):
    """Write ``out_dir/ember_lite`` with the kernels of ``ops``; returns its path."""
    selected = set(ops)
    missing = sorted(selected - available_operators())
    if missing:
        raise SystemExit("ember.lite.build: no kernel for operator(s) " + ", ".join(missing))
    target = os.path.join(out_dir, PACKAGE)
    if os.path.isdir(target):
        shutil.rmtree(target)
    os.makedirs(target)
    for name in RUNTIME_FILES:
        shutil.copyfile(os.path.join(HERE, name), os.path.join(target, name))
    with open(os.path.join(HERE, "_kernels.py")) as f:
        pruned = prune_kernels(f.read(), selected)
    with open(os.path.join(target, "_kernels.py"), "w") as f:
        f.write(pruned)
    with open(os.path.join(target, "OPERATORS"), "w") as f:
        f.write("\n".join(sorted(selected)) + "\n")
    return target


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m ember.lite.build", description=__doc__.split("\n")[0])
    p.add_argument("--ops", required=True, help="torch's YAML operator list")
    p.add_argument("--out", required=True, help="folder to write ember_lite/ into")
    args = p.parse_args(argv)
    with open(args.ops) as f:
        ops = read_op_list(f.read())
    if not ops:
        raise SystemExit(f"ember.lite.build: no operators in {args.ops}")
    target = build(ops, args.out)
    print(f"ember.lite.build: {len(set(ops))} operators -> {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
