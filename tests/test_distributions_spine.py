"""The spine of ember.distributions against torch.distributions: every transform (map, inverse,
log|det J|, shapes, sign, caching, equality), every constraint, biject_to / transform_to for
every registered constraint, every registered KL pair, the KL dispatch, ExponentialFamily's
entropy, and the wrappers (Independent, MixtureSameFamily, TransformedDistribution)."""
from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

import ember
import ember.distributions as D
from helpers import assert_close, torch
from test_distributions import FAMILIES, _same, make_pair

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")
if torch is not None:
    import torch.distributions as TD


def _pair(x):
    return ember.tensor(x), torch.tensor(x)


def _rng(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------
# Transforms

def _cat_parts(T):
    return [T.ExpTransform(), T.AffineTransform(1.0, -2.0), T.SigmoidTransform()]


# name -> (constructor on a transforms module and its package, input array)
_X = _rng(0).normal(size=(4, 3)) * 0.8
_SQUARE = _rng(1).normal(size=(2, 3, 3)) * 0.8
TRANSFORMS = {
    "exp": (lambda T, P: T.ExpTransform(), _X),
    "sigmoid": (lambda T, P: T.SigmoidTransform(), _X),
    "tanh": (lambda T, P: T.TanhTransform(), _X),
    "softplus": (lambda T, P: T.SoftplusTransform(), _X),
    "abs": (lambda T, P: T.AbsTransform(), _X),
    "softmax": (lambda T, P: T.SoftmaxTransform(), _X),
    "stick_breaking": (lambda T, P: T.StickBreakingTransform(), _X),
    "lower_cholesky": (lambda T, P: T.LowerCholeskyTransform(), _SQUARE),
    "positive_definite": (lambda T, P: T.PositiveDefiniteTransform(), _SQUARE),
    "corr_cholesky": (lambda T, P: T.CorrCholeskyTransform(), _rng(2).normal(size=(2, 6))),
    "affine_numbers": (lambda T, P: T.AffineTransform(0.5, -3.0), _X),
    "affine_tensor": (lambda T, P: T.AffineTransform(P.tensor([1.0, 2.0, 3.0], dtype=P.float64),
                                                     P.tensor([0.5, -2.0, 4.0], dtype=P.float64)), _X),
    "affine_event": (lambda T, P: T.AffineTransform(1.0, P.tensor([0.5, -2.0, 4.0], dtype=P.float64),
                                                    event_dim=1), _X),
    "affine_event2": (lambda T, P: T.AffineTransform(0.0, 2.5, event_dim=2), _X),
    "power": (lambda T, P: T.PowerTransform(P.tensor([0.5, 2.0, -1.5], dtype=P.float64)), np.abs(_X) + 0.1),
    "power_number": (lambda T, P: T.PowerTransform(3.0), np.abs(_X) + 0.1),
    "reshape": (lambda T, P: T.ReshapeTransform((3,), (3, 1)), _X),
    "independent": (lambda T, P: T.IndependentTransform(T.SigmoidTransform(), 1), _X),
    "compose": (lambda T, P: T.ComposeTransform([T.AffineTransform(0.0, 0.5), T.ExpTransform(),
                                                 T.PowerTransform(2.0)]), _X),
    "compose_event": (lambda T, P: T.ComposeTransform([T.ExpTransform(), T.StickBreakingTransform()]), _X),
    "compose_empty": (lambda T, P: T.ComposeTransform([]), _X),
    "identity": (lambda T, P: T.identity_transform, _X),
    "cat": (lambda T, P: T.CatTransform(_cat_parts(T), 1, [1, 1, 1]), _X),
    "cat_dim0": (lambda T, P: T.CatTransform([T.ExpTransform(), T.TanhTransform()], 0, [1, 3]), _X),
    "cat_event": (lambda T, P: T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                                               T.IndependentTransform(T.SigmoidTransform(), 1)], 0, [2, 2]),
                  _X),
    "stack": (lambda T, P: T.StackTransform(_cat_parts(T), 1), _X),
    "cdf": (lambda T, P: T.CumulativeDistributionTransform(
        (D if P is ember else TD).Normal(P.tensor([0.5, 0.0, -1.0], dtype=P.float64), 2.0)), _X),
    "inverse_exp": (lambda T, P: T.ExpTransform().inv, np.abs(_X) + 0.1),
    "inverse_affine": (lambda T, P: T.AffineTransform(1.0, -2.0).inv, _X),
    "inverse_compose": (lambda T, P: T.ComposeTransform([T.SigmoidTransform(), T.AffineTransform(-1.0, 3.0)]).inv,
                        _rng(3).uniform(-0.9, 1.9, (4, 3))),
}
NO_LOG_DET = {"abs", "softmax", "lower_cholesky", "positive_definite"}


def _both(name):
    make, x = TRANSFORMS[name]
    return make(D.transforms, ember), make(TD.transforms, torch), x


