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
    FixedQParamsObserver, HistogramObserver, _with_args, _with_callable_args,
    default_fixed_qparams_range_0to1_observer as _fixed_0to1,
    default_fixed_qparams_range_neg1to1_observer as _fixed_neg1to1)
from ember.ao.quantization.observer import (  # noqa: F401 (also reachable from here)
    MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver)

_MovingAvg, _MovingAvgPC = MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver

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
_SCHEMES = _PER_CHANNEL + (ember.per_tensor_affine, ember.per_tensor_symmetric)


def _fit(buf, shape):
    """``buf``, or a fresh buffer of its dtype when ``shape`` differs (per channel: [C])."""
    same = tuple(buf.shape) == tuple(shape)
    return buf if same else ember.empty(shape, dtype=buf.dtype)


def _switch(enabled):
    return 1 if enabled else 0


class FakeQuantizeBase(nn.Module, metaclass=ABCMeta):
    """Root of the fake quantizers: two one-element switches, ``fake_quant_enabled`` and
    ``observer_enabled`` (uint8 buffers)."""

    def __init__(self):
        super().__init__()
        for flag in ("fake_quant_enabled", "observer_enabled"):
            self.register_buffer(flag, ember.ones(1, dtype=ember.uint8))

    @abstractmethod
    def forward(self, x):
        """Quantize-dequantize ``x`` (same shape)."""

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        """``(scale, zero_point)`` in use."""

    def enable_fake_quant(self, enabled=True):
        self.fake_quant_enabled[0] = _switch(enabled)

    def enable_observer(self, enabled=True):
        self.observer_enabled[0] = _switch(enabled)

    def disable_fake_quant(self):
        self.enable_fake_quant(enabled=False)

    def disable_observer(self):
        self.enable_observer(enabled=False)

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


def _on(flag):
    return int(flag[0]) == 1


class FakeQuantize(FakeQuantizeBase):
    """Observe (switch on), then quantize-dequantize (switch on) with the observer's latest
    parameters: ``scale`` float32, ``zero_point`` int32 (float for float qparams), each of
    shape ``[1]`` or ``[C]``."""
    scale: ember.Tensor
    zero_point: ember.Tensor

    def __init__(self, observer=_MovingAvg, quant_min=None, quant_max=None, is_dynamic=False,
                 **observer_kwargs):
        super().__init__()
        if None not in (quant_min, quant_max):
            if quant_max < quant_min:
                raise AssertionError("quant_min must be less than or equal to quant_max")
            observer_kwargs["quant_min"], observer_kwargs["quant_max"] = quant_min, quant_max
        obs = observer(is_dynamic=is_dynamic, **observer_kwargs)
        self.activation_post_process = obs
        self.quant_min, self.quant_max, self.is_dynamic = obs.quant_min, obs.quant_max, \
            obs.is_dynamic
        float_zp = obs.qscheme is ember.per_channel_affine_float_qparams
        self.register_buffer("scale", ember.ones(1, dtype=ember.float32))
        self.register_buffer("zero_point",
                             ember.zeros(1, dtype=ember.float32 if float_zp else ember.int32))
        self.dtype, self.qscheme = obs.dtype, obs.qscheme
        self.ch_axis = getattr(obs, "ch_axis", -1)
        if self.qscheme not in _SCHEMES:
            raise AssertionError("Only per channel and per tensor quantization are supported "
                                 f"in fake quantize got qscheme: {self.qscheme}")
        self.is_per_channel = self.qscheme in _PER_CHANNEL

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def forward(self, X):
        obs = self.activation_post_process
        if _on(self.observer_enabled):
            obs(X.detach())
            scale, zero_point = self.calculate_qparams()
            self.scale, self.zero_point = _fit(self.scale, scale.shape), \
                _fit(self.zero_point, zero_point.shape)
            self.scale.copy_(scale)
            self.zero_point.copy_(zero_point)
        if not _on(self.fake_quant_enabled):
            return X
        if self.is_per_channel:
            return ember.fake_quantize_per_channel_affine(
                X, self.scale, self.zero_point, self.ch_axis, obs.quant_min, obs.quant_max)
        return ember.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                     obs.quant_min, obs.quant_max)

    def extra_repr(self):
        obs = self.activation_post_process
        parts = dict(fake_quant_enabled=self.fake_quant_enabled,
                     observer_enabled=self.observer_enabled, quant_min=obs.quant_min,
                     quant_max=obs.quant_max, dtype=self.dtype, qscheme=self.qscheme,
                     ch_axis=self.ch_axis, scale=self.scale, zero_point=self.zero_point)
        return ", ".join(f"{k}={v}" for k, v in parts.items())

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, *rest):
        for name in ("scale", "zero_point"):        # take the saved shape
            saved = state_dict.get(prefix + name)
            if saved is not None:
                setattr(self, name, _fit(getattr(self, name), saved.shape))
            elif strict:        # torch lists these twice: here and again with the buffers
                rest[0].append(prefix + name)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, *rest)


