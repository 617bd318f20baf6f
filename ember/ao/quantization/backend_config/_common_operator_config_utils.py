"""The pattern configs the native/x86/fbgemm/qnnpack backends share, in torch's order.

Classes of ``ember.ao.nn.intrinsic``/``qat``/``quantized.reference`` are looked up when a
config is built; a class not (yet) written is left out of the patterns that name it."""
from __future__ import annotations

import importlib
import operator

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ao.quantization.backend_config.backend_config import (
    BackendPatternConfig, DTypeConfig, DTypeWithConstraints, ObservationType)

_DIFFERENT = ObservationType.OUTPUT_USE_DIFFERENT_OBSERVER_AS_INPUT
_SHARE = ObservationType.OUTPUT_SHARE_OBSERVER_WITH_INPUT
_NOT_OBSERVED = ObservationType.INPUT_OUTPUT_NOT_OBSERVED


def _cls(path):
    """``module:Name`` -> the class, or None while that module does not exist."""
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _nni(name):
    return _cls(f"ember.ao.nn.intrinsic:{name}")


def _nniqat(name):
    return _cls(f"ember.ao.nn.intrinsic.qat:{name}")


def _nnqat(name):
    return _cls(f"ember.ao.nn.qat:{name}")


def _nnqr(name):
    return _cls(f"ember.ao.nn.quantized.reference:{name}")


def _fuser(name):
    """A fuser method that calls ``fuser_method_mappings.<name>`` when run."""
    def fuse(is_qat, *mods):
        return getattr(importlib.import_module(
            "ember.ao.quantization.fuser_method_mappings"), name)(is_qat, *mods)
    fuse.__name__ = name
    return fuse


def _sequential_wrapper2(fused_cls):
    """A fuser method putting two modules into ``fused_cls`` (ConvReLU2d(conv, relu))."""
    def fuser_method(is_qat, m1, m2):
        return fused_cls(m1, m2)
    return fuser_method


def _valid(pattern):
    if isinstance(pattern, tuple):
        return all(p is not None for p in pattern)
    return pattern is not None


def _conf(pattern, dtype_configs, observation=_DIFFERENT, **kw):
    conf = BackendPatternConfig(pattern).set_observation_type(observation) \
        .set_dtype_configs(dtype_configs)
    for key, value in kw.items():
        setattr(conf, key if key in ("root_module", "qat_module", "fused_module",
                                     "fuser_method", "reference_quantized_module")
                else "_" + key, value)
    return conf


def _emit(out, pattern, dtype_configs, observation=_DIFFERENT, **kw):
    if _valid(pattern):
        out.append(_conf(pattern, dtype_configs, observation, **kw))


def _get_conv_configs(dtype_configs):
    out = []
    fused_relu = {1: "ConvReLU1d", 2: "ConvReLU2d", 3: "ConvReLU3d"}
    for d in (1, 2, 3):
        conv = getattr(nn, f"Conv{d}d")
        bn = getattr(nn, f"BatchNorm{d}d")
        convt = getattr(nn, f"ConvTranspose{d}d")
        func = getattr(ember, f"conv{d}d")
        qat_conv = _nnqat(f"Conv{d}d")
        ref = _nnqr(f"Conv{d}d")
        convrelu, convrelu_qat = _nni(fused_relu[d]), _nniqat(fused_relu[d])
        convbn, convbnrelu = _nni(f"ConvBn{d}d"), _nni(f"ConvBnReLU{d}d")
        convbn_qat, convbnrelu_qat = _nniqat(f"ConvBn{d}d"), _nniqat(f"ConvBnReLU{d}d")
        _emit(out, conv, dtype_configs, root_module=conv, qat_module=qat_conv,
              reference_quantized_module=ref)
        _emit(out, qat_conv, dtype_configs, root_module=conv, reference_quantized_module=ref)
        _emit(out, func, dtype_configs, input_type_to_index={"weight": 1, "bias": 2})
        for relu in (nn.ReLU, F.relu):
            _emit(out, (conv, relu), dtype_configs, fused_module=convrelu,
                  fuser_method=_sequential_wrapper2(convrelu) if convrelu else None)
        _emit(out, convrelu, dtype_configs, qat_module=convrelu_qat)
        _emit(out, convrelu_qat, dtype_configs, root_module=conv,
              reference_quantized_module=ref)
        for relu in (nn.ReLU, F.relu):
            _emit(out, (func, relu), dtype_configs)
        _emit(out, (conv, bn), dtype_configs, fused_module=convbn,
              fuser_method=_fuser("fuse_conv_bn"))
        _emit(out, (conv, bn, nn.ReLU), dtype_configs, fused_module=convbnrelu,
              fuser_method=_fuser("fuse_conv_bn_relu"))
        _emit(out, (conv, bn, F.relu), dtype_configs, root_module=conv,   # as torch's
              fused_module=convbnrelu, fuser_method=_fuser("fuse_conv_bn_relu"))
        _emit(out, convbn, dtype_configs, qat_module=convbn_qat)
        _emit(out, convbnrelu, dtype_configs, qat_module=convbnrelu_qat)
        _emit(out, convbn_qat, dtype_configs, root_module=conv, reference_quantized_module=ref)
        _emit(out, convbnrelu_qat, dtype_configs, root_module=conv,
              reference_quantized_module=ref)
        reft = _nnqr(f"ConvTranspose{d}d")
        _emit(out, convt, dtype_configs, root_module=convt, reference_quantized_module=reft)
        _emit(out, (convt, bn), dtype_configs, root_module=convt,
              reference_quantized_module=reft, fuser_method=_fuser("fuse_convtranspose_bn"))
        _emit(out, getattr(ember, f"conv_transpose{d}d"), dtype_configs,
              input_type_to_index={"weight": 1, "bias": 2})
    return out


