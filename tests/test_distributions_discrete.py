"""The discrete and matrix families against torch.distributions, beyond tests/test_distributions.py:
logits parameterisations, seeded streams, gradients, expand of derived values, error texts,
edge values (zero probabilities, p = 1/2), reprs."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.distributions as D
from helpers import assert_close, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")
if torch is not None:
    import torch.distributions as TD


def _pair(name, **params):
    """The family ``name`` in ember and torch with float64 copies of ``params``."""
    def conv(mod, v):
        return mod.tensor(v, dtype=mod.float64) if isinstance(v, (list, np.ndarray)) else v
    return (getattr(D, name)(**{k: conv(ember, v) for k, v in params.items()}),
            getattr(TD, name)(**{k: conv(torch, v) for k, v in params.items()}))


def _np(x):
    return x.detach().numpy() if hasattr(x, "detach") else np.asarray(x)


LOGITS = [("Bernoulli", {}), ("Geometric", {}), ("Binomial", dict(total_count=[[3.0], [5.0]])),
          ("NegativeBinomial", dict(total_count=[[1.5], [4.0]])), ("ContinuousBernoulli", {})]


@pytest.mark.parametrize("name,extra", LOGITS)
def test_logits_parameterisation_values_and_gradients(name, extra):
    logits = np.array([[-2.0, -0.3, 0.0, 1.7], [0.4, 2.5, -1.1, 0.001]])
    e_logits = ember.tensor(logits, requires_grad=True)
    t_logits = torch.tensor(logits, requires_grad=True)
    ed = getattr(D, name)(logits=e_logits, **{k: ember.tensor(v) for k, v in extra.items()})
    td = getattr(TD, name)(logits=t_logits, **{k: torch.tensor(v) for k, v in extra.items()})
    torch.manual_seed(0)
    value = td.sample((3,))
    el = ed.log_prob(ember.tensor(value.numpy()))
    tl = td.log_prob(value)
    assert_close(el, tl, rtol=1e-10, atol=1e-10)
    assert_close(ed.probs, td.probs, rtol=1e-12, atol=1e-12)
    assert_close(ed.mean, td.mean, rtol=1e-10, atol=1e-10)
    (eg,) = ember.autograd.grad(el.sin().sum(), [e_logits])
    (tg,) = torch.autograd.grad(tl.sin().sum(), [t_logits])
    assert_close(eg, tg, rtol=1e-8, atol=1e-10)


def test_negative_binomial_and_lkj_seeded_streams_equal_torch():
    for build in (lambda m, Dm: Dm.NegativeBinomial(m.tensor([2.0, 7.5], dtype=m.float64),
                                                    m.tensor([0.3, 0.6], dtype=m.float64)),
                  lambda m, Dm: Dm.LKJCholesky(4, m.tensor([0.5, 3.0], dtype=m.float64))):
        ember.manual_seed(4)
        torch.manual_seed(4)
        e = build(ember, D).sample((5,))
        t = build(torch, TD).sample((5,))
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # lgamma(0) = inf, masked
def test_negative_binomial_log_prob_gradients_and_zero_count():
    n = np.array([0.0, 1.5, 4.0])
    p = np.array([0.2, 0.5, 0.7])
    en, ep = ember.tensor(n, requires_grad=True), ember.tensor(p, requires_grad=True)
    tn, tp = torch.tensor(n, requires_grad=True), torch.tensor(p, requires_grad=True)
    k = np.array([[0.0, 2.0, 5.0], [1.0, 0.0, 3.0]])
    el = D.NegativeBinomial(en, ep).log_prob(ember.tensor(k))
    tl = TD.NegativeBinomial(tn, tp).log_prob(torch.tensor(k))
    assert_close(el, tl, rtol=1e-10, atol=1e-10)
    eg = ember.autograd.grad(el[:, 1:].sum(), [en, ep])
    tg = torch.autograd.grad(tl[:, 1:].sum(), [tn, tp])
    for a, b in zip(eg, tg):
        assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_zero_probability_categories_match_torch():
    probs = [[0.0, 0.3, 0.7], [0.5, 0.5, 0.0]]
    ed, td = _pair("Categorical", probs=probs)
    assert_close(ed.entropy(), td.entropy(), rtol=1e-12, atol=1e-12)
    em, tm = _pair("Multinomial", total_count=4, probs=probs)
    counts = [[0.0, 1.0, 3.0], [2.0, 2.0, 0.0]]
    assert_close(em.log_prob(ember.tensor(counts, dtype=ember.float64)),
                 tm.log_prob(torch.tensor(counts, dtype=torch.float64)), rtol=1e-12, atol=1e-12)
    assert_close(em.entropy(), tm.entropy(), rtol=1e-10, atol=1e-10)
    logits = [[float("-inf"), 0.3, 1.0]]  # a category of probability exactly zero
    ed, td = _pair("Categorical", logits=logits)
    assert_close(ed.entropy(), td.entropy(), rtol=1e-12, atol=1e-12)
    em, tm = _pair("Multinomial", total_count=3, logits=logits)
    counts = [[0.0, 2.0, 1.0]]
    assert_close(em.log_prob(ember.tensor(counts, dtype=ember.float64)),
                 tm.log_prob(torch.tensor(counts, dtype=torch.float64)), rtol=1e-12, atol=1e-12)


def test_geometric_at_probability_one_and_bernoulli_mode_tie():
    ed, td = _pair("Geometric", probs=[1.0, 0.4])
    v = [[0.0, 3.0], [1.0, 0.0]]
    assert_close(ed.log_prob(ember.tensor(v, dtype=ember.float64)),
                 td.log_prob(torch.tensor(v, dtype=torch.float64)))
    eb, tb = _pair("Bernoulli", probs=[0.5, 0.2, 0.9])
    assert_close(eb.mode, tb.mode)


def test_continuous_bernoulli_around_one_half():
    probs = [0.4989, 0.499, 0.4995, 0.5, 0.5007, 0.501, 0.5012]
    ed, td = _pair("ContinuousBernoulli", probs=probs)
    x = np.linspace(0.05, 0.95, 7)
    for method in ("log_prob", "cdf", "icdf"):
        assert_close(getattr(ed, method)(ember.tensor(x)), getattr(td, method)(torch.tensor(x)),
                     rtol=1e-10, atol=1e-10, msg=method)
    for attr in ("mean", "variance", "stddev"):
        assert_close(getattr(ed, attr), getattr(td, attr), rtol=1e-10, atol=1e-10, msg=attr)
    assert_close(ed.entropy(), td.entropy(), rtol=1e-10, atol=1e-10)
    edge = np.array([0.0, 1.0, -0.5, 1.5])
    small, tsmall = _pair("ContinuousBernoulli", probs=[0.3] * 4, validate_args=False)
    assert_close(small.cdf(ember.tensor(edge)), tsmall.cdf(torch.tensor(edge)))
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(ember.tensor([1.5]), validate_args=True)


def test_straight_through_rsample_gradient():
    probs = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3]])
    ep, tp = ember.tensor(probs, requires_grad=True), torch.tensor(probs, requires_grad=True)
    ember.manual_seed(1)
    torch.manual_seed(1)
    es = D.OneHotCategoricalStraightThrough(ep).rsample((4,))
    ts = TD.OneHotCategoricalStraightThrough(tp).rsample((4,))
    assert_close(es, ts)
    w = np.arange(24.0).reshape(4, 2, 3)
    (eg,) = ember.autograd.grad((es * ember.tensor(w)).sum(), [ep])
    (tg,) = torch.autograd.grad((ts * torch.tensor(w)).sum(), [tp])
    assert_close(eg, tg)


@pytest.mark.parametrize("name,params", [
    ("Bernoulli", dict(logits=[0.3, -1.0])),
    ("Categorical", dict(logits=[[0.3, -1.0, 2.0]])),
    ("MultivariateNormal", dict(loc=[0.0, 1.0], covariance_matrix=[[2.0, 0.5], [0.5, 1.0]])),
    ("LowRankMultivariateNormal", dict(loc=[0.0, 1.0], cov_factor=[[1.0], [0.5]], cov_diag=[1.0, 2.0])),
    ("Wishart", dict(df=[4.0], precision_matrix=[[2.0, 0.5], [0.5, 1.0]])),
])
def test_expand_after_derived_values_were_cached(name, params):
    ed, td = _pair(name, **params)
    for attr in ("probs", "logits", "scale_tril", "covariance_matrix", "precision_matrix", "variance"):
        if hasattr(td, attr):
            getattr(ed, attr)  # cache lazily computed values before expanding
    ee, te = ed.expand((3,) + tuple(td.batch_shape)), td.expand((3,) + tuple(td.batch_shape))
    assert ee.batch_shape == te.batch_shape and ee.event_shape == te.event_shape
    for attr in ("probs", "logits", "param_shape", "scale_tril", "covariance_matrix",
                 "precision_matrix", "mean", "variance"):
        if hasattr(te, attr):
            a, b = getattr(ee, attr), getattr(te, attr)
            if isinstance(b, torch.Size):
                assert tuple(a) == tuple(b), attr
            else:
                assert_close(a, b, rtol=1e-10, atol=1e-10, msg=attr)
    assert_close(ee.entropy(), te.entropy(), rtol=1e-10, atol=1e-10)


def test_expand_of_nested_families():
    for name, params in [("Multinomial", dict(total_count=5, probs=[[0.2, 0.3, 0.5]])),
                         ("LKJCholesky", dict(dim=3, concentration=[1.5])),
                         ("RelaxedBernoulli", dict(temperature=[0.5], probs=[0.3])),
                         ("RelaxedOneHotCategorical", dict(temperature=[0.5], probs=[[0.2, 0.8]]))]:
        ed, td = _pair(name, **params)
        ee, te = ed.expand((4, 1)), td.expand((4, 1))
        assert type(ee) is type(ed) and ee.batch_shape == te.batch_shape
        torch.manual_seed(0)
        v = te.sample((2,))
        assert_close(ee.log_prob(ember.tensor(v.numpy())), te.log_prob(v), rtol=1e-10, atol=1e-10)
        assert tuple(ee.sample((2,)).shape) == tuple(v.shape)


def test_subclass_with_own_init_must_define_expand():
    class Mine(D.Bernoulli):
        def __init__(self, p):
            super().__init__(probs=p)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Mine(ember.tensor([0.3])).expand((2, 1))


@pytest.mark.filterwarnings("ignore:Singular sample detected")  # torch's correction pass warns
def test_wishart_with_number_df():
    cov = [[2.0, 0.3], [0.3, 1.0]]
    ed, td = _pair("Wishart", df=5.0, covariance_matrix=cov)
    assert ed.batch_shape == td.batch_shape == ()
    for attr in ("mean", "mode", "variance"):
        assert_close(getattr(ed, attr), getattr(td, attr), rtol=1e-12, atol=1e-12, msg=attr)
    assert_close(ed.entropy(), td.entropy(), rtol=1e-10, atol=1e-10)
    ember.manual_seed(0)
    s = ed.rsample((500,))
    assert bool(ed.support.check(s).all())
    assert_close(s.mean(0), ed.mean, rtol=0.15, atol=0.5)


ERRORS = [
    (lambda m, Dm: Dm.Categorical(m.tensor(0.5)), ValueError, "`probs` parameter must be at least one-dimensional"),
    (lambda m, Dm: Dm.Categorical(logits=m.tensor(0.5)), ValueError, "`logits` parameter must be at least"),
    (lambda m, Dm: Dm.Multinomial(m.tensor(3), m.ones(3)), NotImplementedError, "inhomogeneous total_count"),
    (lambda m, Dm: Dm.Binomial(m.tensor([2.0, 3.0]), m.tensor([0.5, 0.5])).enumerate_support(),
     NotImplementedError, "Inhomogeneous total count not supported by `enumerate_support`"),
    (lambda m, Dm: Dm.Binomial(m.tensor([2.0, 3.0]), m.tensor([0.5, 0.5])).entropy(),
     NotImplementedError, "Inhomogeneous total count not supported by `entropy`"),
    (lambda m, Dm: Dm.MultivariateNormal(m.zeros(())), ValueError, "loc must be at least one-dimensional"),
    (lambda m, Dm: Dm.MultivariateNormal(m.zeros(2), scale_tril=m.ones(2)), ValueError,
     "scale_tril matrix must be at least two-dimensional"),
    (lambda m, Dm: Dm.MultivariateNormal(m.zeros(2), precision_matrix=m.ones(2)), ValueError,
     "precision_matrix must be at least two-dimensional"),
    (lambda m, Dm: Dm.MultivariateNormal(m.zeros(2), m.eye(2), scale_tril=m.eye(2)), ValueError, "Exactly one"),
    (lambda m, Dm: Dm.LowRankMultivariateNormal(m.zeros(2), m.ones(2), m.ones(2)), ValueError,
     "cov_factor must be at least two-dimensional"),
    (lambda m, Dm: Dm.LowRankMultivariateNormal(m.zeros(2), m.ones(2, 1), m.ones(3)), ValueError,
     "cov_diag must be a batch of vectors"),
    (lambda m, Dm: Dm.LowRankMultivariateNormal(m.zeros(3, 2), m.ones(4, 2, 1), m.ones(2)), ValueError,
     "Incompatible batch shapes"),
    (lambda m, Dm: Dm.Wishart(m.tensor([1.5, 4.0]), covariance_matrix=m.eye(3)), ValueError,
     "expected to be greater than ndim - 1 = 2"),
    (lambda m, Dm: Dm.Wishart(4.0, scale_tril=m.ones(3)), ValueError, "at least two-dimensional"),
    (lambda m, Dm: Dm.LKJCholesky(1), ValueError, "Found dim=1"),
    (lambda m, Dm: Dm.Bernoulli(), ValueError, "Either `probs` or `logits` must be specified"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_error_classes_and_messages_match_torch(i):
    build, cls, text = ERRORS[i]
    for mod, dmod in ((torch, TD), (ember, D)):
        with pytest.raises(cls, match=text.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            build(mod, dmod)


def test_wishart_low_df_warns():
    with pytest.warns(UserWarning, match="Low df values detected"):
        D.Wishart(ember.tensor(2.5), covariance_matrix=ember.eye(3))


@pytest.mark.parametrize("name,params", [
    ("Bernoulli", dict(probs=[0.3, 0.6])), ("Binomial", dict(total_count=4, probs=0.3)),
    ("NegativeBinomial", dict(total_count=[4.0], logits=[0.3])), ("Poisson", dict(rate=2.0)),
    ("Categorical", dict(probs=[0.3, 0.7])), ("Multinomial", dict(total_count=3, probs=[0.3, 0.7])),
    ("Geometric", dict(probs=0.25)),
])
def test_repr_and_param_shape_match_torch(name, params):
    ed, td = _pair(name, **params)
    assert repr(ed).replace("torch.", "") == repr(td).replace("torch.", "")
    if hasattr(td, "param_shape"):
        assert tuple(ed.param_shape) == tuple(td.param_shape)


@pytest.mark.filterwarnings("ignore:Singular sample detected")
@pytest.mark.parametrize("df,sample_shape", [([6.0, 4.0], ()), ([6.0, 4.0], (2, 3)), (5.0, (3,))])
def test_wishart_seeded_rsample_equals_torch(df, sample_shape):
    """Non-singular draws: the stream (Bartlett draws and torch's correction pass) agrees."""
    cov = [[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 1.5]]
    ed, td = _pair("Wishart", df=df, covariance_matrix=cov)
    ember.manual_seed(5)
    torch.manual_seed(5)
    assert_close(ed.rsample(sample_shape), td.rsample(sample_shape), rtol=1e-12, atol=1e-12)
