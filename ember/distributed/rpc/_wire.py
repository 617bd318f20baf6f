"""RPC serialization: ``encode(obj)`` -> ``[pickle, tensor buffers...]``; ``decode(frames)``.

A pickler whose ``persistent_id`` takes every tensor out of the pickle: the pickle keeps
``("T", index, dtype, shape, requires_grad, type)`` and frame ``1 + index`` holds the raw
bytes of just the elements the tensor covers (a contiguous view is sent as a buffer over
its own elements, zero-copy; a strided view is packed first). On receive
``np.frombuffer`` wraps the frame's memory, so large tensors are not copied either.
Between workers on one host a large tensor's frame is a descriptor instead: with
``shm=True`` a tensor of ``SHM_MIN_BYTES`` or more is written once into a fresh file of
/dev/shm whose name is the frame; the receiver maps the file (no copy) and unlinks it at
once. With ``keep`` (a list; the sender holds the arrays in it until the receiver has read
them) a smaller one of ``LEND_MIN_BYTES`` or more is *lent*: the receiver copies it out of
the sender's memory (``_cma.py``). Scripted functions travel by reference (module +
qualname, as pickle does for Python functions) and RRefs through the fork hooks of
``rref.py``.

The common messages skip the custom pickler: ``dumps_plain`` (a value of builtin scalars in
small containers) and ``dumps_call`` (a call of a function found by name, with such
arguments: ``((module, qualname), args, kwargs)``, the name cached on both ends) are plain
pickles that ``loads`` / ``loads_call`` read with ``pickle.loads``. When the arguments (or a
result) also hold plain tensors at the top level — ``f(x, 3)``, a tensor or a tuple of
tensors returned — they are *flat*: the pickle keeps ``None`` in each tensor's place and a
slot ``(position, dtype char, shape, requires_grad, how)`` per tensor, whose bytes are
the frames that follow (``loads_call(frames)`` / ``loads_result(frames)`` put them back).
"""
from __future__ import annotations

import io
import itertools
import mmap
import os
import pickle
import types

import numpy as np

from ember._tensor import Tensor, _init
from ember.distributed.rpc import _cma

SMALL_FRAME = 4096       # received buffers below this are copied (aligned, frees the frame)
SHM_MIN_BYTES = 8 << 20    # below this, a socket is faster than a file (measured)
LEND_MIN_BYTES = 512 << 10  # from here to SHM_MIN_BYTES a cross-memory read beats a socket
SOCKET, SHM, LENT = 0, 1, 2  # how a tensor's frame carries its bytes
SHM_DIR = "/dev/shm"
HAS_SHM = os.path.isdir(SHM_DIR) and os.access(SHM_DIR, os.W_OK)
_shm_ids = itertools.count()
shm_created = set()      # names written and maybe not yet taken (unlinked at shutdown)

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


_NAMESPACES = ("ember", "ember.nn.functional", "ember.linalg", "ember.special", "ember.fft")


def _op_reference(fn):
    """``("F", module, qualname)`` for one of ember's functions that pickle cannot find
    quickly or at all (generated ops have no ``__module__``; some public functions are
    wrappers of the one their ``__module__`` names); None: pickle it as usual. Cached."""
    ref = _op_refs.get(fn)
    if ref is None:
        ref = _op_refs[fn] = _find_reference(fn)
    return ref or None


def _find_reference(fn):
    name, module = fn.__qualname__, fn.__module__
    if module is not None:
        try:
            if _lookup(module, name) is fn:
                return False
        except (ImportError, AttributeError):
            pass
    import importlib
    for space in _NAMESPACES:
        if getattr(importlib.import_module(space), fn.__name__, None) is fn:
            return ("F", space, fn.__name__)
    return ("F", pickle.whichmodule(fn, name), name) if module is None else False


class _Pickler(pickle.Pickler):
    def __init__(self, file, buffers, shm, tensors=None, keep=None):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.buffers = buffers
        self.shm = shm
        self.tensors = tensors
        self.keep = keep

    def persistent_id(self, obj):
        kind = type(obj)
        if kind in _PLAIN:
            return None
        if isinstance(obj, Tensor):
            if self.tensors is not None:
                self.tensors.append(obj)
            return self._tensor(obj)
        if kind is _FunctionType and (obj.__module__ or "ember").startswith("ember"):
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
        arr, how = _frame_of(arr, self.shm, self.buffers, self.keep)
        cls = type(t)
        return ("T", len(self.buffers) - 1, arr.dtype, arr.shape, t._requires_grad,
                None if cls is Tensor else cls, how)


