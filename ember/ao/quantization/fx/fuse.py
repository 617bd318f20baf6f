"""Fusion in FX graph mode: patterns with a ``fuser_method`` in the backend config
(conv-bn-relu, linear-relu, bn-relu...) become one fused module at the first module's
place; the other nodes of the pattern leave the graph."""
from __future__ import annotations

import ember.nn as nn
import ember.nn.functional as F
from ember.fx import GraphModule
from ember.ao.quantization.fx.match_utils import is_match, sorted_pattern_configs

__all__ = ["fuse"]


def _as_module(node, modules):
    if node.op == "call_module":
        return modules[node.target]
    if node.target is F.relu or node.target == "relu":
        return nn.ReLU()
    raise NotImplementedError(f"fusing a {node.op} node ({node.target}) is not supported")


def fuse(model: GraphModule, is_qat, backend_config):
    """Fuse ``model``'s graph in place (module swaps and node removal); returns it."""
    modules = dict(model.named_modules(remove_duplicate=False))
    configs = [c for c in sorted_pattern_configs(backend_config) if c.fuser_method is not None]
    done = set()
    for node in reversed(list(model.graph.nodes)):
        if node in done or node.op not in ("call_module", "call_function", "call_method"):
            continue
        for conf in configs:
            nodes = []
            if is_match(node, conf.complex_format, modules, nodes) and \
                    not any(n in done for n in nodes) and nodes[0].op == "call_module":
                mods = [_as_module(n, modules) for n in nodes]
                fused = conf.fuser_method(is_qat, *mods)
                root = nodes[0]
                parent, _, name = root.target.rpartition(".")
                setattr(modules[parent] if parent else model, name, fused)
                modules[root.target] = fused
                node.replace_all_uses_with(root)
                for n in reversed(nodes[1:]):
                    model.graph.erase_node(n)
                    if n.op == "call_module" and not any(
                            other.target == n.target for other in model.graph.nodes):
                        model.delete_submodule(n.target)   # also when the fused module
                done.update(nodes)                         # holds the same instance
                break
    model.graph.lint()
    model.delete_all_unused_submodules()
    model.recompile()
    return model
