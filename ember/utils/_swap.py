"""``torch.utils.swap_tensors``: two tensor objects exchange everything they hold."""
from __future__ import annotations

import weakref

from ember._tensor import Tensor

# every per-tensor field ember keeps in a slot (``__dict__`` and the class are swapped too)
_FIELDS = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_storage_base",
           "_view_info", "_vc", "_meta")
_MISSING = object()


def swap_tensors(t1, t2):
    """Swap the contents of ``t1`` and ``t2`` in place: data, autograd state, Python class
    and ``__dict__``; each name keeps pointing at the same object, which now holds the
    other's tensor. Refused (RuntimeError) for a tensor that a weakref points at."""
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors: expected {name} to be a Tensor, got {type(t).__name__}")
        if weakref.getweakrefcount(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    if t1 is t2:
        return
    for field in _FIELDS:
        a, b = getattr(t1, field, _MISSING), getattr(t2, field, _MISSING)
        for t, value in ((t1, b), (t2, a)):
            if value is _MISSING:
                try:
                    object.__delattr__(t, field)
                except AttributeError:
                    pass
            else:
                object.__setattr__(t, field, value)
    d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear(), t1.__dict__.update(d2)
    t2.__dict__.clear(), t2.__dict__.update(d1)
    c1, c2 = type(t1), type(t2)
    object.__setattr__(t1, "__class__", c2)
    object.__setattr__(t2, "__class__", c1)
