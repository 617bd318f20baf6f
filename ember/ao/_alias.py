"""Alias modules: torch keeps old import paths (``torch.quantization``, ``torch.nn.quantized``...)
that hand out the very objects of their ``torch.ao`` homes. ``forward(alias, target)`` gives such
a module a ``__getattr__``/``__dir__`` that read ``target`` (imported on first use), so names
added to the target later show through, classes stay identical, and ``from alias import *``
works (``__all__`` is forwarded too)."""
from __future__ import annotations

import importlib


def forward(alias, target):
    """(__getattr__, __dir__) for module ``alias`` reading module ``target``."""
    def __getattr__(name):
        module = importlib.import_module(target)
        if name == "__all__":
            names = getattr(module, "__all__", None)
            return list(names) if names is not None else \
                [n for n in vars(module) if not n.startswith("_")]
        if name.startswith("__"):
            raise AttributeError(f"module '{alias}' has no attribute '{name}'")
        try:
            return getattr(module, name)
        except AttributeError:
            raise AttributeError(f"module '{alias}' has no attribute '{name}'") from None

    def __dir__():
        return sorted(set(dir(importlib.import_module(target))))

    return __getattr__, __dir__


def lazy_submodules(package, names):
    """A package ``__getattr__`` importing ``package.<name>`` on first attribute access."""
    def __getattr__(name):
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module '{package}' has no attribute '{name}'")
    return __getattr__
