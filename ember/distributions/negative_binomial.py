"""NegativeBinomial(total_count, probs | logits): successes before ``total_count`` failures."""
import ember
from . import constraints
from ._discrete import BINARY, ProbsOrLogits, checks_value, log1p_exp
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(ProbsOrLogits, Distribution):
    """``P(k) = C(n + k - 1, k) p^k (1 - p)^n`` for real ``n = total_count >= 0``; it is the
    Poisson mixture with Gamma(n, (1 - p) / p) rates."""
    support = constraints.nonnegative_integer
    _batched = ("total_count", "probs", "logits")
    arg_constraints = {"total_count": constraints.greater_than_eq(0), **BINARY,
                       "probs": constraints.half_open_interval(0.0, 1.0)}

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        (self.total_count,) = self._take_param(probs, logits, total_count)
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()  # n p / (1 - p)

    @property
    def mode(self):
        return ember.floor(self.logits.exp() * (self.total_count - 1)).clamp(min=0)

    @property
    def variance(self):
        return self.mean / ember.sigmoid(-self.logits)  # n p / (1 - p)^2

    @lazy_property
    def _gamma(self):
        """The mixing distribution of the Poisson rates."""
        return Gamma(self.total_count, (-self.logits).exp(), validate_args=False)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape))

    @checks_value
    def log_prob(self, value):
        """``log C(n + k - 1, k) + k log p + n log(1 - p)``; the point mass ``n = k = 0`` has
        log-probability 0."""
        n, l = self.total_count, self.logits
        log_coef = (n + value).lgamma() - (value + 1).lgamma() - n.lgamma()
        log_coef = ember.where(n + value == 0, 0.0, log_coef)
        return log_coef - value * log1p_exp(-l) - n * log1p_exp(l)