def _get_linear_configs(dtype_configs):
    out = []
    ref, qat_linear = _nnqr("Linear"), _nnqat("Linear")
    linrelu, linrelu_qat = _nni("LinearReLU"), _nniqat("LinearReLU")
    linbn, linbn_qat = _nni("LinearBn1d"), _nniqat("LinearBn1d")
    _emit(out, nn.Linear, dtype_configs, root_module=nn.Linear, qat_module=qat_linear,
          reference_quantized_module=ref)
    _emit(out, qat_linear, dtype_configs, root_module=nn.Linear, reference_quantized_module=ref)
    _emit(out, F.linear, dtype_configs, input_type_to_index={"weight": 1, "bias": 2})
    for relu in (nn.ReLU, F.relu):
        _emit(out, (nn.Linear, relu), dtype_configs, fused_module=linrelu,
              fuser_method=_sequential_wrapper2(linrelu) if linrelu else None)
    _emit(out, linrelu, dtype_configs, root_module=nn.Linear, qat_module=linrelu_qat,
          reference_quantized_module=ref)
    _emit(out, linrelu_qat, dtype_configs, root_module=nn.Linear, reference_quantized_module=ref)
    for relu in (nn.ReLU, F.relu):
        _emit(out, (F.linear, relu), dtype_configs)
    _emit(out, (nn.Linear, nn.BatchNorm1d), dtype_configs, fused_module=linbn,
          fuser_method=_fuser("fuse_linear_bn"))
    _emit(out, linbn, dtype_configs, root_module=nn.Linear, qat_module=linbn_qat,
          reference_quantized_module=ref)
    _emit(out, linbn_qat, dtype_configs, root_module=nn.Linear, reference_quantized_module=ref)
    return out


def _get_binary_op_configs(dtype_configs):
    out = []
    for op in (operator.add, ember.add, operator.mul, ember.mul):
        for relu in (nn.ReLU, F.relu, ember.relu):
            _emit(out, (op, relu), dtype_configs, num_tensor_args_to_observation_type={
                0: _DIFFERENT, 1: _SHARE, 2: _DIFFERENT})
        _emit(out, op, dtype_configs, num_tensor_args_to_observation_type={
            0: _DIFFERENT, 1: _SHARE, 2: _DIFFERENT})
    _emit(out, ember.matmul, dtype_configs)
    return out


def _fixed(scale, zero_point):
    return DTypeWithConstraints(ember.quint8, 0, 255, None, None, scale, zero_point)