class FixedQParamsFakeQuantize(FakeQuantize):
    """Quantize-dequantize with the constant parameters of a :class:`FixedQParamsObserver`."""

    def __init__(self, observer):
        FakeQuantizeBase.__init__(self)
        obs = observer()
        self.activation_post_process = obs
        if not isinstance(obs, FixedQParamsObserver):
            raise AssertionError(f"{type(self).__name__}'s observer must be a "
                                 "FixedQParamsObserver")
        self._observer_ctr = observer
        self.quant_min, self.quant_max = obs.quant_min, obs.quant_max
        self.register_buffer("scale", obs.scale)
        self.register_buffer("zero_point", obs.zero_point)
        self.dtype, self.qscheme, self.ch_axis = obs.dtype, obs.qscheme, -1
        self.is_per_channel = self.is_dynamic = False

    def calculate_qparams(self):
        return self.scale, self.zero_point

    def forward(self, X):
        if not _on(self.fake_quant_enabled):
            return X
        return ember.fake_quantize_per_tensor_affine(X, self.scale, self.zero_point,
                                                     self.quant_min, self.quant_max)

    def extra_repr(self):
        parts = dict(fake_quant_enabled=self.fake_quant_enabled,
                     observer_enabled=self.observer_enabled, scale=self.scale,
                     zero_point=self.zero_point, dtype=self.dtype, quant_min=self.quant_min,
                     quant_max=self.quant_max, qscheme=self.qscheme)
        return ", ".join(f"{k}={v}" for k, v in parts.items())


class FusedMovingAvgObsFakeQuantize(FakeQuantize):
    """Moving-average observation and quantize-dequantize in one op
    (``ember.fused_moving_avg_obs_fake_quant``); the switches are int64 here."""

    def __init__(self, observer=_MovingAvg, quant_min=0, quant_max=255, **observer_kwargs):
        super().__init__(observer, quant_min, quant_max, **observer_kwargs)
        if not isinstance(self.activation_post_process, (_MovingAvg, _MovingAvgPC)):
            raise AssertionError("Fused observer+fake_quant module only works with "
                                 "MovingAverageMinMaxObserver")
        for flag in ("fake_quant_enabled", "observer_enabled"):
            self.register_buffer(flag, ember.ones(1, dtype=ember.int64))
        self.is_symmetric_quant = self.qscheme in (ember.per_tensor_symmetric,
                                                   ember.per_channel_symmetric)

    def calculate_qparams(self):
        return self.activation_post_process.calculate_qparams()

    def extra_repr(self):
        obs = self.activation_post_process
        parts = dict(fake_quant_enabled=self.fake_quant_enabled,
                     observer_enabled=self.observer_enabled, scale=self.scale,
                     zero_point=self.zero_point, dtype=self.dtype, quant_min=obs.quant_min,
                     quant_max=obs.quant_max, qscheme=self.qscheme,
                     reduce_range=obs.reduce_range)
        return ", ".join(f"{k}={v}" for k, v in parts.items())

    def forward(self, X):
        obs = self.activation_post_process
        return ember.fused_moving_avg_obs_fake_quant(
            X, self.observer_enabled, self.fake_quant_enabled, obs.min_val, obs.max_val,
            self.scale, self.zero_point, obs.averaging_constant, obs.quant_min, obs.quant_max,
            self.ch_axis, self.is_per_channel, self.is_symmetric_quant)


