"""Graph passes. Each rewrites a Graph in place and returns it (``inlined`` returns a copy).

    clone_graph            a deep copy (values remapped)
    inline_calls           prim::CallFunction / prim::CallMethod -> the callee's body
    dce                    nodes with unused outputs and no side effects removed
    constant_propagation   pure nodes over constants evaluated now; an If on a constant
                           condition replaced by the branch taken (tensors folded only when
                           ``fold_tensors``, as freezing does)
    cse                    a pure node equal to an earlier one (kind, callee, inputs,
                           attributes) reuses its outputs
    peephole               small rewrites: ``x ** 2`` -> ``x * x``, ``not not b`` -> ``b``
    optimize               what every compiled function gets before code generation
"""
from __future__ import annotations

import operator

from ember.jit import _types as T
from ember.jit._ir import NOT_CONSTANT, Graph, Node


# --------------------------------------------------------------------------- copying

def _copy_node(n, vmap, block):
    new = Node(n.kind, [vmap.get(i.id, i) for i in n.inputs], n.attrs, n.source)
    new.op, new.fn, new.kwnames = n.op, n.fn, n.kwnames
    for o in n.outputs:
        vmap[o.id] = new.add_output(o.type, o.debug_name)
    block.append(new)
    for b in n.blocks:
        nb = new.add_block()
        _copy_block(b, nb, vmap)
    return new


def _copy_block(src, dst, vmap):
    for p in src.params:
        vmap[p.id] = dst.add_param(p.type, p.debug_name)
    for n in src.nodes:
        _copy_node(n, vmap, dst)
    for r in src.returns:
        dst.add_return(vmap.get(r.id, r))


def clone_graph(g):
    new = Graph()
    _copy_block(g.block, new.block, {})
    return new


def _splice(node, block_src, vmap):
    """Copy ``block_src``'s nodes in front of ``node``; returns the copied returns."""
    owner = node.owner
    tmp = Graph().block
    for cn in block_src.nodes:
        _copy_node(cn, vmap, tmp)
    idx = owner.nodes.index(node)
    for k, cn in enumerate(tmp.nodes):
        cn.owner = owner
        owner.nodes.insert(idx + k, cn)
    return [vmap.get(r.id, r) for r in block_src.returns]


def inline_calls(g, only_methods=False):
    """Replace every call of a compiled function or method by its body (recursively)."""
    changed = True
    while changed:
        changed = False
        for n in list(g.all_nodes()):
            if n.kind not in ("prim::CallFunction", "prim::CallMethod") or n.fn is None:
                continue
            if only_methods and n.kind != "prim::CallMethod":
                continue
            callee = getattr(n.fn, "graph", None)
            if callee is None:
                continue
            vmap = {p.id: a for p, a in zip(callee.inputs(), n.inputs)}
            rets = _splice(n, callee.block, vmap)
            for o, r in zip(n.outputs, rets):
                o.replace_all_uses_with(r)
            n.destroy()
            changed = True
    return g


def inlined(g):
    return dce(inline_calls(clone_graph(g)))


# --------------------------------------------------------------------------- DCE

def dce(g):
    """Remove nodes with no used outputs and no side effects (innermost first)."""
    _dce_block(g.block)
    return g


def _dce_block(block):
    for n in reversed(list(block.nodes)):
        if n.kind == "prim::If":
            _trim_outputs(n)
        for b in n.blocks:
            _dce_block(b)
        if n.kind == "prim::Loop" and _trim_loop(n):
            _dce_block(n.blocks[0])
        if n.kind in ("prim::Loop", "prim::With"):
            continue            # loops may not terminate or may raise: kept
        if n.kind == "prim::If":
            if any(x.has_side_effects() for b in n.blocks for x in b.all_nodes()):
                continue
        elif n.has_side_effects():
            continue
        if all(not o.uses for o in n.outputs):
            n.destroy()


def _trim_loop(n):
    """Drop the loop-carried values whose value on entering the body is never read there
    and whose final value nobody uses (``s`` of ``while s > 1: h = h / 2; s = h.sum()``,
    as torch's dead-code pass); True when some were dropped."""
    body = n.blocks[0]
    dropped = False
    for k in range(len(n.outputs) - 1, -1, -1):
        if n.outputs[k].uses or body.params[k + 1].uses:
            continue
        rets = list(body.returns)
        del rets[k + 1]
        body.set_returns(rets)
        ins = list(n.inputs)
        for i, v in enumerate(ins):
            v.uses.remove((n, i))
        n.inputs = []
        del ins[k + 2]
        for v in ins:
            n.add_input(v)
        del body.params[k + 1]
        del n.outputs[k]
        dropped = True
    if dropped:
        for i, v in enumerate(body.params):
            v.offset = i
        for i, v in enumerate(n.outputs):
            v.offset = i
    return dropped


