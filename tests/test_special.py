"""torch.special parity: values and dtypes vs torch (and SciPy), gradients, errors."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.special as ES
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs the torch oracle")

RNG = np.random.default_rng(1)

POS = lambda s: RNG.uniform(0.1, 5, s)            # noqa: E731
ANY = lambda s: RNG.uniform(-4, 4, s)             # noqa: E731
UNIT = lambda s: RNG.uniform(0.05, 0.95, s)       # noqa: E731
SMALL = lambda s: RNG.uniform(-0.9, 0.9, s)       # noqa: E731

UNARY = {  # name: (sampler, differentiable)
    "erf": (ANY, True), "erfc": (ANY, True), "erfcx": (ANY, True), "erfinv": (SMALL, True),
    "expit": (ANY, True), "exp2": (ANY, True), "expm1": (ANY, True), "log1p": (POS, True),
    "logit": (UNIT, True), "entr": (POS, True), "ndtr": (ANY, True), "ndtri": (UNIT, True),
    "log_ndtr": (ANY, True), "i0": (ANY, True), "i0e": (ANY, True), "i1": (ANY, True),
    "i1e": (ANY, True), "gammaln": (POS, True), "digamma": (POS, True), "psi": (POS, True),
    "sinc": (ANY, True), "round": (ANY, False),
    "bessel_j0": (ANY, False), "bessel_j1": (ANY, False), "bessel_y0": (POS, False),
    "bessel_y1": (POS, False), "modified_bessel_i0": (ANY, False),
    "modified_bessel_i1": (ANY, False), "modified_bessel_k0": (POS, False),
    "modified_bessel_k1": (POS, False), "scaled_modified_bessel_k0": (POS, False),
    "scaled_modified_bessel_k1": (POS, False), "spherical_bessel_j0": (ANY, False),
    "airy_ai": (ANY, False),
}
NONDIFF = {"bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "airy_ai"}
POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
         "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
         "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
         "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
         "laguerre_polynomial_l", "legendre_polynomial_p"]


def _cmp(e, t, rtol, atol=1e-6):
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol,
                               equal_nan=True)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values(name, dt):
    x = UNARY[name][0]((3, 5)).astype(dt)
    tol = 2e-5 if dt == "float32" else 1e-9
    _cmp(getattr(ES, name)(ember.tensor(x)), getattr(torch.special, name)(torch.tensor(x)),
         tol)


@pytest.mark.parametrize("name", ["erfcx", "ndtr", "i0e", "i1", "entr", "bessel_j0",
                                  "airy_ai", "modified_bessel_k0", "log_ndtr"])
def test_int_inputs_promote(name):
    x = np.arange(1, 5)
    _cmp(getattr(ES, name)(ember.tensor(x)), getattr(torch.special, name)(torch.tensor(x)),
         2e-5)


@pytest.mark.parametrize("name", sorted(n for n, (_, d) in UNARY.items() if d))
def test_unary_grad_matches_torch_and_gradcheck(name):
    x = UNARY[name][0]((6,))
    e = ember.tensor(x, requires_grad=True)
    t = torch.tensor(x, requires_grad=True)
    getattr(ES, name)(e).sum().backward()
    getattr(torch.special, name)(t).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-7, atol=1e-10)
    assert ember.autograd.gradcheck(getattr(ES, name), (ember.tensor(x, requires_grad=True),))


def test_i1_i1e_grad_at_zero():
    for n in ("i1", "i1e"):
        e = ember.tensor([0.0, 1.0], dtype=ember.float64, requires_grad=True)
        t = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
        getattr(ES, n)(e).sum().backward()
        getattr(torch.special, n)(t).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", sorted(NONDIFF) + POLYS)
def test_not_differentiable_like_torch(name):
    x = ember.tensor(POS((4,)), requires_grad=True)
    r = getattr(ES, name)(x, 3) if name in POLYS else getattr(ES, name)(x)
    assert not r.requires_grad and r.grad_fn is None


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name", POLYS)
def test_polynomials(name, dt):
    x = RNG.uniform(-1.5, 1.5, (4, 1)).astype(dt)
    n = np.array([-1, 0, 1, 2, 3, 5, 7])
    tol = 1e-4 if dt == "float32" else 1e-9
    _cmp(getattr(ES, name)(ember.tensor(x), ember.tensor(n)),
         getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)), tol, 1e-4)
    _cmp(getattr(ES, name)(ember.tensor(x), 4), getattr(torch.special, name)(torch.tensor(x), 4),
         tol, 1e-4)


def test_polynomial_dtypes():
    for name in POLYS[:2]:
        a = getattr(ES, name)(ember.tensor([1, 2]), ember.tensor([2, 3]))
        assert a.dtype == ember.float32


BINARY = {"xlogy": (POS, POS), "xlog1py": (POS, POS), "zeta": (lambda s: RNG.uniform(1.5, 4, s),
                                                               POS),
          "gammainc": (POS, POS), "gammaincc": (POS, POS)}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name):
    fa, fb = BINARY[name]
    a, b = fa((3, 4)), fb((4,))
    _cmp(getattr(ES, name)(ember.tensor(a), ember.tensor(b)),
         getattr(torch.special, name)(torch.tensor(a), torch.tensor(b)), 1e-9)
    _cmp(getattr(ES, name)(ember.tensor(a.astype("float32")), ember.tensor(b.astype("float32"))),
         getattr(torch.special, name)(torch.tensor(a.astype("float32")),
                                      torch.tensor(b.astype("float32"))), 2e-5)
    # gradient w.r.t. the second argument (torch implements it for all five)
    eb = ember.tensor(b, requires_grad=True)
    tb = torch.tensor(b, requires_grad=True)
    getattr(ES, name)(ember.tensor(a), eb).sum().backward()
    getattr(torch.special, name)(torch.tensor(a), tb).sum().backward()
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-7)
    assert ember.autograd.gradcheck(lambda y: getattr(ES, name)(ember.tensor(a), y),
                                    (ember.tensor(b, requires_grad=True),))


@pytest.mark.parametrize("name,what", [("zeta", "zeta"), ("gammainc", "igamma: input"),
                                       ("gammaincc", "igammac: input")])
def test_not_implemented_derivatives(name, what):
    a = ember.tensor([2.0, 3.0], requires_grad=True)
    r = getattr(ES, name)(a, ember.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=f"the derivative for '{what}' is not implemented"):
        r.sum().backward()


def test_xlog1py_grad_x():
    a, b = np.array([0.0, 1.0, 2.0]), np.array([-1.0, 0.5, 3.0])
    e = ember.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    ES.xlog1py(e, ember.tensor(b)).sum().backward()
    torch.special.xlog1py(t, torch.tensor(b)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


def test_aliases_and_reductions():
    x = ANY((3, 4))
    for n, args in [("softmax", (1,)), ("log_softmax", (0,)), ("logsumexp", (1,))]:
        _cmp(getattr(ES, n)(ember.tensor(x), *args),
             getattr(torch.special, n)(torch.tensor(x), *args), 1e-9)
    _cmp(ES.softmax(ember.tensor(x), 1, dtype=ember.float32),
         torch.special.softmax(torch.tensor(x), 1, dtype=torch.float32), 1e-6)
    p = POS((4,))
    _cmp(ES.polygamma(2, ember.tensor(p)), torch.special.polygamma(2, torch.tensor(p)), 1e-9)
    _cmp(ES.multigammaln(ember.tensor(x + 6), 3), torch.special.multigammaln(
        torch.tensor(x + 6), 3), 1e-9)
    _cmp(ES.round(ember.tensor(x), decimals=2), torch.special.round(torch.tensor(x), decimals=2),
         1e-9)
    assert ES.erf is ember.erf and ES.expit is ember.sigmoid and ES.psi is ember.digamma


def test_top_level_igamma():
    a, b = POS((5,)), POS((5,))
    _cmp(ember.igamma(ember.tensor(a), ember.tensor(b)),
         torch.igamma(torch.tensor(a), torch.tensor(b)), 1e-9)
    x = ember.tensor(a)
    x.igammac_(ember.tensor(b))
    np.testing.assert_allclose(x.numpy(), torch.igammac(torch.tensor(a), torch.tensor(b)).numpy())


def test_all_torch_special_names_exist():
    names = [n for n in dir(torch.special) if not n.startswith("_") and
             callable(getattr(torch.special, n)) and not isinstance(getattr(torch.special, n), type)]
    missing = [n for n in names if not hasattr(ES, n)]
    assert not missing, missing


def test_matches_scipy():
    sp = pytest.importorskip("scipy.special")
    x = POS((10,))
    np.testing.assert_allclose(ES.erfcx(ember.tensor(x)).numpy(), sp.erfcx(x))
    np.testing.assert_allclose(ES.zeta(ember.tensor(x + 1), ember.tensor(x)).numpy(),
                               sp.zeta(x + 1, x))
    np.testing.assert_allclose(ES.legendre_polynomial_p(ember.tensor(x / 5), 4).numpy(),
                               sp.eval_legendre(4, x / 5), rtol=1e-10)
