"""torch._dynamo's small public surface: ember.compile has no tracer, so ``reset`` has
nothing to clear and ``config`` only holds the flags scripts set."""
from __future__ import annotations

import types

from ember._dynamo.eval_frame import OptimizedModule
from ember.compiler import (allow_in_graph, assume_constant_result, disable,  # noqa: F401
                            is_compiling)

__all__ = ["OptimizedModule", "reset", "config", "is_compiling", "disable", "allow_in_graph",
           "assume_constant_result"]

config = types.SimpleNamespace(suppress_errors=False, cache_size_limit=8, verbose=False,
                               capture_scalar_outputs=False)


def reset() -> None:
    """Clear compiled-code caches (ember keeps none)."""
