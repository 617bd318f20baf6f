"""Activation checkpointing: keep a region's inputs, not its intermediate tensors, and
recompute the region when backward needs them.

Two flavours, as in torch:

- reentrant (``use_reentrant=True``): the region is one autograd Function. Its forward runs
  the region without grad; its backward re-runs it with grad and back-propagates through
  the fresh graph. It cannot serve ``autograd.grad`` or ``backward(inputs=...)``.
- non-reentrant (``use_reentrant=False``): the region runs normally under saved-tensor hooks
  that store a small handle in place of each saved tensor. The first handle unpacked in
  backward re-runs the region once and hands out its saved tensors.

Both replay the forward's RNG state during recomputation when ``preserve_rng_state``.
"""
import contextlib
import warnings

import ember
from ember._tensor import Tensor
from ember.autograd.function import Function
from ember.autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn",
           "set_checkpoint_early_stop", "set_checkpoint_debug_enabled", "DefaultDeviceType"]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None


class CheckpointError(RuntimeError):
    """Recomputation did not reproduce what the forward saved."""


def detach_variable(inputs):
    """Detached copies of the tensors in the tuple ``inputs``, keeping requires_grad."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: "
                           f"{type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            x = d
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(x.requires_grad for x in inputs if isinstance(x, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG is preserved (API compatibility; ember is CPU only)."""
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
    saved, _checkpoint_debug_enabled = _checkpoint_debug_enabled, enabled
    try:
        yield
    finally:
        _checkpoint_debug_enabled = saved


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Accepted for compatibility: ember always recomputes the whole region."""
    yield


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


@contextlib.contextmanager
def _replaying_rng(state, enabled):
    """Run with the RNG at ``state`` and put the current RNG state back afterwards."""
    if not enabled or state is None:
        yield
        return
    current = ember.get_rng_state()
    ember.set_rng_state(state)
    try:
        yield
    finally:
        ember.set_rng_state(current)


# -------------------------------------------------------------------- reentrant

class CheckpointFunction(Function):
    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        """Run without recording; keep what backward needs to run it again."""
        check_backward_validity(args)
        ctx.rng_state = ember.get_rng_state() if preserve_rng_state else None
        ctx.run_function, ctx.preserve_rng_state = run_function, preserve_rng_state
        # tensors go through save_for_backward; everything else is kept as is
        ctx.tensor_slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_slots))
        with ember.set_grad_enabled(False):
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not ember.autograd._is_checkpoint_valid():
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible "
                               "with .grad() or passing an `inputs` parameter to .backward(). "
                               "To resolve this error, you can either set use_reentrant=False, "
                               "or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for slot, t in zip(ctx.tensor_slots, ctx.saved_tensors):
            inputs[slot] = t
        with _replaying_rng(ctx.rng_state, ctx.preserve_rng_state):
            inputs = detach_variable(tuple(inputs))
            with ember.set_grad_enabled(True):
                outputs = ctx.run_function(*inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        pairs = [(out, g) for out, g in zip(outputs, grad_outputs)
                 if isinstance(out, Tensor) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not "
                               "necessary")
        ember.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(x.grad if isinstance(x, Tensor) else None for x in inputs)


# -------------------------------------------------------------------- non-reentrant

class _Handle:
    """Stands in for the ``slot``-th tensor saved by the checkpointed region."""
    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot


def _meta(t):
    return tuple(t.shape), t.dtype


class _Recomputer:
    """Packs the region's saved tensors into handles; unpacking re-runs the region."""

    def __init__(self, rerun, check):
        self.rerun = rerun
        self.check = check
        self.saved_meta = []        # (shape, dtype) per tensor saved in forward
        self.fresh = {}             # slot -> tensor saved by the latest recomputation

    def pack(self, t):
        self.saved_meta.append(_meta(t))
        return _Handle(len(self.saved_meta) - 1)

    def unpack(self, handle):
        if handle.slot not in self.fresh:
            self.fresh = dict(enumerate(self._recompute()))
        try:
            return self.fresh.pop(handle.slot)
        except KeyError:
            raise CheckpointError("torch.utils.checkpoint: Unpack is being triggered for a "
                                  "tensor that was already unpacked once. If you are calling "
                                  "ctx.saved_tensors in backward, make sure to do so only once. "
                                  "Otherwise please open an issue with details on your use "
                                  "case.") from None

    def _recompute(self):
        got = []
        # backward under create_graph (grad mode on): the region re-runs on the original
        # inputs and its saved tensors stay attached, so the gradient is differentiable
        attach = ember.is_grad_enabled()

        def keep(t):
            got.append(t if attach else t.detach())
            return t if attach else None

        def refuse(t):
            if attach:
                return t
            raise CheckpointError("torch.utils.checkpoint: the recomputed graph was used for "
                                  "backward")

        keep._checkpoint_recompute = True
        with saved_tensors_hooks(keep, refuse):
            self.rerun(attach)
        if self.check:
            self._compare(got)
        return got

    def _compare(self, got):
        want = self.saved_meta
        if len(got) != len(want):
            raise CheckpointError(
                f"torch.utils.checkpoint: A different number of tensors was saved during "
                f"the original forward and recomputation.\nNumber of tensors saved during "
                f"forward: {len(want)}\nNumber of tensors saved during "
                f"recomputation: {len(got)}.")
        report = ""
        for i, (t, (shape, dtype)) in enumerate(zip(got, want)):
            if _meta(t) != (shape, dtype):
                report += (f"tensor at position {i}:\n"
                           f"saved metadata: {{'shape': {shape}, 'dtype': {dtype}}}\n"
                           f"recomputed metadata: {{'shape': {tuple(t.shape)}, "
                           f"'dtype': {t.dtype}}}\n")
        if report:
            raise CheckpointError("torch.utils.checkpoint: Recomputed values for the "
                                  "following tensors have different metadata than during "
                                  "the forward pass.\n" + report)


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check,
                                  args, kwargs):
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    forward_ctx, recompute_ctx = context_fn()
    rng_state = ember.get_rng_state() if preserve_rng_state else None
    grad_mode = ember.is_grad_enabled()

    # the region's tensor arguments are saved through the saved-tensor hooks around the
    # call (as torch: a pack now, an unpack per recomputation)
    # (a user's hooks only: inside another checkpoint's region its own handles serve)
    from ember.autograd.graph import _hook_state, _pack
    top = _hook_state.stack[-1][0] if _hook_state.stack else None
    ours = isinstance(getattr(top, "__self__", None), _Recomputer) or \
        getattr(top, "_checkpoint_recompute", False)
    packed = [_pack(a) if isinstance(a, Tensor) and not ours else None for a in args]

    def rerun(attach=False):
        with _replaying_rng(rng_state, preserve_rng_state):
            now = tuple(a if p is None else p.unpack() for a, p in zip(args, packed))
            inputs = tuple(args) if attach else detach_variable(now)
            with ember.set_grad_enabled(grad_mode), recompute_ctx:
                function(*inputs, **kwargs)

    rec = _Recomputer(rerun, check=determinism_check == "default")
    with saved_tensors_hooks(rec.pack, rec.unpack), forward_ctx:
        return function(*args, **kwargs)


