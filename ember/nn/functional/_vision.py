"""pad, interpolate/upsample, pixel/channel shuffle, fold/unfold, distances."""
from __future__ import annotations

import math

import numpy as np

from ember._ops.nn_conv import convolution, constant_pad_nd, links_input
from ember._ops import quantized_nn as _qnn
from ember.amp.autocast_mode import (fp32_under_autocast as _fp32_under_autocast,
                                     outside_autocast as _outside_autocast)
from ember.autograd.linear_layout import named, spatial_named, torch_node
from ember._state import state

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle",
           "unfold", "fold", "cosine_similarity", "pairwise_distance"]


def _E():
    import ember
    return ember


def channels_last_format(x):
    """torch's suggested memory format of ``x`` when it is channels-last: its strides
    ordered channels innermost, then width, height, batch (depth between for 5-D)
    -> ``ember.channels_last`` (``channels_last_3d``); None otherwise, and for a tensor
    that is plain contiguous too (one channel, or 1x1 spatial)."""
    if x.dim() not in (4, 5) or x.is_contiguous():
        return None
    from ember._kernels.layout import stride_order
    E = _E()
    nd = x.dim()
    shape = tuple(x.shape)
    probe = np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape, x.stride())  # (no reads)
    if stride_order(shape, [probe]) != (0,) + tuple(range(2, nd)) + (1,):
        return None
    return E.channels_last if nd == 4 else E.channels_last_3d


def keeps_memory_format(fn=None, *, unless=None):
    """``fn(input, ...)`` whose result is channels-last when ``input`` is: torch's pads,
    resizes and shuffles allocate their output in the input's memory format
    (``unless(*args, **kwargs)`` true: not that call)."""
    import functools
    if fn is None:
        return functools.partial(keeps_memory_format, unless=unless)

    @functools.wraps(fn)
    def call(input, *args, **kwargs):
        out = fn(input, *args, **kwargs)
        if not hasattr(input, "is_contiguous") or not hasattr(out, "dim") or \
                out.dim() != input.dim() or unless is not None and unless(input, *args, **kwargs):
            return out
        fmt = channels_last_format(input)
        if fmt is None:
            return out
        from ember._kernels.layout import strides_in_order
        nd = out.dim()
        if out.stride() == strides_in_order(tuple(out.shape), (0,) + tuple(range(2, nd)) + (1,)):
            return out
        return out.clone(memory_format=fmt)      # (torch's strides on size-1 dims too)
    return call


# -------------------------------------------------------------------- pad


def _pad_index(L, lo, hi, mode):
    i = np.arange(-lo, L + hi)
    if mode == "reflect":
        period = 2 * (L - 1)
        i = np.abs(i) % period if period else np.zeros_like(i)
        i = np.where(i >= L, period - i, i)
    elif mode == "replicate":
        i = np.clip(i, 0, L - 1)
    else:  # circular: negative pads crop first; positive ones wrap from the cropped part
        start, end = max(-lo, 0), L - max(-hi, 0)
        n = end - start
        i = start + np.arange(-max(lo, 0), n + max(hi, 0)) % n if n > 0 else i % max(L, 1)
    return i


def _pad_mode_in_fp32(args, kwargs):
    """torch's CPU autocast runs 1-D/2-D reflection and all replication padding in
    float32."""
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    pad = args[1] if len(args) > 1 else kwargs.get("pad", ())
    return mode == "replicate" or mode == "reflect" and len(pad) <= 4


# torch's node of each interpolate mode (``{d}``: the spatial rank)
_UPSAMPLE_NODES = {"nearest": "UpsampleNearest{d}DBackward0",
                   "nearest-exact": "UpsampleNearestExact{d}DBackward0",
                   "linear": "UpsampleLinear1DBackward0",
                   "bilinear": "UpsampleBilinear2DBackward0",
                   "bicubic": "UpsampleBicubic2DBackward0",
                   "trilinear": "UpsampleTrilinear3DBackward0"}


