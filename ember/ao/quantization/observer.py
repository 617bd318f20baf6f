"""Observers (torch.ao.quantization.observer): identity modules that record the range of what
passes through and turn it into quantization parameters.

``calculate_qparams()`` gives ``(scale, zero_point)``: float32, shape ``[1]`` per tensor or
``[C]`` per channel. Zero points are int32 for affine schemes, int64 for symmetric ones and
for the unobserved defaults, float for ``per_channel_affine_float_qparams``.
"""
from __future__ import annotations

import functools
import warnings
from abc import ABCMeta, abstractmethod
from collections import OrderedDict

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
_U8, _I8 = ember.quint8, ember.qint8
_T_AFF, _T_SYM = ember.per_tensor_affine, ember.per_tensor_symmetric
_C_AFF, _C_SYM, _C_FLT = (ember.per_channel_affine, ember.per_channel_symmetric,
                          ember.per_channel_affine_float_qparams)
_SYMMETRIC = (_T_SYM, _C_SYM)
# dtype name -> (lowest, highest) integer; the names listed in the error message below
_RANGES = {"quint8": (0, 255), "uint8": (0, 255), "qint8": (-128, 127), "int8": (-128, 127),
           "quint4x2": (0, 15), "int16": (-2 ** 15, 2 ** 15 - 1), "uint16": (0, 2 ** 16 - 1),
           "qint32": (-2 ** 31, 2 ** 31 - 1), "int32": (-2 ** 31, 2 ** 31 - 1)}
_DTYPE_LIST = ("qint8", "quint8", "quint4x2", "qint32", "int8", "uint8", "int16", "int32",
               "uint16")


def _short(dtype):
    return str(dtype).rsplit(".", 1)[-1]


# ------------------------------------------------------------------ with_args

class _PartialWrapper:
    """A bound constructor (``Observer.with_args(...)``): ``p`` is a ``functools.partial``;
    ``callable_args`` maps names to zero-argument functions evaluated at every call."""

    def __init__(self, p):
        self.p, self.callable_args = p, {}

    def __call__(self, *args, **keywords):
        late = {name: make() for name, make in self.callable_args.items()}
        late.update(keywords)
        return self.p(*args, **late)

    def __repr__(self):
        return f"{self.p!r}{self.callable_args!r}"

    def with_args(self, **kwargs):
        return _with_args(self, **kwargs)

    def with_callable_args(self, **kwargs):
        out = _PartialWrapper(self.p)
        out.callable_args = dict(self.callable_args, **kwargs)
        return out


def _with_args(cls_or_self, **kwargs):
    """A factory building ``cls_or_self(**kwargs)`` afresh on each call (a wrapper keeps its
    callable arguments)."""
    out = _PartialWrapper(functools.partial(cls_or_self, **kwargs))
    out.callable_args.update(getattr(cls_or_self, "callable_args", {}))
    return out


def _with_callable_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self)).with_callable_args(**kwargs)


# ------------------------------------------------------------------ bases

