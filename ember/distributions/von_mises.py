"""VonMises(loc, concentration): the circular normal distribution."""
import math

import ember
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_i0(x):
    return ember.log(ember.special.i0e(x)) + x


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best & Fisher (1979) rejection sampler, vectorised; ``x`` gives the output shape."""
    done = ember.zeros(x.shape, dtype=ember.bool)
    while not bool(done.all()):
        u = ember.rand((3,) + tuple(x.shape), dtype=loc.dtype)
        u1, u2, u3 = u.unbind()
        z = ember.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        if bool(accept.any()):
            x = ember.where(accept, (u3 - 0.5).sign() * f.acos(), x)
            done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Circular distribution with density ``exp(concentration * cos(x - loc)) / (2 pi I0(concentration))``.
    Sampling is by rejection (no rsample)."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch_shape = self.loc.shape
        super().__init__(batch_shape, ember.Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * ember.cos(value - self.loc)
        return log_prob - math.log(2 * math.pi) - _log_i0(self.concentration)

    @lazy_property
    def _loc(self):
        return self.loc.to(ember.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(ember.double)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        _proposal_r = (1 + rho ** 2) / (2 * rho)
        _proposal_r_taylor = 1 / kappa + kappa  # small-kappa limit
        return ember.where(kappa < 1e-5, _proposal_r_taylor, _proposal_r)

    def sample(self, sample_shape=ember.Size()):
        """Draws in ``(-pi, pi]`` (computed in float64, returned in the parameters' dtype)."""
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            x = ember.empty(shape, dtype=self._loc.dtype)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r, x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, "loc", "concentration")

    @property
    def mean(self):
        """The circular mean, ``loc``."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - ember.special.i1e(k) / ember.special.i0e(k)
