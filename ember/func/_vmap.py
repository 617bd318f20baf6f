"""vmap as a dispatcher mode.

A vmap level pushes a ``VmapMode`` onto the dispatcher's mode stack. Inside, a batched
value is a ``BatchedTensor``: a Tensor subclass showing the *logical* (per-sample) shape,
dtype and dim, holding ``_value`` (the tensor one level down, carrying the batch dimension
at ``_bdim``) and ``_level``. Nested vmaps nest wrappers: the value of a level-k wrapper is a
level-j (j < k) wrapper or a plain tensor, and the plain tensor at the bottom carries every
batch dimension. Autograd records on those bottom tensors (the ops below every vmap level
run on them), which is what lets ``ember.func.grad`` work inside and outside vmap.

The mode of level k handles an op when an argument is a level-k wrapper: it unwraps, and
applies the op record's ``batch_rule`` when present (rules in ``_batch_rules.py``), else
decomposes composite ops (their parts come back through the mode), else runs the op once
per batch entry and stacks the results (counted in ``FALLBACK_COUNTS``).
"""
from __future__ import annotations

import collections
import functools

import numpy as np

from ember._dispatch import Mode
from ember._state import state
from ember._tensor import Tensor, _object_new
from ember.utils._pytree import (_broadcast_to_and_flatten, tree_flatten, tree_structure,
                                 tree_unflatten, treespec_tuple)

FALLBACK_COUNTS: collections.Counter = collections.Counter()   # op name -> loop fallbacks
RULE_COUNTS: collections.Counter = collections.Counter()       # op name -> batch rule uses
DECOMPOSED_COUNTS: collections.Counter = collections.Counter()  # composite ops decomposed

_level_counter = [0]


def _vmap_error(what):
    return RuntimeError(
        f"vmap: It looks like you're {what} on a Tensor. We don't support vmap over "
        f"calling {what.split(' ', 1)[-1]} on a Tensor, please try to rewrite what you're "
        f"doing with other operations.")


