"""What a name means while compiling: an SSA ``Value`` or a compile-time thing (a Python
module such as ``torch`` or ``math``, an ember builtin, a scripted submodule, a bound
method, a class, a constant). The frontend turns these into IR when they are used.
"""
from __future__ import annotations


class Sugar:
    """Base of compile-time things. Subclasses answer attribute access, calls and iteration
    through the frontend (see ``_frontend.Compiler``)."""
    def describe(self):
        return type(self).__name__


class SimpleValue(Sugar):
    def __init__(self, value):
        self.value = value

    def describe(self):
        return f"value of type '{self.value.type}'"


class PyModule(Sugar):
    """``torch``, ``torch.nn.functional``, ``math``... (attribute lookups resolve builtins)."""
    def __init__(self, module):
        self.module = module

    def describe(self):
        return f"module '{self.module.__name__}'"


class Builtin(Sugar):
    """A callable the compiler knows: an ember function, a Python builtin, ``math.*``."""
    def __init__(self, fn, name, family, self_value=None):
        self.fn, self.name, self.family, self.self_value = fn, name, family, self_value

    def describe(self):
        return f"builtin '{self.name}'"


class Method(Sugar):
    """``obj.name`` on an SSA value, not yet called."""
    def __init__(self, self_value, name):
        self.self_value, self.name = self_value, name


class ModuleValue(Sugar):
    """A submodule (or ``self``) of the module being compiled, with its IR value."""
    def __init__(self, value, module, class_type):
        self.value, self.module, self.class_type = value, module, class_type

    def describe(self):
        return f"module '{type(self.module).__name__}'"


class ModuleList(Sugar):
    """An ``nn.ModuleList``/``Sequential``/``ModuleDict`` attribute: indexing with constants
    and iteration unroll at compile time."""
    def __init__(self, items, keys=None, container=None):
        self.items, self.keys, self.container = items, keys, container


class ScriptFunctionRef(Sugar):
    def __init__(self, function):
        self.function = function


class ClassRef(Sugar):
    """A scripted class or NamedTuple used as a constructor."""
    def __init__(self, cls, class_type):
        self.cls, self.class_type = cls, class_type


class PythonConstant(Sugar):
    """A compile-time Python value (a global int, a dtype, a tuple of constants...)."""
    def __init__(self, value):
        self.value = value


class IgnoredFunction(Sugar):
    """``@jit.ignore``: called in Python at run time."""
    def __init__(self, fn):
        self.fn = fn


class PropertyGet(Sugar):
    """``self.<property>`` of a scripted module: its getter compiles as the method
    ``__<name>_getter`` (torch's name) and is called where it is read."""
    def __init__(self, name):
        self.name = name


class TupleSugar(Sugar):
    """A tuple of sugared things (e.g. the items of a constant tuple of modules)."""
    def __init__(self, items):
        self.items = items
