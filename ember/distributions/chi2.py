"""torch.distributions.chi2 (the family lives with the gamma family)."""
from ember.distributions.gamma import Chi2  # noqa: F401

__all__ = ["Chi2"]