# -------------------------------------------------------------------- public API

def _resolve_reentrant(use_reentrant, warning):
    if use_reentrant is None:
        warnings.warn(warning, stacklevel=3)
        return True
    return use_reentrant


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False, early_stop=True,
               **kwargs):
    """``function(*args, **kwargs)``, recomputed in backward instead of keeping its
    intermediate tensors."""
    use_reentrant = _resolve_reentrant(use_reentrant, (
        "torch.utils.checkpoint: the use_reentrant parameter should be passed "
        "explicitly. Starting in PyTorch 2.9, calling checkpoint without "
        "use_reentrant will raise an exception. use_reentrant=False is "
        "recommended, but if you need to preserve the current default behavior, "
        "you can pass use_reentrant=True. Refer to docs for more details on the "
        "differences between the two variants."))
    preserve = kwargs.pop("preserve_rng_state", True)
    if not use_reentrant:
        return _checkpoint_without_reentrant(function, preserve, context_fn,
                                             determinism_check, args, kwargs)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    reentrant_only = context_fn is noop_context_fn and debug is False
    if not reentrant_only:
        raise ValueError("Passing `context_fn` or `debug` is only supported when "
                         "use_reentrant=False.")
    return CheckpointFunction.apply(function, preserve, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Apply ``functions`` (a list or a Sequential) in order; all but the last of the
    ``segments`` chunks are checkpointed."""
    use_reentrant = _resolve_reentrant(use_reentrant, (
        "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
        "parameter should be passed explicitly. In version 2.9 we will raise an "
        "exception if use_reentrant is not passed. use_reentrant=False is "
        "recommended, but if you need to preserve the current default behavior, "
        "you can pass use_reentrant=True. Refer to docs for more details on the "
        "differences between the two variants."))
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if callable(getattr(functions, "children", None)):
        functions = list(functions.children())

    def chain(lo, hi):
        def run(x):
            for fn in functions[lo:hi]:
                x = fn(x)
            return x
        return run

    size = len(functions) // segments
    end = 0
    for start in range(0, size * (segments - 1), size):
        end = start + size
        input = checkpoint(chain(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return chain(end, len(functions))(input)
