"""``kl_divergence(p, q)``: KL(p || q) = E_p[log p(x) - log q(x)], looked up by the pair of
types; ``register_kl`` adds pairs.

Lookup: among the registered pairs ``(P, Q)`` with ``type(p)`` a subclass of ``P`` and
``type(q)`` of ``Q``, the one whose classes stand earliest in the two MROs wins (p's first,
then q's). When ranking q's first picks another function the choice is ambiguous: a warning
says so. The closed forms below are written from the densities.
"""
from __future__ import annotations

import math
import warnings

import ember
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _batch_mahalanobis, _sum_rightmost, euler_constant as _EULER
# discrete
from .bernoulli import Bernoulli
from .binomial import Binomial
from .categorical import Categorical, OneHotCategorical
from .geometric import Geometric
from .poisson import Poisson
# continuous, univariate
from .beta import Beta
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .laplace import Laplace
from .normal import Normal
from .pareto import Pareto
from .uniform import Uniform
# multivariate
from .dirichlet import Dirichlet
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
# wrappers
from .independent import Independent
from .transformed_distribution import TransformedDistribution

__all__ = ["register_kl", "kl_divergence"]

_KL_REGISTRY = {}                        # (P, Q) -> fn(p, q)
_KL_MEMOIZE = {}                         # (type(p), type(q)) -> fn, or None: nothing fits


def register_kl(type_p, type_q):
    """Decorator: ``fn(p, q)`` computes KL(p || q) for ``p`` of ``type_p`` and ``q`` of
    ``type_q`` (subclasses included, unless a more specific pair is registered)."""
    for name, kind in (("type_p", type_p), ("type_q", type_q)):
        if not (isinstance(kind, type) and issubclass(kind, Distribution)):
            raise TypeError(f"Expected {name} to be a Distribution subclass but got {kind}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn
    return decorator


def _lookup(type_p, type_q):
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    ranked = [((mro_p.index(P), mro_q.index(Q)), (P, Q)) for P, Q in _KL_REGISTRY
              if P in mro_p and Q in mro_q]
    if not ranked:
        return None
    _, (left_p, left_q) = min(ranked)
    _, (right_p, right_q) = min(ranked, key=lambda item: item[0][::-1])
    fn = _KL_REGISTRY[left_p, left_q]
    if fn is not _KL_REGISTRY[right_p, right_q]:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return fn


def kl_divergence(p, q):
    """KL(p || q), of shape ``batch_shape``."""
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _lookup(*key)
    fn = _KL_MEMOIZE[key]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} "
                                  f"and q type {type(q).__name__}")
    return fn(p, q)


# ---------------------------------------------------------------------------------------------
# Helpers

def _fill(cond, value, other):
    """``other`` with ``value`` where ``cond`` holds (broadcasting both)."""
    cond, other = ember.broadcast_tensors(cond, other)
    return ember.where(cond, ember.full_like(other, value), other)


def _weighted_log_ratio(weight, log_p, log_q, p_is_zero, q_is_zero):
    """``weight * (log_p - log_q)`` with the conventions 0 log 0 = 0 and w log(w / 0) = inf."""
    term = _fill(q_is_zero, math.inf, weight * (log_p - log_q))
    return _fill(p_is_zero, 0.0, term)


def _check_same_event(p, q, what):
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes "
                         "cannot be computed")


def _entropy_minus(p, expected_log_q):
    """KL as ``-H(p) - E_p[log q]``."""
    return -p.entropy() - expected_log_q


# ---------------------------------------------------------------------------------------------
# Exponential families without a closed form of their own: the Bregman divergence of the log
# normaliser, ``F(theta_q) - F(theta_p) - <theta_q - theta_p, grad F(theta_p)>``, taking
# ``grad F`` at detached copies of p's natural parameters (as torch: no gradient reaches p's)

def _kl_bregman(p, q):
    if p.__class__ is not q.__class__:
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot" + " " * 29 + "be computed using Bregman "
                                  "divergences")
    thetas_p = [theta.detach().requires_grad_() for theta in p._natural_params]
    thetas_q = q._natural_params
    log_norm_p = p._log_normalizer(*thetas_p)
    grads = ember.autograd.grad(log_norm_p.sum(), thetas_p, create_graph=True)
    result = q._log_normalizer(*thetas_q) - log_norm_p
    for theta_p, theta_q, grad in zip(thetas_p, thetas_q, grads):
        result = result - _sum_rightmost((theta_q - theta_p) * grad, len(q.event_shape))
    return result


