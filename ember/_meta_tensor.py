"""The ``meta`` device: tensors with a shape and a dtype but no data.

A meta tensor's ``_data`` is a :class:`Placeholder`: a read-only, zero-stride NumPy array
over one zero element, so any shape costs no memory. Ops need no meta rules of their own:
once the first meta tensor exists, :func:`enable` routes the dispatcher through
:func:`call`, which runs an op's kernel on the placeholders (or its record's ``meta``
function, when one is set) and keeps only the shapes and dtypes of what comes out.
In-place ops on a meta tensor do nothing (there is nothing to write), so initialising a
module built on ``meta`` draws no random numbers, as in torch.

Note [meta strides]: a placeholder carries the strides and storage offset torch would give
the tensor (``meta_strides``, ``meta_offset``). A view op computes them by running its
kernel on a probe: an array with those strides at a fake address, which views never read
(so the kernel's own stride checks hold too).
Other results are laid out as torch lays them out: contiguously, in a requested memory
format, or (pointwise ops, copies, ``*_like``) like their first same-shaped input.

Note [huge meta tensors]: running a kernel on placeholders of 2**40 elements would take
hours (and allocate the result). Above ``_FULL_RUN`` input elements, an op runs twice on
small stand-ins instead, every size above ``_KEEP`` replaced by a distinct small prime (two
different sets), and each output size that is the stand-in of the same size in both runs
maps back to it (one that is equal in both runs is a constant); otherwise a size that is
an integer combination of the input sizes (``cat``, unstrided convolutions) is solved for
from one more run per size and checked against the second run. A shape found neither way,
or an error at the small sizes, falls back to the full run when that is affordable.
"""
from __future__ import annotations

import functools
import threading

import numpy as np

from ember._device import default_device, to_device


class Placeholder(np.ndarray):
    """The array behind a meta tensor: shape and dtype only (all its NumPy strides are 0);
    the strides and storage offset the tensor reports ride along (Note [meta strides])."""
    meta_strides = None         # element strides; None: contiguous
    meta_offset = 0


def placeholder(shape, dtype, strides=None, offset=0) -> Placeholder:
    ph = np.broadcast_to(np.zeros((), dtype), tuple(shape)).view(Placeholder)
    if strides is not None:
        ph.meta_strides = tuple(strides)
    ph.meta_offset = offset
    return ph


def contiguous_strides(shape):
    st, acc = [], 1
    for n in reversed(tuple(shape)):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


def channels_last_strides(shape):
    """(N, C, H, W) or (N, C, D, H, W) strides with C innermost."""
    order = (1,) + tuple(range(len(shape) - 1, 1, -1)) + (0,)     # inner to outer
    st, acc = [0] * len(shape), 1
    for d in order:
        st[d] = acc
        acc *= max(shape[d], 1)
    return tuple(st)


def strides_of(a):
    """The element strides a placeholder reports."""
    st = a.meta_strides
    return contiguous_strides(a.shape) if st is None else st


def is_contiguous(shape, strides, channels_last=False):
    """torch's test: size-1 dims may have any stride; an empty tensor is contiguous."""
    if 0 in shape:
        return True
    dims = range(len(shape) - 1, -1, -1)
    if channels_last:
        if len(shape) not in (4, 5):
            return False
        dims = (1,) + tuple(range(len(shape) - 1, 1, -1)) + (0,)
    expected = 1
    for d in dims:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def preserved_strides(shape, strides):
    """torch's layout for a copy of a tensor with these strides (``preserve_format``): the
    strides themselves when they are non-overlapping and dense, else dense strides in their
    order (stable sort from the innermost dim)."""
    nd = len(shape)
    order = sorted(range(nd - 1, -1, -1), key=lambda d: strides[d])   # inner to outer
    st, acc = [0] * nd, 1
    for d in order:
        st[d] = acc
        acc *= max(shape[d], 1)
    dense = all(shape[d] == 1 or strides[d] == st[d] for d in range(nd))
    return tuple(strides) if dense else tuple(st)


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
    whose data is dropped, laid out like ``t``); off meta there is nothing to copy."""
    if dev.type != "meta":
        no_data()
    from ember._ops.conversion import to_copy
    r = to_copy(t)
    r._data = placeholder(r._data.shape, r._data.dtype,
                          preserved_strides(t._data.shape, t.stride()))
    return r


def no_data(*_):
    raise NotImplementedError("Cannot copy out of meta tensor; no data!")


# ------------------------------------------------------------------------ dispatch

_plain_call = None
class _Local(threading.local):
    factories = False       # factory records build meta tensors (class default: fast)


_local = _Local()


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
        if op.meta is not None:
            return _metaize(op.meta(*args))
        if op.is_view and is_meta(args[0]):
            return _view_call(op, args)
        if sum(t._data.size for t in metas) > _FULL_RUN:
            res = _shrunk_call(op, args, tensors, metas)
        else:
            res = _metaize(_plain_call(op, args, None))
        return _layout(op, args, tensors, res)
    if not tensors and _local.factories:
        return _meta_factory(op, args)
    return _plain_call(op, args, out)


def _outputs(res):
    from ember._tensor import Tensor
    if isinstance(res, Tensor):
        return [res]
    return [r for r in res if isinstance(r, Tensor)] if isinstance(res, (tuple, list)) else []


# ------------------------------------------------------------ layout (Note [meta strides])

_FAKE_ADDRESS = 1 << 44         # where probes "live": never read (views only)


class _Interface:
    def __init__(self, iface):
        self.__array_interface__ = iface


def probe(t):
    """An array with ``t``'s shape, dtype, strides and storage offset, at a fake address."""
    a = t._data
    it = a.itemsize
    st = strides_of(a) if type(a) is Placeholder else t.stride()
    off = a.meta_offset if type(a) is Placeholder else 0
    iface = {"shape": a.shape, "typestr": f"|V{it}", "version": 3,
             "data": (_FAKE_ADDRESS + off * it, True), "strides": tuple(s * it for s in st)}
    return np.asarray(_Interface(iface)).view(a.dtype)


