"""What torch's CPU kernels refuse for the barebones unsigned dtypes uint16/uint32/uint64.

torch 2.13 stores, copies, compares for equality, multiplies, sums, sorts and indexes these
types, but most of its CPU kernels are not compiled for them: ``a + b`` on two uint32
tensors raises ``NotImplementedError: "add_stub" not implemented for 'UInt32'``. NumPy
computes all of it, so ember refuses what torch refuses, record by record, from the table
below (found by running torch: tests/test_dtypes_unsigned.py compares both).

The first tensor of such a dtype turns on :func:`route` in the dispatcher chain (as the
sparse layouts and the meta device do); until then the dense path pays nothing.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._tensor import Tensor

_WIDE = frozenset(d.np for d in _dtype.WIDE_UNSIGNED)
_NAMES = {np.dtype(np.uint16): "UInt16", np.dtype(np.uint32): "UInt32",
          np.dtype(np.uint64): "UInt64"}

# record public name (in-place variants share it) -> torch's kernel name in the message
REFUSED = {
    "add": "add_stub", "sub": "add_stub", "rsub": "add_stub", "neg": "neg_cpu",
    "abs": "abs_cpu", "floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
    "fmod": "fmod_cpu", "lt": "lt_cpu", "le": "le_cpu", "gt": "gt_cpu", "ge": "ge_cpu",
    "less": "lt_cpu", "less_equal": "le_cpu", "greater": "gt_cpu", "greater_equal": "ge_cpu",
    "bitwise_not": "bitwise_not_cpu", "bitwise_left_shift": "lshift_cpu",
    "__lshift__": "lshift_cpu", "bitwise_right_shift": "rshift_cpu",
    "__rshift__": "rshift_cpu", "logical_and": "logical_and_cpu",
    "logical_or": "logical_or_cpu", "logical_xor": "logical_xor_cpu",
    "logical_not": "logical_not_cpu", "max": "max_all", "min": "min_all",
    "amax": "max_values_cpu", "amin": "min_values_cpu", "aminmax": "aminmax_cpu",
    "argmax": "argmax_cpu", "argmin": "argmin_cpu", "topk": "topk_cpu", "mode": "mode_cpu",
    "median": "median_cpu", "nanmedian": "median_cpu", "kthvalue": "kthvalue_cpu",
    "cummax": "cummax_cpu", "cummin": "cummin_cpu", "maximum": "maximum_cpu",
    "minimum": "minimum_cpu", "fmax": "maximum_cpu", "fmin": "minimum_cpu",
    "clamp": "clamp_scalar_cpu", "clamp_min": "clamp_min_scalar_cpu",
    "clamp_max": "clamp_max_scalar_cpu", "pow": "pow", "square": "pow", "sign": "sign_cpu",
    "sgn": "sign_cpu", "frac": "frac_cpu", "heaviside": "heaviside_cpu", "gcd": "gcd_cpu",
    "lcm": "lcm_cpu", "lerp": "lerp_kernel_scalar", "addcmul": "addcmul_cpu_out",
    "flip": "flip_cpu", "gather": "scatter_gather_tensor_cpu",
    "scatter": "scatter_gather_tensor_cpu", "scatter_add": "scatter_gather_tensor_cpu",
    "scatter_reduce": "scatter_gather_tensor_cpu", "index_select": "index_select",
    "index_add": "index_add_", "index_fill": "index_fill_cpu", "index_copy": "index_copy_cpu",
    "index_put": "index_put", "_index_put_impl": "index_put", "put": "take_put_cpu",
    "take": "take_cpu", "masked_fill": "masked_fill", "masked_select": "masked_select",
    "masked_scatter": "masked_scatter", "nonzero": "nonzero_count_cpu",
    "count_nonzero": "nonzero_count_cpu", "argwhere": "nonzero_count_cpu",
    "relu": "clamp_min_scalar_cpu", "bincount": "bincount_cpu", "isin": "isin_default_cpu",
    "searchsorted": "searchsorted_out_cpu", "bucketize": "bucketize_cpu", "tril": "tril",
    "triu": "triu", "trace": "trace", "cross": "cross", "linalg_cross": "cross",
    "mm": "addmm_impl_cpu_", "addmm": "addmm_impl_cpu_", "matmul": "addmm_impl_cpu_",
    "mv": "addmv_impl_cpu", "addmv": "addmv_impl_cpu", "bmm": "bmm", "baddbmm": "bmm",
    "dot": "dot", "vdot": "dot", "_softmax": "softmax_lastdim_kernel_impl",
    "softmax": "softmax_lastdim_kernel_impl", "_log_softmax": "log_softmax_lastdim_kernel_impl",
    "log_softmax": "log_softmax_lastdim_kernel_impl",
    # overloads (full record names) whose kernels torch names apart
    "max.dim": "max_cpu", "min.dim": "min_cpu", "div.Tensor_mode": "div_floor_cpu",
    "random": "random_kernel_cpu", "random.from": "", "random.to": "",    # "": runs
    "bernoulli": "bernoulli_tensor_cpu_self_", "geometric": "geometric_cpu",
    "bernoulli.p": "bernoulli_scalar_cpu_", "bernoulli.Tensor": "bernoulli_tensor_cpu_self_",
    # factories given the dtype
    "arange": "arange_cpu", "linspace": "linspace_cpu", "logspace": "logspace_cpu",
    "eye": "eye", "randperm": "randperm", "randn": "normal_kernel_cpu",
    "normal": "normal_kernel_cpu", "rand": "check_uniform_bounds",
    "uniform": "check_uniform_bounds",
}
# refused whatever the operands promote to (the others compute in the promoted dtype:
# uint16 + float32 runs in float32 and is fine)
_PROMOTING = frozenset(("add", "sub", "rsub", "floor_divide", "remainder", "fmod", "lt", "le",
                        "gt", "ge", "less", "less_equal", "greater", "greater_equal",
                        "maximum", "minimum", "fmax", "fmin", "pow", "heaviside", "gcd",
                        "lcm", "logical_and", "logical_or", "logical_xor"))
_next_call = None


def enable():
    """Put :func:`route` in front of the dispatcher's call (once)."""
    global _next_call
    if _next_call is None:
        from ember import _dispatch
        _next_call = _dispatch.add_call_layer(route)