def _get_fixed_qparams_op_configs(dtype_configs):
    """Sigmoid-like ops: a quint8 config becomes one with the op's fixed scale/zero point
    (1/256, 0; tanh 2/256, 128); other configs stay as they are."""
    def fixed(scale, zero_point):
        out = []
        for d in dtype_configs:
            if d.input_dtype is ember.quint8 and d.output_dtype is ember.quint8:
                d = DTypeConfig(_fixed(scale, zero_point), _fixed(scale, zero_point))
            out.append(d)
        return out
    sig, tanh = fixed(1.0 / 256.0, 0), fixed(2.0 / 256.0, 128)
    out = []
    for pattern, dcs in ((nn.Hardsigmoid, sig), (F.hardsigmoid, sig), ("hardsigmoid", sig),
                         ("hardsigmoid_", sig), (nn.Sigmoid, sig), (ember.sigmoid, sig),
                         ("sigmoid", sig), ("sigmoid_", sig), (nn.Softmax, sig),
                         (nn.Tanh, tanh), (ember.tanh, tanh), ("tanh", tanh), ("tanh_", tanh)):
        _emit(out, pattern, dcs)
    return out


_SHARE_OPS = (
    nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d, nn.AvgPool1d,
    nn.AvgPool2d, nn.AvgPool3d, nn.Hardtanh, nn.Identity, nn.MaxPool1d, nn.MaxPool2d,
    nn.MaxPool3d, nn.PixelShuffle, nn.PixelUnshuffle, nn.ReLU, nn.ReLU6,
    ember.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.hardtanh,
    F.hardtanh_, F.interpolate, F.max_pool1d, F.max_pool2d, F.max_pool3d,
    ember.pixel_shuffle, ember.pixel_unshuffle, F.relu, F.relu6, ember.avg_pool1d,
    F.avg_pool2d, F.avg_pool3d, ember.clamp, ember.flatten, ember.mean, ember.narrow,
    ember.repeat_interleave, ember.transpose, ember.squeeze, ember.stack, ember.unsqueeze,
    operator.floordiv, "contiguous", "clamp", "detach", "detach_", "mean", "permute",
    "repeat", "repeat_interleave", "reshape", "resize_", "relu", "relu_", "squeeze",
    "squeeze_", "transpose", "unsqueeze", "unsqueeze_", "view")

_DEFAULT_OPS = (nn.ELU, nn.LeakyReLU, nn.Hardswish, nn.InstanceNorm1d, nn.InstanceNorm2d,
                nn.InstanceNorm3d, nn.Dropout, nn.PReLU, F.elu, F.hardswish, F.leaky_relu,
                F.dropout)


def _get_default_op_configs(dtype_configs):
    out = [_conf(op, dtype_configs) for op in _DEFAULT_OPS]
    out.append(_conf(F.group_norm, dtype_configs,
                     input_type_to_index={"weight": 2, "bias": 3}))
    out.append(_conf(F.instance_norm, dtype_configs,
                     input_type_to_index={"weight": 3, "bias": 4}))
    return out


def _get_share_qparams_op_configs(dtype_configs):
    return [_conf(op, dtype_configs, _SHARE) for op in _SHARE_OPS]


def _get_tensor_info_op_configs(dtype_configs):
    return [_conf(op, dtype_configs, _NOT_OBSERVED) for op in ("shape", "size")]


def _get_cat_config(dtype_configs):
    return [_conf(ember.cat, dtype_configs, _SHARE)]


def _get_bn_configs(dtype_configs):
    out = []
    for d in (2, 3):
        bn, fused = getattr(nn, f"BatchNorm{d}d"), _nni(f"BNReLU{d}d")
        for relu in (nn.ReLU, F.relu):
            _emit(out, (bn, relu), dtype_configs, fused_module=fused,
                  fuser_method=_sequential_wrapper2(fused) if fused else None)
        _emit(out, bn, dtype_configs)
    for d in (2, 3):
        _emit(out, _nni(f"BNReLU{d}d"), dtype_configs)
    return out


def _get_ln_configs(dtype_configs):
    return [_conf(nn.LayerNorm, dtype_configs),
            _conf(F.layer_norm, dtype_configs, input_type_to_index={"weight": 2, "bias": 3})]


def _get_rnn_op_configs(dtype_configs):
    out = []
    for name in ("GRUCell", "LSTMCell", "RNNCell", "LSTM", "GRU"):
        mod = getattr(nn, name)
        _emit(out, mod, dtype_configs, root_module=mod, reference_quantized_module=_nnqr(name))
    return out


def _get_embedding_op_configs(dtype_configs):
    out = []
    for name in ("Embedding", "EmbeddingBag"):
        mod, qat = getattr(nn, name), _nnqat(name)
        ref = _nnqr(name)
        _emit(out, mod, dtype_configs, root_module=mod, qat_module=qat,
              reference_quantized_module=ref)
        _emit(out, qat, dtype_configs, root_module=mod, reference_quantized_module=ref)
    return out
