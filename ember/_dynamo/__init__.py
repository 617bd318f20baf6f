"""torch._dynamo's small public surface: ember.compile has no tracer, so ``reset`` has
nothing to clear and ``config`` only holds the flags scripts set."""
from __future__ import annotations

from ember._dynamo import config, exc  # noqa: F401
from ember._dynamo.eval_frame import OptimizedModule
from ember.compiler import (allow_in_graph, assume_constant_result, disable,  # noqa: F401
                            is_compiling)

__all__ = ["OptimizedModule", "reset", "config", "is_compiling", "disable", "allow_in_graph",
           "assume_constant_result", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "mark_static_address", "graph_break"]



def reset() -> None:
    """Clear compiled-code caches (ember keeps none)."""


def mark_dynamic(t, index, *, min=None, max=None):
    """Mark dims of ``t`` as dynamic for the tracer (ember traces nothing: a no-op)."""


def maybe_mark_dynamic(t, index):
    """See ``mark_dynamic``."""


def mark_static(t, index=None):
    """See ``mark_dynamic``."""


def mark_static_address(t, guard=True):
    """See ``mark_dynamic``."""


def graph_break():
    """Split the traced graph here (nothing is traced: a no-op)."""