def _wide_operand(op, args):
    """The NumPy dtype of the first uint16/32/64 tensor (or ``dtype=``) argument, or None."""
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        if isinstance(a, Tensor):
            if a._data.dtype in _WIDE:
                return a._data.dtype
        elif is_list and isinstance(a, (list, tuple)):
            for x in a:
                if isinstance(x, Tensor) and x._data.dtype in _WIDE:
                    return x._data.dtype
    if "dtype" in op.argnames:
        d = args[op.argnames.index("dtype")]
        if d in _dtype.WIDE_UNSIGNED:
            return d.np
    return None


def _as_int64(a):
    if isinstance(a, Tensor) and a._data.dtype in _WIDE:
        from ember._tensor import _make
        return _make(a._data.astype(np.int64))
    if isinstance(a, (list, tuple)):
        return type(a)(_as_int64(x) for x in a)
    return _dtype.int64 if a in _dtype.WIDE_UNSIGNED else a


# ops whose kernels refuse the dtype before looking at the arguments
DTYPE_FIRST = frozenset(("bincount", "repeat_interleave", "bernoulli"))


def _check_arguments(op, args):
    """torch checks an op's arguments (shapes, index dtypes) before its kernel refuses the
    dtype: run the op on int64 copies first, so that its own error comes first."""
    if op.functional.public_name in DTYPE_FIRST:
        return
    try:
        _next_call(op, tuple(_as_int64(a) for a in args), None)
    except NotImplementedError:     # the stand-in dtype's own refusal: ours comes instead
        pass


_KERNEL: dict = {}          # op -> (refusal kernel name or "", name)


def _refusal(op):
    name = op.public_name.rstrip("_") if op.is_inplace else op.public_name
    full = op.functional.name
    found = _KERNEL[op] = (REFUSED[full] if full in REFUSED else REFUSED.get(name, ""), name)
    return found


def route(op, args, out):
    """The dispatcher's call once a uint16/32/64 tensor exists."""
    kernel, name = _KERNEL.get(op) or _refusal(op)
    if kernel:
        if op.functional.name == "div.Tensor_mode":
            mode = args[op.argnames.index("rounding_mode")]
            kernel = None if mode is None else f"div_{mode}_cpu"
            name = "floor_divide"
    if kernel:
        dt = _wide_operand(op, args)
        if dt is not None:
            if name in _PROMOTING and op.promote is not None:
                from ember._dispatch import _promote
                dt = _promote(op, args, None)
            if dt in _WIDE:
                _check_arguments(op, args)
                raise NotImplementedError(f'"{kernel}" not implemented for \'{_NAMES[dt]}\'')
    return _next_call(op, args, out)
