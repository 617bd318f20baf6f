"""Activation checkpointing (torch.utils.checkpoint): trade compute for memory by not
keeping a region's intermediate tensors for backward and recomputing them instead.

- ``use_reentrant=True``: the region is a custom ``autograd.Function`` that runs it under
  ``no_grad`` and, in backward, re-runs it with grad enabled and calls
  ``autograd.backward`` on the recomputed graph (a backward inside backward). As in torch
  it cannot serve ``autograd.grad`` or ``backward(inputs=...)``.
- ``use_reentrant=False``: the region runs normally, but under saved-tensor hooks
  (Note [saved tensor hooks] in ember/autograd/graph.py) that keep a placeholder instead of
  each saved tensor; the first unpack in backward re-runs the region once and hands out
  the recomputed tensors. Works with ``autograd.grad``, partial backward and kwargs.

Both restore the RNG state of the forward during recomputation when ``ember`` has an RNG
(``ember.get_rng_state``/``set_rng_state``) and ``preserve_rng_state=True``.
"""
from __future__ import annotations

import contextlib
import warnings

from ember._state import state
from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "DefaultDeviceType"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    pass


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                       f"{type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    _default_device_type = "cuda"

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    _checkpoint_debug_enabled = enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for compatibility: ember always recomputes the whole region."""
    yield


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


# -------------------------------------------------------------------- RNG state

def _get_rng_state():
    import ember
    fn = getattr(ember, "get_rng_state", None)
    return fn() if fn is not None else None


@contextlib.contextmanager
def _fork_rng(fwd_state, enabled):
    """Run with the RNG set to ``fwd_state``; restore the surrounding state afterwards."""
    import ember
    set_state = getattr(ember, "set_rng_state", None)
    if not enabled or fwd_state is None or set_state is None:
        yield
        return
    outer = ember.get_rng_state()
    set_state(fwd_state)
    try:
        yield
    finally:
        set_state(outer)


class _grad_mode:
    def __init__(self, mode):
        self.mode = mode

    def __enter__(self):
        self.prev = state.grad_enabled
        state.grad_enabled = self.mode

    def __exit__(self, *exc):
        state.grad_enabled = self.prev
        return False


# -------------------------------------------------------------------- reentrant

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = _get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with _grad_mode(False):
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        from ember import autograd
        if not autograd._is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible "
                               "with .grad() or passing an `inputs` parameter to .backward(). "
                               "To resolve this error, you can either set use_reentrant=False, "
                               "or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with _fork_rng(getattr(ctx, "fwd_cpu_state", None), ctx.preserve_rng_state):
            detached_inputs = detach_variable(tuple(inputs))
            with _grad_mode(True):
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# -------------------------------------------------------------------- non-reentrant

class _Handle:
    __slots__ = ("idx",)

    def __init__(self, idx):
        self.idx = idx


class _Frame:
    """One checkpointed call: how to recompute it and the recomputed saved tensors."""

    def __init__(self, recompute_fn, check):
        self.recompute_fn = recompute_fn
        self.check = check
        self.metas = []            # (shape, dtype) of each tensor saved in forward
        self.recomputed = {}       # handle index -> recomputed tensor

    def pack(self, t):
        h = _Handle(len(self.metas))
        self.metas.append((tuple(t.shape), t.dtype))
        return h

    def unpack(self, h):
        if h.idx not in self.recomputed:
            self._recompute()
        try:
            return self.recomputed.pop(h.idx)
        except KeyError:
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a "
                                  "tensor that was already unpacked once. If you are calling "
                                  "ctx.saved_tensors in backward, make sure to do so only once. "
                                  "Otherwise please open an issue with details on your use "
                                  "case.") from None

    def _recompute(self):
        rec = []

        def pack(t):
            rec.append(t.detach())
            return None

        def unpack(_):
            raise CheckpointError("torch.utils.checkpoint: the recomputed graph was used for "
                                  "backward")

        with saved_tensors_hooks(pack, unpack):
            self.recompute_fn()
        if self.check:
            if len(rec) != len(self.metas):
                raise CheckpointError(
                    f"torch.utils.checkpoint: A different number of tensors was saved during "
                    f"the original forward and recomputation.\nNumber of tensors saved during "
                    f"forward: {len(self.metas)}\nNumber of tensors saved during "
                    f"recomputation: {len(rec)}.")
            bad = [i for i, (t, m) in enumerate(zip(rec, self.metas))
                   if (tuple(t.shape), t.dtype) != m]
            if bad:
                lines = "".join(f"tensor at position {i}:\nsaved metadata: "
                                f"{{'shape': {self.metas[i][0]}, 'dtype': {self.metas[i][1]}}}\n"
                                f"recomputed metadata: {{'shape': {tuple(rec[i].shape)}, "
                                f"'dtype': {rec[i].dtype}}}\n" for i in bad)
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the "
                                      "following tensors have different metadata than during "
                                      "the forward pass.\n" + lines)
        self.recomputed = dict(enumerate(rec))


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_context, recompute_context = context_fn()
    fwd_rng = _get_rng_state() if preserve_rng_state else None
    grad_enabled = state.grad_enabled

    def recompute():
        with _fork_rng(fwd_rng, preserve_rng_state):
            detached = detach_variable(tuple(args))
            with _grad_mode(grad_enabled), recompute_context:
                function(*detached, **kwargs)

    frame = _Frame(recompute, determinism_check == "default")
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


# -------------------------------------------------------------------- public API

def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """Run ``function(*args, **kwargs)`` without keeping its intermediate tensors for
    backward; they are recomputed when backward needs them."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
                      "use_reentrant will raise an exception. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check,
                                         args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run a sequence of functions (or a Sequential module) in ``segments`` checkpointed
    chunks; the last chunk runs normally."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly. In version 2.9 we will raise an "
                      "exception if use_reentrant is not passed. use_reentrant=False is "
                      "recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
