"""Geometric(probs | logits): failures before the first success."""
import ember
from . import constraints
from ._discrete import BINARY, ProbsOrLogits, bernoulli_entropy, checks_value
from .distribution import Distribution

__all__ = ["Geometric"]


class Geometric(ProbsOrLogits, Distribution):
    """``P(k) = (1 - p)^k p`` for ``k = 0, 1, ...``; ``p`` must be positive."""
    support = constraints.nonnegative_integer
    arg_constraints = BINARY

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._take_param(probs, logits)
        super().__init__(self._param.shape, validate_args=validate_args)
        if self._validate_args and logits is None:
            bad = ~(self.probs > 0)
            if bool(bad.any()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but found "
                    f"invalid values:\n{self.probs.detach()[bad]}")

    @property
    def mean(self):
        return self.probs.reciprocal() - 1

    @property
    def mode(self):
        return ember.zeros_like(self.probs)

    @property
    def variance(self):
        return self.mean / self.probs

    def sample(self, sample_shape=ember.Size()):
        """Inverse cdf: ``floor(log u / log(1 - p))`` for ``u`` uniform on ``(tiny, 1)``."""
        p = self.probs
        with ember.no_grad():
            u = ember.empty(self._extended_shape(sample_shape), dtype=p.dtype)
            u.uniform_(ember.finfo(p.dtype).tiny, 1)
            return (u.log() / ember.log1p(-p)).floor()

    @checks_value
    def log_prob(self, value):
        """``k log(1 - p) + log p`` (a zero ``k`` contributes zero even at ``p = 1``)."""
        return ember.special.xlog1py(value, -self.probs) + self.probs.log()

    def entropy(self):
        """The Bernoulli entropy divided by ``p`` (expected trials times entropy per trial)."""
        return bernoulli_entropy(self.logits, self.probs) / self.probs