def _frame_of(arr, shm, buffers, keep=None):
    """Append to ``buffers`` the frame of ndarray ``arr``: its elements' bytes (a view when
    contiguous), or for a large one a descriptor: the name of a /dev/shm file holding
    them (``shm``, from ``SHM_MIN_BYTES``: the receiver maps it, no copy at all), or lent
    (``keep`` given: the arrays lent go there).
    ``(contiguous arr, SOCKET / SHM / LENT)``."""
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    data = arr.reshape(-1).view(np.uint8) if arr.size else b""
    if shm and arr.nbytes >= SHM_MIN_BYTES:
        buffers.append(_to_shm(data))
        return arr, SHM
    if keep is not None and arr.nbytes >= LEND_MIN_BYTES:
        buffers.append(_cma.lend(arr, keep))
        return arr, LENT
    buffers.append(data)
    return arr, SOCKET


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, frames, tensors=None):
        super().__init__(file)
        self.frames = frames
        self.tensors = tensors

    def persistent_load(self, pid):
        tag = pid[0]
        if tag == "T":
            t = _tensor(self.frames[pid[1]], *pid[2:])
            if self.tensors is not None:
                self.tensors.append(t)
            return t
        if tag == "F":
            return _lookup(pid[1], pid[2])
        if tag == "R":
            return _hooks()[2](pid[1:])
        raise pickle.UnpicklingError(f"unknown persistent id {tag!r}")


def _to_shm(data):
    """Write ``data`` (uint8) into a new file of /dev/shm; its name."""
    name = f"ember-rpc-{os.getpid()}-{next(_shm_ids)}"
    fd = os.open(os.path.join(SHM_DIR, name), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    shm_created.add(name)
    try:
        view = memoryview(data)
        while view.nbytes:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return name.encode()


def _from_shm(name):
    """Map the /dev/shm file ``name`` (then remove it): a writable buffer, not copied."""
    path = os.path.join(SHM_DIR, bytes(name).decode())
    fd = os.open(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        buf = mmap.mmap(fd, size) if size else b""
    finally:
        os.close(fd)
        os.unlink(path)
    return buf


def forget_taken():
    """Drop from ``shm_created`` the files receivers have taken already."""
    for name in list(shm_created):
        if not os.path.exists(os.path.join(SHM_DIR, name)):
            shm_created.discard(name)


def unlink_created():
    """Remove the shared-memory files this process wrote that nobody has taken."""
    while shm_created:
        try:
            os.unlink(os.path.join(SHM_DIR, shm_created.pop()))
        except OSError:
            pass


def _tensor(frame, dtype, shape, requires_grad, cls, how=SOCKET):
    buf = getattr(frame, "buffer", frame)
    if how == SHM:
        buf = _from_shm(buf)
    elif how == LENT:
        buf = _cma.read(buf)
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


def encode(obj, shm=False, tensors=None, keep=None) -> list:
    """``[pickle bytes, buffer of tensor 0, buffer of tensor 1, ...]``; for a receiver on
    this host, large tensors are lent (``keep``: the list holding them) or go through
    shared memory (``shm``); ``tensors``: a list that receives the tensors sent (for
    distributed autograd)."""
    buffers = []
    f = io.BytesIO()
    _Pickler(f, buffers, shm and HAS_SHM, tensors, keep).dump(obj)
    return [f.getvalue()] + buffers


_SCALARS = frozenset((int, float, complex, str, bytes, bool, type(None)))
_DTYPES = {}             # dtype char -> numpy dtype, for the slots of flat messages


def _plain(obj, depth=0):
    """Whether ``obj`` is builtin scalars in small tuples, lists and dicts only."""
    kind = type(obj)
    if kind in _SCALARS:
        return True
    if depth > 3 or not (kind is tuple or kind is list or kind is dict) or len(obj) > 16:
        return False
    if kind is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in obj.items())
    return all(_plain(x, depth + 1) for x in obj)


def _flat(items, shm, tensors, keep=None):
    """``(template, slots, buffers)`` of a tuple or list whose entries are plain or plain
    tensors (exact Tensor class, builtin dtype): each tensor's place holds None in the
    template and its slot; None when ``items`` is anything else. ``tensors`` receives
    the tensors."""
    if len(items) > 16:
        return None
    template, slots, buffers = None, [], []
    for i, x in enumerate(items):
        if type(x) is Tensor:
            arr = x._data
            if type(arr) is not np.ndarray or not arr.dtype.isbuiltin or arr.dtype.hasobject:
                return None
            if template is None:
                template = list(items)
            arr, how = _frame_of(arr, shm and HAS_SHM, buffers, keep)
            template[i] = None
            _DTYPES.setdefault(arr.dtype.char, arr.dtype)
            slots.append((i, arr.dtype.char, arr.shape, x._requires_grad, how))
            if tensors is not None:
                tensors.append(x)
        elif not _plain(x, 1):
            return None
    if template is None:
        return items, (), buffers
    return (tuple(template) if type(items) is tuple else template), tuple(slots), buffers


def _unflat(template, slots, frames, tensors):
    """The items ``_flat`` took apart: ``template`` with each slot's tensor put back from
    ``frames[1 + k]``; ``tensors`` receives them."""
    items = list(template)
    for k, (i, char, shape, requires_grad, how) in enumerate(slots):
        t = items[i] = _tensor(frames[1 + k], _DTYPES.get(char) or np.dtype(char), shape,
                               requires_grad, None, how)
        if tensors is not None:
            tensors.append(t)
    return tuple(items) if type(template) is tuple else items


def dumps_plain(obj, shm=False, tensors=None, keep=None):
    """The frames of a result: ``[pickle]`` of a ``_plain`` object, or (flat: a tensor,
    or a tuple/list holding tensors at its top level) ``[pickle((template, slots)),
    buffers...]``; ``(frames, flat)``, or ``(None, False)`` for anything else."""
    if _plain(obj):
        return [pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)], False
    kind = type(obj)
    if kind is Tensor:
        parts = _flat((obj,), shm, tensors, keep)
        if parts is not None:
            return [pickle.dumps((None, parts[1]), pickle.HIGHEST_PROTOCOL), *parts[2]], True
    elif kind is tuple or kind is list:
        parts = _flat(obj, shm, tensors, keep)
        if parts is not None and parts[1]:
            return [pickle.dumps(parts[:2], pickle.HIGHEST_PROTOCOL), *parts[2]], True
    return None, False


