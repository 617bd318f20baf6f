"""Fractional max pooling (torch.nn.functional.fractional_max_pool2d/3d).

Window starts come from torch's ``generate_intervals`` (computed in the input's float
dtype); the window maxima are picked with a vectorised gather, and the values are taken
from the input with ``gather`` so autograd flows through ember ops.
"""
from __future__ import annotations

import numpy as np

from ember.amp.autocast_mode import fp32_under_autocast as _fp32_under_autocast

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]


def _tuple(v, n):
    if isinstance(v, (list, tuple)):
        v = list(v)
        return v * n if len(v) == 1 else v
    return [v] * n


def _intervals(sample, L, O, K, dt):
    """(P,) samples -> (P, O) window starts (torch's generate_intervals)."""
    sample = sample.astype(dt)
    starts = np.empty(sample.shape + (O,), dtype=np.int64)
    if O > 1:
        alpha = dt.type(L - K) / dt.type(O - 1)
        i = np.arange(O - 1, dtype=dt)
        a = ((i[None, :] + sample[:, None]) * alpha).astype(np.int64)
        b = (sample * alpha).astype(np.int64)
        starts[:, :O - 1] = a - b[:, None]
    starts[:, O - 1] = L - K
    return starts


def _check_samples(samples, dtype, N, C, n):
    """torch's checks of ``_random_samples`` (N', C, n) for an (N, C, ...) input, N' >= N."""
    if samples.dtype != dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.shape[0] < N:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != C:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != n:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {n}; got "
                           f"{samples.shape[2]}.")


def _fractional(input, n, kernel_size, output_size, output_ratio, return_indices,
                _random_samples):
    import ember
    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         f"output_ratio")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    k = [int(v) for v in _tuple(kernel_size, n)]
    S = list(input.shape[-n:])
    if output_size is None:
        r = _tuple(output_ratio, n)
        output_size = [int(S[i] * float(r[i])) for i in range(n)]
    O = [int(v) for v in _tuple(output_size, n)]
    dims = ["time", "height", "width"][-n:]
    for i in range(n):
        # torch: 2d needs O + k - 1 <= S, 3d strictly O + k - 1 < S
        if O[i] + k[i] - 1 > S[i] or (n == 3 and O[i] + k[i] - 1 == S[i]):
            raise RuntimeError(f"{name}{'_out' if n == 3 else ''}(): pool {dims[i]} {k[i]} "
                               f"too large relative to input {dims[i]} {S[i]}")
    unb = input.dim() == n + 1
    x = input.unsqueeze(0) if unb else input
    N, C = x.shape[0], x.shape[1]
    if 0 in O:                          # empty output: no windows to place
        vals = x.flatten(2)[:, :, :0].reshape([N, C] + O)
        ind = ember.zeros([N, C] + O, dtype=ember.int64)
        if unb:
            vals, ind = vals.squeeze(0), ind.squeeze(0)
        return (vals, ind) if return_indices else vals
    if _random_samples is None:
        _random_samples = ember.rand(N, C, n, dtype=input.dtype)
    _check_samples(_random_samples, input.dtype, N, C, n)
    _random_samples = _random_samples[:N]         # torch accepts more rows than the batch
    dt = np.dtype(input.dtype.np) if input.dtype.is_floating_point else np.dtype(np.float32)
    smp = np.asarray(_random_samples.detach()._data, dtype=dt).reshape(N * C, n)
    # torch's sample order: 2d (W, H); 3d (T, H, W)
    col = [1, 0] if n == 2 else [0, 1, 2]
    xs = np.asarray(x.detach()._data).reshape((N * C,) + tuple(S))
    P = N * C
    idx = []
    flat = 0
    sp = [int(np.prod(S[i + 1:])) for i in range(n)]
    for i in range(n):
        st = _intervals(smp[:, col[i]], S[i], O[i], k[i], dt)          # P, O
        pos = st[:, :, None] + np.arange(k[i])[None, None, :]           # P, O, K
        shp = [P] + [1] * (2 * n)
        shp[1 + 2 * i], shp[2 + 2 * i] = O[i], k[i]
        idx.append(pos.reshape(shp))
        flat = flat + pos.reshape(shp) * sp[i]
    g = xs[(np.arange(P).reshape([P] + [1] * (2 * n)),) + tuple(idx)]  # P, O0, K0, O1, K1..
    flat = np.broadcast_to(flat, g.shape)
    perm = [0] + [1 + 2 * i for i in range(n)] + [2 + 2 * i for i in range(n)]
    g = g.transpose(perm).reshape([P] + O + [-1] if P else [P] + O + [int(np.prod(k))])
    flat = flat.transpose(perm).reshape(g.shape)
    am = np.argmax(g, axis=-1) if g.size else np.zeros(g.shape[:-1], np.int64)
    ind = np.take_along_axis(flat, am[..., None], -1)[..., 0] if g.size else \
        np.zeros(g.shape[:-1], np.int64)
    ind = ember.tensor(ind.reshape([N, C] + O).astype(np.int64))
    vals = x.flatten(2).gather(2, ind.flatten(2)).reshape([N, C] + O)
    if unb:
        vals, ind = vals.squeeze(0), ind.squeeze(0)
    return (vals, ind) if return_indices else vals


@_fp32_under_autocast
def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """2D fractional max pooling (Graham, 2014)."""
    return _fractional(input, 2, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


@_fp32_under_autocast
def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """3D fractional max pooling."""
    return _fractional(input, 3, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)


@_fp32_under_autocast
def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, 2, kernel_size, output_size, output_ratio, True,
                       _random_samples)


@_fp32_under_autocast
def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    return _fractional(input, 3, kernel_size, output_size, output_ratio, True,
                       _random_samples)
