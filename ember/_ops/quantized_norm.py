"""``quantized::`` normalization, softmax and pooling records (``ember.ops.quantized.layer_norm``
...), and ``torch.quantized_max_pool1d/2d/3d``.

The normalizations dequantize, normalize in float64 (statistics of the values, as torch's
float kernels), apply the affine parameters and quantize onto the output parameters with the
vector rule (``quantize_vec``); their results are continuous, so half-way cases practically
never occur, and on random inputs the integers equal torch's."""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._kernels import quantized as K
from ember._kernels import quantized_ops as QK
from ember._ops.quantized import defop, qparams, int_array, float_array
from ember._ops.quantized_functional import _check, per_tensor_result, _OPTS

_F32, _F64 = np.float32, np.float64


def _quantized_out(qx, values, scale, zero_point, relu=False):
    lo, hi = _dtype.QRANGE[qx.dtype]
    values = np.asarray(values, _F64)
    if relu:
        values = np.maximum(values, 0.0)
    ints = K.quantize_vec(values.astype(_F32), scale, zero_point, lo, hi,
                          _dtype.QSTORAGE[qx.dtype])
    return per_tensor_result(ints, qx.dtype, scale, zero_point)


def _array(t, n=None, fill=None):
    if t is None:
        return np.full(n, fill, _F64)
    return np.asarray(t._data, _F64)


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


# ------------------------------------------------------------------ layer / group / instance

def _layer_norm(input, normalized_shape, weight, bias, eps, output_scale, output_zero_point):
    _check("layer_norm", input)
    shape = tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    x = float_array(input).astype(_F64)
    y = _normalize(x, tuple(range(x.ndim - k, x.ndim)), eps)
    if weight is not None:
        y = y * _array(weight).reshape(shape)
    if bias is not None:
        y = y + _array(bias).reshape(shape)
    return _quantized_out(input, y, output_scale, output_zero_point)


def _channel_affine(y, weight, bias, channels):
    shape = (channels,) + (1,) * (y.ndim - 2)
    if weight is not None:
        y = y * _array(weight).reshape(shape)
    if bias is not None:
        y = y + _array(bias).reshape(shape)
    return y


def _group_norm(input, num_groups, weight, bias, eps, output_scale, output_zero_point):
    _check("group_norm", input)
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    x = float_array(input).astype(_F64)
    y = _normalize(x.reshape(n, num_groups, -1), (2,), eps).reshape(x.shape)
    return _quantized_out(input, _channel_affine(y, weight, bias, c), output_scale,
                          output_zero_point)


def _instance_norm(input, weight, bias, eps, output_scale, output_zero_point):
    _check("instance_norm", input)
    x = float_array(input).astype(_F64)
    y = _normalize(x, tuple(range(2, x.ndim)), eps)
    return _quantized_out(input, _channel_affine(y, weight, bias, x.shape[1]), output_scale,
                          output_zero_point)


defop("quantized::layer_norm(Tensor input, int[] normalized_shape, Tensor? weight, "
      "Tensor? bias, float eps, float output_scale, int output_zero_point) -> Tensor",
      composite=_layer_norm, **_OPTS)
defop("quantized::group_norm(Tensor input, int num_groups, Tensor? weight, Tensor? bias, "
      "float eps, float output_scale, int output_zero_point) -> Tensor",
      composite=_group_norm, **_OPTS)
defop("quantized::instance_norm(Tensor input, Tensor? weight, Tensor? bias, float eps, "
      "float output_scale, int output_zero_point) -> Tensor",
      composite=_instance_norm, **_OPTS)


# ------------------------------------------------------------------ batch norm (inference)

def _batch_norm(fname, dims, relu):
    def run(qx, weight, bias, mean, var, eps, output_scale, output_zero_point):
        _check(fname, qx)
        if dims and qx.dim() not in dims:
            raise RuntimeError(f"Expected {' or '.join(str(d) for d in dims)}D input to "
                               f"quantized::{fname}, got {qx.dim()}D")
        c = qx.shape[1]
        a = _array(weight, c, 1.0) / np.sqrt(_array(var) + eps)
        b = _array(bias, c, 0.0) - a * _array(mean)
        shape = (c,) + (1,) * (qx.dim() - 2)
        y = float_array(qx).astype(_F64) * a.reshape(shape) + b.reshape(shape)
        return _quantized_out(qx, y, output_scale, output_zero_point, relu)
    return run


