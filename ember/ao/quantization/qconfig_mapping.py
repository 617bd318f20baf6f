"""QConfigMapping (torch.ao.quantization.qconfig_mapping): which QConfig applies where — a
global one, then by object type (module class, function, or method name), module-name
regex, module name, and (module name, object type, call index), the later kinds taking
precedence."""
from __future__ import annotations

from collections import OrderedDict

import ember
from ember import nn
from ember.ao.quantization import observer as O
from ember.ao.quantization import fake_quantize as F
from ember.ao.quantization.qconfig import (QConfig, default_reuse_input_qconfig,
                                           default_quint8_weight_qconfig, get_default_qconfig,
                                           get_default_qat_qconfig)

__all__ = ["QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"]

_GLOBAL_DICT_KEY = ""
_OBJECT_TYPE_DICT_KEY = "object_type"
_MODULE_NAME_REGEX_DICT_KEY = "module_name_regex"
_MODULE_NAME_DICT_KEY = "module_name"
_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY = "module_name_object_type_order"

_FIELDS = ("global_qconfig", "object_type_qconfigs", "module_name_regex_qconfigs",
           "module_name_qconfigs", "module_name_object_type_order_qconfigs")


class QConfigMapping:
    """Mapping from model parts to QConfigs (``None``: leave that part in float)."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = OrderedDict()
        self.module_name_regex_qconfigs = OrderedDict()
        self.module_name_qconfigs = OrderedDict()
        self.module_name_object_type_order_qconfigs = OrderedDict()

    def set_global(self, global_qconfig):
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        """For a module class, a function (``ember.nn.functional.linear``) or a method name
        (``"reshape"``)."""
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex, qconfig):
        """For modules whose qualified name matches ``module_name_regex`` (first match
        wins, in the order set)."""
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name, qconfig):
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(self, module_name, object_type, index, qconfig):
        """For the ``index``-th call of ``object_type`` inside module ``module_name``."""
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self):
        lines = [self.__class__.__name__ + " ("]
        for name in _FIELDS:
            lines.append(f" {name}")
            value = getattr(self, name)
            if isinstance(value, OrderedDict) and value:
                lines.extend(f"  {k}: {v}" for k, v in value.items())
            else:
                lines.append(f"  {value}")
        return "\n".join(lines) + "\n)"

    def to_dict(self):
        """The mapping as torch's legacy ``qconfig_dict``."""
        return {
            _GLOBAL_DICT_KEY: self.global_qconfig,
            _OBJECT_TYPE_DICT_KEY: list(self.object_type_qconfigs.items()),
            _MODULE_NAME_REGEX_DICT_KEY: list(self.module_name_regex_qconfigs.items()),
            _MODULE_NAME_DICT_KEY: list(self.module_name_qconfigs.items()),
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY: [
                (*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()],
        }

    @classmethod
    def from_dict(cls, qconfig_dict):
        """A mapping from a legacy ``qconfig_dict``."""
        conf = cls()
        if _GLOBAL_DICT_KEY in qconfig_dict:
            conf.set_global(qconfig_dict[_GLOBAL_DICT_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_DICT_KEY, []):
            conf.set_object_type(object_type, qconfig)
        for regex, qconfig in qconfig_dict.get(_MODULE_NAME_REGEX_DICT_KEY, []):
            conf.set_module_name_regex(regex, qconfig)
        for name, qconfig in qconfig_dict.get(_MODULE_NAME_DICT_KEY, []):
            conf.set_module_name(name, qconfig)
        for name, object_type, index, qconfig in \
                qconfig_dict.get(_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY, []):
            conf.set_module_name_object_type_order(name, object_type, index, qconfig)
        return conf


def _default_mapping(is_qat, backend, version):
    """torch's default mapping: the backend's QConfig globally, with the exceptions torch
    makes (fixed-range activations, reused inputs, per-tensor weights for transposed
    convolutions, placeholder weights for layer norm, PReLU's quint8 weight)."""
    qconfig = get_default_qat_qconfig(backend, version) if is_qat else \
        get_default_qconfig(backend, version)
    default_weight = F.default_weight_fake_quant if is_qat else O.default_weight_observer
    # x86/fbgemm have no per-channel weights for transposed convolutions
    transposed = QConfig(activation=qconfig.activation, weight=default_weight) \
        if backend in ("x86", "fbgemm") else qconfig
    layer_norm = QConfig(activation=qconfig.activation, weight=O.default_placeholder_observer)
    Fn = nn.functional
    mapping = QConfigMapping().set_global(qconfig) \
        .set_object_type("reshape", default_reuse_input_qconfig) \
        .set_object_type(nn.ConvTranspose1d, transposed) \
        .set_object_type(nn.ConvTranspose2d, transposed) \
        .set_object_type(nn.ConvTranspose3d, transposed) \
        .set_object_type(Fn.conv_transpose1d, transposed) \
        .set_object_type(Fn.conv_transpose2d, transposed) \
        .set_object_type(Fn.conv_transpose3d, transposed) \
        .set_object_type(Fn.layer_norm, layer_norm) \
        .set_object_type(nn.LayerNorm, layer_norm) \
        .set_object_type(nn.PReLU, default_quint8_weight_qconfig)
    zero_one = F.default_fixed_qparams_range_0to1_fake_quant if is_qat else \
        O.default_fixed_qparams_range_0to1_observer
    neg_one_one = F.default_fixed_qparams_range_neg1to1_fake_quant if is_qat else \
        O.default_fixed_qparams_range_neg1to1_observer
    fixed = [(nn.Hardsigmoid, zero_one), (Fn.hardsigmoid, zero_one), ("hardsigmoid", zero_one),
             ("hardsigmoid_", zero_one), (nn.Sigmoid, zero_one), (ember.sigmoid, zero_one),
             ("sigmoid", zero_one), ("sigmoid_", zero_one), (nn.Softmax, zero_one),
             (nn.Tanh, neg_one_one), (ember.tanh, neg_one_one), ("tanh", neg_one_one),
             ("tanh_", neg_one_one)]
    for object_type, activation in fixed:
        mapping.set_object_type(object_type, QConfig(activation=activation,
                                                     weight=default_weight))
    return mapping


def get_default_qconfig_mapping(backend="x86", version=0):
    """The post-training-quantization QConfigMapping for ``backend``."""
    return _default_mapping(False, backend, version)


def get_default_qat_qconfig_mapping(backend="x86", version=1):
    """The quantization-aware-training QConfigMapping for ``backend``."""
    return _default_mapping(True, backend, version)
