"""Graph passes (``ember.fx.passes``)."""
from ember.fx.passes import shape_prop  # noqa: F401