def _attr(t, name):
    try:
        value = getattr(t, name)
    except (NotImplementedError, ValueError) as e:
        return type(e)
    return value.tolist() if hasattr(value, "tolist") else value


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_matches_torch(name):
    et, tt, x = _both(name)
    ex, tx = _pair(x)
    ey, ty = et(ex), tt(tx)
    _same(ey, ty, "float64", f"{name}()")
    _same(et.inv(ey), tt.inv(ty), "float64", f"{name}.inv")
    if name not in NO_LOG_DET:
        _same(et.log_abs_det_jacobian(ex, ey), tt.log_abs_det_jacobian(tx, ty), "float64", f"{name}.ladj")
        _same(et.inv.log_abs_det_jacobian(ey, ex), tt.inv.log_abs_det_jacobian(ty, tx), "float64",
              f"{name}.inv.ladj")
    else:
        with pytest.raises(NotImplementedError):
            et.log_abs_det_jacobian(ex, ey)
    for attr in ("bijective", "sign", "event_dim"):
        assert _attr(et, attr) == _attr(tt, attr), attr
    assert repr(et.domain) == repr(tt.domain) and repr(et.codomain) == repr(tt.codomain)
    assert et.domain.event_dim == tt.domain.event_dim
    assert et.codomain.event_dim == tt.codomain.event_dim
    assert tuple(et.forward_shape(x.shape)) == tuple(tt.forward_shape(x.shape))
    assert tuple(et.inverse_shape(ty.shape)) == tuple(tt.inverse_shape(ty.shape))
    assert tuple(et.inv.forward_shape(ty.shape)) == tuple(tt.inv.forward_shape(ty.shape))
    assert et.inv.inv is et
    assert repr(et).replace("ember", "torch") == repr(tt)
    assert_close(et.codomain.check(ey), tt.codomain.check(ty))
    assert_close(et.domain.check(ex), tt.domain.check(tx))


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_with_cache(name):
    et, tt, x = _both(name)
    try:
        tt_cached = tt.with_cache(1)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            et.with_cache(1)
        return
    cached = et.with_cache(1)
    assert cached.with_cache(1) is cached and et.with_cache(0) is et
    assert type(cached) is type(et) and type(tt_cached) is type(tt)
    ex = ember.tensor(x)
    ey = cached(ex)
    assert cached(ex) is ey
    assert cached.inv(ey) is ex
    _same(ey, et(ex), "float64", f"{name} cached")


def test_transform_equality_pickle_and_errors():
    T = D.transforms
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.SigmoidTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(1.0, 2.0) != T.AffineTransform(1.0, 3.0)
    assert T.AffineTransform(ember.tensor([1.0]), 2.0) == T.AffineTransform(ember.tensor([1.0]), 2.0)
    assert T.PowerTransform(2.0) == T.PowerTransform(2.0) and T.PowerTransform(2.0) != T.PowerTransform(3.0)
    assert T.ExpTransform().inv == T.ExpTransform().inv and T.ExpTransform().inv != T.ExpTransform()
    assert T.ComposeTransform([T.ExpTransform()]) == T.ComposeTransform([T.ExpTransform()])
    assert len({T.ExpTransform(), T.ExpTransform()}) == 2           # hashed by identity, as in torch
    t = pickle.loads(pickle.dumps(T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform()])))
    assert_close(t(ember.tensor([0.5])), ember.tensor([math.exp(2.0)]))
    assert type(pickle.loads(pickle.dumps(T.TanhTransform()))) is T.TanhTransform
    with pytest.raises(ValueError):
        T.ExpTransform(cache_size=2)
    with pytest.raises(ValueError):
        T.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError):
        T.CorrCholeskyTransform().forward_shape((4,))
    with pytest.raises(ValueError):
        T.CorrCholeskyTransform().inverse_shape((3, 2))
    with pytest.raises(ValueError):
        T.StickBreakingTransform().forward_shape(())
    with pytest.raises(ValueError):
        T.ReshapeTransform((3,), (3, 1)).forward_shape((4, 2))
    with pytest.raises(ValueError):
        T.IndependentTransform(T.ExpTransform(), 2)(ember.ones(3))

    class Custom(T.Transform):
        def __init__(self, k, cache_size=0):
            super().__init__(cache_size=cache_size)

    with pytest.raises(NotImplementedError):
        Custom(1).with_cache(1)
    with pytest.raises(NotImplementedError):
        Custom(1)(ember.ones(1))
    plain = type("Plain", (T.Transform,), {"_call": lambda self, x: x + 1})
    assert plain().with_cache(1)._cache_size == 1
    assert plain()(ember.zeros(1)).tolist() == [1.0]


def test_transform_gradients_flow():
    x = ember.tensor([0.3, -1.2, 2.0], dtype=ember.float64, requires_grad=True)
    tx = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    for name in ("stick_breaking", "softplus", "tanh", "sigmoid", "compose"):
        et, tt, _ = _both(name)
        ey, ty = et(x), tt(tx)
        e_total = ey.sum() + et.log_abs_det_jacobian(x, ey).sum()
        t_total = ty.sum() + tt.log_abs_det_jacobian(tx, ty).sum()
        (eg,), (tg,) = ember.autograd.grad(e_total, [x]), torch.autograd.grad(t_total, [tx])
        assert_close(eg, tg, rtol=1e-9, atol=1e-10, msg=name)


