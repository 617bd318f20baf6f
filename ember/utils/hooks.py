"""``torch.utils.hooks``: the handle every ``register_*hook`` returns, and the markers for
hooks that pickling a tensor leaves behind."""
from __future__ import annotations

import warnings

from ember.nn.modules._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark ``f`` as a hook that may be dropped when its tensor is pickled (no warning)."""
    f.__torch_unserializable__ = True
    return f


def _tensor_hooks(tensor):
    """The backward hooks registered on ``tensor`` (``Tensor.register_hook``), in order."""
    from ember.autograd.graph import grad_edge
    if not getattr(tensor, "requires_grad", False):
        return []
    node, nr = grad_edge(tensor)
    hooks = getattr(node, "_tensor_hooks", None) or {}
    return [fn for _, fn in hooks.get(nr, [])]


def warn_if_has_hooks(tensor):
    """Warn, once per hook, that a backward hook on ``tensor`` will not be serialized."""
    for hook in _tensor_hooks(tensor):
        if not getattr(hook, "__torch_unserializable__", False):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this "
                          "is expected, you can decorate the function with "
                          "@torch.utils.hooks.unserializable_hook to suppress this warning")
