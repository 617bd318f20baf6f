"""The ``meta`` device: tensors with a shape and a dtype but no data.

A meta tensor's ``_data`` is a :class:`Placeholder`: a read-only, zero-stride NumPy array
over one zero element, so any shape costs no memory. Ops need no meta rules of their own:
once the first meta tensor exists, :func:`enable` routes the dispatcher through
:func:`call`, which runs an op's kernel on the placeholders (or its record's ``meta``
function, when one is set) and keeps only the shapes and dtypes of what comes out.
In-place ops on a meta tensor do nothing (there is nothing to write), so initialising a
module built on ``meta`` draws no random numbers, as in torch.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ember._device import default_device, to_device


class Placeholder(np.ndarray):
    """The array behind a meta tensor: shape and dtype only (all strides are 0)."""


def placeholder(shape, dtype) -> Placeholder:
    return np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(Placeholder)


def is_meta(t) -> bool:
    return type(t._data) is Placeholder


def to_meta(t):
    """A meta tensor with ``t``'s shape, dtype and requires_grad (``t`` unchanged)."""
    from ember._tensor import _make
    if is_meta(t):
        return t
    out = _make(placeholder(t._data.shape, t._data.dtype))
    out._requires_grad = t._requires_grad
    return out


def move(t, dev):
    """``t.to(dev)`` between cpu and meta: onto meta keeps the autograd history (a copy
    whose data is dropped); off meta there is nothing to copy."""
    if dev.type != "meta":
        no_data()
    from ember._ops.conversion import to_copy
    return _metaize(to_copy(t))


def no_data(*_):
    raise NotImplementedError("Cannot copy out of meta tensor; no data!")


# ------------------------------------------------------------------------ dispatch

_plain_call = None
_local = threading.local()      # .factories: factory records build meta tensors


def enable():
    """Route the dispatcher through :func:`call` (done once, when meta is first used; until
    then meta costs nothing)."""
    global _plain_call
    from ember import _dispatch
    _plain_call = _dispatch.add_call_layer(call)


def _tensors(op, args):
    from ember._tensor import Tensor
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        for x in (a if is_list and isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor):
                yield x


# Ops whose output shape depends on the values: a meta tensor cannot say.
DATA_DEPENDENT = frozenset({"nonzero", "argwhere", "masked_select", "_unique2", "unique_dim",
                            "unique_consecutive", "bincount", "histc", "histogram",
                            "repeat_interleave"})


def call(op, args, out):
    """The dispatcher's call when meta tensors exist: plain ops run as before."""
    if op.composite is not None:
        return _plain_call(op, args, out)
    tensors = list(_tensors(op, args))
    metas = [t for t in tensors if is_meta(t)]
    if op.public_name == "copy_" and metas:       # into meta: nothing to write
        return args[0] if is_meta(args[0]) else no_data()
    if metas:
        if op.public_name in DATA_DEPENDENT:
            raise NotImplementedError(f"{op.public_name}: the output shape depends on the "
                                      f"values, which a meta tensor does not have")
        for t in tensors:
            if not is_meta(t) and t._data.ndim:
                raise RuntimeError("Tensor on device cpu is not on the expected device meta!")
        if op.is_inplace or out is not None:
            return args[0] if op.is_inplace else out
        return _metaize(op.meta(*args) if op.meta is not None else _plain_call(op, args, None))
    if not tensors and getattr(_local, "factories", False):
        return _meta_factory(op, args)
    return _plain_call(op, args, out)


def _meta_factory(op, args):
    """A factory record on meta: run it at size 0 (nothing allocated, no draws), keep the
    dtype, give the requested shape."""
    if "size" not in op.argnames:
        return _metaize(_plain_call(op, args, None))
    k = op.argnames.index("size")
    shape = tuple(args[k])
    small = list(args)
    small[k] = (0,) * len(shape)
    res = _plain_call(op, tuple(small), None)
    return _metaize(res, shape)


def _metaize(res, shape=None):
    """Swap the data of the tensor(s) in ``res`` for placeholders."""
    from ember._tensor import Tensor
    if isinstance(res, Tensor):
        res._data = placeholder(res._data.shape if shape is None else shape, res._data.dtype)
    elif isinstance(res, (tuple, list)):
        for r in res:
            _metaize(r, shape)
    return res


def factory(front):
    """Wrap a factory front: on ``device='meta'`` (inside ``with device('meta')``, or for a
    ``new_*`` method of a meta tensor) it builds a meta tensor instead."""
    @functools.wraps(front)
    def on_device(*args, **kwargs):
        dev = kwargs.get("device")
        meta_input = bool(args) and type(getattr(args[0], "_data", None)) is Placeholder
        if dev is None:
            if not meta_input and default_device().type != "meta":
                return front(*args, **kwargs)
        elif to_device(dev).type != "meta":
            if meta_input:          # empty_like(meta, device='cpu'): a CPU stand-in
                args = (_cpu_stand_in(args[0]),) + args[1:]
            return front(*args, **kwargs)
        kwargs["device"] = None
        before = getattr(_local, "factories", False)
        _local.factories = True
        try:
            res = front(*args, **kwargs)
        finally:
            _local.factories = before
        return to_meta(res)
    return on_device


def _cpu_stand_in(t):
    from ember._tensor import _make
    return _make(np.broadcast_to(np.zeros((), t._data.dtype), t._data.shape))


# The fronts that take ``device=`` and no data (``tensor``'s own front asks for meta
# itself: a wrapper would move the frame its warnings point at).
FACTORIES = ("zeros", "ones", "empty", "full", "empty_strided", "eye", "arange", "linspace",
             "logspace", "rand", "randn", "randint", "randperm", "zeros_like", "ones_like",
             "empty_like", "full_like", "rand_like", "randn_like", "randint_like", "new_zeros",
             "new_ones", "new_empty", "new_full", "new_empty_strided")


def install(namespace, functions, methods):
    """Wrap the public factory fronts (functions, Tensor methods, names already bound in
    ``namespace``) with :func:`factory`."""
    for table in (functions, methods):
        for name in FACTORIES:
            if name in table:
                table[name] = factory(table[name])
    for name in FACTORIES:
        if name in namespace and name not in functions:
            namespace[name] = factory(namespace[name])
