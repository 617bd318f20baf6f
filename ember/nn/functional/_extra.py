"""pdist, affine_grid and grid_sample, composed of ember ops (autograd from their parts)."""
from __future__ import annotations

import numpy as np

from ember.autograd.linear_layout import named, spatial_named, torch_node
from ember.amp.autocast_mode import fp32_under_autocast as _fp32_under_autocast

__all__ = ["pdist", "affine_grid", "grid_sample"]


def _E():
    import ember
    return ember


# -------------------------------------------------------------------- pdist

def pdist(input, p=2):
    """p-norm distances between all row pairs (i < j) of a 2-D input, row-major order."""
    E = _E()
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    ii = E.from_numpy(i.astype(np.int64))
    jj = E.from_numpy(j.astype(np.int64))
    diff = input.index_select(0, ii) - input.index_select(0, jj)
    return E.linalg.vector_norm(diff, ord=p, dim=1)


# -------------------------------------------------------------------- affine_grid

def _base_coords(n, align_corners, dtype):
    E = _E()
    if n <= 1:
        return E.zeros(n, dtype=dtype)
    c = E.linspace(-1, 1, n, dtype=dtype)
    if not align_corners:
        c = c * ((n - 1) / n)
    return c


def _warn_align_corners():
    import warnings
    from ember._runtime_flags import user_stacklevel
    warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                  "old behavior is desired. See the documentation of grid_sample for details.",
                  stacklevel=user_stacklevel())     # (the user's call, under wrappers)


@named("AffineGridGeneratorBackward0")
def affine_grid(theta, size, align_corners=None):
    """Sampling grid (N, H, W, 2) or (N, D, H, W, 3) for the affine maps ``theta``."""
    E = _E()
    if align_corners is None:
        _warn_align_corners()
    align_corners = bool(align_corners) if align_corners is not None else False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    given = size                         # (messages print the size as given)
    size = [int(s) for s in size]

    def sizes_and_batch():
        # torch: a non-positive size, then the unit-size warning, then its batched product's
        # batch check
        if min(size) <= 0:
            raise ValueError(f"Expected non-zero, positive output size. Got {given}")
        if align_corners and min(size[2:]) == 1:
            import warnings
            from ember._runtime_flags import user_stacklevel
            warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                          "grids when align_corners=True. This is not an intended use case of "
                          "affine_grid. See the documentation of affine_grid for details.",
                          stacklevel=user_stacklevel())
        if theta.shape[0] != size[0]:
            k = len(size) - 1
            raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to "
                               f"be: [{size[0]}, {k}] but got: [{theta.shape[0]}, {k}].")
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{given}. Got {theta.shape}.")
        sizes_and_batch()
        N, _, H, W = size
        xs = _base_coords(W, align_corners, theta.dtype)
        ys = _base_coords(H, align_corners, theta.dtype)
        base = E.stack([xs.reshape(1, W).expand(H, W), ys.reshape(H, 1).expand(H, W),
                        E.ones(H, W, dtype=theta.dtype)], -1)          # (H, W, 3)
        return E.matmul(base.reshape(1, H * W, 3), theta.transpose(1, 2)).reshape(N, H, W, 2)
    if len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{given}. Got {theta.shape}.")
        sizes_and_batch()
        N, _, D, H, W = size
        xs = _base_coords(W, align_corners, theta.dtype).reshape(1, 1, W).expand(D, H, W)
        ys = _base_coords(H, align_corners, theta.dtype).reshape(1, H, 1).expand(D, H, W)
        zs = _base_coords(D, align_corners, theta.dtype).reshape(D, 1, 1).expand(D, H, W)
        base = E.stack([xs, ys, zs, E.ones(D, H, W, dtype=theta.dtype)], -1)
        return E.matmul(base.reshape(1, D * H * W, 4),
                        theta.transpose(1, 2)).reshape(N, D, H, W, 3)
    raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                              f"affine transforms, respectively. Got size {tuple(size)}.")


# -------------------------------------------------------------------- grid_sample

def _unnormalize(c, size, align_corners):
    if align_corners:
        return (c + 1) / 2 * (size - 1)
    return ((c + 1) * size - 1) / 2


def _reflect(c, twice_low, twice_high):
    E = _E()
    if twice_low == twice_high:
        return c * 0                     # (keeps c in the graph: torch's gradient is 0, not None)
    mn = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = (c - mn).abs()
    extra = E.fmod(c, span)
    flips = E.floor(c / span)
    even = E.remainder(flips, 2) == 0
    return E.where(even, extra + mn, span - extra + mn)


def _clip(c, size):
    """``c`` clamped to [0, size - 1]; as torch's grid sampler, the gradient passes only
    strictly inside (a coordinate on the border, as an identity grid's edge pixels, gets none)."""
    E = _E()
    inside = (c > 0) & (c < size - 1)
    return E.where(inside, c, E.clamp(c.detach(), 0, size - 1))


