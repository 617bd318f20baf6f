"""dtypes, type promotion, finfo/iinfo, default dtype and devices, checked against torch."""
from __future__ import annotations

import copy
import itertools
import pickle

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
         "float64", "complex32", "complex64", "complex128"]
PAIRS = list(itertools.product(NAMES, NAMES))


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


@pytest.fixture
def default_float64():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    yield
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


# ------------------------------------------------------------------------------ promotion

@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promote_types(a, b):
    assert repr(ember.promote_types(E(a), E(b))) == repr(torch.promote_types(T(a), T(b)))


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_can_cast(a, b):
    assert ember.can_cast(E(a), E(b)) == torch.can_cast(T(a), T(b))


def _tensors(name, ndim):
    shape = (2,) * ndim
    return ember.ones(shape, dtype=E(name)), torch.ones(shape, dtype=T(name))


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_result_type_tensors(a, b):
    for da, db in [(1, 1), (1, 0), (0, 1), (0, 0)]:
        ea, ta = _tensors(a, da)
        eb, tb = _tensors(b, db)
        expected = repr(torch.result_type(ta, tb))
        assert repr(ember.result_type(ea, eb)) == expected, (da, db)


SCALARS = [True, 2, -3, 2.5, 1 + 2j]


@pytest.mark.parametrize("name", NAMES)
def test_result_type_with_scalars(name):
    for ndim in (0, 1):
        et, tt = _tensors(name, ndim)
        for s in SCALARS:
            r = torch.result_type(tt, s)
            assert repr(ember.result_type(et, s)) == repr(r), (ndim, s)
            assert repr(ember.result_type(s, et)) == repr(torch.result_type(s, tt)), (ndim, s)


def test_result_type_scalars_only_and_errors():
    for a, b in itertools.product(SCALARS, SCALARS):
        assert repr(ember.result_type(a, b)) == repr(torch.result_type(a, b)), (a, b)
    with pytest.raises(TypeError, match="received an invalid combination of arguments"):
        ember.result_type(1, "a")


def test_result_type_follows_default_dtype(default_float64):
    assert ember.result_type(ember.tensor([1]), 1.0) is ember.float64
    assert ember.result_type(1, 1j) is ember.complex128


def test_promotion_matches_binary_ops():
    """The dtype result_type predicts is what arithmetic produces."""
    for a, b in [("int32", "float16"), ("uint8", "int8"), ("bool", "int16"), ("float32", "int64")]:
        ea, _ = _tensors(a, 1)
        eb, _ = _tensors(b, 1)
        assert (ea + eb).dtype is ember.result_type(ea, eb)


def test_python_types_as_dtypes():
    assert ember.promote_types(float, int) is ember.float64
    assert repr(torch.promote_types(float, int)) == "torch.float64"
    assert ember.tensor([1], dtype=float).dtype is ember.float64
    assert ember.tensor([1], dtype=int).dtype is ember.int64
    assert ember.tensor([1], dtype=bool).dtype is ember.bool
    assert ember.tensor([1], dtype=complex).dtype is ember.complex128
    assert ember.finfo(float).dtype == torch.finfo(float).dtype == "float64"


# ------------------------------------------------------------------------------ dtype objects

@pytest.mark.parametrize("name", NAMES)
def test_dtype_attributes(name):
    e, t = E(name), T(name)
    assert repr(e) == repr(t) == str(e)
    for attr in ("is_floating_point", "is_complex", "is_signed", "itemsize"):
        assert getattr(e, attr) == getattr(t, attr), attr
    assert e.abbr == t.abbr
    assert repr(e.to_real()) == repr(t.to_real())
    if e.is_floating_point and name not in ("float16",) or e.is_complex:
        assert repr(e.to_complex()) == repr(t.to_complex())
    elif not e.is_floating_point:
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for"):
            e.to_complex()
        with pytest.raises(RuntimeError, match="Unknown Complex ScalarType for"):
            t.to_complex()
    assert pickle.loads(pickle.dumps(e)) is e
    assert copy.deepcopy(e) is e
    assert isinstance(e, ember.dtype)


def test_dtype_aliases():
    for alias, name in [("float", "float32"), ("double", "float64"), ("half", "float16"),
                        ("cfloat", "complex64"), ("cdouble", "complex128"), ("short", "int16"),
                        ("int", "int32"), ("long", "int64")]:
        assert getattr(ember, alias) is E(name)
        assert getattr(torch, alias) is T(name)
    assert ember.float32 == ember.float and hash(ember.float32) == hash(ember.float)
    assert ember.float32 != ember.float64


# ------------------------------------------------------------------------------ finfo / iinfo

FLOATS = ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("name", FLOATS)
def test_finfo(name):
    e, t = ember.finfo(E(name)), torch.finfo(T(name))
    for f in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(e, f) == getattr(t, f), f
    assert repr(e) == repr(t)


@pytest.mark.parametrize("name", INTS)
def test_iinfo(name):
    e, t = ember.iinfo(E(name)), torch.iinfo(T(name))
    for f in ("bits", "max", "min", "dtype"):
        assert getattr(e, f) == getattr(t, f), f
    assert repr(e) == repr(t)


def test_finfo_iinfo_errors_and_defaults(default_float64):
    assert ember.finfo().dtype == torch.finfo().dtype == "float64"
    assert ember.finfo(ember.float32) == ember.finfo(ember.complex64)
    for bad in (ember.int32, ember.bool):
        with pytest.raises(TypeError, match="torch.finfo\\(\\) requires a floating point"):
            ember.finfo(bad)
    with pytest.raises(TypeError, match="torch.iinfo\\(\\) requires an integer input type"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError, match="torch.bool is not supported by torch.iinfo"):
        torch.iinfo(torch.bool)