@torch_node(lambda out, x, pad, mode="constant", *a, **k: {
    "reflect": f"ReflectionPad{len(pad) // 2}DBackward0",
    "replicate": f"ReplicationPad{len(pad) // 2}DBackward0",
    "circular": "torch::autograd::CopySlices"}.get(mode))   # (torch copies slices in)
@_fp32_under_autocast(when=_pad_mode_in_fp32)
@keeps_memory_format(unless=lambda x, pad, mode="constant", value=None: mode == "circular")
def pad(input, pad, mode="constant", value=None):
    """Pads the last ``len(pad) // 2`` dims: constant, reflect, replicate or circular."""
    E = _E()
    from ember._dispatch import check_int_list
    if isinstance(pad, (list, tuple)) and len(pad) and not isinstance(pad[0], bool) and \
            not hasattr(type(pad[0]), "__index__") and not isinstance(pad[0], E.Tensor):
        # torch's parser: a first element of another type fails the overload's type check
        from ember._legacy import type_name
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found "
                        f"element of type {type_name(type(pad[0]))} at pos 0")
    pad = [int(p) for p in check_int_list("pad", "pad", pad)]
    if len(pad) % 2:
        raise RuntimeError(f"Padding length must be divisible by 2")
    if mode == "constant":
        return constant_pad_nd(input, pad, 0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    nd = len(pad) // 2
    if len(pad) > 2 * input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.dim()}")
    if nd > 3 or input.dim() < nd + 1 or input.dim() > nd + 2:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    outs = [input.shape[-1 - i] + pad[2 * i] + pad[2 * i + 1] for i in range(nd)]
    # torch: reflect / replicate need some output dim >= 1, circular none below 0
    if any(o < 0 for o in outs) or (mode != "circular" and all(o < 1 for o in outs)):
        raise RuntimeError(f"input (spatial sizes {list(input.shape[-nd:])}) is too small for "
                           f"{mode} padding {pad}. Calculated output sizes: {outs[::-1]}")
    # (reflect / replicate: a second derivative reaches the input as zeros, as torch's)
    x = input if mode == "circular" else links_input(
        input, f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{nd}DBackwardBackward0")
    for i in range(nd):
        d = x.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        L = x.shape[d]
        if mode == "reflect" and (lo >= L or hi >= L):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {d} of input {list(input.shape)}")
        if mode == "circular" and (lo > L or hi > L):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if mode == "replicate" and L == 0 and (lo or hi):
            raise RuntimeError("input tensor must be non-empty for replication padding")
        idx = _pad_index(L, lo, hi, mode)
        x = x.index_select(d, E.tensor(idx, dtype=E.int64))
    if input.dtype is E.bool and mode != "circular":   # torch's kernels have no bool case
        kind = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f'"{kind}_pad{nd}d" not implemented for \'Bool\'')
    return x


# -------------------------------------------------------------------- interpolate


def _src_scale(L, O, align_corners, scale):
    if align_corners:
        return (L - 1) / (O - 1) if O > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else L / O


@torch_node(lambda out, x, size=None, scale_factor=None, mode="nearest", *a, **k:
            _UPSAMPLE_NODES.get(mode, "").format(d=x.dim() - 2) or None)
