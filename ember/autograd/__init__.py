"""ember.autograd: reverse-mode automatic differentiation (torch.autograd)."""
from __future__ import annotations

import warnings as _warnings
from collections.abc import Mapping as _Mapping

from ember._state import state
from ember._tensor import Tensor
from ember.autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                      is_grad_enabled, is_inference_mode_enabled,
                                      set_multithreading_enabled)
from ember.autograd.engine import run_backward, is_checkpoint_valid as _is_checkpoint_valid
from ember.autograd import graph
from ember.autograd import grad_mode

__all__ = ["Variable", "Function", "backward", "grad_mode", "NestedIOFunction",
           "detect_anomaly", "enable_grad", "grad", "gradcheck", "gradgradcheck",
           "inference_mode", "no_grad", "set_detect_anomaly", "set_grad_enabled",
           "set_multithreading_enabled", "is_grad_enabled",
           "is_inference_mode_enabled", "functional", "graph"]


def _as_tuple(x):
    if x is None:
        return None
    if isinstance(x, (Tensor, graph.GradientEdge)):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, fn):
    if inputs is None:
        return None
    if isinstance(inputs, (Tensor, graph.GradientEdge)):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, _Mapping):
        raise TypeError(f"`inputs` argument to `{fn}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return tuple(inputs)


_warned_create_graph = [False]


def _overridable(tensors):
    """The arguments of ``grad``/``backward`` that take part in ``__torch_function__`` (none
    for plain tensors: the common case costs one type test each)."""
    if all(type(t) is Tensor for t in tensors):
        return ()
    from ember.overrides import has_torch_function
    ts = tuple(t for t in tensors if isinstance(t, Tensor))
    return ts if has_torch_function(ts) else ()


def _handle(fn, relevant, *args, **kwargs):
    from ember.overrides import handle_torch_function
    return handle_torch_function(fn, relevant, *args, **kwargs)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of graph leaves (or of
    ``inputs`` only, when given)."""
    if grad_variables is not None:
        _warnings.warn("`grad_variables` is deprecated. Use `grad_tensors` instead.",
                       FutureWarning, stacklevel=2)
        if grad_tensors is None:
            grad_tensors = grad_variables
        else:
            raise RuntimeError("`grad_tensors` and `grad_variables` (deprecated) arguments both "
                               "passed to `backward()`. Please only use `grad_tensors`.")
    inputs_t = _inputs_tuple(inputs, "backward")
    if inputs is not None and len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    tensors = _as_tuple(tensors)
    relevant = _overridable(tensors + (inputs_t or ()))
    if relevant:        # (torch hands the call to the tensors' __torch_function__)
        return _handle(backward, relevant, tensors, grad_tensors=grad_tensors,
                       retain_graph=retain_graph, create_graph=create_graph, inputs=inputs_t)
    grad_tensors = _as_tuple(grad_tensors)
    if grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    if create_graph and not _warned_create_graph[0]:
        _warned_create_graph[0] = True          # like torch: warned once per process
        _warnings.warn("Using backward() with create_graph=True will create a reference cycle "
                       "between the parameter and its gradient which can cause a memory leak. "
                       "We recommend using autograd.grad when creating the graph to avoid this. "
                       "If you have to use this function, make sure to reset the .grad fields "
                       "of your parameters to None after use to break the cycle and avoid the "
                       "leak.", UserWarning, stacklevel=3)
    run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=inputs_t,
                 accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs`` (returned, not accumulated)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs_t = _inputs_tuple(inputs, "grad")
    relevant = _overridable(outputs + (inputs_t or ()))
    if relevant:        # (a subclass's default handler returns its own type of gradients)
        return _handle(grad, relevant, outputs, inputs_t, grad_outputs=grad_outputs,
                       retain_graph=retain_graph, create_graph=create_graph,
                       only_inputs=only_inputs, allow_unused=allow_unused,
                       is_grads_batched=is_grads_batched, materialize_grads=materialize_grads)
    if len(inputs_t) == 0:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        _warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                       "True). To accumulate gradient for other parts of the graph, please use "
                       "torch.autograd.backward.", FutureWarning, stacklevel=2)
    grad_outputs = _as_tuple(grad_outputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    if is_grads_batched:
        return _grad_batched(outputs, inputs, inputs_t, grad_outputs, retain_graph,
                             create_graph, allow_unused, materialize_grads)
    result = run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=inputs_t,
                          allow_unused=allow_unused, accumulate=False,
                          materialize_grads=materialize_grads)
    result = _kind_of_inputs(inputs_t, result)
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


def _kind_of_inputs(inputs, grads):
    """A gradient for an input whose type says how (``_gradient_of``: a MaskedTensor's is
    one with its mask, as torch's) is given in that form."""
    out = None
    for k, (i, g) in enumerate(zip(inputs, grads)):
        to_kind = getattr(type(i), "_gradient_of", None)
        if to_kind is not None and g is not None:
            out = list(grads) if out is None else out
            out[k] = to_kind(i, g)
    return grads if out is None else tuple(out)


def _grad_batched(outputs, inputs, inputs_t, grad_outputs, retain_graph, create_graph,
                  allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: the vjp vmapped over dim 0 of each
    grad_output (one backward pass with batched cotangents)."""
    from ember.func import vmap
    for g in grad_outputs:
        if g is not None and not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    keep = [i for i, g in enumerate(grad_outputs) if g is not None]
    for i in keep:
        o, g = outputs[i], grad_outputs[i]
        if isinstance(o, Tensor) and tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(f"If `is_grads_batched=True`, we interpret the first dimension "
                               f"of each grad_output as the batch dimension. The sizes of the "
                               f"remaining dimensions are expected to match the shape of "
                               f"corresponding output, but a mismatch was detected: "
                               f"grad_output[{i}] has a shape of {g.shape[1:]} and "
                               f"output[{i}] has a shape of {o.shape}. If you only want some "
                               f"tensors in `grad_output` to be considered batched, consider "
                               f"using vmap.")
    unused = []

    def vjp(*gs):
        go = list(grad_outputs)
        for i, g in zip(keep, gs):
            go[i] = g
        res = run_backward(outputs, tuple(go), retain_graph, create_graph, inputs=inputs_t,
                           allow_unused=allow_unused, accumulate=False,
                           materialize_grads=materialize_grads)
        unused[:] = [r is None for r in res]
        # vmap outputs must be tensors: a placeholder for unused inputs
        return tuple(gs[0].new_zeros(()) if r is None else r for r in res)

    res = vmap(vjp)(*[grad_outputs[i] for i in keep])
    result = tuple(None if u else r for r, u in zip(res, unused))
    if type(inputs) is dict:
        return dict(zip(inputs.keys(), result))
    return result


# -------------------------------------------------------------------- anomaly mode

class set_detect_anomaly:
    """Turn anomaly detection on or off now; as a context manager, restore on exit."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = bool(mode), bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager/decorator enabling anomaly detection: each backward node remembers
    the traceback of the forward call that created it; a failing (or NaN-producing)
    backward node prints it and raises."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        _warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                       "runtime and should only be enabled for debugging.", UserWarning,
                       stacklevel=2)

    def __enter__(self):
        self.prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan
        return None

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


def is_anomaly_check_nan_enabled():
    return state.anomaly_check_nan


# -------------------------------------------------------------------- Variable

class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class _classproperty:
    def __init__(self, fget):
        self.fget = fget

    def __get__(self, obj, owner):
        return self.fget(owner)


class Variable(metaclass=_VariableMeta):
    """Deprecated: ``Variable(t, requires_grad=...)`` returns a Tensor."""

    def __new__(cls, data=None, requires_grad=False, volatile=False):
        if data is None:
            from ember import tensor
            return tensor([]).requires_grad_(requires_grad)
        t = data.detach() if isinstance(data, Tensor) else data
        if requires_grad:
            t.requires_grad_(True)
        return t

    @_classproperty
    def _execution_engine(cls):
        from ember.autograd.engine import _ExecutionEngine
        return _ExecutionEngine


# -------------------------------------------------------------------- Tensor methods
# Autograd-only Tensor methods that ember/_tensor.py doesn't define (yet).

def _register_post_accumulate_grad_hook(self, hook):
    """Register ``hook(tensor)`` to run after a gradient was accumulated into ``.grad``."""
    return graph.register_post_accumulate_grad_hook(self, hook)


if not hasattr(Tensor, "register_post_accumulate_grad_hook"):
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook


def __getattr__(name):
    # submodules that other parts of ember provide load on first use
    import importlib
    if name in ("forward_ad", "profiler"):
        try:
            return importlib.import_module(f"ember.autograd.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.autograd.{name}":
                raise
    raise AttributeError(f"module 'ember.autograd' has no attribute '{name}'")


from ember.autograd.function import (Function, FunctionCtx, once_differentiable,  # noqa: E402
                                     InplaceFunction, NestedIOFunction, BackwardCFunction)
from ember.autograd import function  # noqa: E402
from ember.autograd import functional  # noqa: E402
from ember.autograd.gradcheck import gradcheck, gradgradcheck  # noqa: E402
from ember.autograd import variable as _variable_module  # noqa: E402,F401  (loaded first:
# the function below then owns the attribute name, as torch.autograd.variable does)


def variable(*args, **kwargs):
    """The legacy ``torch.autograd.variable(...)`` constructor: removed, it raises; its
    ``Variable`` attribute is the Variable class."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) "
                       "instead")


variable.Variable = Variable
