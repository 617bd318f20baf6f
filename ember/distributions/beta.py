"""Beta(concentration1, concentration0)."""
import ember
from . import constraints
from ._continuous import Family
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily

__all__ = ["Beta"]


class Beta(Family, ExponentialFamily):
    """Beta on [0, 1]: the first coordinate of ``Dirichlet([concentration1, concentration0])``,
    which draws its samples (torch's stream)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    _param_names = ("concentration1", "concentration0")
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self._init_params(concentration1, concentration0, validate_args=validate_args)

    @property
    def _dirichlet(self):
        pair = ember.stack([self.concentration1, self.concentration0], -1)
        return Dirichlet(pair, validate_args=False)

    @property
    def _total(self):
        return self.concentration1 + self.concentration0

    mean = property(lambda self: self.concentration1 / self._total)
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        total = self._total
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        x = self._checked(value)
        a, b = self.concentration1, self.concentration0
        return (ember.xlogy(a - 1, x) + ember.xlogy(b - 1, 1 - x)
                + ember.lgamma(a + b) - ember.lgamma(a) - ember.lgamma(b))

    def entropy(self):
        return self._dirichlet.entropy()