register_kl(ExponentialFamily, ExponentialFamily)(_kl_bregman)


# ---------------------------------------------------------------------------------------------
# Discrete families

@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log p = -softplus(-logit), log(1 - p) = -softplus(logit)
    softplus = ember.nn.functional.softplus
    ones = _weighted_log_ratio(p.probs, -softplus(-p.logits), -softplus(-q.logits),
                               p.probs == 0, q.probs == 0)
    zeros = _weighted_log_ratio(1 - p.probs, -softplus(p.logits), -softplus(q.logits),
                                p.probs == 1, q.probs == 1)
    return ones + zeros


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    terms = _weighted_log_ratio(p.probs, p.logits, q.logits, p.probs == 0, q.probs == 0)
    return terms.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return kl_divergence(p._categorical, q._categorical)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # for equal counts n: n * KL(Bernoulli(p) || Bernoulli(q)); more trials in p: infinite
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is "
                                  "not implemented")
    per_trial = p.probs * (p.logits - q.logits) + ember.log1p(-p.probs) - ember.log1p(-q.probs)
    return _fill(p.total_count > q.total_count, math.inf, p.total_count * per_trial)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # log q(k) = log q + k log(1 - q), and E_p[k] = (1 - p) / p
    mean_failures = (1 - p.probs) / p.probs
    return _entropy_minus(p, q.probs.log() + mean_failures * ember.log1p(-q.probs))


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return q.rate - p.rate + p.rate * (p.rate.log() - q.rate.log())


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # log q(x) = x log(rate) - rate (x in {0, 1}, so log x! = 0)
    return _entropy_minus(p, p.probs * q.rate.log() - q.rate)


# ---------------------------------------------------------------------------------------------
# Continuous families

def _kl_dirichlet(a, b):
    """KL(Dir(a) || Dir(b)) over the last dim of the concentrations ``a``, ``b``."""
    a0, b0 = a.sum(-1), b.sum(-1)
    log_norm = a0.lgamma() - b0.lgamma() - (a.lgamma() - b.lgamma()).sum(-1)
    expected_log_x = a.digamma() - a0.digamma().unsqueeze(-1)
    return log_norm + ((a - b) * expected_log_x).sum(-1)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    return _kl_dirichlet(p.concentration, q.concentration)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    # Beta(a, b) is the first coordinate of Dirichlet([a, b])
    def stacked(d):
        return ember.stack([d.concentration1, d.concentration0], -1)
    return _kl_dirichlet(stacked(p), stacked(q))


def _kl_gamma(a_p, b_p, a_q, b_q):
    """KL(Gamma(a_p, rate b_p) || Gamma(a_q, rate b_q))."""
    return ((a_p - a_q) * ember.digamma(a_p) - ember.lgamma(a_p) + ember.lgamma(a_q)
            + a_q * (b_p.log() - b_q.log()) + a_p * (b_q - b_p) / b_p)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    return _kl_gamma(p.concentration, p.rate, q.concentration, q.rate)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    # Exponential(rate) is Gamma(1, rate); digamma(1) = -Euler's constant, lgamma(1) = 0
    a, ratio = q.concentration, q.rate / p.rate
    return (a - 1) * _EULER + ember.lgamma(a) - a * ratio.log() + ratio - 1


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - ratio.log() - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    scale_ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return 0.5 * (scale_ratio.pow(2) + shift.pow(2) - 1) - scale_ratio.log()


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return kl_divergence(p.base_dist, q.base_dist)   # the folding maps one onto the other


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|X - m| for X ~ N(mu, s): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2)), d = mu - m
    d = p.loc - q.loc
    z = d / p.scale
    mean_abs = (p.scale * math.sqrt(2 / math.pi) * ember.exp(-0.5 * z * z)
                + d * ember.erf(z / math.sqrt(2)))
    neg_entropy_p = -0.5 * (1 + math.log(2 * math.pi)) - p.scale.log()
    return neg_entropy_p + ember.log(2 * q.scale) + mean_abs / q.scale


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    gap = (p.loc - q.loc).abs()
    scale_ratio = p.scale / q.scale
    return gap / q.scale + scale_ratio * ember.exp(-gap / p.scale) - scale_ratio.log() - 1


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    spread = (p.loc - q.loc).pow(2) + (p.scale + q.scale).pow(2)
    return spread.log() - (4 * p.scale * q.scale).log()


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    # with r = b_p / b_q: log(1/r) + (mu_p - mu_q)/b_q + gamma (r - 1)
    #                    + Gamma(1 + r) exp((mu_q - mu_p)/b_q) - 1
    r = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (shift - r.log() + _EULER * (r - 1)
            + ember.exp(ember.lgamma(1 + r) - shift) - 1)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    log_ratio = (q.high - q.low).log() - (p.high - p.low).log()
    outside = (p.low < q.low) | (p.high > q.high)
    return _fill(outside, math.inf, log_ratio)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    # log det(S_q)/det(S_p) / 2 + (tr(S_q^-1 S_p) + |L_q^-1 (mu_q - mu_p)|^2 - n) / 2
    _check_same_event(p, q, "Multivariate Normals")
    n = p.event_shape[0]
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril

    def half_log_det(L):
        return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    batch = ember.broadcast_shapes(lp.shape[:-2], lq.shape[:-2])
    whitened = ember.linalg.solve_triangular(lq.expand(batch + (n, n)), lp.expand(batch + (n, n)),
                                             upper=False)
    trace = whitened.pow(2).sum((-2, -1))
    return (half_log_det(lq) - half_log_det(lp)
            + 0.5 * (trace + _batch_mahalanobis(lq, q.loc - p.loc) - n))


