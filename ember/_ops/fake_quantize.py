"""Fake quantization (``torch.fake_quantize_per_tensor_affine``,
``torch.fake_quantize_per_channel_affine``): quantize and dequantize in one step, float in,
float out, so training sees the rounding. The gradient is straight-through: the incoming
gradient where the value fell inside ``[quant_min, quant_max]``, zero where it was clamped.

The records return the output and that mask (torch's ``..._cachemask`` ops, hence the
``FakeQuantizePerTensorAffineCachemaskBackward0`` nodes); the public fronts return the
output. The arithmetic is ``fake_quantize`` in ember/_kernels/quantized.py."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._ops.registry import OpDef, public
from ember._tensor import Tensor

_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _check_range(quant_min, quant_max, zero_point=None):
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    if zero_point is not None and np.any((np.asarray(zero_point) < quant_min) |
                                         (np.asarray(zero_point) > quant_max)):
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _check_input(name, x):
    if x.dtype.name not in _FLOATS:
        raise RuntimeError(f"{name}: expected a floating point input, got {x.dtype}")


def _per_tensor(x, scale, zero_point, quant_min, quant_max):
    _check_input("fake_quantize_per_tensor_affine", x)
    _check_range(quant_min, quant_max, zero_point)
    out, mask = K.fake_quantize(_as_f32(x), float(np.float32(scale)), int(zero_point),
                                quant_min, quant_max)
    return out.astype(x.dtype, copy=False), mask


def _as_f32(x):
    """float16/bfloat16 compute in float32."""
    return x if x.dtype in (np.float32, np.float64) else x.astype(np.float32)


def _per_tensor_tq(x, scale, zero_point, fake_quant_enabled, quant_min, quant_max):
    if not int(np.asarray(fake_quant_enabled).reshape(-1)[0]):
        return x.copy(), np.ones(x.shape, bool)
    return _per_tensor(x, np.asarray(scale).reshape(-1)[0], np.asarray(zero_point).reshape(-1)[0],
                       quant_min, quant_max)


def _per_channel(x, scale, zero_point, axis, quant_min, quant_max):
    name = "fake_quantize_per_channel_affine"
    _check_input(name, x)
    if scale.dtype != np.float32:
        raise RuntimeError(f"Scale must be Float or BFloat16, found "
                           f"{_dtype.scalar_type_name(scale.dtype)}")
    if zero_point.dtype not in (np.int32, np.float32, np.float16):
        raise RuntimeError(f"Zero-point must be Int32, Float or Half, found "
                           f"{'Long' if zero_point.dtype == np.int64 else zero_point.dtype}")
    if scale.ndim != 1 or zero_point.ndim != 1:
        raise RuntimeError("scale and zero-point need to be 1-D tensors")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-x.ndim}, {x.ndim - 1}], but got {axis})")
    if axis < 0:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    if scale.shape[0] != x.shape[axis] or zero_point.shape[0] != x.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input "
                           "tensor")
    _check_range(quant_min, quant_max, zero_point)
    shape = K.channel_shape(x.ndim, axis, scale.shape[0])
    out, mask = K.fake_quantize(_as_f32(x), scale.reshape(shape), zero_point.reshape(shape),
                                quant_min, quant_max)
    return out.astype(x.dtype, copy=False), mask


per_tensor = OpDef("fake_quantize_per_tensor_affine_cachemask(Tensor self, float scale, "
                   "int zero_point, int quant_min, int quant_max) -> (Tensor output, "
                   "Tensor mask)", _per_tensor, promote=None, saves=("mask",))
per_tensor_tq = OpDef("_fake_quantize_per_tensor_affine_cachemask_tensor_qparams(Tensor self, "
                      "Tensor scale, Tensor zero_point, Tensor fake_quant_enabled, "
                      "int quant_min, int quant_max) -> (Tensor output, Tensor mask)",
                      _per_tensor_tq, promote=None, saves=("mask",),
                      grad_name="FakeQuantizePerTensorAffineCachemaskTensorQparamsBackward0")
per_channel = OpDef("fake_quantize_per_channel_affine_cachemask(Tensor self, Tensor scale, "
                    "Tensor zero_point, int axis, int quant_min, int quant_max) -> "
                    "(Tensor output, Tensor mask)", _per_channel, promote=None,
                    saves=("mask",))


def _straight_through(ctx, grads, x, *rest):
    """grad * mask for the input; the parameters get none."""
    g = grads[0]
    mask = ctx.result[1]
    gx = g * mask if ctx.needs_input_grad[0] and g is not None else None
    return (gx,) + (None,) * len(rest)


for _op in (per_tensor, per_tensor_tq, per_channel):
    _op.def_backward(_straight_through)


@public("fake_quantize_per_tensor_affine")
def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """Quantize-dequantize ``input`` with one ``scale``/``zero_point`` (numbers or 1-element
    tensors) onto ``[quant_min, quant_max]``; same shape and dtype as ``input``."""
    if isinstance(scale, Tensor) or isinstance(zero_point, Tensor):
        from ember import ones
        enabled = ones(1, dtype=_dtype.int64)
        return per_tensor_tq(input, _tensor(scale), _tensor(zero_point, int), enabled,
                             quant_min, quant_max)[0]
    return per_tensor(input, scale, zero_point, quant_min, quant_max)[0]


def _tensor(v, kind=float):
    if isinstance(v, Tensor):
        return v
    from ember import tensor
    return tensor(kind(v))


@public("fake_quantize_per_channel_affine")
def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """Quantize-dequantize ``input`` with per-slice ``scale``/``zero_point`` (shape ``[C]``,
    ``C = input.shape[axis]``); same shape and dtype as ``input``."""
    return per_channel(input, scale, zero_point, axis, quant_min, quant_max)[0]


# ------------------------------------------------------------------ fused observe + fake quant

def _fq_helper(x, scale, zero_point, fake_quant_on, quant_min, quant_max, ch_axis, per_row):
    if not int(np.asarray(fake_quant_on).reshape(-1)[0]):
        return x.copy(), np.ones(x.shape, bool)
    if per_row:
        return _per_channel(x, scale, zero_point, ch_axis, quant_min, quant_max)
    return _per_tensor(x, scale.reshape(-1)[0], zero_point.reshape(-1)[0], quant_min, quant_max)


fq_helper = OpDef("_fused_moving_avg_obs_fq_helper(Tensor self, Tensor scale, Tensor zero_point, "
                  "Tensor fake_quant_on, int quant_min, int quant_max, int ch_axis, "
                  "bool per_row_fake_quant=False) -> (Tensor output, Tensor mask)",
                  _fq_helper, promote=None, saves=("mask",))
fq_helper.def_backward(_straight_through)


@public("fused_moving_avg_obs_fake_quant")
def fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max,
                                    scale, zero_point, averaging_const, quant_min, quant_max,
                                    ch_axis, per_row_fake_quant=False, symmetric_quant=False):
    """Observe ``self`` into ``running_min``/``running_max`` (moving averages; the first call
    sets them), write the resulting ``scale``/``zero_point`` (in place), then fake-quantize
    ``self`` with them. Returns the output (``self``'s shape)."""
    import ember
    if int(observer_on.reshape(-1)[0]):
        with ember.no_grad():
            x = self.detach()
            if per_row_fake_quant:
                axes = list(range(x.dim()))
                axes[ch_axis], axes[0] = 0, ch_axis
                cur_min, cur_max = ember.aminmax(ember.flatten(x.permute(axes), start_dim=1), dim=1)
            else:
                cur_min, cur_max = ember.aminmax(x)
            if running_min.numel() == 0 or bool(ember.isinf(running_min).all()):
                new_min, new_max = cur_min, cur_max
            else:
                new_min = running_min + averaging_const * (cur_min - running_min)
                new_max = running_max + averaging_const * (cur_max - running_max)
            _assign(running_min, new_min)
            _assign(running_max, new_max)
            pairs = [K.choose_qparams_fused(lo, hi, quant_min, quant_max,
                                            symmetric=symmetric_quant)
                     for lo, hi in zip(new_min.reshape(-1).tolist(), new_max.reshape(-1).tolist())]
            _assign(scale, ember.tensor([p[0] for p in pairs], dtype=scale.dtype))
            _assign(zero_point, ember.tensor([p[1] for p in pairs], dtype=zero_point.dtype))
    return fq_helper(self, scale, zero_point, fake_quant_on, quant_min, quant_max, ch_axis,
                     per_row_fake_quant)[0]


def _assign(buf, value):
    """Write ``value`` into buffer ``buf`` in place (resizing an empty/1-element one)."""
    if tuple(buf.shape) != tuple(value.shape):
        buf.resize_(value.shape)
    buf.copy_(value)


# ------------------------------------------------------------------ learnable (LSQ) fake quant
# ``_fake_quantize_learnable_per_tensor_affine`` / ``_per_channel_affine``: the same forward
# with the zero point rounded half to even and clamped into [quant_min, quant_max]; the
# backward also gives scale and zero point gradients (learned step size quantization). Per
# element, as torch computes them (found with one-hot gradients on half-way ties, zero
# mismatches), with ``q = nearbyint(fma(x, inv_scale, zp))`` (one rounding of the
# multiply-add; the forward rounds ``x * inv_scale`` first) and ``gf = grad_factor``:
#   dx     = dy inside [quant_min, quant_max], 0 where clamped
#   dscale = ((fma(q - zp, scale, -x) * dy) * inv_scale) * gf inside,
#            ((quant_min or quant_max) - zp) * dy * gf where clamped   (float32, in this order)
#   dzp    = 0 inside, (-scale * dy) * gf where clamped
# then summed (per channel: over all but ``axis``); the sums' order may differ from torch's.

def _rounded_zp(zero_point, quant_min, quant_max):
    return np.clip(np.rint(np.asarray(zero_point, np.float32)), quant_min, quant_max)


def _learnable(x, scale, zero_point, axis, quant_min, quant_max):
    _check_input("_fake_quantize_learnable_per_tensor_affine", x)
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or         equal to `quant_max`.")
    zp = _rounded_zp(zero_point, quant_min, quant_max).astype(np.int64)
    s = np.asarray(scale, np.float32)
    if axis is not None:
        shape = K.channel_shape(x.ndim, axis, s.shape[0])
        s, zp = s.reshape(shape), zp.reshape(shape)
    else:
        s, zp = s.reshape(-1)[0], zp.reshape(-1)[0]
    return K.fake_quantize(_as_f32(x), s, zp, quant_min, quant_max)[0].astype(x.dtype,
                                                                             copy=False)


learnable_per_tensor = OpDef(
    "_fake_quantize_learnable_per_tensor_affine(Tensor self, Tensor scale, Tensor zero_point, "
    "int quant_min, int quant_max, float grad_factor=1.0) -> Tensor",
    lambda x, s, z, lo, hi, gf: _learnable(x, s, z, None, lo, hi), promote=None,
    saves=("self", "scale", "zero_point"))
learnable_per_channel = OpDef(
    "_fake_quantize_learnable_per_channel_affine(Tensor self, Tensor scale, Tensor zero_point, "
    "int axis, int quant_min, int quant_max, float grad_factor=1.0) -> Tensor",
    lambda x, s, z, axis, lo, hi, gf: _learnable(x, s, z, axis, lo, hi), promote=None,
    saves=("self", "scale", "zero_point"))


def _learnable_grads(g, x, scale, zero_point, axis, quant_min, quant_max, grad_factor):
    """(dx, dscale, dzero_point) in ember ops; per channel when ``axis`` is not None."""
    import ember
    if axis is not None:
        shape = [1] * x.dim()
        shape[axis] = -1
        s, z = scale.reshape(shape), zero_point.reshape(shape)
        reduce_dims = [d for d in range(x.dim()) if d != axis]
    else:
        s, z, reduce_dims = scale.reshape(()), zero_point.reshape(()), None
    zr = ember.clamp(ember.round(z.detach().float()), quant_min, quant_max)
    inv = 1.0 / s
    q = ember.round((x.double() * inv.double() + zr.double()).float())     # fma
    below, above = q < quant_min, q > quant_max
    inside = ~(below | above)
    # fma(q - zp, scale, -x): the float64 product is exact, the difference rounds once
    err = ((q - zr).double() * s.double() - x.double()).float()
    d_scale = ember.where(inside, (err * g) * inv,
                          ember.where(below, quant_min - zr, quant_max - zr) * g) * grad_factor
    d_zp = ember.where(inside, ember.zeros_like(x), (-s) * g) * grad_factor

    def total(t):
        t = t.sum() if reduce_dims is None else t.sum(dim=reduce_dims)
        return t.reshape(scale.shape)
    return g * inside, total(d_scale), total(d_zp).to(zero_point.dtype)


@learnable_per_tensor.def_backward
def _(ctx, g, x, scale, zero_point, quant_min, quant_max, grad_factor):
    gx, gs, gz = _learnable_grads(g, x, scale, zero_point, None, quant_min, quant_max,
                                  grad_factor)
    n = ctx.needs_input_grad
    return (gx if n[0] else None, gs if n[1] else None, gz if n[2] else None, None, None, None)


@learnable_per_channel.def_backward
def _(ctx, g, x, scale, zero_point, axis, quant_min, quant_max, grad_factor):
    gx, gs, gz = _learnable_grads(g, x, scale, zero_point, axis, quant_min, quant_max,
                                  grad_factor)
    n = ctx.needs_input_grad
    return (gx if n[0] else None, gs if n[1] else None, gz if n[2] else None, None, None, None,
            None)


@public("_fake_quantize_learnable_per_tensor_affine")
def _fake_quantize_learnable_per_tensor_affine(input, scale, zero_point, quant_min, quant_max,
                                               grad_factor=1.0):
    """Fake quantization with learnable ``scale``/``zero_point`` (1-element tensors)."""
    return learnable_per_tensor(input, scale, zero_point, quant_min, quant_max, grad_factor)


@public("_fake_quantize_learnable_per_channel_affine")
def _fake_quantize_learnable_per_channel_affine(input, scale, zero_point, axis, quant_min,
                                                quant_max, grad_factor=1.0):
    """Per-channel fake quantization with learnable ``scale``/``zero_point`` (shape [C])."""
    return learnable_per_channel(input, scale, zero_point, axis, quant_min, quant_max,
                                 grad_factor)