# ------------------------------------------------------------------------------ default dtype

def test_default_dtype_effects(default_float64):
    assert ember.get_default_dtype() is ember.float64
    cases = [lambda m: m.tensor(1.0), lambda m: m.tensor([1, 2.5]), lambda m: m.tensor(1j),
             lambda m: m.arange(3.0), lambda m: m.arange(0, 1, 0.5), lambda m: m.zeros(2),
             lambda m: m.ones(1), lambda m: m.full((2,), 1.5), lambda m: m.full((2,), 1j),
             lambda m: m.linspace(0, 1, 3), lambda m: m.rand(2), lambda m: m.randn(2),
             lambda m: m.eye(2), lambda m: m.tensor([]), lambda m: m.arange(3),
             lambda m: m.tensor([1, 2]) / 2, lambda m: m.empty(1)]
    for i, f in enumerate(cases):
        assert repr(f(ember).dtype) == repr(f(torch).dtype), i


def test_set_default_dtype_errors():
    for bad, tbad in [(ember.int64, torch.int64), (ember.complex64, torch.complex64)]:
        with pytest.raises(TypeError, match="only floating-point types are supported as the "
                                            "default type"):
            ember.set_default_dtype(bad)
        with pytest.raises(TypeError, match="only floating-point types are supported"):
            torch.set_default_dtype(tbad)
    with pytest.raises(TypeError, match="invalid dtype object"):
        ember.set_default_dtype(float)
    assert ember.get_default_dtype() is ember.float32


def test_default_dtype_half(request):
    try:
        ember.set_default_dtype(ember.float16)
        torch.set_default_dtype(torch.float16)
        assert repr(ember.tensor([1.5])) == repr(torch.tensor([1.5]))
        assert ember.tensor(1.5).dtype is ember.float16
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


# ------------------------------------------------------------------------------ devices

DEVICE_STRINGS = ["cpu", "cuda", "cuda:0", "cuda:3", "cpu:0", "meta", "mps", "xpu:1"]


@pytest.mark.parametrize("s", DEVICE_STRINGS)
def test_device_objects(s):
    e, t = ember.device(s), torch.device(s)
    assert repr(e) == repr(t)
    assert str(e) == str(t)
    assert e.type == t.type and e.index == t.index
    assert e == ember.device(s) and hash(e) == hash(ember.device(s))
    assert pickle.loads(pickle.dumps(e)) == e


def test_device_constructors_and_equality():
    assert ember.device("cuda", 1) == ember.device("cuda:1")
    assert repr(ember.device("cuda", 1)) == repr(torch.device("cuda", 1))
    assert ember.device("cuda") != ember.device("cuda:0")
    assert ember.device(ember.device("cuda:2")) == ember.device("cuda:2")
    assert ember.device(type="cuda", index=3).index == 3
    # like torch, a device never equals a string
    assert (ember.device("cpu") == "cpu") == (torch.device("cpu") == "cpu") is False
    assert f"{ember.device('cuda:1')}" == "cuda:1"


@pytest.mark.parametrize("arg,exc,msg", [
    ("foo", RuntimeError, "Expected one of cpu, cuda, ipu, xpu"),
    ("CUDA", RuntimeError, "Expected one of cpu, cuda"),
    ("cuda:x", RuntimeError, "Invalid device string: 'cuda:x'"),
    ("cuda:-1", RuntimeError, "Invalid device string: 'cuda:-1'"),
    ("cuda: 0", RuntimeError, "Invalid device string"),
    (None, TypeError, "received an invalid combination of arguments"),
    (1.5, TypeError, "received an invalid combination of arguments"),
])
def test_device_errors(arg, exc, msg):
    with pytest.raises(exc, match=msg):
        ember.device(arg)
    with pytest.raises(exc, match=msg):
        torch.device(arg)


def test_device_index_errors():
    with pytest.raises(RuntimeError, match="must not include an index"):
        ember.device("cuda:0", 1)
    with pytest.raises(RuntimeError, match="Device index must not be negative"):
        ember.device("cuda", -1)


def test_tensor_device_and_missing_backends():
    x = ember.ones(2)
    assert x.device == ember.device("cpu") and repr(x.device) == "device(type='cpu')"
    assert not x.is_cuda and x.is_cpu
    assert x.to("cpu") is x and x.cpu() is x
    assert x.to(ember.device("cpu"), ember.float64).dtype is ember.float64
    for call in [lambda: x.to("cuda"), lambda: x.cuda(), lambda: x.to("cuda:1"),
                 lambda: ember.zeros(2, device="cuda"), lambda: ember.tensor([1], device="cuda"),
                 lambda: ember.arange(3, device="cuda"), lambda: ember.rand(2, device="cuda"),
                 lambda: ember.ones_like(x, device="cuda")]:
        with pytest.raises(RuntimeError, match="no backend for device 'cuda"):
            call()
    with pytest.raises(RuntimeError, match="no backend for device 'mps'"):
        x.to("mps")
    assert ember.zeros(2, device=ember.device("cpu")).device.type == "cpu"
    with ember.device("cpu"):
        assert ember.zeros(1).device.type == "cpu"
    with pytest.raises(RuntimeError, match="no backend"):
        with ember.device("cuda"):
            pass
