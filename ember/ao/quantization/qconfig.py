"""QConfig (torch.ao.quantization.qconfig): which observer (or fake quantizer) watches a
module's activations and which its weight. Both fields are constructors (classes or
``with_args`` factories), called once per module by ``prepare``."""
from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from typing import Optional

import ember
from ember import nn
from ember.ao.quantization import observer as O
from ember.ao.quantization import fake_quantize as F

__all__ = ["QConfig", "QConfigDynamic", "QConfigAny", "default_qconfig", "default_debug_qconfig",
           "default_per_channel_qconfig", "default_dynamic_qconfig", "float16_dynamic_qconfig",
           "float16_static_qconfig", "per_channel_dynamic_qconfig",
           "float_qparams_weight_only_qconfig", "float_qparams_weight_only_qconfig_4bit",
           "default_quint8_weight_qconfig", "default_qat_qconfig", "default_dynamic_qat_qconfig",
           "default_weight_only_qconfig", "default_activation_only_qconfig",
           "default_qat_qconfig_v2", "default_reuse_input_qconfig",
           "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
           "default_symmetric_qnnpack_qat_qconfig",
           "default_per_channel_symmetric_qnnpack_qat_qconfig", "default_embedding_qat_qconfig",
           "default_embedding_qat_qconfig_4bit", "get_default_qconfig",
           "get_default_qat_qconfig", "get_default_qconfig_dict",
           "get_default_qat_qconfig_dict", "qconfig_equals"]

_BACKENDS = ["fbgemm", "x86", "qnnpack", "onednn"]


def _refuse_instances(activation, weight):
    if isinstance(activation, nn.Module) or isinstance(weight, nn.Module):
        raise ValueError("QConfig received observer instance, please pass observer class "
                         "instead. Use MyObserver.with_args(x=1) to override arguments to "
                         "constructor if needed")


class QConfig(namedtuple("QConfig", ["activation", "weight"])):
    """``(activation, weight)``: observer constructors, e.g.
    ``QConfig(activation=MinMaxObserver.with_args(dtype=ember.qint8),
    weight=default_observer.with_args(dtype=ember.qint8))``."""
    __slots__ = ()

    def __new__(cls, activation, weight):
        _refuse_instances(activation, weight)
        return super().__new__(cls, activation, weight)


class QConfigDynamic(namedtuple("QConfigDynamic", ["activation", "weight"])):
    """Deprecated: dynamic quantization's QConfig (use :class:`QConfig`)."""
    __slots__ = ()

    def __new__(cls, activation=nn.Identity, weight=nn.Identity):
        if isinstance(weight, nn.Module):
            raise ValueError("QConfigDynamic received observer instance, please pass observer "
                             "class instead. Use MyObserver.with_args(x=1) to override "
                             "arguments to constructor if needed")
        warnings.warn("QConfigDynamic is going to be deprecated in PyTorch 1.12, please use "
                      "QConfig instead")
        return super().__new__(cls, activation, weight)


QConfigAny = Optional[QConfig]

default_qconfig = QConfig(activation=O.default_observer, weight=O.default_weight_observer)
default_debug_qconfig = QConfig(weight=O.default_weight_observer,
                                activation=O.default_debug_observer)
default_per_channel_qconfig = QConfig(activation=O.default_observer,
                                      weight=O.default_per_channel_weight_observer)
default_dynamic_qconfig = QConfig(activation=O.default_dynamic_quant_observer,
                                  weight=O.default_weight_observer)
float16_dynamic_qconfig = QConfig(
    activation=O.PlaceholderObserver.with_args(dtype=ember.float16, is_dynamic=True),
    weight=O.PlaceholderObserver.with_args(dtype=ember.float16))
float16_static_qconfig = QConfig(activation=O.PlaceholderObserver.with_args(dtype=ember.float16),
                                 weight=O.PlaceholderObserver.with_args(dtype=ember.float16))
per_channel_dynamic_qconfig = QConfig(activation=O.default_dynamic_quant_observer,
                                      weight=O.default_per_channel_weight_observer)
float_qparams_weight_only_qconfig = QConfig(activation=O.default_placeholder_observer,
                                            weight=O.default_float_qparams_observer)
float_qparams_weight_only_qconfig_4bit = QConfig(activation=O.default_placeholder_observer,
                                                 weight=O.default_float_qparams_observer_4bit)
default_qat_qconfig = QConfig(activation=F.default_fake_quant,
                              weight=F.default_weight_fake_quant)
default_dynamic_qat_qconfig = QConfig(activation=F.default_dynamic_fake_quant,
                                      weight=F.default_weight_fake_quant)
default_weight_only_qconfig = QConfig(activation=nn.Identity,
                                      weight=F.default_weight_fake_quant)
default_activation_only_qconfig = QConfig(activation=F.default_fake_quant, weight=nn.Identity)
default_qat_qconfig_v2 = QConfig(activation=F.default_fused_act_fake_quant,
                                 weight=F.default_fused_wt_fake_quant)
default_reuse_input_qconfig = QConfig(activation=O.default_reuse_input_observer,
                                      weight=O.NoopObserver)
default_embedding_qat_qconfig = QConfig(activation=O.NoopObserver.with_args(dtype=ember.float32),
                                        weight=F.default_embedding_fake_quant)
default_embedding_qat_qconfig_4bit = QConfig(
    activation=O.NoopObserver.with_args(dtype=ember.float32),
    weight=F.default_embedding_fake_quant_4bit)


def _histogram(**kwargs):
    return O.HistogramObserver.with_args(**kwargs)


