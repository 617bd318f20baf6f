"""Which ops of a float and a quantized model correspond (torch.ao.ns.fx.mappings): sets
of related ops under base names, the ops that are never matched, and the fusions a float
model's subgraphs follow (conv + relu pairs with one quantized ConvReLU2d)."""
from __future__ import annotations

import importlib
import operator

import ember
import ember.nn as nn
import ember.nn.functional as F

__all__ = ["get_base_name_to_sets_of_related_ops", "get_unmatchable_types_map",
           "get_target_type_str", "FUSION_FOLLOWERS"]


def _lookup(module, name):
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


_NNQ = "ember.ao.nn.quantized"
_NNQD = "ember.ao.nn.quantized.dynamic"
_NNI = "ember.ao.nn.intrinsic"
_NNIQ = "ember.ao.nn.intrinsic.quantized"
_NNIQD = "ember.ao.nn.intrinsic.quantized.dynamic"
_NNQAT = "ember.ao.nn.qat"
_NNIQAT = "ember.ao.nn.intrinsic.qat"
_NNQR = "ember.ao.nn.quantized.reference"


def _families():
    """base name -> list of (module path, name) / objects / method names."""
    fams = {}
    for d in (1, 2, 3):
        fams[f"conv{d}d"] = [nn.__dict__[f"Conv{d}d"], (_NNQ, f"Conv{d}d"),
                             (_NNI, f"ConvReLU{d}d"), (_NNIQ, f"ConvReLU{d}d"),
                             (_NNI, f"ConvBn{d}d"), (_NNI, f"ConvBnReLU{d}d"),
                             (_NNQAT, f"Conv{d}d"), (_NNIQAT, f"ConvBn{d}d"),
                             (_NNIQAT, f"ConvBnReLU{d}d"), (_NNIQAT, f"ConvReLU{d}d"),
                             (_NNQR, f"Conv{d}d"), getattr(ember, f"conv{d}d"),
                             ("q", f"conv{d}d"), ("q", f"conv{d}d_relu")]
    fams["linear"] = [nn.Linear, (_NNQ, "Linear"), (_NNI, "LinearReLU"), (_NNIQ, "LinearReLU"),
                      (_NNQD, "Linear"), (_NNQAT, "Linear"), (_NNIQAT, "LinearReLU"),
                      (_NNI, "LinearBn1d"), (_NNIQAT, "LinearBn1d"), (_NNQR, "Linear"),
                      (_NNIQD, "LinearReLU"), F.linear, ("q", "linear"), ("q", "linear_relu"),
                      ("q", "linear_dynamic"), ("q", "linear_relu_dynamic")]
    fams["add"] = [operator.add, ember.add, ("q", "add"), ("q", "add_relu")]
    fams["mul"] = [operator.mul, ember.mul, ("q", "mul"), ("q", "mul_relu")]
    fams["cat"] = [ember.cat, ("q", "cat")]
    fams["relu"] = [F.relu, nn.ReLU, ember.relu, "relu"]
    fams["hardswish"] = [F.hardswish, nn.Hardswish, (_NNQ, "Hardswish"), ("q", "hardswish")]
    fams["sigmoid"] = [ember.sigmoid, "sigmoid", nn.Sigmoid, F.sigmoid]
    fams["tanh"] = [ember.tanh, "tanh", nn.Tanh, F.tanh]
    fams["elu"] = [F.elu, nn.ELU, (_NNQ, "ELU"), ("q", "elu")]
    fams["leaky_relu"] = [F.leaky_relu, nn.LeakyReLU, (_NNQ, "LeakyReLU"), ("q", "leaky_relu")]
    for d in (2, 3):
        fams[f"batchnorm{d}d"] = [nn.__dict__[f"BatchNorm{d}d"], (_NNQ, f"BatchNorm{d}d"),
                                  (_NNI, f"BNReLU{d}d"), (_NNIQ, f"BNReLU{d}d")]
    fams["layer_norm"] = [nn.LayerNorm, (_NNQ, "LayerNorm"), F.layer_norm]
    fams["embedding"] = [nn.Embedding, (_NNQ, "Embedding"), (_NNQAT, "Embedding")]
    fams["lstm"] = [nn.LSTM, (_NNQD, "LSTM")]
    return fams


