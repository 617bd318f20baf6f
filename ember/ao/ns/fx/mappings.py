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


# torch's sets of related ops, in torch's order (the position names subgraphs
# base_op_<position>_<n>); "nn." ember.nn, "nni."/"nniqat."/"nniq."/"nniqd." intrinsic
# (float/QAT/quantized/dynamic), "nnqat."/"nnqatd."/"nnq."/"nnqd."/"nnqr." QAT/quantized/
# dynamic/reference, "T." top-level function (and the nn.functional one of that name),
# "F." nn.functional, "q." ember.ops.quantized, "op." operator, 'name' a method
_FAMILIES = [
    "nn.Conv1d nnq.Conv1d nnqr.Conv1d nnqat.Conv1d nni.ConvReLU1d nni.ConvBn1d "
    "nni.ConvBnReLU1d nniqat.ConvBn1d nniqat.ConvBnReLU1d nniqat.ConvReLU1d nniq.ConvReLU1d",
    "nn.Conv2d nnq.Conv2d nnqr.Conv2d nnqat.Conv2d nni.ConvAdd2d nni.ConvAddReLU2d "
    "nni.ConvBn2d nni.ConvBnReLU2d nni.ConvReLU2d nniqat.ConvBn2d nniqat.ConvBnReLU2d "
    "nniqat.ConvReLU2d nniq.ConvAdd2d nniq.ConvAddReLU2d nniq.ConvReLU2d",
    "nn.Conv3d nnq.Conv3d nnqr.Conv3d nnqat.Conv3d nni.ConvReLU3d nni.ConvBn3d "
    "nni.ConvBnReLU3d nniqat.ConvBn3d nniqat.ConvBnReLU3d nniqat.ConvReLU3d nniq.ConvReLU3d",
    "T.conv1d q.conv1d q.conv1d_relu", "T.conv2d q.conv2d q.conv2d_relu",
    "T.conv3d q.conv3d q.conv3d_relu",
    "nn.Linear nnq.Linear nnqr.Linear nnqd.Linear nnqat.Linear nnqatd.Linear nni.LinearReLU "
    "nni.LinearBn1d nni.LinearLeakyReLU nni.LinearTanh nniqat.LinearReLU nniqat.LinearBn1d "
    "nniq.LinearReLU nniq.LinearLeakyReLU nniq.LinearTanh nniqd.LinearReLU "
    "nn.modules.linear.NonDynamicallyQuantizableLinear",
    "F.linear q.linear q.linear_relu",
    "T.avg_pool1d nn.AvgPool1d", "F.avg_pool2d nn.AvgPool2d", "F.avg_pool3d nn.AvgPool3d",
    "T.adaptive_avg_pool1d nn.AdaptiveAvgPool1d",
    "F.adaptive_avg_pool2d nn.AdaptiveAvgPool2d",
    "F.adaptive_avg_pool3d nn.AdaptiveAvgPool3d",
    "nn.LSTM nnqd.LSTM nnqr.LSTM",
    "op.add T.add q.add q.add_relu", "T.cat", "op.mul T.mul q.mul q.mul_relu",
    "F.relu T.relu nn.ReLU 'relu' 'relu_'",
    "F.max_pool1d nn.MaxPool1d", "F.max_pool2d nn.MaxPool2d", "F.max_pool3d nn.MaxPool3d",
    "F.sigmoid T.sigmoid nn.Sigmoid 'sigmoid' 'sigmoid_'",
    "nn.BatchNorm2d nnq.BatchNorm2d nni.BNReLU2d nniq.BNReLU2d",
    "nn.BatchNorm3d nnq.BatchNorm3d nni.BNReLU3d nniq.BNReLU3d",
    "nn.ConvTranspose1d nnq.ConvTranspose1d nnqr.ConvTranspose1d",
    "nn.ConvTranspose2d nnq.ConvTranspose2d nnqr.ConvTranspose2d",
    "nn.ConvTranspose3d nnq.ConvTranspose3d nnqr.ConvTranspose3d",
    "T.conv_transpose1d q.conv_transpose1d", "T.conv_transpose2d q.conv_transpose2d",
    "T.conv_transpose3d q.conv_transpose3d",
    "nn.ELU nnq.ELU", "nn.Embedding nnq.Embedding nnqat.Embedding nnqr.Embedding",
    "nn.EmbeddingBag nnq.EmbeddingBag nnqat.EmbeddingBag nnqr.EmbeddingBag",
    "nn.GroupNorm", "nn.Hardswish nnq.Hardswish", "nn.InstanceNorm1d nnq.InstanceNorm1d",
    "nn.InstanceNorm2d nnq.InstanceNorm2d", "nn.InstanceNorm3d nnq.InstanceNorm3d",
    "nn.LayerNorm nnq.LayerNorm", "nn.LeakyReLU nnq.LeakyReLU", "F.relu6 nn.ReLU6",
    "F.elu q.elu", "F.hardswish q.hardswish", "F.group_norm",
    "F.instance_norm q.instance_norm", "F.layer_norm q.layer_norm",
    "F.leaky_relu q.leaky_relu", "F.silu nn.SiLU", "F.mish nn.Mish",
    "F.tanh T.tanh nn.Tanh 'tanh' 'tanh_'",
    "F.hardsigmoid nn.Hardsigmoid 'hardsigmoid' 'hardsigmoid_'",
    "F.hardtanh F.hardtanh_ nn.Hardtanh", "op.floordiv", "T.unsqueeze", "T.stack",
    "T.squeeze", "T.sort", "T.repeat_interleave", "T.min", "T.mean", "T.max", "T.transpose",
    "T.flatten", "T.clamp", "T.chunk", "F.interpolate", "nn.Dropout nnq.Dropout",
    "F.dropout q.dropout", "T.matmul q.matmul", "nn.Softmax nnq.Softmax",
    "nn.PReLU nnq.PReLU", "T.prelu q.prelu", "nn.PixelShuffle", "T.pixel_shuffle",
    "nn.PixelUnshuffle", "T.pixel_unshuffle", "T.narrow",
]

