"""Operator kernels of the lite runtime over NumPy arrays, in torch's ATen argument order
(a model's trailing default arguments may be left out: the Python defaults fill them).

Each kernel is registered under torch's operator names (``aten::add.Tensor``) by
``@kernel``; ``ember.lite.build`` keeps only the selected ones (one decorated function per
definition, helpers undecorated). Tensors are ``np.ndarray`` (0-d arrays for scalars).
"""
from __future__ import annotations

import math

import numpy as np

KERNELS = {}


def kernel(*names, outputs=1):
    def deco(fn):
        fn.outputs = outputs
        fn.nargs = fn.__code__.co_argcount
        for name in names:
            KERNELS[name] = fn
        return fn
    return deco


def _arr(x):
    return x if isinstance(x, np.ndarray) else np.asarray(x)


def _pair(v, n=2):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


def _binary(a, b):
    """Operands with torch's promotion of a Tensor with a Python number: the number stays a
    weak Python scalar (the tensor's dtype wins), except a float meeting an integer tensor,
    which makes the result float32 (torch's default dtype)."""
    a = _arr(a)
    if isinstance(b, float) and a.dtype.kind in "biu":
        a = a.astype(np.float32)
    return a, b


# ------------------------------------------------------------------ convolution, linear

def _pad2d(x, ph, pw, value=0.0):
    if ph == 0 and pw == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


