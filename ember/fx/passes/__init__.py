"""Graph passes (``ember.fx.passes``)."""
from ember.fx.passes import shape_prop, split_module  # noqa: F401