def loads_result(frames, tensors=None):
    """The result of flat ``dumps_plain`` frames."""
    template, slots = loads(frames[0])
    if template is None:                   # a lone tensor
        return _unflat((None,), slots, frames, tensors)[0]
    return _unflat(template, slots, frames, tensors)


_call_names = {}         # function -> (module, qualname), for functions found by name
_named_calls = {}        # (module, qualname) -> function, on the callee


def dumps_call(func, args, kwargs, shm=False, tensors=None, keep=None):
    """The frames of a call of ``func``, a function its module (or ember's namespaces)
    names, with ``_plain`` keyword arguments and positional ones plain or plain tensors:
    ``[pickle(((module, qualname), args, kwargs))]``, or with tensors ``[pickle((name,
    template, kwargs, slots)), buffers...]`` (``loads_call`` reads both); None for any
    other call. ``tensors`` receives the tensors; ``shm`` and ``keep`` as for ``encode``.
    Both ends cache names."""
    if type(func) is not _FunctionType or (kwargs and not _plain(kwargs)):
        return None
    if _plain(args):
        head, buffers = None, ()
    else:
        parts = _flat(args, shm, tensors, keep)
        if parts is None:
            return None
        head, buffers = parts[0], parts[2]
    name = _call_names.get(func)
    if name is None:
        name = _name_of(func)
        if name is None:
            return None
        _call_names[func] = name
    if head is None:
        return [pickle.dumps((name, args, kwargs), pickle.HIGHEST_PROTOCOL)]
    return [pickle.dumps((name, head, kwargs, parts[1]), pickle.HIGHEST_PROTOCOL), *buffers]


def _name_of(func):
    module, qualname = func.__module__, func.__qualname__
    if module is None or module.startswith("ember"):
        ref = _op_reference(func)       # ember's ops: by the namespace that holds them
        return ref[1:] if ref else _name_of_module(func, module, qualname)
    return _name_of_module(func, module, qualname)


def _name_of_module(func, module, qualname):
    if module is None:
        return None
    try:
        return (module, qualname) if _lookup(module, qualname) is func else None
    except (ImportError, AttributeError):
        return None


def loads_call(frames, tensors=None):
    """``(func, args, kwargs)`` of ``dumps_call`` frames (a list, or its first frame when
    the call holds no tensors); ``tensors`` receives the tensors."""
    if type(frames) is not list:
        frames = [frames]
    call = loads(frames[0])
    func = _named_calls.get(call[0])
    if func is None:
        func = _named_calls[call[0]] = _lookup(*call[0])
    if len(call) == 3:
        return func, call[1], call[2]
    return func, _unflat(call[1], call[3], frames, tensors), call[2]


def loads(frame):
    """The object of a ``dumps_plain`` / ``dumps_call`` frame (bytes, a memoryview or a
    ``zmq.Frame``)."""
    kind = type(frame)
    return pickle.loads(frame if kind is memoryview or kind is bytes else frame.buffer)


def decode(frames, tensors=None):
    """The object ``encode`` was given; ``frames`` are bytes, buffers or ``zmq.Frame``s;
    ``tensors``: a list that receives the tensors rebuilt."""
    head = frames[0]
    head = getattr(head, "buffer", head)
    return _Unpickler(io.BytesIO(head), frames[1:], tensors).load()
