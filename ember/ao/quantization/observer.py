"""Observers (torch.ao.quantization.observer): modules that watch the tensors flowing through
them (identity in forward) and turn the range they saw into quantization parameters.

``calculate_qparams()`` returns ``(scale, zero_point)``: float32 tensors of shape ``[1]`` per
tensor, ``[C]`` per channel; zero points int32 for affine schemes, int64 for symmetric ones
(and for the defaults returned before any observation), float for
``per_channel_affine_float_qparams`` — as torch's do.
"""
from __future__ import annotations

import functools
import warnings
from abc import ABCMeta, abstractmethod

import ember
from ember import nn

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "PlaceholderObserver", "NoopObserver",
           "RecordingObserver", "FixedQParamsObserver", "ReuseInputObserver",
           "get_observer_state_dict", "load_observer_state_dict",
           "default_observer", "default_placeholder_observer", "default_debug_observer",
           "default_weight_observer", "HistogramObserver", "default_histogram_observer",
           "default_per_channel_weight_observer", "default_dynamic_quant_observer",
           "default_float_qparams_observer", "default_float_qparams_observer_4bit",
           "default_reuse_input_observer", "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_fixed_qparams_range_0to1_observer",
           "default_symmetric_fixed_qparams_observer", "default_affine_fixed_qparams_observer",
           "AffineQuantizedObserverBase", "Granularity", "MappingType", "PerAxis", "PerBlock",
           "PerGroup", "PerRow", "PerTensor", "PerToken", "TorchAODType", "ZeroPointDomain",
           "get_block_size"]

_EPS = float(ember.finfo(ember.float32).eps)
_PER_TENSOR = (ember.per_tensor_affine, ember.per_tensor_symmetric)
_PER_CHANNEL = (ember.per_channel_affine, ember.per_channel_symmetric,
                ember.per_channel_affine_float_qparams)
_SYMMETRIC = (ember.per_tensor_symmetric, ember.per_channel_symmetric)
_DTYPES = (ember.qint8, ember.quint8, ember.quint4x2, ember.qint32, ember.int8, ember.uint8,
           ember.int16, ember.int32, ember.uint16)
_FULL_RANGE = {"qint8": (-128, 127), "int8": (-128, 127), "quint8": (0, 255),
               "uint8": (0, 255), "quint4x2": (0, 15), "int16": (-2 ** 15, 2 ** 15 - 1),
               "uint16": (0, 2 ** 16 - 1), "qint32": (-2 ** 31, 2 ** 31 - 1),
               "int32": (-2 ** 31, 2 ** 31 - 1)}


# ------------------------------------------------------------------ with_args

class _PartialWrapper:
    """A constructor with arguments bound (``Observer.with_args(...)``); calling it builds a
    new instance. ``with_callable_args`` binds arguments computed at construction time."""

    def __init__(self, p):
        self.p = p
        self.callable_args = {}

    def __call__(self, *args, **keywords):
        return self.p(*args, **{**{k: f() for k, f in self.callable_args.items()}, **keywords})

    def __repr__(self):
        return repr(self.p) + repr(self.callable_args)

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        result = _PartialWrapper(p=self.p)
        result.callable_args = {**self.callable_args, **kwargs}
        return result


def _with_args(cls_or_self, **kwargs):
    """A factory of ``cls_or_self`` with ``kwargs`` bound (each call makes a new object)."""
    wrapper = _PartialWrapper(functools.partial(cls_or_self, **kwargs))
    wrapper.callable_args = dict(getattr(cls_or_self, "callable_args", {}))
    return wrapper


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


# ------------------------------------------------------------------ bases

