"""ember.jit: TorchScript. A compiler from Python source (``script``) or from one run
(``trace``) to a typed SSA graph, passes over it, and generated Python that calls every op
through the dispatcher; ``save``/``load`` in torch's archive format. See
docs/ARCHITECTURE.md ("The compiler")."""
from __future__ import annotations

import typing
import warnings

from ember.jit import _script_api
from ember.jit._errors import Error
from ember.jit._futures import Future, eager_fork as fork, wait
from ember.jit._modules import (RecursiveScriptModule, ScriptModule, script_method,
                                script_module)
from ember.jit._script import ScriptFunction, script_function, script_class
from ember.jit import _trace, frontend
from ember.jit.frontend import CompileError
from ember.jit._trace import (TopLevelTracedModule, TracedModule, TracerWarning,  # noqa: F401
                              TracingCheckError, trace, trace_module)

__all__ = ["script", "trace", "trace_module", "freeze", "optimize_for_inference", "save",
           "load", "fork", "wait", "Future", "annotate", "isinstance", "ignore", "unused",
           "export", "Final", "Attribute", "is_scripting", "is_tracing", "script_if_tracing",
           "ScriptModule", "RecursiveScriptModule", "ScriptFunction", "script_method",
           "TopLevelTracedModule",
           "TracedModule", "TracerWarning", "TracingCheckError", "Error", "frontend",
           "interface", "set_fusion_strategy", "strict_fusion", "fuser",
           "enable_onednn_fusion", "onednn_fusion_enabled"]

Final = typing.Final
CompilationUnit = None


class Attribute(typing.NamedTuple):
    """``self.x = jit.Attribute(value, type)`` in ``__init__`` declares an attribute's type;
    outside scripting it is the value."""
    value: object
    type: object


def _attribute(value, type):      # noqa: A002 - torch's name
    return value


def annotate(the_type, the_value):
    """In eager code returns ``the_value``; in scripted code gives it ``the_type``."""
    return the_value


def isinstance(obj, target_type):     # noqa: A001 - torch's name
    """``jit.isinstance`` with container types (``List[int]``, ``Dict[str, Tensor]``...)."""
    import builtins
    origin = typing.get_origin(target_type)
    args = typing.get_args(target_type)
    if origin is None:
        if target_type is typing.Any:
            return True
        return builtins.isinstance(obj, target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if origin in (list, typing.List):
        return builtins.isinstance(obj, list) and all(isinstance(x, args[0]) for x in obj)
    if origin in (tuple, typing.Tuple):
        return builtins.isinstance(obj, tuple) and len(obj) == len(args) and all(
            isinstance(x, a) for x, a in zip(obj, args))
    if origin in (dict, typing.Dict):
        return builtins.isinstance(obj, dict) and all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    return builtins.isinstance(obj, origin)


def is_scripting():
    """True inside scripted code (a compile-time constant there), False in eager code."""
    return False


def is_tracing():
    """True while ``jit.trace`` runs the traced code (this thread, or a task it forked)."""
    return _trace.is_tracing()


def ignore(drop=False, **kwargs):
    """``@jit.ignore``: leave a function as a Python call from scripted code."""
    if callable(drop):
        drop._ember_jit_ignore = True
        return drop

    def deco(fn):
        fn._ember_jit_ignore = True
        if drop:
            fn._ember_jit_unused = True
        return fn
    return deco


def unused(fn):
    """``@jit.unused``: the scripted version raises if it is ever called."""
    if isinstance(fn, property):
        return fn
    fn._ember_jit_ignore = True
    fn._ember_jit_unused = True
    return fn


def export(fn):
    """``@jit.export``: compile this method too (and what it calls)."""
    fn._ember_jit_export = True
    return fn


def _overload(fn):
    return fn


def _overload_method(fn):
    return fn


def _deprecated(name, alternative="`torch.compile` or `torch.export`"):
    # torch 2.13 deprecates TorchScript; its warnings come from inside the library (hidden
    # under the default filters, listed by pytest), once a public call
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please switch to {alternative}.",
                  DeprecationWarning, stacklevel=1)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a function, an ``nn.Module`` (recursively) or a class to TorchScript."""
    import inspect
    from ember import nn
    _deprecated("script")
    if optimize is not None:
        warnings.warn("`optimize` is deprecated and has no effect. Use `with "
                      "torch.jit.optimized_execution()` instead", FutureWarning, stacklevel=2)
    if builtins_isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    try:
        return _script_object(obj, inspect, nn)
    except CompileError as e:
        # torch reports a type or name error of a script as a plain RuntimeError
        raise RuntimeError(*e.args) from None


def _script_object(obj, inspect, nn):
    if builtins_isinstance(obj, nn.Module):
        return script_module(obj)
    if inspect.isclass(obj):
        if issubclass(obj, nn.Module):
            raise RuntimeError(f"Type '{obj.__name__}' cannot be compiled since it inherits "
                               f"from nn.Module, pass an instance instead")
        script_class(obj)
        return obj
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return script_function(obj)
    if builtins_isinstance(obj, (dict, list)):
        raise RuntimeError("ember.jit.script of a dict or list is not supported; script the "
                           "function or module that uses it")
    raise RuntimeError(f"Type '{type(obj)}' cannot be compiled")


def script_if_tracing(fn):
    """Compile ``fn`` only when it is first called while tracing; eager otherwise."""
    import functools
    compiled = []

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not is_tracing():
            return fn(*args, **kwargs)
        if not compiled:
            compiled.append(script(fn))
        return compiled[0](*args, **kwargs)
    wrapper.__original_fn = fn
    return wrapper


import builtins as _py_builtins  # noqa: E402
builtins_isinstance = _py_builtins.isinstance

_script_api.JIT_BUILTINS.update({annotate: "annotate", isinstance: "isinstance",
                                 is_scripting: "is_scripting", is_tracing: "is_tracing",
                                 fork: "fork", wait: "wait"})

from ember.jit._freeze import freeze, optimize_for_inference  # noqa: E402
from ember.jit._fuser import (enable_onednn_fusion, fuser, interface,  # noqa: E402
                              onednn_fusion_enabled, set_fusion_strategy, strict_fusion)
from ember.jit import _serialization  # noqa: E402


def save(m, f, _extra_files=None):
    """Write scripted/traced ``m`` as a TorchScript archive (torch's format)."""
    _deprecated("save", "`torch.export`")
    return _serialization.save(m, f, _extra_files=_extra_files)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Read a TorchScript archive (written by torch or ember) as a scripted module."""
    _deprecated("load", "`torch.export`")
    return _serialization.load(f, map_location=map_location, _extra_files=_extra_files,
                               _restore_shapes=_restore_shapes)


def export_opnames(m):
    """The operator names (``aten::add.Tensor``) of ``m``'s lite-interpreter bytecode."""
    from ember.jit.mobile import export_opnames as _export
    return _export(m)