class ObserverBase(nn.Module, metaclass=ABCMeta):
    """Root of the observers: records the target quantized ``dtype`` and ``is_dynamic``."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype, self.is_dynamic = dtype, is_dynamic

    @abstractmethod
    def forward(self, x):
        """Identity on ``x``, recording what is needed."""

    @abstractmethod
    def calculate_qparams(self, **kwargs):
        """The quantization parameters for what was recorded."""

    with_args = classmethod(_with_args)
    with_callable_args = classmethod(_with_callable_args)


def _qmin_qmax(quant_min, quant_max, customized, dtype, reduce_range):
    """The integer interval ``[qmin, qmax]`` the observed range maps onto; ``reduce_range``
    drops one bit (user ranges halve, 8-bit dtypes lose their top bit)."""
    if not customized:
        lo, hi = _RANGES[_short(dtype)]
        if reduce_range and _short(dtype) in ("qint8", "int8", "quint8", "uint8"):
            lo, hi = lo // 2, hi // 2             # (-64, 63) or (0, 127)
        return lo, hi
    if quant_min > 0 or quant_max < 0:
        raise AssertionError("Used-specified quantization range must include 0.")
    if not quant_min < quant_max:
        raise AssertionError("qmin must be strictly less than qmax for user-specified "
                             "quantization range.")
    return (quant_min // 2, quant_max // 2) if reduce_range else (quant_min, quant_max)


def _unobserved():
    warnings.warn("must run observer before calling calculate_qparams. Returning default "
                  "values.")
    return False


def _valid_min_max(min_val, max_val):
    """Whether ``[min_val, max_val]`` holds a real observation (warns when not; raises when
    some min exceeds its max)."""
    if 0 in (min_val.numel(), max_val.numel()):
        return _unobserved()
    if min_val.dim() == 0 and (float(min_val), float(max_val)) == (float("inf"), -float("inf")):
        return _unobserved()
    if not bool(ember.all(min_val <= max_val)):
        raise AssertionError(f"min {min_val} should be less than max {max_val}")
    return True


class UniformQuantizationObserverBase(ObserverBase):
    """Maps an observed float range onto ``[quant_min, quant_max]`` with one step size."""
    _version = 3
    eps: ember.Tensor

    def __init__(self, dtype=_U8, qscheme=_T_AFF, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, **kwargs):
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.qscheme, self.reduce_range = qscheme, reduce_range
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers.                     reduce_range will be deprecated in "
                          "a future release of PyTorch.")
        self.register_buffer("eps", ember.tensor([eps]))
        if qscheme not in (_T_AFF, _T_SYM, _C_AFF, _C_SYM, _C_FLT):
            raise AssertionError("Default Observer only supports per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if _short(dtype) not in _DTYPE_LIST:
            listed = ", ".join("torch." + n for n in _DTYPE_LIST)
            raise AssertionError(f"Default Observer only works for ({listed}) data type")
        self.has_customized_qrange = None not in (quant_min, quant_max)
        self.quant_min, self.quant_max = _qmin_qmax(
            quant_min, quant_max, self.has_customized_qrange, dtype, reduce_range)

    def _load_from_state_dict(self, state_dict, prefix, *args):
        """A state dict saved without ``eps`` still loads; the observer keeps its own."""
        missing = args[2]
        seen = len(missing)
        super()._load_from_state_dict(state_dict, prefix, *args)
        if prefix + "eps" in missing[seen:]:
            missing.remove(prefix + "eps")

    def _calculate_qparams(self, min_val, max_val):
        """``(scale, zero_point)`` for ``[min_val, max_val]`` (0-dim, or ``[C]``)."""
        if not _valid_min_max(min_val, max_val):
            return ember.tensor([1.0]), ember.tensor([0])
        levels = float(self.quant_max - self.quant_min)
        eps = self.eps.to(min_val.dtype)
        if self.qscheme is _C_FLT:                    # the range itself, zero point a float
            step = (max_val - min_val) / levels
            step = ember.where(step > eps, step, ember.ones_like(step))
            return step.reshape(-1), (min_val / step).neg().reshape(-1)
        lo = ember.clamp(min_val, max=0.0)           # the range always includes 0
        hi = ember.clamp(max_val, min=0.0)
        if self.qscheme in _SYMMETRIC:
            step = ember.maximum(ember.maximum(-lo, hi) / (levels / 2), eps)
            centre = 0
            if _short(self.dtype) in ("quint8", "uint8"):
                centre = (self.quant_min + self.quant_max) // 2 \
                    if self.has_customized_qrange else 128
            elif self.dtype is ember.uint16:
                centre = 2 ** 15
            offset = ember.full(step.shape, centre, dtype=ember.int64)
        else:
            step = ember.maximum((hi - lo) / levels, eps)
            offset = self.quant_min - ember.round(lo / step).to(ember.int32)
            offset = ember.clamp(offset, self.quant_min, self.quant_max)
        return step.reshape(-1), offset.reshape(-1)

    def reset_min_max_vals(self):
        raise NotImplementedError("Cannot reset min/max values in the given observer.")


def _check_scheme(cls_name, qscheme, per_channel, suffix=""):
    """Raise NotImplementedError when ``qscheme`` does not suit the observer."""
    allowed = (_C_SYM, _C_AFF, _C_FLT) if per_channel else (_T_SYM, _T_AFF)
    if qscheme not in allowed:
        # torch's texts keep the indentation of its continued source lines (21 spaces;
        # 17 in the moving-average one, which also names the scheme given)
        gap = " " * 21
        if per_channel:
            what = (f"{gap}torch.per_channel_symmetric, torch.per_channel_affine and "
                    "torch.per_channel_affine_float_qparams.")
        elif suffix:
            gap = " " * 17
            what = f"{gap}torch.per_tensor_symmetric and torch.per_tensor_affine.{gap}"
        else:
            what = f" torch.per_tensor_symmetric{gap}and torch.per_tensor_affine."
        raise NotImplementedError(f"{cls_name}'s qscheme only support{what}{suffix}")


def _check_dynamic(cls_name, is_dynamic, averaging_constant=None):
    if not is_dynamic or averaging_constant == 1:
        return
    tail = "" if averaging_constant is None else \
        f" for averaging constant of {averaging_constant}"
    raise NotImplementedError(f"{cls_name} doesn't support dynamic quantization{tail}")


class _RangeTracking:
    """Shared forward of the min/max observers: reduce the batch to ``(lo, hi)`` with
    ``_batch_range``, fold it into ``min_val``/``max_val`` with ``_fold`` and store."""

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        lo, hi = self._batch_range(x_orig.detach().to(self.min_val.dtype))
        if not self._observed():
            self._store(lo, hi)
        else:
            self._store(*self._fold(lo, hi))
        return x_orig

    def _fold(self, lo, hi):
        """Running extrema."""
        return ember.minimum(lo, self.min_val), ember.maximum(hi, self.max_val)

    def calculate_qparams(self):
        return self._calculate_qparams(self.min_val, self.max_val)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class _Averaging:
    """``_fold`` as exponential moving averages: ``m += averaging_constant * (batch - m)``."""

    def _fold(self, lo, hi):
        c = self.averaging_constant
        return self.min_val + c * (lo - self.min_val), self.max_val + c * (hi - self.max_val)


# ------------------------------------------------------------------ per tensor

class MinMaxObserver(_RangeTracking, UniformQuantizationObserverBase):
    """Running minimum and maximum over all batches (``min_val``, ``max_val``: 0-dim)."""
    min_val: ember.Tensor
    max_val: ember.Tensor

    def __init__(self, dtype=_U8, qscheme=_T_AFF, reduce_range=False, quant_min=None,
                 quant_max=None, factory_kwargs=None, eps=_EPS, is_dynamic=False, **kwargs):
        _check_scheme("MinMaxObserver", qscheme, per_channel=False)
        _check_dynamic("MinMaxObserver", is_dynamic)
        UniformQuantizationObserverBase.__init__(
            self, dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps,
            is_dynamic, **kwargs)
        self._init_range()
        if qscheme is _T_SYM and reduce_range and dtype is _U8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _init_range(self):
        self.register_buffer("min_val", ember.tensor(float("inf")))
        self.register_buffer("max_val", ember.tensor(float("-inf")))

    def _batch_range(self, x):
        return ember.aminmax(x)

    def _observed(self):
        return not (float(self.min_val) == float("inf") and float(self.max_val) == -float("inf"))

    def _store(self, lo, hi):
        self.min_val.copy_(lo)
        self.max_val.copy_(hi)

    def reset_min_max_vals(self):
        self._store(ember.tensor(float("inf")), ember.tensor(float("-inf")))


class MovingAverageMinMaxObserver(_Averaging, MinMaxObserver):
    """Per-tensor moving averages of each batch's min and max; the first batch sets them."""

    def __init__(self, averaging_constant=0.01, dtype=_U8, qscheme=_T_AFF, reduce_range=False,
                 quant_min=None, quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        name = "MovingAverageMinMaxObserver"
        _check_scheme(name, qscheme, per_channel=False, suffix=f"but got: {qscheme}")
        self.averaging_constant = averaging_constant
        _check_dynamic(name, is_dynamic, averaging_constant)
        UniformQuantizationObserverBase.__init__(
            self, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
            quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self._init_range()


# ------------------------------------------------------------------ per channel

class PerChannelMinMaxObserver(_RangeTracking, UniformQuantizationObserverBase):
    """Running min and max of every slice along ``ch_axis`` (``min_val``, ``max_val``:
    ``[C]``; empty until the first batch)."""
    min_val: ember.Tensor
    max_val: ember.Tensor

    def __init__(self, ch_axis=0, dtype=_U8, qscheme=_C_AFF, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        _check_scheme("PerChannelMinMaxObserver", qscheme, per_channel=True)
        _check_dynamic("PerChannelMinMaxObserver", is_dynamic)
        UniformQuantizationObserverBase.__init__(
            self, dtype, qscheme, reduce_range, quant_min, quant_max, factory_kwargs, eps,
            is_dynamic, **kwargs)
        self._init_range(ch_axis)
        if qscheme is _C_SYM and reduce_range and dtype is _U8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization for "
                                      "quint8")

    def _init_range(self, ch_axis):
        self.ch_axis = ch_axis
        self.register_buffer("min_val", ember.tensor([]))
        self.register_buffer("max_val", ember.tensor([]))

    def _batch_range(self, x):
        """Extrema over every axis but ``ch_axis``: two ``[C]`` tensors."""
        rows = ember.movedim(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        return ember.aminmax(rows, dim=1)

    def _observed(self):
        return self.min_val.numel() > 0 and self.max_val.numel() > 0

    def _store(self, lo, hi):
        self.min_val, self.max_val = lo.clone(), hi.clone()

    def _load_from_state_dict(self, state_dict, prefix, *args):
        for name in ("min_val", "max_val"):           # take the saved shape ([C] or empty)
            if prefix + name in state_dict:
                setattr(self, name, ember.empty(state_dict[prefix + name].shape))
        super()._load_from_state_dict(state_dict, prefix, *args)

    def reset_min_max_vals(self):
        self._store(ember.tensor([]), ember.tensor([]))


class MovingAveragePerChannelMinMaxObserver(_Averaging, PerChannelMinMaxObserver):
    """Per-channel moving averages of min and max (as :class:`MovingAverageMinMaxObserver`)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=_U8, qscheme=_C_AFF,
                 reduce_range=False, quant_min=None, quant_max=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        name = "MovingAveragePerChannelMinMaxObserver"
        _check_scheme(name, qscheme, per_channel=True)
        _check_dynamic(name, is_dynamic, averaging_constant)
        UniformQuantizationObserverBase.__init__(
            self, dtype=dtype, qscheme=qscheme, reduce_range=reduce_range, quant_min=quant_min,
            quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self._init_range(ch_axis)
        self.averaging_constant = averaging_constant


# ------------------------------------------------------------------ no statistics

class _Passthrough(ObserverBase):
    """Observers that record nothing and cannot produce parameters."""

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception(f"calculate_qparams should not be called for {type(self).__name__}")


class FixedQParamsObserver(ObserverBase):
    """Always answers the given ``scale``/``zero_point`` (ops whose output range is known,
    e.g. sigmoid, tanh); buffers of shape ``[1]``."""

    def __init__(self, scale, zero_point, dtype=_U8, qscheme=_T_AFF, quant_min=0,
                 quant_max=255, is_dynamic=False, **kwargs):
        _check_dynamic("FixedQParamsObserver", is_dynamic)
        super().__init__(dtype=dtype, is_dynamic=is_dynamic)
        self.quant_min, self.quant_max, self.qscheme = quant_min, quant_max, qscheme
        self.register_buffer("scale", ember.full((1,), scale, dtype=ember.float32))
        self.register_buffer("zero_point", ember.full((1,), zero_point, dtype=ember.int32))

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class PlaceholderObserver(_Passthrough):
    """Records nothing; carries ``dtype`` and friends to the convert step (float16 and
    dynamic quantization)."""

    def __init__(self, dtype=ember.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None, is_dynamic=False):
        if compute_dtype:
            warnings.warn("Please use `is_dynamic` instead of `compute_dtype`. `compute_dtype` "
                          "will be deprecated in a future release of PyTorch.")
        super().__init__(dtype=dtype, is_dynamic=bool(compute_dtype) or is_dynamic)
        self.qscheme = qscheme if qscheme is not None else _T_AFF
        self.eps = eps if eps is not None else _EPS
        self.quant_min, self.quant_max, self.custom_op = quant_min, quant_max, custom_op_name

    def extra_repr(self):
        return f"dtype={self.dtype}, is_dynamic={self.is_dynamic}"


class RecordingObserver(_Passthrough):
    """Keeps a clone of every tensor passed (``get_tensor_value()``), for debugging."""
    __annotations__ = {"tensor_val": list}

    def __init__(self, dtype=_U8):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def get_tensor_value(self):
        return self.tensor_val


class NoopObserver(_Passthrough):
    """Records nothing; ``dtype`` defaults to float16 (static float16 quantization)."""

    def __init__(self, dtype=ember.float16, custom_op_name=""):
        super().__init__(dtype=dtype, is_dynamic=False)
        self.custom_op = custom_op_name


class ReuseInputObserver(_Passthrough):
    """Marks an output that shares its input's observer (FX graph mode)."""

    def __init__(self):
        super().__init__(_U8, is_dynamic=False)


# ------------------------------------------------------------------ state dicts

def _is_observer_key(key):
    return "observer" in key or "activation_post_process" in key


def get_observer_state_dict(mod):
    """The part of ``mod.state_dict()`` held by observers and fake quantizers."""
    return OrderedDict(kv for kv in mod.state_dict().items() if _is_observer_key(kv[0]))


def load_observer_state_dict(mod, obs_dict):
    """Load ``obs_dict`` (from :func:`get_observer_state_dict`) into ``mod``'s observers."""
    from ember.ao.quantization.fake_quantize import FakeQuantizeBase
    missing, unexpected = [], []
    for name, sub in mod.named_modules():
        if isinstance(sub, (ObserverBase, FakeQuantizeBase)):
            sub._load_from_state_dict(obs_dict, f"{name}." if name else "", {}, True,
                                      missing, unexpected, [])
    for keys, what in ((missing, "Missing"), (unexpected, "Unexpected")):
        bad = [k for k in keys if _is_observer_key(k)]
        if bad:
            raise Exception(f"{what} keys for observer {bad[0]} in state_dict")


# ------------------------------------------------------------------ defaults

_SYM8_TENSOR = dict(dtype=_I8, qscheme=_T_SYM)
_SYM8_CHANNEL = dict(dtype=_I8, qscheme=_C_SYM)
_RANGE_127 = dict(quant_min=-127, quant_max=127, eps=2 ** -12)
_FULL_U8 = dict(dtype=_U8, quant_min=0, quant_max=255)

default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_weight_observer = MinMaxObserver.with_args(**_SYM8_TENSOR)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(**_SYM8_TENSOR, **_RANGE_127)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(**_SYM8_CHANNEL)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    **_SYM8_CHANNEL, **_RANGE_127)
default_dynamic_quant_observer = PlaceholderObserver.with_args(**_FULL_U8, is_dynamic=True)
default_float_qparams_observer, default_float_qparams_observer_4bit = (
    PerChannelMinMaxObserver.with_args(dtype=dt, qscheme=_C_FLT, ch_axis=0)
    for dt in (_U8, ember.quint4x2))
# outputs in [-1, 1] and [0, 1] over 256 levels
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=1 / 128, zero_point=128, **_FULL_U8)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1 / 256, zero_point=0, **_FULL_U8)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
default_reuse_input_observer = ReuseInputObserver


# defined in files of their own, exported from here as torch does
from ember.ao.quantization._histogram import (HistogramObserver,  # noqa: E402
                                              default_histogram_observer)
from ember.ao.quantization._affine import (  # noqa: E402,F401
    AffineQuantizedObserverBase, Granularity, MappingType, PerAxis, PerBlock, PerGroup, PerRow,
    PerTensor, PerToken, TorchAODType, ZeroPointDomain, get_block_size)
