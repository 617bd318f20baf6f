"""Launch elastic agents from Python (``torch.distributed.launcher``)."""
from ember.distributed.launcher.api import LaunchConfig, elastic_launch, launch_agent  # noqa: F401

__all__ = ["LaunchConfig", "elastic_launch", "launch_agent"]
