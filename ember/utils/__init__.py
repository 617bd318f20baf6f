"""ember.utils (torch.utils): submodules load on first use (``ember.utils.checkpoint``)."""
from __future__ import annotations


def __getattr__(name):
    import importlib
    if name == "swap_tensors":
        from ember.utils._swap import swap_tensors
        return swap_tensors
    if not name.startswith("_") or name == "_pytree":     # torch.utils._pytree.tree_map
        try:
            return importlib.import_module(f"ember.utils.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.utils.{name}":
                raise
    raise AttributeError(f"module 'ember.utils' has no attribute '{name}'")
