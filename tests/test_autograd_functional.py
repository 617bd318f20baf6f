"""``autograd.functional`` (jacobian, hessian, vjp, jvp, hvp, vhp) against torch 2.13."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.autograd.functional as F

from test_autograd import same, T, V, A, B, _run  # noqa: F401

torch = pytest.importorskip("torch")

X = np.linspace(-1.0, 1.0, 3)
Y = np.array([0.5, -0.25, 2.0])


def f_vec(x):                      # R^3 -> R^3
    return (x * x).exp() * x + x.sum()


def f_two(x, y):                   # (R^3, R^3) -> (R^3, R^0-dim)
    return x * y * 2, (x.exp() * y).sum()


def f_scalar(x):                   # R^3 -> R
    return ((x * x * x).sum() + (x.exp() * x).sum())


def f_scalar2(x, y):
    return (x * x * y).sum() + (y * y * y).sum() * x.sum()


def f_mat(x):                      # (2, 3) -> (3, 3)
    return x.transpose(0, 1) @ (x * x)


def inputs(m, *arrs):
    return tuple(T(m, a) for a in arrs)


def F_of(m):
    return m.autograd.functional


# -------------------------------------------------------------------- jacobian

@pytest.mark.parametrize("create_graph", [False, True])
def test_jacobian_single(create_graph):
    same(lambda m: F_of(m).jacobian(f_vec, T(m, X), create_graph=create_graph))
    same(lambda m: F_of(m).jacobian(f_mat, T(m, A[:2, :3]), create_graph=create_graph))


def test_jacobian_tuples():
    same(lambda m: F_of(m).jacobian(f_two, inputs(m, X, Y)))
    same(lambda m: F_of(m).jacobian(lambda x: (x * 2, x.sum()), T(m, X)))
    same(lambda m: F_of(m).jacobian(lambda x, y: x * y, inputs(m, X, Y)))


def test_jacobian_vectorize_gives_same_result():
    same(lambda m: F_of(m).jacobian(f_two, inputs(m, X, Y), vectorize=True))


def test_jacobian_independent_input_and_strict():
    same(lambda m: F_of(m).jacobian(lambda x, y: x * 2, inputs(m, X, Y)))
    same(lambda m: F_of(m).jacobian(lambda x, y: x * 2, inputs(m, X, Y), strict=True))
    same(lambda m: F_of(m).jacobian(lambda x: x.detach() * 2, T(m, X), strict=True))
    same(lambda m: F_of(m).jacobian(lambda x: x * 2, T(m, X), strict=True, create_graph=True))
    same(lambda m: F_of(m).jacobian(f_vec, T(m, X), strict=True, vectorize=True))


def test_jacobian_create_graph_is_differentiable():
    def f(m):
        x = T(m, X, True)
        j = F_of(m).jacobian(f_vec, x, create_graph=True)
        j.sum().backward()
        return j, x.grad
    same(f)


def test_jacobian_strategy():
    same(lambda m: F_of(m).jacobian(f_vec, T(m, X), strategy="nonsense"))
    e = _run(lambda m: F_of(m).jacobian(f_vec, T(m, X), strategy="forward-mode"), ember)
    assert e[0] == "exc" and e[1] == "NotImplementedError"
    same(lambda m: F_of(m).jacobian(f_vec, T(m, X), strategy="forward-mode",
                                    create_graph=True))


def test_jacobian_input_type_errors():
    same(lambda m: F_of(m).jacobian(f_vec, [T(m, X)]))
    same(lambda m: F_of(m).jacobian(f_vec, (T(m, X), 3)))
    same(lambda m: F_of(m).jacobian(lambda x: 3, T(m, X)))


def test_jacobian_does_not_touch_inputs():
    def f(m):
        x = T(m, X, True)
        F_of(m).jacobian(f_vec, x)
        return x.grad, x.requires_grad
    same(f)


# -------------------------------------------------------------------- hessian

def test_hessian():
    same(lambda m: F_of(m).hessian(f_scalar, T(m, X)))
    same(lambda m: F_of(m).hessian(f_scalar2, inputs(m, X, Y)), atol=1e-5)
    same(lambda m: F_of(m).hessian(f_scalar, T(m, X), create_graph=True))


def test_hessian_errors():
    same(lambda m: F_of(m).hessian(f_vec, T(m, X)))
    same(lambda m: F_of(m).hessian(lambda x: (x.sum(), x.sum()), T(m, X)))
    same(lambda m: F_of(m).hessian(lambda x: (x * 2).sum(), T(m, X), strict=True))
    same(lambda m: F_of(m).hessian(f_scalar, T(m, X), outer_jacobian_strategy="bad"))


# -------------------------------------------------------------------- vjp / jvp

def test_vjp():
    same(lambda m: F_of(m).vjp(f_vec, T(m, X), T(m, Y)))
    same(lambda m: F_of(m).vjp(f_scalar, T(m, X)))
    same(lambda m: F_of(m).vjp(lambda x, y: x * y, inputs(m, X, Y), T(m, Y)))
    same(lambda m: F_of(m).vjp(f_two, inputs(m, X, Y), (T(m, Y), T(m, 2.0))))
    same(lambda m: F_of(m).vjp(f_vec, T(m, X), T(m, Y), create_graph=True))


def test_vjp_errors():
    same(lambda m: F_of(m).vjp(f_vec, T(m, X)))
    same(lambda m: F_of(m).vjp(f_vec, T(m, X), T(m, np.ones(4))))
    same(lambda m: F_of(m).vjp(f_two, inputs(m, X, Y), (T(m, Y),)))
    same(lambda m: F_of(m).vjp(f_two, inputs(m, X, Y), (T(m, Y), T(m, np.ones(2)))))
    same(lambda m: F_of(m).vjp(lambda x, y: x * 2, inputs(m, X, Y), T(m, Y), strict=True))
    same(lambda m: F_of(m).vjp(lambda x, y: x * 2, inputs(m, X, Y), T(m, Y)))


def test_jvp():
    same(lambda m: F_of(m).jvp(f_vec, T(m, X), T(m, Y)))
    same(lambda m: F_of(m).jvp(f_two, inputs(m, X, Y), inputs(m, Y, X)))
    same(lambda m: F_of(m).jvp(lambda x: x * x * 3, T(m, 2.0)))
    same(lambda m: F_of(m).jvp(f_vec, T(m, X), T(m, Y), create_graph=True))
    same(lambda m: F_of(m).jvp(f_vec, T(m, X)))
    same(lambda m: F_of(m).jvp(lambda x, y: x * 2, inputs(m, X, Y), inputs(m, Y, X),
                               strict=True))


def test_jvp_matches_jacobian_times_v():
    x, v = ember.tensor(X), ember.tensor(Y)
    _, jv = F.jvp(f_vec, x, v)
    j = F.jacobian(f_vec, x)
    np.testing.assert_allclose(jv._data, j._data @ Y, rtol=1e-10)


# -------------------------------------------------------------------- hvp / vhp

def test_hvp_vhp():
    same(lambda m: F_of(m).hvp(f_scalar, T(m, X), T(m, Y)))
    same(lambda m: F_of(m).vhp(f_scalar, T(m, X), T(m, Y)))
    same(lambda m: F_of(m).hvp(f_scalar2, inputs(m, X, Y), inputs(m, Y, X)), atol=1e-5)
    same(lambda m: F_of(m).vhp(f_scalar2, inputs(m, X, Y), inputs(m, Y, X)), atol=1e-5)
    same(lambda m: F_of(m).hvp(f_scalar, T(m, X), T(m, Y), create_graph=True))
    same(lambda m: F_of(m).vhp(lambda x: (x * x * x).sum(), T(m, 2.0)))


def test_hvp_vhp_errors():
    same(lambda m: F_of(m).hvp(f_vec, T(m, X), T(m, Y)))
    same(lambda m: F_of(m).vhp(lambda x: (x.sum(), x.sum()), T(m, X), T(m, Y)))
    same(lambda m: F_of(m).hvp(f_scalar, T(m, X)))
    same(lambda m: F_of(m).hvp(lambda x: (x * 2).sum(), T(m, X), T(m, Y), strict=True))
    same(lambda m: F_of(m).vhp(lambda x: (x * 2).sum(), T(m, X), T(m, Y)))


def test_hvp_equals_hessian_times_v():
    x, v = ember.tensor(X), ember.tensor(Y)
    _, hv = F.hvp(f_scalar, x, v)
    h = F.hessian(f_scalar, x)
    np.testing.assert_allclose(hv._data, h._data @ Y, rtol=1e-10)


def test_functions_capturing_outer_tensors():
    def f(m):
        w = T(m, Y, True)
        j = F_of(m).jacobian(lambda x: x * w, T(m, X))
        return j, w.grad
    same(f)


def test_module_import_styles():
    import ember.autograd.functional as F2
    from ember.autograd.functional import jacobian, hessian, vjp, jvp, hvp, vhp  # noqa: F401
    assert F2 is ember.autograd.functional
    assert sorted(F2.__all__) == sorted(torch.autograd.functional.__all__)