def _trim_outputs(n):
    """Drop If outputs nobody uses (and the block returns feeding them)."""
    keep = [k for k, o in enumerate(n.outputs) if o.uses]
    if len(keep) == len(n.outputs):
        return
    for b in n.blocks:
        b.set_returns([b.returns[k] for k in keep])
    n.outputs = [n.outputs[k] for k in keep]
    for k, o in enumerate(n.outputs):
        o.offset = k


# --------------------------------------------------------------------------- constants

_RANDOM_WORDS = ("rand", "normal", "bernoulli", "multinomial", "dropout", "poisson",
                 "uniform", "exponential", "geometric", "cauchy", "log_normal", "randperm")
_PURE_PY = {operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
            operator.mod, operator.pow, operator.eq, operator.ne, operator.lt, operator.le,
            operator.gt, operator.ge, operator.neg, operator.not_, operator.and_,
            operator.or_, operator.xor, operator.is_, operator.is_not, len, int, float, bool,
            str, abs, min, max}


def _is_pure(n, fold_tensors):
    if n.blocks or n.has_side_effects():
        return False
    if n.op is not None:
        op = n.op
        if op.is_inplace or op.nondeterministic or any(w in op.public_name for w in _RANDOM_WORDS):
            return False
        if any(a.type == "Generator" for a in op.schema.args):
            return False
        return fold_tensors or all(o.type is not T.TensorType for o in n.outputs)
    if n.kind in ("prim::TupleConstruct", "prim::TupleIndex", "prim::TupleUnpack"):
        return True
    if n.kind == "prim::ListConstruct" or n.kind == "prim::DictConstruct":
        return False            # mutable containers: one constant must not be shared
    if n.fn in _PURE_PY and "_index" not in n.attrs:
        return fold_tensors or all(o.type is not T.TensorType for o in n.outputs) and all(
            i.type is not T.TensorType for i in n.inputs)
    if fold_tensors and n.fn is not None and getattr(n.fn, "_ember_fold", False):
        return True
    return False


def constant_propagation(g, fold_tensors=False):
    """Evaluate pure nodes whose inputs are all constants; resolve constant Ifs."""
    _const_block(g.block, fold_tensors)
    return dce(g)


def _const_block(block, fold_tensors):
    for n in list(block.nodes):
        if n.owner is not block:
            continue
        if n.kind == "prim::If":
            c = n.inputs[0].constant()
            if type(c) is bool:
                taken = n.blocks[0 if c else 1]
                _const_block(taken, fold_tensors)
                rets = _splice(n, taken, {})
                for o, r in zip(n.outputs, rets):
                    o.replace_all_uses_with(r)
                n.destroy()
                continue
        for b in n.blocks:
            _const_block(b, fold_tensors)
        if not n.inputs and n.kind != "prim::TupleConstruct" or not _is_pure(n, fold_tensors):
            continue
        vals = [i.constant() for i in n.inputs]
        if any(v is NOT_CONSTANT for v in vals):
            continue
        try:
            result = _evaluate(n, vals)
        except Exception:           # noqa: BLE001 - left to fail at run time, as torch does
            continue
        outs = result if len(n.outputs) > 1 else (result,)
        if len(outs) != len(n.outputs):
            continue
        anchor = n
        for o, v in zip(n.outputs, outs):
            c = Node("prim::Constant", (), {} if v is None else {"value": v})
            c.add_output(o.type)
            block.insert_before(anchor, c)
            o.replace_all_uses_with(c.output)


def _evaluate(n, vals):
    if n.op is not None:
        from ember import _dispatch
        return _dispatch.dispatch(n.op, tuple(vals))
    if n.kind == "prim::TupleConstruct":
        return tuple(vals)
    if n.kind == "prim::TupleIndex":
        return vals[0][vals[1]]
    if n.kind == "prim::TupleUnpack":
        return tuple(vals[0])
    nkw = len(n.kwnames)
    if nkw:
        return n.fn(*vals[:-nkw], **dict(zip(n.kwnames, vals[-nkw:])))
    return n.fn(*vals)


