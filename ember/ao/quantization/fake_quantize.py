"""Fake quantizers (torch.ao.quantization.fake_quantize): modules for quantization-aware
training that observe a tensor (an observer in ``activation_post_process``), keep the
resulting ``scale``/``zero_point`` as buffers, and quantize-dequantize the tensor with them
(``ember.fake_quantize_per_tensor_affine``/``_per_channel_affine``, straight-through
gradients)."""
from __future__ import annotations

from abc import ABCMeta, abstractmethod

import ember
from ember import nn
from ember.ao.quantization.observer import (
    MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver, FixedQParamsObserver,
    HistogramObserver, _with_args,
    _with_callable_args, default_fixed_qparams_range_0to1_observer,
    default_fixed_qparams_range_neg1to1_observer)

__all__ = ["FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
           "FusedMovingAvgObsFakeQuantize", "disable_fake_quant", "disable_observer",
           "enable_fake_quant", "enable_observer", "default_fake_quant",
           "default_weight_fake_quant", "default_dynamic_fake_quant",
           "default_histogram_fake_quant",
           "default_fixed_qparams_range_neg1to1_fake_quant",
           "default_fixed_qparams_range_0to1_fake_quant",
           "default_symmetric_fixed_qparams_fake_quant", "default_affine_fixed_qparams_fake_quant",
           "default_per_channel_weight_fake_quant", "default_embedding_fake_quant",
           "default_embedding_fake_quant_4bit", "default_fused_act_fake_quant",
           "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
           "fused_wt_fake_quant_range_neg_127_to_127",
           "fused_per_channel_wt_fake_quant_range_neg_127_to_127"]

_PER_CHANNEL = (ember.per_channel_affine, ember.per_channel_symmetric,
                ember.per_channel_affine_float_qparams)
_PER_TENSOR = (ember.per_tensor_affine, ember.per_tensor_symmetric)


def _resize_like(buf, shape):
    """A buffer of ``shape`` keeping ``buf``'s dtype (per-channel parameters grow to [C])."""
    return buf if tuple(buf.shape) == tuple(shape) else ember.empty(shape, dtype=buf.dtype)


