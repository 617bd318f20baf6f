"""ember_lite: a small runtime for torch's mobile (lite interpreter) models.

A package of its own, NumPy only — importing it imports nothing from ``ember`` (which
re-exports it as ``ember.lite``) — so it runs, or is copied out, alone
(``python -m ember_lite.build`` writes a copy holding only a model's operators).

    m = ember_lite.load("model.ptl")      # a .ptl written by torch or by ember
    y = m(x)                              # x, y: NumPy arrays
    m.run_method("forward", x)
"""
from __future__ import annotations

from ._format import Object, read
from ._interp import Function
from ._kernels import KERNELS

__all__ = ["load", "LiteModule", "KERNELS", "Object", "operator_names"]


class LiteModule:
    """A loaded mobile model: its root object and its methods' bytecode."""

    def __init__(self, root, functions, version):
        self.root = root
        self.bytecode_version = version
        self._functions = functions

    def find_method(self, name):
        fn = self._functions.get(f"{self.root.qualname}.{name}")
        if fn is None:
            raise RuntimeError(f"Method '{name}' is not defined in {self.root.qualname}")
        return fn

    def run_method(self, name, *args):
        return self.find_method(name)(self.root, *args)

    def forward(self, *args):
        return self.run_method("forward", *args)

    __call__ = forward

    def operator_names(self):
        """torch's names (``aten::add.Tensor``) of every operator the methods call."""
        return sorted({full for f in self._functions.values() for *_, full in f.operators})


def load(f, kernels=None):
    """Load a ``.ptl`` (path or binary file); fails naming operators this build lacks."""
    version, raw, root = read(f)
    kernels = KERNELS if kernels is None else kernels
    functions = {name: Function(name, code, schema, kernels) for name, (code, schema) in raw.items()}
    return LiteModule(root, functions, version)


def operator_names(f):
    """The operators a ``.ptl`` needs, without loading its kernels."""
    _, raw, _ = read(f)
    return sorted({e[0] + ("." + e[1] if e[1] else "") for code, _ in raw.values()
                   for e in code["operators"]})
