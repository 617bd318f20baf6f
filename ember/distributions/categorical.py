"""Categorical(probs | logits) over ``{0, ..., K-1}``, and its one-hot forms."""
import ember
from ember.nn.functional import one_hot
from . import constraints
from ._discrete import (SIMPLEX, ProbsOrLogits, checks_value, counts_support,
                        integers_up_to)
from .distribution import Distribution

__all__ = ["Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough"]


class Categorical(ProbsOrLogits, Distribution):
    """``P(k) = probs[..., k]``; ``probs`` (normalised here) or ``logits`` (log-normalised here)
    have shape ``batch_shape + (K,)``."""
    has_enumerate_support = True
    arg_constraints = SIMPLEX
    _binary = False

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._take_param(probs, logits)
        weights = self._param
        if weights.dim() == 0:
            raise ValueError(f"`{self._given}` parameter must be at least one-dimensional.")
        if self._given == "probs":
            self.probs = weights / weights.sum(-1, keepdim=True)
        else:
            self.logits = weights - weights.logsumexp(-1, keepdim=True)
        self._num_events = weights.shape[-1]
        super().__init__(weights.shape[:-1], validate_args=validate_args)

    support = integers_up_to(lambda self: self._num_events - 1)

    def _undefined(self):
        return ember.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    mean = property(_undefined, doc="Undefined (nan): the labels are not quantities.")
    variance = property(_undefined, doc="Undefined (nan).")

    @property
    def mode(self):
        return self.probs.argmax(-1)

    def sample(self, sample_shape=ember.Size()):
        """All draws of each row of ``probs`` by one ``ember.multinomial`` (torch's stream)."""
        count = ember.Size(sample_shape).numel()
        with ember.no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            draws = ember.multinomial(rows, count, replacement=True)
            return draws.mT.reshape(self._extended_shape(sample_shape))

    @checks_value
    def log_prob(self, value):
        shape = ember.broadcast_shapes(value.shape, self.batch_shape)
        logits = self.logits.expand(shape + (self._num_events,))
        return logits.gather(-1, value.long().expand(shape).unsqueeze(-1)).squeeze(-1)

    def entropy(self):
        """``-sum p log p``; a category of zero probability (logit ``-inf``) adds nothing."""
        lowest = ember.finfo(self.logits.dtype).min
        return -(self.probs * self.logits.clamp(min=lowest)).sum(-1)

    def enumerate_support(self, expand=True):
        return counts_support(self._num_events, ember.long, self.batch_shape, expand)


class OverCategories:
    """Mixin for a family whose events are vectors over the ``K`` categories of a Categorical
    ``_categorical``, whose parameters are its own."""

    def _categories(self, probs, logits, validate_args):
        self._categorical = Categorical(probs, logits)
        Distribution.__init__(self, self._categorical.batch_shape,
                              self._categorical.param_shape[-1:], validate_args=validate_args)

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    param_shape = property(lambda self: self._categorical.param_shape)
    _param = property(lambda self: self._categorical._param)


class OneHotCategorical(OverCategories, Distribution):
    """Categorical draws written as one-hot vectors of shape ``batch_shape + (K,)``."""
    support = constraints.one_hot
    has_enumerate_support = True
    arg_constraints = SIMPLEX

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categories(probs, logits, validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return one_hot(self.probs.argmax(-1), self.event_shape[0]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def entropy(self):
        return self._categorical.entropy()

    def sample(self, sample_shape=ember.Size()):
        labels = self._categorical.sample(sample_shape)
        return one_hot(labels, self.event_shape[0]).to(self.probs.dtype)

    @checks_value
    def log_prob(self, value):
        return self._categorical.log_prob(value.argmax(-1))

    def enumerate_support(self, expand=True):
        k = self.event_shape[0]
        rows = ember.eye(k, dtype=self._param.dtype)
        rows = rows.reshape((k,) + (1,) * len(self.batch_shape) + (k,))
        return rows.expand((k,) + self.batch_shape + (k,)) if expand else rows


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through: the value is the
    one-hot draw, the gradient that of ``probs``."""
    has_rsample = True

    def rsample(self, sample_shape=ember.Size()):
        probs = self.probs
        return self.sample(sample_shape) + (probs - probs.detach())