def _view_call(op, args):
    """A view op on a meta tensor: its kernel runs on the probe (so its checks see the real
    strides), and each output gets the strides and offset it came out with."""
    src = args[0]
    if op.public_name == "as_strided":      # (its kernel returns a placeholder for meta)
        res = _plain_call(op, args, None)
        off = args[3] if args[3] is not None else src._data.meta_offset
        o = _outputs(res)[0]
        o._data = placeholder(tuple(args[1]), o._data.dtype, tuple(args[2]), off)
        return res
    a = src._data
    src._data = probe(src)
    try:
        res = _plain_call(op, args, None)
    finally:
        src._data = a
    for o in _outputs(res):
        v = o._data
        it = v.itemsize
        start = v.__array_interface__["data"][0] - _FAKE_ADDRESS
        o._data = placeholder(v.shape, v.dtype, tuple(s // it for s in v.strides), start // it)
    return res


_PRESERVING = None


def _preserves_layout(op):
    """Pointwise ops, copies and ``*_like`` lay their result out like their input."""
    global _PRESERVING
    if _PRESERVING is None:
        from ember.func._batch_rules import ELEMENTWISE
        from ember._ops.elementwise import RECORDS
        _PRESERVING = frozenset(ELEMENTWISE) | {r.name for r in RECORDS.values()}
    return op.functional.name in _PRESERVING


def _layout(op, args, tensors, res):
    fmt = args[op.argnames.index("memory_format")] if "memory_format" in op.argnames else None
    fmt = str(fmt).rsplit(".", 1)[-1] if fmt is not None else "preserve_format"
    preserve = fmt == "preserve_format" and _preserves_layout(op)
    for o in _outputs(res):
        shape = o._data.shape
        st = None
        if fmt in ("channels_last", "channels_last_3d") and len(shape) in (4, 5):
            st = channels_last_strides(shape)
        elif preserve:
            like = next((t for t in tensors if t._data.shape == shape), None)
            if like is not None and len(shape) > 1:
                st = preserved_strides(shape, like.stride())
        if st is not None and st != contiguous_strides(shape):
            o._data = placeholder(shape, o._data.dtype, st)
    return res


# ------------------------------------------------------ huge sizes (Note [huge meta tensors])

_FULL_RUN = 1 << 20             # input elements an op may run on at full size
_FULL_RUN_MAX = 1 << 26         # ... when the small runs cannot say
_KEEP = 16                      # sizes up to this are kept as they are
_PRIMES = (17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101,
           103, 107, 109, 113)
_STAND_INS = (_PRIMES[0::2], _PRIMES[1::2])


def _small_run(op, args, metas, sub):
    """``op`` with no grad recording, each meta input's sizes replaced per ``sub``."""
    from ember._state import state
    saved = {id(t): (t, t._data) for t in metas}
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        for t, a in saved.values():
            t._data = placeholder(tuple(sub.get(n, n) for n in a.shape), a.dtype)
        return _plain_call(op, args, None)
    finally:
        state.grad_enabled = prev
        for t, a in saved.values():
            t._data = a


def _shrunk_call(op, args, tensors, metas):
    sizes = sorted({n for t in metas for n in t._data.shape if n > _KEEP})
    affordable = sum(t._data.size for t in metas) <= _FULL_RUN_MAX
    if len(sizes) > len(_STAND_INS[0]):
        return _full_or_refuse(op, args, metas, affordable)
    subs = [dict(zip(sizes, primes)) for primes in _STAND_INS]
    try:
        runs = [_small_run(op, args, metas, sub) for sub in subs]
    except Exception as e:          # noqa: BLE001  (an artefact of the sizes, or the user's)
        if affordable:
            return _metaize(_plain_call(op, args, None))
        raise _with_sizes(e, subs[0]) from None
    outs = [_outputs(r) for r in runs]
    shapes = _map_back(subs, [[o._data.shape for o in out] for out in outs])
    if shapes is None:
        shapes = _solve_linear(op, args, metas, sizes, subs, outs)
    if shapes is None:
        return _full_or_refuse(op, args, metas, affordable)
    res = runs[0]
    for o, shape in zip(outs[0], shapes):
        o._data = placeholder(shape, o._data.dtype)
    from ember._state import state
    if state.grad_enabled and op.differentiable and any(t._requires_grad for t in tensors):
        from ember.autograd import graph
        graph.record(op, args, tuple(outs[0]))
    return res


def _map_back(subs, shapes):
    """Each output size: a constant (equal in both runs) or the stand-in of one size."""
    back = [{v: k for k, v in sub.items()} for sub in subs]
    result = []
    for s1, s2 in zip(*shapes):
        if len(s1) != len(s2):
            return None
        shape = []
        for a, b in zip(s1, s2):
            n = a if a == b else back[0].get(a) if back[0].get(a) == back[1].get(b) else None
            if n is None:
                return None
            shape.append(n)
        result.append(tuple(shape))
    return result


def _solve_linear(op, args, metas, sizes, subs, outs):
    """Output sizes that are c0 + sum(c_n * n) over the input sizes (``cat``, an unstrided
    convolution...): each c_n from a run with n's stand-in moved by one, checked against
    the second run; None when that does not hold."""
    base = [o._data.shape for o in outs[0]]
    other = [o._data.shape for o in outs[1]]
    coeffs = []
    for n in sizes:
        moved = dict(subs[0])
        moved[n] += 1
        try:
            shifted = [o._data.shape for o in _outputs(_small_run(op, args, metas, moved))]
        except Exception:           # noqa: BLE001
            return None
        if [len(s) for s in shifted] != [len(s) for s in base]:
            return None
        coeffs.append([[b - a for a, b in zip(s0, s1)] for s0, s1 in zip(base, shifted)])
    result = []
    for k, (s0, s1) in enumerate(zip(base, other)):
        if len(s0) != len(s1):
            return None
        shape = []
        for d, (a, b) in enumerate(zip(s0, s1)):
            c = [coeffs[j][k][d] for j in range(len(sizes))]
            c0 = a - sum(cj * subs[0][n] for cj, n in zip(c, sizes))
            if c0 + sum(cj * subs[1][n] for cj, n in zip(c, sizes)) != b:
                return None
            value = c0 + sum(cj * n for cj, n in zip(c, sizes))
            if value < 0:
                return None
            shape.append(value)
        result.append(tuple(shape))
    return result


def _full_or_refuse(op, args, metas, affordable):
    if affordable:
        return _metaize(_plain_call(op, args, None))
    raise NotImplementedError(
        f"{op.public_name}: on meta tensors of sizes "
        f"{[list(t._data.shape) for t in metas]} ember cannot infer the output shape without "
        f"running the op at full size")


def _with_sizes(e, sub):
    """``e`` with the stand-in sizes in its message put back."""
    import re
    back = {str(v): str(k) for k, v in sub.items()}
    msg = re.sub(r"\b\d+\b", lambda m: back.get(m.group(), m.group()), str(e))
    try:
        return type(e)(msg)
    except Exception:               # noqa: BLE001
        return e


def _meta_factory(op, args):
    """A factory record on meta: run it at size 0 (nothing allocated, no draws), keep the
    dtype, give the requested shape."""
    if "size" not in op.argnames:
        return _metaize(_plain_call(op, args, None))
    k = op.argnames.index("size")
    shape = tuple(args[k])
    small = list(args)
    small[k] = (0,) * len(shape)
    if "stride" in op.argnames:         # empty_strided
        j = op.argnames.index("stride")
        small[j] = (1,) * len(shape)
        res = _plain_call(op, tuple(small), None)
        res._data = placeholder(shape, res._data.dtype, tuple(args[j]))
        return res
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
        before = _local.factories
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
