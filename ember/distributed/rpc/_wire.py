"""RPC serialization: ``encode(obj)`` -> ``[pickle, tensor buffers...]``; ``decode(frames)``.

A pickler whose ``persistent_id`` takes every tensor out of the pickle: the pickle keeps
``("T", index, dtype, shape, requires_grad, type)`` and frame ``1 + index`` holds the raw
bytes of just the elements the tensor covers (a contiguous view is sent as a buffer over
its own elements, zero-copy; a strided view is packed first). On receive
``np.frombuffer`` wraps the frame's memory, so large tensors are not copied either.
Scripted functions travel by reference (module + qualname, as pickle does for Python
functions) and RRefs through the fork hooks of ``rref.py``.
"""
from __future__ import annotations

import io
import pickle
import types

import numpy as np

from ember._tensor import Tensor, _init

SMALL_FRAME = 4096       # received buffers below this are copied (aligned, frees the frame)

_PLAIN = frozenset((int, float, str, bytes, bool, type(None), tuple, list, dict))
_FunctionType = types.FunctionType
_op_refs = {}            # function -> its persistent id (see _op_reference)
_rref_hooks = None       # (RRef class, fork(rref) -> state, unfork(state) -> RRef)


def _hooks():
    global _rref_hooks
    if _rref_hooks is None:
        from ember.distributed.rpc import rref
        _rref_hooks = (rref.RRef, rref._fork_for_send, rref._unfork)
    return _rref_hooks


def _op_reference(fn):
    """``("F", module, qualname)`` of a function without ``__module__`` (ember's generated
    ops): pickle would search every loaded module for it on every call; done once here."""
    ref = _op_refs.get(fn)
    if ref is None:
        ref = _op_refs[fn] = ("F", pickle.whichmodule(fn, fn.__qualname__), fn.__qualname__)
    return ref


class _Pickler(pickle.Pickler):
    def __init__(self, file, buffers):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.buffers = buffers

    def persistent_id(self, obj):
        kind = type(obj)
        if kind in _PLAIN:
            return None
        if isinstance(obj, Tensor):
            return self._tensor(obj)
        if kind is _FunctionType and obj.__module__ is None:
            return _op_reference(obj)
        if kind.__name__ == "ScriptFunction" and kind.__module__ == "ember.jit._script":
            return ("F", obj.__module__, obj.__qualname__)
        rref_cls, fork, _ = _hooks()
        if isinstance(obj, rref_cls):
            return ("R",) + fork(obj)
        return None

    def _tensor(self, t):
        arr = t._data
        if type(arr) is not np.ndarray or arr.dtype.hasobject:
            return None           # meta / quantized storage: ordinary pickling
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        self.buffers.append(arr.reshape(-1).view(np.uint8) if arr.size else b"")
        cls = type(t)
        return ("T", len(self.buffers) - 1, arr.dtype, arr.shape, t._requires_grad,
                None if cls is Tensor else cls)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, frames):
        super().__init__(file)
        self.frames = frames

    def persistent_load(self, pid):
        tag = pid[0]
        if tag == "T":
            return _tensor(self.frames[pid[1]], *pid[2:])
        if tag == "F":
            return _lookup(pid[1], pid[2])
        if tag == "R":
            return _hooks()[2](pid[1:])
        raise pickle.UnpicklingError(f"unknown persistent id {tag!r}")


def _tensor(frame, dtype, shape, requires_grad, cls):
    buf = getattr(frame, "buffer", frame)
    arr = np.frombuffer(buf, dtype=dtype)
    if len(buf) < SMALL_FRAME:
        arr = arr.copy()
    arr = arr.reshape(shape)
    if cls is None:
        t = object.__new__(Tensor)
        _init(t, arr)
        t._requires_grad = requires_grad
        return t
    plain = object.__new__(Tensor)
    _init(plain, arr)
    from ember.nn.parameter import Parameter
    if issubclass(cls, Parameter):
        return cls(plain, requires_grad)
    plain._requires_grad = requires_grad
    return plain.as_subclass(cls)


def _lookup(module, qualname):
    import importlib
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def encode(obj) -> list:
    """``[pickle bytes, buffer of tensor 0, buffer of tensor 1, ...]``."""
    buffers = []
    f = io.BytesIO()
    _Pickler(f, buffers).dump(obj)
    return [f.getvalue()] + buffers


def decode(frames):
    """The object ``encode`` was given; ``frames`` are bytes, buffers or ``zmq.Frame``s."""
    head = frames[0]
    head = getattr(head, "buffer", head)
    return _Unpickler(io.BytesIO(head), frames[1:]).load()
