"""ember.lite kernels in torch's ATen argument order, against ``torch.ops.aten``."""
import numpy as np
import pytest

from ember.lite import KERNELS

torch = pytest.importorskip("torch")

R = np.random.RandomState(0)


def _t(a):
    if isinstance(a, list) and a and isinstance(a[0], np.ndarray):
        return [_t(x) for x in a]
    return torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a


def _check(name, *args, atol=1e-5):
    op, _, overload = name.partition(".")
    fn = getattr(torch.ops.aten, op.split("::")[1])
    fn = getattr(fn, overload or "default")
    want = fn(*[_t(a) for a in args])
    got = KERNELS[name](*[np.array(a) if isinstance(a, np.ndarray) else a for a in args])
    want = want.numpy() if hasattr(want, "numpy") else want
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=atol)
    if isinstance(want, np.ndarray):
        assert np.asarray(got).dtype == want.dtype and np.asarray(got).shape == want.shape


def _x(*shape):
    return R.randn(*shape).astype(np.float32)


@pytest.mark.parametrize("stride,padding,dilation,groups,cin,cout,k", [
    ([1, 1], [0, 0], [1, 1], 1, 3, 4, 3), ([2, 1], [1, 2], [1, 1], 1, 3, 5, 3),
    ([1, 1], [2, 2], [2, 2], 1, 2, 3, 3), ([2, 2], [1, 1], [1, 1], 6, 6, 6, 3),
    ([1, 1], [0, 0], [1, 1], 2, 4, 6, 1), ([1, 1], [0, 0], [1, 1], 1, 8, 4, 1),
    ([2, 2], [0, 0], [1, 1], 1, 8, 4, 1)])
def test_conv2d(stride, padding, dilation, groups, cin, cout, k):
    x, w, b = _x(2, cin, 9, 8), _x(cout, cin // groups, k, k), _x(cout)
    _check("aten::conv2d", x, w, b, stride, padding, dilation, groups)
    _check("aten::conv2d", x, w, None, stride, padding, dilation, groups)


def test_conv2d_padding_string_and_unbatched():
    x, w = _x(3, 7, 7), _x(4, 3, 3, 3)
    _check("aten::conv2d.padding", x, w, None, [1, 1], "same", [1, 1], 1)
    _check("aten::conv2d", x, w, None, [1, 1], [0, 0], [1, 1], 1)


@pytest.mark.parametrize("k,s,p,d,ceil", [([2, 2], [], [0, 0], [1, 1], False),
                                          ([3, 3], [2, 2], [1, 1], [1, 1], True),
                                          ([3, 2], [2, 1], [1, 0], [2, 1], False),
                                          ([3, 3], [2, 2], [0, 0], [1, 1], True)])
def test_pools(k, s, p, d, ceil):
    x = _x(2, 3, 10, 9)
    _check("aten::max_pool2d", x, k, s, p, d, ceil)
    for include in (True, False):
        _check("aten::avg_pool2d", x, k, s, p, ceil, include, None)


def test_adaptive_avg_pool_and_linear_family():
    x = _x(2, 3, 7, 5)
    for size in ([1, 1], [3, 2], [7, 5], [4, 4]):
        _check("aten::adaptive_avg_pool2d", x, size)
    a, w, b = _x(4, 6), _x(5, 6), _x(5)
    _check("aten::linear", a, w, b)
    _check("aten::linear", a, w, None)
    for beta, alpha in ((1, 1), (0.5, 2.0)):       # beta, alpha are keyword-only in Python
        want = torch.addmm(_t(b), _t(a), _t(w.T.copy()), beta=beta, alpha=alpha).numpy()
        np.testing.assert_allclose(KERNELS["aten::addmm"](b, a, w.T.copy(), beta, alpha), want,
                                   rtol=1e-5, atol=1e-5)


def test_batch_norm_eval_and_train():
    x, w, b = _x(4, 3, 5, 5), _x(3), _x(3)
    rm, rv = _x(3), np.abs(_x(3)) + 0.5
    _check("aten::batch_norm", x, w, b, rm, rv, False, 0.1, 1e-5, True)
    _check("aten::batch_norm", x, None, None, rm, rv, False, 0.1, 1e-3, True)
    rm2, rv2 = rm.copy(), rv.copy()
    got = KERNELS["aten::batch_norm"](x, w, b, rm2, rv2, True, 0.1, 1e-5, True)
    trm, trv = torch.from_numpy(rm.copy()), torch.from_numpy(rv.copy())
    want = torch.ops.aten.batch_norm(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b),
                                     trm, trv, True, 0.1, 1e-5, True)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm2, trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv2, trv.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,extra", [("aten::relu", ()), ("aten::hardtanh", (-0.5, 2.0)),
                                        ("aten::hardswish", ()), ("aten::hardsigmoid", ()),
                                        ("aten::sigmoid", ()), ("aten::tanh", ()),
                                        ("aten::softmax.int", (1,)), ("aten::flatten.using_ints", (1,)),
                                        ("aten::mean.dim", ([2, 3], True)), ("aten::mean", ()),
                                        ("aten::sum", ()), ("aten::sum.dim_IntList", ([1], False)),
                                        ("aten::t", ()), ("aten::permute", ([1, 0, 3, 2],)),
                                        ("aten::view", ([2, -1],))])