# --------------------------------------------------------------------------- CSE

def cse(g):
    """Note [CSE and mutation]: two equal tensor ops give equal values only if nothing
    writes a tensor in between. Without alias analysis, tensor-valued nodes are shared only
    in graphs with no node that may write a tensor (in-place ops, index assignment, calls
    that could do either); other values (ints, shapes, strings) always are."""
    _cse_block(g.block, {}, not any(_may_mutate(n) for n in g.all_nodes()))
    return g


def _may_mutate(n):
    if n.kind in ("prim::CallMethod", "prim::CallFunction", "prim::PythonOp", "prim::CallAny",
                  "aten::index_put_", "prim::fork"):
        return True
    if n.op is not None:
        return n.op.is_inplace or any((a.alias or "").endswith("!") for a in n.op.schema.args)
    if n.fn is not None:
        name = getattr(n.fn, "__name__", "")
        return "inplace" in n.kwnames or name.endswith("_") and not name.endswith("__") or \
            any(i.type is T.TensorType for i in n.inputs) and _takes_inplace(n.fn)
    return n.kind.endswith("_") and not n.kind.endswith("__")


def _takes_inplace(fn):
    code = getattr(fn, "__code__", None)
    return code is not None and "inplace" in code.co_varnames[:code.co_argcount]


def _key(n):
    try:
        attrs = tuple(sorted((k, v if not isinstance(v, list) else tuple(v))
                             for k, v in n.attrs.items()))
        hash(attrs)
    except TypeError:
        return None
    consts = []
    for i in n.inputs:
        c = i.constant()
        if c is not NOT_CONSTANT:
            try:
                hash(c)
                consts.append(("c", type(c), c))
                continue
            except TypeError:
                return None
        consts.append(("v", i.id))
    return (n.kind, id(n.op), id(n.fn), n.kwnames, attrs, tuple(consts))


def _cse_block(block, seen, tensors_ok):
    seen = dict(seen)
    for n in list(block.nodes):
        for b in n.blocks:
            _cse_block(b, seen, tensors_ok)
        if n.kind == "prim::Constant" or not _is_pure(n, True) or n.kind.startswith("prim::Tuple"):
            continue
        if not tensors_ok and any(_holds_tensor(o.type) for o in n.outputs):
            continue
        if any(isinstance(i.type, (T.ListType, T.DictType)) for i in n.inputs):
            continue      # torch shares nothing read from a list or dict (mutable values)
        k = _key(n)
        if k is None:
            continue
        prev = seen.get(k)
        if prev is not None and len(prev.outputs) == len(n.outputs):
            for o, p in zip(n.outputs, prev.outputs):
                o.replace_all_uses_with(p)
            n.destroy()
        else:
            seen[k] = n


def _holds_tensor(t):
    if t is T.TensorType or t is T.AnyType:
        return True
    if isinstance(t, (T.ListType, T.OptionalType)):
        return _holds_tensor(t.elem)
    if isinstance(t, T.TupleType):
        return any(_holds_tensor(e) for e in t.elems)
    if isinstance(t, T.DictType):
        return _holds_tensor(t.value)
    return False


# --------------------------------------------------------------------------- peephole

def peephole(g):
    from ember._ops.registry import OPS
    mul = OPS.get("mul.Tensor")
    for n in list(g.all_nodes()):
        if n.owner is None:
            continue
        if n.op is not None and n.op.public_name == "pow" and len(n.inputs) == 2 \
                and n.inputs[0].type is T.TensorType and n.inputs[1].constant() == 2 \
                and type(n.inputs[1].constant()) is int and mul is not None:
            x = n.inputs[0]
            new = Node("aten::mul", [x, x], None, n.source)
            new.op = mul
            new.add_output(T.TensorType, n.outputs[0].debug_name)
            n.owner.insert_before(n, new)
            n.outputs[0].replace_all_uses_with(new.output)
            n.destroy()
        elif n.kind == "aten::__not__" and n.inputs[0].node is not None and \
                getattr(n.inputs[0].node, "kind", "") == "aten::__not__":
            n.outputs[0].replace_all_uses_with(n.inputs[0].node.inputs[0])
            n.destroy()
    return dce(g)


def optimize(g):
    constant_propagation(g)
    cse(g)
    peephole(g)
    return dce(g)
