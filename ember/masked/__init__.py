"""Masked reductions and normalizations (``torch.masked``) on strided tensors.

Each function takes ``mask`` (bool, broadcastable to the input; ``None`` keeps every element)
and computes the plain operation on the input with its masked-out elements replaced by the
operation's identity — 0 for sums and norms, 1 for products, -inf / the type's minimum for
maxima (and softmax, logsumexp), +inf / the maximum for minima. Operations without an
identity divide by the per-slice count of kept elements instead (mean, var, std) or ignore
NaN (median), so a fully masked-out slice gives NaN there. All of it is written in ember ops,
so autograd reaches the kept elements. ``MaskedTensor`` (strided layout only) is in
``ember/masked/maskedtensor``.
"""
from __future__ import annotations

import math

import ember

__all__ = ["amax", "amin", "argmax", "argmin", "as_masked_tensor", "cumprod", "cumsum",
           "is_masked_tensor", "log_softmax", "logaddexp", "logsumexp", "masked_tensor",
           "MaskedTensor", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin",
           "std", "sum", "var"]

_PROMOTED_TO_LONG = ("uint8", "bool", "int8", "int16", "int32")


def _name(dtype):
    return str(dtype).replace("torch.", "").replace("ember.", "")


def _canonical_dim(dim, ndim):
    """``dim`` (None, an int or a sequence; ``()`` means all) as a sorted tuple."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    ndim = max(ndim, 1)
    dims = []
    for d in ((dim,) if isinstance(dim, int) else dim):
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-ndim}, {ndim - 1}], but got {d})")
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(input, *args, **kwargs):
    """torch.masked's canonical mask: ``kwargs['mask']`` as a bool tensor of the input's
    shape (the signature of torch's helper, which test wrappers call)."""
    mask = kwargs.get("mask")
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    return _canonical_mask(input, mask)


_REDUCTIONS = ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm",
               "var", "std", "logsumexp")
_NORMALIZATIONS = ("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod")


def _output_mask(op, input, *args, **kwargs):
    """Which output elements are defined: for a reduction, those whose slice keeps any
    element; for a normalization, the input mask itself."""
    name = getattr(op, "__name__", None)
    if name in _REDUCTIONS:
        if name == "norm" and args:
            args = args[1:]                          # drop ord
        dim = args[0] if args else kwargs.get("dim")
        out = _input_mask(input, *args, **kwargs)
        keepdim = bool(kwargs.get("keepdim", False))
        for d in reversed(_canonical_dim(dim, input.dim())):
            out = out.any(dim=d, keepdim=keepdim)
        return out
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} "
                     f"object)")


def _canonical_mask(input, mask):
    """The mask as a bool tensor of the input's shape."""
    if mask.shape != input.shape:
        if mask.dim() > input.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask "
                             "dimensionality higher than of the input)")
        mask = ember.broadcast_to(mask, input.shape)
    return mask.to(ember.bool)


def _identity(op, input, ord=None):
    dt = input.dtype
    if op == "sum":
        return ember.tensor(0, dtype=dt)
    if op == "prod":
        return ember.tensor(1, dtype=dt)
    if op in ("amax", "amin"):
        high = op == "amin"
        if dt.is_floating_point:
            return ember.tensor(math.inf if high else -math.inf, dtype=dt)
        if dt.is_complex and op == "amax":      # logsumexp's identity on complex input
            return ember.tensor(complex(-math.inf, 0), dtype=dt)
        if dt.is_signed or dt == ember.uint8:
            info = ember.iinfo(dt)
            return ember.tensor(info.max if high else info.min, dtype=dt)
    if op == "norm":
        if ord == -math.inf:
            return ember.tensor(math.inf, dtype=dt)
        return ember.tensor(0, dtype=dt)
    if op == "median":
        return ember.tensor(math.nan, dtype=dt if dt.is_floating_point else ember.float32)
    raise NotImplementedError(f"identity of {op} on {dt} input")


def _masked_input(op, input, mask, ord=None):
    """``input`` with its masked-out elements replaced by ``op``'s identity."""
    if mask is None:
        return input
    return ember.where(_canonical_mask(input, mask), input, _identity(op, input, ord))


def _long_for_ints(input, dtype):
    if dtype is not None:
        return dtype
    return ember.int64 if _name(input.dtype) in _PROMOTED_TO_LONG else input.dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Sum of the kept elements over ``dim`` (all dims by default)."""
    dtype = _long_for_ints(input, dtype)
    x = _masked_input("sum", input, mask)
    return ember.sum(x, _canonical_dim(dim, input.dim()), bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Product of the kept elements over ``dim`` (all dims by default)."""
    dtype = _long_for_ints(input, dtype)
    x = _masked_input("prod", input, mask).to(dtype)
    for d in reversed(_canonical_dim(dim, input.dim())):
        x = x.prod(dim=d, keepdim=bool(keepdim))
    return x


