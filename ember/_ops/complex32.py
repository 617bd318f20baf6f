"""complex32 (torch's ComplexHalf) through the dispatcher.

A complex32 array is a NumPy structured array of float16 (real, imag) pairs
(``ember/_kernels/complex32.py``). The first complex32 tensor turns on :func:`route` in the
dispatcher chain; until then the dense path pays nothing. For an op with a complex32
operand (or ``dtype=torch.complex32``) it:

- runs only the ops torch's CPU kernels run for ComplexHalf (``ALLOWED``, found by running
  torch) and refuses the others, with torch's class and text where ``REFUSED`` has it
  (NotImplementedError otherwise);
- runs views (``view``, ``select``, ``t``, slicing...) as they are: NumPy moves the pairs;
  ``real``/``imag``/``view_as_real`` are float16 views of the pairs;
- runs everything else in complex64 and rounds what comes out back to complex32 (and a
  real result to float16) where torch's result is complex32; in-place ops write the rounded
  result back into the pairs.

Gradients pass through the detour (the widening and the rounding are records with backward
rules); in-place ops on complex32 tensors do not record.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from ember import _dtype
from ember._kernels.complex32 import C32, to_c64, from_complex, view_as_real
from ember._ops.registry import OpDef
from ember._tensor import Tensor, _make

_C64 = np.dtype(np.complex64)
_WIDER = (np.dtype(np.complex64), np.dtype(np.complex128))

_NI = NotImplementedError


def _ni(kernel):
    return _NI, f"\"{kernel}\" not implemented for 'ComplexHalf'"


# record name (functional; public name as fallback) -> (exception class, message)
REFUSED = {
    "div": _ni("div_cpu"), "floor_divide": _ni("div_floor_cpu"),
    "remainder": _ni("remainder_cpu"), "fmod": _ni("fmod_cpu"), "lt": _ni("lt_cpu"),
    "le": _ni("le_cpu"), "gt": _ni("gt_cpu"), "ge": _ni("ge_cpu"),
    "bitwise_and": _ni("bitwise_and_cpu"), "bitwise_or": _ni("bitwise_or_cpu"),
    "bitwise_xor": _ni("bitwise_xor_cpu"), "bitwise_left_shift": _ni("lshift_cpu"),
    "bitwise_right_shift": _ni("rshift_cpu"), "sum": _ni("sum_cpu"), "mean": _ni("sum_cpu"),
    "nansum": (RuntimeError, "nansum on CPU does not support complex inputs"),
    "prod": _ni("prod_out_cpu"), "cumsum": _ni("cumsum_out_cpu"),
    "cumprod": _ni("cumprod_out_cpu"), "max": _ni("max_all"), "min": _ni("min_all"),
    "max.dim": _ni("max_cpu"), "min.dim": _ni("min_cpu"), "amax": _ni("max_values_cpu"),
    "amin": _ni("min_values_cpu"), "aminmax": _ni("aminmax_cpu"),
    "argmax": (RuntimeError, "argmax(): does not support complex input"),
    "argmin": (RuntimeError, "argmin(): does not support complex input"),
    "sort": (RuntimeError, " Sort does not support complex dtypes on CPU"),
    "topk": (RuntimeError, " topk does not support complex dtypes on CPU"),
    "unique": _ni("unique"), "_unique2": _ni("unique"), "arange": _ni("arange_cpu"),
    "linspace": _ni("linspace_cpu"), "logspace": _ni("logspace_cpu"), "eye": _ni("eye"),
    "mm": _ni("addmm_impl_cpu_"), "addmm": _ni("addmm_impl_cpu_"),
    "matmul": _ni("addmm_impl_cpu_"), "bmm": _ni("bmm"), "mv": _ni("addmv_impl_cpu"),
    "dot": _ni("dot"), "vdot": _ni("dot"),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "clamp": (_NI, "clamp is not supported for complex types"),
    "sqrt": _ni("sqrt_vml_cpu"), "exp": _ni("exp_vml_cpu"), "log": _ni("log_vml_cpu"),
    "sin": _ni("sin_vml_cpu"), "cos": _ni("cos_vml_cpu"), "tanh": _ni("tanh_vml_cpu"),
    "pow": _ni("pow"), "square": _ni("pow"), "reciprocal": _ni("reciprocal_cpu"),
    "angle": _ni("angle_cpu"), "flip": _ni("flip_cpu"),
    "gather": _ni("scatter_gather_tensor_cpu"), "scatter": _ni("scatter_gather_tensor_cpu"),
    "scatter_add": _ni("scatter_gather_tensor_cpu"), "bincount": _ni("bincount_cpu"),
    "equal": _ni("equal_cpu"),
    "sign": (_NI, "Unlike NumPy, torch.sign is not intended to support complex numbers. "
                  "Please use torch.sgn instead."),
    "nan_to_num": _ni("nan_to_num"), "lerp": _ni("lerp_kernel_scalar"),
    "copysign": _ni("copysign_cpu"), "searchsorted": _ni("searchsorted_out_cpu"),
    "cummax": _ni("cummax_cpu"), "cummin": _ni("cummin_cpu"), "median": _ni("median_cpu"),
    "kthvalue": _ni("kthvalue_cpu"), "logical_and": _ni("logical_and_cpu"),
    "logical_or": _ni("logical_or_cpu"), "logical_not": _ni("logical_not_cpu"),
    "isin": _ni("isin_default_cpu"), "gcd": _ni("gcd_cpu"),
    "trunc": (_NI, "trunc is not supported for complex inputs"), "put": _ni("take_put_cpu"),
    "take": _ni("take_cpu"), "histc": _ni("aminmax_cpu"), "hash_tensor": _ni("xor_sum_cpu"),
    "randint": (RuntimeError, "check_random_bounds handles only integral, floating-point and "
                              "boolean types"),
    "exponential": (RuntimeError, "Exponential distribution is a continuous probability "
                                  "distribution. dtype must be a floating point but you "
                                  "specified ComplexHalf"),
    "abs_": (RuntimeError, "In-place abs is not supported for complex tensors."),
    "argsort": (RuntimeError, " Sort does not support complex dtypes on CPU"),
    "msort": (RuntimeError, " Sort does not support complex dtypes on CPU"),
    "nanmean": (RuntimeError, "nansum on CPU does not support complex inputs"),
    "deg2rad": (RuntimeError, "deg2rad is not supported for complex tensors."),
    "rad2deg": (RuntimeError, "rad2deg is not supported for complex tensors."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "frexp": (RuntimeError, "torch.frexp() only supports floating-point dtypes"),
}
# record names (public, in-place ``_`` dropped) torch's CPU kernels run on ComplexHalf
ALLOWED = frozenset((
    "add", "sub", "rsub", "mul", "neg", "abs", "sgn", "eq", "ne", "isclose", "allclose",
    "where", "cat", "concat", "concatenate", "stack", "clone", "contiguous", "index",
    "index_put", "_index_put_impl", "index_add", "index_fill", "index_copy", "index_select",
    "masked_fill", "masked_select", "nonzero", "argwhere", "count_nonzero", "any", "all",
    "isnan", "isinf", "isfinite", "isreal", "roll", "repeat", "tile", "narrow_copy",
    "select_scatter", "slice_scatter", "diagonal_scatter", "addcmul", "dist", "kron", "outer",
    "norm", "linalg_vector_norm", "var", "std", "var_mean", "std_mean", "diff", "diag",
    "diag_embed", "diagflat", "tril", "triu", "block_diag", "conj_physical", "resolve_conj",
    "resolve_neg", "_to_copy", "copy", "fill", "zero", "constant_pad_nd", "pad", "full",
    "full_like", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like",
    "empty_strided", "rand", "rand_like", "randn", "randn_like", "normal", "normal_functional",
    "uniform",
    "float_power", "chain_matmul", "broadcast_tensors", "unbind", "alias_copy", "detach_copy",
    "diagonal_copy", "slice_copy", "squeeze_copy", "t_copy", "unbind_copy", "flatten",
    "ravel", "flipud", "squeeze", "t", "diagonal", "detach", "_conj", "conj", "alias",
    "as_strided_copy", "as_strided_scatter", "expand_copy", "permute_copy", "select_copy",
    "split_copy", "split_with_sizes_copy", "transpose_copy", "unfold_copy", "unsqueeze_copy",
    "view_copy", "hstack", "vstack", "row_stack", "dstack", "column_stack", "_chunk_cat",
    "nonzero_static", "repeat_interleave",
))
# ops that cast their input to ``dtype=`` first: they run on ComplexHalf when it is given
# (and real: torch's kernels refuse complex softmax)
CAST_TO_DTYPE = frozenset(("softmax", "log_softmax", "_softmax", "_log_softmax"))
# composite records whose parts decide (dequantize of a plain tensor is ``to(float32)``)
COMPOSED = frozenset(("dequantize", "real"))
_VIEWS_OF_PARTS = {"_real_part": lambda a: a["real"], "imag": lambda a: a["imag"],
                   "view_as_real": view_as_real}
_next_call = None

# the detour's two casts, as records so that gradients pass through them
widen = OpDef("_complex32_to_complex64(Tensor self) -> Tensor", to_c64, promote=None,
              grad_name="ToCopyBackward0")
narrow = OpDef("_complex64_to_complex32(Tensor self) -> Tensor", from_complex, promote=None,
               grad_name="ToCopyBackward0")
_CASTS = (widen, narrow)


@widen.def_backward
def _(ctx, g, self):
    return narrow(g) if g.dtype is _dtype.complex64 else g


@narrow.def_backward
def _(ctx, g, self):
    return widen(g) if g.dtype is _dtype.complex32 else g


def enable():
    """Put :func:`route` in front of the dispatcher's call (once)."""
    global _next_call
    if _next_call is None:
        from ember import _dispatch
        _next_call = _dispatch.add_call_layer(route)