# ------------------------------------------------------------------ defaults

# kwarg order matters: it shows in the reprs of these factories (and of the qconfigs)
_U8 = dict(quant_min=0, quant_max=255, dtype=ember.quint8)
_S8 = dict(quant_min=-128, quant_max=127, dtype=ember.qint8)
_S7 = dict(quant_min=-127, quant_max=127, dtype=ember.qint8)
_TA, _TS = dict(qscheme=ember.per_tensor_affine), dict(qscheme=ember.per_tensor_symmetric)
_CS = dict(qscheme=ember.per_channel_symmetric)
_FLOAT_QP = ember.per_channel_affine_float_qparams

default_fake_quant = FakeQuantize.with_args(observer=_MovingAvg, **_U8, **_TA,
                                            reduce_range=True)
default_weight_fake_quant = FakeQuantize.with_args(observer=_MovingAvg, **_S8, **_TS,
                                                   reduce_range=False)
default_histogram_fake_quant = FakeQuantize.with_args(observer=HistogramObserver, **_U8, **_TA,
                                                      reduce_range=True)
default_dynamic_fake_quant = FakeQuantize.with_args(
    observer=_MovingAvg, quant_min=0, quant_max=255, is_dynamic=True, dtype=ember.quint8,
    averaging_constant=1)
default_fixed_qparams_range_neg1to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=_fixed_neg1to1)
default_fixed_qparams_range_0to1_fake_quant = FixedQParamsFakeQuantize.with_args(
    observer=_fixed_0to1)
default_symmetric_fixed_qparams_fake_quant = default_fixed_qparams_range_neg1to1_fake_quant
default_affine_fixed_qparams_fake_quant = default_fixed_qparams_range_0to1_fake_quant
default_per_channel_weight_fake_quant = FakeQuantize.with_args(
    observer=_MovingAvgPC, **_S8, **_CS, reduce_range=False, ch_axis=0)
default_embedding_fake_quant = FakeQuantize.with_args(
    observer=_MovingAvgPC, qscheme=_FLOAT_QP, dtype=ember.quint8, quant_min=0, quant_max=255,
    ch_axis=0, averaging_constant=1)
default_embedding_fake_quant_4bit = FakeQuantize.with_args(
    observer=_MovingAvgPC, qscheme=_FLOAT_QP, ch_axis=0, dtype=ember.quint4x2,
    averaging_constant=1)
default_fused_act_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(observer=_MovingAvg,
                                                                       **_U8)
default_fused_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(observer=_MovingAvg,
                                                                      **_S8, **_TS)
default_fused_per_channel_wt_fake_quant = FusedMovingAvgObsFakeQuantize.with_args(
    observer=_MovingAvgPC, **_S8, **_CS)
fused_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=_MovingAvg, **_S7, **_TS, eps=2 ** -12)
fused_per_channel_wt_fake_quant_range_neg_127_to_127 = FusedMovingAvgObsFakeQuantize.with_args(
    observer=_MovingAvgPC, **_S7, **_CS, eps=2 ** -12)


# ------------------------------------------------------------------ model.apply helpers

def _apply_to_fake_quant(method):
    def apply(mod):
        if isinstance(mod, FakeQuantizeBase):
            getattr(mod, method)()
    apply.__name__ = apply.__qualname__ = method
    apply.__doc__ = f"``model.apply({method})``: call ``{method}()`` on fake quantizers."
    return apply


disable_fake_quant = _apply_to_fake_quant("disable_fake_quant")
enable_fake_quant = _apply_to_fake_quant("enable_fake_quant")
disable_observer = _apply_to_fake_quant("disable_observer")
enable_observer = _apply_to_fake_quant("enable_observer")
