"""torch.nn.parallel.replicate (defined with the other multi-device primitives)."""
from ember.nn.parallel.scatter_gather import replicate  # noqa: F401

__all__ = ["replicate"]
