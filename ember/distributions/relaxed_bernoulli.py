"""RelaxedBernoulli (the binary Concrete / Gumbel-sigmoid) and its logit, LogitRelaxedBernoulli."""
import ember
from . import constraints
from ._discrete import BINARY, ProbsOrLogits, Relaxed, checks_value, log1p_exp, logit
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class LogitRelaxedBernoulli(ProbsOrLogits, Distribution):
    """``X = (logit(u) + logits) / temperature`` for ``u`` uniform: a logistic variable whose
    sigmoid tends to Bernoulli(probs) as the temperature falls. (``has_rsample`` is False, as in
    torch, although ``rsample`` is reparameterised.)"""
    support = constraints.real
    arg_constraints = BINARY

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._take_param(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)

    def rsample(self, sample_shape=ember.Size()):
        shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(ember.rand(shape, dtype=p.dtype))
        return (logit(u) + logit(p)) / self.temperature

    @checks_value
    def log_prob(self, value):
        """Logistic density with location ``logits / t`` and scale ``1 / t``: with
        ``z = logits - t x``, ``log t + z - 2 log(1 + e^z)``."""
        z = self.logits - self.temperature * value
        return self.temperature.log() + z - 2 * log1p_exp(z)


class RelaxedBernoulli(Relaxed, TransformedDistribution):
    """The sigmoid of a LogitRelaxedBernoulli: a reparameterisable relaxation of Bernoulli on
    ``(0, 1)``."""
    support = constraints.unit_interval
    has_rsample = True
    arg_constraints = BINARY

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)
