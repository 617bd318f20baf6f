"""Intra-op thread settings (torch.set_num_threads / get_num_threads and the inter-op pair).

ember's parallelism is its BLAS (NumPy's and SciPy's OpenBLAS) and scipy.fft's ``workers``.
``set_num_threads(n)`` limits both: the BLAS pools through ``threadpoolctl`` (the optional
extra ``ember[threads]``; without it the BLAS keeps its own setting and a warning says so),
the FFT workers directly. The inter-op setting sizes the pool that runs TorchScript's
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


_settings = {"threads": None, "interop": None, "limiter": None}


def get_num_threads():
    """Threads ember's kernels may use (default: the CPUs this process may run on)."""
    n = _settings["threads"]
    return _cpus() if n is None else n


def _positive(n, name):
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{name} expects a positive integer")


def set_num_threads(n):
    """Limit the BLAS and FFT thread pools to ``n`` threads."""
    _positive(n, "set_num_threads")
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