class BatchedTensor(Tensor):
    """A Tensor batched at one vmap level (see the module docstring)."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # the protocol off inside (as Tensor's default handler), else a Python function that
        # checks has_torch_function (scaled_dot_product_attention) calls itself for ever;
        # the ops inside still reach the vmap mode through the dispatcher
        from ember.overrides import _disabled_torch_function
        with _disabled_torch_function():
            return func(*args, **(kwargs or {}))

    # --- autograd flags mirror the value below
    @property
    def requires_grad(self):
        return self._value.requires_grad

    @requires_grad.setter
    def requires_grad(self, v):
        self._value.requires_grad = v

    def requires_grad_(self, requires_grad=True):
        self._value.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._value.grad_fn

    @property
    def is_leaf(self):
        return self._value.is_leaf

    def detach(self):
        return _wrap(self._value.detach(), self._bdim, self._level)

    @property
    def data(self):
        return self.detach()

    def item(self):
        raise RuntimeError("vmap: It looks like you're calling .item() on a Tensor. We don't "
                           "support vmap over calling .item() on a Tensor, please try to "
                           "rewrite what you're doing with other operations. If error is "
                           "occurring somewhere inside PyTorch internals, please file a bug "
                           "report.")

    def __bool__(self):
        raise RuntimeError("vmap: It looks like you're attempting to use a Tensor in some "
                           "data-dependent control flow. We don't support that yet, please "
                           "file an issue at https://github.com/pytorch/pytorch/issues .")

    def tolist(self):
        raise RuntimeError("vmap: It looks like you're calling .tolist() on a Tensor. We "
                           "don't support vmap over calling .tolist() on a Tensor.")

    def numpy(self, *, force=False):
        raise RuntimeError("vmap: It looks like you're calling .numpy() on a Tensor. We "
                           "don't support vmap over calling .numpy() on a Tensor.")

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("vmap: cannot convert a batched Tensor to a NumPy array")

    def __repr__(self, *, tensor_contents=None):
        return f"BatchedTensor(lvl={self._level}, bdim={self._bdim}, value=\n{self._value!r})"

    __str__ = __repr__


_ZERO_CACHE: dict = {}


def _wrap(value, bdim, level):
    """A level-``level`` BatchedTensor over ``value`` (batch dim at ``bdim``)."""
    t = _object_new(BatchedTensor)
    shape = tuple(value.shape)
    logical = shape[:bdim] + shape[bdim + 1:]
    dt = value._data.dtype
    z = _ZERO_CACHE.get(dt)
    if z is None:
        z = _ZERO_CACHE[dt] = np.zeros((), dt)
    t._data = np.broadcast_to(z, logical)
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._storage_base = None
    t._view_info = None
    t._vc = 0
    t._meta = None
    t._value = value
    t._bdim = bdim
    t._level = level
    return t


def is_batched(x, level=None):
    return type(x) is BatchedTensor and (level is None or x._level == level)


def bottom(t):
    """The plain tensor under every wrapper of ``t``."""
    while type(t) is BatchedTensor:
        t = t._value
    return t


def active_levels():
    """(level, batch size) of the vmap modes on the stack, innermost last."""
    return [(m.level, m.batch_size) for m in state.modes if isinstance(m, VmapMode)]


def _levels_of(t):
    out = []
    while type(t) is BatchedTensor:
        out.append(t._level)
        t = t._value
    return out


def expand_to_levels(x, levels):
    """``x`` batched (by expansion, a view) at every level of ``levels`` ((level, size),
    ascending) that it is not batched at; the logical value is unchanged."""
    if not isinstance(x, Tensor) or not levels:
        return x
    (lvl, size) = levels[-1]
    lower = levels[:-1]
    if type(x) is BatchedTensor and x._level == lvl:
        return _wrap(expand_to_levels(x._value, lower), x._bdim, lvl)
    inner = expand_to_levels(x, lower)
    return _wrap(_logical_expand_front(inner, size), 0, lvl)


def _logical_expand_front(t, size):
    """A new logical dim 0 of ``size`` (expanded view) without dispatching through modes
    above the wrappers' levels: recurse structurally to the bottom."""
    if type(t) is BatchedTensor:
        return _wrap(_logical_expand_front(t._value, size), t._bdim + 1, t._level)
    import ember
    with _no_modes():
        return t.unsqueeze(0).expand((size,) + tuple(t.shape))


class _no_modes:
    """Run plain ops below every mode (structural helpers on bottom tensors)."""

    def __enter__(self):
        self.saved = state.modes
        state.modes = tuple(m for m in self.saved if not isinstance(m, VmapMode))

    def __exit__(self, *exc):
        state.modes = self.saved
        return False


def canonical(t, levels):
    """Bottom tensor of ``t`` permuted to [batch dims of ``levels`` (ascending; expanded where
    ``t`` is not batched there), logical dims...]."""
    t = expand_to_levels(t, levels)
    b, perm = _canon_perm(t)
    with _no_modes():
        return b.permute(perm) if perm != list(range(len(perm))) else b


def _canon_perm(t):
    """(bottom, perm): bottom.permute(perm) is [batch dims by ascending level, logical]."""
    if type(t) is not BatchedTensor:
        return t, list(range(t.dim()))
    b, perm_v = _canon_perm(t._value)
    nlv = len(_levels_of(t._value))
    lev = perm_v[:nlv]
    logical = perm_v[nlv:]
    d = t._bdim
    return b, lev + [logical[d]] + logical[:d] + logical[d + 1:]


def from_canonical(c, like):
    """Inverse of ``canonical``: lay out ``c`` (canonical for ``like``'s levels) as ``like``
    is laid out, wrapped in the same levels."""
    b, perm = _canon_perm(like)
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    with _no_modes():
        phys = c.permute(inv) if inv != list(range(len(inv))) else c
    return rewrap_like(phys, like)


