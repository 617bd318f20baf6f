"""Uniform(low, high)."""
import ember
from . import constraints
from .distribution import Distribution

__all__ = ["Uniform"]


class Uniform(Distribution):
    """Uniform on the half-open interval ``[low, high)``."""
    has_rsample = True
    _batched = ("low", "high")

    arg_constraints = property(
        lambda self: dict(low=constraints.less_than(self.high),
                          high=constraints.greater_than(self.low)),
        doc="``low < high``, checked from each side (torch's message names ``low`` first).")

    def __init__(self, low, high, validate_args=None):
        self._init_params(low, high, validate_args=validate_args)

    support = constraints.dependent_property(
        lambda self: constraints.interval(self.low, self.high), is_discrete=False, event_dim=0)

    _width = property(lambda self: self.high - self.low)
    mean = property(lambda self: (self.low + self.high) / 2)
    mode = property(lambda self: self.high * float("nan"))
    stddev = property(lambda self: self._width / 12 ** 0.5)
    variance = property(lambda self: self._width.pow(2) / 12)

    def rsample(self, sample_shape=ember.Size()):
        u = ember.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * self._width

    def log_prob(self, value):
        value = self._checked(value)
        inside = (self.low <= value) & (value < self.high)
        return ember.log(inside.type_as(self.low)) - ember.log(self._width)

    def cdf(self, value):
        return ((self._checked(value) - self.low) / self._width).clamp(min=0, max=1)

    def icdf(self, value):
        return self.low + value * self._width

    def entropy(self):
        return ember.log(self._width)
