"""Config modules as torch's ``torch._dynamo.config`` / ``torch._inductor.config``: known
flags read and set like module attributes, an unknown one raises AttributeError naming it
(a misspelt flag is caught, as torch catches it). ember compiles nothing, so the flags are
recorded only."""
from __future__ import annotations

import sys
import types


def _public(name):
    return name.replace("ember", "torch", 1)


class ConfigModule(types.ModuleType):
    """A module whose public attributes are exactly its declared flags."""

    def __setattr__(self, name, value):
        if name.startswith("_") or name in self.__dict__:
            super().__setattr__(name, value)
            return
        raise AttributeError(f"{_public(self.__name__)}.{name} does not exist")

    def __getattr__(self, name):
        raise AttributeError(f"{_public(self.__name__)}.{name} does not exist")


class Section:
    """A nested group of flags (``config.triton``, ``config.cpp``)."""

    def __init__(self, path, **flags):
        object.__setattr__(self, "_path", path)
        self.__dict__.update(flags)

    def __setattr__(self, name, value):
        if name not in self.__dict__:
            raise AttributeError(f"{_public(self._path)}.{name} does not exist")
        self.__dict__[name] = value

    def __getattr__(self, name):
        raise AttributeError(f"{_public(self._path)}.{name} does not exist")


def install(module_name):
    """Turn the module ``module_name`` (its flags already defined) into a ConfigModule."""
    sys.modules[module_name].__class__ = ConfigModule