# ---------------------------------------------------------------------------------------------
# Constraints

_VALUES = np.array([[-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, float("nan"), float("inf")]])
_MATRICES = np.stack([np.eye(3), np.tril(np.ones((3, 3))), -np.eye(3), np.ones((3, 3)) + 2 * np.eye(3),
                      np.array([[1.0, 0, 0], [0.6, 0.8, 0], [0.0, 0.6, 0.8]]),
                      np.array([[1.0, 2, 0], [2, 1, 0], [0, 0, 1]])])


def _constraint_cases(C):
    return {
        "real": (C.real, _VALUES), "boolean": (C.boolean, _VALUES), "positive": (C.positive, _VALUES),
        "nonnegative": (C.nonnegative, _VALUES), "unit_interval": (C.unit_interval, _VALUES),
        "nonnegative_integer": (C.nonnegative_integer, _VALUES),
        "positive_integer": (C.positive_integer, _VALUES),
        "greater_than": (C.greater_than(0.5), _VALUES), "greater_than_eq": (C.greater_than_eq(0.5), _VALUES),
        "less_than": (C.less_than(1.0), _VALUES), "interval": (C.interval(0.0, 2.0), _VALUES),
        "half_open_interval": (C.half_open_interval(0.0, 2.0), _VALUES),
        "integer_interval": (C.integer_interval(0, 2), _VALUES),
        "real_vector": (C.real_vector, _VALUES),
        "independent2": (C.independent(C.positive, 2), _MATRICES),
        "simplex": (C.simplex, np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1], [1.0, 0.0]])),
        "one_hot": (C.one_hot, np.array([[0.0, 1.0], [1.0, 1.0], [0.5, 0.5], [1.0, 0.0]])),
        "multinomial": (C.multinomial(3), np.array([[1.0, 2.0], [2.0, 2.0], [-1.0, 2.0], [0.0, 0.0]])),
        "lower_triangular": (C.lower_triangular, _MATRICES), "lower_cholesky": (C.lower_cholesky, _MATRICES),
        "corr_cholesky": (C.corr_cholesky, _MATRICES), "square": (C.square, _MATRICES),
        "square_not": (C.square, np.ones((2, 3, 2))), "symmetric": (C.symmetric, _MATRICES),
        "positive_semidefinite": (C.positive_semidefinite, _MATRICES),
        "positive_definite": (C.positive_definite, _MATRICES),
        "cat": (C.cat([C.positive, C.real, C.unit_interval], 1, [2, 5, 1]), _VALUES),
        "cat_default": (C.cat([C.positive, C.unit_interval], 0), np.array([[1.0, 0.5], [0.5, 2.0]])),
        "stack": (C.stack([C.positive, C.unit_interval], 1), np.array([[1.0, 0.5], [0.5, 2.0], [-1.0, 0.5]])),
        "stack_last": (C.stack([C.simplex, C.real_vector], -1), np.array([[[0.5, 1.0], [0.5, 2.0]]])),
        "mixture": (C.MixtureSameFamilyConstraint(C.positive), _VALUES),
        "mixture_scalar": (C.MixtureSameFamilyConstraint(C.unit_interval), np.array(0.5)),
        "mixture_simplex": (C.MixtureSameFamilyConstraint(C.simplex), np.array([[0.5, 0.5], [0.2, 0.9]])),
    }


@pytest.mark.parametrize("name", list(_constraint_cases(D.constraints)))
def test_constraint_matches_torch(name):
    ec, value = _constraint_cases(D.constraints)[name]
    tc, _ = _constraint_cases(TD.constraints)[name]
    assert_close(ec.check(ember.tensor(value)), tc.check(torch.tensor(value)), msg=name)
    assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
    assert repr(ec) == repr(tc)
    assert type(ec).__name__ == type(tc).__name__


def test_dependent_constraints():
    C, TC = D.constraints, TD.constraints
    assert C.is_dependent(C.dependent) and C.is_dependent(C.dependent(event_dim=1))
    assert not C.is_dependent(C.real)
    with pytest.raises(NotImplementedError, match="is_discrete"):
        C.dependent.is_discrete
    with pytest.raises(NotImplementedError, match="event_dim"):
        C.dependent.event_dim
    made = C.dependent(is_discrete=True)(event_dim=2)
    assert made.is_discrete and made.event_dim == 2
    with pytest.raises(ValueError, match="dependent"):
        C.dependent.check(ember.ones(1))
    with pytest.raises(ValueError):
        TC.dependent.check(torch.ones(1))
    assert repr(C.dependent) == repr(TC.dependent)

    class Holder:
        @C.dependent_property
        def bare(self):
            return C.positive

        @C.dependent_property(is_discrete=False, event_dim=1)
        def given(self):
            return C.real_vector

    assert Holder().bare is C.positive and Holder().given is C.real_vector
    assert C.is_dependent(Holder.bare) and Holder.given.event_dim == 1 and not Holder.given.is_discrete
    with pytest.raises(NotImplementedError):
        Holder.bare.event_dim
    with pytest.raises(ValueError):
        C.independent(C.positive, 3).check(ember.ones(2))
    assert set(C.__all__) == set(TC.__all__)
    by_name = C.interval(upper_bound=2.0, lower_bound=-1.0)
    assert repr(by_name) == repr(TC.interval(upper_bound=2.0, lower_bound=-1.0))
    assert repr(C.greater_than(lower_bound=1)) == repr(TC.greater_than(lower_bound=1))
    with pytest.raises(TypeError):
        C.interval(0.0)
    with pytest.raises(TypeError):
        C.less_than(1.0, upper_bound=2.0)