class ObserverBase(nn.Module, metaclass=ABCMeta):
    """Base of all observers: ``dtype`` (the quantized dtype aimed at), ``is_dynamic``."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    @abstractmethod
    def forward(self, x):
        ...

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        ...

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


def _qmin_qmax(quant_min, quant_max, customized, dtype, reduce_range):
    """The integer range the parameters map onto (halved by ``reduce_range``)."""
    if customized:
        if not quant_min <= 0 <= quant_max:
            raise AssertionError("Used-specified quantization range must include 0.")
        if quant_min >= quant_max:
            raise AssertionError("qmin must be strictly less than qmax for user-specified "
                                 "quantization range.")
        if reduce_range:
            quant_min, quant_max = quant_min // 2, quant_max // 2
        return quant_min, quant_max
    lo, hi = _FULL_RANGE[str(dtype).replace("torch.", "")]
    if reduce_range and dtype in (ember.qint8, ember.int8, ember.quint8, ember.uint8):
        lo, hi = (-64, 63) if lo < 0 else (0, 127)
    return lo, hi


class UniformQuantizationObserverBase(ObserverBase):
    """Observers mapping a float range onto ``[quant_min, quant_max]`` uniformly."""
    _version = 3
    eps: ember.Tensor

    def __init__(self, dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future release "
                          "of PyTorch.")
        self.reduce_range = reduce_range
        self.register_buffer("eps", ember.tensor([eps]))
        if qscheme not in _PER_TENSOR + _PER_CHANNEL:
            raise AssertionError("Default Observer only supports per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if dtype not in _DTYPES:
            raise AssertionError("Default Observer only works for (torch.qint8, torch.quint8, "
                                 "torch.quint4x2, torch.qint32, torch.int8, torch.uint8, "
                                 "torch.int16, torch.int32, torch.uint16) data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = _qmin_qmax(quant_min, quant_max,
                                                    self.has_customized_qrange, dtype,
                                                    reduce_range)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """As torch: a state dict without ``eps`` (saved before it was a buffer) loads, the
        observer keeping its own."""
        before = len(missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        if prefix + "eps" in missing_keys[before:]:
            missing_keys.remove(prefix + "eps")

    def _calculate_qparams(self, min_val, max_val):
        """(scale, zero_point) of the range [min_val, max_val] (0-dim: per tensor; 1-d: per
        channel), float32 arithmetic as torch's."""
        if not _valid_min_max(min_val, max_val):
            return ember.tensor([1.0]), ember.tensor([0])
        qmin, qmax = self.quant_min, self.quant_max
        zeros = ember.zeros(min_val.shape)
        min_neg = ember.minimum(min_val, zeros)
        max_pos = ember.maximum(max_val, zeros)
        eps = self.eps.to(min_val.dtype)
        zero_point = ember.zeros(min_neg.shape, dtype=ember.int64)
        if self.qscheme in _SYMMETRIC:
            max_pos = ember.maximum(-min_neg, max_pos)
            scale = max_pos / (float(qmax - qmin) / 2)
            scale = ember.maximum(scale, eps)
            if self.dtype in (ember.quint8, ember.uint8):
                mid = (qmin + qmax) // 2 if self.has_customized_qrange else 128
                zero_point = ember.full(zero_point.shape, mid, dtype=ember.int64)
            elif self.dtype is ember.uint16:
                zero_point = ember.full(zero_point.shape, 2 ** 15, dtype=ember.int64)
        elif self.qscheme is ember.per_channel_affine_float_qparams:
            scale = (max_val - min_val) / float(qmax - qmin)
            scale = ember.where(scale > eps, scale, ember.ones_like(scale))
            zero_point = -1 * min_val / scale
        else:
            scale = (max_pos - min_neg) / float(qmax - qmin)
            scale = ember.maximum(scale, eps)
            zero_point = qmin - ember.round(min_neg / scale).to(ember.int32)
            zero_point = ember.clamp(zero_point, qmin, qmax)
        if scale.dim() == 0:
            scale = ember.tensor([float(scale)], dtype=scale.dtype)
        if zero_point.dim() == 0:
            zero_point = ember.tensor([int(zero_point)], dtype=zero_point.dtype)
            if self.qscheme is ember.per_channel_affine_float_qparams:
                zero_point = ember.tensor([float(zero_point)], dtype=zero_point.dtype)
        return scale, zero_point

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _valid_min_max(min_val, max_val):
    """False (with torch's warning) before any observation."""
    if min_val.numel() == 0 or max_val.numel() == 0:
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.")
        return False
    if min_val.dim() == 0 and float(min_val) == float("inf") and \
            float(max_val) == float("-inf"):
        warnings.warn("must run observer before calling calculate_qparams. Returning default "
                      "values.")
        return False
    if not bool(ember.all(min_val <= max_val)):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


# ------------------------------------------------------------------ per tensor