_warned = [False]


def warn_experimental():
    """torch's warning on the first complex32 allocation (once a process, as torch)."""
    if not _warned[0]:
        _warned[0] = True
        level, frame = 2, sys._getframe(1)
        while frame is not None and (frame.f_globals.get("__name__", "").startswith("ember")
                                     or frame.f_code.co_filename.startswith("<ember")):
            level, frame = level + 1, frame.f_back        # point at the user's line
        warnings.warn("ComplexHalf support is experimental and many operators don't support "
                      "it yet.", UserWarning, stacklevel=level)


def _is_c32(a):
    return isinstance(a, Tensor) and a._data.dtype == C32


_ARG_INFO: dict = {}         # op -> (Tensor argument indices, Tensor[] indices, dtype index)


def _arg_info(op):
    info = (tuple(i for i, is_list, _ in op.tensor_args if not is_list),
            tuple(i for i, is_list, _ in op.tensor_args if is_list),
            op.argnames.index("dtype") if "dtype" in op.argnames else None)
    if op in _CASTS:
        info = ((), (), None)
    _ARG_INFO[op] = info
    return info


def _involved(op, args):
    info = _ARG_INFO.get(op) or _arg_info(op)
    for i in info[0]:
        a = args[i]
        if type(a) is Tensor or isinstance(a, Tensor):
            d = a._data.dtype
            if d.kind == "V" and d == C32:
                return True
    for i in info[1]:
        a = args[i]
        if isinstance(a, (list, tuple)) and any(map(_is_c32, a)):
            return True
    k = info[2]
    return k is not None and args[k] is _dtype.complex32


