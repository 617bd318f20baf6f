"""What the continuous families share: parameters declared once (stored broadcast, validated and
expanded by :class:`Family`), a reflected ("half") family, a where-helper and two constants."""
import math

import ember
from .transformed_distribution import TransformedDistribution
from .utils import broadcast_all

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def fill_where(condition, number, value):
    """``value`` with ``number`` where ``condition`` holds."""
    return ember.where(condition, ember.full_like(value, number), value)


class Family:
    """Mixin (listed before the distribution base) for a family whose parameters, the tensors
    named in ``_param_names``, all have shape ``batch_shape + event_shape`` (a component
    distribution named there has the batch shape). ``_init_params`` broadcasts and stores the
    tensors; ``expand`` expands them (and then the base distribution of a transformed family)."""

    _param_names = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(__package__ + "."):
            # expand's "custom __init__ needs a custom expand" check compares with ember's class,
            # never with a user's subclass of it
            cls._family = cls

    def _init_params(self, *values, validate_args=None, event_dim=0):
        """Store ``values`` (numbers or tensors, broadcast together) under ``_param_names``; with
        ``event_dim`` given their rightmost dims form the event shape. Then initialise (and
        validate) the distribution, unless it is a transformed one (its ``__init__`` follows)."""
        tensors = broadcast_all(*values)
        for name, tensor in zip(self._param_names, tensors):
            setattr(self, name, tensor)
        if not isinstance(self, TransformedDistribution):
            shape = tensors[0].shape
            cut = len(shape) - event_dim
            super(Family, self).__init__(shape[:cut], shape[cut:], validate_args=validate_args)
        return tensors

    def _checked(self, value):
        """``value``, after checking it lies in the support when validation is on."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(self._family, _instance)
        batch_shape = ember.Size(batch_shape)
        for name in self._param_names:
            setattr(new, name, getattr(self, name).expand(batch_shape + self.event_shape))
        if isinstance(self, TransformedDistribution):
            return TransformedDistribution.expand(self, batch_shape, _instance=new)
        super(Family, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new


class Reflected(Family, TransformedDistribution):
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