# ---------------------------------------------------------------------------------------------
# biject_to / transform_to

def _registry_cases(C, P):
    return {
        "real": C.real, "positive": C.positive, "nonnegative": C.nonnegative,
        "greater_than": C.greater_than(1.5), "greater_than_eq": C.greater_than_eq(-0.5),
        "less_than": C.less_than(-0.5), "unit_interval": C.unit_interval, "interval": C.interval(-1.0, 3.0),
        "interval_tensor": C.interval(P.tensor([0.0, 1.0, 2.0, 3.0], dtype=P.float64),
                                      P.tensor([1.0, 1.5, 4.0, 3.5], dtype=P.float64)),
        "half_open_interval": C.half_open_interval(0.0, 2.0), "real_vector": C.real_vector,
        "independent": C.independent(C.greater_than(1.0), 1), "simplex": C.simplex,
        "lower_cholesky": C.lower_cholesky, "positive_definite": C.positive_definite,
        "positive_semidefinite": C.positive_semidefinite, "corr_cholesky": C.corr_cholesky,
        "cat": C.cat([C.positive, C.real, C.unit_interval], 1, [1, 2, 1]),
        "stack": C.stack([C.positive, C.interval(-2.0, 0.0), C.real, C.unit_interval], 1),
        "boolean": C.boolean, "lower_triangular": C.lower_triangular, "one_hot": C.one_hot,
    }


@pytest.mark.parametrize("name", list(_registry_cases(D.constraints, ember)))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registry_matches_torch(name, registry):
    ec = _registry_cases(D.constraints, ember)[name]
    tc = _registry_cases(TD.constraints, torch)[name]
    try:
        tt = getattr(TD, registry)(tc)
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            getattr(D, registry)(ec)
        return
    et = getattr(D, registry)(ec)
    assert repr(et) == repr(tt)
    shape = {"lower_cholesky": (2, 3, 3), "positive_definite": (2, 3, 3), "positive_semidefinite": (2, 3, 3),
             "corr_cholesky": (2, 6)}.get(name, (2, 4))
    ex, tx = _pair(_rng(4).normal(size=shape))
    ey, ty = et(ex), tt(tx)
    _same(ey, ty, "float64", f"{registry}({name})")
    assert bool(ec.check(ey).all())
    assert et.bijective == tt.bijective
    _same(et.inv(ey), tt.inv(ty), "float64", f"{registry}({name}).inv")
    if tt.bijective:
        _same(et.log_abs_det_jacobian(ex, ey), tt.log_abs_det_jacobian(tx, ty), "float64", f"{registry}({name}).ladj")


def test_registry_register():
    reg = D.constraint_registry.ConstraintRegistry()

    @reg.register(D.constraints.positive)
    def _factory(c):
        return D.transforms.ExpTransform()

    assert isinstance(reg(D.constraints.greater_than(3.0)), D.transforms.ExpTransform)
    reg.register(D.constraints._Real, lambda c: D.transforms.identity_transform)
    assert reg(D.constraints.real) is D.transforms.identity_transform
    with pytest.raises(TypeError):
        reg.register(int, _factory)
    with pytest.raises(NotImplementedError):
        reg(D.constraints.simplex)


# ---------------------------------------------------------------------------------------------
# KL divergence

def _registered_pairs():
    from ember.distributions.kl import _KL_REGISTRY
    return sorted({(p.__name__, q.__name__) for p, q in _KL_REGISTRY
                   if p.__module__.startswith("ember.") and q.__module__.startswith("ember.")})


WRAPPERS = {"Independent", "TransformedDistribution"}


@pytest.mark.parametrize("p,q", [pq for pq in _registered_pairs()
                                 if not set(pq) & (WRAPPERS | {"ExponentialFamily"})])
def test_every_registered_kl_pair(p, q):
    ep, tp, epk, tpk = make_pair(p, "float64", seed=0, requires_grad=True)
    eq, tq, _, _ = make_pair(q, "float64", seed=1)
    ek, tk = D.kl_divergence(ep, eq), TD.kl_divergence(tp, tq)
    _same(ek, tk, "float64", f"KL({p}||{q})")
    if bool(torch.isfinite(tk).all()):
        names = [k for k in epk if ember.is_tensor(epk[k]) and epk[k].requires_grad]
        eg = ember.autograd.grad(ek.sum(), [epk[k] for k in names])
        tg = torch.autograd.grad(tk.sum(), [tpk[k] for k in names])
        for k, a, b in zip(names, eg, tg):
            assert_close(a, b, rtol=1e-8, atol=1e-9, msg=f"KL({p}||{q}) d/d{k}")


