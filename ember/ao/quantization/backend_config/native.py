"""The backend configs of ember's quantized kernels: ``native`` (the default for FX graph
mode), ``x86``/``fbgemm`` (no LayerNorm) and ``qnnpack`` (also qint8 with its scale limits)."""
from __future__ import annotations

import ember
from ember.ao.quantization.backend_config import _common_operator_config_utils as C
from ember.ao.quantization.backend_config.backend_config import (
    BackendConfig, DTypeConfig, DTypeWithConstraints)

__all__ = ["get_native_backend_config", "get_native_backend_config_dict",
           "get_fbgemm_backend_config", "get_x86_backend_config",
           "get_qnnpack_backend_config"]

_q = ember.quint8
weighted_op_quint8_dtype_config = DTypeConfig(_q, _q, ember.qint8, ember.float32)
default_op_quint8_dtype_config = DTypeConfig(_q, _q)
default_dynamic_int8_dtype_config = DTypeConfig(_q, ember.float32, ember.qint8, ember.float32,
                                                True)
default_dynamic_float16_dtype_config = DTypeConfig(ember.float16, ember.float32, ember.float16,
                                                   ember.float32, True)
weight_only_quint8_dtype_config = DTypeConfig(ember.float32, ember.float32, ember.quint8)
weight_only_quint4x2_dtype_config = DTypeConfig(ember.float32, ember.float32, ember.quint4x2)
input_output_only_quint8_dtype_config = DTypeConfig(_q, _q, ember.float32, ember.float32)

_qnnpack_act = DTypeWithConstraints(ember.qint8, scale_min_lower_bound=2 ** -12)
_qnnpack_weight = DTypeWithConstraints(ember.qint8, -127, 127, 2 ** -12)
qnnpack_weighted_op_qint8_symmetric_dtype_config = DTypeConfig(
    _qnnpack_act, _qnnpack_act, _qnnpack_weight, ember.float32)
qnnpack_default_op_qint8_symmetric_dtype_config = DTypeConfig(_qnnpack_act, _qnnpack_act)


def _build(name, weighted, default, linear, layer_norm=True, tensor_info=True):
    conf = BackendConfig(name)
    conf.set_backend_pattern_configs(C._get_conv_configs(weighted))
    conf.set_backend_pattern_configs(C._get_linear_configs(linear))
    conf.set_backend_pattern_configs(C._get_binary_op_configs(default))
    conf.set_backend_pattern_configs(C._get_cat_config(default))
    conf.set_backend_pattern_configs(C._get_default_op_configs(default))
    conf.set_backend_pattern_configs(C._get_fixed_qparams_op_configs(default))
    conf.set_backend_pattern_configs(C._get_share_qparams_op_configs(default))
    if tensor_info:
        conf.set_backend_pattern_configs(C._get_tensor_info_op_configs(default))
    conf.set_backend_pattern_configs(C._get_bn_configs(default))
    if layer_norm:
        conf.set_backend_pattern_configs(C._get_ln_configs([input_output_only_quint8_dtype_config]))
    conf.set_backend_pattern_configs(C._get_rnn_op_configs(
        [default_dynamic_int8_dtype_config, default_dynamic_float16_dtype_config]))
    conf.set_backend_pattern_configs(C._get_embedding_op_configs(
        [weight_only_quint8_dtype_config, weight_only_quint4x2_dtype_config]))
    return conf


_LINEAR = [weighted_op_quint8_dtype_config, default_dynamic_int8_dtype_config,
           default_dynamic_float16_dtype_config]


def get_native_backend_config():
    """The patterns ember's quantized kernels run (torch's ``native`` config)."""
    return _build("native", [weighted_op_quint8_dtype_config],
                  [default_op_quint8_dtype_config], _LINEAR)


def get_native_backend_config_dict():
    return get_native_backend_config().to_dict()


def get_x86_backend_config():
    return _build("x86", [weighted_op_quint8_dtype_config], [default_op_quint8_dtype_config],
                  _LINEAR, layer_norm=False)


def get_fbgemm_backend_config():
    return _build("fbgemm", [weighted_op_quint8_dtype_config],
                  [default_op_quint8_dtype_config], _LINEAR, layer_norm=False)


def get_qnnpack_backend_config():
    return _build("qnnpack",
                  [qnnpack_weighted_op_qint8_symmetric_dtype_config,
                   weighted_op_quint8_dtype_config],
                  [qnnpack_default_op_qint8_symmetric_dtype_config,
                   default_op_quint8_dtype_config],
                  [qnnpack_weighted_op_qint8_symmetric_dtype_config] + _LINEAR,
                  layer_norm=False, tensor_info=False)
