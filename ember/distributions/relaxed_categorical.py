"""RelaxedOneHotCategorical (Concrete / Gumbel-softmax) and its log, ExpRelaxedCategorical."""
import math

import ember
from . import constraints
from ._discrete import SIMPLEX, Relaxed, checks_value
from .categorical import OverCategories
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform
from .utils import clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(OverCategories, Distribution):
    """``X = log_softmax((logits + G) / temperature)`` for standard Gumbel noise ``G``: the log
    of a RelaxedOneHotCategorical draw; events have shape ``(K,)``."""
    support = constraints.independent(constraints.real, 1)
    has_rsample = True
    arg_constraints = SIMPLEX

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._categories(probs, logits, validate_args)

    def rsample(self, sample_shape=ember.Size()):
        u = clamp_probs(ember.rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        gumbel = -(-u.log()).log()
        return ((self.logits + gumbel) / self.temperature).log_softmax(-1)

    @checks_value
    def log_prob(self, value):
        """With ``z = logits - t x``: ``log (K-1)! + (K-1) log t + sum z - K logsumexp z``."""
        k = self.event_shape[0]
        t = self.temperature
        z = self.logits - t * value
        return math.lgamma(k) + (k - 1) * t.log() + z.sum(-1) - k * z.logsumexp(-1)


class RelaxedOneHotCategorical(Relaxed, TransformedDistribution):
    """The exp of an ExpRelaxedCategorical: a reparameterisable relaxation of OneHotCategorical
    on the simplex."""
    support = constraints.simplex
    has_rsample = True
    arg_constraints = SIMPLEX

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)