def route(op, args, out):
    """The dispatcher's call once complex32 tensors exist."""
    if not _involved(op, args):
        return _next_call(op, args, out)
    f = op.functional
    name = f.public_name.rstrip("_") if f.public_name.endswith("_") and \
        not f.public_name.startswith("__") else f.public_name
    refused = REFUSED.get(op.public_name) or REFUSED.get(f.name) or REFUSED.get(name)
    if name == "matmul":
        refused = _matmul_refusal(args) or refused
    if refused is not None:
        _check_arguments(op, args)
        raise refused[0](refused[1])
    if f.name in _VIEWS_OF_PARTS:
        return _view_of_parts(op, args)
    if name in COMPOSED:                # the layer sees the ops they are made of
        return _next_call(op, args, out)
    if op.is_view:                      # NumPy moves the (real, imag) pairs as they are
        return _next_call(op, args, out)
    if name not in ALLOWED and not _casts_to_real(name, op, args):
        _check_arguments(op, args)
        raise NotImplementedError(f"\"{name}\" not implemented for 'ComplexHalf'")
    return _in_complex64(op, args, out)


def _matmul_refusal(args):
    """matmul names the kernel its operands' ranks pick (dot, addmv, addmm, bmm)."""
    a, b = args[0], args[1]
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return None
    if a.ndim == 1 and b.ndim == 1:
        return _ni("dot")
    if b.ndim == 1:
        return _ni("addmv_impl_cpu")
    if a.ndim >= 3 and b.ndim >= 3:
        return _ni("bmm")
    return _ni("addmm_impl_cpu_")


