"""Normal(loc, scale)."""
import ember
from . import constraints
from ._continuous import HALF_LOG_2PI
from .exp_family import ExponentialFamily
from .utils import _standard_normal

__all__ = ["Normal"]

_SQRT_2 = 2 ** 0.5


class Normal(ExponentialFamily):
    """Gaussian with mean ``loc`` and standard deviation ``scale`` (broadcast together)."""
    support = constraints.real
    has_rsample = True
    _batched = ("loc", "scale")
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}

    def __init__(self, loc, scale, validate_args=None):
        self._init_params(loc, scale, validate_args=validate_args)

    mean = mode = property(lambda self: self.loc)
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale.pow(2))

    def _standardise(self, value):
        return (value - self.loc) / self.scale

    def sample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        with ember.no_grad():
            mean, std = self.loc.expand(shape), self.scale.expand(shape)
            return ember.normal(mean, std)  # (not rsample's stream: torch.normal's own)

    def rsample(self, sample_shape=ember.Size()):
        noise = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + noise * self.scale

    def log_prob(self, value):
        z = self._standardise(self._checked(value))
        return -0.5 * z * z - self.scale.log() - HALF_LOG_2PI

    def cdf(self, value):
        return 0.5 * (1 + ember.erf(self._standardise(self._checked(value)) / _SQRT_2))

    def icdf(self, value):
        return self.loc + self.scale * _SQRT_2 * ember.erfinv(2 * value - 1)

    def entropy(self):
        return self.scale.log() + (0.5 + HALF_LOG_2PI)