def rewrap_like(phys, like):
    """Wrap bottom tensor ``phys`` with ``like``'s wrapper chain (same levels and bdims)."""
    chain = []
    t = like
    while type(t) is BatchedTensor:
        chain.append((t._bdim, t._level))
        t = t._value
    for bd, lv in reversed(chain):
        phys = _wrap(phys, bd, lv)
    return phys


# ------------------------------------------------------------------------- the mode

def _is_random(op):
    return "generator" in op.argnames


_TOUCH_CACHE: dict = {}


def _touches_data(fn, depth=4, seen=None):
    """Does composite ``fn`` (or an ember helper it calls) read ``._data`` directly? Such a
    composite would see a BatchedTensor's placeholder array, so it is not decomposed."""
    r = _TOUCH_CACHE.get(fn)
    if r is not None:
        return r
    seen = set() if seen is None else seen
    code = getattr(fn, "__code__", None)
    if code is None or fn in seen:
        return False
    seen.add(fn)
    codes = [code]
    found = False
    while codes and not found:
        c = codes.pop()
        if "_data" in c.co_names:
            found = True
            break
        codes.extend(k for k in c.co_consts if hasattr(k, "co_names"))
        if depth > 0:
            g = getattr(fn, "__globals__", {})
            for n in c.co_names:
                h = g.get(n)
                if callable(h) and getattr(h, "__module__", "").startswith("ember") and \
                        hasattr(h, "__code__") and _touches_data(h, depth - 1, seen):
                    found = True
                    break
    _TOUCH_CACHE[fn] = found
    return found


# ops whose output size depends on the values: torch refuses to batch them (the per-sample
# loop would stack differently sized results, or, when the sizes happen to agree, succeed
# where torch fails); op name -> the aten name torch's message gives
_DYNAMIC_SHAPE = {"nonzero": "nonzero", "_unique2": "_unique2", "unique_dim": "unique_dim",
                  "unique_consecutive": "unique_consecutive"}


def _refuse_dynamic_shape(op, args, level):
    aten = _DYNAMIC_SHAPE.get(op.name)
    if aten is not None:
        raise RuntimeError(f"vmap: We do not support batching operators that can output dynamic "
                           f"shape. Attempted to vmap over aten::{aten}. Please file an issue "
                           f"at https://github.com/pytorch/pytorch/issues if you need this "
                           f"feature.")
    if op.name == "masked_select" and len(args) > 1 and is_batched(args[1], level):
        raise RuntimeError("vmap: Attempted to vmap over `mask` in torch.masked_select(self, "
                           "mask) We cannot support this because for each batch this would "
                           "return a differently shaped Tensor. Please file an issue at "
                           "https://github.com/pytorch/pytorch/issues if you need this feature.")