@keeps_memory_format
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize with nearest | nearest-exact | linear | bilinear | bicubic | trilinear | area."""
    E = _E()
    n = input.dim() - 2
    modes = {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area",
             "lanczos"}
    if mode not in modes:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes:"
                             " linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos" and n == 2:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    if n < 1 or n > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got "
                                  f"{input.dim()}D) for the modes: nearest | linear | bilinear | "
                                  f"bicubic | trilinear | lanczos | area | nearest-exact (got {mode})")
    need = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
    if mode in need and need[mode] != n:
        names = {1: "3D", 2: "4D", 3: "5D"}
        raise NotImplementedError(f"Got {names[n]} input, but {mode} mode needs "
                                  f"{names[need[mode]]} input")
    S = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    scales = [None] * n
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * n
        if len(out) != n:       # (the size as given: a tuple prints as one)
            raise ValueError(f"Input and output must have the same number of spatial dimensions,"
                             f" but got input with spatial dimensions of {S} and output size of "
                             f"{size}. Please provide input tensor in (N, C, d1, d2, "
                             f"...,dK) format and output size in (o1, o2, ...,oK) format.")
        if isinstance(size, (list, tuple)) and any(isinstance(o, float) for o in out):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] "
                            f"or Tuple[int, int, int], but got size with types "
                            f"{[type(o) for o in out]}")
        out = [int(o) for o in out]
    elif scale_factor is not None:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else \
            [scale_factor] * n
        if len(sf) != n:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of {S} and "
                             f"scale_factor of shape {scale_factor}. Please provide input tensor in (N, C, "
                             f"d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                             f"format.")
        out = [int(math.floor(float(S[i]) * float(sf[i]))) for i in range(n)]
        if not recompute_scale_factor:
            scales = [float(s) for s in sf]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode != "area" and (any(v <= 0 for v in S) or any(v <= 0 for v in out)):
        dims = "DHW"[3 - n:]
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(f'{a}: {v}' for a, v in zip(dims, S))}) output "
                           f"({', '.join(f'{a}: {v}' for a, v in zip(dims, out))})")
    if mode == "area":
        from ember.nn.functional import _pooling      # (torch's node names: the pool's)
        return getattr(_pooling, f"adaptive_avg_pool{n}d")(input, out)
    if _qnn.is_quantized(input) and (mode != "nearest" and mode != "nearest-exact" or n == 1):
        return _qnn.interpolate(input, mode, n, out, scales, align_corners, antialias)
    x = input
    if antialias:
        return _interp_aa(x, S, out, scales, align_corners, mode)
    if mode in need and not x.is_floating_point():        # (complex too: refused there)
        return _interp_integer(x, S, out, scales, align_corners, mode)
    if mode in ("nearest", "nearest-exact") and x.dtype != E.uint8 and \
            not x.is_floating_point() and not _qnn.is_quantized(x):
        # torch's nearest kernels take floating dtypes and uint8 only (not complex)
        from ember._dtype import scalar_type_name
        kernel = "upsample_nearest2d_channels_last" if n == 2 else \
            "compute_indices_weights_nearest"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(x.dtype)}'")
    half = mode in need and x.dtype in (E.float16, E.bfloat16)   # float32 math, one rounding
    if half:
        x = x.float()
    exact = None
    if mode in ("bilinear", "linear", "trilinear") and x.dtype == E.float32 and \
            type(x) is E.Tensor and type(x._data) is np.ndarray and not state.modes and \
            (n != 3 or channels_last_format(x) is None):     # (tracers see the composite)
        exact = _bilinear2d_f32(x._data, S, out, scales, align_corners,
                                separable=not half and (channels_last_format(x) is None or
                                                        x.shape[1] < 4)) \
            if n == 2 else \
            _linear_passes_f32(x._data, S, out, scales, align_corners)
        if not (E.is_grad_enabled() and x.requires_grad):
            x = E.tensor(exact)
            return x.to(input.dtype) if half else x
    for i in range(n):
        d = 2 + i
        L, O = S[i], out[i]
        if mode in ("nearest", "nearest-exact"):
            sc = 1.0 / scales[i] if scales[i] else L / O
            dst = np.arange(O, dtype=np.float64)
            if mode == "nearest" and n == 2 and O in (L, 2 * L):
                # torch's 2-d nearest kernel maps these sizes directly, whatever the scale
                src = dst if O == L else np.floor(dst / 2)
            elif mode == "nearest":
                src = np.floor(dst * np.float32(sc) if x.dtype == E.float32 else dst * sc)
            else:
                src = np.floor((dst + 0.5) * sc)
            src = np.minimum(src.astype(np.int64), L - 1)
            x = x.index_select(d, E.tensor(src, dtype=E.int64))
            continue
        sc = _src_scale(L, O, align_corners, scales[i])
        dst = np.arange(O, dtype=np.float64)
        if align_corners:
            src = dst * sc
        else:
            src = sc * (dst + 0.5) - 0.5
        shape = [1] * x.dim()
        shape[d] = O
        if mode == "bicubic":
            i0 = np.floor(src).astype(np.int64)
            t = src - i0
            A = -0.75

            def c1(v):
                return ((A + 2) * v - (A + 3)) * v * v + 1

            def c2(v):
                return ((A * v - 5 * A) * v + 8 * A) * v - 4 * A
            coeffs = [c2(t + 1), c1(t), c1(1 - t), c2(2 - t)]
            acc = None
            for j in range(4):
                idx = np.clip(i0 - 1 + j, 0, L - 1)
                term = x.index_select(d, E.tensor(idx, dtype=E.int64)) * \
                    E.tensor(coeffs[j].reshape(shape), dtype=x.dtype)
                acc = term if acc is None else acc + term
            x = acc
            continue
        if not align_corners:
            src = np.maximum(src, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
        i1 = np.minimum(i0 + 1, L - 1)
        lam = src - i0
        lam_t = E.tensor(lam.reshape(shape), dtype=x.dtype)
        x = x.index_select(d, E.tensor(i0, dtype=E.int64)) * (1 - lam_t) + \
            x.index_select(d, E.tensor(i1, dtype=E.int64)) * lam_t
    if exact is not None:
        # the composite's graph (its last op, an add, keeps no output) with torch's values,
        # written into the fresh result (Note [bilinear as torch])
        np.copyto(x._data, exact)
    return x.to(input.dtype) if half else x


# Note [bilinear as torch]: torch's float32 2-d bilinear resize is not two 1-d passes. Its
# float32 weights come from the source index ``fma(scale, dst + 0.5, -0.5)`` (clamped at 0;
# ``scale`` the float32 ``in / out`` or ``1 / scale_factor``; ``dst * scale`` with
# align_corners), ``l1 = src - floor(src)``, ``l0 = 1 - l1``; each output is
# ``x01 * w01``, then ``fma(x00, w00, .)``, ``fma(x10, w10, .)``, ``fma(x11, w11, .)`` with
# ``w_ij = lh_i * lw_j`` (bit for bit on NCHW and channels-last inputs, given sizes and scale
# factors). ``_bilinear2d_f32`` computes that; with a graph to record, the separable composite
# runs too and its result takes these values (the backward is the composite's). Half and
# bfloat16 inputs take it in float32, rounded once (torch's then differ in a few elements in
# a thousand, where one axis after the other differed in a few in a hundred). An output plane
# of more than 4096 elements of a float32 NCHW input torch resizes in two 1-d passes, the
# width first, each output ``fma(x0, l0, x1 * l1)`` (as its 1-d and NCDHW 3-d linear
# resizes, ``_linear_passes_f32``); so does ember, and for channels-last inputs of fewer than 4 channels
# (by experiment: with 4 or more torch's channels-last kernel keeps the 2-d formula). Not
# matched: a single NCHW sample of 8 or more channels, and larger half outputs, which torch
# resizes in yet other orders.


def _bilinear_weights(L, O, align_corners, scale):
    f32 = np.float32
    sc = f32(_src_scale(L, O, align_corners, scale))
    dst = np.arange(O, dtype=f32)
    if align_corners:
        src = dst * sc
    else:       # (an fma: the exact float64 product and sum, rounded once)
        src = np.maximum((sc * (dst + f32(0.5)).astype(np.float64) - 0.5).astype(f32), f32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), L - 1)
    l1 = src - i0.astype(f32)
    return i0, np.minimum(i0 + 1, L - 1), f32(1) - l1, l1


def _bilinear2d_f32(a, S, out, scales, align_corners, separable=False):
    """torch's float32 bilinear resize of the last two dims of ``a`` (Note [bilinear as
    torch])."""
    h0, h1, lh0, lh1 = _bilinear_weights(S[0], out[0], align_corners, scales[0])
    w0, w1, lw0, lw1 = _bilinear_weights(S[1], out[1], align_corners, scales[1])
    if separable and out[0] * out[1] > 4096:    # (larger NCHW outputs: 1-d passes)
        return _linear_passes_f32(a, S, out, scales, align_corners)
    rows = (np.take(a, h0, axis=-2), np.take(a, h1, axis=-2))
    acc = None
    for hi, wi in ((0, 1), (0, 0), (1, 0), (1, 1)):
        w = np.multiply((lh0, lh1)[hi][:, None], (lw0, lw1)[wi][None, :])      # float32
        v = np.take(rows[hi], (w0, w1)[wi], axis=-1)
        acc = np.multiply(v, w) if acc is None else \
            np.add(np.multiply(v, w, dtype=np.float64), acc).astype(np.float32)
    return acc


def _linear_pass_f32(a, L, O, scale, align_corners, axis):
    """One axis of torch's float32 linear resizes: the weights of Note [bilinear as torch],
    each output ``fma(x0, l0, x1 * l1)``."""
    i0, i1, l0, l1 = _bilinear_weights(L, O, align_corners, scale)
    shape = [1] * a.ndim
    shape[axis] = -1
    far = np.multiply(np.take(a, i1, axis=axis), l1.reshape(shape))
    return np.add(np.multiply(np.take(a, i0, axis=axis), l0.reshape(shape), dtype=np.float64),
                  far).astype(np.float32)


def _linear_passes_f32(a, S, out, scales, align_corners):
    """torch's float32 linear (1-d) and trilinear (NCDHW) resizes: one pass per axis, the
    last axis first (bit for bit, by experiment)."""
    n = len(S)
    for i in reversed(range(n)):
        a = _linear_pass_f32(a, S[i], out[i], scales[i], align_corners, i - n)
    return a


def _aa_filter(x, mode):
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1.0 - x, 0.0)
    if mode == "lanczos":                 # Lanczos-3 windowed sinc
        return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0.0)
    a = -0.5                              # Keys' cubic (PIL's antialiased bicubic)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def _aa_matrix(L, O, scale_factor, align_corners, mode):
    """(L, O) weights of the antialiased resize from L to O samples: each output is a
    normalized filter-weighted sum over the input samples within the (scale-widened)
    filter support."""
    support0 = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]
    if align_corners:
        scale = (L - 1) / (O - 1) if O > 1 else 0.0
    else:
        scale = 1.0 / scale_factor if scale_factor is not None and scale_factor > 0 else L / O
    support = support0 * scale if scale >= 1.0 else support0
    inv = 1.0 / scale if scale >= 1.0 else 1.0
    A = np.zeros((L, O))
    for j in range(O):
        center = scale * (j + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), L)
        w = _aa_filter((np.arange(lo, hi) - center + 0.5) * inv, mode)
        tot = w.sum()
        A[lo:hi, j] = w / tot if tot != 0 else w
    return A


@_outside_autocast
def _interp_aa(x, S, out, scales, align_corners, mode):
    """Antialiased bilinear / bicubic resize (uint8 in torch's fixed-point arithmetic)."""
    E = _E()
    mats = [_aa_matrix(S[i], out[i], scales[i], align_corners, mode) for i in range(len(S))]
    if x.dtype not in (E.float32, E.float64):
        if x.dtype != E.uint8:      # (torch's antialiased kernels: no half, bfloat16, complex)
            raise NotImplementedError(f"\"compute_index_ranges_weights\" not implemented for "
                                      f"'{_scalar_type_name(x.dtype)}'")
        from ember.nn.functional._resize_uint8 import resize_uint8
        return E.from_numpy(resize_uint8(x.numpy(), mats))
    for i, A in enumerate(mats):
        x = E.matmul(x.movedim(2 + i, -1), E.tensor(A, dtype=x.dtype)).movedim(-1, 2 + i)
    return x


def _scalar_type_name(dtype):
    from ember._dtype import TYPE_NAMES
    return TYPE_NAMES[str(dtype).split(".")[-1]]


def _interp_integer(x, S, out, scales, align_corners, mode):
    """Integer input to an interpolating mode: uint8 bilinear / bicubic as torch's kernel
    (fixed-point weights, ember/nn/functional/_resize_uint8.py); torch refuses the rest."""
    E = _E()
    if x.dtype != E.uint8 or mode in ("linear", "trilinear"):
        kernel = {"bilinear": "upsample_bilinear2d_channels_last",
                  "bicubic": "compute_indices_weights_cubic"}.get(
                      mode, "compute_indices_weights_linear")
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{_scalar_type_name(x.dtype)}'")
    from ember.nn.functional._resize_uint8 import interp_matrix, resize_uint8
    mats = [interp_matrix(S[i], out[i], _src_scale(S[i], out[i], align_corners, scales[i]),
                          align_corners, mode) for i in range(2)]
    return E.from_numpy(resize_uint8(x.numpy(), mats))


def _deprecated(name):
    import warnings
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  f"instead.", stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of interpolate."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode="nearest")``."""
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode="bilinear", align_corners=True)``."""
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -------------------------------------------------------------------- shuffles


def _factor(fname, name, v):
    """An int argument (an integer tensor of one element too): torch's TypeError otherwise."""
    from ember._dispatch import _int_element
    if isinstance(v, (bool, np.bool_)) or not _int_element(v):
        from ember._legacy import type_name
        raise TypeError(f"{fname}(): argument '{name}' (position 2) must be int, not "
                        f"{type_name(type(v))}")
    return int(v)


