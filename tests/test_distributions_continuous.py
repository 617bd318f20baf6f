"""The continuous families against torch.distributions where tests/test_distributions.py does not
look: Python-number parameters, derived attributes, the generalized Pareto's survival functions,
supports, expand (subclasses, draws of expanded families), validation quirks and draws of the
gamma-based families."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.distributions as D
from helpers import assert_close, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")
if torch is not None:
    import torch.distributions as TD

# family -> Python-number arguments
SCALAR_ARGS = {
    "Normal": (0.5, 2.0), "Uniform": (-1.0, 3.0), "Laplace": (0.5, 2.0), "Cauchy": (0.5, 2.0),
    "Exponential": (1.5,), "Gamma": (2.5, 1.5), "Chi2": (3.0,), "Beta": (2.0, 3.0),
    "StudentT": (4.0,), "FisherSnedecor": (5.0, 7.0), "HalfNormal": (1.5,), "HalfCauchy": (1.5,),
    "LogNormal": (0.2, 0.7), "Pareto": (1.5, 3.0), "Weibull": (1.5, 2.0), "Kumaraswamy": (2.0, 3.0),
    "Gumbel": (0.5, 2.0), "InverseGamma": (3.0, 2.0), "VonMises": (0.5, 2.0),
    "GeneralizedPareto": (0.5, 2.0, 0.2), "LogisticNormal": (0.3, 0.8),
}
METHODS = ["mean", "mode", "variance", "stddev", "entropy"]


def _attr(d, name):
    try:
        value = getattr(d, name)
        return value() if callable(value) else value
    except NotImplementedError:
        return None


@pytest.mark.parametrize("name", list(SCALAR_ARGS))
def test_number_parameters(name):
    args = SCALAR_ARGS[name]
    ed, td = getattr(D, name)(*args), getattr(TD, name)(*args)
    assert ed.batch_shape == td.batch_shape and ed.event_shape == td.event_shape
    assert repr(ed) == repr(td)
    torch.manual_seed(0)
    value = td.sample((3,))
    assert_close(ed.log_prob(ember.tensor(value.numpy())), td.log_prob(value), rtol=1e-5, atol=1e-5, msg=name)
    for method in METHODS:
        expected = _attr(td, method)
        if expected is None:
            assert _attr(ed, method) is None, f"{name}.{method}"
            continue
        actual = _attr(ed, method)
        assert str(actual.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1], f"{name}.{method}"
        assert_close(actual, expected, rtol=2e-5, atol=2e-5, msg=f"{name}.{method}")
    s = ed.sample((4,))
    assert tuple(s.shape) == tuple(td.sample((4,)).shape) and s.dtype == ember.float32


DERIVED = [
    ("Weibull", (np.array([1.0, 2.0]), np.array([0.5, 3.0])), ["concentration_reciprocal", "scale"]),
    ("Chi2", (np.array([1.0, 4.0]),), ["df", "concentration", "rate"]),
    ("InverseGamma", (np.array([1.5, 4.0]), np.array([2.0, 0.5])), ["concentration", "rate"]),
    ("LogNormal", (np.array([0.1, -0.3]), np.array([0.5, 1.5])), ["loc", "scale"]),
    ("LogisticNormal", (np.array([0.1, -0.3]), np.array([0.5, 1.5])), ["loc", "scale"]),
    ("HalfNormal", (np.array([0.5, 1.5]),), ["scale"]),
    ("HalfCauchy", (np.array([0.5, 1.5]),), ["scale", "mode"]),
    ("Beta", (np.array([0.5, 1.5]), np.array([2.0, 0.7])), ["concentration1", "concentration0"]),
    ("StudentT", (np.array([3.0, 9.0]),), ["df", "loc", "scale"]),
    ("Uniform", (np.array([0.0, 1.0]), np.array([1.0, 4.0])), ["mode"]),
    ("Cauchy", (np.array([0.0, 1.0]), np.array([1.0, 4.0])), ["stddev", "mean", "variance"]),
    ("Pareto", (np.array([1.0, 2.0]), np.array([0.5, 2.5])), ["mean", "variance", "stddev"]),
    ("InverseGamma", (np.array([0.5, 1.5, 3.0]), np.array([2.0, 0.5, 1.0])), ["mean", "variance"]),
    ("FisherSnedecor", (np.array([1.0, 3.0, 6.0]), np.array([2.0, 3.5, 6.0])), ["mean", "mode", "variance"]),
    ("StudentT", (np.array([0.5, 1.5, 2.0, 3.0]),), ["mean", "variance"]),
    ("GeneralizedPareto", (0.0, 1.0, np.array([-0.5, 0.0, 0.4, 0.7, 1.5])), ["mean", "variance", "entropy"]),
    ("Dirichlet", (np.array([[0.5, 0.7, 0.2], [2.0, 0.5, 3.0]]),), ["mode", "mean", "variance"]),
    ("Beta", (np.array([0.5, 0.5, 2.0, 3.0]), np.array([0.5, 2.0, 0.5, 3.0])), ["mode"]),
]


@pytest.mark.parametrize("name,args,attrs", DERIVED, ids=[f"{n}-{'-'.join(a)}" for n, _, a in DERIVED])
def test_derived_attributes(name, args, attrs):
    ed = getattr(D, name)(*[ember.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    td = getattr(TD, name)(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args])
    for attr in attrs:
        assert_close(_attr(ed, attr), _attr(td, attr), rtol=1e-10, atol=1e-10, msg=f"{name}.{attr}")


def test_generalized_pareto_survival_functions():
    args = [np.array([0.5, -1.0, 0.0, 2.0]), np.array([1.0, 2.0, 0.5, 1.5]), np.array([-0.4, 0.0, 0.3, 1.2])]
    ed = D.GeneralizedPareto(*[ember.tensor(a, dtype=ember.float32) for a in args])
    td = TD.GeneralizedPareto(*[torch.tensor(a, dtype=torch.float32) for a in args])
    torch.manual_seed(4)
    value = td.sample((5,))
    ev = ember.tensor(value.numpy())
    for method in ["log_survival_function", "log_cdf", "cdf", "log_prob"]:
        assert_close(getattr(ed, method)(ev), getattr(td, method)(value), rtol=1e-5, atol=1e-5, msg=method)
    p = torch.rand(5, 4)
    assert_close(ed.icdf(ember.tensor(p.numpy())), td.icdf(p), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,args", [
    ("Uniform", (np.array([0.0, -1.0]), np.array([1.0, 0.5]))),
    ("Pareto", (np.array([1.0, 0.5]), np.array([2.0, 3.0]))),
    ("GeneralizedPareto", (np.array([0.0, 0.5]), np.array([1.0, 2.0]), np.array([-0.5, 0.3]))),
    ("Gamma", (np.array([1.0, 2.0]), np.array([1.0, 2.0]))),
    ("Kumaraswamy", (np.array([1.0, 2.0]), np.array([1.0, 2.0]))),
    ("HalfCauchy", (np.array([1.0, 2.0]),)),
])
def test_support_matches_torch(name, args):
    ed = getattr(D, name)(*[ember.tensor(a) for a in args])
    td = getattr(TD, name)(*[torch.tensor(a) for a in args])
    x = np.array([-1.5, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0, 5.0])[:, None] * np.ones(2)
    assert_close(ed.support.check(ember.tensor(x)), td.support.check(torch.tensor(x)), msg=name)


def test_expand_of_subclasses_and_chi2():
    class Shifted(D.Normal):  # no __init__ of its own: expand gives the subclass
        pass

    class Custom(D.Gumbel):  # a custom __init__ needs a custom expand (as in torch)
        def __init__(self, scale):
            super().__init__(0.0, scale)

    class TorchCustom(TD.Gumbel):
        def __init__(self, scale):
            super().__init__(0.0, scale)

    assert type(Shifted(ember.zeros(2), 1.0).expand((3, 2))) is Shifted
    with pytest.raises(NotImplementedError):
        TorchCustom(torch.ones(2)).expand((3, 2))
    with pytest.raises(NotImplementedError, match="custom .expand"):
        Custom(ember.ones(2)).expand((3, 2))
    chi2 = D.Chi2(ember.tensor([1.0, 3.0])).expand((4, 2))
    assert type(chi2) is D.Chi2 and chi2.batch_shape == (4, 2)
    assert_close(chi2.df, ember.tensor([1.0, 3.0]).expand(4, 2))


EXPANDED_STREAMS = {
    "Normal": lambda m: (m.zeros(3), m.ones(3) * 2),
    "Uniform": lambda m: (m.zeros(3), m.tensor([1.0, 2.0, 3.0])),
    "Laplace": lambda m: (m.zeros(3), m.ones(3)),
    "Gumbel": lambda m: (m.zeros(3), m.tensor([1.0, 2.0, 3.0])),
    "Kumaraswamy": lambda m: (m.tensor([1.0, 2.0, 3.0]), m.tensor([2.0, 0.5, 1.0])),
    "LogNormal": lambda m: (m.zeros(3), m.ones(3)),
    "HalfNormal": lambda m: (m.tensor([1.0, 2.0, 3.0]),),
    "LogisticNormal": lambda m: (m.zeros(3), m.ones(3)),
    "GeneralizedPareto": lambda m: (m.zeros(3), m.ones(3), m.tensor([-0.2, 0.0, 0.5])),
}


@pytest.mark.parametrize("name", list(EXPANDED_STREAMS))
def test_expanded_draws_equal_torchs(name):
    """An expanded family draws what torch's draws, seed for seed."""
    results = []
    for mod, dmod in ((ember, D), (torch, TD)):
        d = getattr(dmod, name)(*EXPANDED_STREAMS[name](mod)).expand((2, 3))
        mod.manual_seed(5)
        results.append(d.rsample((4,)).numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,args", [
    ("FisherSnedecor", ([1.5, 4.0, 10.0], [2.0, 5.0, 30.0])), ("InverseGamma", ([0.5, 2.0, 7.0], [1.0, 2.0, 0.5])),
    ("StudentT", ([2.0, 5.0], [0.5, -1.0], [1.0, 3.0])), ("Beta", ([0.3, 4.0], [2.0, 0.6]))])
