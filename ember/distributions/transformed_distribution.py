"""TransformedDistribution: a base distribution pushed through a chain of transforms."""
from __future__ import annotations

import ember
from . import constraints
from .distribution import Distribution
from .independent import Independent
from .transforms import ComposeTransform, Transform
from .utils import _sum_rightmost

__all__ = ["TransformedDistribution"]


def _transform_list(transforms):
    """``transforms`` as a list (one Transform, or a list of them)."""
    if isinstance(transforms, Transform):
        return [transforms]
    if not isinstance(transforms, list):
        raise ValueError(f"transforms must be a Transform or list, but was {transforms}")
    if any(not isinstance(t, Transform) for t in transforms):
        raise ValueError("transforms must be a Transform or a list of Transforms")
    return transforms


class TransformedDistribution(Distribution):
    """``Y = f_n(... f_1(X))`` with ``X ~ base_distribution``. By the change of variables,
    ``log p(y) = log p_X(x) - sum_i log|det J_{f_i}|`` along the chain ``x -> y``."""
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = _transform_list(transforms)
        chain = ComposeTransform(self.transforms)

        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        base_event_dim = len(base_distribution.event_shape)
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(f"base_distribution needs to have shape with size at least "
                             f"{chain.domain.event_dim}, but got {base_shape}.")
        # parameters of the transforms may broadcast the base's batch shape up
        shape = chain.forward_shape(base_shape)
        needed_base_shape = chain.inverse_shape(shape)
        if needed_base_shape != base_shape:
            cut = len(needed_base_shape) - base_event_dim
            base_distribution = base_distribution.expand(needed_base_shape[:cut])
        # the chain reads more dims per element than the base's event: reinterpret batch dims
        if chain.domain.event_dim > base_event_dim:
            base_distribution = Independent(base_distribution,
                                            chain.domain.event_dim - base_event_dim)
        self.base_dist = base_distribution

        growth = chain.codomain.event_dim - chain.domain.event_dim
        event_dim = max(chain.codomain.event_dim, base_event_dim + growth)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        """The last transform's codomain, with all of ``event_shape`` in each element."""
        if self.transforms:
            codomain = self.transforms[-1].codomain
            missing = len(self.event_shape) - codomain.event_dim
            return constraints.independent(codomain, missing) if missing > 0 else codomain
        return self.base_dist.support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def _push(self, x):
        for t in self.transforms:
            x = t(x)
        return x

    def rsample(self, sample_shape=ember.Size()):
        return self._push(self.base_dist.rsample(sample_shape))

    def sample(self, sample_shape=ember.Size()):
        with ember.no_grad():
            return self._push(self.base_dist.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # walk back from y; event_dim counts the dims of one element at the current point
        event_dim, total, y = len(self.event_shape), 0.0, value
        for t in self.transforms[::-1]:
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            total = total - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                           event_dim - t.domain.event_dim)
            y = x
        base_term = self.base_dist.log_prob(y)
        return total + _sum_rightmost(base_term, event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        """``value`` for an increasing chain, ``1 - value`` for a decreasing one."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return 0.5 + sign * (value - 0.5)

    def cdf(self, value):
        for t in self.transforms[::-1]:
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        return self._push(self.base_dist.icdf(self._monotonize_cdf(value)))