class VmapMode(Mode):
    def __init__(self, level, batch_size, randomness):
        self.level = level
        self.batch_size = batch_size
        self.randomness = randomness

    def __ember_dispatch__(self, op, args, kwargs):
        lvl = self.level
        found = False
        for a in args:
            if type(a) is BatchedTensor and a._level == lvl:
                found = True
                break
            if isinstance(a, (list, tuple)) and any(
                    type(x) is BatchedTensor and x._level == lvl for x in a):
                found = True
                break
        out = kwargs.get("out") if kwargs else None
        if out is not None and not found:
            outs = out if isinstance(out, (list, tuple)) else (out,)
            found = any(is_batched(o, lvl) for o in outs)
        if _is_random(op):
            if self.randomness == "error":
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
            if not found:
                if self.randomness == "different" and not op.is_inplace:
                    return self._fallback(op, args, {}, force=True)
                return op(*args, **kwargs)
        if not found:
            return op(*args, **kwargs)
        if out is not None:
            res = self.handle(op, args)
            outs = out if isinstance(out, (list, tuple)) else (out,)
            ress = res if isinstance(res, (list, tuple)) else (res,)
            with self:
                for o, r in zip(outs, ress):
                    if tuple(o.shape) != tuple(r.shape):
                        o.resize_(r.shape)
                    o.copy_(r)
            return out
        return self.handle(op, args)

    def handle(self, op, args):
        if op.is_inplace:
            return self._inplace(op, args)
        _refuse_dynamic_shape(op, args, self.level)
        rule = op.batch_rule
        if rule is not None:
            vals, bdims = self._unwrap(args)
            if not (_is_random(op) and self.randomness == "same"):
                r = rule(op, vals, bdims, self.batch_size)
                if r is not NotImplemented:
                    RULE_COUNTS[op.name] += 1
                    return self._wrap_result(op, r)
        if op.composite is not None and not _is_random(op) and \
                not _touches_data(op.composite):
            DECOMPOSED_COUNTS[op.name] += 1
            with self:
                return op.composite(*args)
        return self._fallback(op, args, {})

    # ---- helpers
    def _unwrap(self, args):
        lvl = self.level
        vals, bdims = [], []
        for a in args:
            if type(a) is BatchedTensor and a._level == lvl:
                vals.append(a._value)
                bdims.append(a._bdim)
            elif isinstance(a, (list, tuple)) and any(is_batched(x, lvl) for x in a):
                vals.append([x._value if is_batched(x, lvl) else x for x in a])
                bdims.append([x._bdim if is_batched(x, lvl) else None for x in a])
            else:
                vals.append(a)
                bdims.append(None)
        return vals, bdims

    def _wrap_result(self, op, r):
        res, bd = r
        lvl = self.level
        if isinstance(res, (list, tuple)):
            bds = bd if isinstance(bd, (list, tuple)) else [bd] * len(res)
            items = [_wrap(x, b, lvl) if b is not None else x for x, b in zip(res, bds)]
            if op.returns_list:
                return items
            if op.num_outputs > 1:
                from ember.return_types import wrap_returns
                return wrap_returns(op, tuple(items))
            return type(res)(items)
        return _wrap(res, bd, lvl) if bd is not None else res

    def _fallback(self, op, args, kwargs, force=False):
        """Run ``op`` once per batch entry and stack the results along dim 0."""
        FALLBACK_COUNTS[op.name] += 1
        lvl, B = self.level, self.batch_size
        same = _is_random(op) and self.randomness == "same"
        if same:
            import ember.random as _r
            rng0 = _r.get_rng_state()
        results = []
        for b in range(B):
            if same:
                _r.set_rng_state(rng0)
            ab = []
            for a in args:
                if is_batched(a, lvl):
                    ab.append(a._value.select(a._bdim, b))
                elif isinstance(a, (list, tuple)) and any(is_batched(x, lvl) for x in a):
                    ab.append([x._value.select(x._bdim, b) if is_batched(x, lvl) else x
                               for x in a])
                else:
                    ab.append(a)
            results.append(op(*ab, **kwargs))
        import ember
        first = results[0] if results else None
        if isinstance(first, (list, tuple)):
            cols = list(zip(*results))
            items = [_wrap(ember.stack(list(c)), 0, lvl) if isinstance(c[0], Tensor)
                     else c[0] for c in cols]
            if op.returns_list:
                return items
            if op.num_outputs > 1:
                from ember.return_types import wrap_returns
                return wrap_returns(op, tuple(items))
            return type(first)(items)
        if not isinstance(first, Tensor):
            return first
        return _wrap(ember.stack(results), 0, lvl)

    def _inplace(self, op, args):
        lvl = self.level
        self_t = args[0]
        if not is_batched(self_t, lvl):
            name = "inplace arithmetic"
            raise RuntimeError(
                f"vmap: {name}(self, *extra_args) is not possible because there exists a "
                f"Tensor `other` in extra_args that has more elements than `self`. This "
                f"happened due to `other` being vmapped over but `self` not being vmapped "
                f"over in a vmap. Please try to use out-of-place operators instead of {name}. "
                f"If said operator is being called inside the PyTorch framework, please file "
                f"a bug report instead.")
        if op.functional.name == "copy":
            res = args[1]
        else:
            res = self.handle(op.functional, args)
        if not isinstance(res, Tensor):
            raise RuntimeError(f"vmap: in-place {op.public_name} is not supported")
        # write res (logical) into self's value at its bdim, one level down
        dst = self_t._value.movedim(self_t._bdim, 0)
        if is_batched(res, lvl):
            src = res._value.movedim(res._bdim, 0)
        else:
            src = res
        dst.copy_(src)
        return self_t