def _resolve(item):
    if isinstance(item, tuple):
        if item[0] == "q":
            quantized = ember.ops.quantized
            return getattr(quantized, item[1], None)
        return _lookup(*item)
    return item


def get_base_name_to_sets_of_related_ops():
    """``{"torch.nn.Conv2d"-like base name: {related op types}}`` (written ones only)."""
    out = {}
    for base, items in _families().items():
        ops = {_resolve(i) for i in items}
        ops.discard(None)
        out[base] = ops
    return out


_METHODS_UNMATCHABLE = {"to", "dequantize", "reshape", "view", "unsqueeze_", "unsqueeze",
                        "transpose", "squeeze_", "squeeze", "size", "shape", "resize_",
                        "repeat_interleave", "repeat", "permute", "numel", "mean", "detach_",
                        "detach", "contiguous", "clamp", "chunk"}


def get_unmatchable_types_map():
    """``{"funs_unmatchable": ..., "mods_unmatchable": ..., "meths_unmatchable": ...}``."""
    funs = {ember.quantize_per_tensor, ember.quantize_per_channel, operator.getitem,
            ember.dequantize}
    mods = {nn.Identity}
    return {"funs_unmatchable": funs, "mods_unmatchable": mods,
            "meths_unmatchable": set(_METHODS_UNMATCHABLE)}


# a float subgraph: a node of these families followed by its only user, a relu (or bn)
FUSION_FOLLOWERS = {"conv1d": ("relu", "batchnorm"), "conv2d": ("relu", "batchnorm2d"),
                    "conv3d": ("relu", "batchnorm3d"), "linear": ("relu",),
                    "add": ("relu",), "mul": ("relu",), "batchnorm2d": ("relu",),
                    "batchnorm3d": ("relu",)}


def get_target_type_str(node, gm):
    """The op's type as torch writes it: a module's class path (``torch.nn.modules.conv.
    Conv2d``), a function's public name (``torch.nn.functional.adaptive_avg_pool2d``), a
    method's name."""
    if node.op == "call_module":
        cls = type(gm.get_submodule(node.target))
        path = f"{cls.__module__}.{cls.__qualname__}"
        return "torch" + path[len("ember"):] if path.startswith("ember.") else path
    if node.op == "call_function":
        from ember.fx._names import public_name
        fn = node.target
        public = public_name(fn)
        if public:
            return _torch_builtin_path(public)
        if getattr(fn, "_namespace", None):
            return f"torch.ops.{fn._namespace}.{fn.__name__}"
        return f"{getattr(fn, '__module__', None) or type(fn).__module__}." \
               f"{getattr(fn, '__name__', str(fn))}"
    if node.op == "call_method":
        return node.target
    return ""


# top-level torch functions written in Python (torch/functional.py); the rest are builtins
_PYTHON_TORCH = {"split", "einsum", "norm", "stft", "istft", "meshgrid", "tensordot",
                 "unique", "unique_consecutive", "chain_matmul", "atleast_1d", "atleast_2d",
                 "atleast_3d", "block_diag", "cdist", "broadcast_tensors", "broadcast_shapes",
                 "lu", "unravel_index", "cartesian_prod"}
# nn.functional functions that are torch._C._nn builtins themselves
_C_NN = {"linear", "avg_pool2d", "avg_pool3d", "gelu", "hardtanh_", "elu_", "leaky_relu_",
         "softplus", "softshrink", "one_hot"}


def _torch_builtin_path(public):
    """``torch.flatten`` -> ``torch._VariableFunctionsClass.flatten``, ``torch.nn.functional.
    linear`` -> ``torch._C._nn.linear``: where torch's builtins live, as torch prints their
    types."""
    parts = public.split(".")
    if len(parts) == 2 and parts[0] == "torch" and parts[1] not in _PYTHON_TORCH:
        return f"torch._VariableFunctionsClass.{parts[1]}"
    if public.startswith("torch.nn.functional.") and parts[-1] in _C_NN:
        return f"torch._C._nn.{parts[-1]}"
    return public
