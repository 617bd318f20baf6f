"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Each works as a context manager and as a decorator, and is per thread (Note [per-thread
state] in ember/_state.py).
"""
from __future__ import annotations

import functools
import inspect

from ember._state import state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled", "set_multithreading_enabled"]


def is_grad_enabled():
    return state.grad_enabled


def is_inference_mode_enabled():
    return state.inference_mode


class _GradModeContext:
    """Base: subclasses set ``_target()``; usable as ``with`` and as ``@decorator``."""

    def _target(self):
        raise NotImplementedError

    def __enter__(self):
        self._prev = (state.grad_enabled, state.inference_mode)
        self._apply()
        return None

    def _apply(self):
        state.grad_enabled = self._target()

    def __exit__(self, *exc):
        state.grad_enabled, state.inference_mode = self._prev
        return False

    def clone(self):
        return type(self)()

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError("grad-mode decorators apply to functions, not classes")
        if inspect.isgeneratorfunction(func):
            @functools.wraps(func)
            def gen_wrapper(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                    while True:
                        try:
                            request = yield response
                        except GeneratorExit:
                            with self.clone():
                                gen.close()
                            raise
                        except BaseException as exc:
                            with self.clone():
                                response = gen.throw(exc)
                        else:
                            with self.clone():
                                response = gen.send(request)
                except StopIteration as e:
                    return e.value
            return gen_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper


class no_grad(_GradModeContext):
    """Disable gradient recording (``with ember.no_grad():`` or ``@ember.no_grad()``)."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):   # bare @no_grad
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def _target(self):
        return False


class enable_grad(_GradModeContext):
    """Enable gradient recording inside a ``no_grad`` region."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            return self(orig_func)
        return self

    def __init__(self, orig_func=None):
        pass

    def _target(self):
        return True


class set_grad_enabled(_GradModeContext):
    """Set grad mode on or off; takes effect immediately, and as a context restores it."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, "
                            f"not {type(mode).__name__}")
        self._prev = (state.grad_enabled, state.inference_mode)
        self.mode = mode
        state.grad_enabled = self.mode

    def __enter__(self):
        state.grad_enabled = self.mode
        return None

    def __call__(self, func):
        # used as a decorator: undo the immediate effect of the constructor
        state.grad_enabled, state.inference_mode = self._prev
        return super().__call__(func)

    def _target(self):
        return self.mode

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_GradModeContext):
    """Like ``no_grad``, for code that will never need gradients (``mode=False`` disables)."""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode) and not isinstance(mode, bool):
            self.mode = True
            return self(mode)
        return self

    def __init__(self, mode=True):
        self.mode = mode if isinstance(mode, bool) else True

    def _apply(self):
        # like c10::InferenceMode: grad mode is the opposite of inference mode
        state.grad_enabled = not self.mode
        state.inference_mode = self.mode
        if self.mode:
            self._marker = _inference_marker().__enter__()

    def __exit__(self, *exc):
        if self.mode:
            self._marker.__exit__()
        return super().__exit__(*exc)

    def clone(self):
        return inference_mode(self.mode)


_marker_class = []


def _inference_marker():
    """Note [inference tensors]: what ops create under ``inference_mode`` is an inference
    tensor (``is_inference()``; no version counter; outside the mode it can't be modified
    in place or saved for backward). The marking is a dispatcher mode, pushed only while
    inference mode is on, so ops outside it pay nothing. A view shares its root's flag; a
    result that is one of the op's own arguments (in-place, ``out=``) keeps its own."""
    if not _marker_class:
        _marker_class.append(_define_marker())
    return _marker_class[0]()


def _define_marker():
    from ember._dispatch import Mode, dispatch      # (the dispatcher imports this package)
    from ember._tensor import Tensor
    from ember.autograd.graph import mark_inference

    def mark(r, args):
        if isinstance(r, Tensor):
            if r._storage_base is None and not any(r is a for a in args):
                mark_inference(r)
        elif isinstance(r, (tuple, list)):
            for x in r:
                mark(x, args)

    class InferenceTensors(Mode):
        def __ember_dispatch__(self, op, args, kwargs):
            out = kwargs.get("out") if kwargs else None
            r = dispatch(op, args, out)
            if state.inference_mode and out is None and not op.is_inplace:
                mark(r, args)
            return r
    return InferenceTensors


class set_multithreading_enabled(_GradModeContext):
    """Accepted for compatibility: ember's engine always runs backward on the calling
    thread, so the setting has no effect."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)

    def _apply(self):
        pass

    def clone(self):
        return set_multithreading_enabled(self.mode)