def test_kl_wrappers_and_errors():
    assert {pq for pq in _registered_pairs() if set(pq) & WRAPPERS} == {
        ("Independent", "Independent"), ("TransformedDistribution", "TransformedDistribution")}
    r = _rng(5)
    loc, scale = r.normal(size=(3, 2)), r.uniform(0.5, 2, (3, 2))
    e = [D.TransformedDistribution(D.Normal(ember.tensor(loc), ember.tensor(scale)), [D.transforms.ExpTransform()]),
         D.TransformedDistribution(D.Normal(ember.tensor(scale), ember.tensor(loc ** 2 + 1)),
                                   [D.transforms.ExpTransform()])]
    t = [TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)), [TD.transforms.ExpTransform()]),
         TD.TransformedDistribution(TD.Normal(torch.tensor(scale), torch.tensor(loc ** 2 + 1)),
                                    [TD.transforms.ExpTransform()])]
    _same(D.kl_divergence(*e), TD.kl_divergence(*t), "float64", "KL(transformed)")
    _same(D.kl_divergence(D.Independent(e[0], 1), D.Independent(e[1], 1)),
          TD.kl_divergence(TD.Independent(t[0], 1), TD.Independent(t[1], 1)), "float64", "KL(independent)")
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(e[0], 1), D.Independent(e[1], 0))
    other = D.TransformedDistribution(D.Normal(ember.tensor(loc), 1.0), [D.transforms.SigmoidTransform()])
    with pytest.raises(NotImplementedError):
        D.kl_divergence(e[0], other)
    with pytest.raises(NotImplementedError, match="total_count"):
        D.kl_divergence(D.Binomial(2, ember.tensor([0.5])), D.Binomial(3, ember.tensor([0.5])))
    assert math.isinf(float(D.kl_divergence(D.Binomial(3, ember.tensor(0.5)), D.Binomial(2, ember.tensor(0.5)))))
    mvn = D.MultivariateNormal(ember.zeros(2), ember.eye(2))
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(mvn, D.MultivariateNormal(ember.zeros(3), ember.eye(3)))
    with pytest.raises(ValueError, match="Low Rank"):
        D.kl_divergence(D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(3, 1), ember.ones(3)), mvn)


def test_kl_dispatch_specificity_and_ambiguity():
    class A(D.Normal):
        pass

    class B(D.Normal):
        pass

    class A2(A):
        pass

    @D.register_kl(A, D.Normal)
    def _a_normal(p, q):
        return ember.tensor(1.0)

    @D.register_kl(D.Normal, B)
    def _normal_b(p, q):
        return ember.tensor(2.0)

    assert float(D.kl_divergence(A2(0.0, 1.0), D.Normal(0.0, 1.0))) == 1.0     # inherited
    assert float(D.kl_divergence(D.Normal(0.0, 1.0), B(0.0, 1.0))) == 2.0
    with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(A, B\). Please register_kl\(A, B\)"):
        assert float(D.kl_divergence(A(0.0, 1.0), B(0.0, 1.0))) == 1.0

    @D.register_kl(A, B)
    def _a_b(p, q):
        return ember.tensor(3.0)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(D.kl_divergence(A2(0.0, 1.0), B(0.0, 1.0))) == 3.0      # the cache was cleared
    with pytest.raises(TypeError, match="type_q"):
        D.register_kl(D.Normal, float)


# ---------------------------------------------------------------------------------------------
# ExponentialFamily

def test_exponential_family_entropy_from_log_normalizer():
    class NaturalNormal(D.ExponentialFamily):
        """N(mu, s^2) in natural form: theta = (mu / s^2, -1 / (2 s^2)), h(x) = 1 / sqrt(2 pi)."""
        arg_constraints = {}

        def __init__(self, loc, scale):
            self.loc, self.scale = loc, scale
            super().__init__(loc.shape, validate_args=False)

        @property
        def _natural_params(self):
            return self.loc / self.scale ** 2, -0.5 / self.scale ** 2

        def _log_normalizer(self, a, b):
            return -a * a / (4 * b) + 0.5 * ember.log(-math.pi / b)

        @property
        def _mean_carrier_measure(self):
            return 0

    loc, scale = np.array([0.0, 1.5, -2.0]), np.array([0.5, 1.0, 3.0])
    ours = NaturalNormal(ember.tensor(loc), ember.tensor(scale)).entropy()
    _same(ours, TD.Normal(torch.tensor(loc), torch.tensor(scale)).entropy(), "float64", "Bregman entropy")
    with pytest.raises(NotImplementedError):
        D.ExponentialFamily(validate_args=False).entropy()


# ---------------------------------------------------------------------------------------------
# Wrappers