def cumsum(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("sum", input, mask)
    return ember.cumsum(x, _canonical_dim(dim, input.dim())[0], dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("prod", input, mask)
    return ember.cumprod(x, _canonical_dim(dim, input.dim())[0], dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amax", input, mask)
    return ember.amax(x, _canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amin", input, mask)
    return ember.amin(x, _canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Index of the largest kept element; like torch it is cast to ``dtype`` (the input's
    by default)."""
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amax", input, mask)
    return ember.argmax(x, dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amin", input, mask)
    return ember.argmin(x, dim, bool(keepdim)).to(dtype)


def _count(input, mask, dim, keepdim):
    """Number of kept elements per output element (int64)."""
    if mask is None:
        return sum(ember.ones(input.shape, dtype=ember.int64), dim, keepdim=keepdim)
    return _canonical_mask(input, mask).sum(dim=dim, keepdim=bool(keepdim))


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Mean of the kept elements; NaN where a slice keeps none."""
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be "
                         f"either a floating point or complex dtype. Got: {dtype}")
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, mask, dim, keepdim)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """Median of the kept elements along one dim (NaN where a slice keeps none)."""
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    is_float = input.is_floating_point()
    if not is_float:
        input = input.to(ember.float32)
    out = ember.nanmedian(_masked_input("median", input, mask), d, keepdim).values
    if is_float:
        return out
    if ember.isnan(out).any():
        raise ValueError("masked median expects no fully masked out rows if dtype is not "
                         "floating point")
    return out.to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """Vector ``ord``-norm of the kept elements over ``dim``."""
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("norm", input, mask, ord)
    return ember.linalg.vector_norm(x, ord, _canonical_dim(dim, input.dim()), bool(keepdim),
                                    dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt):
    if unbiased is not None and correction is not None:
        raise AssertionError("Only one of unbiased and correction may be given")  # as torch
    c = float(correction) if correction is not None else \
        (0.0 if unbiased is not None and not unbiased else 1.0)
    inexact = (lambda dt: dt.is_floating_point or dt.is_complex)
    if dtype is None:    # integer and bool inputs are reduced in float32
        dtype = input.dtype if inexact(input.dtype) else ember.float32
    compute = dtype if inexact(dtype) else ember.float32
    count = _count(input, mask, dim, True)
    centred = input - sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    total = sum(centred * centred.conj(), dim, keepdim=keepdim, dtype=compute, mask=mask)
    if not keepdim:
        count = count.reshape(total.shape)
    if c != 0:
        real = compute.to_real() if compute.is_complex else compute
        count = ember.clamp_min(count.to(real) - c, 0)
    out = (total / count).to(dtype)
    return out.sqrt() if take_sqrt else out


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    """Variance of the kept elements (``correction`` defaults to 1)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False)


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None,
        mask=None):
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True)


def softmax(input, dim, *, dtype=None, mask=None):
    """Softmax over the kept elements; masked-out ones get 0."""
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amax", input, mask)
    return ember.nn.functional.softmax(x, _canonical_dim(dim, input.dim())[0], dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amax", input, mask)
    return ember.nn.functional.log_softmax(x, _canonical_dim(dim, input.dim())[0],
                                           dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amin", input, mask)
    return ember.nn.functional.softmin(x, _canonical_dim(dim, input.dim())[0], dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """The kept elements divided by their ``ord``-norm along ``dim`` (at least ``eps``);
    masked-out elements give 0."""
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    return ember.divide(x, ember.maximum(nrm, nrm.new_full([], eps)))


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """log(exp(input) + exp(other)) with masked-out elements of either taken as -inf."""
    dtype = input.dtype if dtype is None else dtype
    a = _masked_input("amax", input, input_mask)
    b = _masked_input("amax", other, other_mask)
    return ember.logaddexp(a, b).to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    dtype = input.dtype if dtype is None else dtype
    x = _masked_input("amax", input, mask)
    return ember.logsumexp(x, _canonical_dim(dim, input.dim()), keepdim=keepdim).to(dtype)


from ember.masked.maskedtensor import MaskedTensor, as_masked_tensor, is_masked_tensor, \
    masked_tensor  # noqa: E402


# A MaskedTensor given to these functions: its own mask is used (a ``mask`` argument is
# ignored) and the result is a plain tensor, as torch's; mean, var and std then sum over the
# specified elements but count every element of the reduced dims (torch's quirk, by
# experiment).

def _full_count(input, dim, keepdim):
    return sum(ember.ones(input.shape, dtype=ember.int64), dim, keepdim=keepdim)


def _accepting_masked(fn):
    def wrapper(input, *args, **kwargs):
        if not isinstance(input, MaskedTensor):
            return fn(input, *args, **kwargs)
        kwargs["mask"] = input.get_mask()
        data = input.get_data()
        if fn.__name__ == "mean":
            dim = args[0] if args else kwargs.get("dim")
            keepdim = kwargs.get("keepdim", False)
            total = sum(data, dim, keepdim=keepdim, dtype=kwargs.get("dtype"),
                        mask=kwargs["mask"])
            return total / _full_count(data, dim, keepdim)
        if fn.__name__ in ("var", "std"):
            dim = args[0] if args else kwargs.get("dim")
            keepdim = kwargs.get("keepdim", False)
            n = _full_count(data, dim, True)
            centred = data - sum(data, dim, keepdim=True, mask=kwargs["mask"]) / n
            total = sum(centred * centred, dim, keepdim=keepdim, mask=kwargs["mask"])
            out = total / ember.clamp_min(_full_count(data, dim, keepdim).to(total.dtype) - 1,
                                          0)
            return out.sqrt() if fn.__name__ == "std" else out
        return fn(data, *args, **kwargs)
    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


for _name_ in _REDUCTIONS + _NORMALIZATIONS:
    globals()[_name_] = _accepting_masked(globals()[_name_])
del _name_