# ------------------------------------------------------------------------- indexing

_NO_VALUE = object()


def batched_index(self, index, value=_NO_VALUE):
    """``self[index]`` (or ``self[index] = value``) when an entry of ``index`` is a
    BatchedTensor: indexing reads index tensors' data before dispatching, which a wrapper does
    not hold, so the outermost level among ``self``, the entries and ``value`` is looped over
    here (per-sample indexing, results stacked at that level). NotImplemented when no entry is
    batched (the ordinary path handles a batched ``self``)."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(type(x) is BatchedTensor for x in items):
        return NotImplemented
    for x in items:
        if type(x) is BatchedTensor and x.dtype.name == "bool":
            raise RuntimeError("vmap: We do not support batching operators that can support "
                               "dynamic shape. Attempting to batch over indexing with a "
                               "boolean mask.")
    setting = value is not _NO_VALUE
    batched = [x for x in items + (self, value) if type(x) is BatchedTensor]
    lvl = max(x._level for x in batched)
    if setting and not is_batched(self, lvl):
        raise RuntimeError(
            "vmap: index_put_(self, *extra_args) is not possible because there exists a "
            "Tensor `other` in extra_args that has more elements than `self`. This happened "
            "due to `other` being vmapped over but `self` not being vmapped over in a vmap. "
            "Please try to use out-of-place operators instead of index_put_. If said operator "
            "is being called inside the PyTorch framework, please file a bug report instead.")
    first = next(x for x in batched if x._level == lvl)
    size = first._value.shape[first._bdim]

    def pick(a, b):
        return a._value.select(a._bdim, b) if is_batched(a, lvl) else a

    results = []
    for b in range(size):
        idx = tuple(pick(x, b) for x in items)
        idx = idx if isinstance(index, tuple) else idx[0]
        if setting:
            pick(self, b)[idx] = pick(value, b)
        else:
            results.append(pick(self, b)[idx])
    if setting:
        return None
    import ember
    return _wrap(ember.stack(results), 0, lvl)


# ------------------------------------------------------------------------- pytrees
# Inputs and outputs are pytrees (ember.utils._pytree): registered containers, namedtuples,
# dataclasses registered with register_dataclass... in_dims/out_dims are prefixes of them.

def _fn_name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_fn_name(func.func)}, ...)"
    return getattr(func, "__name__", None) or repr(func)


def _input_dims(func, in_dims, args):
    """(leaves of ``args``, their in_dims, args spec); torch's ValueErrors on mismatch."""
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_fn_name(func)})(<inputs>): got no inputs. Maybe you forgot "
                         f"to add inputs, or you are trying to vmap over a function with no "
                         f"inputs. The latter is unsupported.")
    leaves, spec = tree_flatten(args)
    dims = [in_dims] * len(leaves) if isinstance(in_dims, int) else \
        _broadcast_to_and_flatten(in_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_structure(in_dims)} but inputs has structure {spec}.")
    for x, d in zip(leaves, dims):
        if d is None:
            continue
        where = f"vmap({_fn_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d}"
        if not isinstance(d, int):
            raise ValueError(f"{where} for an input but in_dim must be either an integer "
                             f"dimension or None.")
        if not isinstance(x, Tensor):
            raise ValueError(f"{where} for an input but the input is of type {type(x)}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the "
                             f"respective in_dim")
        nd = x.dim()
        if not -nd <= d < nd:
            raise ValueError(f"{where} for some input, but that input is a Tensor of "
                             f"dimensionality {nd} so expected in_dim to satisfy -{nd} <= "
                             f"in_dim < {nd}.")
        if isinstance(d, bool):         # torch fails reading the batch size
            raise TypeError("size(): argument 'dim' (position 1) must be int, not bool")
    return leaves, dims, spec


