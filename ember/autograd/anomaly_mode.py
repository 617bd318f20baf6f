"""torch.autograd.anomaly_mode: the path torch defines anomaly detection under."""
from ember.autograd import detect_anomaly, set_detect_anomaly  # noqa: F401

__all__ = ["detect_anomaly", "set_detect_anomaly"]
