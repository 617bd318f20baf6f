"""Hook plumbing for ``Module``: removable handles, process-wide module hooks, and the
identity-function trick behind full backward (pre-)hooks."""
import functools
import warnings
import weakref
from collections import OrderedDict

from ember import Tensor
from ember._runtime_flags import user_stacklevel


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` (or leaving a ``with`` block) drops
    the hook from its dict and from any companion flag dicts (``with_kwargs`` ...)."""
    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        extras = [extra_dict] if isinstance(extra_dict, dict) else (extra_dict or [])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def _dicts(self):
        return [ref() for ref in (self.hooks_dict_ref, *self.extra_dict_ref)]

    def remove(self):
        for d in self._dicts():
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):
        main, *extra = self._dicts()
        return main, self.id, tuple(extra)

    def __setstate__(self, state):
        main, self.id = state[0], state[1]
        self.hooks_dict_ref = weakref.ref(OrderedDict() if main is None else main)
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        extra = state[2] if len(state) > 2 and state[2] is not None else ()
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_hook(hooks, hook, *, flags=(), prepend=False, extra=None):
    """Store ``hook`` in ``hooks`` under a fresh handle id; set the id in each dict of
    ``flags`` (the ``with_kwargs``/``always_call`` markers); ``extra`` lists the flag dicts
    the handle must clean up too."""
    handle = RemovableHandle(hooks, extra_dict=extra)
    hooks[handle.id] = hook
    for flag_dict in flags:
        flag_dict[handle.id] = True
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


class _WrappedHook:
    """A hook that optionally receives a (weakly held) module as its first argument."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = module is not None
        if self.with_module:
            self.module = weakref.ref(module)

    def _live_module(self, message):
        module = self.module()
        if module is None:
            raise RuntimeError(message)
        return module

    def __call__(self, *args, **kwargs):
        if self.with_module:
            args = (self._live_module("You are trying to call the hook of a dead Module!"),
                    *args)
        return self.hook(*args, **kwargs)

    def __getstate__(self):
        out = {"hook": self.hook, "with_module": self.with_module}
        if self.with_module:
            out["module"] = self.module()
        return out

    def __setstate__(self, state):
        self.hook, self.with_module = state["hook"], state["with_module"]
        if not self.with_module:
            return
        if state["module"] is None:
            raise RuntimeError("You are trying to revive the hook of a dead Module!")
        self.module = weakref.ref(state["module"])


# ------------------------------------------------------------------ process-wide hooks
class _Globals:
    """Hooks every module runs (``register_module_*``); one instance, ``GLOBAL``."""

    def __init__(self):
        self.buffer_registration = OrderedDict()
        self.module_registration = OrderedDict()
        self.parameter_registration = OrderedDict()
        self.forward_pre = OrderedDict()
        self.forward = OrderedDict()
        self.forward_with_kwargs = OrderedDict()
        self.forward_always_called = OrderedDict()
        self.backward_pre = OrderedDict()
        self.backward = OrderedDict()
        self.is_full_backward = None      # None until the first global backward hook

    def any_call_hook(self):
        return bool(self.forward_pre or self.forward or self.backward_pre or self.backward)

    def set_backward_kind(self, full):
        if self.is_full_backward is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks "
                               "as a global Module hook. Please use only one of them.")
        self.is_full_backward = full


GLOBAL = _Globals()


def run_registration_hooks(hooks, module, name, value):
    """Let each registration hook replace ``value`` by returning something."""
    for hook in hooks.values():
        out = hook(module, name, value)
        if out is not None:
            value = out
    return value


def register_module_buffer_registration_hook(hook):
    """Run ``hook(module, name, buffer)`` whenever any module registers a buffer."""
    return add_hook(GLOBAL.buffer_registration, hook)


def register_module_module_registration_hook(hook):
    """Run ``hook(module, name, submodule)`` whenever any module registers a submodule."""
    return add_hook(GLOBAL.module_registration, hook)


def register_module_parameter_registration_hook(hook):
    """Run ``hook(module, name, param)`` whenever any module registers a parameter."""
    return add_hook(GLOBAL.parameter_registration, hook)


def register_module_forward_pre_hook(hook):
    """Run ``hook(module, args)`` before every module's forward."""
    return add_hook(GLOBAL.forward_pre, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Run ``hook(module, args, output)`` after every module's forward."""
    flags = [d for d, on in ((GLOBAL.forward_with_kwargs, with_kwargs),
                             (GLOBAL.forward_always_called, always_call)) if on]
    return add_hook(GLOBAL.forward, hook, flags=flags, extra=GLOBAL.forward_always_called)


def register_module_backward_hook(hook):
    """Global (deprecated, non-full) backward hook."""
    GLOBAL.set_backward_kind(False)
    return add_hook(GLOBAL.backward, hook)


def register_module_full_backward_pre_hook(hook):
    """Run ``hook(module, grad_output)`` before every module's backward."""
    return add_hook(GLOBAL.backward_pre, hook)


def register_module_full_backward_hook(hook):
    """Run ``hook(module, grad_input, grad_output)`` after every module's backward."""
    GLOBAL.set_backward_kind(True)
    return add_hook(GLOBAL.backward, hook)


# ------------------------------------------------------------------ full backward hooks
_IDENTITY = []


def _identity_function():
    """The autograd Function ``BackwardHookFunction``: returns its inputs unchanged, so its
    node sees exactly the gradients flowing into/out of a module. Built on first use."""
    if not _IDENTITY:
        from ember.autograd import Function

        class BackwardHookFunction(Function):
            @staticmethod
            def forward(ctx, *tensors):
                ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
                return tensors

            @staticmethod
            def backward(ctx, *grads):
                return grads
        _IDENTITY.append(BackwardHookFunction)
    return _IDENTITY[0]


def _spread(positions, values, size):
    """Place ``values`` at ``positions`` of a ``size``-long tuple of Nones."""
    out = [None] * size
    for i, v in zip(positions, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """Per-call helper behind ``register_full_backward_hook``/``_pre_hook``.

    The module's tensor inputs and outputs are passed through an identity Function; a hook on
    the output node captures ``grad_output`` (running pre-hooks), and a hook on the input node
    sees ``grad_input`` and runs the user's backward hooks with both."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_tensors_index = self.output_tensors_index = None

    def _wrap(self, values, on_node):
        """Route the tensors of ``values`` through the identity Function and give its node to
        ``on_node``. Returns (new values, tensor positions or None if nothing needs grad)."""
        from ember import is_grad_enabled
        where = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        tensors = [values[i] for i in where]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return values, None
        outs = _identity_function().apply(*tensors)
        outs = outs if isinstance(outs, tuple) else (outs,)
        node = next((t.grad_fn for t in outs if t.grad_fn is not None
                     and t.grad_fn.name() == "BackwardHookFunctionBackward"), None)
        if node is None:
            raise RuntimeError("Error while setting up backward hooks. Please open an issue "
                               "with a code sample to reproduce this.")
        on_node(node)
        items = list(values)
        for i, t in zip(where, outs):
            items[i] = t
        return (tuple(items) if type(values) is tuple else type(values)(*items)), where

    # ---- inputs: grad_input arrives here, last
    def setup_input_hook(self, args):
        def hook(grad_input, grad_output):      # (named as torch's in its size/dtype errors)
            return self._on_grad_input(grad_input, grad_output)
        new_args, where = self._wrap(args, lambda node: node.register_hook(hook))
        self.n_inputs, self.input_tensors_index = len(args), where
        # torch hands the hooks zeros for the tensor inputs that need no grad (a loss's target)
        self.input_needs_grad = [args[i].requires_grad for i in where or ()]
        self.input_meta = [(tuple(args[i].shape), args[i].dtype) for i in where or ()]
        return new_args

    def _on_grad_input(self, grad_input, _grad_output):
        if self.grad_outputs is None:
            return None
        from ember import zeros
        grad_input = tuple(zeros(shape, dtype=dtype) if g is None and not needs else g
                           for g, needs, (shape, dtype) in
                           zip(grad_input, self.input_needs_grad, self.input_meta))
        grads = _spread(self.input_tensors_index, grad_input, self.n_inputs)
        for user_hook in self.user_hooks:
            out = user_hook(self.module, grads, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(grads):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(grads)}")
            grads = out
        self.grad_outputs = None
        return tuple(grads[i] if needs else None
                     for i, needs in zip(self.input_tensors_index, self.input_needs_grad))

    # ---- outputs: grad_output arrives here, first
    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        new, where = self._wrap(outs, lambda node: node.register_hook(self._on_grad_output))
        self.n_outputs, self.output_tensors_index = len(outs), where
        return new[0] if single else new

    def _on_grad_output(self, _grad_input, grad_output):
        self.grad_outputs = _spread(self.output_tensors_index, grad_output, self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError("Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(out)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = out
        captured = self.grad_outputs
        if self.input_tensors_index is None:
            # no input needs grad: the input node never fires, so run the hooks now
            warnings.warn("Full backward hook is firing when gradients are computed with "
                          "respect to module outputs since no inputs require gradients. See "
                          "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                          "#torch.nn.Module.register_full_backward_hook for more details.",
                          stacklevel=user_stacklevel())       # the user's backward() line
            no_grads = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, no_grads, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        if captured is None:
            return None
        return tuple(captured[i] for i in self.output_tensors_index)