@kernel("aten::conv2d", "aten::conv2d.padding")
def conv2d(input, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    """(N, C, H, W) * (O, C/groups, kh, kw) -> (N, O, H', W')."""
    unbatched = input.ndim == 3
    x = input[None] if unbatched else input
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    o, cg, kh, kw = weight.shape
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        else:
            padding = (dh * (kh - 1) // 2, dw * (kw - 1) // 2)
    ph, pw = _pair(padding)
    x = _pad2d(x, ph, pw)
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    if c != cg * groups:
        raise RuntimeError(f"conv2d: expected input with {cg * groups} channels, got {c}")
    if groups == c and cg == 1 and o == c:          # depthwise: a multiply-add per tap
        out = np.empty((n, c, oh, ow), dtype=np.result_type(x, weight))
        tmp = np.empty_like(out)
        for k, (i, j) in enumerate((i, j) for i in range(kh) for j in range(kw)):
            patch = x[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            np.multiply(patch, weight[:, 0, i, j][None, :, None, None], out=out if k == 0 else tmp)
            if k:
                out += tmp
    elif groups == 1 and kh == kw == 1 and sh == sw == 1:          # pointwise
        out = np.matmul(weight.reshape(o, c), x.reshape(n, c, h * w)).reshape(n, o, oh, ow)
    else:                                                          # im2col + matmul
        win = np.lib.stride_tricks.sliding_window_view(x, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(2, 3))
        win = win[:, :, ::sh, ::sw, ::dh, ::dw]          # (N, C, OH, OW, kh, kw)
        og = o // groups
        outs = []
        for g in range(groups):
            cols = win[:, g * cg:(g + 1) * cg].transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, cg * kh * kw)
            ws = weight[g * og:(g + 1) * og].reshape(og, cg * kh * kw)
            outs.append((cols @ ws.T).reshape(n, oh, ow, og).transpose(0, 3, 1, 2))
        out = outs[0] if groups == 1 else np.concatenate(outs, axis=1)
    if bias is not None:
        out = out + bias[None, :, None, None]
    out = np.ascontiguousarray(out, dtype=input.dtype)
    return out[0] if unbatched else out


@kernel("aten::convolution", "aten::_convolution")
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups, *_):
    """conv1d/conv2d through ``conv2d`` (transposed convolutions are not in this runtime)."""
    if transposed:
        raise NotImplementedError("ember.lite: transposed convolution")
    if weight.ndim == 3:
        return conv2d(input[..., None, :], weight[:, :, None, :], bias, [1] + list(stride),
                      [0] + list(padding), [1] + list(dilation), groups)[..., 0, :]
    return conv2d(input, weight, bias, stride, padding, dilation, groups)


@kernel("aten::linear")
def linear(input, weight, bias=None):
    """(*, in) @ (out, in).T + (out,) -> (*, out)."""
    out = input @ weight.T
    return out + bias if bias is not None else out


@kernel("aten::addmm")
def addmm(self, mat1, mat2, beta=1, alpha=1):
    prod = mat1 @ mat2
    return _arr(beta * self + alpha * prod if (beta != 1 or alpha != 1) else self + prod)


@kernel("aten::matmul", "aten::mm")
def matmul(self, other):
    return _arr(self @ other)


@kernel("aten::batch_norm")
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled=True):
    """(N, C, *) normalized per channel."""
    shape = (1, -1) + (1,) * (input.ndim - 2)
    if training or running_mean is None:
        axes = (0,) + tuple(range(2, input.ndim))
        mean, var = input.mean(axes), input.var(axes)
        if running_mean is not None:
            count = input.size // input.shape[1]
            running_mean *= 1 - momentum
            running_mean += momentum * mean
            running_var *= 1 - momentum
            running_var += momentum * var * count / max(count - 1, 1)
    else:
        mean, var = running_mean, running_var
    scale = 1.0 / np.sqrt(var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -mean * scale
    if bias is not None:
        shift = shift + bias
    return (input * scale.reshape(shape) + shift.reshape(shape)).astype(input.dtype, copy=False)


@kernel("aten::native_batch_norm", outputs="*")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """(output, saved mean, saved inverse std); the saved ones are empty in eval mode."""
    out = batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    empty = np.empty((0,), input.dtype)
    return out, empty, empty


# ------------------------------------------------------------------ activations

@kernel("aten::relu")
def relu(self):
    return np.maximum(self, 0).astype(self.dtype, copy=False)


@kernel("aten::relu_")
def relu_(self):
    np.maximum(self, 0, out=self)
    return self


@kernel("aten::hardtanh")
def hardtanh(self, min_val=-1.0, max_val=1.0):
    return np.clip(self, min_val, max_val).astype(self.dtype, copy=False)


@kernel("aten::hardtanh_")
def hardtanh_(self, min_val=-1.0, max_val=1.0):
    np.clip(self, min_val, max_val, out=self)
    return self


@kernel("aten::relu6")
def relu6(self):
    return hardtanh(self, 0.0, 6.0)


@kernel("aten::clamp")
def clamp(self, min=None, max=None):
    return np.clip(self, min, max).astype(self.dtype, copy=False)


@kernel("aten::hardswish", "aten::hardswish_")
def hardswish(self):
    return (self * np.clip(self + 3.0, 0.0, 6.0) / 6.0).astype(self.dtype, copy=False)


@kernel("aten::hardsigmoid", "aten::hardsigmoid_")
def hardsigmoid(self):
    return (np.clip(self + 3.0, 0.0, 6.0) / 6.0).astype(self.dtype, copy=False)


@kernel("aten::sigmoid")
def sigmoid(self):
    return (1.0 / (1.0 + np.exp(-self))).astype(self.dtype, copy=False)


@kernel("aten::tanh")
def tanh(self):
    return np.tanh(self)


@kernel("aten::softmax.int")
def softmax(self, dim, dtype=None):
    e = np.exp(self - self.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@kernel("aten::detach")
def detach(self):
    return self


@kernel("aten::where.self")
def where(condition, self, other):
    return _arr(np.where(condition, self, other))


@kernel("aten::logical_not")
def logical_not(self):
    return np.logical_not(self)


@kernel("aten::bitwise_or.Tensor", "aten::__or__.Tensor")
def bitwise_or(self, other):
    return _arr(np.bitwise_or(self, other))


@kernel("aten::movedim.intlist", "aten::movedim.int")
def movedim(self, source, destination):
    return np.moveaxis(self, source, destination)


@kernel("aten::dropout", "aten::dropout_", "aten::feature_dropout")
def dropout(input, p, train):
    if train and p > 0:
        raise NotImplementedError("ember.lite: dropout in training mode")
    return input


# ------------------------------------------------------------------ pooling

def _pool_out(size, k, s, p, d, ceil):
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _windows(x, k, s, p, d, ceil, fill):
    kh, kw = _pair(k)
    sh, sw = _pair(s) if s else (kh, kw)
    ph, pw = _pair(p)
    dh, dw = _pair(d)
    h, w = x.shape[-2:]
    oh, ow = _pool_out(h, kh, sh, ph, dh, ceil), _pool_out(w, kw, sw, pw, dw, ceil)
    need_h = (oh - 1) * sh + dh * (kh - 1) + 1
    need_w = (ow - 1) * sw + dw * (kw - 1) + 1
    pad = [(0, 0)] * (x.ndim - 2) + [(ph, max(need_h - h - ph, 0)), (pw, max(need_w - w - pw, 0))]
    xp = np.pad(x, pad, constant_values=fill)
    win = np.lib.stride_tricks.sliding_window_view(xp, (dh * (kh - 1) + 1, dw * (kw - 1) + 1), axis=(-2, -1))
    return win[..., :oh * sh:sh, :ow * sw:sw, ::dh, ::dw], (kh, kw, ph, pw)


@kernel("aten::max_pool2d")
def max_pool2d(self, kernel_size, stride=(), padding=(0, 0), dilation=(1, 1), ceil_mode=False):
    win, _ = _windows(self, kernel_size, stride, padding, dilation, ceil_mode, -np.inf)
    return np.ascontiguousarray(win.max(axis=(-2, -1)))


@kernel("aten::max_pool2d_with_indices", outputs="*")
def max_pool2d_with_indices(self, kernel_size, stride=(), padding=(0, 0), dilation=(1, 1),
                            ceil_mode=False):
    """(values, indices into each input plane, flattened H*W), as torch."""
    win, (kh, kw, ph, pw) = _windows(self, kernel_size, stride, padding, dilation, ceil_mode, -np.inf)
    flat = win.reshape(win.shape[:-2] + (-1,))
    arg = flat.argmax(axis=-1)
    sh, sw = _pair(stride) if stride else (kh, kw)
    dh, dw = _pair(dilation)
    oh, ow = arg.shape[-2:]
    rows = np.arange(oh)[:, None] * sh - ph + (arg // kw) * dh
    cols = np.arange(ow)[None, :] * sw - pw + (arg % kw) * dw
    values = np.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    return np.ascontiguousarray(values), (rows * self.shape[-1] + cols).astype(np.int64)


@kernel("aten::copy_")
def copy_(self, src, non_blocking=False):
    self[...] = src
    return self


@kernel("aten::avg_pool2d")
def avg_pool2d(self, kernel_size, stride=(), padding=(0, 0), ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    win, (kh, kw, ph, pw) = _windows(self, kernel_size, stride, padding, (1, 1), ceil_mode, 0.0)
    total = win.sum(axis=(-2, -1))
    if divisor_override:
        return (total / divisor_override).astype(self.dtype)
    sh, sw = _pair(stride) if stride else (kh, kw)
    oh, ow = total.shape[-2:]
    h, w = self.shape[-2:]
    div = np.outer(_counts(h, kh, sh, ph, oh, count_include_pad),
                   _counts(w, kw, sw, pw, ow, count_include_pad))
    return (total / div).astype(self.dtype)


def _counts(size, k, s, p, out, include_pad):
    """Elements each pooling window covers along one axis (padding counted or not)."""
    counts = []
    for i in range(out):
        start = i * s - p
        end = min(start + k, size + p)
        if not include_pad:
            start, end = max(start, 0), min(end, size)
        counts.append(end - start)
    return np.asarray(counts, np.float64)


@kernel("aten::adaptive_avg_pool2d")
def adaptive_avg_pool2d(self, output_size):
    """(*, H, W) -> (*, oh, ow): bin i spans [floor(i*H/oh), ceil((i+1)*H/oh))."""
    h, w = self.shape[-2:]
    oh, ow = [s if s is not None else d for s, d in zip(_pair(output_size), (h, w))]
    if oh == 1 and ow == 1:
        return self.mean(axis=(-2, -1), keepdims=True).astype(self.dtype)
    out = np.empty(self.shape[:-2] + (oh, ow), self.dtype)
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            out[..., i, j] = self[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


# ------------------------------------------------------------------ arithmetic

@kernel("aten::add.Tensor", "aten::add.Scalar")
def add(self, other, alpha=1):
    a, b = _binary(self, other)
    return _arr(a + b * alpha if alpha != 1 else a + b)


@kernel("aten::add_.Tensor", "aten::add_.Scalar")
def add_(self, other, alpha=1):
    self += np.asarray(other * alpha if alpha != 1 else other).astype(self.dtype)
    return self


@kernel("aten::sub.Tensor", "aten::sub.Scalar", "aten::rsub.Scalar")
def sub(self, other, alpha=1):
    a, b = _binary(self, other)
    return _arr(a - b * alpha if alpha != 1 else a - b)


@kernel("aten::mul.Tensor", "aten::mul.Scalar")
def mul(self, other):
    a, b = _binary(self, other)
    return _arr(a * b)


@kernel("aten::div.Tensor", "aten::div.Scalar")
def div(self, other):
    a, b = _binary(self, other)
    out = a / b
    return _arr(out.astype(np.float32) if out.dtype == np.float64 and a.dtype != np.float64
                and b.dtype != np.float64 else out)


@kernel("aten::gt.Tensor", "aten::gt.Scalar")
def gt(self, other):
    return _arr(np.greater(*_binary(self, other)))


@kernel("aten::lt.Tensor", "aten::lt.Scalar")
def lt(self, other):
    return _arr(np.less(*_binary(self, other)))


@kernel("aten::ge.Tensor", "aten::ge.Scalar")
def ge(self, other):
    return _arr(np.greater_equal(*_binary(self, other)))


@kernel("aten::le.Tensor", "aten::le.Scalar")
def le(self, other):
    return _arr(np.less_equal(*_binary(self, other)))


@kernel("aten::eq.Tensor", "aten::eq.Scalar")
def eq(self, other):
    return _arr(np.equal(*_binary(self, other)))


@kernel("aten::ne.Tensor", "aten::ne.Scalar")
def ne(self, other):
    return _arr(np.not_equal(*_binary(self, other)))


@kernel("aten::neg")
def neg(self):
    return -self


@kernel("aten::Bool.Tensor")
def bool_tensor(a):
    return bool(a)


@kernel("aten::Int.Tensor")
def int_tensor(a):
    return int(a)


@kernel("aten::Float.Tensor")
def float_tensor(a):
    return float(a)


# ------------------------------------------------------------------ reductions, shapes

@kernel("aten::mean")
def mean_all(self, dtype=None):
    return _arr(self.mean(dtype=self.dtype))


@kernel("aten::mean.dim")
def mean(self, dim, keepdim=False, dtype=None):
    return _arr(self.mean(axis=tuple(dim) if dim is not None else None, keepdims=keepdim,
                          dtype=self.dtype))


@kernel("aten::sum")
def sum_all(self, dtype=None):
    return _arr(self.sum(dtype=self.dtype if self.dtype.kind == "f" else np.int64))


@kernel("aten::sum.dim_IntList")
def sum_dim(self, dim, keepdim=False, dtype=None):
    return _arr(self.sum(axis=tuple(dim) if dim is not None else None, keepdims=keepdim))


@kernel("aten::flatten.using_ints")
def flatten(self, start_dim=0, end_dim=-1):
    if self.ndim == 0:
        return self.reshape(1)
    nd = self.ndim
    s, e = start_dim % nd, end_dim % nd
    return self.reshape(self.shape[:s] + (-1,) + self.shape[e + 1:])


@kernel("aten::view", "aten::reshape")
def view(self, size):
    return self.reshape(tuple(size))


@kernel("aten::cat")
def cat(tensors, dim=0):
    return np.concatenate(tensors, axis=dim)


@kernel("aten::t")
def t(self):
    return self.T


@kernel("aten::transpose.int")
def transpose(self, dim0, dim1):
    return np.swapaxes(self, dim0, dim1)


@kernel("aten::permute")
def permute(self, dims):
    return np.transpose(self, dims)


@kernel("aten::contiguous")
def contiguous(self, memory_format=0):
    return np.ascontiguousarray(self)


@kernel("aten::size.int")
def size_int(self, dim):
    return self.shape[dim]


@kernel("aten::size")
def size(self):
    return list(self.shape)


@kernel("aten::dim")
def dim(self):
    return self.ndim


# ------------------------------------------------------------------ lists, strings

@kernel("aten::__contains__.int_list", "aten::__contains__.str_list")
def contains(l, item):
    return item in l


@kernel("aten::join")
def join(self, values):
    return self.join(values)


@kernel("aten::len.t")
def len_t(a):
    return len(a)


@kernel("aten::__getitem__.t")
def getitem(l, idx):
    return l[idx]


@kernel("prim::requires_grad", "prim::is_cuda", "prim::is_quantized", "prim::is_sparse",
        "prim::is_mkldnn")
def tensor_flag(a):
    """Tensor attributes that are always False in this runtime (no autograd, CPU only)."""
    return False


@kernel("aten::list.t")
def list_copy(l):
    return list(l)


@kernel("aten::append.t", outputs=1)
def append(l, el):
    l.append(el)
    return l


@kernel("aten::format")
def format_(*args):
    from ._interp import format_string
    return format_string(args[0], args[1:])


@kernel("prim::NumToTensor.Scalar")
def num_to_tensor(a):
    return np.asarray(a)


@kernel("aten::ScalarImplicit")
def scalar_implicit(a):
    return a.item()


@kernel("prim::TupleUnpack", "prim::ListUnpack", outputs="*")
def unpack(t):
    return t


# numbers (ints and floats as Python values)
@kernel("aten::add.int", "aten::add.float", "aten::add.int_float", "aten::add.float_int")
def add_number(a, b):
    return a + b


@kernel("aten::sub.int", "aten::sub.float", "aten::sub.int_float", "aten::sub.float_int")
def sub_number(a, b):
    return a - b


@kernel("aten::mul.int", "aten::mul.float", "aten::mul.int_float", "aten::mul.float_int")
def mul_number(a, b):
    return a * b


@kernel("aten::div.int", "aten::div.float")
def div_number(a, b):
    return a / b


@kernel("aten::lt.int", "aten::lt.float", "aten::lt.int_float", "aten::lt.float_int")
def lt_number(a, b):
    return a < b


@kernel("aten::gt.int", "aten::gt.float", "aten::gt.int_float", "aten::gt.float_int")
def gt_number(a, b):
    return a > b


@kernel("aten::le.int", "aten::le.float", "aten::le.int_float", "aten::le.float_int")
def le_number(a, b):
    return a <= b


@kernel("aten::ge.int", "aten::ge.float", "aten::ge.int_float", "aten::ge.float_int")
def ge_number(a, b):
    return a >= b


@kernel("aten::eq.int", "aten::eq.float", "aten::eq.str", "aten::eq.bool", "aten::eq.int_float",
        "aten::eq.float_int")
def eq_number(a, b):
    return a == b


@kernel("aten::ne.int", "aten::ne.float", "aten::ne.str", "aten::ne.bool", "aten::ne.int_float",
        "aten::ne.float_int")
def ne_number(a, b):
    return a != b


@kernel("aten::__and__.bool")
def and_bool(a, b):
    return a and b


@kernel("aten::__or__.bool")
def or_bool(a, b):
    return a or b


@kernel("aten::floordiv.int")
def floordiv_int(a, b):
    return a // b


@kernel("aten::sqrt.float", "aten::sqrt.int")
def sqrt_scalar(a):
    return math.sqrt(a)


# ------------------------------------------------------------------ more pointwise and shape ops

def _float(x):
    """Integer and bool tensors compute in float32, as torch's floating unary ops."""
    x = _arr(x)
    return x.astype(np.float32) if x.dtype.kind in "biu" else x


@kernel("aten::exp")
def exp(self):
    return np.exp(_float(self))


@kernel("aten::log")
def log(self):
    return np.log(_float(self))


@kernel("aten::sqrt")
def sqrt(self):
    return np.sqrt(_float(self))


@kernel("aten::abs")
def abs_(self):
    return np.abs(self)


@kernel("aten::pow.Tensor_Scalar")
def pow_tensor_scalar(self, exponent):
    a, e = _binary(self, exponent)
    return _arr(np.power(a, e)).astype(a.dtype, copy=False)


@kernel("aten::gelu")
def gelu(self, approximate="none"):
    x = self.astype(np.float64)
    if approximate == "tanh":
        r = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    else:
        r = 0.5 * x * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0)))
    return r.astype(self.dtype)


@kernel("aten::log_softmax.int")
def log_softmax(self, dim, dtype=None):
    s = self - self.max(axis=dim, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=dim, keepdims=True))


@kernel("aten::cumsum")
def cumsum(self, dim, dtype=None):
    r = np.cumsum(self, axis=dim)
    return r.astype(np.int64 if self.dtype.kind in "biu" else self.dtype, copy=False)


@kernel("aten::masked_fill.Scalar", "aten::masked_fill.Tensor")
def masked_fill(self, mask, value):
    return np.where(mask, np.asarray(value, self.dtype), self)


@kernel("aten::unsqueeze")
def unsqueeze(self, dim):
    return np.expand_dims(self, dim if dim >= 0 else dim + self.ndim + 1)


@kernel("aten::squeeze")
def squeeze(self):
    return np.squeeze(self)


@kernel("aten::squeeze.dim")
def squeeze_dim(self, dim):
    return np.squeeze(self, axis=dim) if self.ndim and self.shape[dim] == 1 else self


@kernel("aten::flip")
def flip(self, dims):
    return np.flip(self, axis=tuple(dims)).copy()


@kernel("aten::roll")
def roll(self, shifts, dims=()):
    if not dims:            # torch: over the flattened tensor
        return np.roll(self.reshape(-1), shifts[0]).reshape(self.shape)
    return np.roll(self, tuple(shifts), axis=tuple(dims))


@kernel("aten::expand")
def expand(self, size, implicit=False):
    lead = len(size) - self.ndim
    shape = [self.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    return np.broadcast_to(self, shape)


@kernel("aten::repeat")
def repeat(self, repeats):
    x = self.reshape((1,) * (len(repeats) - self.ndim) + self.shape)
    return np.tile(x, repeats)


@kernel("aten::tile")
def tile(self, dims):
    return np.tile(self, dims)


def _index(ndim, dim, s):
    idx = [slice(None)] * ndim
    idx[dim] = s
    return tuple(idx)


@kernel("aten::narrow")
def narrow(self, dim, start, length):
    start = start + self.shape[dim] if start < 0 else start
    return self[_index(self.ndim, dim, slice(start, start + length))]


@kernel("aten::slice.Tensor")
def slice_tensor(self, dim=0, start=None, end=None, step=1):
    return self[_index(self.ndim, dim, slice(start, end, step))]


@kernel("aten::index_select")
def index_select(self, dim, index):
    return np.take(self, np.asarray(index).reshape(-1), axis=dim)


@kernel("aten::stack")
def stack(tensors, dim=0):
    return np.stack(tensors, axis=dim)


@kernel("aten::chunk")
def chunk(self, chunks, dim=0):
    n = self.shape[dim]
    size = -(-n // chunks)
    return [self[_index(self.ndim, dim, slice(i, i + size))] for i in range(0, n, size)]


@kernel("aten::split.Tensor")
def split(self, split_size, dim=0):
    n = self.shape[dim]
    return [self[_index(self.ndim, dim, slice(i, i + split_size))]
            for i in range(0, max(n, 1), split_size)]


@kernel("aten::argmax")
def argmax(self, dim=None, keepdim=False):
    if dim is None:
        return np.asarray(self.argmax(), np.int64)
    r = self.argmax(axis=dim).astype(np.int64)
    return np.expand_dims(r, dim) if keepdim else r


@kernel("aten::max.dim", outputs="*")
def max_dim(self, dim, keepdim=False):
    idx = np.expand_dims(self.argmax(axis=dim), dim)
    vals = np.take_along_axis(self, idx, axis=dim)
    if not keepdim:
        vals, idx = np.squeeze(vals, axis=dim), np.squeeze(idx, axis=dim)
    return vals, idx.astype(np.int64)


@kernel("aten::sort", outputs="*")
def sort(self, dim=-1, descending=False):
    idx = np.argsort(-self if descending else self, axis=dim, kind="stable")
    return np.take_along_axis(self, idx, axis=dim), idx.astype(np.int64)


@kernel("aten::topk", outputs="*")
def topk(self, k, dim=-1, largest=True, sorted=True):
    idx = np.argsort(-self if largest else self, axis=dim, kind="stable")
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(self, idx, axis=dim), idx.astype(np.int64)


@kernel("aten::einsum")
def einsum(equation, tensors, path=None):
    return _arr(np.einsum(equation, *tensors))


@kernel("aten::var")
def var(self, unbiased=True):
    return _arr(self.var(ddof=int(unbiased))).astype(self.dtype)


@kernel("aten::std.dim")
def std_dim(self, dim, unbiased=True, keepdim=False):
    axis = None if dim is None else tuple(dim)
    return _arr(self.std(axis=axis, ddof=int(unbiased), keepdims=keepdim)).astype(self.dtype)


@kernel("aten::norm.Scalar")
def norm_scalar(self, p=2):
    a = np.abs(self.astype(np.float64)).reshape(-1)
    r = a.max(initial=0.0) if p == math.inf else (a ** p).sum() ** (1.0 / p)
    return np.asarray(r, self.dtype)


# torch's ScalarType codes (the dtype arguments of bytecode calls) -> NumPy dtypes
_SCALAR_TYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 5: np.float16,
                 6: np.float32, 7: np.float64, 11: np.bool_}


def _np_dtype(code, default):
    if code is None:
        return default
    if code not in _SCALAR_TYPES:
        raise RuntimeError(f"ember.lite: dtype code {code} is not supported")
    return np.dtype(_SCALAR_TYPES[code])


@kernel("aten::to.dtype")
def to_dtype(self, dtype, non_blocking=False, copy=False, memory_format=None):
    return self.astype(_np_dtype(dtype, self.dtype), copy=bool(copy))


@kernel("aten::new_zeros")
def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return np.zeros(tuple(size), _np_dtype(dtype, self.dtype))


@kernel("aten::tensor", "aten::tensor.float", "aten::tensor.int", "aten::tensor.bool")
def tensor(data, dtype=None, device=None, requires_grad=False):
    a = np.asarray(data)
    default = {"f": np.float32, "i": np.int64, "u": np.int64, "b": np.bool_}.get(a.dtype.kind,
                                                                              a.dtype)
    return a.astype(_np_dtype(dtype, np.dtype(default)))


@kernel("aten::pad")
def pad(self, pad, mode="constant", value=None):
    widths = [(0, 0)] * self.ndim
    for i in range(len(pad) // 2):
        widths[self.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        return np.pad(self, widths, constant_values=0 if value is None else value)
    modes = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
    if mode not in modes:
        raise RuntimeError(f"ember.lite: pad mode {mode!r} is not supported")
    return np.pad(self, widths, mode=modes[mode])


@kernel("aten::select.int")
def select(self, dim, index):
    return self[_index(self.ndim, dim, index)]


@kernel("aten::add.t")
def add_list(a, b):
    return list(a) + list(b)


@kernel("prim::TupleIndex")
def tuple_index(tup, i):
    return tup[i]
