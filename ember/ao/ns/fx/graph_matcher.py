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


def _matchable(node, gm, unmatchable):
    if node.op == "call_function":
        return node.target not in unmatchable["funs_unmatchable"]
    if node.op == "call_method":
        return node.target not in unmatchable["meths_unmatchable"]
    if node.op == "call_module":
        mod = gm.get_submodule(node.target)
        if type(mod) in unmatchable["mods_unmatchable"]:
            return False
        return not _is_logger_or_observer(mod)
    return False


def _is_logger_or_observer(mod):
    from ember.ao.quantization.observer import ObserverBase
    name = type(mod).__name__
    return isinstance(mod, ObserverBase) or name.endswith("Logger") or \
        "FakeQuantize" in name


def subgraphs(gm, base_name_to_sets=None, unmatchable=None):
    """The matchable subgraphs of ``gm`` in execution order."""
    base_name_to_sets = base_name_to_sets or get_base_name_to_sets_of_related_ops()
    unmatchable = unmatchable or get_unmatchable_types_map()
    to_base = _type_to_base(base_name_to_sets)
    out, taken = [], set()
    for node in gm.graph.nodes:
        if node in taken or not _matchable(node, gm, unmatchable):
            continue
        end = node
        base = to_base.get(_op_type(node, gm))
        followers = FUSION_FOLLOWERS.get(base, ())
        while followers and len(end.users) == 1:
            user = next(iter(end.users))
            user_base = to_base.get(_op_type(user, gm)) if user.op.startswith("call") else None
            if user_base not in followers or user.args[0] is not end:
                break
            end = user
            taken.add(user)
            followers = FUSION_FOLLOWERS.get(user_base, ()) if user_base != "relu" else ()
        out.append(NSSubgraph(node, end, node))
    return out


def _related(type_a, type_b, to_base):
    if type_a is type_b or type_a == type_b:
        return True
    base_a, base_b = to_base.get(type_a), to_base.get(type_b)
    return base_a is not None and base_a == base_b


def get_matching_subgraph_pairs(gm_a, gm_b, base_name_to_sets_of_related_ops=None,
                                unmatchable_types_map=None):
    """``[(ref_name, (subgraph_a, subgraph_b))]`` in execution order; ``ref_name`` is
    ``base_op_<family index>_<n>`` as torch names them."""
    base_name_to_sets = base_name_to_sets_of_related_ops or \
        get_base_name_to_sets_of_related_ops()
    to_base = _type_to_base(base_name_to_sets)
    bases = list(base_name_to_sets)
    list_a = subgraphs(gm_a, base_name_to_sets, unmatchable_types_map)
    list_b = subgraphs(gm_b, base_name_to_sets, unmatchable_types_map)
    pairs = []
    while list_a and list_b:
        sub_a, sub_b = list_a.pop(), list_b.pop()
        type_a, type_b = _op_type(sub_a.base_op_node, gm_a), _op_type(sub_b.base_op_node, gm_b)
        if not _related(type_a, type_b, to_base):
            raise GraphMatchingException(
                f"The subgraphs ({sub_a.start_node.name}, {type_a}) and "
                f"({sub_b.start_node.name}, {type_b}) are not related. Please ensure that "
                f"the two models you pass in have the same number of subgraphs, and each "
                f"pair of subgraphs is related to each other.")
        pairs.append((sub_a, sub_b, to_base.get(type_a)))
    pairs.reverse()
    counts, out = {}, []
    for sub_a, sub_b, base in pairs:
        index = bases.index(base) if base in bases else len(bases) + len(counts)
        n = counts.get(index, 0)
        counts[index] = n + 1
        out.append((f"base_op_{index}_{n}", (sub_a, sub_b)))
    return out
