"""torch.testing: ``assert_close``, ``make_tensor`` and the deprecated ``assert_allclose``."""
from ember.testing._comparison import assert_close, assert_allclose  # noqa: F401
from ember.testing._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "make_tensor", "assert_allclose"]
