"""Kernels of the numerical ops (``vander``, ``isin``, ``isclose``) and torch's broadcast
error message. NumPy only; the differentiable numerical ops (``diff``, ``gradient``,
``trapezoid``, ``dist``, ``renorm`` ...) are composites in ``ember/_ops/numeric.py``."""
import numpy as np

from ember import _dtype
from ember._kernels.util import broadcast_shape  # noqa: F401  (re-exported)

_TYPE_NAMES = _dtype.TYPE_NAMES


def type_name(dt):
    """torch's C++ ScalarType name of a NumPy dtype ("Float", "Long")."""
    return _TYPE_NAMES.get(np.dtype(dt).name, str(dt))


def vander(x, N=None, increasing=False):
    """Columns x^0 ... x^(N-1) (reversed unless ``increasing``); integers and bool give
    int64, as torch's cumprod-based implementation does."""
    if N is not None and (not isinstance(N, (int, np.integer)) or isinstance(N, bool)):
        raise TypeError(f"vander(): argument 'N' (position 2) must be int, not "
                        f"{type(N).__name__}")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dt = np.int64 if x.dtype.kind in "biu" else x.dtype
    out = np.empty((x.shape[0], n), dt)
    if n > 0:
        out[:, 0] = 1
        if n > 1:
            out[:, 1:] = x[:, None]
            np.multiply.accumulate(out[:, 1:], axis=1, out=out[:, 1:])
    if not increasing:
        out = np.ascontiguousarray(out[:, ::-1])
    return out


def isin(elements, test_elements, assume_unique=False, invert=False):
    """Whether each element is in ``test_elements`` (both already in the promoted dtype)."""
    if not isinstance(elements, np.ndarray) and not isinstance(test_elements, np.ndarray):
        raise TypeError(f"isin() received an invalid combination of arguments - got "
                        f"({type(elements).__name__}, {type(test_elements).__name__}), but "
                        f"expected one of:\n * (Tensor elements, Tensor test_elements)\n"
                        f" * (Number element, Tensor test_elements)\n"
                        f" * (Tensor elements, Number test_element)")
    test = np.asarray(test_elements).reshape(-1)
    return np.asarray(np.isin(elements, test, assume_unique=assume_unique, invert=invert))


def _fmt(v):
    """A double as C++ streams print it ("-1", "1e-05", "nan")."""
    return f"{float(v):g}"


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False, int_dtype=np.float32):
    """|a - b| <= atol + rtol * |b| (or a == b), torch's rules: same dtype required,
    non-negative tolerances, integers and bool compared in ``int_dtype`` (the default float)."""
    for name, pos, v in (("input", 1, a), ("other", 2, b)):
        if not isinstance(v, np.ndarray):
            raise TypeError(f"isclose(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(v).__name__}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"{type_name(a.dtype)} did not match {type_name(b.dtype)}")
    if not rtol >= 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {_fmt(rtol)}")
    if not atol >= 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {_fmt(atol)}")
    broadcast_shape(a.shape, b.shape)
    close = np.equal(a, b)
    if equal_nan and a.dtype.kind in "fcV":
        close |= np.isnan(a) & np.isnan(b)
    if rtol == 0 and atol == 0:
        return close
    if a.dtype.kind in "biu":
        a = a.astype(int_dtype)
        b = b.astype(int_dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        allowed = atol + np.abs(rtol * b)
        actual = np.abs(a - b)
        close |= np.isfinite(actual) & (actual <= allowed)
    return close
