"""Handlers of the IR's structural nodes (``prim::*``, list and tuple plumbing, scripted
indexing): each ``handler(exporter, g, node, env)`` binds the node's outputs in ``env``.
Constants, attributes and containers stay export-time values where they can; ``prim::If``
and ``prim::Loop`` on run-time values become ONNX ``If`` / ``Loop`` with subgraphs, loops
over a fixed range are unrolled.
"""
from __future__ import annotations

import ember
from ember.onnx._graph import GraphContext, V, scalar_dtype, value_info
from ember.onnx.errors import SymbolicValueError, UnsupportedOperatorError

def _constant(ex, g, n, env):
    v = n.attrs.get("value") if "value" in n.attrs else None
    env[n.output.id] = V(value=v)


def _getattr(ex, g, n, env):
    obj = env[n.inputs[0].id]
    if not obj.static:
        raise SymbolicValueError(f"prim::GetAttr on a run-time value ({n.attrs['name']})")
    env[n.output.id] = V(value=getattr(obj.value, n.attrs["name"]))


def _construct(ex, g, n, env):
    ins = [env[v.id] for v in n.inputs]
    tup = n.kind == "prim::TupleConstruct"
    if all(i.static for i in ins):
        vals = [i.value for i in ins]
        env[n.output.id] = V(value=tuple(vals) if tup else vals)
    else:
        ex_ = [i.example for i in ins]
        env[n.output.id] = V(items=ins, example=tuple(ex_) if tup else ex_)


def _elements(v):
    if v.items is not None:
        return list(v.items)
    if v.static:
        return [V(value=e) for e in v.value]
    raise SymbolicValueError("unpacking a list computed at run time is not supported")


def _unpack(ex, g, n, env):
    for o, e in zip(n.outputs, _elements(env[n.inputs[0].id])):
        env[o.id] = e


def _index(ex, g, n, env):
    seq, idx = env[n.inputs[0].id], env[n.inputs[1].id]
    if not idx.static:
        raise SymbolicValueError(f"{n.kind} with an index known only at run time")
    if seq.items is None and not seq.static:
        ex.convert_op(g, n, env)
        return
    env[n.output.id] = _elements(seq)[idx.value]


def _getitem(ex, g, n, env):
    seq = env[n.inputs[0].id]
    if seq.items is not None or (seq.static and isinstance(seq.value, (list, tuple))):
        _index(ex, g, n, env)
        return
    ex.convert_op(g, n, env)


def _raises(block):
    return any(m.kind == "prim::RaiseException" for m in block.nodes)


def _if(ex, g, n, env):
    """A check that raises in one branch (``if x.size(1) != n: raise ...``) held for the
    example: the other branch is taken (ONNX has no exceptions), as for a constant
    condition."""
    cond = env[n.inputs[0].id]
    taken = None
    if cond.static:
        taken = 0 if cond.value else 1
    elif _raises(n.blocks[0]) != _raises(n.blocks[1]):
        taken = 1 if _raises(n.blocks[0]) else 0
    if taken is not None:
        rets = ex.convert_block(g, n.blocks[taken], env)
        for o, r in zip(n.outputs, rets):
            env[o.id] = r
        return
    then_g, then_r = ex.subgraph(g, n.blocks[0], [], "then", env)
    else_g, else_r = ex.subgraph(g, n.blocks[1], [], "else", env)
    taken = then_r if bool(cond.example) else else_r
    names = g.op("If", g.input(cond, ember.bool), outputs=len(n.outputs),
                 then_branch=then_g, else_branch=else_g)
    names = [names] if len(n.outputs) == 1 else names
    for o, name, r in zip(n.outputs, names, taken):
        env[o.id] = V(name=name, example=r.example)


_UNROLL = 4096      # loops with a trip count known at export time run at most this often


def _loop(ex, g, n, env):
    trip, cond, *carried = [env[v.id] for v in n.inputs]
    body = n.blocks[0]
    if trip.static and cond.static and trip.value <= _UNROLL:
        _unroll(ex, g, n, env, trip.value, cond.value, carried)
        return
    params = [(g.fresh("iter"), 0), (g.fresh("cond"), True)] + \
             [(g.fresh("carried"), c.example) for c in carried]
    graph = _loop_body(ex, g, body, params, env)
    trip_name = "" if trip.static and trip.value >= 2 ** 63 - 1 else g.input(trip, ember.int64)
    names = g.op("Loop", trip_name, g.input(cond, ember.bool),
                 *[g.input(c, scalar_dtype(c.example)) for c in carried],
                 outputs=len(n.outputs), body=graph)
    names = [names] if len(n.outputs) == 1 else names
    for o, name, c in zip(n.outputs, names, carried):
        env[o.id] = V(name=name, example=c.example)


def _unroll(ex, g, n, env, trip, cond, carried):
    """A loop over a fixed range (a module list, ``range(3)``) converted once per step."""
    body = n.blocks[0]
    for i in range(trip):
        if not cond:
            break
        env[body.params[0].id] = V(value=i)
        for p, c in zip(body.params[1:], carried):
            env[p.id] = c
        rets = ex.convert_block(g, body, env)
        if not rets[0].static:
            raise SymbolicValueError("a loop over a fixed range that breaks on a value known "
                                     "only at run time")
        cond, carried = rets[0].value, rets[1:]
    for o, c in zip(n.outputs, carried):
        env[o.id] = c


