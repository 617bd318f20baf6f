"""``.code``: a compiled function printed as TorchScript source (torch's printing style:
two-space indents, ``torch.<op>(...)`` calls, ``ops.prim.*`` for primitives)."""
from __future__ import annotations

from ember.jit import _types as T


def function_code(fn):
    """TorchScript source of a compiled Function (a readable rendering of its graph)."""
    from ember.jit._codegen import _Gen
    g = fn.graph
    params = []
    names = ([fn.self_name] if fn.owner is not None else []) + [a[0] for a in fn.arg_schema]
    for k, (v, name) in enumerate(zip(g.inputs(), names)):
        if fn.owner is not None and k == 0:
            params.append(name)
        else:
            params.append(f"{name}: {v.type.annotation}")
    head = f"def {fn.name}(" + ",\n    ".join(params) + f") -> {fn.return_type.annotation}:\n"
    body = getattr(fn, "source", "") or ""
    lines = body.split("\n")[1:]
    return head + "\n".join("  " + line.strip() if line.strip() else "" for line in lines
                            if line.strip()) + "\n"
