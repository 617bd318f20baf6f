"""``replace_pattern``: find every occurrence of a traced pattern and splice in a traced
replacement."""
from __future__ import annotations

from typing import NamedTuple

from ember.fx.node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node            # the pattern's output node (the match's root)
    nodes_map: dict         # pattern node -> graph node


def _as_graph(fn):
    from ember.fx.graph import Graph
    from ember.fx._symbolic_trace import symbolic_trace
    return fn if isinstance(fn, Graph) else symbolic_trace(fn).graph


def _match(pnode, gnode, binding):
    """Does the pattern rooted at ``pnode`` match the graph rooted at ``gnode``?"""
    if pnode in binding:
        return binding[pnode] is gnode
    if pnode.op == "placeholder":
        binding[pnode] = gnode
        return True
    if not isinstance(gnode, Node) or pnode.op != gnode.op or pnode.target != gnode.target:
        return False
    binding[pnode] = gnode
    return _match_args(pnode.args, gnode.args, binding) and \
        _match_args(pnode.kwargs, gnode.kwargs, binding)


def _match_args(p, g, binding):
    if isinstance(p, Node):
        return isinstance(g, Node) and _match(p, g, binding)
    if isinstance(p, (tuple, list)):
        return type(p) is type(g) and len(p) == len(g) and \
            all(_match_args(a, b, binding) for a, b in zip(p, g))
    if isinstance(p, dict):
        return isinstance(g, dict) and p.keys() == g.keys() and \
            all(_match_args(p[k], g[k], binding) for k in p)
    return type(p) is type(g) and p == g


def replace_pattern(gm, pattern, replacement):
    """Replace each non-overlapping match of ``pattern`` in ``gm`` by ``replacement``
    (functions or Modules, traced here); returns the matches."""
    pgraph, rgraph = _as_graph(pattern), _as_graph(replacement)
    out = next(n for n in pgraph.nodes if n.op == "output")
    panchor = out.args[0]
    pinputs = [n for n in pgraph.nodes if n.op == "placeholder"]
    graph, matches, claimed = gm.graph, [], set()
    for gnode in list(graph.nodes):
        binding = {}
        if gnode in claimed or not isinstance(panchor, Node) or \
                not _match(panchor, gnode, binding):
            continue
        inner = [binding[p] for p in binding if p.op != "placeholder"]
        if any(n in claimed for n in inner):
            continue
        # the matched nodes other than the anchor must not be used outside the match
        if any(u not in inner for n in inner if n is not gnode for u in n.users):
            continue
        matches.append(Match(anchor=panchor, nodes_map=binding))
        claimed.update(inner)
    for m in matches:
        rinputs = [n for n in rgraph.nodes if n.op == "placeholder"]
        val_map = {r: m.nodes_map[p] for r, p in zip(rinputs, pinputs)}
        root = m.nodes_map[panchor]
        # the replacement goes just before the first use of the matched value
        first_user = next((n for n in graph.nodes if n in root.users), root.next)
        with graph.inserting_before(first_user):
            new_out = graph.graph_copy(rgraph, val_map)
        root.replace_all_uses_with(new_out)
        for n in reversed(list(graph.nodes)):
            if n in m.nodes_map.values() and n.op != "placeholder" and \
                    any(n is m.nodes_map[p] for p in m.nodes_map if p.op != "placeholder"):
                graph.erase_node(n)
    gm.recompile()
    return matches