def test_independent_against_torch():
    logits = _rng(6).normal(size=(2, 3))
    e = D.Independent(D.Categorical(logits=ember.tensor(logits)), 0)
    t = TD.Independent(TD.Categorical(logits=torch.tensor(logits)), 0)
    assert e.has_enumerate_support == t.has_enumerate_support
    assert_close(e.enumerate_support(), t.enumerate_support())
    assert repr(e).replace("torch.", "") == repr(t).replace("torch.", "")
    with pytest.raises(NotImplementedError, match="cartesian"):
        D.Independent(D.Categorical(logits=ember.tensor(logits)), 1).enumerate_support()
    base = D.Normal(ember.zeros(2, 3), ember.ones(2, 3))
    d = D.Independent(base, 1)
    assert repr(d.support) == "IndependentConstraint(Real(), 1)"
    assert_close(d.mean, base.mean) and d.mode.shape == (2, 3) and d.variance.shape == (2, 3)
    assert D.Independent(base, 0).support is base.support


def test_mixture_broadcast_mixture_batch():
    r = _rng(7)
    w, loc, scale = r.uniform(0.1, 1, 3), r.normal(size=(4, 3)), r.uniform(0.5, 2, (4, 3))
    e = D.MixtureSameFamily(D.Categorical(ember.tensor(w)), D.Normal(ember.tensor(loc), ember.tensor(scale)))
    t = TD.MixtureSameFamily(TD.Categorical(torch.tensor(w)), TD.Normal(torch.tensor(loc), torch.tensor(scale)))
    v = r.normal(size=(5, 4))
    _same(e.log_prob(ember.tensor(v)), t.log_prob(torch.tensor(v)), "float64", "mixture.log_prob")
    _same(e.mean, t.mean, "float64", "mixture.mean")
    _same(e.variance, t.variance, "float64", "mixture.variance")
    _same(e.cdf(ember.tensor(v)), t.cdf(torch.tensor(v)), "float64", "mixture.cdf")
    assert tuple(e.sample((2, 5)).shape) == (2, 5, 4)
    assert repr(e).startswith("MixtureSameFamily(\n  Categorical(")
    assert repr(e.support) == repr(t.support)
    with pytest.raises(ValueError, match="support"):
        e.log_prob(ember.tensor([float("nan")] * 4))
    with pytest.raises(ValueError, match="Categorical"):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(ember.zeros(3), ember.ones(3)))
    with pytest.raises(ValueError, match="Component"):
        D.MixtureSameFamily(D.Categorical(ember.ones(3)), 3)
    with pytest.raises(ValueError, match="not compatible"):
        D.MixtureSameFamily(D.Categorical(ember.ones(2, 2)), D.Normal(ember.zeros(3, 2), ember.ones(3, 2)))


def test_mixture_seeded_samples_equal_torch():
    w, loc = np.array([[1.0, 2.0, 3.0]] * 4), np.arange(24.0).reshape(4, 3, 2)
    e = D.MixtureSameFamily(D.Categorical(ember.tensor(w)), D.Independent(D.Normal(ember.tensor(loc), 1.0), 1))
    t = TD.MixtureSameFamily(TD.Categorical(torch.tensor(w)), TD.Independent(TD.Normal(torch.tensor(loc), 1.0), 1))
    torch.manual_seed(3)
    ember.manual_seed(3)
    _same(e.sample((3,)), t.sample((3,)), "float64", "mixture.sample")


def test_transformed_distribution_broadcast_and_expand():
    loc = np.array([0.0, 1.0, -1.0])
    for dist, T, P in ((D, D.transforms, ember), (TD, TD.transforms, torch)):
        base = dist.Normal(P.tensor(0.5, dtype=P.float64), P.tensor(1.5, dtype=P.float64))
        made = dist.TransformedDistribution(base, [T.AffineTransform(P.tensor(loc), 2.0), T.ExpTransform()])
        if P is ember:
            ed = made
        else:
            td = made
    assert ed.batch_shape == td.batch_shape and ed.event_shape == td.event_shape
    assert ed.base_dist.batch_shape == td.base_dist.batch_shape
    v = _rng(8).uniform(0.1, 3.0, (2, 3))
    _same(ed.log_prob(ember.tensor(v)), td.log_prob(torch.tensor(v)), "float64", "broadcast.log_prob")
    ee, te = ed.expand((4, 3)), td.expand((4, 3))
    assert ee.batch_shape == te.batch_shape and type(ee) is D.TransformedDistribution
    _same(ee.log_prob(ember.tensor(v[:1])), te.log_prob(torch.tensor(v[:1])), "float64", "expand.log_prob")
    assert repr(ed.support) == repr(td.support)
    with pytest.raises(ValueError, match="list of Transforms"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [3])
    with pytest.raises(ValueError, match="Transform or list"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), (D.transforms.ExpTransform(),))
    with pytest.raises(ValueError, match="at least"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.transforms.StickBreakingTransform()])


