"""Dirichlet(concentration)."""
import ember
from . import constraints
from .exp_family import ExponentialFamily

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Distribution on the ``K``-simplex; ``concentration`` has shape ``batch_shape + (K,)``.
    ``rsample`` normalises gamma draws."""
    support = constraints.simplex
    has_rsample = True
    _batched = ("concentration",)
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self._init_params(concentration, validate_args=validate_args, event_dim=1)

    @property
    def _total(self):
        return self.concentration.sum(-1, keepdim=True)

    mean = property(lambda self: self.concentration / self._total)

    @property
    def mode(self):
        """``(a - 1)_+`` normalised; when every ``a < 1``, the first vertex (as torch)."""
        excess = (self.concentration - 1).clamp(min=0.0)
        interior = excess / excess.sum(-1, keepdim=True)
        first_vertex = ember.zeros_like(interior)
        first_vertex[..., 0] = 1
        all_below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        return ember.where(all_below_one, first_vertex, interior)

    @property
    def variance(self):
        a, total = self.concentration, self._total
        return a * (total - a) / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        """torch's draws; differentiable in ``concentration`` by torch's rule
        (``_DirichletBackward``: Note [dirichlet grad] in ember/_kernels/random_serial.py)."""
        alpha = self.concentration.expand(self._extended_shape(sample_shape))
        return ember._sample_dirichlet(alpha)

    def _log_normaliser(self):
        """``log B(a) = sum lgamma(a_i) - lgamma(sum a_i)``."""
        a = self.concentration
        return ember.lgamma(a).sum(-1) - ember.lgamma(a.sum(-1))

    def log_prob(self, value):
        value = self._checked(value)
        return ember.xlogy(self.concentration - 1, value).sum(-1) - self._log_normaliser()

    def entropy(self):
        a = self.concentration
        total = a.sum(-1)
        return (self._log_normaliser() + (total - a.size(-1)) * ember.digamma(total)
                - ((a - 1) * ember.digamma(a)).sum(-1))
