"""torch._inductor: ember has no code generator; ``config`` records the flags scripts set."""
from ember._inductor import config  # noqa: F401

__all__ = ["config"]
