"""torch.amp: autocast regions and gradient scaling."""
from ember.amp.autocast_mode import (autocast, is_autocast_available, custom_fwd,  # noqa
                                     custom_bwd)
from ember.amp.grad_scaler import GradScaler  # noqa: F401

__all__ = ["autocast", "GradScaler", "is_autocast_available", "custom_fwd", "custom_bwd"]
