"""Beta(concentration1, concentration0)."""
import ember
from . import constraints
from .dirichlet import Dirichlet
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Beta"]


class Beta(ExponentialFamily):
    """Beta on [0, 1]: the first coordinate of ``Dirichlet([concentration1, concentration0])``,
    which holds the parameters (as in torch: its checks and ``repr``) and draws the samples."""
    support = constraints.unit_interval
    has_rsample = True
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}

    def __init__(self, concentration1, concentration0, validate_args=None):
        pair = ember.stack(broadcast_all(concentration1, concentration0), -1)
        self._dirichlet = Dirichlet(pair, validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])

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