@named("PixelShuffleBackward0")
@keeps_memory_format
def pixel_shuffle(input, upscale_factor):
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r)."""
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    L = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(list(range(L)) + [L, L + 3, L + 1, L + 4, L + 2])
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


@named("PixelUnshuffleBackward0")
@keeps_memory_format
def pixel_unshuffle(input, downscale_factor):
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W)."""
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor,"
                           f" but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    L = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(list(range(L)) + [L, L + 2, L + 4, L + 1, L + 3])
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


@keeps_memory_format
def channel_shuffle(input, groups):
    """Rearranges (N, g*k, *) channels to (N, k*g, *)."""
    g = int(groups)
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    n, c = input.shape[:2]
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape((n, g, c // g) + rest).transpose(1, 2).reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle


# -------------------------------------------------------------------- fold / unfold


def _pair(v):
    return [int(a) for a in v] if isinstance(v, (list, tuple)) else [int(v)] * 2


def _onehot_weight(C, k, dtype):
    E = _E()
    K = k[0] * k[1]
    w = np.zeros((C * K, 1, k[0], k[1]))
    for c in range(C):
        w[c * K:(c + 1) * K, 0] = np.eye(K).reshape(K, k[0], k[1])
    return E.tensor(w, dtype=dtype)


def _check_floating(x, kernel):
    """torch's im2col / col2im kernels take floating, complex and bool dtypes only."""
    if not (x.is_floating_point() or x.is_complex() or x.dtype == _E().bool) and \
            not _qnn.is_quantized(x):
        from ember._dtype import scalar_type_name
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(x.dtype)}'")


def _window_args(checks):
    """im2col / col2im pair checks, in the caller's order: (name, (h, w), least, text)."""
    for name, v, lo, what in checks:
        if v[0] < lo or v[1] < lo:
            cond = "be non-negative" if lo == 0 else "be greater than zero"
            raise RuntimeError(f"{name} should {cond}, but got {what}_height: {v[0]} "
                               f"{what}_width: {v[1]}")


def _im2col_check(x, k, d, p, s):
    """torch's im2col argument checks, in its order, before any convolution's."""
    _window_args((("kernel size", k, 1, "kernel"), ("dilation", d, 1, "dilation"),
                  ("padding", p, 0, "pad"), ("stride", s, 1, "stride")))
    if 0 in tuple(x.shape[-3:]):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(x.shape)}")
    size = tuple(x.shape[-2:])
    blocks = tuple((size[i] + 2 * p[i] - (d[i] * (k[i] - 1) + 1)) // s[i] + 1 for i in range(2))
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {size}, kernel_size={tuple(k)}, "
                           f"dilation={tuple(d)}, padding={tuple(p)}, calculated shape of the "
                           f"array of sliding blocks as {blocks}, but its components must be at "
                           f"least one.")


