"""Helpers of the symbolic functions: export-time values, dtypes, ranks, axes, operands."""
from __future__ import annotations

import ember
from ember.onnx._graph import V, dtype_of
from ember.onnx.errors import SymbolicValueError


def sv(v, what="argument"):
    """The export-time value of ``v`` (an error when it is only known at run time)."""
    if isinstance(v, V):
        if not v.static:
            raise SymbolicValueError(f"the {what} must be known at export time")
        return v.value
    return v


def out_dtype(g, k=0):
    return dtype_of(g.outs[k])


def rank(v):
    return v.example.dim()


def axis(d, r):
    return d + r if d < 0 else d


def cast_to(g, v, dtype):
    return g.input(v, dtype)


def ew(g, v, dtype):
    """An elementwise operand. With dynamic axes, a constant tensor that repeats along a
    dimension which another (run-time) operand has at full size keeps one slice there: a
    ``zeros(batch, n)`` or ``full_like(x, c)`` the trace recorded with the example's sizes
    then broadcasts to the sizes of the run."""
    val = v.value if isinstance(v, V) and v.static else None
    if not (g.exporter.dynamic and isinstance(val, ember.Tensor) and val.dim()):
        return g.input(v, dtype)
    others = [i.example for i in g.ins if i is not v and not i.static
              and isinstance(i.example, ember.Tensor)]
    r = val.dim()
    for d in range(r):
        n = val.shape[d]
        full = any(o.dim() >= r - d and o.shape[o.dim() - r + d] == n for o in others)
        if n > 1 and full and bool((val.narrow(d, 0, 1) == val).all()):
            val = val.narrow(d, 0, 1)
    return g.const(val, dtype)


def ints(v):
    val = sv(v, "size list")
    return [int(val)] if isinstance(val, int) else [int(e) for e in val]


def reduce_dims(dim, r):
    if dim is None or (isinstance(dim, V) and dim.static and dim.value is None):
        return list(range(r))
    d = sv(dim)
    d = [d] if isinstance(d, int) else list(d)
    return [axis(int(e), r) for e in d] or list(range(r))


def tensors_of(v):
    if v.items is not None:
        return v.items
    return [V(value=e) for e in sv(v)]
