"""``jit.fork`` / ``jit.wait`` and ``Future``.

Eager ``fork`` runs the call at once and returns a completed Future, as torch does (an
error is raised by ``fork`` itself). Scripted code's ``fork`` (``prim::fork``) submits the
task to the inter-op thread pool (``get_num_interop_threads`` workers, fixed when the pool
starts); the task runs with the forking thread's grad mode, inference mode and mode stack
(Note [per-thread state] in ``ember/_state.py``), so ``no_grad``, the profiler and autocast
reach forked code. A pool worker that waits on a task nobody has started yet runs it
itself, so nested forks cannot exhaust the pool.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from ember._state import state

_T = TypeVar("_T")
_pool = None
_pool_lock = threading.Lock()


class Future(Generic[_T]):
    """The result of an asynchronous task: ``wait()`` blocks for it (re-raising its error),
    ``then(cb)`` chains a callback taking this future."""

    def __init__(self, *, devices=None):
        self._done = threading.Event()
        self._value = None
        self._error = None
        self._callbacks = []
        self._lock = threading.Lock()
        self._task = None            # a forked task not started yet (see ``_claim``)
        self._claimed = False
        self._on_wait = None         # set by jit.trace: records aten::wait
        self._driver = None          # completes the future by polling (distributed Work)

    def done(self):
        return self._done.is_set()

    def wait(self):
        if self._driver is not None and not self._done.is_set():
            try:
                self._driver()
            except Exception:        # noqa: BLE001 - the future now holds the error
                pass
        task = self._task
        if task is not None and not self._done.is_set() and _in_worker():
            task()                   # runs here unless a worker has claimed it
        self._done.wait()
        if self._error is not None:
            raise self._error
        if self._on_wait is not None:
            self._on_wait(self, self._value)
        return self._value

    def value(self):
        if not self.done():
            raise RuntimeError("Future.value() called on a future that is not completed")
        return self.wait()

    def set_result(self, result):
        self._finish(result, None)

    def set_exception(self, error):
        self._finish(None, error)

    def _finish(self, value, error):
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error = value, error
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def then(self, callback):
        out = Future()
        out._driver = self._driver

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:      # noqa: BLE001 - carried to the waiter
                out.set_exception(RuntimeError(f"Got the following error when running the "
                                               f"callback: {type(e).__name__}: {e}"))
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback):
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self):
        return f"<ember.jit.Future {'done' if self.done() else 'pending'}>"


def _executor():
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                from ember import _threads
                n = _threads.get_num_interop_threads()
                _threads._settings["interop"] = n        # fixed once parallel work started
                _pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="ember-interop")
    return _pool


def _in_worker():
    return threading.current_thread().name.startswith("ember-interop")


def _claim(fut):
    """True for the one thread that gets to run ``fut``'s task."""
    with fut._lock:
        if fut._claimed:
            return False
        fut._claimed = True
        return True


def fork(fn, *args, **kwargs):
    """Scripted ``fork``: run ``fn`` on the inter-op pool with this thread's modes."""
    fut = Future()
    grad, inference, modes = state.grad_enabled, state.inference_mode, state.modes

    def task():
        if not _claim(fut):
            return
        st = state
        saved = st.grad_enabled, st.inference_mode, st.modes
        st.grad_enabled, st.inference_mode, st.modes = grad, inference, modes
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:      # noqa: BLE001 - delivered by wait()
            fut.set_exception(e)
        finally:
            st.grad_enabled, st.inference_mode, st.modes = saved
            fut._task = None         # drop the arguments
    fut._task = task
    _executor().submit(task)
    return fut


def eager_fork(fn, *args, **kwargs):
    """``jit.fork`` outside scripted code: runs ``fn`` now (scripted or not, as torch does;
    its error is raised here) and returns a completed Future. While tracing, the call is
    recorded as ``prim::fork`` (see ``_trace._Tracer.fork``)."""
    from ember.jit import _trace
    tracer = _trace._active()
    if tracer is not None and tracer.frames:
        return tracer.fork(fn, args, kwargs)
    fut = Future()
    fut.set_result(fn(*args, **kwargs))
    return fut


def wait(fut):
    """``jit.wait``: the task's result (its error re-raised)."""
    return fut.wait()