def _dense(d):
    """A LowRankMultivariateNormal as the MultivariateNormal it equals."""
    if isinstance(d, LowRankMultivariateNormal):
        return MultivariateNormal(d.loc, scale_tril=d.scale_tril, validate_args=False)
    return d


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_multivariatenormal(p, q):
    # through the dense Cholesky factors (the same value as the Woodbury form)
    _check_same_event(p, q, "(Low Rank) Multivariate Normals")
    return _kl_multivariatenormal_multivariatenormal(_dense(p), _dense(q))


# ---------------------------------------------------------------------------------------------
# Wrappers

@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # the same bijections on both sides leave KL unchanged
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    n = p.reinterpreted_batch_ndims
    if q.reinterpreted_batch_ndims != n:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), n)


# ---------------------------------------------------------------------------------------------
# Pairs of different families

# p reaches where q has no mass: KL is +inf (shaped like p's parameter named here)
_INFINITE = [
    (Beta, "concentration1", [Pareto]),
    (ContinuousBernoulli, "probs", [Pareto]),
    (Exponential, "rate", [Uniform, Pareto, ContinuousBernoulli, Beta]),
    (Gamma, "concentration", [Uniform, Pareto, ContinuousBernoulli, Beta]),
    (Pareto, "scale", [Uniform, ContinuousBernoulli, Beta]),
    (Poisson, "rate", [Binomial, Bernoulli]),
] + [(family, "loc", [Uniform, Pareto, Gamma, Exponential, ContinuousBernoulli, Beta])
     for family in (Gumbel, Laplace, Normal)]


def _always_infinite(attr):
    return lambda p, q: ember.full_like(getattr(p, attr), math.inf)


for _p_type, _attr, _q_types in _INFINITE:
    for _q_type in _q_types:
        register_kl(_p_type, _q_type)(_always_infinite(_attr))


def _kl_to_normal(p, q):
    """``-H(p) - E_p[log q]``, with ``E_p[(x - m)^2] = Var_p + (E_p - m)^2``."""
    variance_q = q.scale.pow(2)
    square_gap = p.variance + (p.mean - q.loc).pow(2)
    return _entropy_minus(p, -0.5 * ember.log(2 * math.pi * variance_q)
                          - square_gap / (2 * variance_q))


def _kl_to_exponential(p, q):
    """``-H(p) - E_p[log rate - rate x]`` for ``p`` on [0, inf)."""
    return _entropy_minus(p, q.rate.log() - q.rate * p.mean)


for _p_type in (Beta, ContinuousBernoulli, Exponential, Gamma, Gumbel, Laplace, Uniform):
    register_kl(_p_type, Normal)(_kl_to_normal)
for _p_type in (Gamma, ContinuousBernoulli):
    register_kl(_p_type, Exponential)(_kl_to_exponential)
