"""Module mappings (torch.ao.quantization.quantization_mappings): which quantized (or QAT,
or dynamic) class replaces each float class in ``convert``/``prepare_qat``/
``quantize_dynamic``.

The tables name classes by path and resolve them when asked, so a table lists exactly the
quantized modules ember has (each helper's modules appear once their file exists)."""
from __future__ import annotations

import copy
import importlib

from ember import nn

__all__ = ["DEFAULT_REFERENCE_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_STATIC_QUANT_MODULE_MAPPINGS",
           "DEFAULT_QAT_MODULE_MAPPINGS", "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS",
           "DEFAULT_FLOAT_TO_QUANTIZED_OPERATOR_MAPPINGS", "DEFAULT_MODULE_TO_ACT_POST_PROCESS",
           "DEFAULT_STATIC_SPARSE_QUANT_MODULE_MAPPINGS",
           "DEFAULT_DYNAMIC_SPARSE_QUANT_MODULE_MAPPINGS", "no_observer_set",
           "get_default_static_quant_module_mappings",
           "get_default_static_quant_reference_module_mappings",
           "get_embedding_static_quant_module_mappings",
           "get_default_static_sparse_quant_module_mappings", "get_static_quant_module_class",
           "get_dynamic_quant_module_class", "get_default_qat_module_mappings",
           "get_embedding_qat_module_mappings", "get_default_dynamic_quant_module_mappings",
           "get_default_dynamic_sparse_quant_module_mappings",
           "get_default_qconfig_propagation_list", "get_default_compare_output_module_list",
           "get_default_float_to_quantized_operator_mappings", "get_quantized_operator"]

_I = "ember.ao.nn.intrinsic"
_Q = "ember.ao.nn.quantized"

# (float class path, replacement class path); "nn.X" is ember.nn.X
_STATIC = [
    ("ember.ao.quantization.stubs.QuantStub", f"{_Q}.Quantize"),
    ("ember.ao.quantization.stubs.DeQuantStub", f"{_Q}.DeQuantize"),
    ("nn.BatchNorm2d", f"{_Q}.BatchNorm2d"), ("nn.BatchNorm3d", f"{_Q}.BatchNorm3d"),
    ("nn.Dropout", f"{_Q}.Dropout"), ("nn.Conv1d", f"{_Q}.Conv1d"),
    ("nn.Conv2d", f"{_Q}.Conv2d"), ("nn.Conv3d", f"{_Q}.Conv3d"),
    ("nn.ConvTranspose1d", f"{_Q}.ConvTranspose1d"),
    ("nn.ConvTranspose2d", f"{_Q}.ConvTranspose2d"),
    ("nn.ConvTranspose3d", f"{_Q}.ConvTranspose3d"), ("nn.ELU", f"{_Q}.ELU"),
    ("nn.Embedding", f"{_Q}.Embedding"), ("nn.EmbeddingBag", f"{_Q}.EmbeddingBag"),
    ("nn.GroupNorm", f"{_Q}.GroupNorm"), ("nn.Hardswish", f"{_Q}.Hardswish"),
    ("nn.InstanceNorm1d", f"{_Q}.InstanceNorm1d"), ("nn.InstanceNorm2d", f"{_Q}.InstanceNorm2d"),
    ("nn.InstanceNorm3d", f"{_Q}.InstanceNorm3d"), ("nn.LayerNorm", f"{_Q}.LayerNorm"),
    ("nn.LeakyReLU", f"{_Q}.LeakyReLU"),
    ("nn.modules.linear.NonDynamicallyQuantizableLinear", f"{_Q}.Linear"),
    ("nn.Linear", f"{_Q}.Linear"), ("nn.ReLU6", f"{_Q}.ReLU6"), ("nn.PReLU", f"{_Q}.PReLU"),
    (f"{_Q}.FloatFunctional", f"{_Q}.QFunctional"),
    (f"{_I}.BNReLU2d", f"{_I}.quantized.BNReLU2d"), (f"{_I}.BNReLU3d", f"{_I}.quantized.BNReLU3d"),
    (f"{_I}.ConvReLU1d", f"{_I}.quantized.ConvReLU1d"),
    (f"{_I}.ConvReLU2d", f"{_I}.quantized.ConvReLU2d"),
    (f"{_I}.ConvReLU3d", f"{_I}.quantized.ConvReLU3d"),
    (f"{_I}.ConvAdd2d", f"{_I}.quantized.ConvAdd2d"),
    (f"{_I}.ConvAddReLU2d", f"{_I}.quantized.ConvAddReLU2d"),
    (f"{_I}.LinearReLU", f"{_I}.quantized.LinearReLU"),
    (f"{_I}.LinearLeakyReLU", f"{_I}.quantized.LinearLeakyReLU"),
    (f"{_I}.LinearTanh", f"{_I}.quantized.LinearTanh"),
    (f"{_I}.qat.ConvBn1d", f"{_Q}.Conv1d"), (f"{_I}.qat.ConvBn2d", f"{_Q}.Conv2d"),
    (f"{_I}.qat.ConvBn3d", f"{_Q}.Conv3d"),
    (f"{_I}.qat.ConvBnReLU1d", f"{_I}.quantized.ConvReLU1d"),
    (f"{_I}.qat.ConvBnReLU2d", f"{_I}.quantized.ConvReLU2d"),
    (f"{_I}.qat.ConvBnReLU3d", f"{_I}.quantized.ConvReLU3d"),
    (f"{_I}.qat.ConvReLU2d", f"{_I}.quantized.ConvReLU2d"),
    (f"{_I}.qat.ConvReLU3d", f"{_I}.quantized.ConvReLU3d"),
    (f"{_I}.qat.LinearReLU", f"{_I}.quantized.LinearReLU"),
    (f"{_I}.qat.LinearBn1d", f"{_Q}.Linear"),
    ("ember.ao.nn.qat.Linear", f"{_Q}.Linear"), ("ember.ao.nn.qat.Conv2d", f"{_Q}.Conv2d"),
    ("ember.ao.nn.qat.Conv3d", f"{_Q}.Conv3d"),
]

