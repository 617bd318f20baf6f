"""``make_tensor``: random test tensors with torch.testing's ranges and options."""
from __future__ import annotations

import collections.abc
import math
import warnings

__all__ = ["make_tensor"]


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` and ``dtype`` filled with values drawn uniformly from
    ``[low, high)``. Defaults: bool [0, 2); uint8 [0, 10); other integers [-9, 10);
    floating and complex (each part) [-9, 9). Bounds outside the dtype's finite range are
    clamped. ``noncontiguous`` returns a strided view; ``exclude_zero`` replaces zeros
    with 1 (bool, integers), ``finfo(dtype).tiny`` (floating) or ``tiny + tiny*1j``
    (complex)."""
    import ember as e

    bool_t = (e.bool,)
    integral = (e.uint8, e.int8, e.int16, e.int32, e.int64) + tuple(
        getattr(e, n) for n in ("uint16", "uint32", "uint64") if hasattr(e, n))
    floating = (e.float16, e.bfloat16, e.float32, e.float64)
    complex_ = (e.complex64, e.complex128) + ((e.complex32,) if hasattr(e, "complex32")
                                               else ())

    def modify(low, high, lowest, highest, default_low, default_high):
        low = default_low if low is None else low
        high = default_high if high is None else high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
        if low == high and dtype in floating + complex_:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating "
                          "or complex types is deprecated since 2.1 and will be removed in "
                          "2.3. Use `torch.full(...)` instead.", FutureWarning)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest or low >= highest:
            raise ValueError(f"The value interval specified by `low` and `high` is "
                             f"[{low}, {high}), but {dtype} only supports "
                             f"[{lowest}, {highest})")
        low, high = (min(max(bound, lowest), highest) for bound in (low, high))
        whole = dtype in integral + bool_t      # integer bounds round up
        return (math.ceil(low), math.ceil(high)) if whole else (low, high)

    nested = len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence)
    shape = tuple(map(int, shape[0] if nested else shape))

    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got {noncontiguous=} and {memory_format=}")
    if requires_grad and dtype in bool_t + integral:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got {dtype=}")

    # a non-contiguous result: draw twice the last dimension and keep every other element
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], shape[-1] * 2)

    if dtype is e.bool:
        low, high = modify(low, high, 0, 2, 0, 2)
        result = e.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in integral:
        info = e.iinfo(dtype)
        low, high = modify(low, high, info.min, info.max, -9, 10)
        result = e.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in floating + complex_:
        info = e.finfo(dtype)
        low, high = modify(low, high, info.min, info.max, -9, 9)
        result = e.empty(shape, device=device, dtype=dtype)
        target = e.view_as_real(result) if dtype in complex_ else result
        _uniform_(target, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"torch.testing.make_tensor(). To request support, file an issue "
                        f"at: https://github.com/pytorch/pytorch/issues")

    if memory_format is not None:
        result = result.clone(memory_format=memory_format)
    elif noncontiguous:
        result = result[..., 1::2]

    if exclude_zero:
        if dtype in integral + bool_t:
            replace = 1
        elif dtype in floating:
            replace = e.finfo(dtype).tiny
        else:
            tiny = e.finfo(dtype).tiny
            replace = complex(tiny, tiny)
        result[result == 0] = replace

    if dtype in floating + complex_:
        result.requires_grad = requires_grad
    return result


def _uniform_(t, low, high):
    """Fill ``t`` uniformly on [low, high); spans wider than the dtype's range are drawn
    as [low/2, high/2) and doubled so the width does not overflow."""
    import ember as e
    if high - low >= e.finfo(t.dtype).max:
        t.uniform_(low / 2, high / 2)
        t.mul_(2)
    else:
        t.uniform_(low, high)