for _name, _dims in (("batch_norm1d", (2, 3)), ("batch_norm2d", (4,)), ("batch_norm3d", (5,)),
                     ("batch_norm", ())):
    for _relu in (False, True):
        _full = _name + ("_relu" if _relu else "")
        defop(f"quantized::{_full}(Tensor qx, Tensor? weight, Tensor? bias, Tensor mean, "
              "Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor",
              composite=_batch_norm(_full, _dims, _relu), **_OPTS)


# ------------------------------------------------------------------ softmax

def _softmax(qx, dim, output_scale, output_zero_point):
    _check("softmax", qx)
    x = float_array(qx)
    d = dim % max(qx.dim(), 1)
    e = np.exp(x - x.max(axis=d, keepdims=True))
    y = (e / e.sum(axis=d, keepdims=True)).astype(_F32)
    return _quantized_out(qx, y, output_scale, output_zero_point)


defop("quantized::softmax(Tensor qx, int dim, float output_scale, int output_zero_point) -> "
      "Tensor", composite=_softmax, **_OPTS)


# ------------------------------------------------------------------ max pooling records

def _list(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def max_pool_q(fname, n, qx, kernel_size, stride, padding, dilation, ceil_mode):
    """Max pooling of a quantized tensor's integers (``stride`` empty: the kernel size)."""
    _check(fname, qx)
    k = _list(kernel_size, n)
    s = _list(stride, n) if stride is not None and len(_list(stride, n)) and \
        list(stride) != [] else k
    p, d = _list(padding, n), _list(dilation, n)
    if qx.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{fname}: expected a {n + 1}D or {n + 2}D input, got "
                           f"{qx.dim()}D")
    ints = QK.max_pool(int_array(qx), k, s, p, d, bool(ceil_mode))
    if any(v <= 0 for v in ints.shape[-n:]):
        raise RuntimeError(f"{fname}: the output size is too small for input "
                           f"{list(qx.shape)}")
    return per_tensor_result(ints, qx.dtype, qparams(qx).scale, qparams(qx).zero_point)


defop("quantized::max_pool1d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, "
      "int[] dilation, bool ceil_mode) -> Tensor",
      composite=lambda qx, kernel_size, stride, padding, dilation, ceil_mode: max_pool_q(
          "quantized::max_pool1d", 1, qx, kernel_size, stride, padding, dilation, ceil_mode),
      **_OPTS)
defop("quantized::max_pool2d(Tensor qx, int[] kernel_size, int[] stride, int[] padding, "
      "int[] dilation, bool ceil_mode) -> Tensor",
      composite=lambda qx, kernel_size, stride, padding, dilation, ceil_mode: max_pool_q(
          "quantized::max_pool2d", 2, qx, kernel_size, stride, padding, dilation, ceil_mode),
      **_OPTS)
def _int_lists_given(fname, **lists):
    """torch's argument parser first: an int list given as None is a TypeError."""
    for name, v in lists.items():
        if v is None:
            raise TypeError(f"{fname}(): argument '{name}' must be tuple of ints, not NoneType")


def _quantized_max_pool(n):
    fname = f"quantized_max_pool{n}d"

    def pool(self, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        _int_lists_given(fname, kernel_size=kernel_size, padding=padding, dilation=dilation)
        return max_pool_q(fname, n, self, kernel_size, stride, padding, dilation, ceil_mode)
    return pool


for _n in (1, 2, 3):
    defop(f"quantized_max_pool{_n}d(Tensor self, int[{_n}] kernel_size, int[{_n}] stride=[], "
          f"int[{_n}] padding=0, int[{_n}] dilation=1, bool ceil_mode=False) -> Tensor",
          composite=_quantized_max_pool(_n), method=False, out=False, differentiable=False)


defop("quantized_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor mean, "
      "Tensor var, float eps, float output_scale, int output_zero_point) -> Tensor",
      composite=_batch_norm("quantized_batch_norm", (), False), method=False, out=False,
      differentiable=False)