_QAT = [
    ("nn.Conv2d", "ember.ao.nn.qat.Conv2d"), ("nn.Conv3d", "ember.ao.nn.qat.Conv3d"),
    ("nn.Linear", "ember.ao.nn.qat.Linear"),
    ("nn.modules.linear.NonDynamicallyQuantizableLinear", "ember.ao.nn.qat.Linear"),
    (f"{_I}.ConvBn1d", f"{_I}.qat.ConvBn1d"), (f"{_I}.ConvBn2d", f"{_I}.qat.ConvBn2d"),
    (f"{_I}.ConvBn3d", f"{_I}.qat.ConvBn3d"), (f"{_I}.ConvBnReLU1d", f"{_I}.qat.ConvBnReLU1d"),
    (f"{_I}.ConvBnReLU2d", f"{_I}.qat.ConvBnReLU2d"),
    (f"{_I}.ConvBnReLU3d", f"{_I}.qat.ConvBnReLU3d"),
    (f"{_I}.ConvReLU2d", f"{_I}.qat.ConvReLU2d"), (f"{_I}.ConvReLU3d", f"{_I}.qat.ConvReLU3d"),
    (f"{_I}.LinearReLU", f"{_I}.qat.LinearReLU"), (f"{_I}.LinearBn1d", f"{_I}.qat.LinearBn1d"),
]

_DYNAMIC = [
    ("nn.GRUCell", f"{_Q}.dynamic.GRUCell"), ("nn.Linear", f"{_Q}.dynamic.Linear"),
    ("ember.ao.nn.qat.dynamic.Linear", f"{_Q}.dynamic.Linear"),
    ("nn.modules.linear.NonDynamicallyQuantizableLinear", f"{_Q}.dynamic.Linear"),
    ("nn.LSTM", f"{_Q}.dynamic.LSTM"), ("nn.GRU", f"{_Q}.dynamic.GRU"),
    ("nn.LSTMCell", f"{_Q}.dynamic.LSTMCell"), ("nn.RNNCell", f"{_Q}.dynamic.RNNCell"),
    (f"{_I}.LinearReLU", f"{_I}.quantized.dynamic.LinearReLU"),
    ("nn.EmbeddingBag", f"{_Q}.EmbeddingBag"), ("nn.Embedding", f"{_Q}.Embedding"),
]

_REFERENCE = [
    ("ember.ao.quantization.stubs.QuantStub", f"{_Q}.Quantize"),
    ("ember.ao.quantization.stubs.DeQuantStub", f"{_Q}.DeQuantize"),
] + [(f"nn.{n}", f"{_Q}.reference.{n}") for n in (
    "Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
    "ConvTranspose3d", "Embedding", "EmbeddingBag", "GRUCell", "LSTMCell", "RNNCell", "LSTM")]

_NO_OBSERVER = ["nn.quantizable.LSTM", "nn.quantizable.MultiheadAttention"]


def _resolve(path):
    """The object at dotted ``path`` ("nn.X" meaning ember.nn.X), or None if absent."""
    if path.startswith("nn."):
        path = "ember." + path
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name, None)
            if obj is None:
                return None
        return obj
    return None


def _table(pairs):
    """{float class: replacement class} for the pairs whose classes both exist."""
    out = {}
    for src, dst in pairs:
        a, b = _resolve(src), _resolve(dst)
        if a is not None and b is not None:
            out[a] = b
    return out


def _act_post_process():
    from ember.ao.quantization import fake_quantize as F
    return {nn.Hardsigmoid: F.default_fixed_qparams_range_0to1_fake_quant,
            nn.Sigmoid: F.default_fixed_qparams_range_0to1_fake_quant,
            nn.Softmax: F.default_fixed_qparams_range_0to1_fake_quant,
            nn.Tanh: F.default_fixed_qparams_range_neg1to1_fake_quant}


