"""ContinuousBernoulli(probs | logits): the Bernoulli mass ``p^x (1 - p)^(1 - x)`` normalised as
a density on ``[0, 1]``."""
import math

import ember
from . import constraints
from ._discrete import BINARY, ProbsOrLogits, bernoulli_log_mass, checks_value
from .exp_family import ExponentialFamily
from .utils import clamp_probs, lazy_property, logits_to_probs

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ProbsOrLogits, ExponentialFamily):
    """Density ``C(p) p^x (1 - p)^(1 - x)`` on ``[0, 1]`` with ``C(p) = 2 artanh(1 - 2p) /
    (1 - 2p)``. Every closed form divides by ``1 - 2p``; for ``p`` inside ``lims`` (around 1/2)
    the second-order Taylor expansions in ``p - 1/2`` are used instead."""
    support = constraints.unit_interval
    has_rsample = True
    arg_constraints = BINARY

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        self._take_param(probs, logits)
        if logits is None:
            if validate_args is not None and not bool(BINARY["probs"].check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _closed_or_taylor(self, closed, taylor):
        """``closed(p)`` where ``p`` is outside ``lims`` (evaluated at a safe ``p`` inside),
        ``taylor(p - 1/2)`` within."""
        p = self.probs
        low, high = self._lims
        outside = (p <= low) | (p > high)
        return ember.where(outside, closed(ember.where(outside, p, low)), taylor(p - 0.5))

    def _log_normalizer(self):
        """``log C(p) = log|log(1 - p) - log p| - log|1 - 2p|``; ``log 2 + 4/3 d^2 + 104/45 d^4``
        near 1/2."""
        def closed(p):
            return (ember.log1p(-p) - p.log()).abs().log() - (1 - 2 * p).abs().log()
        return self._closed_or_taylor(
            closed, lambda d: math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d * d) * d * d)

    @property
    def mean(self):
        def closed(p):
            return p / (2 * p - 1) + 1 / (ember.log1p(-p) - p.log())
        return self._closed_or_taylor(closed, lambda d: 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d * d) * d)

    @property
    def variance(self):
        def closed(p):
            log_odds = ember.log1p(-p) - p.log()
            return p * (p - 1) / (1 - 2 * p).square() + log_odds.square().reciprocal()
        return self._closed_or_taylor(
            closed, lambda d: 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d * d) * d * d)

    @property
    def stddev(self):
        return self.variance.sqrt()

    def rsample(self, sample_shape=ember.Size()):
        """Inverse-cdf draws (differentiable in ``probs``)."""
        return self.icdf(ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def sample(self, sample_shape=ember.Size()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        with ember.no_grad():
            return self.icdf(u)

    @checks_value
    def log_prob(self, value):
        return bernoulli_log_mass(self.logits, value) + self._log_normalizer()

    @checks_value
    def cdf(self, value):
        """``(p^x (1 - p)^(1 - x) + p - 1) / (2p - 1)`` on ``[0, 1]`` (``x`` near ``p = 1/2``)."""

        def closed(p):
            return (p.pow(value) * (1 - p).pow(1 - value) + p - 1) / (2 * p - 1)
        inside = self._closed_or_taylor(closed, lambda d: value)
        return ember.where(value <= 0, 0.0, ember.where(value >= 1, 1.0, inside))

    def icdf(self, value):
        """``log1p((2p - 1) u - p) - log1p(-p)`` over ``log p - log1p(-p)`` (``u`` near 1/2)."""
        def closed(p):
            return ((ember.log1p((2 * p - 1) * value - p) - ember.log1p(-p))
                    / (p.log() - ember.log1p(-p)))
        return self._closed_or_taylor(closed, lambda d: value)

    def entropy(self):
        """``-E[log f] = E[x] log((1 - p) / p) - log C(p) - log(1 - p)``."""
        log_q, log_p = ember.log1p(-self.probs), self.probs.log()
        return self.mean * (log_q - log_p) - self._log_normalizer() - log_q
