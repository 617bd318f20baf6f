"""ember.signal (torch.signal): ``windows``."""
from ember.signal import windows  # noqa: F401