def test_transformed_distribution_event_dims():
    r = _rng(9)
    loc, scale = r.normal(size=(2, 3)), r.uniform(0.5, 1.5, (2, 3))
    ed = D.TransformedDistribution(D.Normal(ember.tensor(loc), ember.tensor(scale)),
                                   [D.transforms.StickBreakingTransform()])
    td = TD.TransformedDistribution(TD.Normal(torch.tensor(loc), torch.tensor(scale)),
                                    [TD.transforms.StickBreakingTransform()])
    assert ed.batch_shape == td.batch_shape and ed.event_shape == td.event_shape
    assert type(ed.base_dist).__name__ == type(td.base_dist).__name__ == "Independent"
    torch.manual_seed(0)
    v = td.sample((4,))
    _same(ed.log_prob(ember.tensor(v.numpy())), td.log_prob(v), "float64", "stick.log_prob")
    assert repr(ed.support) == repr(td.support)
    reshaped = D.TransformedDistribution(D.Normal(ember.zeros(2, 6), 1.0), [D.transforms.ReshapeTransform((6,), (2, 3))])
    t_reshaped = TD.TransformedDistribution(TD.Normal(torch.zeros(2, 6), 1.0),
                                            [TD.transforms.ReshapeTransform((6,), (2, 3))])
    assert reshaped.event_shape == t_reshaped.event_shape and reshaped.batch_shape == t_reshaped.batch_shape
    assert repr(reshaped.support) == repr(t_reshaped.support)


# ---------------------------------------------------------------------------------------------
# Distribution base and utils

def test_distribution_base_behaviour():
    d = D.Normal(ember.zeros(2, 3), ember.ones(2, 3))
    assert d._extended_shape((4,)) == (4, 2, 3) and d._extended_shape() == (2, 3)
    with pytest.warns(FutureWarning, match="sample_n"):
        assert tuple(d.sample_n(5).shape) == (5, 2, 3)
    _same(d.perplexity(), TD.Normal(torch.zeros(2, 3), torch.ones(2, 3)).perplexity(), "float32", "perplexity")
    assert repr(D.Normal(0.0, 1.0)) == repr(TD.Normal(0.0, 1.0)).replace("torch.", "")

    class NoConstraints(D.Distribution):
        pass

    with pytest.warns(UserWarning, match="arg_constraints"):
        NoConstraints(validate_args=True)
    with pytest.raises(NotImplementedError):
        NoConstraints(validate_args=False).mean
    with pytest.warns(UserWarning, match="support"):
        NoConstraints.arg_constraints = {}
        NoConstraints(validate_args=True)._validate_sample(ember.ones(1))

    class Sub(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="custom .expand"):
        Sub(ember.zeros(2)).expand((3, 2))


def _expanded_pair(make, batch_shape):
    """``make(dist module, tensor module).expand(batch_shape)`` for ember and torch, with two
    seeded draws of each."""
    out = []
    for dist, P in ((D, ember), (TD, torch)):
        expanded = make(dist, P).expand(batch_shape)
        P.manual_seed(3)
        out.append((expanded, expanded.sample((2,))))
    return out


@pytest.mark.parametrize("case", ["reshape", "stick", "affine_broadcast", "corr_cholesky",
                                  "mixture", "independent", "user_expand"])
def test_expand_of_wrappers_and_user_subclasses(case):
    """The one expand: nested distributions keep their own dims right of the batch (a base
    whose transforms change shapes, mixture components, moved dims), and a user subclass with
    its own __init__ and expand (torch's pattern: ``_get_checked_instance``, then
    ``super().expand(..., _instance=new)``) gets its own class back."""
    def user_expand(dist, P):
        class HalfSpread(dist.Normal):
            def __init__(self, loc, validate_args=None):
                super().__init__(loc, 0.5, validate_args=validate_args)

            def expand(self, batch_shape, _instance=None):
                new = self._get_checked_instance(HalfSpread, _instance)
                return super().expand(batch_shape, _instance=new)
        return HalfSpread(P.zeros(2))

    T = lambda dist: dist.transforms  # noqa: E731
    makers = {
        "reshape": (lambda dist, P: dist.TransformedDistribution(
            dist.Normal(P.zeros(5, 6), 1.0), T(dist).ReshapeTransform((6,), (2, 3))), (4, 5)),
        "stick": (lambda dist, P: dist.TransformedDistribution(
            dist.Normal(P.zeros(3, 4), 1.0), [T(dist).StickBreakingTransform()]), (2, 3)),
        "affine_broadcast": (lambda dist, P: dist.TransformedDistribution(
            dist.Normal(P.zeros(4), 1.0), [T(dist).AffineTransform(P.zeros(3, 1), 2.0)]), (2, 3, 4)),
        "corr_cholesky": (lambda dist, P: dist.TransformedDistribution(
            dist.Normal(P.zeros(5, 3), 1.0), [T(dist).CorrCholeskyTransform()]), (2, 5)),
        "mixture": (lambda dist, P: dist.MixtureSameFamily(
            dist.Categorical(P.ones(3)), dist.Normal(P.zeros(4, 3), 1.0)), (2, 4)),
        "independent": (lambda dist, P: dist.Independent(dist.Normal(P.zeros(4, 3), 1.0), 1), (2, 4)),
        "user_expand": (user_expand, (3, 2)),
    }
    make, batch_shape = makers[case]
    (ee, e_draws), (te, t_draws) = _expanded_pair(make, batch_shape)
    assert type(ee).__name__ == type(te).__name__
    assert (ee.batch_shape, ee.event_shape) == (te.batch_shape, te.event_shape)
    for attr in ("base_dist", "_component_distribution", "_mixture_distribution"):
        if hasattr(te, attr):
            assert getattr(ee, attr).batch_shape == getattr(te, attr).batch_shape, attr
    _same(e_draws, t_draws, "float32", f"{case}.expand.sample")
    _same(ee.log_prob(e_draws), te.log_prob(t_draws), "float32", f"{case}.expand.log_prob")