def _index_of(tmpl, rest):
    """A scripted indexing node's Python index from its template and the values of its
    inputs after the target (``Compiler.index_template``)."""
    def one(t):
        if t is None or t is Ellipsis:
            return [t]
        if t[0] == "slice":
            return [slice(*(None if p is None else rest[p - 1] for p in t[1:]))]
        if t[0] == "splat":
            return list(rest[t[1] - 1])
        return [rest[t[1] - 1]]
    if isinstance(tmpl, tuple) and tmpl and isinstance(tmpl[0], str):
        parts = one(tmpl)
        return parts[0] if tmpl[0] != "splat" else tuple(parts)
    if isinstance(tmpl, tuple):
        return tuple(p for t in tmpl for p in one(t))
    return one(tmpl)[0]


def _indexing(ex, g, n, env):
    """``x[...]`` in a scripted graph: basic indexing, or one tensor of indices (Gather) or
    a 1-d mask (Compress) along one dimension."""
    if n.kind == "aten::index_put_":
        raise UnsupportedOperatorError("aten::index_put_", ex.opset, None)
    x, *rest = [env[v.id] for v in n.inputs]
    tmpl = n.attrs["_index"]
    example = x.example[_index_of(tmpl, [r.example for r in rest])]
    if all(r.static for r in rest) and x.static:
        env[n.output.id] = V(value=example)
        return
    idx = _index_of(tmpl, [r if not r.static else r.value for r in rest])
    idx = list(idx) if isinstance(idx, tuple) else [idx]
    dyn = [k for k, i in enumerate(idx) if isinstance(i, V) or isinstance(i, ember.Tensor)]
    if not dyn:
        from ember.onnx._symbolic_shape import basic_index
        g.node, g.outs, g.ins = n, [example], [x]
        env[n.output.id] = V(name=basic_index(g, x, V(value=tuple(idx))), example=example)
        return
    from ember.onnx._symbolic_shape import tensor_index
    idx = [i if not isinstance(i, ember.Tensor) else V(value=i) for i in idx]
    env[n.output.id] = V(name=tensor_index(g, x, idx, example), example=example)


def _uninitialized(ex, g, n, env):
    env[n.output.id] = V(value=None)


def _append(ex, g, n, env):
    lst, item = env[n.inputs[0].id], env[n.inputs[1].id]
    if lst.items is not None:
        lst.items.append(item)
        lst.example.append(item.example)
    elif item.static:
        lst.value.append(item.value)
    else:                   # a constant list gets a run-time element: it becomes items
        lst.items = [V(value=e) for e in lst.value] + [item]
        lst.example = list(lst.value) + [item.example]
        lst.value = None
    if n.outputs:
        env[n.output.id] = lst


def _tensor_attr(ex, g, n, env):
    x = env[n.inputs[0].id]
    name = n.attrs.get("name") or n.kind.split("::")[1]
    if name == "shape" and ex.dynamic and not x.static:
        shape = g.op("Shape", g.input(x))
        dims = [V(name=g.op("Gather", shape, g.const(k), axis=0), example=s)
                for k, s in enumerate(x.example.shape)]
        env[n.output.id] = V(items=dims, example=list(x.example.shape))
        return
    env[n.output.id] = V(value=getattr(x.example, name))


def _loop_body(ex, g, body, params, outer):
    """ONNX's body takes (iter, cond, *carried); ember's block takes (i, *carried)."""
    from onnx import helper
    sub = GraphContext(ex, parent=g)
    env = dict(outer)
    inputs = [value_info(params[0][0], 0, unknown=True),
              value_info(params[1][0], True, unknown=True)]
    env[body.params[0].id] = V(name=params[0][0], example=0)
    for p, (pname, example) in zip(body.params[1:], params[2:]):
        env[p.id] = V(name=pname, example=example)
        inputs.append(value_info(pname, example, unknown=True))
    rets = ex.convert_block(sub, body, env)
    outputs = []
    for k, r in enumerate(rets):
        dtype = ember.bool if k == 0 else scalar_dtype(params[k + 1][1])
        name = sub.op("Identity", sub.input(r, dtype))
        outputs.append(value_info(name, True if k == 0 else params[k + 1][1], unknown=True))
    return helper.make_graph(sub.nodes, ex.fresh("loop_body"), inputs, outputs)


def _call(ex, g, n, env):
    raise SymbolicValueError(f"{n.kind} left after inlining (a call of {n.fn!r})")

_PRIM = {
    "prim::Constant": _constant,
    "prim::GetAttr": _getattr,
    "prim::ListConstruct": _construct,
    "prim::TupleConstruct": _construct,
    "prim::ListUnpack": _unpack,
    "prim::TupleUnpack": _unpack,
    "prim::TupleIndex": _index,
    "aten::__getitem__": _getitem,
    "prim::If": _if,
    "prim::Loop": _loop,
    "prim::Uninitialized": _uninitialized,
    "aten::append": _append,
    "prim::TensorAttr": _tensor_attr,
    "prim::dtype": _tensor_attr,
    "prim::device": _tensor_attr,
    "prim::shape": _tensor_attr,
    "prim::CallMethod": _call,
    "prim::CallFunction": _call,
}
