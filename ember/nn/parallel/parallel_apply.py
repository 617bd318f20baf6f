"""torch.nn.parallel.parallel_apply (defined with the other multi-device primitives)."""
from ember.nn.parallel.scatter_gather import parallel_apply  # noqa: F401

__all__ = ["parallel_apply"]
