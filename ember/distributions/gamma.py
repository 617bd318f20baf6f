"""Gamma(concentration, rate) and Chi2(df)."""
import ember
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _standard_gamma

__all__ = ["Gamma", "Chi2"]


class Gamma(ExponentialFamily):
    """Shape ``concentration``, inverse scale ``rate``. ``rsample`` divides standard gamma draws
    by ``rate`` (differentiable in ``concentration`` by implicit reparameterisation)."""
    support = constraints.nonnegative
    has_rsample = True
    _batched = ("concentration", "rate")
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}

    def __init__(self, concentration, rate, validate_args=None):
        self._init_params(concentration, rate, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate.pow(2))

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        draws = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return draws.clamp(min=ember.finfo(draws.dtype).tiny)  # never exactly 0

    def log_prob(self, value):
        x = self._checked(ember.as_tensor(value, dtype=self.rate.dtype))
        a, b = self.concentration, self.rate
        return ember.xlogy(a, b) + ember.xlogy(a - 1, x) - b * x - ember.lgamma(a)

    def cdf(self, value):
        return ember.special.gammainc(self.concentration, self.rate * self._checked(value))

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + ember.lgamma(a) + (1 - a) * ember.digamma(a)


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    df = property(lambda self: 2 * self.concentration)
