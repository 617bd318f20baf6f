"""Extra torch ops: ``unsafe_chunk``/``unsafe_split``, ``hsplit``/``vsplit``/``dsplit``,
``Tensor.__rdiv__``, ``unravel_index``, ``scalar_tensor``, ``Tensor.resize_`` /
``resize_as_``, ``as_strided_scatter``, ``native_layer_norm`` / ``native_group_norm`` /
``native_batch_norm``, ``histogramdd``, ``empty_permuted``, ``nonzero_static``,
``hash_tensor`` and ``Tensor.chalf``.

Most are composites of ember ops (autograd from their parts). ``as_strided_scatter``
and ``nonzero_static`` are records with NumPy kernels; ``as_strided_scatter``'s backward
is written with ``as_strided_scatter`` and ``as_strided`` (so it is differentiable again).
"""
from __future__ import annotations

import numbers

import numpy as np

import ember
from ember import _dtype
from ember._kernels import extra as K
from ember._ops.registry import defop, public
from ember._tensor import Tensor, Size


# -------------------------------------------------------------------- splits

@public("unsafe_split", method=True)
def unsafe_split(input, split_size, dim=0):
    """``split`` without view tracking (the pieces share ``input``'s storage)."""
    return tuple(ember.split(input, split_size, dim))


@public("unsafe_split_with_sizes", method=True)
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return tuple(ember.split(input, list(split_sizes), dim))


@public("unsafe_chunk", method=True)
def unsafe_chunk(input, chunks, dim=0):
    return tuple(ember.chunk(input, chunks, dim))


def _dir_split(name, min_dim, dim_of):
    def fn(input, indices_or_sections):
        if input.ndim < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        d = dim_of(input.ndim)
        ios = indices_or_sections
        if isinstance(ios, Tensor):
            ios = ios.tolist()
        if isinstance(ios, (list, tuple)):
            from ember._dispatch import check_int_list
            check_int_list(name, "indices", ios)
        if isinstance(ios, numbers.Integral) and not isinstance(ios, bool):
            size = input.shape[d]
            if ios == 0 or size % ios != 0:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {size} is not divisible by the "
                                   f"split_size {ios}!")
        return ember.tensor_split(input, ios, d)
    fn.__name__ = name
    fn.__doc__ = f"``tensor_split`` along dim {name[0]} (torch.{name})."
    return public(name, method=True)(fn)


hsplit = _dir_split("hsplit", 1, lambda n: 1 if n > 1 else 0)
vsplit = _dir_split("vsplit", 2, lambda n: 0)
dsplit = _dir_split("dsplit", 3, lambda n: 2)


# -------------------------------------------------------------------- Tensor.__rdiv__

@public("__rdiv__", method=True, function=False)
def __rdiv__(self, other):
    return self.__rtruediv__(other)


# -------------------------------------------------------------------- unravel_index

@public("unravel_index")
def unravel_index(indices, shape):
    """Tuple of coordinate tensors (int64) of the flat ``indices`` in ``shape``."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"expected 'indices' to be a tensor, but got {type(indices)}")
    if indices.is_floating_point() or indices.is_complex() or indices.dtype is _dtype.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    if isinstance(shape, Tensor):
        shape = tuple(shape.tolist())
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    idx = indices.to(_dtype.int64)
    outs = []
    for s in reversed(shape):
        if s == 0:
            outs.append(ember.zeros_like(idx))
            continue
        outs.append(ember.remainder(idx, s))
        idx = ember.floor_divide(idx, s)
    return tuple(reversed(outs))


# -------------------------------------------------------------------- scalar_tensor

@public("scalar_tensor")
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding ``s`` (default dtype: the default float dtype)."""
    if isinstance(s, Tensor):
        s = s.item()
    dt = dtype if dtype is not None else ember.get_default_dtype()
    return ember.full((), s, dtype=dt, device=device, requires_grad=requires_grad)


# -------------------------------------------------------------------- resize_

@public("resize_", method=True, function=False)
def resize_(self, *size, memory_format=None):
    """Resize in place: keeps the first ``numel`` elements (row-major); new ones are 0 (NaN or
    the maximum under deterministic algorithms, as ``empty``)."""
    from ember._determinism import fill_uninitialized
    position = 1
    if len(size) == 1 and isinstance(size[0], (list, tuple, Size)):
        size = tuple(size[0])
    elif len(size) > 1 and (isinstance(size[0], (bool, np.bool_)) or
                            not hasattr(type(size[0]), "__index__")):
        raise TypeError(f"resize_() takes 1 positional argument but {len(size)} were given")
    from ember._dispatch import check_int_list
    size = tuple(int(s) for s in check_int_list("resize_", "size", size, position))
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(size)}: {list(size)}")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    old = self._data
    if size == old.shape:             # torch: nothing changes (a view or strided tensor too)
        return self
    n = int(np.prod(size, dtype=np.int64))
    if self._storage_base is None and old.flags.c_contiguous and n <= old.size:
        new = old.reshape(-1)[:n].reshape(size)       # same storage, like torch
    else:
        new = np.zeros(n, old.dtype)
        flat = np.ascontiguousarray(old).reshape(-1)
        k = min(n, flat.size)
        new[:k] = flat[:k]
        fill_uninitialized(new[k:])
        new = new.reshape(size)
        if self._storage_base is not None:
            raise RuntimeError("ember: resize_ of a view to a different size is not supported")
    self._data = new
    self._vc += 1
    return self


@public("resize_as_", method=True)
def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


# -------------------------------------------------------------------- as_strided_scatter

as_strided_scatter = defop("as_strided_scatter(Tensor self, Tensor src, SymInt[] size, "
                           "SymInt[] stride, SymInt? storage_offset=None) -> Tensor",
                           K.as_strided_scatter, promote=None)


