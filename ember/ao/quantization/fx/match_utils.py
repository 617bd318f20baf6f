"""Matching backend patterns against a graph, and choosing each node's qconfig.

A match is recorded for every node of the matched subgraph as a :class:`Match`: the last
node (whose output gets the output observer), the root node (the first op, whose inputs
get the input observers), all matched nodes, the pattern's config and the root's qconfig."""
from __future__ import annotations

import re

import ember.nn as nn

__all__ = ["Match", "find_matches", "node_qconfigs", "is_match"]


class Match:
    __slots__ = ("last", "root", "nodes", "config", "qconfig")

    def __init__(self, last, root, nodes, config, qconfig):
        self.last, self.root, self.nodes = last, root, nodes
        self.config, self.qconfig = config, qconfig

    def __repr__(self):
        return f"Match({self.root.name}..{self.last.name}, {self.config.pattern})"


def _functional_aliases():
    """nn.functional functions that are torch's top-level builtins in torch (F.conv2d is
    torch.conv2d) but separate functions in ember: F.X -> ember.X."""
    import ember
    import ember.nn.functional as F
    from ember.fx._names import FUNCTIONAL_BUILTINS
    out = {}
    for name in FUNCTIONAL_BUILTINS:
        f, top = getattr(F, name, None), getattr(ember, name, None)
        if f is not None and top is not None and f is not top:
            out[f] = top
    return out


_ALIASES = None


def _matches_op(node, op, modules):
    global _ALIASES
    if isinstance(op, type):
        return node.op == "call_module" and type(modules.get(node.target)) is op
    if isinstance(op, str):
        return node.op == "call_method" and node.target == op
    if node.op != "call_function":
        return False
    if node.target is op:
        return True
    if _ALIASES is None:
        _ALIASES = _functional_aliases()
    return _ALIASES.get(node.target) is op


def is_match(node, pattern, modules, nodes_out, max_uses=None):
    """Whether ``node`` ends ``pattern`` (reversed nested form); fills ``nodes_out``
    (execution order). Inner nodes must have one user."""
    if isinstance(pattern, tuple):
        head, rest = pattern[0], pattern[1:]
    else:
        head, rest = pattern, ()
    if max_uses is not None and len(node.users) > max_uses:
        return False
    if not _matches_op(node, head, modules):
        return False
    if rest:
        if not node.args or not hasattr(node.args[0], "op"):
            return False
        if not is_match(node.args[0], rest[0] if len(rest) == 1 else rest, modules,
                        nodes_out, max_uses=1):
            return False
    nodes_out.append(node)
    return True


def _depth(pattern):
    return 1 + _depth(pattern[1]) if isinstance(pattern, tuple) else 1


def sorted_pattern_configs(backend_config):
    """The backend's configs, longer (fused) patterns first, stable otherwise."""
    return sorted(backend_config.configs, key=lambda c: -_depth(c.complex_format))


def find_matches(graph, modules, backend_config, qconfigs):
    """node name -> Match, walking the graph from its end (as torch's matcher does)."""
    configs = sorted_pattern_configs(backend_config)
    matched = {}
    for node in reversed(list(graph.nodes)):
        if node.name in matched or node.op in ("placeholder", "output", "get_attr"):
            continue
        for conf in configs:
            nodes = []
            if is_match(node, conf.complex_format, modules, nodes) and \
                    not any(n.name in matched for n in nodes):
                m = Match(node, nodes[0], nodes, conf, qconfigs.get(nodes[0].name))
                for n in nodes:
                    matched[n.name] = m
                break
    return matched


def _module_name_qconfig(mapping, name, fallback):
    while name:
        if name in mapping.module_name_qconfigs:
            return mapping.module_name_qconfigs[name]
        name = name.rsplit(".", 1)[0] if "." in name else ""
    return fallback


def node_qconfigs(graph, modules, qconfig_mapping, node_name_to_scope):
    """node name -> qconfig (None: not quantized): module_name beats module_name_regex
    beats object_type beats the global qconfig."""
    out = {}
    order = getattr(qconfig_mapping, "module_name_object_type_order_qconfigs", {})
    seen = {}                     # (module path, function) -> calls so far
    for node in graph.nodes:
        if node.op == "call_module":
            name, obj_type = node.target, type(modules[node.target])
        else:
            name, obj_type = node_name_to_scope.get(node.name, ("", None))[0], node.target
        qconfig = qconfig_mapping.global_qconfig
        if obj_type in qconfig_mapping.object_type_qconfigs:
            qconfig = qconfig_mapping.object_type_qconfigs[obj_type]
        for pattern, qc in qconfig_mapping.module_name_regex_qconfigs.items():
            if re.fullmatch(pattern, name):
                qconfig = qc
                break
        qconfig = _module_name_qconfig(qconfig_mapping, name, qconfig)
        if node.op in ("call_function", "call_method") and order:
            # set_module_name_object_type_order: the index-th call of a function in a module
            index = seen.get((name, obj_type), 0)
            seen[name, obj_type] = index + 1
            qconfig = order.get((name, obj_type, index), qconfig)
        out[node.name] = qconfig
    return out


def is_weighted_module(mod):
    return isinstance(mod, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear))
