"""What the continuous families share: a reflected ("half") family, a where-helper and two
constants."""
import math

import ember
from .transformed_distribution import TransformedDistribution

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def fill_where(condition, number, value):
    """``value`` with ``number`` where ``condition`` holds."""
    return ember.where(condition, ember.full_like(value, number), value)


class Reflected(TransformedDistribution):
    """``|X|`` for a base ``X`` symmetric about 0 (HalfNormal, HalfCauchy): the base density
    doubled on ``x >= 0``."""

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        doubled = self.base_dist.log_prob(self._checked(value)) + LOG_2
        return fill_where(value < 0, -math.inf, doubled)

    def cdf(self, value):
        return self.base_dist.cdf(self._checked(value)) * 2 - 1

    def icdf(self, prob):
        return self.base_dist.icdf(0.5 + prob / 2)

    def entropy(self):
        return self.base_dist.entropy() - LOG_2
