"""Weights of a subgraph's base op (torch.ao.ns.fx.weight_utils): a float or QAT module's
``weight`` (a fused module's first child's), a quantized module's ``weight()``, a functional
linear/conv's weight argument, a ``quantized::linear``/``conv`` op's packed weight."""
from __future__ import annotations

import ember
import ember.nn as nn
import ember.nn.functional as F

__all__ = ["extract_weight_from_node"]

_FUNCTIONAL = (F.linear, ember.conv1d, ember.conv2d, ember.conv3d)
_FUNCTIONAL_ALIASES = {F.conv1d: ember.conv1d, F.conv2d: ember.conv2d, F.conv3d: ember.conv3d}


def _attr(gm, node):
    obj = gm
    for part in node.target.split("."):
        obj = getattr(obj, part)
    return obj


def _module_weight(mod):
    if isinstance(mod, nn.Sequential) and len(mod) and hasattr(mod[0], "weight"):
        mod = mod[0]                        # fused ConvReLU2d / LinearReLU
    weight = getattr(mod, "weight", None)
    if callable(weight) and not isinstance(weight, ember.Tensor):
        weight = weight()                   # quantized modules: weight() -> qint8
    if isinstance(weight, ember.Tensor):
        return weight.detach()
    return None


def _packed_weight(packed):
    unpacked = packed.unpack() if hasattr(packed, "unpack") else None
    if unpacked is None:
        return None
    return unpacked[0]


# families (mappings._FAMILIES positions) whose weights are compared: convolutions,
# linear, LSTM (torch extracts no other weights: BatchNorm's are left out)
_WEIGHTED_FAMILIES = {"0", "1", "2", "3", "4", "5", "6", "7", "14"}


def extract_weight_from_node(node, gm):
    """The weight tensor of ``node`` (a module call or functional op), or None."""
    from ember.ao.ns.fx.graph_matcher import _op_type, _type_to_base
    from ember.ao.ns.fx.mappings import get_base_name_to_sets_of_related_ops
    if node.op not in ("call_module", "call_function"):
        return None
    base = _type_to_base(get_base_name_to_sets_of_related_ops()).get(_op_type(node, gm))
    if base not in _WEIGHTED_FAMILIES:
        return None
    if node.op == "call_module":
        return _module_weight(gm.get_submodule(node.target))
    target = _FUNCTIONAL_ALIASES.get(node.target, node.target)
    if target in _FUNCTIONAL:
        w = node.args[1] if len(node.args) > 1 else node.kwargs.get("weight")
        while getattr(w, "op", None) in ("call_module", "call_method") and w.args:
            w = w.args[0]                  # through observers / dequantize
        if getattr(w, "op", None) == "call_function" and w.args:
            w = w.args[0]                   # through quantize_per_channel
        return _attr(gm, w).detach() if getattr(w, "op", None) == "get_attr" else None
    quantized = ember.ops.quantized
    packed_ops = [getattr(quantized, n, None) for n in (
        "linear", "linear_relu", "conv1d", "conv2d", "conv3d", "conv1d_relu", "conv2d_relu",
        "conv3d_relu", "linear_dynamic")]
    if node.target in [p for p in packed_ops if p is not None]:
        packed = node.args[1]
        if getattr(packed, "op", None) == "get_attr":
            return _packed_weight(_attr(gm, packed))
    return None
