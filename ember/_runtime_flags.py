"""Small top-level torch functions and flags: the warn-always switch, flush-denormal mode,
anomaly mode as a function, build facts (``has_lapack``...), the ``sym_*`` helpers (on
plain Python numbers, as torch's are outside tracing), torch's removed pre-1.9 linear
algebra names with their errors, and aliases (``GradScaler``, ``OutOfMemoryError``,
``to_dlpack``, ``fork``/``wait``)."""
from __future__ import annotations

import builtins
import math
import os
import sys
import warnings

__all__ = ["set_warn_always", "is_warn_always_enabled", "set_flush_denormal",
           "set_anomaly_enabled", "has_lapack", "has_mkl", "has_openmp", "has_spectral",
           "newaxis", "legacy_contiguous_format", "is_distributed", "init_num_threads",
           "sym_int", "sym_float", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_ite",
           "sym_sum", "lstsq", "solve", "eig", "symeig", "matrix_rank", "GradScaler",
           "OutOfMemoryError", "to_dlpack", "fork", "wait"]

# Note [floating-point warnings]: torch's kernels never warn about overflow, invalid or
# divide-by-zero results (inf and nan just come out). NumPy's ufuncs do, as RuntimeWarnings
# attributed to the Python line that called them, so ember's kernels would print
# "overflow encountered in multiply" where torch prints nothing. An np.errstate around every
# kernel costs ~1 us a call; a warnings filter costs nothing until a warning is raised. It
# matches the modules ember's kernels run in: ember's own, the generated op fronts (no
# module name: "<string>") and NumPy's Python wrappers they call (np.sum -> fromnumeric);
# a user's direct NumPy arithmetic keeps warning as before, and a filter the user installs
# later (e.g. simplefilter("always")) takes precedence.
warnings.filterwarnings("ignore", r"(overflow|underflow|invalid value|divide by zero) "
                        r"encountered", RuntimeWarning,
                        r"(ember(\.|$)|numpy\._core\.|<string>$)")

has_lapack = True           # SciPy's LAPACK
has_spectral = True         # NumPy / SciPy FFTs
has_mkl = False
has_openmp = False          # ember's threads are its own pool and OpenBLAS's
newaxis = None

_flags = {"warn_always": False}


def _bool_arg(value, what):
    if not isinstance(value, bool):
        raise RuntimeError(f"{what} expects a bool, but got {type(value).__name__}")
    return value


def set_warn_always(b):
    """Warnings torch gives once per process are given every time while this is on."""
    _flags["warn_always"] = _bool_arg(b, "setWarnOnlyOnce")


def is_warn_always_enabled():
    return _flags["warn_always"]


_warned = set()


_EMBER_DIR = os.path.dirname(os.path.abspath(__file__))


def user_stacklevel():
    """``stacklevel`` for a ``warnings.warn`` in the caller that names the innermost line
    outside ember (where torch's C++ warnings point: the user's call)."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith((_EMBER_DIR, "<ember")):
        f, level = f.f_back, level + 1
    return level


def warn_once(key, message, category=UserWarning, stacklevel=3):
    """torch's once-a-process warnings (TORCH_WARN_ONCE): ``message`` the first time ``key``
    is seen, every time while ``set_warn_always(True)``."""
    if key in _warned and not _flags["warn_always"]:
        return
    _warned.add(key)
    warnings.warn(message, category, stacklevel=stacklevel)


def set_flush_denormal(mode):
    """torch sets the CPU's flush-to-zero / denormals-are-zero bits and returns True where it
    could. NumPy's kernels run with the process's floating-point environment untouched, so
    the request is accepted (True) and denormals keep their IEEE values."""
    _bool_arg(mode, "flush_denormal")
    return True


def set_anomaly_enabled(enabled, check_nan=True):
    """Anomaly mode on or off (``autograd.set_detect_anomaly`` as a plain call)."""
    from ember.autograd import set_detect_anomaly
    set_detect_anomaly(enabled, check_nan)


def _contiguous():
    import ember
    return ember.contiguous_format


def __getattr__(name):
    if name == "legacy_contiguous_format":
        return _contiguous()
    if name == "GradScaler":                 # torch.GradScaler is torch.amp.GradScaler
        from ember.amp import GradScaler
        return GradScaler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_distributed(input):
    """False: ember's tensors live in one process."""
    return False


def init_num_threads():
    """torch initialises its OpenMP pool per thread; ember's pool starts on first use."""


# ------------------------------------------------------------------ symbolic-number helpers

def _floaty(*values):
    return builtins.any(isinstance(v, float) for v in values)


def sym_int(a):
    """int(a) (toward zero)."""
    return int(a)


def sym_float(a):
    return float(a)


def sym_max(a, b):
    """max(a, b), a float when either is one."""
    r = builtins.max(a, b)
    return float(r) if _floaty(a, b) else r


def sym_min(a, b):
    r = builtins.min(a, b)
    return float(r) if _floaty(a, b) else r


def sym_not(a):
    return not a


def sym_sqrt(a):
    return math.sqrt(a)


def sym_ite(b, t, f):
    """``t if b else f``."""
    return t if b else f


def sym_sum(args):
    return builtins.sum(args)


# ------------------------------------------------------------------ removed in torch 1.9+

_REMOVED = "This function was deprecated since version 1.9 and is now removed. "


def lstsq(input, A, *, out=None):
    raise RuntimeError(_REMOVED + "`torch.lstsq` is deprecated in favor of "
                       "`torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed arguments and "
                       "does not return the QR decomposition in the returned tuple (although "
                       "it returns other information about the problem).")


def solve(input, A, *, out=None):
    raise RuntimeError(_REMOVED + "`torch.solve` is deprecated in favor of "
                       "`torch.linalg.solve`. `torch.linalg.solve` has its arguments reversed "
                       "and does not return the LU factorization.")


def eig(input, eigenvectors=False, *, out=None):
    raise RuntimeError(_REMOVED + "`torch.linalg.eig` returns complex tensors of dtype "
                       "`cfloat` or `cdouble` rather than real tensors mimicking complex "
                       "tensors.\n\nL, _ = torch.eig(A) should be replaced with:\n"
                       "L_complex = torch.linalg.eigvals(A)")


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(_REMOVED + "The default behavior has changed from using the upper "
                       "triangular portion of the matrix by default to using the lower "
                       "triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
                       "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')")


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(_REMOVED + "\nPlease use the `torch.linalg.matrix_rank` function "
                       "instead. The parameter 'symmetric' was renamed in "
                       "`torch.linalg.matrix_rank()` to 'hermitian'.")


# ------------------------------------------------------------------ aliases

def _alias(module, name):
    def get(*args, **kwargs):
        import importlib
        return getattr(importlib.import_module(module), name)(*args, **kwargs)
    get.__name__ = name
    get.__doc__ = f"``{module}.{name}``."
    return get


class OutOfMemoryError(RuntimeError):
    """An allocation failed (ember raises it where NumPy runs out of memory)."""


to_dlpack = _alias("ember.utils.dlpack", "to_dlpack")
fork = _alias("ember.jit", "fork")
wait = _alias("ember.jit", "wait")


