"""Multinomial(total_count, probs | logits): category counts of ``total_count`` draws."""
import ember
from ember.nn.functional import one_hot
from . import constraints
from ._discrete import SIMPLEX, checks_value, counts_support
from .binomial import Binomial
from .categorical import OverCategories
from .distribution import Distribution

__all__ = ["Multinomial"]


class Multinomial(OverCategories, Distribution):
    """``P(x) = n! / prod(x_i!) prod(p_i^x_i)`` over count vectors ``x`` of shape ``(K,)`` that
    sum to ``n = total_count`` (one Python int for the whole batch)."""
    arg_constraints = SIMPLEX
    total_count: int

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categories(probs, logits, validate_args)

    support = constraints.dependent_property(lambda self: constraints.multinomial(self.total_count),
                                             is_discrete=True, event_dim=1)
    mean = property(lambda self: self.probs * self.total_count)
    variance = property(lambda self: self.mean * (1 - self.probs))

    def sample(self, sample_shape=ember.Size()):
        """``total_count`` categorical draws (torch's stream), counted per category."""
        draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))
        counts = one_hot(draws, self.event_shape[0]).sum(0)
        return counts.to(self.probs.dtype)

    @checks_value
    def log_prob(self, value):
        n = value.sum(-1)
        logits = ember.where(value == 0, 0.0, self.logits)  # absent categories add 0, even at p = 0
        return (n + 1).lgamma() - (value + 1).lgamma().sum(-1) + (value * logits).sum(-1)

    def entropy(self):
        """``n H(p) - log n! + sum_i E[log X_i!]`` with the marginals ``X_i ~ Binomial(n, p_i)``."""
        n = self.total_count
        ks = counts_support(n + 1, self.probs.dtype, self.probs.shape, False)[1:]
        marginal = Binomial(n, self.probs, validate_args=False).log_prob(ks).exp()
        expected_log_factorials = (marginal * (ks + 1).lgamma()).sum((0, -1))
        log_n_factorial = ember.tensor(float(n + 1)).lgamma()  # in the default dtype, as torch
        return n * self._categorical.entropy() - log_n_factorial + expected_log_factorials
