"""VonMises(loc, concentration): the circular normal distribution."""
import math

import ember
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["VonMises"]

_TWO_PI = 2 * math.pi


def _wrapped_cauchy_r(kappa):
    """Best and Fisher's envelope parameter ``r = (1 + rho^2) / (2 rho)`` with
    ``rho = (tau - sqrt(2 tau)) / (2 kappa)``, ``tau = 1 + sqrt(1 + 4 kappa^2)``; for tiny
    ``kappa`` (where that cancels badly) its limit ``1 / kappa + kappa``."""
    tau = 1 + (1 + 4 * kappa.square()).sqrt()
    rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
    exact = (1 + rho.square()) / (2 * rho)
    return ember.where(kappa < 1e-5, kappa.reciprocal() + kappa, exact)


def _best_fisher(loc, kappa, r, shape):
    """Best & Fisher (1979) rejection sampler, vectorised: every round draws three uniforms per
    element (one ``rand`` of shape ``(3,) + shape``); an element takes the angle of each round
    that accepts it (the last such wins), until every element has been accepted once."""
    angle = ember.empty(shape, dtype=loc.dtype)
    accepted = ember.zeros(shape, dtype=ember.bool)
    while not bool(accepted.all()):
        u_angle, u_test, u_sign = ember.rand((3,) + tuple(shape), dtype=loc.dtype).unbind()
        w = ember.cos(math.pi * u_angle)
        f = (1 + r * w) / (r + w)
        c = kappa * (r - f)
        ok = (c * (2 - c) - u_test > 0) | (ember.log(c / u_test) + 1 - c >= 0)
        angle = ember.where(ok, (u_sign - 0.5).sign() * f.acos(), angle)
        accepted = accepted | ok
    return (angle + math.pi + loc) % _TWO_PI - math.pi  # centred on loc, wrapped into [-pi, pi)


class VonMises(Distribution):
    """Circular density ``exp(k cos(x - loc)) / (2 pi I0(k))``, ``k = concentration``. Draws by
    rejection (no ``rsample``), computed in float64."""
    support = constraints.real
    has_rsample = False
    _batched = ("loc", "concentration")
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}

    def __init__(self, loc, concentration, validate_args=None):
        self._init_params(loc, concentration, validate_args=validate_args)

    mean = mode = property(lambda self: self.loc, doc="The circular mean, ``loc``.")

    @lazy_property
    def variance(self):
        """The circular variance ``1 - I1(k) / I0(k)``."""
        k = self.concentration
        return 1 - ember.special.i1e(k) / ember.special.i0e(k)

    @lazy_property
    def _loc(self):
        return self.loc.to(ember.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(ember.double)

    @lazy_property
    def _proposal_r(self):
        return _wrapped_cauchy_r(self._concentration)

    def log_prob(self, value):
        k = self.concentration
        log_i0 = ember.log(ember.special.i0e(k)) + k  # i0e(k) = exp(-k) I0(k)
        return k * ember.cos(self._checked(value) - self.loc) - log_i0 - math.log(_TWO_PI)

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            draws = _best_fisher(self._loc, self._concentration, self._proposal_r,
                                 self._extended_shape(sample_shape))
            return draws.to(self.loc.dtype)
