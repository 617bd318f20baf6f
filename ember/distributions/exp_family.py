"""``ExponentialFamily``: marker base of distributions in the exponential family."""
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Distributions whose density is ``exp(<t(x), theta> - F(theta) + k(x))``."""
