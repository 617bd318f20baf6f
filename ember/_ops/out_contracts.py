"""torch's per-op ``out=`` contracts, where they differ from the one cast rule of
``_dispatch._copy_out`` (a result may be written into an ``out=`` of a higher category).

Each contract is ``check(op, result, out)``, set as ``op.check_out`` on the op records named
here and called by ``_write_out`` before anything is written; it raises torch's error.
Families: an exact dtype (in each op's wording), a bool result, a fixed index dtype, torch
fronts without ``out=`` (TypeError from its argument parser), a tuple of tensors, cat's
TypeError, and kernels that run in the out dtype (nansum's; cumsum's bool).
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._ops.registry import FUNCTIONS

# c10's spelling of a dtype in "Expected out tensor to have dtype float, but got double"
_CPP = {"Float": "float", "Double": "double", "Long": "long int", "Int": "int",
        "Short": "short int", "Char": "signed char", "Byte": "unsigned char", "Bool": "bool",
        "Half": "c10::Half", "BFloat16": "c10::BFloat16",
        "ComplexFloat": "c10::complex<float>", "ComplexDouble": "c10::complex<double>"}


def _name(a):
    return _dtype.scalar_type_name(a._data.dtype)


def _differ(result, out):
    return out._data.dtype != result._data.dtype


def _found(op, result, out):
    if _differ(result, out):
        raise RuntimeError(f"Found dtype {_name(out)} but expected {_name(result)}")


def _expected(op, result, out):
    if _differ(result, out):
        r, o = _name(result), _name(out)
        raise RuntimeError(f"Expected out tensor to have dtype {_CPP.get(r, r)}, but got "
                           f"{_CPP.get(o, o)} instead")


def _exact(message):
    """Same dtype required; ``message`` formatted with R (result) and O (out) names."""
    def check(op, result, out):
        if _differ(result, out):
            r, o = _name(result), _name(out)
            raise RuntimeError(message.format(R=r, O=o, r=_CPP.get(r, r), o=_CPP.get(o, o)))
    return check


def _bool_result(message, uint8_too=False):
    ok = (np.bool_, np.uint8) if uint8_too else (np.bool_,)

    def check(op, result, out):
        if out._data.dtype.type not in ok:
            raise RuntimeError(message.format(name=op.public_name, O=_name(out)))
    return check


def _no_out(op, result, out):
    raise TypeError(f"{op.public_name}() got an unexpected keyword argument 'out'")


def _no_out_overload(op, result, out):
    raise TypeError(f"{op.public_name}() received an invalid combination of arguments - got "
                    f"(Tensor, out=Tensor)")


def _tuple_out(op, result, out):
    if not isinstance(out, (tuple, list)):
        raise TypeError(f"{op.public_name}(): argument 'out' must be tuple of Tensors, not "
                        f"{type(out).__name__}")


def _cat_cast(op, result, out):
    if not _dtype.can_cast(_dtype.from_numpy_dtype(result._data.dtype),
                           _dtype.from_numpy_dtype(out._data.dtype)):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_name(out)}")


def _kernel_in_out_dtype(kernel, kinds):
    """A floating result's kernel runs in the out dtype: NotImplementedError for a kind it
    lacks (integer inputs are cast as usual)."""
    def check(op, result, out):
        if result._data.dtype.kind in "fcV" and out._data.dtype.kind in kinds:
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_name(out)}\'')
    return check


CONTRACTS = {
    **dict.fromkeys(["abs", "absolute", "ceil", "floor", "frac", "fix", "trunc", "neg",
                     "negative", "sgn", "sign", "conj_physical", "lerp"], _found),
    **dict.fromkeys(["_log_softmax_backward_data", "alias_copy", "argmax", "argmin", "cross",
                     "detach_copy", "diag", "diagonal_copy", "expand_copy", "log_softmax",
                     "msort", "renorm", "select_copy", "slice_copy", "slice_scatter",
                     "softmax", "squeeze_copy", "t_copy", "transpose_copy", "tril", "triu",
                     "unfold_copy", "unsqueeze_copy"], _expected),
    **dict.fromkeys(["all", "any"], _bool_result(
        "{name} only supports bool tensor for result, got: {O}", uint8_too=True)),
    **dict.fromkeys(["isneginf", "isposinf", "signbit"],
                    _bool_result("{name} does not support non-boolean outputs.")),
    **dict.fromkeys(["amax", "amin"], _exact(
        "Expected the dtype for input and out to match, but got {R} for input's dtype and "
        "{O} for out's dtype.")),
    "hash_tensor": _exact("Expected result to be of dtype uint64, but got {O}"),
    "heaviside": _exact("heaviside is not yet implemented for tensors with different dtypes."),
    "histc": _exact("torch.histogram: input tensor and hist tensor should have the same "
                    "dtype, but got input {r} and hist {o}"),
    "inner": _exact("tensordot: Expected the output tensor to have dtype {R}, but got an "
                    "output tensor with dtype {O}"),
    "logcumsumexp": _exact("expected scalar_type {R} but found {O}"),
    "multinomial": _exact("multinomial expects Long tensor out, got: {O}"),
    "nan_to_num": _exact("nan_to_num: dtype of out: {O} should be same as input: {R}"),
    "narrow_copy": _exact("Expected self.dtype() == output.dtype() to be true, but got false."),
    "nonzero_static": _exact("nonzero_static: Expected out tensor to have scalar type Long but "
                             "got scalar type{O}"),
    "searchsorted": _exact("torch.searchsorted(): output tensor's dtype is wrong, it can only "
                           "be Int(int32) or Long(int64) depending on whether out_int32 flag "
                           "is True, but we got output tensor's dtype {O}"),
    **dict.fromkeys(["_safe_softmax", "_sample_dirichlet", "_softmax_backward_data",
                     "_standard_gamma", "_standard_gamma_grad", "clone", "diag_embed", "flip",
                     "isfinite", "isinf", "isnan", "isreal", "poisson", "relu", "roll"],
                    _no_out),
    "count_nonzero": _no_out_overload,
    **dict.fromkeys(["split_copy", "unbind_copy"], _tuple_out),
    **dict.fromkeys(["column_stack", "dstack", "hstack", "vstack", "_chunk_cat"], _cat_cast),
    **{n: _kernel_in_out_dtype("nansum_cpu", "biu") for n in ("nansum", "nanmean")},
    "cumsum": _kernel_in_out_dtype("cumsum_out_cpu", "b"),
    "cumprod": _kernel_in_out_dtype("cumprod_out_cpu", "b"),
}


def install():
    """Set ``check_out`` on the op record behind each public function named above (an
    alias shares its op and its contract)."""
    for name, check in CONTRACTS.items():
        op = getattr(FUNCTIONS.get(name), "_op", None)
        if op is not None:
            op.check_out = check
