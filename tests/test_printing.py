"""Tensor printing: ``repr`` must equal torch 2.13's, character for character."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def _pair(arr, dtype=None):
    """The same tensor in ember and torch, from a NumPy array (or nested list)."""
    arr = np.asarray(arr)
    if dtype is not None:
        e = ember.from_numpy(arr.astype(np.float32) if dtype == "bfloat16" else arr.copy())
        t = torch.from_numpy(arr.astype(np.float32) if dtype == "bfloat16" else arr.copy())
        if dtype == "bfloat16":
            e, t = e.to(ember.bfloat16), t.to(torch.bfloat16)
        return e, t
    return ember.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def _check(arr, dtype=None):
    e, t = _pair(arr, dtype)
    assert repr(e) == repr(t), f"\nember: {e!r}\ntorch: {t!r}"
    assert str(e) == str(t)


RNG = np.random.default_rng(1234)

FLOAT_CASES = {
    "simple": [1.0, 2.0, 3.0],
    "fractions": [1.5, -2.25, 3.125],
    "precision": [0.123456789, 1.0, -2.5],
    "small": [1e-5, 2e-5, 3.0],
    "big": [1e9, 1.0, 2.0],
    "range": [1.0, 2000.0],
    "ints_sci": [1.0, 1e10],
    "neg_zero": [-0.0, 0.0, 1.0],
    "nan_inf": [math.nan, math.inf, -math.inf, 1.5],
    "only_nan": [math.nan, math.nan],
    "only_inf": [math.inf, -math.inf],
    "zeros": [0.0, 0.0],
    "int_mode_nan": [1.0, math.nan, 2.0],
    "tiny": [1e-30, 1e-29],
    "mixed_sign": [-1.0, 1.0, -123.5],
    "0d": 3.5,
    "0d_int_valued": 3.0,
    "0d_neg": -0.25,
    "0d_nan": math.nan,
    "0d_big": 1.5e12,
    "matrix": [[1.0, 2.5], [-3.0, 4.0]],
    "3d": np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 7,
    "4d": np.arange(48, dtype=np.float64).reshape(2, 2, 3, 4) - 20,
    "wrap": np.linspace(-5, 5, 40),
    "wrap_2d": np.linspace(-5, 5, 60).reshape(3, 20),
    "random": RNG.standard_normal((5, 7)),
    "random_big": RNG.standard_normal((4, 6)) * 1e6,
    "random_sci": RNG.standard_normal(12) * 1e-6,
    "summarize_1d": np.arange(2000, dtype=np.float64) / 3,
    "summarize_2d": RNG.standard_normal((100, 50)),
    "summarize_3d": RNG.standard_normal((20, 10, 8)),
    "summarize_tall": RNG.standard_normal((1001, 1)),
    "summarize_wide": RNG.standard_normal((2, 600)),
    "empty_rows": np.zeros((3, 0)),
    "empty": np.zeros((0,)),
    "empty_3d": np.zeros((2, 0, 4)),
    "one": [7.0],
    "single_row": [[1.0, 2.0, 3.0]],
    "long_int_valued": np.arange(30, dtype=np.float64) * 1000,
}


@pytest.mark.parametrize("name", list(FLOAT_CASES))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_repr(name, dtype):
    _check(np.asarray(FLOAT_CASES[name], dtype=dtype))


@pytest.mark.parametrize("name", ["simple", "fractions", "small", "nan_inf", "matrix", "random",
                                  "summarize_2d", "0d", "wrap"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_repr(name, dtype):
    arr = np.asarray(FLOAT_CASES[name], dtype=np.float64)
    if dtype == "float16":
        _check(arr.astype(np.float16))
    else:
        _check(arr, "bfloat16")


INT_CASES = {
    "simple": [1, 2, 3],
    "negative": [-1, 20, -300],
    "0d": 5,
    "0d_neg": -7,
    "matrix": [[1, 22], [333, -4444]],
    "summarize": np.arange(5000).reshape(50, 100),
    "wrap": np.arange(100) * 12345,
    "empty": np.zeros((0,), np.int64),
    "empty_2d": np.zeros((0, 2), np.int64),
    "big": [2 ** 62, -2 ** 62],
}


@pytest.mark.parametrize("name", list(INT_CASES))
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_int_repr(name, dtype):
    arr = np.asarray(INT_CASES[name])
    if dtype != "int64":
        if name == "big":
            pytest.skip("out of range")
        arr = arr.astype(dtype)
    _check(arr)


@pytest.mark.parametrize("case", [[True, False], [True, True], [[True], [False]], False,
                                  np.ones(1500, bool), np.zeros((0,), bool)])
def test_bool_repr(case):
    _check(np.asarray(case, dtype=bool))


COMPLEX_CASES = {
    "simple": [1 + 2j],
    "two": [1 + 2j, 3 - 1j],
    "neg_zero_imag": [complex(1, -0.0), complex(-2, 0.0)],
    "fractions": [0.5 + 0.25j, -1.125 - 3j],
    "sci": [1e-6 + 1e6j, 2 + 3j],
    "nan": [complex(math.nan, 1), complex(1, math.inf)],
    "0d": 1 - 1j,
    "matrix": [[1 + 1j, 2], [3j, -4 - 4j]],
    "summarize": np.arange(3000).reshape(30, 100) * (1 + 0.5j),
    "wrap": np.linspace(0, 10, 30) * (1 - 2j),
}


@pytest.mark.parametrize("name", list(COMPLEX_CASES))
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_repr(name, dtype):
    _check(np.asarray(COMPLEX_CASES[name], dtype=dtype))


def test_noncontiguous_and_views():
    a = np.arange(24, dtype=np.float32).reshape(4, 6) / 3
    e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    for fe, ft in [(lambda x: x.transpose(0, 1), lambda x: x.transpose(0, 1)),
                   (lambda x: x[:, ::2], lambda x: x[:, ::2]),
                   (lambda x: x[1], lambda x: x[1]),
                   (lambda x: x[2, 3], lambda x: x[2, 3])]:
        assert repr(fe(e)) == repr(ft(t))


def test_requires_grad_and_grad_fn():
    e = ember.tensor([1.0, 2.0], requires_grad=True)
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(e) == repr(t) == "tensor([1., 2.], requires_grad=True)"
    assert repr(e * 2) == repr(t * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(e + 1) == repr(t + 1) == "tensor([2., 3.], grad_fn=<AddBackward0>)"
    assert repr(e.sum()) == repr(t.sum()) == "tensor(3., grad_fn=<SumBackward0>)"
    ed = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    td = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    assert repr(ed) == repr(td) == "tensor([1.], dtype=torch.float64, requires_grad=True)"
    # a long line pushes the suffix onto a new line
    e = ember.arange(14.0, requires_grad=True) / 3
    t = torch.arange(14.0, requires_grad=True) / 3
    assert repr(e) == repr(t)
    assert repr(e.detach()) == repr(t.detach())


def test_dtype_suffix_rules():
    for name in ["float32", "float64", "float16", "int64", "int32", "uint8", "bool",
                 "complex64", "complex128", "bfloat16", "int8", "int16"]:
        e = ember.ones(2, dtype=getattr(ember, name))
        t = torch.ones(2, dtype=getattr(torch, name))
        assert repr(e) == repr(t), name
        e0 = ember.ones(0, dtype=getattr(ember, name))
        t0 = torch.ones(0, dtype=getattr(torch, name))
        assert repr(e0) == repr(t0), name


def test_default_dtype_changes_suffix():
    try:
        ember.set_default_dtype(ember.float64)
        torch.set_default_dtype(torch.float64)
        for vals in ([1.5, 2.0], [1j]):
            assert repr(ember.tensor(vals)) == repr(torch.tensor(vals))
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == \
            repr(torch.tensor([1.5], dtype=torch.float32))
        assert repr(ember.tensor([1.5], dtype=ember.float32)) == \
            "tensor([1.5000], dtype=torch.float32)"
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)


@pytest.fixture
def restore_printoptions():
    yield
    ember.set_printoptions(profile="default")
    torch.set_printoptions(profile="default")


OPTION_SETS = [dict(precision=2), dict(precision=8), dict(threshold=5), dict(edgeitems=1,
               threshold=10), dict(linewidth=30), dict(sci_mode=True), dict(sci_mode=False),
               dict(profile="short"), dict(profile="full"), dict(profile="short", precision=6),
               dict(edgeitems=0, threshold=3)]


@pytest.mark.parametrize("opts", OPTION_SETS, ids=[str(o) for o in OPTION_SETS])
def test_set_printoptions(opts, restore_printoptions):
    ember.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    for arr in [np.arange(12, dtype=np.float32) / 7, np.arange(2000, dtype=np.float32),
                np.arange(50), np.arange(60, dtype=np.float64).reshape(3, 4, 5) * 1.5,
                np.array([1e-5, 1.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32),
                np.array([1 + 2j, 3.5], np.complex64), np.array(2.5)]:
        _check(arr)


def test_printoptions_roundtrip(restore_printoptions):
    from ember._tensor_str import get_printoptions, printoptions
    old = get_printoptions()
    assert old == torch._tensor_str.get_printoptions()
    with printoptions(precision=1):
        assert repr(ember.tensor([1.25])) == "tensor([1.2])"
    assert get_printoptions() == old


def test_subclass_prefix():
    class MyTensor(ember.Tensor):
        pass

    class TMyTensor(torch.Tensor):
        pass
    e = MyTensor(ember.tensor([1.5, 2.0]))          # shares the data
    t = torch.tensor([1.5, 2.0]).as_subclass(TMyTensor)
    assert repr(e) == repr(t).replace("TMyTensor", "MyTensor") == "MyTensor([1.5000, 2.0000])"


def test_format_and_str():
    assert f"{ember.tensor(2.5):.2f}" == "2.50"
    assert str(ember.tensor([1, 2])) == "tensor([1, 2])"


def test_printing_does_not_dispatch():
    """Printing reads arrays directly: nothing shows up in a dispatcher mode."""
    from ember._dispatch import Mode
    seen = []

    class Spy(Mode):
        def __ember_dispatch__(self, op, args, kwargs):
            seen.append(op.name)
            return op(*args, **kwargs)
    x = ember.arange(5000.0).reshape(50, 100)
    with Spy():
        repr(x)
        repr(ember.tensor([1 + 1j]))
    assert seen == []


EXTRA_ARRAYS = [np.array([0.0, np.nan, np.inf], np.float32), np.array([0.0, -0.0], np.float32),
                np.array([np.nan, 1.0, -np.inf]), np.array([1e-9, 1e12, -3.0]),
                np.zeros((2, 0, 3), np.float32), np.arange(24.0).reshape(2, 3, 4) / 3,
                np.array([[True, False], [True, True]]), np.array([-7, 30000], np.int16),
                np.array([1e-3 + 1e5j, -2 - 0.5j], np.complex128), np.array(True),
                np.array(-3, np.int8), np.array(1 - 1j, np.complex64)]


@pytest.mark.parametrize("opts", [dict(), dict(sci_mode=True), dict(edgeitems=0, threshold=2),
                                  dict(edgeitems=1, threshold=4, linewidth=20),
                                  dict(precision=0), dict(threshold=0)], ids=str)
def test_special_values_under_options(opts, restore_printoptions):
    ember.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    for arr in EXTRA_ARRAYS:
        _check(arr)


def test_custom_tensor_contents():
    e = ember.tensor([1.0, 2.0], requires_grad=True)
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    assert e.__repr__(tensor_contents="[X]") == t.__repr__(tensor_contents="[X]")


def test_format_of_a_zero_dim_tensor_is_its_number_like_torch():
    import torch as real_torch
    for v in (0.5, 3, True, -2.25):
        assert f"{ember.tensor(v)}" == f"{real_torch.tensor(v)}"
        assert f"{ember.tensor(v):>8}" == f"{real_torch.tensor(v):>8}"
    assert f"{ember.tensor([1.0, 2.0])}" == f"{real_torch.tensor([1.0, 2.0])}"
    p, pt = ember.nn.Parameter(ember.tensor(2.0)), real_torch.nn.Parameter(real_torch.tensor(2.0))
    assert f"{p}" == f"{pt}"
