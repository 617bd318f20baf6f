"""Pairing the subgraphs of two models (torch.ao.ns.fx.graph_matcher).

Each model's graph is cut into matchable subgraphs in execution order: one op, or an op and
the relu (bn) that is its only user where the float model would fuse them. Walking both
lists from the end, subgraphs are paired; a pair of unrelated op types raises
:class:`GraphMatchingException`."""
from __future__ import annotations

from ember.ao.ns.fx.mappings import (FUSION_FOLLOWERS, get_base_name_to_sets_of_related_ops,
                                     get_unmatchable_types_map)

__all__ = ["GraphMatchingException", "NSSubgraph", "get_matching_subgraph_pairs"]


class GraphMatchingException(Exception):
    """Two models' graphs cannot be matched."""


class NSSubgraph:
    """``start_node`` .. ``end_node`` (one op, or op + relu), ``base_op_node`` the op whose
    type decides the match."""
    __slots__ = ("start_node", "end_node", "base_op_node")

    def __init__(self, start_node, end_node, base_op_node):
        self.start_node, self.end_node, self.base_op_node = start_node, end_node, base_op_node

    def __repr__(self):
        return f"NSSubgraph({self.start_node.name}..{self.end_node.name})"


def _op_type(node, gm):
    if node.op == "call_module":
        return type(gm.get_submodule(node.target))
    return node.target


def _type_to_base(base_name_to_sets):
    out = {}
    for base, ops in base_name_to_sets.items():
        for op in ops:
            out.setdefault(op, base)
    return out


def _matchable(node, gm, unmatchable, to_base):
    """A call whose op is in some related-op family and not unmatchable (torch's rule)."""
    if node.op == "call_function":
        ok = node.target not in unmatchable["funs_unmatchable"]
    elif node.op == "call_method":
        ok = node.target not in unmatchable["meths_unmatchable"]
    elif node.op == "call_module":
        ok = type(gm.get_submodule(node.target)) not in unmatchable["mods_unmatchable"]
    else:
        return False
    return ok and to_base.get(_op_type(node, gm)) is not None


def subgraphs(gm, base_name_to_sets=None, unmatchable=None):
    """The matchable subgraphs of ``gm`` in the order torch's matcher visits them: depth
    first from the output, an op's inputs pushed in order (so the last input is visited
    first)."""
    base_name_to_sets = base_name_to_sets or get_base_name_to_sets_of_related_ops()
    unmatchable = unmatchable or get_unmatchable_types_map()
    to_base = _type_to_base(base_name_to_sets)
    by_end, inner = {}, set()
    for node in gm.graph.nodes:
        if node in inner or not _matchable(node, gm, unmatchable, to_base):
            continue
        end = node
        followers = FUSION_FOLLOWERS.get(to_base.get(_op_type(node, gm)), ())
        while followers and len(end.users) == 1:
            user = next(iter(end.users))
            if not user.op.startswith("call") or not user.args or user.args[0] is not end:
                break
            user_base = to_base.get(_op_type(user, gm))
            if user_base not in followers:
                break
            end = user
            inner.add(user)
            followers = FUSION_FOLLOWERS.get(user_base, ())
        by_end[end] = NSSubgraph(node, end, node)
    out, seen = [], set()
    stack = [n for n in gm.graph.nodes if n.op == "output"]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        sub = by_end.get(node)
        if sub is not None:
            out.append(sub)
            node = sub.start_node
            seen.add(node)
        stack.extend(node.all_input_nodes)
    return out


def _related(type_a, type_b, to_base):
    base_a, base_b = to_base.get(type_a), to_base.get(type_b)
    return base_a is not None and base_a == base_b


def get_matching_subgraph_pairs(gm_a, gm_b, base_name_to_sets_of_related_ops=None,
                                unmatchable_types_map=None):
    """``[(ref_name, (subgraph_a, subgraph_b))]`` in torch's order; ``ref_name`` is
    ``base_op_<family>_<n>``, n counting a family's subgraphs in visiting order."""
    base_name_to_sets = base_name_to_sets_of_related_ops or \
        get_base_name_to_sets_of_related_ops()
    to_base = _type_to_base(base_name_to_sets)
    list_a = subgraphs(gm_a, base_name_to_sets, unmatchable_types_map)
    list_b = subgraphs(gm_b, base_name_to_sets, unmatchable_types_map)
    pairs, counts = [], {}
    for sub_a, sub_b in zip(list_a, list_b):
        type_a, type_b = _op_type(sub_a.base_op_node, gm_a), _op_type(sub_b.base_op_node, gm_b)
        if not _related(type_a, type_b, to_base):
            raise GraphMatchingException(
                f"The subgraphs ({sub_a.start_node.name}, {type_a}) and "
                f"({sub_b.start_node.name}, {type_b}) are not related. Please ensure that "
                f"the two models you pass in have the same number of subgraphs, and each "
                f"pair of subgraphs is related to each other.")
        base = to_base[type_a]
        n = counts.get(base, 0)
        counts[base] = n + 1
        pairs.append((f"base_op_{base}_{n}", (sub_a, sub_b)))
    pairs.reverse()
    return pairs