def test_expand_needs_a_family():
    """Distribution and ExponentialFamily themselves, and a user's subclass of them, have no
    expand (NotImplementedError, as torch); an expanded copy keeps the validation flag."""
    class Plain(D.Distribution):
        arg_constraints = {}

    class TorchPlain(TD.Distribution):
        arg_constraints = {}

    with pytest.raises(NotImplementedError):
        TorchPlain(torch.Size([2]), validate_args=False).expand((3, 2))
    with pytest.raises(NotImplementedError):
        Plain(ember.Size([2]), validate_args=False).expand((3, 2))
    with pytest.raises(NotImplementedError):
        D.ExponentialFamily(ember.Size([2]), validate_args=False).expand((3, 2))
    strict = D.Exponential(ember.ones(2), validate_args=True).expand((3, 2))
    with pytest.raises(ValueError, match="support"):
        strict.log_prob(-ember.ones(3, 2))
    lenient = D.Exponential(ember.ones(2), validate_args=False).expand((3, 2))
    t_lenient = TD.Exponential(torch.ones(2), validate_args=False).expand((3, 2))
    _same(lenient.log_prob(-ember.ones(3, 2)), t_lenient.log_prob(-torch.ones(3, 2)), "float32",
          "lenient.expand.log_prob")


def test_expand_drops_cached_lazy_values():
    """Values a lazy_property cached are not carried over (they are recomputed with the new
    shape); a lazily derived parameter the instance holds (probs from logits) is expanded."""
    vm = D.VonMises(ember.zeros(2), ember.tensor([0.5, 2.0]))
    _ = vm.variance, vm._proposal_r  # cached
    nb = D.NegativeBinomial(ember.tensor([2.0, 3.0]), logits=ember.tensor([0.1, -0.4]))
    _ = nb.probs, nb._gamma
    for d, dropped in ((vm, ("variance", "_proposal_r")), (nb, ("_gamma",))):
        e = d.expand((3, 2))
        assert not any(name in e.__dict__ for name in dropped)
        for name in dropped:
            value = getattr(e, name)
            assert tuple(value.shape if ember.is_tensor(value) else value.batch_shape) == (3, 2)
    assert tuple(nb.expand((3, 2)).__dict__["probs"].shape) == (3, 2)
    tv = TD.VonMises(torch.zeros(2), torch.tensor([0.5, 2.0])).expand((3, 2))
    _same(vm.expand((3, 2)).variance, tv.variance, "float32", "von_mises.expand.variance")


def test_utils_against_torch():
    from ember.distributions import utils as U
    from torch.distributions import utils as TU
    for diag in (-1, 0, 1):
        m = _rng(10).normal(size=(2, 4, 4))
        ev, tv = U.tril_matrix_to_vec(ember.tensor(m), diag), TU.tril_matrix_to_vec(torch.tensor(m), diag)
        _same(ev, tv, "float64", f"tril_matrix_to_vec({diag})")
        _same(U.vec_to_tril_matrix(ev, diag), TU.vec_to_tril_matrix(tv, diag), "float64", f"vec_to_tril({diag})")
    with pytest.raises(ValueError):
        U.tril_matrix_to_vec(ember.ones(3, 3), diag=3)
    with pytest.raises(ValueError):
        U.vec_to_tril_matrix(ember.ones(4))
    p = np.array([0.0, 0.3, 1.0])
    for binary in (True, False):
        _same(U.probs_to_logits(ember.tensor(p), binary), TU.probs_to_logits(torch.tensor(p), binary), "float64",
              "probs_to_logits")
        _same(U.logits_to_probs(ember.tensor(p), binary), TU.logits_to_probs(torch.tensor(p), binary), "float64",
              "logits_to_probs")
    a, b = U.broadcast_all(ember.tensor([1, 2]), 2.0)
    ta, tb = TU.broadcast_all(torch.tensor([1, 2]), 2.0)
    assert str(b.dtype).split(".")[-1] == str(tb.dtype).split(".")[-1] and b.tolist() == tb.tolist()
    a, b = U.broadcast_all(1, 2.5)
    assert a.dtype == ember.get_default_dtype() and b.shape == ()
    with pytest.raises(ValueError):
        U.broadcast_all(ember.ones(2), "x")
    assert U.euler_constant == TU.euler_constant
    x = ember.ones(2, 3, 4)
    assert U._sum_rightmost(x, 0) is x and U._sum_rightmost(x, 2).tolist() == [12.0, 12.0]
    assert float(U._sum_rightmost(ember.tensor(3.0), 1)) == 3.0

    class Lazy:
        calls = 0

        @U.lazy_property
        def value(self):
            Lazy.calls += 1
            return 7

    obj = Lazy()
    assert obj.value == 7 and obj.value == 7 and Lazy.calls == 1
    assert isinstance(Lazy.value, property) and isinstance(Lazy.value, U.lazy_property)
