"""torch.nn.functional.grad: the ember.nn.grad module re-exported (conv input/weight grads)."""
from ember.nn import grad

__all__ = ["grad"]
