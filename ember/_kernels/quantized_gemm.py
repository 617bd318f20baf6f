"""Integer GEMM and convolution for quantized linear/conv ops, on NumPy; with numba
installed the requantization and depthwise convolutions run as compiled kernels giving the
same integers (ember/_kernels/compiled/: ``_compiled_rows``, ``depthwise_requantized``).

Accumulation is exact. Convolutions and linear layers multiply 8-bit integers on
onnxruntime's int32 GEMM (integer_gemm.py) when it is installed and the product is large
enough to repay its call (quantized_conv.INT_GEMM_MIN_K, quantized_linear.INT_GEMM_MIN_WORK),
else the zero-point-shifted integers in float32 by BLAS, in chunks of K small enough for
every partial sum to stay exact (Note [exact float32 GEMM]); convolutions run channels-last
((N, *S, C) in, (N, *out, O) accumulator out), depthwise ones tap by tap. Transposed
convolutions use float64 (exact below 2**53) through ember's float kernels.

What torch's x86/fbgemm engine does with the int32 accumulator ``acc`` (found by running it
on random inputs, tests/quantization/test_qops_linear_conv.py):

- static (quint8 out): ``act_w = float32(x_scale) * float32(w_scale)`` (float32 product,
  per output channel for per-channel weights), ``mult = float32(act_w / out_scale)``;
  ``v = float32(float32(acc) + float32(bias / act_w))``; ``q = rint(v * mult) + out_zp``
  (half to even, float32 product), clamped to [0, 255] (to [out_zp, 255] with ReLU).
  Bit-exact for linear and for the convolutions torch packs for fbgemm.
- static convolutions that torch's x86 engine hands to oneDNN (symmetric weights, at most
  100 groups, no output padding; ``requantize_acc_onednn``): ``v = float32(float32(acc) *
  float32(x_scale))``, ``v = float32(v * float32(w_scale)) + bias`` (float32), ReLU,
  ``v = float32(v * float32(1 / out_scale)) + float32(out_zp)`` (``1 / out_scale`` in
  double; the zero point added in float32, before rounding: ties can go the other way than
  fbgemm's), ``q = rint(v)`` clamped to [0, 255]. Not exact in every tie: over random
  convolutions and linear layers about 1 output in a million near a tie still rounds the
  other way (a single ``act_w = float32(x_scale * w_scale)`` factor misses about twice as
  many, e.g. 5 outputs of MobileNetV2's block-2 1x1 ConvReLU2d 16->96, which this rule
  gets right).
- dynamic (float out): the input is quantized with ``choose_qparams`` (quint8, range halved
  with ``reduce_range``), ``y = fma(float32(acc), act_w, bias)``: one rounding.
- float16 dynamic: weights rounded to float16; ``y`` accumulates over K in order with one
  fused multiply-add per step in float32, then ``+ bias`` in float32.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember._kernels import compiled, integer_gemm, nn_conv

_F32 = np.float32
_F64 = np.float64
_clip = np._core.umath.clip if hasattr(np, "_core") else np.clip     # the ufunc itself


def shifted(ints, zero_point):
    """``ints - zero_point`` as float64 (exact), ``zero_point`` scalar or broadcastable."""
    return np.asarray(ints, _F64) - np.asarray(zero_point, _F64)


def int_conv_transpose(x, w, stride, padding, output_padding, dilation, groups):
    """Exact integer transposed convolution of shifted integers -> int64 (N, O, *out)."""
    out = nn_conv.conv_transpose_forward(x, w, stride, padding, dilation, groups,
                                         output_padding)
    return np.rint(out).astype(np.int64)


def fbgemm_depthwise(C_in, groups, w_shape, stride, padding, dilation):
    """Whether fbgemm runs this convolution with its depthwise kernel (found by probing):
    one input channel a group, groups a multiple of 8, one or two outputs each, stride 1 or
    2, no dilation, and a 3x3 or 5x5 kernel (3x3x3 or 5x5x5) padded by half its size."""
    k = tuple(w_shape[2:])
    square = k in ((3, 3), (5, 5), (3, 3, 3), (5, 5, 5))
    return square and groups == C_in and groups % 8 == 0 and w_shape[1] == 1 and \
        w_shape[0] in (groups, 2 * groups) and all(s in (1, 2) for s in stride) and \
        all(d == 1 for d in dilation) and all(p == (v - 1) // 2 for p, v in zip(padding, k))


# ------------------------------------------------------------ channels-last fast paths
# Note [exact float32 GEMM]: the shifted integers (|x - x_zp| <= 255, |w - w_zp| <= 255)
# and their products are exact in float32, and so is every partial sum of a dot product
# whatever order BLAS adds in, while K * max|x| * max|w| < 2**24. sgemm is used on chunks
# of K that keep within that bound (one chunk for most layers: the bound is computed from
# the actual maxima), the chunks' results added in float64 (exact).

_EXACT_F32 = (1 << 24) - 1


def exact_chunk(x_max, w_max):
    """The largest K whose dot products of integers bounded by ``x_max``/``w_max`` stay
    exact in float32."""
    return max(1, _EXACT_F32 // max(1, int(x_max) * int(w_max)))


def int_matmul(a, b, x_max, w_max):
    """(M, K) x (K, O) float32 arrays of integers -> their exact product: float32 when one
    exact chunk covers K, else float64."""
    K = a.shape[1]
    step = exact_chunk(x_max, w_max)
    if K <= step:
        return a @ b
    acc = np.zeros((a.shape[0], b.shape[1]), _F64)
    for s in range(0, K, step):
        acc += a[:, s:s + step] @ b[s:s + step]
    return acc


def shifted_max(lo, hi, zero_point):
    """max |v - zero_point| over integers v in [lo, hi]."""
    return max(abs(int(hi) - int(zero_point)), abs(int(lo) - int(zero_point)))


def conv_weight_matrix(wi, w_zp, groups):
    """A conv weight's shifted integers (O, C/g, *k) as float32 (groups, prod(k)*C/g, O/g),
    rows ordered (*k, c) as channels-last im2col columns; and max |w - w_zp|."""
    O, Cg = wi.shape[:2]
    n = wi.ndim - 2
    wz = np.reshape(w_zp, (-1,) + (1,) * (n + 1)) if np.ndim(w_zp) else w_zp
    ws = np.asarray(wi, _F32) - np.asarray(wz, _F32)
    Og = O // groups
    ws = ws.reshape((groups, Og, Cg) + ws.shape[2:])
    order = (0,) + tuple(range(3, 3 + n)) + (2, 1)
    mat = np.ascontiguousarray(ws.transpose(order)).reshape(groups, -1, Og)
    return mat, int(np.max(np.abs(ws))) if ws.size else 0


def conv_weight_ints(wi, groups):
    """A conv weight's raw int8 integers (O, C/g, *k) as (groups, prod(k)*C/g, O/g), rows
    ordered as :func:`conv_weight_matrix`'s (for the integer GEMM: integer_gemm.py)."""
    O, Cg = wi.shape[:2]
    n = wi.ndim - 2
    w = np.asarray(wi).reshape((groups, O // groups, Cg) + tuple(wi.shape[2:]))
    order = (0,) + tuple(range(3, 3 + n)) + (2, 1)
    return np.ascontiguousarray(w.transpose(order)).reshape(groups, -1, O // groups)


def _padded_last(xl, padding, fill, dtype=None):
    """(N, *S, C) integers padded on the spatial axes with ``fill`` (as ``dtype``)."""
    dtype = xl.dtype if dtype is None else np.dtype(dtype)
    if not any(padding):
        return xl if xl.dtype == dtype else xl.astype(dtype)
    shape = list(xl.shape)
    inner = [slice(None)]
    for i, p in enumerate(padding):
        shape[1 + i] += 2 * p
        inner.append(slice(p, p + xl.shape[1 + i]))
    xp = np.empty(shape, dtype)
    xp.fill(fill)
    xp[tuple(inner)] = xl
    return xp


def _out_size(sizes, k, stride, dilation):
    return [(sizes[i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(len(k))]


def _columns_one_channel(xp, out, k, stride, dilation, dtype=None):
    """im2col of a padded one-channel input (N, *S, 1) -> (N*prod(out), prod(k)) columns,
    one strided copy a tap: NumPy copies the window view (whose innermost run is the k[-1]
    taps) element by element, several times slower (2.2x on 64x1x8x8, 4.6x on 64x1x28x28)."""
    N = xp.shape[0]
    cols = np.empty((N,) + tuple(out) + (math.prod(k),), dtype or xp.dtype)
    for t, pos in enumerate(np.ndindex(*k)):
        cols[..., t] = xp[(slice(None),) + tuple(
            slice(p * d, p * d + s * (o - 1) + 1, s)
            for p, d, s, o in zip(pos, dilation, stride, out)) + (0,)]
    return cols.reshape(-1, cols.shape[-1])


def _windows(xg, out, k, stride, dilation):
    """The im2col windows of channels-last ``xg`` (N, *S, C) as a strided view
    (N, *out, *k, C): NumPy's ``as_strided`` when ``xg`` is a slice, else the faster
    ``ndarray`` constructor over its buffer."""
    n = len(k)
    st = xg.strides
    shape = (xg.shape[0],) + tuple(out) + tuple(k) + (xg.shape[-1],)
    strides = (st[0],) + tuple(st[1 + i] * stride[i] for i in range(n)) + \
        tuple(st[1 + i] * dilation[i] for i in range(n)) + (st[-1],)
    if xg.flags.c_contiguous:
        view = np.ndarray(shape, xg.dtype, xg, 0, strides)
        view.flags.writeable = False
        return view
    return as_strided(xg, shape, strides, writeable=False)


def conv_last(xl, x_zp, mat, w_max, k, stride, padding, dilation, groups, ints=None):
    """Exact integer convolution of channels-last uint8 ``xl`` (N, *S, C) with the weight
    matrix of :func:`conv_weight_matrix`: im2col of the integers into float32 columns
    shifted by ``x_zp`` (one pass), one exact sgemm a group. -> (N, *out, O) accumulator
    (float32, or float64 past one exact chunk)."""
    xp = _padded_last(xl, padding, x_zp)
    N, C = xp.shape[0], xp.shape[-1]
    out = _out_size(xp.shape[1:-1], k, stride, dilation)
    Cg = C // groups
    K, Og = mat.shape[1], mat.shape[2]
    M = N * math.prod(out)
    pointwise = all(v == 1 for v in k)
    if ints is None:
        x_max = max(int(x_zp), 255 - int(x_zp))      # bound of |x - x_zp| for any uint8 x
        if K > exact_chunk(x_max, w_max) and xl.size:
            x_max = shifted_max(xl.min(), xl.max(), x_zp)      # the actual one is smaller
    acc = None
    for g in range(groups):
        xg = xp[..., g * Cg:(g + 1) * Cg] if groups > 1 else xp
        if pointwise:       # 1x1 kernel: the (strided) input itself
            win = xg[(slice(None),) + tuple(slice(0, s * (o - 1) + 1, s)
                                            for s, o in zip(stride, out))]
        elif Cg > 1:
            win = _windows(xg, out, k, stride, dilation)
        if ints is not None:        # (int8 matrices, zero points per output): int32 GEMM
            wz = ints[1][g * Og:(g + 1) * Og] if np.ndim(ints[1]) else ints[1]
            cols = _columns_one_channel(xg, out, k, stride, dilation) \
                if Cg == 1 and not pointwise else win.reshape(M, K)
            part = integer_gemm.matmul(cols, x_zp, ints[0][g], wz)
        else:
            if Cg == 1 and not pointwise:       # tap by tap, then shifted in one pass
                cols = _columns_one_channel(xg, out, k, stride, dilation, _F32)
                cols -= _F32(x_zp)
            else:
                cols = np.empty(win.shape, _F32)
                np.subtract(win, _F32(x_zp), out=cols, casting="unsafe")
                cols = cols.reshape(M, K)
            part = int_matmul(cols, mat[g], x_max, w_max)
        if groups == 1:
            acc = part
            break
        if acc is None:
            acc = np.empty((M, Og * groups), part.dtype)
        acc[:, g * Og:(g + 1) * Og] = part
    return acc.reshape((N,) + tuple(out) + (Og * groups,))


def depthwise_last(xl, x_zp, wi, w_zp, stride, padding, dilation, saturate):
    """Depthwise convolution (one input channel a group, O = m*C) of channels-last uint8
    ``xl`` (N, *S, C) -> int accumulator (N, *out, O) (float32 holding integers).

    Integers times raw weights, tap by tap (row-major), then the zero points' terms
    subtracted. ``saturate``: fbgemm's depthwise kernel, whose taps are summed in
    consecutive pairs saturated to int16 (vpmaddubsw) of raw products, inputs padded with
    ``x_zp``; the pairs only get clipped where two products can leave the int16 range.
    Without clipping the sums are exact whatever the order, so the inputs are shifted by
    ``x_zp`` as they are padded (padding 0), which saves the zero point's correction pass.
    Every step is exact in float32 (|x*w| <= 32640, sums of <= 125 of them)."""
    n = wi.ndim - 2
    O, k = wi.shape[0], tuple(wi.shape[2:])
    C = xl.shape[-1]
    mult = O // C
    w = np.asarray(wi, _F32).reshape(O, -1).T              # (taps, O)
    x_hi = float(xl.max()) if xl.size else 0.0
    if any(padding):        # the padding holds x_zp: it can make the largest products
        x_hi = max(x_hi, float(x_zp))
    clip = saturate and w.shape[0] > 1 and \
        2 * x_hi * float(np.max(np.abs(w), initial=0)) > 32767
    shift = _F32(0 if clip else x_zp)       # subtracted from the inputs while padding
    xp = _padded_last(xl, padding, x_zp, _F32) if not shift else \
        _padded_shifted(xl, padding, shift)
    if mult > 1:
        xp = np.repeat(xp, mult, axis=-1)
    out = _out_size(xp.shape[1:-1], k, stride, dilation)
    N, Wo, s = xp.shape[0], out[-1], stride[-1]
    # the last spatial axis split by phase (stride), so that each tap reads rows of Wo*O
    # contiguous values, times the tap's weights tiled Wo times
    phases = [xp] if s == 1 else [np.ascontiguousarray(xp[..., r::s, :]) for r in range(s)]
    views = []
    for pos in np.ndindex(*k):
        d = pos[-1] * dilation[-1]
        sl = tuple(slice(pos[i] * dilation[i], pos[i] * dilation[i] +
                         stride[i] * (out[i] - 1) + 1, stride[i]) for i in range(n - 1))
        v = phases[d % s][(slice(None),) + sl + (slice(d // s, d // s + Wo),)]
        views.append(v.reshape(v.shape[:-2] + (Wo * O,)))
    wt = np.tile(w, (1, Wo))                                 # (taps, Wo*O)
    acc = np.multiply(views[0], wt[0])
    tmp = np.empty_like(acc)
    if clip:        # the first pair in acc, each further pair in tmp
        np.multiply(views[1], wt[1], out=tmp)
        acc += tmp
        _clip(acc, _F32(-32768), _F32(32767), out=acc)
        pair = np.empty_like(acc)
        for t in range(2, len(views), 2):
            np.multiply(views[t], wt[t], out=pair)
            if t + 1 < len(views):
                np.multiply(views[t + 1], wt[t + 1], out=tmp)
                pair += tmp
                _clip(pair, _F32(-32768), _F32(32767), out=pair)
            acc += pair         # (a lone last product always fits int16)
    else:
        for t in range(1, len(views)):
            np.multiply(views[t], wt[t], out=tmp)
            acc += tmp
    acc = acc.reshape((N,) + tuple(out) + (O,))
    K = len(views)
    wz = np.asarray(w_zp, _F32)
    if np.any(wz):
        xsum = np.zeros_like(views[0])
        for v in views:
            xsum += v
        acc -= wz * xsum.reshape(acc.shape)
    zp = x_zp - int(shift)          # the inputs' zero point still in the sums
    if zp or np.any(wz):
        acc -= _F32(zp) * w.sum(0) - _F32(K * zp) * wz
    return acc


def depthwise_requantized(xl, x_zp, wi, w_zp, stride, padding, dilation, saturate, onednn,
                          x_scale, w_scale, bias, out_scale, out_zp, relu):
    """:func:`depthwise_last` and the requantization (``onednn``: oneDNN's rule, else the
    static one) in one compiled pass: channels-last uint8 ``xl`` (N, H, W, C) -> uint8
    (N, Ho, Wo, O). None where the compiled kernels are off or do not cover the case
    (only 2-d convolutions of uint8 inputs)."""
    kernels = compiled.kernels()
    if kernels is None or xl.ndim != 4 or wi.ndim != 4 or xl.dtype != np.uint8 or \
            not xl.size:
        return None
    O, C = wi.shape[0], xl.shape[-1]
    k = wi.shape[2:]
    out = _out_size([s + 2 * p for s, p in zip(xl.shape[1:3], padding)], k, stride,
                    dilation)
    if min(out) <= 0:
        return None
    x = np.ascontiguousarray(np.repeat(xl, O // C, axis=-1) if O > C else xl)
    w, wz = _depthwise_weights(wi, w_zp)
    res = np.empty((xl.shape[0],) + tuple(out) + (O,), np.uint8)
    geometry = (stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1])
    rule = _rule_args(onednn, x_scale, w_scale, bias, out_scale, out_zp, relu, O) + (res,)
    if tuple(k) == (3, 3):
        kernels.depthwise3x3(x, np.int32(x_zp), w, wz, *geometry, bool(saturate), *rule)
    else:
        kernels.depthwise2d(x, np.int32(x_zp), w, wz, k[0], k[1], *geometry, bool(saturate),
                            *rule)
    return res


_prepared: dict = {}    # compiled kernels' per-layer arguments, by content (<= 512 kept)


def _remember(key, make):
    found = _prepared.get(key)
    if found is None:
        if len(_prepared) >= 512:
            _prepared.clear()
        found = _prepared[key] = make()
    return found


def _depthwise_weights(wi, w_zp):
    """A depthwise weight's integers (O, 1, *k) as int32 (taps, O) and its zero points as
    int32 (O,), remembered by content."""
    wi = np.asarray(wi)
    zp = np.asarray(w_zp)
    O = wi.shape[0]

    def make():
        w = np.ascontiguousarray(wi.astype(np.int32).reshape(O, -1).T)
        wz = np.full(O, zp.reshape(-1)[0], np.int32) if zp.size == 1 else \
            zp.astype(np.int32).reshape(O)
        return w, wz
    return _remember(("dw", wi.shape, wi.tobytes(), zp.dtype.str, zp.tobytes()), make)


def _rule_args(onednn, x_scale, w_scale, bias, out_scale, out_zp, relu, O):
    """The compiled requantization's arguments (compiled/quantized._requant: rule, x_scale,
    multipliers (O,), addends (O,), 1/out_scale, zero point, clamp bounds), remembered for
    the scale and bias objects they come from (a layer passes the same ones on every call;
    the entry holds them, so their ids stay theirs)."""
    key = ("rule", bool(onednn), x_scale, out_scale, out_zp, bool(relu), O, id(w_scale),
           id(bias))
    found = _prepared.get(key)
    if found is not None and found[0] is w_scale and found[1] is bias:
        return found[2]
    w = np.asarray(w_scale)
    b = None if bias is None else np.asarray(bias, _F32)
    if onednn:
        xs, mul, add, inv = _F32(x_scale), w, b, _F32(1.0 / float(out_scale))
    else:
        add, mul = _static_factors(x_scale, w, b, out_scale)
        xs, inv = _F32(1), _F32(1)
    args = (bool(onednn), xs, _per_channel_f32(mul, O), _per_channel_f32(add, O), inv,
            _F32(out_zp), _F32(out_zp if relu else 0), _F32(255))
    if len(_prepared) >= 512:
        _prepared.clear()
    _prepared[key] = (w_scale, bias, args)
    return args


def _padded_shifted(xl, padding, shift):
    """float32 ``xl - shift`` (N, *S, C), padded with 0 on the spatial axes."""
    if not any(padding):
        return np.subtract(xl, shift, dtype=_F32)
    shape = list(xl.shape)
    inner = [slice(None)]
    for i, p in enumerate(padding):
        shape[1 + i] += 2 * p
        inner.append(slice(p, p + xl.shape[1 + i]))
    xp = np.zeros(shape, _F32)
    np.subtract(xl, shift, out=xp[tuple(inner)], casting="unsafe")
    return xp


def onednn_transposed_weight(w, groups):
    """The weight torch's x86 engine's oneDNN transposed convolution actually applies
    (found by probing with one-hot inputs): per group, the (C_in/g, C_out/g) grid of kernels
    is read twice as if laid out (C_out/g, C_in/g) and transposed each time. Equal channel
    counts give the weight back; otherwise channels are mixed up, so torch's x86 results
    differ from the mathematical transposed convolution (the fbgemm engine's are right)."""
    cin, cout_g = w.shape[:2]
    cin_g = cin // groups
    k = w.shape[2:]
    out = np.empty_like(w)
    for g in range(groups):
        m = w[g * cin_g:(g + 1) * cin_g].reshape(cin_g * cout_g, -1)
        for _ in range(2):
            m = m.reshape(cout_g, cin_g, -1).transpose(1, 0, 2).reshape(cin_g * cout_g, -1)
        out[g * cin_g:(g + 1) * cin_g] = m.reshape((cin_g, cout_g) + k)
    return out


def act_times_w(x_scale, w_scale):
    """float32(x_scale) * float32(w_scale) (per channel: an array)."""
    return (_F32(x_scale) * np.asarray(w_scale, _F32)).astype(_F32)


# Note [per-channel passes]: NumPy runs ``v *= scales`` with (O,) scales over a contiguous
# (M, O) array row by row, O values a call of its inner loop: about twice the time of a
# pass over two contiguous arrays. Viewing v as (M / R, R * O) rows against the scales
# tiled R times (R * O >= _TILE values) runs the same products in long inner loops.
_TILE = 8192


_tiles: dict = {}        # (values' bytes, rows) -> values tiled rows times (read-only)


def _tiled(values, rows):
    """``np.tile(values, rows)``, remembered by content (a model's layers reuse theirs on
    every call; at most 128 kept)."""
    key = (values.tobytes(), rows)
    tiled = _tiles.get(key)
    if tiled is None:
        if len(_tiles) >= 128:
            _tiles.clear()
        tiled = _tiles[key] = np.tile(values, rows)
        tiled.flags.writeable = False
    return tiled


def _per_channel(ufunc, v, values, channel_axis):
    """``ufunc(v, values, out=v)`` with ``values`` one per channel along ``channel_axis``
    of the float32 array ``v`` (Note [per-channel passes]); the same float32 results."""
    values = np.asarray(values, _F32)
    O = values.size
    if values.ndim == 0 or channel_axis not in (-1, v.ndim - 1) or not v.flags.c_contiguous \
            or O >= _TILE or v.size < 4 * _TILE:        # (tiling costs more than it saves)
        if values.ndim:
            shape = [1] * v.ndim
            shape[channel_axis] = -1
            values = values.reshape(shape)
        ufunc(v, values, out=v)
        return
    flat = v.reshape(-1, O)
    rows = -(-_TILE // O)
    body = flat.shape[0] // rows * rows
    if body:
        tiled = _tiled(values, rows)
        part = flat[:body].reshape(-1, rows * O)
        ufunc(part, tiled, out=part)
    if body < flat.shape[0]:
        rest = flat[body:]
        ufunc(rest, values, out=rest)


def _own_f32(acc, own):
    """``acc`` as a float32 array (float32(acc) rounding) that may be overwritten: ``acc``
    itself when it is float32 and ``own``."""
    return acc if own and acc.dtype == _F32 else acc.astype(_F32)


_factors: dict = {}     # the static rule's per-channel factors, by content (<= 256 kept)


def _static_factors(x_scale, w_scale, bias, out_scale):
    """(float32(bias / act_w) or None, float32(act_w / out_scale)) of the static rule,
    remembered by the values they come from (a layer's are the same on every call)."""
    w_scale = np.asarray(w_scale)
    key = (float(x_scale), float(out_scale), w_scale.dtype.str, w_scale.tobytes(),
           None if bias is None else np.asarray(bias, _F32).tobytes())
    found = _factors.get(key)
    if found is None:
        aw = act_times_w(x_scale, w_scale)
        found = (None if bias is None else (np.asarray(bias, _F32) / aw).astype(_F32),
                 (aw / _F32(out_scale)).astype(_F32))
        if len(_factors) >= 256:
            _factors.clear()
        _factors[key] = found
    return found


_ACC_TYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(_F32), np.dtype(_F64))


def _per_channel_f32(values, O):
    """Per-channel float32 values (or a scalar, or None: zeros) as a contiguous (O,) array."""
    if values is None:
        return np.zeros(O, _F32)
    values = np.asarray(values, _F32)
    return np.full(O, values.reshape(-1)[0], _F32) if values.size == 1 else \
        np.ascontiguousarray(values.reshape(O))


def _compiled_rows(acc, channel_axis, onednn, x_scale, w_scale, bias, out_scale, out_zp, relu):
    """Both requantization rules in one compiled pass (compiled/quantized.py: the same
    float32 steps), for a C-contiguous accumulator with the channels last; None where the
    kernels are off or the layout does not fit (the NumPy passes then run)."""
    kernels = compiled.kernels()
    if kernels is None or acc.ndim < 2 or channel_axis not in (-1, acc.ndim - 1) or \
            not acc.size or acc.dtype not in _ACC_TYPES or not acc.flags.c_contiguous:
        return None
    O = acc.shape[-1]
    out = np.empty(acc.shape, np.uint8)
    kernels.requantize_rows(acc.reshape(-1, O), *_rule_args(
        onednn, x_scale, w_scale, bias, out_scale, out_zp, relu, O), out.reshape(-1, O))
    return out


def requantize_acc(acc, x_scale, w_scale, bias, out_scale, out_zp, relu, channel_axis=1,
                   own=False):
    """The static rule (module docstring): int accumulator -> quint8 integers (uint8).
    ``w_scale``/``bias`` have one value per output channel along ``channel_axis``; ``own``:
    a float32 ``acc`` may be overwritten."""
    fast = _compiled_rows(acc, channel_axis, False, x_scale, w_scale, bias, out_scale, out_zp,
                          relu)
    if fast is not None:
        return fast
    bias_over_aw, mult = _static_factors(x_scale, w_scale, bias, out_scale)
    v = _own_f32(acc, own)
    if bias_over_aw is not None:
        _per_channel(np.add, v, bias_over_aw, channel_axis)
    _per_channel(np.multiply, v, mult, channel_axis)
    np.rint(v, out=v)
    if out_zp:
        v += _F32(out_zp)
    _clip(v, _F32(out_zp if relu else 0), _F32(255), out=v)
    return v.astype(np.uint8)


def requantize_acc_onednn(acc, x_scale, w_scale, bias, out_scale, out_zp, relu, accum=None,
                          eltwise=None, channel_axis=1, own=False):
    """oneDNN's rule (module docstring) for an accumulator with output channels along
    ``channel_axis``. ``accum`` = (integers, scale, zero point) of a tensor added before
    requantizing (``conv2d_add``: its float32 dequantized values added to ``v`` in float32);
    ``eltwise``: a float32 function applied where ReLU would be (leaky ReLU, tanh); ``own``:
    a float32 ``acc`` may be overwritten. ReLU is applied as the clamp's lower bound
    ``out_zp`` (the same integers: every later step is monotone and maps 0 to ``out_zp``)."""
    if accum is None and eltwise is None:
        fast = _compiled_rows(acc, channel_axis, True, x_scale, w_scale, bias, out_scale,
                              out_zp, relu)
        if fast is not None:
            return fast
    v = _own_f32(acc, own)
    v *= _F32(x_scale)      # the input's scale, then the weight's: two float32 roundings
    _per_channel(np.multiply, v, w_scale, channel_axis)
    if bias is not None:
        _per_channel(np.add, v, bias, channel_axis)
    if accum is not None:
        ints, scale, zero_point = accum
        v += (np.asarray(ints, np.int64) - zero_point).astype(_F32) * _F32(scale)
    if eltwise is not None:
        v = np.asarray(eltwise(v), _F32)
    v *= _F32(1.0 / float(out_scale))     # 1/scale in double
    if out_zp:
        v += _F32(out_zp)
    np.rint(v, out=v)
    _clip(v, _F32(out_zp if relu else 0), _F32(255), out=v)
    return v.astype(np.uint8)


def dynamic_output(acc, x_scale, w_scale, bias, relu):
    """The dynamic rule: ``fma(float32(acc), act_w, bias)`` in float32 (ReLU after)."""
    aw = act_times_w(x_scale, w_scale)
    y = acc.astype(_F32).astype(_F64) * aw.astype(_F64)
    if bias is not None:
        y = y + np.asarray(bias, _F32).astype(_F64)
    y = y.astype(_F32)
    return np.maximum(y, _F32(0)) if relu else y


def fp16_linear(x, w16, bias, relu):
    """(N, K) float32 x (O, K) float16-valued weights: K steps of one fused multiply-add
    each, in order (the engine's float16 GEMM), then ``+ bias`` in float32."""
    x = np.asarray(x, _F32).astype(_F64)
    w = np.asarray(w16, _F32).astype(_F64)
    y = np.zeros((x.shape[0], w.shape[0]), _F32)
    for k in range(x.shape[1]):
        y = (y.astype(_F64) + np.multiply.outer(x[:, k], w[:, k])).astype(_F32)
    if bias is not None:
        y = (y + np.asarray(bias, _F32)).astype(_F32)
    return np.maximum(y, _F32(0)) if relu else y