def test_gamma_based_draws_equal_torchs(name, args):
    results = []
    for mod, dmod in ((ember, D), (torch, TD)):
        d = getattr(dmod, name)(*[mod.tensor(a, dtype=mod.float64) for a in args]).expand((2, len(args[0])))
        mod.manual_seed(8)
        results.append(d.sample((3,)).numpy())
    if name == "InverseGamma":  # ember's x ** -1 is 1 / x; torch's pow may differ in the last bit
        np.testing.assert_allclose(results[0], results[1], rtol=1e-15, atol=0)
    else:
        np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("name,kwargs", [
    ("FisherSnedecor", dict(df1=[-1.0], df2=[2.0])), ("StudentT", dict(df=[0.0])),
    ("Gumbel", dict(loc=[0.0], scale=[0.0])), ("Weibull", dict(scale=[-1.0], concentration=[1.0])),
    ("Beta", dict(concentration1=[1.0], concentration0=[-1.0])), ("Uniform", dict(low=[1.0], high=[0.0])),
    ("InverseGamma", dict(concentration=[1.0], rate=[-1.0])), ("LogNormal", dict(loc=[0.0], scale=[-1.0])),
    ("GeneralizedPareto", dict(loc=[0.0], scale=[-1.0], concentration=[0.5])),
])
@pytest.mark.parametrize("validate", [None, False])
def test_invalid_parameters_raise_where_torchs_do(name, kwargs, validate):
    """Raise ValueError exactly when torch does (some inner distributions still check their
    parameters with validation off)."""
    try:
        getattr(TD, name)(**{k: torch.tensor(v) for k, v in kwargs.items()}, validate_args=validate)
    except ValueError:
        with pytest.raises(ValueError):
            getattr(D, name)(**{k: ember.tensor(v) for k, v in kwargs.items()}, validate_args=validate)
    else:
        getattr(D, name)(**{k: ember.tensor(v) for k, v in kwargs.items()}, validate_args=validate)


def test_values_outside_the_support_raise():
    cases = [(D.Gamma(1.0, 1.0), -1.0), (D.Beta(2.0, 2.0), 1.5), (D.Pareto(2.0, 1.0), 1.0),
             (D.HalfNormal(1.0), -0.5), (D.Uniform(0.0, 1.0), 1.5), (D.Dirichlet(ember.ones(2)), [0.7, 0.7])]
    for d, bad in cases:
        with pytest.raises(ValueError, match="support"):
            d.log_prob(ember.tensor(bad))
    assert math.isinf(float(D.HalfNormal(1.0, validate_args=False).log_prob(ember.tensor(-0.5))))
