"""``Module`` (torch.nn.Module): the base class of every layer.

A module keeps three ordered registries in its ``__dict__``: ``_parameters`` (Parameters
or None), ``_buffers`` (tensors or None; names in ``_non_persistent_buffers_set`` are left
out of the state dict) and ``_modules`` (children). ``__setattr__`` routes assignments into
them and ``__getattr__`` reads them back. Hook handles, global hooks and the backward-hook
machinery live in ``_hooks``; state-dict loading in ``_state_dict``."""
import inspect
import warnings
from collections import OrderedDict

import ember
from ember import Tensor
from ember.nn.parameter import Buffer, Parameter
from ember.nn.modules._hooks import (  # noqa: F401  (re-exported)
    GLOBAL, BackwardHook, RemovableHandle, _WrappedHook, add_hook, run_registration_hooks,
    register_module_backward_hook, register_module_buffer_registration_hook,
    register_module_forward_hook, register_module_forward_pre_hook,
    register_module_full_backward_hook, register_module_full_backward_pre_hook,
    register_module_module_registration_hook, register_module_parameter_registration_hook)
from ember.nn.modules._state_dict import (  # noqa: F401
    EXTRA_STATE_SUFFIX, _IncompatibleKeys, load_own_state, load_tree)

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_backward_hook",
           "register_module_full_backward_hook", "register_module_buffer_registration_hook",
           "register_module_module_registration_hook",
           "register_module_parameter_registration_hook", "Module"]


def _typename(obj):
    """How torch names a value's type in error messages."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    if module == "ember" or module.startswith("ember."):     # ember's classes named as torch's
        module = "torch" + module[len("ember"):]
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def _only_none(value, slot, expected):
    """A registered parameter/child slot accepts ``None`` or its own kind (checked earlier)."""
    if value is not None:
        raise TypeError(f"cannot assign '{_typename(value)}' as {slot} "
                        f"({expected} or None expected)")


def _addindent(text, n, keep_blank=False):
    """Indent every line but the first by ``n`` spaces (blank lines stay empty unless
    ``keep_blank``)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    pad = " " * n
    return "\n".join([first] + [pad + ln if (keep_blank or ln.strip()) else "" for ln in rest])


def _forward_unimplemented(self, *input):
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function')


def _tensor_like(x):
    return isinstance(x, Tensor) or hasattr(x, "__torch_function__")


# attributes every module starts with, in torch's order (also __setstate__'s defaults)
_HOOK_DICTS = ("_backward_pre_hooks", "_backward_hooks", "_is_full_backward_hook",
               "_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_state_dict_hooks",
               "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
               "_load_state_dict_post_hooks")


def _initial_state():
    st = {"training": True, "_parameters": {}, "_buffers": {},
          "_non_persistent_buffers_set": set()}
    for name in _HOOK_DICTS:
        st[name] = None if name == "_is_full_backward_hook" else OrderedDict()
    st["_modules"] = {}
    return st