@as_strided_scatter.def_backward
def _(ctx, g, self, src, size, stride, storage_offset):
    g = g.contiguous()
    gs = gself = None
    if ctx.needs_input_grad[1]:
        gs = g.as_strided(tuple(size), tuple(stride),
                          0 if storage_offset is None else storage_offset)
    if ctx.needs_input_grad[0]:
        # torch's as_strided_scatter_backward: self's gradient is ``grad`` inside the
        # window and zero elsewhere (matched for parity; the window-zeroed complement would
        # be the mathematical derivative)
        z = ember.zeros(ctx.shapes[0], dtype=g.dtype)
        gself = as_strided_scatter(z, gs if gs is not None else g.as_strided(
            tuple(size), tuple(stride), 0 if storage_offset is None else storage_offset),
            size, stride, storage_offset)
    return gself, gs, None, None, None


# -------------------------------------------------------------------- native norms

def _norm_stats(x, dims, eps):
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    return mean, ember.rsqrt(var + eps)


@public("native_layer_norm")
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """(out, mean, rstd); mean and rstd have ``normalized_shape``'s dims kept as 1 (and no
    gradient, as torch's)."""
    ns = tuple(normalized_shape)
    k = len(ns)
    if tuple(input.shape[input.ndim - k:]) != ns or k == 0:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    mean, rstd = _norm_stats(input, dims, eps)
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean.detach(), rstd.detach()      # torch's statistics are not differentiable


@public("native_group_norm")
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """(out, mean, rstd); mean and rstd have shape (N, group)."""
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={group}")
    x = input.reshape(N, group, C // group * HxW)      # (sizes given: N may be 0)
    mean, rstd = _norm_stats(x, (2,), eps)
    out = ((x - mean) * rstd).reshape(input.shape)
    aff = (1, C) + (1,) * (input.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(aff)
    if bias is not None:
        out = out + bias.reshape(aff)
    return out, mean.reshape(N, group), rstd.reshape(N, group)


@public("native_batch_norm")
def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                      *, out=None):
    """(out, save_mean, save_invstd) via ``nn.functional.batch_norm`` (which updates the
    running statistics); save_* are the batch statistics in training mode, empty otherwise."""
    F = ember.nn.functional
    res = F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if training:
        dims = tuple(d for d in range(input.ndim) if d != 1)
        mean, rstd = _norm_stats(input.detach(), dims, eps)     # (not differentiable in torch)
        return res, mean.reshape(-1), rstd.reshape(-1)
    empty = ember.empty((0,), dtype=input.dtype)
    return res, empty, empty.clone()


# -------------------------------------------------------------------- histogramdd

def _histogramdd_edges(x, bins, range_):
    D = x.shape[1]
    if isinstance(bins, Tensor) and bins.ndim == 0:
        bins = int(bins.item())
    if isinstance(bins, numbers.Integral):
        bins = [int(bins)] * D
    bins = list(bins)
    if all(isinstance(b, Tensor) for b in bins):
        if len(bins) != D:
            raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges for a "
                               f"{D}-dimensional histogram but got {len(bins)}")
        return [b.detach() for b in bins]
    if len(bins) != D:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if range_ is not None and len(range_) != 2 * D:
        raise RuntimeError(f"torch.histogramdd: for a {D}-dimensional histogram range should "
                           f"have {2 * D} elements, but got {len(range_)}")
    data = x.detach()._data
    edges = []
    for d, b in enumerate(bins):
        b = int(b)
        if b <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for "
                               f"dimension {d}")
        if range_ is not None:
            lo, hi = float(range_[2 * d]), float(range_[2 * d + 1])
        elif data.shape[0]:
            lo, hi = float(data[:, d].min()), float(data[:, d].max())
        else:                           # torch's default range of an empty input
            lo, hi = 0.0, 1.0
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min "
                               f"{lo:g} max {hi:g} for dimension {d}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(ember.linspace(lo, hi, b + 1, dtype=x.dtype))
    return edges


@public("histogramdd")
def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points in ``input`` (..., D)."""
    from ember.return_types import _named
    if not input.is_floating_point():
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{_dtype.scalar_type_name(input.dtype)}'")
    D = input.shape[-1]
    x = input.reshape(-1, D)
    edges = _histogramdd_edges(x, bins, range)
    w = None if weight is None else weight.detach()._data
    hist = K.histogramdd(x.detach()._data, [e._data for e in edges], w, density)
    return _named("histogramdd", ("hist", "bin_edges"))(ember.from_numpy(hist),
                                                         tuple(edges))


# -------------------------------------------------------------------- factories

@public("empty_permuted")
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialised (here: zero) tensor of ``size`` whose memory order is
    ``physical_layout`` (outermost dim first)."""
    size = tuple(int(s) for s in size)
    perm = tuple(int(p) for p in physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(perm)}")
    t = ember.zeros(tuple(size[p] for p in perm), dtype=dtype, device=device)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    t = t.permute(inv)
    if requires_grad:
        t = t.detach().requires_grad_(True)
    return t


nonzero_static = defop("nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor",
                       K.nonzero_static, promote=None, differentiable=False)


# -------------------------------------------------------------------- chalf

@public("chalf", method=True, function=False)
def chalf(self, memory_format=None):
    """``self`` as complex32 (torch.complex32: float16 real and imaginary parts)."""
    return self.to(_dtype.complex32)


# -------------------------------------------------------------------- hash_tensor

hash_tensor = defop("hash_tensor(Tensor self, int[1] dim=[], *, bool keepdim=False, "
                    "int mode=0) -> Tensor", K.hash_tensor, promote=None,
                    out_dtype=_dtype.uint64, differentiable=False)
