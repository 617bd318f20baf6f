"""Tensor creation: factories, ``tensor``/``as_tensor``/``asarray``/``from_numpy``/
``frombuffer``, DLPack, ``complex``/``polar``; values, dtypes and errors checked against
torch."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def same(e, t, exact=True, rtol=1e-6, atol=1e-6):
    """ember result ``e`` equals torch result ``t``: dtype, shape and values."""
    assert repr(e.dtype) == repr(t.dtype), (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    a = e.detach().to(ember.float64).numpy() if e.dtype is ember.bfloat16 else e.detach().numpy()
    b = t.detach().to(torch.float64).numpy() if t.dtype is torch.bfloat16 else t.detach().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def both(f, exact=True, **kw):
    same(f(ember), f(torch), exact, **kw)


def raises_like(f, exc, match):
    """ember and torch raise the same exception class with a matching message."""
    with pytest.raises(exc, match=match):
        f(ember)
    with pytest.raises(exc, match=match):
        f(torch)


# ------------------------------------------------------------------------------ fills

FILL_CALLS = [
    lambda m: m.zeros(2, 3), lambda m: m.zeros((2, 3)), lambda m: m.zeros([4]),
    lambda m: m.zeros(m.Size([2, 1])), lambda m: m.zeros(()), lambda m: m.zeros(0, 5),
    lambda m: m.ones(3, dtype=m.int32), lambda m: m.ones(2, 2, dtype=m.bool),
    lambda m: m.ones(np.int64(3)), lambda m: m.ones([m.tensor(2), 3]),
    lambda m: m.zeros(size=(2, 2)), lambda m: m.empty(2, 3).fill_(0),
    lambda m: m.full((2, 2), True), lambda m: m.full((2,), 3), lambda m: m.full((2,), 3.5),
    lambda m: m.full((2,), 1 - 1j), lambda m: m.full((2,), 2.7, dtype=m.int64),
    lambda m: m.full((2,), m.tensor(3)), lambda m: m.full((2,), np.float32(1.5)),
    lambda m: m.full((1,), -1, dtype=m.uint8), lambda m: m.full((3,), float("inf")),
    lambda m: m.full((2,), 65504.0, dtype=m.float16), lambda m: m.full((2,), 1e38,
                                                                     dtype=m.bfloat16),
    lambda m: m.eye(3), lambda m: m.eye(2, 4, dtype=m.int64), lambda m: m.eye(0),
    lambda m: m.eye(3, 1, dtype=m.bool),
]


@pytest.mark.parametrize("i", range(len(FILL_CALLS)))
def test_fills(i):
    both(FILL_CALLS[i])


def test_fill_errors():
    raises_like(lambda m: m.zeros(2, -1), RuntimeError, "zeros: Dimension size must be "
                                                        "non-negative")
    raises_like(lambda m: m.ones(2, -1), RuntimeError,
                r"Trying to create tensor with negative dimension -1: \[2, -1\]")
    raises_like(lambda m: m.zeros(2.5), TypeError,
                r"zeros\(\): argument 'size' \(position 1\) must be tuple of ints, not float")
    raises_like(lambda m: m.ones(2, 2.5), TypeError,
                "failed to unpack the object at pos 2 with error \"type must be tuple of ints,"
                "but got float\"")
    raises_like(lambda m: m.ones(True), TypeError, "must be tuple of ints, not bool")
    raises_like(lambda m: m.ones(m.tensor(2.0)), TypeError, "must be tuple of ints, not Tensor")
    raises_like(lambda m: m.full(2, 1.0), TypeError, "must be tuple of ints, not int")
    raises_like(lambda m: m.full((2,), m.tensor([3])), TypeError, "must be Number, not Tensor")
    raises_like(lambda m: m.full((2,), 1j, dtype=m.float32), RuntimeError,
                "value cannot be converted to type float without overflow")
    raises_like(lambda m: m.full((2,), 1e20, dtype=m.int64), RuntimeError,
                "value cannot be converted to type int64_t without overflow")
    raises_like(lambda m: m.full((2,), 70000.0, dtype=m.float16), RuntimeError,
                "value cannot be converted to type c10::Half without overflow")
    raises_like(lambda m: m.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1")
    raises_like(lambda m: m.zeros(2, dtype=m.int64, requires_grad=True), RuntimeError,
                "Only Tensors of floating point and complex dtype can require gradients")


def test_requires_grad_and_out():
    x = ember.zeros(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    out = ember.empty(0, dtype=ember.int64)
    r = ember.zeros(2, out=out)
    assert r is out and out.dtype is ember.int64 and out.shape == (2,)
    r = ember.arange(5.0, out=ember.empty(0, dtype=ember.int64))
    assert r.dtype is ember.int64 and r.tolist() == [0, 1, 2, 3, 4]
    assert ember.full((2,), 1.5, out=ember.empty(0, dtype=ember.int64)).tolist() == [1, 1]
    raises_like(lambda m: m.zeros(2, out=m.empty(0, dtype=m.int64), dtype=m.float32),
                RuntimeError, r"dtype Float does not match dtype of out parameter \(Long\)")


# ------------------------------------------------------------------------------ *_like, new_*

def test_like_family():
    for make in [lambda m: m.arange(12.0).reshape(3, 4),
                 lambda m: m.arange(12.0).reshape(3, 4).transpose(0, 1),
                 lambda m: m.arange(24, dtype=m.int32).reshape(2, 3, 4).permute(2, 0, 1),
                 lambda m: m.arange(12.0).reshape(3, 4)[:, ::2]]:
        for f in [lambda m, x: m.zeros_like(x), lambda m, x: m.ones_like(x, dtype=m.float64),
                  lambda m, x: m.full_like(x, 7), lambda m, x: m.full_like(x, 2.5),
                  lambda m, x: m.empty_like(x).fill_(1),
                  lambda m, x: m.zeros_like(x, memory_format=m.contiguous_format)]:
            e, t = f(ember, make(ember)), f(torch, make(torch))
            same(e, t)
            assert e.stride() == t.stride()
    x = ember.ones(2, 3, requires_grad=True)
    z = ember.zeros_like(x)
    assert not z.requires_grad and z.grad_fn is None
    assert ember.zeros_like(x, requires_grad=True).requires_grad
    raises_like(lambda m: m.zeros_like([1, 2]), TypeError, "must be Tensor, not list")
    raises_like(lambda m: m.full_like(m.zeros(2, dtype=m.int64), 1e20), RuntimeError,
                "without overflow")


def test_new_methods():
    for f in [lambda m: m.ones(2, dtype=m.int32).new_zeros(2, 3),
              lambda m: m.ones(2, dtype=m.int32).new_ones((3,)),
              lambda m: m.ones(2, dtype=m.int32).new_full((2,), 3.7),
              lambda m: m.ones(2, dtype=m.int32).new_empty(2).fill_(0),
              lambda m: m.ones(2).new_zeros(2, dtype=m.float64),
              lambda m: m.ones(2, dtype=m.int32).new_tensor([1.5, 2.5]),
              lambda m: m.ones(2).new_tensor([1, 2], dtype=m.int64),
              lambda m: m.ones(2, dtype=m.float64).new_empty_strided((2, 3), (1, 2)).fill_(2)]:
        both(f)
    assert ember.ones(2).new_zeros(2, requires_grad=True).requires_grad
    raises_like(lambda m: m.ones(2).new_full(2, 1.0), TypeError, "must be tuple of ints, not int")
    with pytest.warns(UserWarning, match="rather than tensor.new_tensor"):
        ember.ones(2).new_tensor(ember.ones(2))


def test_empty_strided():
    for size, stride in [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 3), (0, 1)), ((0, 3), (3, 1)),
                         ((4,), (2,)), ((), ())]:
        e = ember.empty_strided(size, stride)
        t = torch.empty_strided(size, stride)
        assert e.shape == t.shape and e.stride() == t.stride() and e.dtype is ember.float32
    e = ember.empty_strided((2, 3), (1, 2), dtype=ember.float64)
    e.fill_(3.0)
    assert e.sum().item() == 18.0 and e.stride() == (1, 2)
    raises_like(lambda m: m.empty_strided((2, 3), (1,)), RuntimeError,
                r"dimensionality of sizes \(2\) must match dimensionality of strides \(1\)")
    raises_like(lambda m: m.empty_strided((2, -1), (1, 1)), RuntimeError, "negative dimension")


# ------------------------------------------------------------------------------ ranges

ARANGE_CALLS = [
    lambda m: m.arange(5), lambda m: m.arange(5.0), lambda m: m.arange(1, 4, 0.5),
    lambda m: m.arange(0.5, 3, dtype=m.int64), lambda m: m.arange(-1.5, 2, dtype=m.int64),
    lambda m: m.arange(-1.5, 2, dtype=m.int32), lambda m: m.arange(10, 0, -3),
    lambda m: m.arange(3, 3), lambda m: m.arange(m.tensor(3)), lambda m: m.arange(m.tensor(3.0)),
    lambda m: m.arange(m.tensor(4.0, dtype=m.float64)), lambda m: m.arange(True),
    lambda m: m.arange(-3, 3, dtype=m.uint8), lambda m: m.arange(np.int32(3)),
    lambda m: m.arange(np.float64(3)), lambda m: m.arange(end=4),
    lambda m: m.arange(0, 10, 3, dtype=m.float64), lambda m: m.arange(0, 1, 0.1),
    lambda m: m.arange(0, 100, 0.1), lambda m: m.arange(-3.3, 7.9, 0.013, dtype=m.float64),
    lambda m: m.arange(0, 1, 0.1, dtype=m.float16),
    lambda m: m.arange(0, 10, 0.7, dtype=m.bfloat16),
    lambda m: m.arange(2 ** 40, 2 ** 40 + 5), lambda m: m.arange(0, 1e8, 7.3),
]


@pytest.mark.parametrize("i", range(len(ARANGE_CALLS)))
def test_arange(i):
    e, t = ARANGE_CALLS[i](ember), ARANGE_CALLS[i](torch)
    same(e, t, exact=t.dtype in (torch.int64, torch.int32, torch.uint8), rtol=1e-6, atol=1e-5)


def test_arange_errors():
    raises_like(lambda m: m.arange(0, 3, 0), RuntimeError, "step must be nonzero")
    raises_like(lambda m: m.arange(0, 3, -1), RuntimeError,
                "upper bound and lower bound inconsistent with step sign")
    raises_like(lambda m: m.arange(0, float("nan")), RuntimeError, "unsupported range: 0 -> nan")
    raises_like(lambda m: m.arange(0, float("inf")), RuntimeError, "unsupported range: 0 -> inf")
    raises_like(lambda m: m.arange("a"), TypeError, "must be Number, not str")
    raises_like(lambda m: m.arange(3, dtype=m.bool), NotImplementedError,
                "\"arange_cpu\" not implemented for 'Bool'")


def test_range_deprecated():
    for f in [lambda m: m.range(0, 3), lambda m: m.range(0, 3, dtype=m.int64),
              lambda m: m.range(1, 2, 0.25), lambda m: m.range(5, 1, -2)]:
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            e = f(ember)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = f(torch)
        same(e, t)
    with pytest.warns(UserWarning):
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            ember.range(3, 0)


SPACE_CALLS = [
    lambda m: m.linspace(0, 1, 5), lambda m: m.linspace(0, 10, 4, dtype=m.int64),
    lambda m: m.linspace(-3.5, 7.25, 11, dtype=m.int64), lambda m: m.linspace(10, 0, 6,
                                                                              dtype=m.int32),
    lambda m: m.linspace(3, 10, 1), lambda m: m.linspace(3, 10, 0), lambda m: m.linspace(0, 10, 5),
    lambda m: m.linspace(m.tensor(0.0), m.tensor(1.0), 3), lambda m: m.linspace(-3.7, 11.3, 1001),
    lambda m: m.linspace(0, 1, 100, dtype=m.float64), lambda m: m.linspace(0.3, 9, 33,
                                                                           dtype=m.float16),
    lambda m: m.linspace(0, 1 + 1j, 5), lambda m: m.logspace(0, 2, 3),
    lambda m: m.logspace(0, 3, 4, base=2), lambda m: m.logspace(0, 3, 4, base=2, dtype=m.int64),
    lambda m: m.logspace(-2, 2, 9, dtype=m.float64), lambda m: m.logspace(1, 3, 1),
    lambda m: m.logspace(-1.5, 2.5, 50),
]


@pytest.mark.parametrize("i", range(len(SPACE_CALLS)))
def test_linspace_logspace(i):
    e, t = SPACE_CALLS[i](ember), SPACE_CALLS[i](torch)
    same(e, t, exact=not (t.is_floating_point() or t.is_complex()), rtol=2e-6, atol=1e-6)


def test_space_errors():
    for name in ("linspace", "logspace"):
        raises_like(lambda m: getattr(m, name)(3, 10, -1), RuntimeError,
                    "number of steps must be non-negative")
        raises_like(lambda m: getattr(m, name)(m.tensor([0.0]), m.tensor(1.0), 3), RuntimeError,
                    f"{name} only supports 0-dimensional start and end tensors, but got start "
                    f"with 1 dimension")


# ------------------------------------------------------------------------------ tensor()

TENSOR_DATA = [
    [], [[]], [[], []], [1, 2.5], [True, 2], [True, False], [1, 2j], 3, 2.5, True, 1j,
    np.float32(1.5), np.float64(1.5), np.int32(3), np.bool_(True), [np.int32(1), np.int32(2)],
    [np.float32(1), 2], [np.float64(1), 2], [np.int32(1), 2], (1, 2), range(3), [[1], [2.5]],
    [[[1]], [[2]]], np.zeros(2), np.zeros((2, 3), np.float32), np.array(3),
    np.arange(6).reshape(2, 3).T,
    [np.array([1, 2]), np.array([3, 4])], memoryview(b"ab"), [2 ** 63 - 1], [float("nan")],
    [np.float16(1)], np.array([1, 2], np.int8), [[1, 2], (3, 4)],
]


@pytest.mark.parametrize("i", range(len(TENSOR_DATA)))
def test_tensor_inference(i):
    data = TENSOR_DATA[i]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        both(lambda m: m.tensor(data))


def test_tensor_from_tensors():
    both(lambda m: m.tensor([m.tensor(1.0), m.tensor(2.0)]))
    both(lambda m: m.tensor([m.tensor([1.0]), m.tensor([2.0])]))
    both(lambda m: m.tensor([m.tensor(1.0, dtype=m.float64), m.tensor(2.0)]))
    both(lambda m: m.tensor([m.tensor(1), 2.5]))
    both(lambda m: m.tensor([[m.tensor(1.0), 2], [3, 4]]))
    raises_like(lambda m: m.tensor([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])]), ValueError,
                "only one element tensors can be converted to Python scalars")
    with pytest.warns(UserWarning, match="sourceTensor.detach\\(\\).clone\\(\\)"):
        x = ember.tensor(ember.ones(2))
    assert x.tolist() == [1.0, 1.0]


DTYPE_CASES = [
    ([1.7, -1.7], "int64"), ([-1], "uint8"), ([0, 2], "bool"), ([0.5], "bool"),
    ([1, 2], "complex64"), ([1e10], "float16"), ([1e300], "float32"), ([70000], "float16"),
    ([2 ** 63 - 1], "float32"), ([1.5], "bfloat16"), (np.ones(2, np.float32), "float64"),
    (np.array([300]), "uint8"), ([[1, 2], [3, 4]], "float64"), (2.5, "int32"),
]


@pytest.mark.parametrize("data,dtype", DTYPE_CASES, ids=[str(i) for i in range(len(DTYPE_CASES))])
def test_tensor_with_dtype(data, dtype):
    both(lambda m: m.tensor(data, dtype=getattr(m, dtype)))


@pytest.mark.parametrize("data,exc,match", [
    ([[1, 2], [3]], ValueError, r"expected sequence of length 2 at dim 1 \(got 1\)"),
    ([[1, 2], 3], TypeError, "not a sequence"),
    ("a", TypeError, "new\\(\\): invalid data type 'str'"),
    (None, RuntimeError, "Could not infer dtype of NoneType"),
    ([1, None], RuntimeError, "Could not infer dtype of NoneType"),
    ({1: 2}, RuntimeError, "Could not infer dtype of dict"),
    (2 ** 63, ValueError, "Overflow when unpacking long long"),
    ([-2 ** 63 - 1], ValueError, "Overflow when unpacking long long"),
    (np.array([1, "a"], dtype=object), TypeError, "can't convert np.ndarray of type numpy.object_"),
    (np.arange(3)[::-1], ValueError, "At least one stride in the given numpy array is negative"),
])
def test_tensor_errors(data, exc, match):
    raises_like(lambda m: m.tensor(data), exc, match)


def test_tensor_dtype_errors():
    raises_like(lambda m: m.tensor([300], dtype=m.uint8), RuntimeError,
                "value cannot be converted to type uint8 without overflow")
    raises_like(lambda m: m.tensor([200], dtype=m.int8), RuntimeError,
                "value cannot be converted to type int8 without overflow")
    raises_like(lambda m: m.tensor([float("nan")], dtype=m.int64), RuntimeError,
                "value cannot be converted to type int64 without overflow")
    raises_like(lambda m: m.tensor([1 + 2j], dtype=m.float32), TypeError,
                "must be real number, not complex")
    raises_like(lambda m: m.tensor([1], requires_grad=True), RuntimeError,
                "Only Tensors of floating point and complex dtype can require gradients")


def test_tensor_copies_and_requires_grad():
    a = np.arange(3.0)
    t = ember.tensor(a)
    a[0] = 9
    assert t[0].item() == 0.0
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf
    src = ember.ones(2, requires_grad=True) * 2
    with pytest.warns(UserWarning):
        y = ember.tensor(src)
    assert not y.requires_grad and y.grad_fn is None


def test_uint_wide_numpy_arrays_keep_their_dtype():
    """torch 2.13 has barebones uint16/32/64 dtypes: NumPy arrays of them keep theirs."""
    t = ember.tensor(np.array([1, 65535], np.uint16))
    assert t.dtype is ember.uint16 and t.tolist() == [1, 65535]
    assert ember.tensor(np.array([2 ** 32 - 1], np.uint32)).dtype is ember.uint32
    a = np.zeros(2, np.uint64)
    assert ember.from_numpy(a).dtype is ember.uint64 and ember.from_numpy(a).data_ptr() == \
        a.ctypes.data


# ------------------------------------------------------------------------------ sharing

def test_from_numpy_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = ember.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype is ember.float64
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    t.add_(1)
    assert a[1, 2] == 6
    assert ember.from_numpy(a.T).stride() == torch.from_numpy(a.T).stride()
    assert ember.from_numpy(np.array(2.0)).shape == ()
    raises_like(lambda m: m.from_numpy([1]), TypeError, r"expected np.ndarray \(got list\)")
    raises_like(lambda m: m.from_numpy(np.zeros(2, ">f4")), ValueError,
                "byte order different from the native byte order")
    raises_like(lambda m: m.from_numpy(np.arange(3)[::-1]), ValueError, "negative")
    raises_like(lambda m: m.from_numpy(np.zeros(2, object)), TypeError,
                "can't convert np.ndarray of type numpy.object_")


def test_as_tensor():
    a = np.arange(3.0)
    t = ember.as_tensor(a)
    a[0] = 9
    assert t[0].item() == 9 and t.data_ptr() == a.ctypes.data
    c = ember.as_tensor(a, dtype=ember.float32)
    a[0] = 8
    assert c[0].item() == 9 and c.dtype is ember.float32
    x = ember.ones(2, requires_grad=True)
    assert ember.as_tensor(x) is x
    y = ember.as_tensor(x, dtype=ember.float64)
    assert y.grad_fn is not None and type(y.grad_fn).__name__ == "ToCopyBackward0"
    both(lambda m: m.as_tensor([1, 2]))
    both(lambda m: m.as_tensor(3))
    both(lambda m: m.as_tensor(np.float32(3)))
    raises_like(lambda m: m.as_tensor(np.arange(3)[::-1]), ValueError, "negative")


def test_asarray():
    a = np.arange(3.0)
    assert ember.asarray(a).data_ptr() == a.ctypes.data
    assert ember.asarray(a, copy=True).data_ptr() != a.ctypes.data
    raises_like(lambda m: m.asarray(np.arange(3.0), copy=False, dtype=m.float32), ValueError,
                "can't alias tensor with dtype 'Double' into dtype 'Float'")
    raises_like(lambda m: m.asarray([1, 2], copy=False), ValueError,
                "can't alias arbitrary sequence into a tensor")
    both(lambda m: m.asarray([1, 2]))
    both(lambda m: m.asarray(3.5))
    both(lambda m: m.asarray(np.float32(3.5)))
    both(lambda m: m.asarray([1, 2], dtype=m.float64))
    both(lambda m: m.asarray(b"abcd", dtype=m.uint8))
    buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
    both(lambda m: m.asarray(buf))
    x = ember.ones(2)
    assert ember.asarray(x) is x
    assert ember.asarray(x, copy=True) is not x
    y = ember.asarray(x, requires_grad=True)
    assert y is x and x.requires_grad
    z = ember.ones(2, requires_grad=True) * 2
    w = ember.asarray(z, copy=True)
    assert type(w.grad_fn).__name__ == "CloneBackward0"
    with pytest.warns(UserWarning, match="unspecified requires_grad"):
        ember.asarray(z)
    assert ember.asarray(ember.ones(2), dtype=ember.float64).dtype is ember.float64
    # DLPack exporters are aliased
    tt = torch.arange(4.0)
    e = ember.asarray(tt)
    assert e.data_ptr() == tt.data_ptr()


def test_frombuffer():
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    both(lambda m: m.frombuffer(buf, dtype=m.int32))
    both(lambda m: m.frombuffer(buf, dtype=m.int32, count=2, offset=8))
    e = ember.frombuffer(buf, dtype=ember.int32)
    e[0] = 100
    assert np.frombuffer(buf, np.int32)[0] == 100
    raises_like(lambda m: m.frombuffer(bytearray(b"abc"), dtype=m.int32), ValueError,
                "must be a multiple of element size")


# ------------------------------------------------------------------------------ DLPack

def test_dlpack_roundtrips_share_memory():
    e = ember.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(e)
    assert t.data_ptr() == e.data_ptr()
    t[0, 0] = 100
    assert e[0, 0].item() == 100
    n = np.from_dlpack(e)
    assert n.ctypes.data == e.data_ptr()
    tt = torch.arange(4.0)
    e2 = ember.from_dlpack(tt)
    assert e2.data_ptr() == tt.data_ptr()
    e2[0] = 7
    assert tt[0].item() == 7
    e3 = ember.from_dlpack(np.arange(3))
    assert e3.dtype is ember.int64 and e3.tolist() == [0, 1, 2]
    # legacy capsules
    cap = tt.__dlpack__()
    e4 = ember.from_dlpack(cap)
    assert e4.data_ptr() == tt.data_ptr()
    # strides survive both ways
    e5 = ember.from_dlpack(torch.arange(6.0).reshape(2, 3).t())
    assert e5.stride() == (1, 3) and e5.tolist() == [[0, 3], [1, 4], [2, 5]]
    t6 = torch.from_dlpack(e.transpose(0, 1))
    assert t6.stride() == (1, 3) and t6.data_ptr() == e.data_ptr()
    assert e.__dlpack_device__() == (1, 0)
    for dt in ["bool", "int8", "uint8", "int32", "float16", "float64", "complex64"]:
        x = ember.ones(3, dtype=getattr(ember, dt))
        same(ember.from_dlpack(torch.from_dlpack(x)), torch.ones(3, dtype=getattr(torch, dt)))
    assert ember.from_dlpack(ember.ones(1)) is not None


def test_dlpack_errors():
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient"):
        torch.from_dlpack(ember.ones(2, requires_grad=True))
    with pytest.raises(TypeError, match="__dlpack__"):
        ember.from_dlpack([1, 2])


# ------------------------------------------------------------------------------ complex, polar

def test_complex_and_polar_values():
    both(lambda m: m.complex(m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])))
    both(lambda m: m.complex(m.tensor([1.0], dtype=m.float64), m.tensor([3.0], dtype=m.float64)))
    both(lambda m: m.complex(m.tensor([1.0, 2.0]), m.tensor(3.0)))
    both(lambda m: m.polar(m.tensor([1.0, 2.0]), m.tensor([0.0, math.pi / 2])), exact=False)
    raises_like(lambda m: m.complex(m.tensor([1]), m.tensor([3])), RuntimeError,
                "Expected both inputs to be Half, Float or Double tensors but got Long and Long")
    raises_like(lambda m: m.complex(m.tensor([1.0], dtype=m.float64), m.tensor([3.0])),
                RuntimeError, "Expected object of scalar type Double but got scalar type Float "
                              "for second argument")


def test_complex_and_polar_gradients():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0.5, 2, 4), rng.uniform(-3, 3, 4)
    w = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    for name in ("complex", "polar"):
        ea = ember.tensor(a, requires_grad=True)
        eb = ember.tensor(b, requires_grad=True)
        ta = torch.tensor(a, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        eo = getattr(ember, name)(ea, eb)
        to = getattr(torch, name)(ta, tb)
        assert type(eo.grad_fn).__name__ == type(to.grad_fn).__name__
        (eo * ember.tensor(w)).real.sum().backward() if not callable(eo.real) else \
            ember.real(eo * ember.tensor(w)).sum().backward()
        (to * torch.tensor(w)).real.sum().backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_flat_number_lists_as_torch():
    """Short flat lists of plain ints / floats take a fast path (_creation._flat_numbers):
    the same values, dtypes and errors as torch's, edge values included."""
    torch = pytest.importorskip("torch")
    cases = ([0, 1], [1.5, -2.0], [-0.0], [1e39, -1e39], [float("nan"), 1.0], [1e-50],
             [2 ** 63 - 1, -2 ** 63], (3, 4), [True, 2], [1, 2.5], list(range(64)),
             list(range(65)))
    for data in cases:
        e, t = ember.tensor(data), torch.tensor(data)
        assert str(e.dtype) == str(t.dtype), data
        np.testing.assert_array_equal(e.numpy(), t.numpy())
        assert np.signbit(e.numpy()).tolist() == np.signbit(t.numpy()).tolist()
    for data in ([2 ** 63], [-2 ** 63 - 1]):
        with pytest.raises(Exception) as te:
            torch.tensor(data)
        with pytest.raises(te.type):
            ember.tensor(data)
