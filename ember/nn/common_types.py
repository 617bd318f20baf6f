"""Type aliases for nn signatures (``torch.nn.common_types``): ``_size_2_t`` is an int or a
2-tuple of ints, ``_ratio_any_t`` a float or a tuple of floats, and so on. Built from one
table: ``_scalar_or_tuple_<n>_t[X]`` is ``Union[X, tuple of n X]`` (n "any": any length)."""
from typing import TypeVar, Union

from ember import Tensor

T = TypeVar("T")


def _one_or_tuple(n):
    """Union[T, (T, ..., T)] with n entries (None: any number)."""
    return Union[T, tuple[T, ...] if n is None else tuple[(T,) * n]]


_ARITIES = {"any": None, **{str(n): n for n in range(1, 7)}}
for _k, _n in _ARITIES.items():
    globals()[f"_scalar_or_tuple_{_k}_t"] = _one_or_tuple(_n)
    globals()[f"_size_{_k}_t"] = _one_or_tuple(_n)[int]        # kernel_size, stride, ...
for _k in ("any", "2", "3"):
    # sizes where None keeps that dimension (adaptive pooling); ratios (scale factors)
    globals()[f"_size_{_k}_opt_t"] = _one_or_tuple(_ARITIES[_k])[int | None]
    globals()[f"_ratio_{_k}_t"] = _one_or_tuple(_ARITIES[_k])[float]
_tensor_list_t = _one_or_tuple(None)[Tensor]
_maybe_indices_t = _one_or_tuple(2)[Tensor]     # max pooling with return_indices
del _k, _n