def _casts_to_real(name, op, args):
    if name not in CAST_TO_DTYPE or "dtype" not in op.argnames:
        return False
    d = args[op.argnames.index("dtype")]
    return d is not None and not d.is_complex


def _check_arguments(op, args):
    """torch checks an op's arguments (shapes, index dtypes) before its kernel refuses
    ComplexHalf: run the op on complex64 copies first, so that its own error comes first."""
    from ember._ops.unsigned import DTYPE_FIRST
    if op.functional.public_name in DTYPE_FIRST:
        return
    wide = [_widen(a) for a in args]
    if "dtype" in op.argnames and wide[op.argnames.index("dtype")] is _dtype.complex32:
        wide[op.argnames.index("dtype")] = _dtype.complex64
    from ember.autograd.grad_mode import no_grad
    with no_grad():
        try:
            _next_call(op, tuple(wide), None)
        except NotImplementedError:     # complex64's own refusal: ours comes instead
            pass


def _view_of_parts(op, args):
    from ember.autograd import graph
    from ember._state import state
    res = _make(_VIEWS_OF_PARTS[op.name](args[0]._data))
    graph.set_view(res, args[0], op, args)
    if args[0]._requires_grad and state.grad_enabled:
        graph.record(op, args, (res,))
    return res


def _widen(a):
    if _is_c32(a):
        return widen(a)
    if isinstance(a, (list, tuple)):
        return type(a)(_widen(x) for x in a)
    return a


def _wants_c32(op, args):
    """Is torch's result complex32 (and a real result float16)?"""
    if "dtype" in op.argnames:
        d = args[op.argnames.index("dtype")]
        if d is not None:
            return d is _dtype.complex32
    if op.promote in ("default", "int_to_float"):
        from ember._dispatch import _promote
        return _promote(op, args, None) == C32
    dts = []
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        for x in (a if is_list and isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor):
                dts.append(x._data.dtype)
    return C32 in dts and not any(d in _WIDER for d in dts)


def _narrow(res, want):
    if isinstance(res, Tensor):
        d = res._data.dtype
        if want and d == _C64:
            return narrow(res)
        if want and d == np.float32:
            return res.to(_dtype.float16)
        return res
    if isinstance(res, (tuple, list)):
        return type(res)(_narrow(r, want) for r in res)
    return res


def _in_complex64(op, args, out):
    want = _wants_c32(op, args)
    wide = [_widen(a) for a in args]
    if "dtype" in op.argnames and wide[op.argnames.index("dtype")] is _dtype.complex32:
        wide[op.argnames.index("dtype")] = _dtype.complex64
    self = args[0]
    if op.is_inplace and _is_c32(self):
        from ember.autograd import graph
        res = _next_call(op, tuple(wide), None)       # wrote into the complex64 copy
        self._data[...] = from_complex(res._data)
        graph.bump_version(self)
        return self
    if out is not None:
        if not _is_c32(out):
            return _next_call(op, tuple(wide), out)
        res = _narrow(_next_call(op, tuple(wide), None), want)
        out._data = np.ascontiguousarray(res._data)
        return out
    res = _next_call(op, tuple(wide), None)
    if want:
        warn_experimental()
    return _narrow(res, want)
