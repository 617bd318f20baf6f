"""NumPy kernels for convolution and pooling (im2col onto BLAS, vectorised window gathers)."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided


def _fmt(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _windows(xp, ksize, stride, dilation, out_size):
    """View of ``xp`` (N, C, *S) as (N, C, *out, *k) windows (no copy)."""
    n = len(ksize)
    st = xp.strides
    shape = tuple(xp.shape[:2]) + tuple(out_size) + tuple(ksize)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(n)) + \
        tuple(st[2 + i] * dilation[i] for i in range(n))
    return as_strided(xp, shape, strides, writeable=False)


def _pad(x, padding):
    if not any(padding):
        return x
    return np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])


def _cols(x, ksize, stride, padding, dilation, groups, out_size):
    """im2col: (groups, N*P, Cin_g*K) contiguous."""
    n = len(ksize)
    N, C = x.shape[:2]
    xp = _pad(x, padding)
    win = _windows(xp, ksize, stride, dilation, out_size)       # N, C, *O, *K
    win = win.reshape((N, groups, C // groups) + tuple(out_size) + tuple(ksize))
    # -> g, N, *O, Cg, *K
    perm = (1, 0) + tuple(range(3, 3 + n)) + (2,) + tuple(range(3 + n, 3 + 2 * n))
    P = int(np.prod(out_size)) if n else 1
    K = int(np.prod(ksize)) if n else 1
    return np.ascontiguousarray(win.transpose(perm)).reshape(groups, N * P, (C // groups) * K)


def conv_out_size(in_size, ksize, stride, padding, dilation):
    return [(in_size[i] + 2 * padding[i] - dilation[i] * (ksize[i] - 1) - 1) // stride[i] + 1
            for i in range(len(ksize))]


def check_conv(x, w, stride, padding, dilation, groups, transposed):
    n = w.ndim - 2
    if x.ndim != n + 2:
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to "
                           f"conv{n}d, but got input of size: {_fmt(x.shape)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if not transposed:
        if w.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{_fmt(w.shape)} instead")
        if x.shape[1] != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_fmt(w.shape)}, expected "
                               f"input{_fmt(x.shape)} to have {w.shape[1] * groups} channels, "
                               f"but got {x.shape[1]} channels instead")
        padded = [x.shape[2 + i] + 2 * padding[i] for i in range(n)]
        eff = [dilation[i] * (w.shape[2 + i] - 1) + 1 for i in range(n)]
        if any(p < k for p, k in zip(padded, eff)):
            raise RuntimeError(
                "Calculated padded input size per channel: (" + " x ".join(map(str, padded)) +
                "). Kernel size: (" + " x ".join(map(str, eff)) +
                "). Kernel size can't be greater than actual input size")
    else:
        if x.shape[1] != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_fmt(w.shape)}, expected "
                               f"input{_fmt(x.shape)} to have {w.shape[0]} channels, but got "
                               f"{x.shape[1]} channels instead")
        if w.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size "
                               f"{_fmt(w.shape)} instead")


def conv_forward(x, w, stride, padding, dilation, groups):
    n = w.ndim - 2
    N = x.shape[0]
    Cout = w.shape[0]
    ksize = w.shape[2:]
    out_size = conv_out_size(x.shape[2:], ksize, stride, padding, dilation)
    P = int(np.prod(out_size))
    cols = _cols(x, ksize, stride, padding, dilation, groups, out_size)   # g, N*P, Cg*K
    wr = w.reshape(groups, Cout // groups, -1)                          # g, Og, Cg*K
    if groups == 1:
        out = (cols[0] @ wr[0].T).reshape(N, P, Cout).transpose(0, 2, 1)
    else:
        out = np.matmul(cols, wr.transpose(0, 2, 1))                    # g, N*P, Og
        out = out.reshape(groups, N, P, Cout // groups).transpose(1, 0, 3, 2)
    return np.ascontiguousarray(out).reshape((N, Cout) + tuple(out_size))


def conv_transpose_forward(x, w, stride, padding, dilation, groups, output_padding):
    n = w.ndim - 2
    N, Cin = x.shape[:2]
    in_size = x.shape[2:]
    ksize = w.shape[2:]
    Cg_out = w.shape[1]
    Cout = Cg_out * groups
    out_size = [(in_size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ksize[i] - 1)
                + output_padding[i] + 1 for i in range(n)]
    if any(o <= 0 for o in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, in_size))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out_size))}). Output size is too small")
    P = int(np.prod(in_size))
    K = int(np.prod(ksize))
    # x -> g, N*P, Cg_in
    xr = x.reshape(N, groups, Cin // groups, P).transpose(1, 0, 3, 2).reshape(groups, N * P, -1)
    wr = w.reshape(groups, Cin // groups, Cg_out * K)
    cols = np.matmul(xr, wr)                                            # g, N*P, Cg_out*K
    cols = cols.reshape((groups, N) + tuple(in_size) + (Cg_out,) + tuple(ksize))
    # -> *K, N, g, Cg_out, *I
    perm = tuple(range(3 + n, 3 + 2 * n)) + (1, 0, 2 + n) + tuple(range(2, 2 + n))
    cols = np.ascontiguousarray(cols.transpose(perm)).reshape((K, N, Cout) + tuple(in_size))
    full = [out_size[i] + 2 * padding[i] for i in range(n)]
    buf = np.zeros((N, Cout) + tuple(full), dtype=cols.dtype)
    for j, kpos in enumerate(np.ndindex(*ksize)):
        sl = tuple(slice(kpos[i] * dilation[i], kpos[i] * dilation[i] +
                         (in_size[i] - 1) * stride[i] + 1, stride[i]) for i in range(n))
        buf[(slice(None), slice(None)) + sl] += cols[j]
    crop = tuple(slice(padding[i], padding[i] + out_size[i]) for i in range(n))
    out = buf[(slice(None), slice(None)) + crop]
    return np.ascontiguousarray(out) if any(padding) else out


def convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups):
    n = w.ndim - 2
    stride, padding, dilation, output_padding = (_expand(v, n) for v in
                                                 (stride, padding, dilation, output_padding))
    check_conv(x, w, stride, padding, dilation, groups, transposed)
    if transposed:
        out = conv_transpose_forward(x, w, stride, padding, dilation, groups, output_padding)
    else:
        out = conv_forward(x, w, stride, padding, dilation, groups)
    if bias is not None:
        out = out + np.reshape(bias, (1, -1) + (1,) * n)
    return out.astype(np.result_type(x, w), copy=False)


def conv_weight_grad(x, gy, weight_size, stride, padding, dilation, groups):
    """d<gy, conv(x, w)>/dw: (Cout, Cin/g, *k)."""
    n = len(weight_size) - 2
    stride, padding, dilation = (_expand(v, n) for v in (stride, padding, dilation))
    N = x.shape[0]
    Cout = weight_size[0]
    ksize = tuple(weight_size[2:])
    out_size = gy.shape[2:]
    P = int(np.prod(out_size))
    cols = _cols(x, ksize, stride, padding, dilation, groups, out_size)   # g, N*P, Cg*K
    gyr = gy.reshape(N, groups, Cout // groups, P).transpose(1, 2, 0, 3).reshape(
        groups, Cout // groups, N * P)
    gw = np.matmul(gyr, cols)
    return gw.reshape(tuple(weight_size)).astype(np.result_type(x, gy), copy=False)


def _expand(v, n):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 and n != 1 else v


# -------------------------------------------------------------------- padding


def constant_pad_nd(x, pad, value=0):
    pad = list(pad)
    if len(pad) % 2:
        raise RuntimeError("Length of pad must be even but instead it equals " + str(len(pad)))
    nd = len(pad) // 2
    if nd > x.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions "
                           f"of the input. Pad length is {len(pad)} while the input has "
                           f"{x.ndim} dimensions.")
    widths = [(0, 0)] * x.ndim
    crop = [slice(None)] * x.ndim
    for i in range(nd):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        size = x.shape[d] + lo + hi
        if size < 0:
            raise RuntimeError(f"The input size {x.shape[d]}, plus negative padding {lo} and "
                               f"{hi} resulted in a negative output size, which is invalid. "
                               f"Check dimension {d} of your input.")
        widths[d] = (max(lo, 0), max(hi, 0))
        crop[d] = slice(max(-lo, 0), x.shape[d] - max(-hi, 0))
    y = x[tuple(crop)]
    if any(w != (0, 0) for w in widths):
        return np.pad(y, widths, constant_values=value)
    return y.copy()


# -------------------------------------------------------------------- pooling


def pool_out_size(L, k, s, p, d, ceil_mode):
    num = L + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= L + p:
        out -= 1
    return out


def _window_max(x, specs):
    """Max over windows given per spatial dim ``(pos (O, K), valid (O, K))``.

    Returns (values, indices): indices are flat into the trailing spatial dims."""
    nd = len(specs)
    lead = x.shape[:x.ndim - nd]
    S = x.shape[x.ndim - nd:]
    idx = []
    mask = True
    flat = 0
    sp_strides = [int(np.prod(S[i + 1:])) for i in range(nd)]
    for i, (pos, valid) in enumerate(specs):
        shp = [1] * (2 * nd)
        shp[2 * i], shp[2 * i + 1] = pos.shape
        idx.append(pos.reshape(shp))
        mask = mask & valid.reshape(shp)
        flat = flat + pos.reshape(shp) * sp_strides[i]
    g = x[(Ellipsis,) + tuple(idx)]                         # lead, O0, K0, O1, K1 ...
    if x.dtype.kind == "f":
        low = -np.inf
    elif x.dtype.kind == "b":
        low = False
    else:
        low = np.iinfo(x.dtype).min
    g = np.where(mask, g, low)
    flat = np.broadcast_to(flat, g.shape[len(lead):])
    perm = [2 * i for i in range(nd)] + [2 * i + 1 for i in range(nd)]
    L = len(lead)
    g = g.transpose(tuple(range(L)) + tuple(L + p for p in perm))
    O = g.shape[L:L + nd]
    g = g.reshape(lead + O + (-1,))
    flat = flat.transpose(perm).reshape(O + (-1,))
    am = np.argmax(g, axis=-1)
    if x.dtype.kind == "f":
        nan = np.isnan(g)
        if nan.any():
            am = np.where(nan.any(-1), np.argmax(nan, axis=-1), am)
    vals = np.take_along_axis(g, am[..., None], -1)[..., 0]
    ind = np.take_along_axis(np.broadcast_to(flat, g.shape), am[..., None], -1)[..., 0]
    return np.ascontiguousarray(vals), ind.astype(np.int64)


def max_pool(x, kernel_size, stride, padding, dilation, ceil_mode):
    nd = len(kernel_size)
    specs = []
    for i in range(nd):
        L = x.shape[x.ndim - nd + i]
        k, s, p, d = kernel_size[i], stride[i], padding[i], dilation[i]
        O = pool_out_size(L, k, s, p, d, ceil_mode)
        pos = np.arange(O)[:, None] * s - p + np.arange(k)[None, :] * d
        valid = (pos >= 0) & (pos < L)
        specs.append((np.clip(pos, 0, max(L - 1, 0)), valid))
    return _window_max(x, specs)


def adaptive_ranges(L, O):
    i = np.arange(O)
    start = (i * L) // O
    end = -((-(i + 1) * L) // O)
    return start, end


def adaptive_max_pool(x, output_size):
    nd = len(output_size)
    specs = []
    for i in range(nd):
        L = x.shape[x.ndim - nd + i]
        start, end = adaptive_ranges(L, output_size[i])
        K = int((end - start).max()) if output_size[i] else 1
        pos = start[:, None] + np.arange(K)[None, :]
        valid = pos < end[:, None]
        specs.append((np.clip(pos, 0, max(L - 1, 0)), valid))
    return _window_max(x, specs)
