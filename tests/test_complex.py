"""Complex numbers through the core ops: views, conj API, elementwise math and its
gradients (conjugate Wirtinger, vs torch and gradcheck), reductions, matmul, printing, and
a complex model trained in ember and torch from the same init."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from helpers import torch

RNG = np.random.default_rng(2)


def _c(shape, dt=np.complex128, scale=1.0):
    return ((RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)) * scale).astype(dt)


def test_view_as_real_shares_memory():
    z = ember.tensor(_c((2, 3)))
    r = ember.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.dtype == ember.float64
    r[0, 0, 1] = 7.0
    assert z[0, 0].item().imag == 7.0
    assert r._base is z
    c = ember.view_as_complex(r)
    assert c.dtype == ember.complex128 and (c == z).all()
    c[1, 1] = 1 + 1j
    assert z[1, 1].item() == 1 + 1j
    assert ember.view_as_real(ember.tensor(1 + 2j, dtype=ember.complex64)).tolist() == [1., 2.]
    # strided: a complex view of every other row
    assert ember.view_as_real(z[::2]).shape == (1, 3, 2)


@pytest.mark.skipif(torch is None, reason="torch oracle")
@pytest.mark.parametrize("case", range(5))
def test_view_errors_match_torch(case):
    fs = [lambda m: m.view_as_real(m.ones(3)),
          lambda m: m.view_as_complex(m.ones(3, 3)),
          lambda m: m.view_as_complex(m.ones(2, 3).t()),
          lambda m: m.view_as_complex(m.ones(3, 2, dtype=m.int64)),
          lambda m: m.view_as_complex(m.ones(3, 4)[:, 1:3])]
    with pytest.raises(Exception) as te:
        fs[case](torch)
    with pytest.raises(Exception) as ee:
        fs[case](ember)
    assert type(ee.value) is type(te.value)
    assert str(ee.value) == str(te.value)


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_view_grads_match_torch():
    x = _c((3, 2))
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w = RNG.standard_normal((3, 2, 2))
    (ember.view_as_real(e) * ember.tensor(w)).sum().backward()
    (torch.view_as_real(t) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())
    assert ember.autograd.gradcheck(lambda a: ember.view_as_real(a) ** 2, (ember.tensor(
        x, requires_grad=True),))
    r = RNG.standard_normal((3, 2))
    assert ember.autograd.gradcheck(lambda a: ember.view_as_complex(a) ** 2, (ember.tensor(
        r, requires_grad=True),))


def test_conj_api():
    z = ember.tensor([1 + 2j, 3 - 1j])
    assert not z.is_conj() and not ember.is_conj(z.conj()) and not z.is_neg()
    assert z.resolve_conj() is z and ember.resolve_neg(z) is z
    assert z.conj().tolist() == [1 - 2j, 3 + 1j]
    assert ember.conj_physical(z).tolist() == [1 - 2j, 3 + 1j]
    x = ember.ones(2)
    assert x.conj() is x


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_printing():
    for v in ([1 + 2j], [1.5 - 2j, 0 + 0j, -3 + 1e-3j], [[1j, 2], [3, 4 - 4j]]):
        assert str(ember.tensor(v)) == str(torch.tensor(v))
        assert str(ember.tensor(v, dtype=ember.complex128)) == \
            str(torch.tensor(v, dtype=torch.complex128))
    assert str(ember.tensor([1 + 2j])) == "tensor([1.+2.j])"


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_complex_and_polar():
    a, b = RNG.standard_normal(4), RNG.standard_normal(4)
    e = ember.complex(ember.tensor(a), ember.tensor(b))
    assert e.dtype == ember.complex128
    np.testing.assert_allclose(e.numpy(), a + 1j * b)
    p = ember.polar(ember.tensor(np.abs(a)), ember.tensor(b))
    np.testing.assert_allclose(p.numpy(), torch.polar(torch.tensor(np.abs(a)),
                                                      torch.tensor(b)).numpy())
    assert ember.complex(ember.ones(1), ember.ones(1)).dtype == ember.complex64


UNARY = ["exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid",
         "reciprocal", "abs", "angle", "sgn", "neg", "rsqrt", "log1p", "expm1", "asin", "acos",
         "atan", "asinh", "acosh", "atanh", "log2", "log10", "conj", "real", "imag", "square"]


@pytest.mark.skipif(torch is None, reason="torch oracle")
@pytest.mark.parametrize("dt", ["complex64", "complex128"])
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_match_torch(name, dt):
    x = _c((3, 4), dt) + (1.5 + 0.5j)
    fe = getattr(ember, name)
    ft = getattr(torch, name)
    e, t = fe(ember.tensor(x)), ft(torch.tensor(x)).resolve_conj()
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    tol = 1e-5 if dt == "complex64" else 1e-12
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=tol, atol=tol)


@pytest.mark.skipif(torch is None, reason="torch oracle")
@pytest.mark.parametrize("name", UNARY)
def test_unary_grads_match_torch_and_gradcheck(name):
    x = _c((5,)) + (1.5 + 0.5j)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    we = _c((5,))
    ye, yt = getattr(ember, name)(e), getattr(torch, name)(t)
    le = (ye * ember.tensor(we)).real.sum() if ye.is_complex() else (ye * ember.tensor(
        we.real)).sum()
    lt = (yt * torch.tensor(we)).real.sum() if yt.is_complex() else (yt * torch.tensor(
        we.real)).sum()
    le.backward()
    lt.backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=1e-9,
                               atol=1e-12)
    assert ember.autograd.gradcheck(getattr(ember, name), (ember.tensor(x, requires_grad=True),))


BINARY = ["add", "sub", "mul", "div", "pow"]


@pytest.mark.skipif(torch is None, reason="torch oracle")
@pytest.mark.parametrize("name", BINARY)
def test_binary_grads(name):
    a, b = _c((3, 4)) + 2, _c((4,)) + 1
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    getattr(ember, name)(ea, eb).abs().sum().backward()
    getattr(torch, name)(ta, tb).abs().sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-9)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-9)
    assert ember.autograd.gradcheck(getattr(ember, name), (ember.tensor(a, requires_grad=True),
                                                           ember.tensor(b, requires_grad=True)))


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_reductions_and_matmul():
    x = _c((3, 4))
    for f, args in [("sum", ()), ("mean", ()), ("prod", ()), ("sum", (1,)), ("mean", (0,)),
                    ("prod", (1,))]:
        e, t = getattr(ember, f)(ember.tensor(x), *args), getattr(torch, f)(torch.tensor(x), *args)
        assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
        assert ember.autograd.gradcheck(lambda a: getattr(ember, f)(a, *args),
                                        (ember.tensor(x, requires_grad=True),))
    y = _c((4, 2))
    np.testing.assert_allclose((ember.tensor(x) @ ember.tensor(y)).numpy(), x @ y)
    assert ember.autograd.gradcheck(ember.matmul, (ember.tensor(x, requires_grad=True),
                                                   ember.tensor(y, requires_grad=True)))
    assert (ember.tensor(x.astype(np.complex64)) @ ember.tensor(y.astype(np.complex64))).dtype \
        == ember.complex64


@pytest.mark.skipif(torch is None, reason="torch oracle")
def test_complex_linear_model_trains_like_torch():
    d_in, d_out, n = 4, 3, 16
    W0, b0 = _c((d_out, d_in), np.complex64, 0.5), _c((d_out,), np.complex64, 0.1)
    X, Y = _c((n, d_in), np.complex64), _c((n, d_out), np.complex64)

    def train(lib):
        W = lib.tensor(W0, requires_grad=True)
        b = lib.tensor(b0, requires_grad=True)
        opt = lib.optim.SGD([W, b], lr=0.05, momentum=0.9)
        xs, ys = lib.tensor(X), lib.tensor(Y)
        losses = []
        for _ in range(8):
            opt.zero_grad()
            out = xs @ W.T + b
            loss = ((out - ys).abs() ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, W.detach().numpy().copy()

    le, we = train(ember)
    lt, wt = train(torch)
    np.testing.assert_allclose(le, lt, rtol=1e-5)
    assert le[-1] < le[0]
    np.testing.assert_allclose(we, wt, rtol=1e-4, atol=1e-5)
