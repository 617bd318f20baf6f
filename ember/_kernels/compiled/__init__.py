"""Compiled (numba) kernels for the quantized hot paths, when the optional ``fast`` extra is
installed (``pip install ember[fast]``): one pass where NumPy needs one per rounding step.

Every kernel reproduces its NumPy counterpart's integers bit for bit (same float32 operations
in the same order, no fast-math, no fused multiply-add: tests/quantization/
test_compiled_kernels.py); the NumPy path stays, and runs when numba is absent, when the
environment sets ``EMBER_NO_NUMBA=1`` or after :func:`disable`.

numba is imported on first use, not with ember; kernels are compiled on first call and
cached on disk (``cache=True``), so later processes load them instead of compiling.
"""
from __future__ import annotations

import os

_state = {"enabled": os.environ.get("EMBER_NO_NUMBA", "") in ("", "0")}


def disable():
    """Use the NumPy kernels from now on (for tests and comparisons)."""
    _state["enabled"] = False


def enable():
    """Use the compiled kernels again (where numba is installed)."""
    _state["enabled"] = True


def switched_on():
    """The switch itself (:func:`disable`/:func:`enable`, ``EMBER_NO_NUMBA``), numba or not."""
    return _state["enabled"]


def enabled():
    """Whether the compiled kernels are in use (importing numba on the first call)."""
    return kernels() is not None


_modules: dict = {}


def _drop_stale_caches(here=None):
    """Note [stale kernel caches]: numba's on-disk cache checks only the file of the
    function it compiled, but a kernel compiles in what it calls from other modules
    (pool.py's wrappers inline layer_norm.py, softmax.py's rows inline attention.py's exp):
    after such a module changed, a cached caller would run its old code. So the caches of
    every module here are dropped together when any source here changed (a stamp of their
    sizes and modification times, beside the caches); a read-only install keeps its own."""
    here = here or os.path.dirname(os.path.abspath(__file__))
    cache = os.path.join(here, "__pycache__")
    try:
        names = sorted(n for n in os.listdir(here) if n.endswith(".py"))
        stamp = ";".join(f"{n}:{st.st_size}:{st.st_mtime_ns}" for n in names
                         for st in [os.stat(os.path.join(here, n))])
        path = os.path.join(cache, "ember_sources.stamp")
        if os.path.exists(path):
            with open(path) as f:
                if f.read() == stamp:
                    return
        for n in os.listdir(cache) if os.path.isdir(cache) else ():
            if n.endswith((".nbi", ".nbc")):
                os.remove(os.path.join(cache, n))
        os.makedirs(cache, exist_ok=True)
        with open(path + f".{os.getpid()}", "w") as f:
            f.write(stamp)
        os.replace(path + f".{os.getpid()}", path)
    except OSError:                     # another process's removal first, or read-only
        pass


def module(name):
    """The compiled-kernel module ``ember._kernels.compiled.<name>`` (imported, so numba
    loaded, on first use), or None when the kernels are switched off or numba is missing."""
    if not _state["enabled"]:
        return None
    mod = _modules.get(name)
    if mod is None:
        import importlib
        if not _modules:
            _drop_stale_caches()
        try:
            mod = importlib.import_module(f"ember._kernels.compiled.{name}")
        except ImportError:
            mod = False
        _modules[name] = mod
    return mod or None


def loaded(name):
    """The module ``name`` if it is already imported (numba loaded), else None: for small
    work, where loading numba would cost more than the kernel saves."""
    return _modules.get(name) or None if _state["enabled"] else None


def kernels():
    """The quantized hot-path kernels (ember._kernels.compiled.quantized), or None."""
    return module("quantized")


def norm_pool_kernels():
    """The compiled batch-norm and max-pool kernels (ember._kernels.compiled.norm_pool), or
    None."""
    return module("norm_pool")
