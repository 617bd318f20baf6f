"""Graph passes. Each takes a Graph and rewrites it in place (``inlined`` returns a copy).

    clone_graph     a deep copy (values remapped)
    inline_calls    prim::CallFunction / prim::CallMethod replaced by the callee's body
    dce             nodes whose outputs are unused and that have no side effects removed
    optimize        what every compiled function gets before code generation
"""
from __future__ import annotations

from ember.jit._ir import Graph, Node


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


def inline_calls(g):
    """Replace every call of a compiled function or method by its body (recursively)."""
    changed = True
    while changed:
        changed = False
        for n in list(g.all_nodes()):
            if n.kind not in ("prim::CallFunction", "prim::CallMethod") or n.fn is None:
                continue
            callee = getattr(n.fn, "graph", None)
            if callee is None:
                continue
            block = n.owner
            vmap = {p.id: a for p, a in zip(callee.inputs(), n.inputs)}
            tmp = Graph().block
            for cn in callee.nodes():
                _copy_node(cn, vmap, tmp)
            idx = block.nodes.index(n)
            for k, cn in enumerate(tmp.nodes):
                cn.owner = block
                block.nodes.insert(idx + k, cn)
            for o, r in zip(n.outputs, callee.outputs()):
                o.replace_all_uses_with(vmap.get(r.id, r))
            n.destroy()
            changed = True
    return g


def inlined(g):
    return dce(inline_calls(clone_graph(g)))


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
        if n.has_side_effects() and n.kind not in ("prim::If", "prim::Loop"):
            continue
        if n.kind in ("prim::If", "prim::Loop", "prim::With") and (
                any(x.has_side_effects() for b in n.blocks for x in b.all_nodes())
                or n.kind == "prim::With"):
            continue
        if n.kind == "prim::Loop":
            continue            # loops may not terminate / may raise: keep
        if all(not o.uses for o in n.outputs):
            n.destroy()


def _trim_outputs(n):
    """Drop If outputs nobody uses (and the block returns feeding them)."""
    if n.kind != "prim::If":
        return
    keep = [k for k, o in enumerate(n.outputs) if o.uses]
    if len(keep) == len(n.outputs):
        return
    for b in n.blocks:
        b.set_returns([b.returns[k] for k in keep])
    n.outputs = [n.outputs[k] for k in keep]
    for k, o in enumerate(n.outputs):
        o.offset = k


def optimize(g):
    dce(g)
    return g
