"""Type aliases for nn signatures (``torch.nn.common_types``): ``_size_2_t`` is an int or a
2-tuple of ints, ``_ratio_any_t`` a float or a tuple of floats, and so on."""
from typing import TypeAlias as _TypeAlias, TypeVar, Union

from ember import Tensor

T = TypeVar("T")

_scalar_or_tuple_any_t: _TypeAlias = Union[T, tuple[T, ...]]
_scalar_or_tuple_1_t: _TypeAlias = Union[T, tuple[T]]
_scalar_or_tuple_2_t: _TypeAlias = Union[T, tuple[T, T]]
_scalar_or_tuple_3_t: _TypeAlias = Union[T, tuple[T, T, T]]
_scalar_or_tuple_4_t: _TypeAlias = Union[T, tuple[T, T, T, T]]
_scalar_or_tuple_5_t: _TypeAlias = Union[T, tuple[T, T, T, T, T]]
_scalar_or_tuple_6_t: _TypeAlias = Union[T, tuple[T, T, T, T, T, T]]

# sizes (kernel_size, stride, padding...)
_size_any_t: _TypeAlias = _scalar_or_tuple_any_t[int]
_size_1_t: _TypeAlias = _scalar_or_tuple_1_t[int]
_size_2_t: _TypeAlias = _scalar_or_tuple_2_t[int]
_size_3_t: _TypeAlias = _scalar_or_tuple_3_t[int]
_size_4_t: _TypeAlias = _scalar_or_tuple_4_t[int]
_size_5_t: _TypeAlias = _scalar_or_tuple_5_t[int]
_size_6_t: _TypeAlias = _scalar_or_tuple_6_t[int]

# sizes where None means "keep that dimension" (adaptive pooling)
_size_any_opt_t: _TypeAlias = _scalar_or_tuple_any_t[int | None]
_size_2_opt_t: _TypeAlias = _scalar_or_tuple_2_t[int | None]
_size_3_opt_t: _TypeAlias = _scalar_or_tuple_3_t[int | None]

# ratios (fractional pooling, upsampling scale factors)
_ratio_2_t: _TypeAlias = _scalar_or_tuple_2_t[float]
_ratio_3_t: _TypeAlias = _scalar_or_tuple_3_t[float]
_ratio_any_t: _TypeAlias = _scalar_or_tuple_any_t[float]

_tensor_list_t: _TypeAlias = _scalar_or_tuple_any_t[Tensor]

# a tensor, or a (tensor, indices) pair as max-pooling with return_indices gives
_maybe_indices_t: _TypeAlias = _scalar_or_tuple_2_t[Tensor]
