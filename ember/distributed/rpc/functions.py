"""``@async_execution``: a function run over RPC that returns a Future; the reply is sent
when that Future completes, and the worker thread is free in the meantime."""
from __future__ import annotations

import functools

__all__ = ["async_execution"]


def async_execution(fn):
    """Mark ``fn`` (which returns an ``ember.futures.Future``) as asynchronous for RPC.
    Combine with ``@staticmethod`` / ``@classmethod`` by putting those outermost."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    wrapper._wrapped_async_rpc_function = fn
    return wrapper