class Module:
    """Base class for layers: subclass it, create submodules/parameters in ``__init__`` and
    compute in ``forward``; call the instance (not ``forward``) so hooks run."""
    dump_patches = False
    _version = 1            # saved in state-dict metadata; bump when the layout changes
    call_super_init = False
    _compiled_call_impl = None
    forward = _forward_unimplemented

    def __init__(self, *args, **kwargs):
        if not self.call_super_init:
            if kwargs:
                raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword "
                                f"argument '{next(iter(kwargs))}'")
            if args:
                raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument "
                                f"but {len(args) + 1} were given")
        self.__dict__.update(_initial_state())
        if self.call_super_init:
            super().__init__(*args, **kwargs)

    # ------------------------------------------------------------------ registration
    def _check_member_name(self, kind, registry, name):
        if registry not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in self.__dict__[registry]:
            raise KeyError(f"attribute '{name}' already exists")

    def register_buffer(self, name, tensor, persistent=True):
        """Add a tensor that is state but not a parameter (e.g. running stats)."""
        self._check_member_name("buffer", "_buffers", name)
        if tensor is not None and not _tensor_like(tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = run_registration_hooks(GLOBAL.buffer_registration, self, name,
                                                     tensor)
        left_out = self._non_persistent_buffers_set     # buffers state_dict skips
        (left_out.discard if persistent else left_out.add)(name)

    def register_parameter(self, name, param):
        """Add a Parameter (or a None placeholder) under ``name``."""
        self._check_member_name("parameter", "_parameters", name)
        if param is None:
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param.grad_fn:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = run_registration_hooks(GLOBAL.parameter_registration, self,
                                                        name, param)

    def add_module(self, name, module):
        """Add a child module (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = run_registration_hooks(GLOBAL.module_registration, self, name,
                                                     module)

    def register_module(self, name, module):
        """Alias of ``add_module``."""
        self.add_module(name, module)

    # ------------------------------------------------------------------ lookup by path
    def get_submodule(self, target):
        """The module at dotted path ``target`` ('' is self)."""
        mod = self
        for part in target.split(".") if target else ():
            if not hasattr(mod, part):
                raise AttributeError(f"{mod._get_name()} has no attribute `{part}`")
            mod = getattr(mod, part)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{part}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Replace (or with ``strict=False`` add) the submodule at dotted path ``target``."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, leaf = target.rpartition(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self.get_submodule(parent_path)
        if hasattr(parent, leaf):
            if not isinstance(getattr(parent, leaf), Module):
                raise AttributeError(f"`{leaf}` is not an nn.Module")
        elif strict:
            raise AttributeError(f"{parent._get_name()} has no attribute `{leaf}`")
        setattr(parent, leaf, module)

    def _get_owned(self, target):
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        return mod, name, getattr(mod, name)

    def get_parameter(self, target):
        """The Parameter at dotted path ``target``."""
        _, name, value = self._get_owned(target)
        if not isinstance(value, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return value

    def get_buffer(self, target):
        """The buffer at dotted path ``target``."""
        mod, name, value = self._get_owned(target)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return value

    def get_extra_state(self):
        """Override (with ``set_extra_state``) to save non-tensor state in the state dict."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    # ------------------------------------------------------------------ conversions
    def _apply(self, fn, recurse=True):
        """Replace every parameter's data (and grad's), and every buffer, by ``fn`` of it;
        Parameter objects keep their identity."""
        for child in self.children() if recurse else ():
            child._apply(fn)
        for key, param in list(self._parameters.items()):
            if param is not None:
                self._apply_to_parameter(key, param, fn)
        self._buffers.update({key: fn(buf) for key, buf in self._buffers.items()
                              if buf is not None})
        return self

    def _apply_to_parameter(self, key, param, fn):
        """``fn`` of a parameter's data, then of its grad; the Parameter object stays when
        ``fn`` returns a tensor."""
        grad = param.grad
        with ember.no_grad():
            converted = fn(param)
        from ember import __future__ as future
        if future.get_swap_module_params_on_conversion() or \
                future.get_overwrite_module_params_on_conversion():
            return self._replace_parameter(key, param, grad, converted, fn)
        if not isinstance(converted, Tensor):
            param = self._parameters[key] = Parameter(converted, param.requires_grad)
        else:
            param.data = converted
        if grad is None:
            return
        with ember.no_grad():
            converted = fn(grad)
        if not isinstance(converted, Tensor):
            param.grad = converted.requires_grad_(grad.requires_grad)
        else:
            param.grad.data = converted

    def _replace_parameter(self, key, param, grad, converted, fn):
        """``torch.__future__`` conversions: a new Parameter of ``converted`` (and a new
        grad), swapped into the old objects (swap switch) or put in their place."""
        from ember import __future__ as future
        from ember.utils._swap import swap_tensors
        with ember.no_grad():
            new_grad = None if grad is None else fn(grad)
        if not isinstance(converted, Parameter):
            converted = Parameter(converted, param.requires_grad)
        if not future.get_swap_module_params_on_conversion():
            self._parameters[key] = converted
            converted.grad = new_grad
            return
        param.grad = None
        swap_tensors(param, converted)
        if grad is not None:
            swap_tensors(grad, new_grad)
            param.grad = grad

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first), then on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    def ipu(self, device=None):
        return self._apply(lambda t: t.ipu(device))

    def xpu(self, device=None):
        return self._apply(lambda t: t.xpu(device))

    def mtia(self, device=None):
        return self._apply(lambda t: t.mtia(device))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def type(self, dst_type):
        return self._apply(lambda t: t.type(dst_type))

    def _cast_floats(self, method):
        return self._apply(lambda t: getattr(t, method)() if t.is_floating_point() else t)

    def float(self):
        return self._cast_floats("float")

    def double(self):
        return self._cast_floats("double")

    def half(self):
        return self._cast_floats("half")

    def bfloat16(self):
        return self._cast_floats("bfloat16")

    def to_empty(self, *, device, recurse=True):
        """Fresh uninitialized storage on ``device`` for every parameter and buffer."""
        return self._apply(lambda t: ember.empty_like(t, device=device), recurse=recurse)

    def to(self, *args, **kwargs):
        """Move/cast parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(tensor)``,
        ``to(device, dtype)``; only floating/complex tensors change dtype."""
        device, dtype, non_blocking, memory_format = _parse_to(*args, **kwargs)
        if dtype is not None:
            if not (dtype.is_floating_point or dtype.is_complex):
                raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                                f"got desired dtype={dtype}")
            if dtype.is_complex:
                warnings.warn("Complex modules are a new feature under active development whose "
                              "design may change, and some modules might not work as expected "
                              "when using complex tensors as parameters or buffers. Please file "
                              "an issue at https://github.com/pytorch/pytorch/issues/new?template"
                              "=bug-report.yml if a complex module does not work as expected.",
                              stacklevel=2)

        def convert(t):
            target = dtype if (t.is_floating_point() or t.is_complex()) else None
            extra = {"memory_format": memory_format} \
                if memory_format is not None and t.dim() in (4, 5) else {}
            try:
                return t.to(device, target, non_blocking, **extra)
            except NotImplementedError as e:
                if str(e) != "Cannot copy out of meta tensor; no data!":
                    raise
                raise NotImplementedError(
                    f"{e} Please use torch.nn.Module.to_empty() instead of torch.nn.Module.to() "
                    "when moving module from meta to a different device.") from None
        return self._apply(convert)

    # ------------------------------------------------------------------ hooks
    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output) -> None | new grad_output`` before grads w.r.t. the
        module's inputs are computed."""
        return add_hook(self._backward_pre_hooks, hook, prepend=prepend)

    def _set_backward_kind(self, full):
        if self._is_full_backward_hook is (not full):
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on "
                               "a single Module. Please use only one of them.")
        self._is_full_backward_hook = full

    def register_backward_hook(self, hook):
        """Deprecated: a hook on the grad_fn of the module's output."""
        self._set_backward_kind(False)
        return add_hook(self._backward_hooks, hook)

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output) -> None | new grad_input``."""
        self._set_backward_kind(True)
        return add_hook(self._backward_hooks, hook, prepend=prepend)

    def _get_backward_hooks(self):
        """(full hooks, non-full hooks), global ones first."""
        full, legacy = [], []
        for owner, hooks in ((GLOBAL.is_full_backward, GLOBAL.backward),
                             (self._is_full_backward_hook, self._backward_hooks)):
            if owner is True:
                full += hooks.values()
            elif owner is False:
                legacy += hooks.values()
        return full, legacy

    def _get_backward_pre_hooks(self):
        return [*GLOBAL.backward_pre.values(), *self._backward_pre_hooks.values()]

    def _maybe_warn_non_full_backward_hook(self, inputs, result, grad_fn):
        def as_tensor_tuple(x):
            if isinstance(x, Tensor):
                return (x,)
            if isinstance(x, tuple) and all(isinstance(v, Tensor) for v in x):
                return x
            return None

        def warn(msg):
            warnings.warn(msg, FutureWarning, stacklevel=3)
        deprecated = " is deprecated and will be removed in future versions."
        outputs = as_tensor_tuple(result)
        if outputs is None:
            return warn("Using non-full backward hooks on a Module that does not return a single "
                        "Tensor or a tuple of Tensors" + deprecated + " This hook will be "
                        "missing some of the grad_output. Please use "
                        "register_full_backward_hook to get the documented behavior.")
        inputs = as_tensor_tuple(inputs)
        if inputs is None:
            return warn("Using non-full backward hooks on a Module that does not take as input a "
                        "single Tensor or a tuple of Tensors" + deprecated + " This hook will "
                        "be missing some of the grad_input. Please use "
                        "register_full_backward_hook to get the documented behavior.")
        out_fns = {r.grad_fn for r in outputs if r.grad_fn is not None}
        if not out_fns or (len(out_fns) == 1 and grad_fn not in out_fns):
            warn("Using a non-full backward hook when outputs are nested in python data "
                 "structure" + deprecated + " This hook will be missing some grad_output.")
        elif len(out_fns) > 1:
            warn("Using a non-full backward hook when outputs are generated by different autograd "
                 "Nodes" + deprecated + " This hook will be missing some grad_output. Please use "
                 "register_full_backward_hook to get the documented behavior.")
        elif {i.grad_fn for i in inputs if i.grad_fn is not None} != \
                {n[0] for n in grad_fn.next_functions}:
            warn("Using a non-full backward hook when the forward contains multiple autograd "
                 "Nodes" + deprecated + " This hook will be missing some grad_input. Please use "
                 "register_full_backward_hook to get the documented behavior.")

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args) -> None | new args`` (``with_kwargs``: ``hook(module, args,
        kwargs) -> None | (args, kwargs)``) before ``forward``."""
        kw = self._forward_pre_hooks_with_kwargs
        return add_hook(self._forward_pre_hooks, hook, flags=[kw] if with_kwargs else [],
                        prepend=prepend, extra=kw)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """``hook(module, args, output) -> None | new output`` (``with_kwargs``: ``hook(module,
        args, kwargs, output)``) after ``forward``; ``always_call`` also runs it when
        ``forward`` raises."""
        kw, always = self._forward_hooks_with_kwargs, self._forward_hooks_always_called
        flags = [d for d, on in ((kw, with_kwargs), (always, always_call)) if on]
        return add_hook(self._forward_hooks, hook, flags=flags, prepend=prepend,
                        extra=[kw, always])

    # ------------------------------------------------------------------ calling
    def _slow_forward(self, *input, **kwargs):
        return self.forward(*input, **kwargs)

    def _wrapped_call_impl(self, *args, **kwargs):
        compiled = self._compiled_call_impl     # set by Module.compile
        impl = self._call_impl if compiled is None else compiled
        return impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        forward = self.forward
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks
                or self._backward_pre_hooks or GLOBAL.any_call_hook()):
            return forward(*args, **kwargs)
        call = _Call(args, kwargs)
        try:
            return self._run_hooked(forward, call)
        except Exception:
            self._run_always_called(call)
            raise

    def _run_hooked(self, forward, call):
        full, legacy = self._get_backward_hooks() \
            if (self._backward_hooks or GLOBAL.backward) else ([], [])
        pre = self._get_backward_pre_hooks() \
            if (self._backward_pre_hooks or GLOBAL.backward_pre) else []

        for hid, hook in (*GLOBAL.forward_pre.items(), *self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                out = hook(self, call.args, call.kwargs)
                if out is not None:
                    if not (isinstance(out, tuple) and len(out) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {out}.")
                    call.args, call.kwargs = out
            else:
                out = hook(self, call.args)
                if out is not None:
                    call.args = out if isinstance(out, tuple) else (out,)

        bw_hook = None
        if full or pre:
            bw_hook = BackwardHook(self, full, pre)
            call.args = bw_hook.setup_input_hook(call.args)

        call.result = forward(*call.args, **call.kwargs)
        for hid, hook in (*GLOBAL.forward.items(), *self._forward_hooks.items()):
            if hid in self._forward_hooks_always_called or hid in GLOBAL.forward_always_called:
                call.done.add(hid)
            if hid in self._forward_hooks_with_kwargs or hid in GLOBAL.forward_with_kwargs:
                out = hook(self, call.args, call.kwargs, call.result)
            else:
                out = hook(self, call.args, call.result)
            if out is not None:
                call.result = out

        result = call.result
        if bw_hook is not None:
            if not isinstance(result, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor "
                              f"or a tuple of Tensors but received {type(result)}", stacklevel=2)
            result = bw_hook.setup_output_hook(result)
        if legacy:
            first = result
            while not isinstance(first, Tensor):
                first = next(v for v in first.values() if isinstance(v, Tensor)) \
                    if isinstance(first, dict) else first[0]
            if first.grad_fn is not None:
                for hook in legacy:
                    first.grad_fn.register_hook(_WrappedHook(hook, self))
                self._maybe_warn_non_full_backward_hook(call.args, result, first.grad_fn)
        return result

    def _run_always_called(self, call):
        """After ``forward`` (or a hook) raised: run the ``always_call`` forward hooks that
        have not run yet, silencing (with a warning) their own errors."""
        plan = [(h, hid, False, "global module forward hook")
                for hid, h in GLOBAL.forward.items() if hid in GLOBAL.forward_always_called]
        plan += [(h, hid, hid in self._forward_hooks_with_kwargs, "module forward hook")
                 for hid, h in self._forward_hooks.items()
                 if hid in self._forward_hooks_always_called]
        for hook, hid, with_kwargs, what in plan:
            if hid in call.done:
                continue
            try:
                out = hook(self, call.args, call.kwargs, call.result) if with_kwargs \
                    else hook(self, call.args, call.result)
            except Exception as e:
                warnings.warn(f"{what} with ``always_call=True`` raised an exception that was "
                              f"silenced as another error was raised in forward: {e}",
                              stacklevel=2)
                continue
            if out is not None:
                call.result = out

    __call__ = _wrapped_call_impl

    # ------------------------------------------------------------------ attributes
    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_compiled_call_impl"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        for name, default in _initial_state().items():      # older pickles lack some
            self.__dict__.setdefault(name, default)

    def __getattr__(self, name):
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _forget(self, name, *registries):
        for reg in registries:
            if isinstance(reg, dict):
                reg.pop(name, None)
            else:
                reg.discard(name)

    def __setattr__(self, name, value):
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, d, buffers, modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            _only_none(value, f"parameter '{name}'", "torch.nn.Parameter")
            self.register_parameter(name, None)
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, d, params, buffers, self._non_persistent_buffers_set)
            modules[name] = run_registration_hooks(GLOBAL.module_registration, self, name, value)
        elif modules is not None and name in modules:
            _only_none(value, f"child module '{name}'", "torch.nn.Module")
            modules[name] = run_registration_hooks(GLOBAL.module_registration, self, name, value)
        elif isinstance(value, Buffer) or (buffers is not None and name in buffers):
            self._assign_buffer(name, value)
        else:
            object.__setattr__(self, name, value)

    def _assign_buffer(self, name, value):
        if value is not None and not _tensor_like(value):
            raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)")
        persistent = value.persistent if isinstance(value, Buffer) \
            else name not in self._non_persistent_buffers_set
        register = self.register_buffer
        if getattr(register, "__func__", None) is Module.register_buffer \
                or "persistent" in inspect.signature(register).parameters:
            register(name, value, persistent)
        elif not persistent:
            raise RuntimeError("Registering a non-persistent buffer on a Module subclass that "
                               "implements register_buffer() without the persistent argument is "
                               "not allowed.")
        else:
            register(name, value)

    def __delattr__(self, name):
        if name in self._buffers:
            self._non_persistent_buffers_set.discard(name)
        owner = next((reg for reg in (self._parameters, self._buffers, self._modules)
                      if name in reg), None)
        if owner is None:
            object.__delattr__(self, name)
        else:
            del owner[name]

    # ------------------------------------------------------------------ state dict
    def _register_state_dict_hook(self, hook):
        """Private post-hook ``hook(module, state_dict, prefix, local_metadata)``; may return a
        new state dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook "
                               "that was previously registered via register_state_dict_post_hook")
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata) -> None`` after ``state_dict``."""
        hook._from_public_api = True
        return add_hook(self._state_dict_hooks, hook)

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before ``state_dict``."""
        return add_hook(self._state_dict_pre_hooks, hook)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Put this module's own parameters, persistent buffers and extra state into
        ``destination``."""
        own = [(n, p) for n, p in self._parameters.items() if p is not None]
        own += [(n, b) for n, b in self._buffers.items()
                if b is not None and n not in self._non_persistent_buffers_set]
        for name, t in own:
            destination[prefix + name] = t if keep_vars else t.detach()
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + EXTRA_STATE_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """Ordered dict of every parameter and persistent buffer by dotted name (detached
        unless ``keep_vars``); ``_metadata`` carries each module's ``_version``."""
        if args:
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn."
                          "Module.state_dict for details.", FutureWarning, stacklevel=2)
            positional = list(args) + [None] * 3
            destination = positional[0] if destination is None else destination
            prefix = positional[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = positional[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = dict(version=self._version)
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        for pre_hook in self._state_dict_pre_hooks.values():
            pre_hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{name}.",
                                 keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            out = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if out is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif out is not None:
                destination = out
        return destination

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """Private ``hook([module,] state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` run by ``_load_from_state_dict``."""
        return add_hook(self._load_state_dict_pre_hooks,
                        _WrappedHook(hook, self if with_module else None))

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, ...)`` before each module's load."""
        return self._register_load_state_dict_pre_hook(hook, True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys) -> None`` after ``load_state_dict``."""
        return add_hook(self._load_state_dict_post_hooks, hook)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Load this module's own entries (not its children's) from ``state_dict``."""
        load_own_state(self, state_dict, prefix, local_metadata, strict, missing_keys,
                       unexpected_keys, error_msgs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy (or with ``assign``, install) the tensors of ``state_dict``; returns
        ``(missing_keys, unexpected_keys)``, raising on mismatches when ``strict``."""
        return load_tree(self, state_dict, strict, assign)

    # ------------------------------------------------------------------ traversal
    def _named_members(self, get_members_fn, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mod_prefix, mod in modules:
            for name, value in get_members_fn(mod):
                if value is None or value in seen:
                    continue
                if remove_duplicate:
                    seen.add(value)
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), value

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._parameters.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix=prefix,
                                       recurse=recurse, remove_duplicate=remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and m not in seen:
                seen.add(m)
                yield name, m

    def modules(self, remove_duplicate=True):
        for _, m in self.named_modules(remove_duplicate=remove_duplicate):
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Pre-order walk: ``(dotted name, module)``, each module once unless told not to."""
        memo = set() if memo is None else memo
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                               remove_duplicate)

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode=True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drop (or with ``set_to_none=False``, zero in place) every parameter's grad."""
        if getattr(self, "_is_replica", False):
            warnings.warn("Calling .zero_grad() from a module created with nn.DataParallel() has "
                          "no effect. The parameters are copied (in a differentiable manner) "
                          "from the original module. This means they are not leaf nodes in "
                          "autograd and so don't accumulate gradients. If you need gradients in "
                          "your forward method, consider using autograd.grad instead.",
                          stacklevel=2)
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            if set_to_none:
                p.grad = None
                continue
            if g.grad_fn is not None:
                g.detach_()
            else:
                g.requires_grad_(False)
            g.zero_()

    def share_memory(self):
        # NumPy-backed tensors have no shared-memory storage to move to: a no-op unless the
        # tensor defines share_memory_ (an uninitialized parameter raises there)
        return self._apply(lambda t: t.share_memory_() if hasattr(t, "share_memory_") else t)

    # ------------------------------------------------------------------ printing
    def _get_name(self):
        return type(self).__name__

    def extra_repr(self):
        """Override to describe the module's settings on the first line of its repr."""
        return ""

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): {_addindent(repr(m), 2)}" for name, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"

    def __dir__(self):
        keys = [*dir(type(self)), *self.__dict__, *self._parameters, *self._modules,
                *self._buffers]
        return sorted(k for k in keys if not k[0].isdigit())

    def _replicate_for_data_parallel(self):
        replica = self.__new__(type(self))
        replica.__dict__ = dict(self.__dict__)
        replica._parameters = {}
        replica._buffers = dict(replica._buffers)
        replica._modules = dict(replica._modules)
        replica._is_replica = True
        return replica

    def compile(self, *args, **kwargs):
        self._compiled_call_impl = ember.compile(self._call_impl, *args, **kwargs)