def _apply_padding(c, size, padding_mode, align_corners):
    if padding_mode == "border":
        return _clip(c, size)
    if padding_mode == "reflection":
        if align_corners:
            c = _reflect(c, 0, 2 * (size - 1))
        else:
            c = _reflect(c, -1, 2 * size - 1)
        return _clip(c, size)
    return c


def _gather(flat, idx, mask):
    """``flat`` (N, C, S) at integer positions ``idx`` (N, P) -> (N, C, P), 0 where not
    ``mask``."""
    E = _E()
    N, C, _ = flat.shape
    P = idx.shape[1]
    v = flat.gather(2, idx.reshape(N, 1, P).expand(N, C, P))
    return v * mask.reshape(N, 1, P).to(flat.dtype)


def _corner(flat, coords, sizes):
    """Values at integer ``coords`` (list of (N, P) float tensors, fastest dim first)."""
    E = _E()
    mask = None
    idx = None
    stride = 1
    for c, s in zip(coords, sizes):
        ok = (c >= 0) & (c <= s - 1)
        mask = ok if mask is None else mask & ok
        ci = E.clamp(c, 0, s - 1).to(E.int64)
        idx = ci * stride if idx is None else idx + ci * stride
        stride *= s
    return _gather(flat, idx, mask)


def _cubic1(x, A):
    return ((A + 2) * x - (A + 3)) * x * x + 1


def _cubic2(x, A):
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A


def _cubic_coeffs(t):
    A = -0.75
    return [_cubic2(t + 1, A), _cubic1(t, A), _cubic1(1 - t, A), _cubic2(2 - t, A)]


@spatial_named("GridSampler{d}DBackward0")
@_fp32_under_autocast
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples ``input`` (N, C, H, W) / (N, C, D, H, W) at ``grid`` (N, H', W', 2) /
    (N, D', H', W', 3) (x, y[, z] in [-1, 1])."""
    E = _E()
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        _warn_align_corners()
    align_corners = bool(align_corners) if align_corners is not None else False
    nd = input.ndim - 2
    # (torch's order: batch size, grid's last size, ranks, empty input, bicubic, dtypes)
    if input.ndim > 0 and grid.ndim > 0 and grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.ndim > 0 and grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    for d in range(2, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {d} being empty")
    if mode == "bicubic" and nd != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    from ember._dtype import scalar_type_name
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {scalar_type_name(input.dtype)} but found "
                           f"{scalar_type_name(grid.dtype)}")
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu_kernel_impl" if nd == 2 else "grid_sampler3d_cpu"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{scalar_type_name(input.dtype)}'")
    N, C = input.shape[:2]
    in_sizes = list(reversed(input.shape[2:]))            # fastest (x) first
    out_sp = tuple(grid.shape[1:-1])
    P = int(np.prod(out_sp, dtype=np.int64))
    flat = input.reshape(N, C, int(np.prod(input.shape[2:], dtype=np.int64)))
    g = grid.reshape(N, P, nd)
    # flat index of the input is x + W*y (+ W*H*z), matching in_sizes' order
    raw = [_unnormalize(g[:, :, k], in_sizes[k], align_corners) for k in range(nd)]
    if mode == "bicubic":
        base = [E.floor(r) for r in raw]
        t = [r - b for r, b in zip(raw, base)]
        cx, cy = _cubic_coeffs(t[0]), _cubic_coeffs(t[1])
        out = 0
        for j in range(4):
            yj = _apply_padding(base[1] - 1 + j, in_sizes[1], padding_mode, align_corners)
            row = 0
            for i in range(4):
                xi = _apply_padding(base[0] - 1 + i, in_sizes[0], padding_mode, align_corners)
                v = _corner(flat, [xi, yj], in_sizes)
                row = row + v * cx[i].reshape(N, 1, P)
            out = out + row * cy[j].reshape(N, 1, P)
        return out.reshape((N, C) + out_sp)
    coords = [_apply_padding(r, s, padding_mode, align_corners) for r, s in zip(raw, in_sizes)]
    if mode == "nearest":
        near = [E.round(c) for c in coords]
        # round has a zero derivative: ``one`` is exactly 1 and keeps grid in the graph
        # (its gradient is zero, as in torch)
        one = 1 + sum(r - r.detach() for r in near)
        v = _corner(flat, [r.detach() for r in near], in_sizes) * one.reshape(N, 1, P)
        return v.reshape((N, C) + out_sp)
    lo = [E.floor(c).detach() for c in coords]
    frac = [c - l for c, l in zip(coords, lo)]
    out = 0
    for corner in range(2 ** nd):
        pos, w = [], None
        for k in range(nd):
            hi = (corner >> k) & 1
            pos.append(lo[k] + hi)
            wk = frac[k] if hi else 1 - frac[k]
            w = wk if w is None else w * wk
        out = out + _corner(flat, pos, in_sizes) * w.reshape(N, 1, P)
    return out.reshape((N, C) + out_sp)