_PACKAGES = {"nni": _NNI, "nniqat": _NNIQAT, "nniq": _NNIQ, "nniqd": _NNIQD,
             "nnqat": _NNQAT, "nnqatd": "ember.ao.nn.qat.dynamic", "nnq": _NNQ, "nnqd": _NNQD,
             "nnqr": _NNQR}


def _resolve_token(token):
    """One token of :data:`_FAMILIES` -> the ember objects it names (maybe none)."""
    if token.startswith("'"):
        return [token.strip("'")]
    kind, _, name = token.partition(".")
    if kind == "nn":
        module, _, attr = name.rpartition(".")
        return [_lookup("ember.nn" + ("." + module if module else ""), attr)]
    if kind == "T":         # torch.X; ember's nn.functional.X may be a separate function
        return [getattr(ember, name, None), getattr(F, name, None)]
    if kind == "F":
        return [getattr(F, name, None)]
    if kind == "op":
        return [getattr(operator, name)]
    if kind == "q":
        try:
            return [getattr(ember.ops.quantized, name)]
        except AttributeError:
            return []
    return [_lookup(_PACKAGES[kind], name)]


def _families():
    """base name (torch's: the position as a string) -> related op objects."""
    out = {}
    for i, family in enumerate(_FAMILIES):
        ops = []
        for token in family.split():
            ops.extend(o for o in _resolve_token(token) if o is not None)
        out[str(i)] = ops
    return out


def get_base_name_to_sets_of_related_ops():
    """``{"torch.nn.Conv2d"-like base name: {related op types}}`` (written ones only)."""
    return {base: set(ops) for base, ops in _families().items()}


_METHODS_UNMATCHABLE = {"to", "dequantize", "reshape", "view", "unsqueeze_", "unsqueeze",
                        "transpose", "squeeze_", "squeeze", "size", "shape", "resize_",
                        "repeat_interleave", "repeat", "permute", "numel", "mean", "detach_",
                        "detach", "contiguous", "clamp", "chunk"}


def get_unmatchable_types_map():
    """``{"funs_unmatchable": ..., "mods_unmatchable": ..., "meths_unmatchable": ...}``."""
    funs = {ember.quantize_per_tensor, operator.getitem}
    mods = {nn.Identity}
    return {"funs_unmatchable": funs, "mods_unmatchable": mods,
            "meths_unmatchable": set(_METHODS_UNMATCHABLE)}


# a subgraph: a node of these families followed by its only user of the listed families
# (torch's fusion patterns for matching: conv + bn + relu, linear + relu, add + relu ...)
_RELU, _BN2D, _BN3D = "18", "23", "24"
FUSION_FOLLOWERS = {"0": (_RELU,), "1": (_RELU, _BN2D), "2": (_RELU, _BN3D),
                    "3": (_RELU,), "4": (_RELU,), "5": (_RELU,), "6": (_RELU,), "7": (_RELU,),
                    "15": (_RELU,), "17": (_RELU,), _BN2D: (_RELU,), _BN3D: (_RELU,)}


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
        if type(fn).__name__ == "OpOverloadPacket":
            return f"{_PACKET_MODULE.get(fn._namespace, 'torch.ops.' + fn._namespace)}." \
                   f"{fn.__name__}"
        public = public_name(fn)
        if public:
            return _torch_builtin_path(public)
        return f"{getattr(fn, '__module__', None) or type(fn).__module__}." \
               f"{getattr(fn, '__name__', str(fn))}"
    if node.op == "call_method":
        return "str"              # torch writes the type of the method's name
    return ""


# the module torch 2.13's quantized op packets report (a pybind11 record's name; torch's
# Numeric Suite writes it into every result naming a quantized:: op)
_PACKET_MODULE = {"quantized": "torch._ops.quantized.pybind11_detail_function_record_v1_"
                               "system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1"}

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
