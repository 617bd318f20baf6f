"""torch.autograd.variable: the legacy Variable (a Tensor)."""
from ember.autograd import Variable  # noqa: F401

__all__ = ["Variable"]
