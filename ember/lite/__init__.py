"""``ember.lite``: the lite runtime under ember's namespace. The runtime itself is the
top-level package ``ember_lite`` (NumPy only: ``import ember_lite`` imports nothing from
``ember``, so it runs where ember is not installed); this module re-exports it."""
from ember_lite import KERNELS, LiteModule, Object, load, operator_names  # noqa: F401
from ember_lite import _format, _interp, _kernels, build  # noqa: F401

__all__ = ["load", "LiteModule", "KERNELS", "Object", "operator_names"]