def _output_dims(func, out_dims, spec):
    """out_dims broadcast over the output spec; torch's ValueErrors on mismatch."""
    if isinstance(out_dims, int) or out_dims is None:
        return [out_dims] * spec.num_leaves
    # a single output is matched as a one-tuple: out_dims=(1,) fits it, out_dims=[1] not
    dims = _broadcast_to_and_flatten(out_dims, treespec_tuple([spec]) if spec.is_leaf()
                                     else spec)
    if dims is None:
        raise ValueError(f"vmap({_fn_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims "
                         f"is not compatible with the structure of `outputs`. out_dims has "
                         f"structure {tree_structure(out_dims)} but outputs has structure "
                         f"{spec}.")
    for d in dims:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_fn_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             f"be an int, None or a python collection of ints representing "
                             f"where in the outputs the vmapped dimension should appear.")
    return dims


# ------------------------------------------------------------------------- vmap

def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Vectorize ``func`` over a batch dimension of its inputs (torch.func.vmap)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                         f"(got {chunk_size})")
    if not callable(func):          # torch 2.13 fails when it calls it
        raise TypeError(f"'{type(func).__name__}' object is not callable")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        leaves, leaf_dims, spec = _input_dims(func, in_dims, args)
        sizes = [x.shape[d] for x, d in zip(leaves, leaf_dims) if d is not None]
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if any(n != sizes[0] for n in sizes):
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        size = sizes[0]
        leaf_dims = [None if d is None else d % leaves[i].dim()
                     for i, d in enumerate(leaf_dims)]
        if chunk_size is None or chunk_size >= size:
            return _vmap_call(func, leaves, leaf_dims, spec, kwargs, size, out_dims,
                              randomness)
        import ember
        chunks = []
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            sub = [x.narrow(d, start, n) if d is not None else x
                   for x, d in zip(leaves, leaf_dims)]
            chunks.append(_vmap_call(func, sub, leaf_dims, spec, kwargs, n, out_dims,
                                     randomness))
        o_leaves0, o_spec = tree_flatten(chunks[0])
        o_dims = _output_dims(func, out_dims, o_spec)
        cols = [tree_flatten(c)[0] for c in chunks]
        merged = []
        for i, (d, x0) in enumerate(zip(o_dims, o_leaves0)):
            if d is None:
                merged.append(x0)
            else:
                merged.append(ember.cat([c[i] for c in cols], dim=d))
        return tree_unflatten(merged, o_spec)

    return wrapped


def _vmap_call(func, leaves, leaf_dims, spec, kwargs, size, out_dims, randomness):
    _level_counter[0] += 1
    level = _level_counter[0]
    mode = VmapMode(level, size, randomness)
    wrapped = [_wrap(x, d, level) if d is not None else x
               for x, d in zip(leaves, leaf_dims)]
    args = tree_unflatten(wrapped, spec)
    try:
        with mode:
            out = func(*args, **kwargs)
    finally:
        _level_counter[0] -= 1
    return _unwrap_outputs(func, out, out_dims, level, size)


def _unwrap_outputs(func, out, out_dims, level, size):
    o_leaves, o_spec = tree_flatten(out)
    o_dims = _output_dims(func, out_dims, o_spec)
    res = []
    for x, d in zip(o_leaves, o_dims):
        if not isinstance(x, Tensor):
            if d is None:
                res.append(x)
                continue
            name = _fn_name(func)
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(x)}. Did you mean to set out_dims= to None for output?")
        if is_batched(x, level):
            v, bd = x._value, x._bdim
            if d is None:
                raise ValueError("vmap: can not return a BatchedTensor when out_dim is None")
            nd = v.dim()
            dd = d % nd
            res.append(v.movedim(bd, dd) if bd != dd else v)
        else:
            if d is None:
                res.append(x)
                continue
            nd = x.dim() + 1
            dd = d % nd
            res.append(x.unsqueeze(dd).expand(*[size if i == dd else -1
                                                for i in range(nd)]))
    return tree_unflatten(res, o_spec)
