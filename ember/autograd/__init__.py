"""ember.autograd: reverse-mode automatic differentiation (torch.autograd)."""
from __future__ import annotations

from ember._state import state
from ember._tensor import Tensor
from ember.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                      is_grad_enabled, is_inference_mode_enabled)
from ember.autograd.engine import run_backward
from ember.autograd import graph

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_grad_enabled", "Function", "gradcheck", "gradgradcheck", "detect_anomaly",
           "set_detect_anomaly", "Variable"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves."""
    tensors = _as_tuple(tensors)
    grad_tensors = _as_tuple(grad_tensors if grad_tensors is not None else grad_variables)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"got {len(grad_tensors)} tensors and {len(tensors)} gradients")
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=inputs,
                 accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (returned, not accumulated)."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(is_grads_batched=True) needs ember.func.vmap")
    outputs = _as_tuple(outputs)
    single = isinstance(inputs, Tensor)
    inputs = _as_tuple(inputs)
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} "
                           f"grad_outputs and {len(outputs)} outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    return run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=inputs,
                        allow_unused=allow_unused, accumulate=False,
                        materialize_grads=materialize_grads)


class set_detect_anomaly:
    """Turn anomaly detection on or off (NaN in backward raises, naming the forward op)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = mode, check_nan

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager/decorator enabling anomaly detection."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan
        import warnings
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)
        return self

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with self:
                return fn(*a, **k)
        return wrapper


def is_anomaly_enabled():
    return state.anomaly


def Variable(data, requires_grad=False):   # deprecated alias kept for old code
    t = data.detach() if isinstance(data, Tensor) else data
    if requires_grad:
        t.requires_grad_(True)
    return t


def __getattr__(name):
    # heavier submodules load on first use
    import importlib
    if name in ("Function", "once_differentiable", "FunctionCtx"):
        return getattr(importlib.import_module("ember.autograd.function"), name)
    if name in ("functional", "forward_ad", "function", "profiler"):
        return importlib.import_module(f"ember.autograd.{name}")
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")


from ember.autograd.gradcheck import gradcheck, gradgradcheck  # noqa: E402