@named("Im2ColBackward0")
@_outside_autocast     # torch's im2col / col2im: no autocast policy
def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L)."""
    if input.dim() < 3:       # torch reads the size of dim 2 first
        n = input.dim()
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got 2)")
    if input.dim() > 4:
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           f"other non-zero dimensions for input, but got: {list(input.shape)}")
    unb = input.dim() == 3
    x = input.unsqueeze(0) if unb else input
    k, d, p, s = (_pair(v) for v in (kernel_size, dilation, padding, stride))
    _im2col_check(input, k, d, p, s)
    _check_floating(x, "im2col_out_cpu")
    C = x.shape[1]
    y = convolution(x, _onehot_weight(C, k, x.dtype), None, s, p, d, False, [0, 0], C)
    # contiguous as torch's im2col (a channels-last input's convolution is not)
    y = y.reshape(y.shape[0], y.shape[1], int(np.prod(y.shape[2:]))).contiguous()
    return y.squeeze(0) if unb else y


@named("Col2ImBackward0")
@_outside_autocast     # torch's im2col / col2im: no autocast policy
def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: (N, C*kh*kw, L) -> (N, C, *output_size), summing overlaps."""
    # torch's col2im checks, in its order: the arguments' lengths and values, the input's
    # rank and sizes, the block count; then the dtype
    vals = {}
    for name, v in (("output_size", output_size), ("kernel_size", kernel_size),
                    ("dilation", dilation), ("padding", padding), ("stride", stride)):
        vals[name] = _pair(v)
        if len(vals[name]) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size "
                               f"{len(vals[name])}")
    k, o, d, p, s = (vals[n] for n in ("kernel_size", "output_size", "dilation", "padding",
                                       "stride"))
    _window_args((("kernel size", k, 1, "kernel"), ("stride", s, 1, "stride"),
                  ("dilation", d, 1, "dilation"), ("padding", p, 0, "pad")))
    if input.dim() not in (2, 3) or 0 in tuple(input.shape[-2:]):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    unb = input.dim() == 2
    x = input.unsqueeze(0) if unb else input
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size=({k[0]}, {k[1]}).")
    blocks = [(o[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if blocks[0] * blocks[1] != x.shape[2]:
        raise RuntimeError(f"Given output_size=({o[0]}, {o[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, "
                           f"{s[1]}), expected size of input's dimension 2 to match the calculated"
                           f" number of sliding blocks {blocks[0]} * {blocks[1]} = "
                           f"{blocks[0] * blocks[1]}, but got input.size(2)={x.shape[2]}.")
    _check_floating(x, "col2im_out_cpu")
    C = x.shape[1] // K
    x = x.reshape(x.shape[0], C * K, blocks[0], blocks[1])
    op = [o[i] - ((blocks[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + 1) for i in range(2)]
    y = convolution(x, _onehot_weight(C, k, x.dtype), None, s, p, d, True, op, C)
    return y.squeeze(0) if unb else y


# -------------------------------------------------------------------- distances


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim``: torch's formula,
    op for op (each normalised first, so half dtypes do not overflow)."""
    E = _E()
    x1, x2 = E.broadcast_tensors(x1, x2)
    u1 = x1 / E.linalg.vector_norm(x1, dim=dim, keepdim=True).clamp_min(eps)
    u2 = x2 / E.linalg.vector_norm(x2, dim=dim, keepdim=True).clamp_min(eps)
    return (u1 * u2).sum(dim)


@named("NormBackward1")
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p over the last dim."""
    E = _E()
    d = max(x1.dim(), x2.dim())
    diff = x1 - x2 + eps
    if d == 0:
        return diff.abs()          # the p-norm of a single number
    return diff.norm(p, dim=-1, keepdim=keepdim)
