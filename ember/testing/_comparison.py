"""``assert_close``: torch.testing's comparison of tensors, NumPy arrays, Python scalars and
(nested) sequences / mappings of them, with torch's default tolerances and error texts."""
from __future__ import annotations

import cmath
import collections.abc
import warnings

import numpy as np

__all__ = ["assert_close", "assert_allclose"]


def _ember():
    import ember
    return ember


def _precisions():
    e = _ember()
    table = {e.float16: (1e-3, 1e-5), e.bfloat16: (1.6e-2, 1e-5),
             e.float32: (1.3e-6, 1e-5), e.float64: (1e-7, 1e-7),
             e.complex64: (1.3e-6, 1e-5), e.complex128: (1e-7, 1e-7)}
    c32 = getattr(e, "complex32", None)
    if c32 is not None:
        table[c32] = (1e-3, 1e-5)
    return table


class _ErrorMeta(Exception):
    """A comparison failure: the exception type, torch's message, and where in the nested
    input it happened (``id``: the path of indices / keys)."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type = type
        self.msg = msg
        self.id = id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += "\n\nThe failure occurred for item " + \
                    "".join(str([item]) for item in self.id)
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    pass


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) ^ (atol is None):
        raise _ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                         f"omitted, but got no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    table = _precisions()
    rtols, atols = zip(*[table.get(d, (0.0, 0.0)) for d in dtypes])
    return max(rtols), max(atols)


def _mismatch_msg(*, default_identifier, identifier=None, extra=None, abs_diff, abs_diff_idx=None,
                  atol, rel_diff, rel_diff_idx=None, rtol):
    """Header ("<what> are not equal/close!"), the optional extra line, then one line per
    difference kind, with its index when there are several elements and its tolerance
    unless exact equality was asked for."""
    exact = rtol == 0 and atol == 0
    what = default_identifier if identifier is None else \
        identifier(default_identifier) if callable(identifier) else identifier
    lines = [f"{what} are not {'equal' if exact else 'close'}!", ""]
    if extra:
        lines.append(extra.strip())
    for kind, diff, where, allowed in (("absolute", abs_diff, abs_diff_idx, atol),
                                       ("relative", rel_diff, rel_diff_idx, rtol)):
        line = f"{kind.title()} difference: {diff}" if where is None else \
            f"Greatest {kind} difference: {diff} at index {where}"
        lines.append(line if exact else f"{line} (up to {allowed} allowed)")
    return "\n".join(lines).strip()


def _scalar_mismatch_msg(actual, expected, *, rtol, atol):
    gap = abs(actual - expected)
    return _mismatch_msg(default_identifier="Scalars", rtol=rtol, atol=atol, abs_diff=gap,
                         rel_diff=gap / abs(expected) if expected != 0 else float("inf"),
                         extra=f"Expected {expected} but got {actual}.")


def _tensor_mismatch_msg(actual, expected, matches, *, rtol, atol, what="Tensor-likes"):
    e = _ember()
    shape = tuple(actual.shape)

    def unravel(flat):
        if not shape:
            return ()
        return tuple(int(i) for i in np.unravel_index(flat, shape))

    n = matches.numel()
    mismatches = n - int(matches.sum().item())
    extra = f"Mismatched elements: {mismatches} / {n} ({mismatches / n:.1%})"
    a = actual.flatten()
    b = expected.flatten()
    m = matches.flatten()
    if not a.dtype.is_floating_point and not a.dtype.is_complex:
        a = a.to(e.int64)
        b = b.to(e.int64)
    abs_diff = (a - b).abs()
    abs_diff[m] = 0
    max_abs, abs_idx = e.max(abs_diff, 0)
    rel_diff = abs_diff / b.abs()
    rel_diff[m] = 0
    max_rel, rel_idx = e.max(rel_diff, 0)
    return _mismatch_msg(default_identifier=what, extra=extra,
                         abs_diff=max_abs.item(), abs_diff_idx=unravel(int(abs_idx.item())),
                         atol=atol, rel_diff=max_rel.item(),
                         rel_diff_idx=unravel(int(rel_idx.item())), rtol=rtol)


# ---- pairs -----------------------------------------------------------------------------

def _compare_none(actual, expected, opts):
    if not (actual is None or expected is None):
        raise _Unsupported
    if not (actual is None and expected is None):
        raise _ErrorMeta(AssertionError, f"None mismatch: {actual} is not {expected}")


def _is_bool(x):
    return isinstance(x, (bool, np.bool_))


def _compare_bool(actual, expected, opts):
    if not (_is_bool(actual) and _is_bool(expected)):
        raise _Unsupported
    if bool(actual) is not bool(expected):
        raise _ErrorMeta(AssertionError,
                         f"Booleans mismatch: {bool(actual)} is not {bool(expected)}")


_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


def _number_type(x):
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, np.number):
        return type(x)
    for t in (int, float, complex):
        if isinstance(x, t):
            return t
    return None


def _number_dtype(x):
    e = _ember()
    if isinstance(x, np.number):
        x = x.item()
    for t, name in _NUMBER_DTYPES.items():
        if isinstance(x, t):
            return getattr(e, name)
    return e.float64


def _compare_number(actual, expected, opts):
    ta, tb = _number_type(actual), _number_type(expected)
    if ta is None or tb is None:
        raise _Unsupported
    a = actual.item() if isinstance(actual, np.number) else actual
    b = expected.item() if isinstance(expected, np.number) else expected
    rtol, atol = _tolerances([_number_dtype(a), _number_dtype(b)], opts["rtol"], opts["atol"])
    if opts["check_dtype"] and type(a) is not type(b):
        raise _ErrorMeta(AssertionError, f"The (d)types do not match: {type(a)} != "
                         f"{type(b)}.")
    if a == b:
        return
    if opts["equal_nan"] and cmath.isnan(a) and cmath.isnan(b):
        return
    abs_diff = abs(a - b)
    if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(b):
        return
    raise _ErrorMeta(AssertionError, _scalar_mismatch_msg(a, b, rtol=rtol, atol=atol))


def _compare_tensor_like(actual, expected, opts):
    e = _ember()
    kinds = (e.Tensor, np.ndarray)
    if not (isinstance(actual, kinds) and isinstance(expected, kinds)):
        raise _Unsupported
    if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
        raise _Unsupported
    if not opts["allow_subclasses"] and type(actual) is not type(expected):
        raise _ErrorMeta(TypeError, f"The input types do not match: {type(actual)} != "
                         f"{type(expected)}.")
    if isinstance(actual, np.ndarray):
        actual, expected = e.as_tensor(actual), e.as_tensor(expected)
    rtol, atol = _tolerances([actual.dtype, expected.dtype], opts["rtol"], opts["atol"])

    def check_attr(name, a, b, fmt=str):
        if a != b:
            raise _ErrorMeta(AssertionError, f"The values for attribute '{name}' do not "
                             f"match: {fmt(a)} != {fmt(b)}.")

    check_attr("shape", actual.shape, expected.shape, repr)
    if opts["check_device"]:
        check_attr("device", actual.device, expected.device)
    if opts["check_dtype"]:
        check_attr("dtype", actual.dtype, expected.dtype)
    if opts["check_layout"]:
        check_attr("layout", actual.layout, expected.layout)
    if opts["check_stride"]:
        check_attr("stride()", actual.stride(), expected.stride())

    actual = actual.detach()
    expected = expected.detach()
    what = "Tensor-likes"
    if actual.is_quantized and expected.is_quantized:   # compared by the values they stand for
        what = "Quantized tensor-likes"
        actual, expected = actual.dequantize(), expected.dequantize()
        rtol, atol = _tolerances([e.float32], opts["rtol"], opts["atol"])
    if actual.dtype != expected.dtype:
        dtype = e.promote_types(actual.dtype, expected.dtype)
        actual, expected = actual.to(dtype), expected.to(dtype)

    if actual.dtype == e.bool:
        matches = actual == expected
    else:
        matches = e.isclose(actual, expected, rtol=rtol, atol=atol,
                            equal_nan=opts["equal_nan"])
    if bool(matches.all().item()):
        return
    if actual.dim() == 0:
        msg = _scalar_mismatch_msg(actual.item(), expected.item(), rtol=rtol, atol=atol)
    else:
        msg = _tensor_mismatch_msg(actual, expected, matches, rtol=rtol, atol=atol, what=what)
    raise _ErrorMeta(AssertionError, msg)


_PAIRS = (_compare_none, _compare_bool, _compare_number, _compare_tensor_like)


def _is_sequence(x):
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, (str, bytes))


def _compare(actual, expected, opts, id=()):
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _ErrorMeta(AssertionError, "The length of the sequences mismatch: "
                             f"{len(actual)} != {len(expected)}", id=id)
        for i in range(len(actual)):
            _compare(actual[i], expected[i], opts, id + (i,))
        return
    if isinstance(actual, collections.abc.Mapping) and \
            isinstance(expected, collections.abc.Mapping):
        ka, kb = set(actual.keys()), set(expected.keys())
        if ka != kb:
            missing = kb - ka
            extra = ka - kb
            msg = "The keys of the mappings do not match:\n"
            if missing:
                msg += f"Missing keys in the actual mapping: {sorted(missing, key=repr)}\n"
            if extra:
                msg += f"Additional keys in the actual mapping: {sorted(extra, key=repr)}\n"
            raise _ErrorMeta(AssertionError, msg.strip(), id=id)
        keys = list(actual.keys())
        try:
            keys = sorted(keys)
        except TypeError:
            pass
        for k in keys:
            _compare(actual[k], expected[k], opts, id + (k,))
        return
    for pair in _PAIRS:
        try:
            pair(actual, expected, opts)
        except _Unsupported:
            continue
        except _ErrorMeta as err:
            if not err.id:
                err.id = id
            raise
        return
    raise _ErrorMeta(TypeError, "No comparison pair was able to handle inputs of type "
                     f"{type(actual)} and {type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that ``actual`` and ``expected`` are close (torch.testing.assert_close).

    Tensors (and NumPy arrays) must agree in shape, device, dtype and layout (and strides
    when ``check_stride``), and elementwise ``|actual - expected| <= atol + rtol *
    |expected|``; default tolerances follow the dtype (float32: rtol 1.3e-6, atol 1e-5;
    float64: 1e-7 / 1e-7; float16: 1e-3 / 1e-5; bfloat16: 1.6e-2 / 1e-5; integral and bool:
    exact). Python scalars, sequences and mappings are compared item by item. ``msg`` (a
    string, or a callable taking the generated message) replaces the failure message."""
    __tracebackhide__ = True
    opts = {name: value for name, value in locals().items()
            if name not in ("actual", "expected", "msg", "__tracebackhide__")}
    try:
        _compare(actual, expected, opts)
    except _ErrorMeta as err:
        # a custom msg replaces only comparison failures, not usage errors
        raise err.to_error(msg if err.type is AssertionError else None) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since torch 1.12: use ``assert_close``. Non-tensor inputs become tensors,
    ``expected`` takes ``actual``'s dtype, and device/dtype/stride are not checked."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    e = _ember()
    if not isinstance(actual, e.Tensor):
        actual = e.tensor(actual)
    if not isinstance(expected, e.Tensor):
        expected = e.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        table = {e.float16: (1e-3, 1e-3), e.float32: (1.3e-6, 1e-5),
                 e.float64: (1e-7, 1e-7)}
        rtol, atol = table.get(e.promote_types(actual.dtype, expected.dtype), (0.0, 0.0))
    assert_close(actual, expected, msg=msg or None, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, check_stride=False, check_device=True)
