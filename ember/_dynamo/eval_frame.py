"""What ``ember.compile(module)`` returns: a module wrapping the original one.

ember has no graph compiler, so the wrapper runs the original module eagerly. It exists
because scripts see torch's wrapper: its repr, its ``_orig_mod`` attribute and the
``_orig_mod.`` prefix on every state-dict key. Attributes it does not hold itself are read
from and written to the wrapped module; ``training`` is the wrapped module's.
"""
from __future__ import annotations

from ember.nn.modules.module import Module

# names the wrapper keeps in its own __dict__ (everything else lives on ``_orig_mod``)
_OWN = frozenset(("_orig_mod", "dynamo_ctx", "_torchdynamo_orig_callable"))


class OptimizedModule(Module):
    """``OptimizedModule(_orig_mod)``: calls ``_orig_mod`` (its hooks run as usual)."""

    def __init__(self, mod: Module, dynamo_ctx=None) -> None:
        super().__init__()
        self.__dict__.pop("training", None)        # read through to the wrapped module
        self._orig_mod = mod
        self.__dict__["dynamo_ctx"] = dynamo_ctx
        self.__dict__["_torchdynamo_orig_callable"] = mod.forward

    @property
    def training(self):
        return self._orig_mod.training

    @training.setter
    def training(self, value):
        if "_modules" in self.__dict__ and "_orig_mod" in self._modules:
            self._orig_mod.training = value

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):
        modules = self.__dict__.get("_modules", {})
        if name == "_orig_mod" or "_orig_mod" not in modules:
            return super().__getattr__(name)
        return getattr(modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if name in _OWN or name.startswith("__") or "_orig_mod" not in self.__dict__.get("_modules", {}) \
                or name in type(self).__dict__:
            return super().__setattr__(name, value)
        setattr(self._orig_mod, name, value)

    def _get_name(self):
        return "OptimizedModule"