def test_elementwise_and_shapes(name, extra):
    x = _x(2, 3, 4, 5) if name not in ("aten::t",) else _x(3, 4)
    _check(name, x, *extra)


def test_arithmetic_overloads():
    a, b = _x(3, 4), _x(3, 4)
    i = R.randint(-5, 5, (3, 4)).astype(np.int64)
    for op in ("add", "sub", "mul", "div"):
        _check(f"aten::{op}.Tensor", a, b)
        _check(f"aten::{op}.Scalar", a, 2)
        _check(f"aten::{op}.Scalar", a, 0.5)
    np.testing.assert_allclose(KERNELS["aten::add.Tensor"](a, b, 2), (_t(a) + 2 * _t(b)).numpy(),
                               rtol=1e-6)
    _check("aten::add.Scalar", i, 3)
    _check("aten::mul.Scalar", i, 2)
    _check("aten::add.Scalar", i, 0.5)
    for op in ("gt", "lt", "ge", "le", "eq", "ne"):
        _check(f"aten::{op}.Scalar", a, 0.1)
        _check(f"aten::{op}.Tensor", a, b)
    _check("aten::cat", [a, b], 1)
    assert KERNELS["aten::Bool.Tensor"](np.asarray(True)) is True
    assert KERNELS["aten::__contains__.int_list"]([4, 5], 5) is True
    assert KERNELS["aten::join"](" or ", ["a", "b"]) == "a or b"


def test_selection_and_layout_ops():
    a, b = _x(2, 3, 4), _x(2, 3, 4)
    m = a > 0
    _check("aten::where.self", m, a, b)
    _check("aten::logical_not", m)
    _check("aten::bitwise_or.Tensor", m, b > 0)
    _check("aten::movedim.intlist", a, [0, 2], [2, 0])
    _check("aten::clamp", a, -0.5, 0.5)
    _check("aten::matmul", a, _x(4, 5))


def test_traced_graph_ops():
    x, w, b = _x(2, 4, 9, 9), _x(6, 2, 3, 3), _x(6)
    _check("aten::convolution", x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 2)
    _check("aten::convolution", _x(2, 4, 9), _x(5, 4, 3), None, [2], [1], [1], False, [0], 1)
    for ceil in (False, True):
        got = KERNELS["aten::max_pool2d_with_indices"](x, [3, 3], [2, 2], [1, 1], [1, 1], ceil)
        want = torch.ops.aten.max_pool2d_with_indices(_t(x), [3, 3], [2, 2], [1, 1], [1, 1], ceil)
        np.testing.assert_array_equal(got[0], want[0].numpy())
        np.testing.assert_array_equal(got[1], want[1].numpy())
    rm, rv = _x(4), np.abs(_x(4)) + 0.5
    got = KERNELS["aten::native_batch_norm"](x, None, None, rm, rv, False, 0.1, 1e-5)
    want = torch.ops.aten.native_batch_norm(_t(x), None, None, _t(rm), _t(rv), False, 0.1, 1e-5)
    np.testing.assert_allclose(got[0], want[0].numpy(), rtol=1e-5, atol=1e-5)