class MinMaxObserver(UniformQuantizationObserverBase):
    """The running minimum and maximum of everything seen (``min_val``, ``max_val``: 0-dim)."""
    min_val: ember.Tensor
    max_val: ember.Tensor

    def __init__(self, dtype=ember.quint8, qscheme=ember.per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError("MinMaxObserver's qscheme only support "
                                      "torch.per_tensor_symmetric and torch.per_tensor_affine.")
        if is_dynamic:
            raise NotImplementedError("MinMaxObserver doesn't support dynamic quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))
        if qscheme is ember.per_tensor_symmetric and reduce_range and dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        cur_min, cur_max = ember.aminmax(x)
        self.min_val.copy_(ember.minimum(cur_min, self.min_val))
        self.max_val.copy_(ember.maximum(cur_max, self.max_val))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.copy_(ember.tensor(float("inf")))
        self.max_val.copy_(ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """Exponential moving averages of each batch's min and max:
    ``min_val += averaging_constant * (batch_min - min_val)`` (the first batch sets them)."""

    def __init__(self, averaging_constant=0.01, dtype=ember.quint8,
                 qscheme=ember.per_tensor_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_TENSOR:
            raise NotImplementedError(f"MovingAverageMinMaxObserver's qscheme only support "
                                      f"torch.per_tensor_symmetric and torch.per_tensor_affine."
                                      f" but got: {qscheme}")
        self.averaging_constant = averaging_constant
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError("MovingAverageMinMaxObserver doesn't support dynamic "
                                      "quantization for averaging constant of "
                                      f"{averaging_constant}")
        UniformQuantizationObserverBase.__init__(
            self, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
            quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        min_val, max_val = self.min_val, self.max_val
        if float(min_val) == float("inf") and float(max_val) == float("-inf"):
            min_val, max_val = ember.aminmax(x)
        else:
            cur_min, cur_max = ember.aminmax(x)
            min_val = min_val + self.averaging_constant * (cur_min - min_val)
            max_val = max_val + self.averaging_constant * (cur_max - max_val)
        self.min_val.copy_(min_val)
        self.max_val.copy_(max_val)
        return x_orig


# ------------------------------------------------------------------ per channel

class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """Min and max of each slice along ``ch_axis`` (``min_val``, ``max_val``: shape ``[C]``,
    empty before the first observation)."""
    min_val: ember.Tensor
    max_val: ember.Tensor

    def __init__(self, ch_axis=0, dtype=ember.quint8, qscheme=ember.per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError("PerChannelMinMaxObserver's qscheme only support "
                                      "torch.per_channel_symmetric, torch.per_channel_affine "
                                      "and torch.per_channel_affine_float_qparams.")
        if is_dynamic:
            raise NotImplementedError("PerChannelMinMaxObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max,
                         factory_kwargs=factory_kwargs, eps=eps, is_dynamic=is_dynamic,
                         **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([]))
        self.register_buffer("max_val", ember.tensor([]))
        if qscheme is ember.per_channel_symmetric and reduce_range and dtype is ember.quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _channel_minmax(self, x):
        """(min, max) over everything but ``ch_axis``: shapes ``[C]``."""
        axes = list(range(x.dim()))
        axes[self.ch_axis], axes[0] = 0, self.ch_axis
        y = ember.flatten(x.permute(axes), start_dim=1)
        return ember.aminmax(y, dim=1)

    def forward(self, x_orig):
        return self._forward(x_orig)

    def _forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        cur_min, cur_max = self._channel_minmax(x)
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            min_val, max_val = cur_min, cur_max
        else:
            min_val = ember.minimum(cur_min, self.min_val)
            max_val = ember.maximum(cur_max, self.max_val)
        self.min_val = min_val.clone()
        self.max_val = max_val.clone()
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("min_val", "max_val"):          # the saved shape wins ([C] or empty)
            key = prefix + name
            if key in state_dict:
                setattr(self, name, ember.empty(state_dict[key].shape))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def reset_min_max_vals(self):
        self.min_val = ember.tensor([])
        self.max_val = ember.tensor([])


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel exponential moving averages of min and max (see
    :class:`MovingAverageMinMaxObserver`)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=ember.quint8,
                 qscheme=ember.per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in _PER_CHANNEL:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver's qscheme only "
                                      "support torch.per_channel_symmetric, "
                                      "torch.per_channel_affine and "
                                      "torch.per_channel_affine_float_qparams.")
        if is_dynamic and averaging_constant != 1:
            raise NotImplementedError("MovingAveragePerChannelMinMaxObserver doesn't support "
                                      "dynamic quantization for averaging constant of "
                                      f"{averaging_constant}")
        UniformQuantizationObserverBase.__init__(
            self, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
            quant_min=quant_min, quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([]))
        self.register_buffer("max_val", ember.tensor([]))
        self.averaging_constant = averaging_constant

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = x_orig.detach().to(self.min_val.dtype)
        cur_min, cur_max = self._channel_minmax(x)
        if self.min_val.numel() == 0 or self.max_val.numel() == 0:
            min_val, max_val = cur_min, cur_max
        else:
            c = self.averaging_constant
            min_val = self.min_val + c * (cur_min - self.min_val)
            max_val = self.max_val + c * (cur_max - self.max_val)
        self.min_val = min_val.clone()
        self.max_val = max_val.clone()
        return x_orig


# ------------------------------------------------------------------ no statistics

class FixedQParamsObserver(ObserverBase):
    """Hands out fixed ``scale``/``zero_point`` (for ops with a known output range: sigmoid,
    tanh...)."""

    def __init__(self, scale, zero_point, dtype=ember.quint8, qscheme=ember.per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.quant_min, self.quant_max = quant_min, quant_max
        self.register_buffer("scale", ember.tensor([scale], dtype=ember.float))
        self.register_buffer("zero_point", ember.tensor([zero_point], dtype=ember.int))
        self.qscheme = qscheme

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class PlaceholderObserver(ObserverBase):
    """Observes nothing; carries ``dtype`` (and friends) for the convert step (float16 and
    dynamic quantization)."""

    def __init__(self, dtype=ember.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme = ember.per_tensor_affine if qscheme is None else qscheme
        self.eps = _EPS if eps is None else eps
        self.quant_min, self.quant_max = quant_min, quant_max
        self.custom_op = custom_op_name
        if compute_dtype:
            is_dynamic = True
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.")
        self.is_dynamic = is_dynamic

    def forward(self, x):
        return x

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class RecordingObserver(ObserverBase):
    """Keeps a copy of every tensor seen (``get_tensor_value()``); for debugging."""
    __annotations__ = {"tensor_val": list}

    def __init__(self, dtype=ember.quint8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")

    def get_tensor_value(self):
        return self.tensor_val


class NoopObserver(ObserverBase):
    """Observes nothing; ``dtype`` float16 by default (float16 static quantization)."""

    def __init__(self, dtype=ember.float16, custom_op_name=""):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.custom_op = custom_op_name

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for NoopObserver")


class ReuseInputObserver(ObserverBase):
    """The output reuses its input's observer (FX graph mode); never asked for parameters."""

    def __init__(self):
        super().__init__(ember.quint8, is_dynamic=False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")


# ------------------------------------------------------------------ state dicts

def get_observer_state_dict(mod):
    """The entries of ``mod.state_dict()`` belonging to observers and fake quantizers."""
    from collections import OrderedDict
    return OrderedDict((k, v) for k, v in mod.state_dict().items()
                       if "activation_post_process" in k or "observer" in k)


def load_observer_state_dict(mod, obs_dict):
    """Load ``obs_dict`` (from :func:`get_observer_state_dict`) into the observers of ``mod``."""
    missing, unexpected = [], []
    for name, module in mod.named_modules():
        prefix = name + "." if name else ""
        if isinstance(module, ObserverBase) or _is_fake_quant(module):
            module._load_from_state_dict(obs_dict, prefix, {}, True, missing, unexpected, [])
    for k in missing:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Missing keys for observer {k} in state_dict")
    for k in unexpected:
        if "observer" in k or "activation_post_process" in k:
            raise Exception(f"Unexpected keys for observer {k} in state_dict")


def _is_fake_quant(module):
    from ember.ao.quantization.fake_quantize import FakeQuantizeBase
    return isinstance(module, FakeQuantizeBase)


# ------------------------------------------------------------------ defaults

default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_weight_observer = MinMaxObserver.with_args(dtype=ember.qint8,
                                                   qscheme=ember.per_tensor_symmetric)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_tensor_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, quant_min=-127, quant_max=127,
    eps=2 ** -12)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=ember.quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=ember.quint8, qscheme=ember.per_channel_affine_float_qparams, ch_axis=0)
default_float_qparams_observer_4bit = PerChannelMinMaxObserver.with_args(
    dtype=ember.quint4x2, qscheme=ember.per_channel_affine_float_qparams, ch_axis=0)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=ember.quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=ember.quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
default_reuse_input_observer = ReuseInputObserver


# defined beside (files of their own), exported from here as torch does
from ember.ao.quantization._histogram import (HistogramObserver,  # noqa: E402
                                              default_histogram_observer)
from ember.ao.quantization._affine import (  # noqa: E402,F401
    AffineQuantizedObserverBase, Granularity, MappingType, PerAxis, PerBlock, PerGroup, PerRow,
    PerTensor, PerToken, TorchAODType, ZeroPointDomain, get_block_size)