def _float_to_quantized_ops():
    import ember
    F = nn.functional
    q = ember.ops.quantized
    names = {"elu": F.elu, "hardswish": F.hardswish, "instance_norm": F.instance_norm,
             "layer_norm": F.layer_norm, "leaky_relu": F.leaky_relu, "dropout": F.dropout}
    out = {}
    for name, fn in names.items():
        try:
            out[fn] = getattr(q, name)
        except AttributeError:
            pass
    return out


def __getattr__(name):
    tables = {"DEFAULT_STATIC_QUANT_MODULE_MAPPINGS": lambda: _table(_STATIC),
              "DEFAULT_QAT_MODULE_MAPPINGS": lambda: _table(_QAT),
              "DEFAULT_DYNAMIC_QUANT_MODULE_MAPPINGS": lambda: _table(_DYNAMIC),
              "DEFAULT_REFERENCE_STATIC_QUANT_MODULE_MAPPINGS": lambda: _table(_REFERENCE),
              "DEFAULT_STATIC_SPARSE_QUANT_MODULE_MAPPINGS": dict,
              "DEFAULT_DYNAMIC_SPARSE_QUANT_MODULE_MAPPINGS": dict,
              "DEFAULT_MODULE_TO_ACT_POST_PROCESS": _act_post_process,
              "DEFAULT_FLOAT_TO_QUANTIZED_OPERATOR_MAPPINGS": _float_to_quantized_ops}
    if name in tables:
        return tables[name]()
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")


def no_observer_set():
    """Module classes that need no observer inserted (quantizable LSTM/MHA observe inside)."""
    return {c for c in map(_resolve, _NO_OBSERVER) if c is not None}


def get_default_static_quant_module_mappings():
    return _table(_STATIC)


def get_default_static_quant_reference_module_mappings():
    return _table(_REFERENCE)


def get_embedding_static_quant_module_mappings():
    mapping = _table(_STATIC)
    qat = _resolve("ember.ao.nn.qat.EmbeddingBag"), _resolve("ember.ao.nn.qat.Embedding")
    dst = _resolve(f"{_Q}.EmbeddingBag"), _resolve(f"{_Q}.Embedding")
    for a, b in zip(qat, dst):
        if a is not None and b is not None:
            mapping[a] = b
    return mapping


def get_default_static_sparse_quant_module_mappings():
    return {}


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference=False):
    """The quantized class replacing ``float_module_class`` in static quantization."""
    mapping = _table(_REFERENCE if is_reference else _STATIC)
    mapping.update(additional_static_quant_mapping or {})
    cls = mapping.get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             f"a corresponding quantized module class")
    return copy.deepcopy(cls)


def get_dynamic_quant_module_class(float_module_class, additional_dynamic_quant_mapping=None):
    """The dynamically quantized class replacing ``float_module_class``."""
    mapping = _table(_DYNAMIC)
    mapping.update(additional_dynamic_quant_mapping or {})
    cls = mapping.get(float_module_class)
    if cls is None:
        raise AssertionError(f"Floating point module class {float_module_class} does not have "
                             f"a corresponding quantized module class")
    return copy.deepcopy(cls)


def get_default_qat_module_mappings():
    return _table(_QAT)


def get_embedding_qat_module_mappings():
    mapping = _table(_QAT)
    for src, dst in (("nn.EmbeddingBag", "ember.ao.nn.qat.EmbeddingBag"),
                     ("nn.Embedding", "ember.ao.nn.qat.Embedding")):
        a, b = _resolve(src), _resolve(dst)
        if a is not None and b is not None:
            mapping[a] = b
    return mapping


def get_default_dynamic_quant_module_mappings():
    return _table(_DYNAMIC)


def get_default_dynamic_sparse_quant_module_mappings():
    return {}


def get_default_qconfig_propagation_list():
    """Module classes that get a qconfig (and so observers) in ``prepare``."""
    classes = set(_table(_STATIC)) | set(_table(_QAT)) | set(_table(_DYNAMIC))
    classes |= {nn.Sequential}
    return classes


def get_default_compare_output_module_list():
    """Module classes whose outputs the Numeric Suite compares."""
    static, dynamic = _table(_STATIC), _table(_DYNAMIC)
    return set(static.values()) | set(dynamic.values()) | set(static) | set(dynamic) | \
        {nn.Sequential}


def get_default_float_to_quantized_operator_mappings():
    return _float_to_quantized_ops()


def get_quantized_operator(float_op):
    """The quantized op standing in for functional ``float_op``."""
    op = _float_to_quantized_ops().get(float_op)
    if op is None:
        raise AssertionError(f"Operator {float_op} does not have corresponding quantized op")
    return op
