"""torch.profiler.profiler: the path torch defines the profiler API under."""
from ember.profiler import (ProfilerAction, profile, schedule,  # noqa: F401
                            supported_activities, tensorboard_trace_handler)

__all__ = ["ProfilerAction", "profile", "schedule", "supported_activities",
           "tensorboard_trace_handler"]
