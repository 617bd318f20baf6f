"""Dirichlet(concentration)."""
import ember
from . import constraints
from .exp_family import ExponentialFamily
from .utils import _standard_gamma

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution on the simplex; ``concentration`` has shape
    ``batch_shape + (K,)``. ``rsample`` normalises reparameterised gamma draws."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = ember.Size(batch_shape)
        new.concentration = self.concentration.expand(batch_shape + self.event_shape)
        super(Dirichlet, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        conc = self.concentration.expand(shape)
        if not (conc.requires_grad and ember.is_grad_enabled()):
            return ember._sample_dirichlet(conc)          # torch's draws
        # (torch's own gradient path needs _dirichlet_grad, which ember lacks: normalised
        # gammas give the same distribution and an exact reparameterised gradient)
        gammas = _standard_gamma(conc)
        return (gammas / gammas.sum(-1, keepdim=True)).clamp(min=ember.finfo(gammas.dtype).tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return ember.xlogy(c - 1.0, value).sum(-1) + ember.lgamma(c.sum(-1)) - ember.lgamma(c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concentrationm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentrationm1 / concentrationm1.sum(-1, True)
        all_small = (self.concentration < 1).all(dim=-1, keepdim=True)
        # when every concentration is < 1 the mode is a vertex; like torch, the first one
        first = ember.nn.functional.one_hot(ember.zeros(mode.shape[:-1], dtype=ember.long),
                                            concentrationm1.shape[-1])
        return ember.where(all_small, first.to(mode.dtype), mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (ember.lgamma(c).sum(-1) - ember.lgamma(a0) - (k - a0) * ember.digamma(a0)
                - ((c - 1.0) * ember.digamma(c)).sum(-1))