default_quint8_weight_qconfig = QConfig(activation=O.HistogramObserver, weight=O.MinMaxObserver)
default_symmetric_qnnpack_qconfig = QConfig(
    activation=_histogram(dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=O.weight_observer_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qconfig = QConfig(
    activation=_histogram(dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=O.per_channel_weight_observer_range_neg_127_to_127)
default_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=F.FusedMovingAvgObsFakeQuantize.with_args(
        observer=O.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
        dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=F.fused_wt_fake_quant_range_neg_127_to_127)
default_per_channel_symmetric_qnnpack_qat_qconfig = QConfig(
    activation=F.FusedMovingAvgObsFakeQuantize.with_args(
        observer=O.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
        dtype=ember.qint8, reduce_range=False, eps=2 ** -12),
    weight=F.fused_per_channel_wt_fake_quant_range_neg_127_to_127)


def _check_backend(backend):
    if backend not in _BACKENDS:
        raise AssertionError(f"backend: {backend} not supported. backend must be one of "
                             f"{_BACKENDS}")


def get_default_qconfig(backend="x86", version=0):
    """The post-training QConfig torch recommends for ``backend`` (histogram activations;
    per-channel weights except on qnnpack)."""
    _check_backend(backend)
    if version != 0:
        raise AssertionError(f"Version number: {version} in get_default_qconfig is not "
                             f"supported. Version number must be 0")
    if backend in ("fbgemm", "x86"):
        return QConfig(activation=_histogram(reduce_range=True),
                       weight=O.default_per_channel_weight_observer)
    if backend == "qnnpack":
        return QConfig(activation=_histogram(reduce_range=False),
                       weight=O.default_weight_observer)
    return QConfig(activation=_histogram(reduce_range=False),
                   weight=O.default_per_channel_weight_observer)


def get_default_qat_qconfig(backend="x86", version=1):
    """The QAT QConfig for ``backend``: version 1 fused observe+fake-quantize modules,
    version 0 ``FakeQuantize``."""
    _check_backend(backend)
    if version not in (0, 1):
        raise AssertionError(f"Version number: {version} in get_default_qat_qconfig is not "
                             f"supported. Version number must be 0 or 1")
    fq = F.FakeQuantize if version == 0 else F.FusedMovingAvgObsFakeQuantize
    extra = {"reduce_range": False} if version == 0 else {}
    reduce = {"fbgemm": True, "x86": True, "qnnpack": False}.get(backend)
    act_kwargs = dict(observer=O.MovingAverageMinMaxObserver, quant_min=0, quant_max=255)
    if reduce is not None:
        act_kwargs["reduce_range"] = reduce
    if backend == "qnnpack":
        weight = fq.with_args(observer=O.MovingAverageMinMaxObserver, quant_min=-128,
                              quant_max=127, dtype=ember.qint8,
                              qscheme=ember.per_tensor_symmetric, **extra)
    else:
        weight = fq.with_args(observer=O.MovingAveragePerChannelMinMaxObserver, quant_min=-128,
                              quant_max=127, dtype=ember.qint8,
                              qscheme=ember.per_channel_symmetric, **extra,
                              **({"ch_axis": 0} if version == 0 else {}))
    return QConfig(activation=fq.with_args(**act_kwargs), weight=weight)


def get_default_qconfig_dict(backend="x86", version=0):
    warnings.warn("torch.ao.quantization.get_default_qconfig_dict is deprecated and will be "
                  "removed in a future version. Please use "
                  "torch.ao.quantization.get_default_qconfig_mapping instead.")
    from ember.ao.quantization.qconfig_mapping import get_default_qconfig_mapping
    return get_default_qconfig_mapping(backend, version).to_dict()


def get_default_qat_qconfig_dict(backend="x86", version=1):
    warnings.warn("torch.ao.quantization.get_default_qat_qconfig_dict is deprecated and will "
                  "be removed in a future version. Please use "
                  "torch.ao.quantization.get_default_qat_qconfig_mapping instead.")
    from ember.ao.quantization.qconfig_mapping import get_default_qat_qconfig_mapping
    return get_default_qat_qconfig_mapping(backend, version).to_dict()


def _partial_equals(p1, p2):
    """Constructors equal when they build the same class with the same arguments."""
    if isinstance(p1, O._PartialWrapper) and isinstance(p2, O._PartialWrapper):
        if p1.callable_args != p2.callable_args:
            return False
        p1, p2 = p1.p, p2.p
    if isinstance(p1, functools.partial) and isinstance(p2, functools.partial):
        return p1.func == p2.func and p1.args == p2.args and \
            _kw_equal(p1.keywords, p2.keywords)
    return p1 == p2


def _kw_equal(a, b):
    if a.keys() != b.keys():
        return False
    return all(_partial_equals(a[k], b[k]) for k in a)


def qconfig_equals(q1, q2):
    """Whether two QConfigs (or None) build the same observers."""
    if q1 is None or q2 is None:
        return q1 == q2
    try:
        return _partial_equals(q1.activation, q2.activation) and \
            _partial_equals(q1.weight, q2.weight)
    except AttributeError:
        return q1 == q2


def _add_module_to_qconfig_obs_ctr(qconfig, module):
    """``qconfig`` unchanged (ember's modules all live on the CPU)."""
    return qconfig


def _assert_valid_qconfig(qconfig, mod):
    """Per-channel weight observers cannot watch ConvTranspose weights (torch's check)."""
    if qconfig is None:
        return
    if isinstance(mod, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)):
        example = qconfig.weight()
        if isinstance(example, (O.PerChannelMinMaxObserver,
                                O.MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Per channel weight observer is not supported yet for "
                                 "ConvTranspose{n}d.")