class FakeQuantizeBase(nn.Module, metaclass=ABCMeta):
    """Base of fake quantizers: the ``fake_quant_enabled``/``observer_enabled`` switches
    (uint8 buffers of one element)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.uint8))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.uint8))

    @abstractmethod
    def forward(self, x):
        ...

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        ...

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = 1 if enabled else 0

    def disable_fake_quant(self):
        self.enable_fake_quant(False)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = 1 if enabled else 0

    def disable_observer(self):
        self.enable_observer(False)

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


class FakeQuantize(FakeQuantizeBase):
    """Observe (when enabled), then fake-quantize (when enabled) with the observer's current
    parameters; ``scale`` float32 and ``zero_point`` int32 (float for float qparams), shape
    ``[1]`` or ``[C]``."""
    scale: ember.Tensor
    zero_point: ember.Tensor

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=None, quant_max=None,
                 is_dynamic=False, **observer_kwargs):
        super().__init__()
        if quant_min is not None and quant_max is not None:
            if quant_min > quant_max:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            observer_kwargs.update(quant_min=quant_min, quant_max=quant_max)
        observer_kwargs["is_dynamic"] = is_dynamic
        self.activation_post_process = observer(**observer_kwargs)
        post = self.activation_post_process
        self.quant_min, self.quant_max = post.quant_min, post.quant_max
        self.is_dynamic = post.is_dynamic
        zp_dtype = ember.float if post.qscheme is ember.per_channel_affine_float_qparams \
            else ember.int
        self.register_buffer("scale", ember.tensor([1.0], dtype=ember.float))
        self.register_buffer("zero_point", ember.tensor([0], dtype=zp_dtype))
        self.dtype = post.dtype
        self.qscheme = post.qscheme
        self.ch_axis = getattr(post, "ch_axis", -1)
        if self.qscheme not in _PER_CHANNEL + _PER_TENSOR:
            raise AssertionError("Only per channel and per tensor quantization are supported "
                                 "in fake quantize got qscheme: " + str(self.qscheme))
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def _take_qparams(self, scale, zero_point):
        self.scale = _resize_like(self.scale, scale.shape)
        self.zero_point = _resize_like(self.zero_point, zero_point.shape)
        self.scale.copy_(scale)
        self.zero_point.copy_(zero_point)

    def forward(self, X):
        if int(self.observer_enabled[0]) == 1:
            self.activation_post_process(X.detach())
            self._take_qparams(*self.calculate_qparams())
        if int(self.fake_quant_enabled[0]) == 1:
            if self.is_per_channel:
                X = ember.fake_quantize_per_channel_affine(
                    X, self.scale, self.zero_point, self.ch_axis,
                    self.activation_post_process.quant_min,
                    self.activation_post_process.quant_max)
            else:
                X = ember.fake_quantize_per_tensor_affine(
                    X, self.scale, self.zero_point, self.activation_post_process.quant_min,
                    self.activation_post_process.quant_max)
        return X

    def extra_repr(self):
        post = self.activation_post_process
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, quant_min={post.quant_min}, "
                f"quant_max={post.quant_max}, dtype={self.dtype}, qscheme={self.qscheme}, "
                f"ch_axis={self.ch_axis}, scale={self.scale}, zero_point={self.zero_point}")

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        for name in ("scale", "zero_point"):        # the saved shape wins
            key = prefix + name
            if key in state_dict:
                setattr(self, name, _resize_like(getattr(self, name), state_dict[key].shape))
            elif strict:        # torch reports these twice: here, then with the buffers
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Fake quantization with fixed parameters (from a :class:`FixedQParamsObserver`)."""

    def __init__(self, observer):
        FakeQuantizeBase.__init__(self)
        self.activation_post_process = observer()
        post = self.activation_post_process
        if not isinstance(post, FixedQParamsObserver):
            raise AssertionError(f"{self.__class__.__name__}'s observer must be a "
                                 f"FixedQParamsObserver")
        self._observer_ctr = observer
        self.quant_min, self.quant_max = post.quant_min, post.quant_max
        self.register_buffer("scale", post.scale)
        self.register_buffer("zero_point", post.zero_point)
        self.dtype, self.qscheme = post.dtype, post.qscheme
        self.ch_axis = -1
        self.is_per_channel = False
        self.is_dynamic = False

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def forward(self, X):
        if int(self.fake_quant_enabled[0]) == 1:
            X = ember.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                      self.quant_min, self.quant_max)
        return X

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.quant_min}, quant_max={self.quant_max}, "
                f"qscheme={self.qscheme}")


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """Moving-average observation and fake quantization in one step
    (``ember.fused_moving_avg_obs_fake_quant``); switches are int64 buffers."""

    def __init__(self, observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255,
                 **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        post = self.activation_post_process
        if not isinstance(post, (MovingAverageMinMaxObserver,
                                 MovingAveragePerChannelMinMaxObserver)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        self.register_buffer("fake_quant_enabled", ember.tensor([1], dtype=ember.long))
        self.register_buffer("observer_enabled", ember.tensor([1], dtype=ember.long))
        self.is_symmetric_quant = self.qscheme in (ember.per_tensor_symmetric,
                                                   ember.per_channel_symmetric)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self):
        return (f"fake_quant_enabled={self.fake_quant_enabled}, "
                f"observer_enabled={self.observer_enabled}, scale={self.scale}, "
                f"zero_point={self.zero_point}, dtype={self.dtype}, "
                f"quant_min={self.activation_post_process.quant_min}, "
                f"quant_max={self.activation_post_process.quant_max}, "
                f"qscheme={self.qscheme}, reduce_range={self.activation_post_process.reduce_range}")

    def forward(self, X):
        post = self.activation_post_process
        return ember.fused_moving_avg_obs_fake_quant(
            X, self.observer_enabled, self.fake_quant_enabled, post.min_val, post.max_val,
            self.scale, self.zero_point, post.averaging_constant, post.quant_min,
            post.quant_max, self.ch_axis, self.is_per_channel, self.is_symmetric_quant)


# ------------------------------------------------------------------ defaults

default_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=ember.quint8,
    qscheme=ember.per_tensor_affine, reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric, reduce_range=False)
default_histogram_fake_quant = FakeQuantize.with_args(
    observer=HistogramObserver, quant_min=0, quant_max=255, dtype=ember.quint8,
    qscheme=ember.per_tensor_affine, reduce_range=True)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, is_dynamic=True,
    dtype=ember.quint8, averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_neg1to1_observer)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=default_fixed_qparams_range_0to1_observer)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver,
    qscheme=ember.per_channel_affine_float_qparams, dtype=ember.quint8, quant_min=0,
    quant_max=255, ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, qscheme=ember.per_channel_affine_float_qparams,
    ch_axis=0, dtype=ember.quint4x2, averaging_constant=1)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255, dtype=ember.quint8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAverageMinMaxObserver, quant_min=-127, quant_max=127, dtype=ember.qint8,
    qscheme=ember.per_tensor_symmetric, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=MovingAveragePerChannelMinMaxObserver, quant_min=-127, quant_max=127,
    dtype=ember.qint8, qscheme=ember.per_channel_symmetric, eps=2 ** -12)


def disable_fake_quant(mod):
    """``model.apply(disable_fake_quant)``: turn fake quantization off in ``mod``."""
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_fake_quant()


def enable_fake_quant(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_fake_quant()


def disable_observer(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.disable_observer()


def enable_observer(mod):
    if isinstance(mod, FakeQuantizeBase):
        mod.enable_observer()

