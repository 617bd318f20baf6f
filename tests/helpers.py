"""Conversions between NumPy samples, ember tensors and torch tensors for the tests."""
from __future__ import annotations

import numpy as np

import ember

try:
    import torch
except ImportError:  # the oracle is optional for the ember-only tests
    torch = None


def to_ember(x, requires_grad=False):
    if isinstance(x, np.ndarray):
        t = ember.from_numpy(x.copy() if not x.flags.writeable else _own(x))
        if requires_grad and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t
    if isinstance(x, list) and x and all(isinstance(a, np.ndarray) for a in x):
        return [to_ember(a, requires_grad) for a in x]
    if isinstance(x, tuple) and x and all(isinstance(a, np.ndarray) for a in x):
        return tuple(to_ember(a, requires_grad) for a in x)
    return x


def _own(x):
    """A copy keeping the strides of ``x`` (so non-contiguous samples stay non-contiguous)."""
    if x.flags.c_contiguous or x.ndim == 0:
        return x.copy()
    y = np.copy(x, order="K")          # keeps a transposed layout transposed
    if not y.flags.c_contiguous:
        return y
    base = np.repeat(np.ascontiguousarray(x)[..., None], 2, axis=-1)
    return base[..., 0]


def to_torch(x, requires_grad=False):
    if isinstance(x, np.ndarray):
        t = torch.from_numpy(_own(x))
        if requires_grad and (t.is_floating_point() or t.is_complex()):
            t.requires_grad_(True)
        return t
    if isinstance(x, list) and x and all(isinstance(a, np.ndarray) for a in x):
        return [to_torch(a, requires_grad) for a in x]
    if isinstance(x, tuple) and x and all(isinstance(a, np.ndarray) for a in x):
        return tuple(to_torch(a, requires_grad) for a in x)
    if isinstance(x, ember.dtype):
        return getattr(torch, x.name)
    return x


def to_numpy(r):
    if isinstance(r, ember.Tensor):
        return r.detach()._data
    if torch is not None and isinstance(r, torch.Tensor):
        return r.detach().numpy()
    return np.asarray(r)


def assert_close(actual, expected, atol=1e-5, rtol=1.3e-6, check_dtype=False, msg=""):
    a, e = to_numpy(actual), to_numpy(expected)
    assert a.shape == e.shape, f"{msg} shape {a.shape} != {e.shape}"
    if check_dtype:
        assert a.dtype == e.dtype, f"{msg} dtype {a.dtype} != {e.dtype}"
    if a.dtype.kind in "biu" and e.dtype.kind in "biu" or a.dtype == bool:
        np.testing.assert_array_equal(a, e, err_msg=msg)
    else:
        np.testing.assert_allclose(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                   e, atol=atol, rtol=rtol, equal_nan=True, err_msg=msg)


_TV_LIBS = []


def import_torchvision():
    """torchvision (the vision tests' oracle), or skip. The local index's torchvision wheels
    are CUDA builds; beside a CPU-only torch their C++ ops cannot load and the import fails at
    the nms fake registration: those schemas are defined here so the pure-Python parts
    (transforms, models, box ops, the Python roi_align) import."""
    import sys

    import pytest
    if torch is None:
        pytest.skip("torch not installed")
    try:
        import torchvision
        return torchvision
    except ImportError:
        pytest.skip("torchvision not installed")
    except RuntimeError as e:
        if "torchvision::" not in str(e):
            raise
    for k in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[k]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        try:
            lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:
            pass
    _TV_LIBS.append(lib)
    import torchvision
    return torchvision


def outcome(lib, fn):
    """(class name, text) of what ``fn(lib)`` raises, or ("OK", repr of its result)."""
    try:
        r = fn(lib)
    except Exception as e:      # noqa: BLE001 - the class is what is compared
        return type(e).__name__, str(e)
    return "OK", repr(r)


def assert_same_outcome(fn, raises=True):
    """``fn(ember)`` raises what ``fn(torch)`` raises, class and text (with ``raises``, torch
    must raise), or both return the same repr."""
    want = outcome(torch, fn)
    if raises:
        assert want[0] != "OK", want          # the case is an error in torch
    assert outcome(ember, fn) == want


def compiled_kernels(param):
    """Body of a fixture parametrized over ("numpy", "numba"): ember's compiled kernels
    switched off or on for one test (numba's absence skips the "numba" case), then the
    switch restored."""
    import pytest
    from ember._kernels import compiled
    if param == "numba":
        pytest.importorskip("numba")
    was = compiled.switched_on()
    (compiled.enable if param == "numba" else compiled.disable)()
    try:
        yield param
    finally:
        (compiled.enable if was else compiled.disable)()
