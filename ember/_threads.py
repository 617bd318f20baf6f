"""Intra-op thread settings (torch.set_num_threads / get_num_threads and the inter-op pair).

ember's parallelism is its own pool (``_kernels/split.py``: row-split GEMMs with NumPy's
OpenBLAS held at one thread, Note [one thread plan] in ``_kernels/numpy_blas.py``, and the
compiled kernels), onnxruntime's sessions, the BLAS (NumPy's and SciPy's OpenBLAS) and
scipy.fft's ``workers``; all follow ``get_num_threads``. ``set_num_threads(n)`` also sets
NumPy's OpenBLAS directly and the other BLAS pools through ``threadpoolctl`` (the optional
extra ``ember[threads]``; without it those keep their own setting and a warning says so). The inter-op setting sizes the pool that runs TorchScript's
``fork`` tasks (``ember/jit/_futures.py``); it is fixed once that pool starts.
"""
from __future__ import annotations

import os
import warnings

__all__ = ["get_num_threads", "set_num_threads", "get_num_interop_threads",
           "set_num_interop_threads"]


def _cpus():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _env_threads(cpus):
    """The default thread count as torch starts it: ``MKL_NUM_THREADS`` first (a value that
    is not a number or below 1 reads as 1; 0 or empty: unset), then ``OMP_NUM_THREADS``
    (the first of a list; not a positive number: unset), else the CPUs; at most the CPUs."""
    mkl = os.environ.get("MKL_NUM_THREADS", "").strip()
    if mkl and mkl != "0":
        try:
            return min(max(1, int(mkl.split(",")[0])), cpus)
        except ValueError:
            return 1
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    try:
        n = int(omp)
    except ValueError:
        n = 0
    return min(n, cpus) if n >= 1 else cpus


def _default_threads():
    """Threads when ``set_num_threads`` was not called (counted once)."""
    n = _settings.get("default")
    if n is None:
        n = _settings["default"] = _env_threads(_cpus())
    return n


_settings = {"threads": None, "interop": None, "limiter": None, "default": None}


def get_num_threads():
    """Threads ember's kernels may use (default: ``MKL_NUM_THREADS`` / ``OMP_NUM_THREADS``
    as torch reads them, else the CPUs this process may run on)."""
    n = _settings["threads"]
    return _default_threads() if n is None else n


def _positive(n, name):
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def set_num_threads(n):
    """Limit ember's pool, onnxruntime's sessions, the BLAS and the FFT to ``n`` threads."""
    _positive(n, "set_num_threads")
    from ember._kernels import numpy_blas
    numpy_blas.set_blas_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        warnings.warn("ember.set_num_threads: the BLAS thread pools are unchanged (limiting "
                      "them needs threadpoolctl: pip install 'ember[threads]'); FFT workers "
                      "follow the setting", RuntimeWarning, stacklevel=2)
    else:
        # importing scipy.linalg loads SciPy's BLAS so that its pool is limited too
        import scipy.linalg  # noqa: F401
        _settings["limiter"] = threadpool_limits(limits=n, user_api="blas")
    _settings["threads"] = n


def get_num_interop_threads():
    n = _settings["interop"]
    return _cpus() if n is None else n


def set_num_interop_threads(n):
    """Size of the inter-op pool (scripted ``jit.fork`` tasks); like torch, it can be set
    once, and not after parallel work has started."""
    _positive(n, "set_num_interop_threads")
    if _settings["interop"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _settings["interop"] = n
