"""torch.compiler: the public switches around ``torch.compile``.

ember compiles nothing (``ember.compile`` runs eagerly), so code is never being compiled or
exported: the markers and decorators here return what they are given and the queries answer
False.
"""
from __future__ import annotations

import contextlib

__all__ = ["compile", "reset", "allow_in_graph", "substitute_in_graph",
           "assume_constant_result", "list_backends", "disable", "set_stance",
           "cudagraph_mark_step_begin", "wrap_numpy", "is_compiling", "is_dynamo_compiling",
           "is_exporting", "nested_compile_region"]


def compile(*args, **kwargs):
    """``ember.compile``."""
    import ember
    return ember.compile(*args, **kwargs)


def reset() -> None:
    """Clear compilation caches (ember keeps none)."""


def list_backends(exclude_tags=("debug", "experimental")):
    """Compiler backends besides the debug ones: none (ember's only backend is eager)."""
    return []


def is_compiling() -> bool:
    """False: ember never traces a function."""
    return False


is_dynamo_compiling = is_compiling
is_exporting = is_compiling


def allow_in_graph(fn):
    return fn


def assume_constant_result(fn):
    return fn


def wrap_numpy(fn):
    return fn


def substitute_in_graph(original_fn, *, can_constant_fold_through=False,
                        skip_signature_check=False):
    """A decorator keeping the decorated function (there is no graph to substitute in)."""
    return lambda fn: fn


def disable(fn=None, recursive=True, *, reason=None):
    """Exclude ``fn`` from compilation: it already runs eagerly, so it comes back unchanged
    (or, without ``fn``, a decorator doing that)."""
    return (lambda f: f) if fn is None else fn


def nested_compile_region(fn=None, **options):
    return (lambda f: f) if fn is None else fn


def cudagraph_mark_step_begin() -> None:
    """A CUDA-graphs marker: nothing to mark on ember."""


class set_stance(contextlib.ContextDecorator):
    """How compiled functions behave (``"default"``, ``"force_eager"``, ...): ember's always
    run eagerly, so the stance is only recorded; usable as a call, a context
    manager or a decorator."""

    current = "default"

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        self._prev = set_stance.current
        set_stance.current = stance
        self.stance = stance

    def __enter__(self):
        set_stance.current = self.stance
        return self

    def __exit__(self, *exc):
        set_stance.current = self._prev
        return False

    __call__ = contextlib.ContextDecorator.__call__