class _Call:
    """Mutable record of one hooked call (args may be replaced by pre-hooks, result by
    forward hooks); ``done`` holds the always-call hooks that already ran."""
    __slots__ = ("args", "kwargs", "result", "done")

    def __init__(self, args, kwargs):
        self.args, self.kwargs, self.result, self.done = args, kwargs, None, set()


def _parse_to(*args, **kwargs):
    """(device, dtype, non_blocking, memory_format) from ``Module.to``'s arguments, bound to
    the first of torch's three ``to`` forms that takes them; none: torch's overload TypeError."""
    from ember._dtype import dtype as dtype_cls, to_dtype
    from ember._ops.parser_errors import METHOD, overloaded_text

    def is_device(v):
        return isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)) or \
            type(v).__name__ == "device"
    kinds = {"device": lambda v: v is None or is_device(v),
             # torch's parser takes Python's number types, and True/False (as torch.bool)
             "dtype": lambda v: v is None or isinstance(v, (dtype_cls, bool)) or
             v in (float, int, bool, complex),
             "tensor": lambda v: isinstance(v, Tensor),
             "non_blocking": lambda v: isinstance(v, bool),
             "copy": lambda v: isinstance(v, bool),
             "memory_format": lambda v: v is None or isinstance(v, ember.memory_format)}
    for form in (("device", "dtype", "non_blocking", "copy"), ("dtype", "non_blocking", "copy"),
                 ("tensor", "non_blocking", "copy")):
        if len(args) > len(form) or any(k not in form + ("memory_format",) for k in kwargs):
            continue
        bound = dict(zip(form, args))
        if any(k in bound for k in kwargs):
            continue
        bound.update(kwargs)
        if form[0] == "dtype" and "dtype" not in bound:
            continue
        if form[0] == "tensor" and "tensor" not in bound:
            continue
        if form[0] == "device" and isinstance(bound.get("dtype"), bool):
            continue        # (a True/False dtype only as the dtype form's first argument)
        if all(kinds[k](v) for k, v in bound.items()):
            break
    else:
        raise TypeError(overloaded_text("to", METHOD["to"], list(args), kwargs))
    if "copy" in bound:
        raise RuntimeError(".to() does not accept copy argument")
    device, dtype = bound.get("device"), bound.get("dtype")
    if isinstance(dtype, bool):
        dtype = ember.bool
    elif dtype is not None:
        dtype = to_dtype(dtype)
    if "tensor" in bound:
        device, dtype = bound["tensor"].device, bound["tensor"].dtype
    non_blocking, memory_format = bound.get("non_blocking", False), bound.get("memory_format")
    if device is not None:
        device = ember.device(device)
        if device.type != "cpu":
            ember.empty(0, device=device)      # raises ember's error for other devices
    return device, dtype, non_blocking, memory_format
