"""MixtureSameFamily: a finite mixture whose components are one batched distribution."""
from __future__ import annotations

import ember
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """``p(x) = sum_k w_k p_k(x)``: the components ``p_k`` run along the rightmost batch dim
    of ``component_distribution`` (size ``K``), the weights ``w`` come from
    ``mixture_distribution``, a Categorical over ``K`` whose batch shape broadcasts with the
    components' other batch dims."""
    has_rsample = False
    arg_constraints = {}

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "torch.distributions.Distribution")
        mix_batch = mixture_distribution.batch_shape
        comp_batch = component_distribution.batch_shape[:-1]
        if any(a != b and 1 not in (a, b) for a, b in zip(mix_batch[::-1], comp_batch[::-1])):
            raise ValueError(f"`mixture_distribution.batch_shape` ({mix_batch}) is not "
                             f"compatible with `component_distribution.batch_shape`({comp_batch})")
        k_mix = mixture_distribution.logits.shape[-1]
        k_comp = component_distribution.batch_shape[-1]
        if k_mix != k_comp:
            raise ValueError(f"`mixture_distribution component` ({k_mix}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({k_comp})")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        self._num_component = k_mix
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch, component_distribution.event_shape,
                         validate_args=validate_args)

    mixture_distribution = property(lambda self: self._mixture_distribution)
    component_distribution = property(lambda self: self._component_distribution)
    support = constraints.dependent_property(
        lambda self: constraints.MixtureSameFamilyConstraint(self._component_distribution.support))

    # The component axis sits just left of the event dims: -1 - event_ndims.
    def _component_axis(self):
        return -1 - self._event_ndims

    def _weights(self):
        """The mixture weights, shaped to broadcast against per-component quantities."""
        probs = self._mixture_distribution.probs
        return probs.reshape(probs.shape + (1,) * self._event_ndims)

    def _per_component(self, x):
        """``x`` (``... + batch + event``) with a size-1 component axis inserted."""
        return x.unsqueeze(self._component_axis())

    @property
    def mean(self):
        means = self._component_distribution.mean
        return (self._weights() * means).sum(self._component_axis())

    @property
    def variance(self):
        # total variance: mean of the variances plus variance of the means
        comps, w, axis = self._component_distribution, self._weights(), self._component_axis()
        spread = (comps.mean - self._per_component(self.mean)).pow(2)
        return (w * comps.variance).sum(axis) + (w * spread).sum(axis)

    def cdf(self, x):
        cdfs = self._component_distribution.cdf(self._per_component(x))
        return (cdfs * self._mixture_distribution.probs).sum(-1)

    def sample(self, sample_shape=ember.Size()):
        """Pick a component per draw, draw from every component, keep the picked one."""
        with ember.no_grad():
            sample_shape = ember.Size(sample_shape)
            picks = self._mixture_distribution.sample(sample_shape)          # S + mix batch
            draws = self._component_distribution.sample(sample_shape)        # S + B + (K,) + E
            axis = len(sample_shape) + len(self.batch_shape)
            missing = len(self.batch_shape) - len(self._mixture_distribution.batch_shape)
            picks = picks.reshape(sample_shape + (1,) * missing + picks.shape[len(sample_shape):])
            index = picks.expand(sample_shape + self.batch_shape)
            index = index.reshape(index.shape + (1,) * (1 + self._event_ndims))
            index = index.expand(index.shape[:axis + 1] + self.event_shape)
            return draws.gather(axis, index).squeeze(axis)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_p = self._component_distribution.log_prob(self._per_component(x))
        log_w = ember.log_softmax(self._mixture_distribution.logits, dim=-1)
        return ember.logsumexp(log_p + log_w, dim=-1)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution},\n"
                f"  {self._component_distribution})")
