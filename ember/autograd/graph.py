"""The autograd graph: nodes (``grad_fn``), edges, saved tensors, views and in-place.

Note [edges]: an edge is ``(node, output_nr)``. A tensor's edge is its ``grad_fn`` and
``output_nr``, or its ``AccumulateGrad`` node when it is a leaf that requires grad, or
``(None, 0)`` when it needs no gradient.

Note [view + in-place]: a view remembers the op that made it (``_view_info``); an in-place
op on a view makes the base's history a ``CopySlices`` node (the base's old history for
the untouched part, the op's node for the written part), and the view's ``grad_fn`` is
regenerated from the base. Other views of the same base regenerate lazily: each view
records the base's history generation (``view_gen``) it was built at, and any in-place op
on the base or on one of its views starts a new generation. A view of a leaf also keeps the
version its ``grad_fn`` was made at (``_view_info[3]``): once the memory changed (an
in-place op under no_grad) its ``grad_fn`` is regenerated, as torch's AsStridedBackward0. Views whose history must not
be replayed carry a ``creation_meta``: views made in no_grad mode of a tensor requiring
grad, and views returned by a custom Function; in-place on them with grad mode on, or a
regeneration they would need, raises torch's errors (``check_inplace``, ``_refresh_view``).

Note [saved tensor hooks] is below, with ``saved_tensors_hooks``.
"""
from __future__ import annotations

import contextlib
import itertools
import re
import threading
import weakref
from typing import NamedTuple

import numpy as np

from ember._state import state, rare as _rare, count_rare
from ember._meta_tensor import Placeholder, placeholder
from ember._tensor import Tensor, _make


class AutogradMeta:
    """Rarely used per-tensor autograd fields, allocated on first use."""
    __slots__ = ("grad", "grad_acc", "acc_edge", "retains_grad", "hooks", "detached",
                 "view_gen", "name", "post_acc_hooks", "fw_grad", "creation_meta", "inference")

    def __init__(self):
        self.grad = None
        self.grad_acc = None
        self.acc_edge = None        # (grad_acc, 0), made once with it (Note [edges])
        self.retains_grad = False
        self.hooks = None
        self.detached = False
        self.view_gen = 0
        self.name = None
        self.post_acc_hooks = None
        self.fw_grad = None
        self.creation_meta = None   # why in-place on this view is forbidden (check_inplace)
        self.inference = False      # Note [inference tensors]


class RemovableHandle:
    """Returned by ``register_hook``: ``handle.remove()`` unregisters it."""
    _next_id = 0

    def __init__(self, container):
        self._container = weakref.ref(container) if not isinstance(container, list) else \
            (lambda c=container: c)
        RemovableHandle._next_id += 1
        self.id = RemovableHandle._next_id

    def remove(self):
        c = self._container()
        if c is None:
            return
        if isinstance(c, dict):
            c.pop(self.id, None)
        else:
            for i, (hid, _) in enumerate(c):
                if hid == self.id:
                    del c[i]
                    break

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


_next_seq = itertools.count(1).__next__     # creation order (the engine runs newest first)


class Node:
    """Base of every ``grad_fn``: edges to the next nodes and hooks.

    Only the fields every node sets are slots; the rarely used ones are class defaults
    (None) until set, which puts them in the instance's ``__dict__`` (made on first use)."""
    __slots__ = ("next_functions", "_seq", "__weakref__", "__dict__")
    _pre_hooks = None
    _hooks = None
    _tensor_hooks = None    # output_nr -> list of (id, hook)
    _retain_hooks = None    # output_nr -> tensor (weak) retaining grad
    _metadata = None
    _anomaly_trace = None

    def __init__(self, next_functions=()):
        self.next_functions = next_functions
        self._seq = _next_seq()
        if _rare[0] and state.anomaly:
            self._anomaly_trace = _anomaly_stack()

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    def _sequence_nr(self):
        return self._seq

    @property
    def metadata(self):
        """A dict for user data attached to this node."""
        m = self._metadata
        if m is None:
            m = self._metadata = {}
        return m

    def apply(self, grads):
        raise NotImplementedError

    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node computed its gradients."""
        if self._hooks is None:
            self._hooks = []
        h = RemovableHandle(self._hooks)
        self._hooks.append((h.id, fn))
        return h

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; may return replacement grads."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        h = RemovableHandle(self._pre_hooks)
        self._pre_hooks.append((h.id, fn))
        return h

    def _register_tensor_hook(self, output_nr, fn):
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        lst = self._tensor_hooks.setdefault(output_nr, [])
        h = RemovableHandle(lst)
        lst.append((h.id, fn))
        return h

    @property
    def _num_outputs(self):
        return 1

    def __call__(self, *grads):
        return self.apply(list(grads))


def _anomaly_stack():
    """The forward traceback of the node being created, without ember's own frames; under
    ``python -m ember.run`` from the script's frame on (runpy's and the launcher's left out,
    as a plain ``python script.py`` shows it)."""
    import os
    import traceback
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stack = traceback.extract_stack()
    launcher = os.path.join(root, "run.py")
    starts = [i for i, f in enumerate(stack) if f.filename == launcher]
    if starts:
        stack = stack[starts[-1] + 1:]
        while stack and "runpy" in stack[0].filename:
            stack = stack[1:]
    frames = [f for f in stack
              if not (f.filename.startswith(root + os.sep) or f.filename.startswith("<ember"))]
    return "".join(traceback.format_list(frames))


class OpNode(Node):
    """The ``grad_fn`` of an op record's output: calls the record's backward rule.

    ``args`` is None once the saved values are freed (``release``). Each op has its own
    node classes (named as torch names the node), made by ``node_class``: over
    ``SavingOpNode`` when the op saves tensors, else over this class, whose nodes keep the
    empty ``saved_versions`` and ``result`` of the class (two stores fewer per node).
    ``metas``: ``(shape, dtype)`` per input edge; ``out_metas``: per output its ``(shape,
    dtype)`` (None for a non-differentiable one), or None for a node of one output, whose
    meta nothing reads (the zeros of a missing gradient are made only for several)."""
    __slots__ = ("args", "metas")
    op = None               # the op record: a class attribute of each op's node class
    out_metas = None        # set (in the instance's __dict__) by nodes of several outputs
    saved_versions = ()     # (tensor, version) per saved tensor (SavingOpNode)
    result = None           # the saved outputs (SavingOpNode)
    _result = None          # (SavingOpNode: what ``result`` reads, Note [saved outputs])
    _needs = None           # needs_input_grad, computed on first use
    packed = False          # holds values packed by saved-tensor hooks
    all_edges = None        # Note [node inputs]: edges including dropped ones

    @property
    def released(self):
        return self.args is None

    def name(self):
        n = type(self).__name__        # the op's grad_name, or its overload's (Note [node inputs])
        return "torch::autograd::" + n if n == "CopyBackwards" else n    # torch's C++ node

    @property
    def _num_outputs(self):
        om = self.out_metas
        return 1 if om is None else len(om)

    @property
    def needs_input_grad(self):
        """Per positional argument: does it need a gradient (tuples for Tensor lists)."""
        if self._needs is None:
            needs = [False] * len(self.op.argnames)
            edges = self.all_edges or self.next_functions
            k = 0
            for i, is_list, _ in self.op.tensor_args:
                if is_list:
                    n = self._list_lens.get(i, 0)
                    needs[i] = tuple(edges[k + j][0] is not None for j in range(n))
                    k += n
                else:
                    needs[i] = edges[k][0] is not None
                    k += 1
            self._needs = tuple(needs)
        return self._needs

    @property
    def _list_lens(self):
        return self.__dict__.setdefault("_ll", {})

    @property
    def shapes(self):
        """Per positional argument: its shape (a list of shapes for a Tensor list)."""
        return self._per_arg(0)

    @property
    def dtypes(self):
        return self._per_arg(1)

    def _per_arg(self, field):
        out = [None] * len(self.op.argnames)
        k = 0
        for i, is_list, _ in self.op.tensor_args:
            if is_list:
                n = self._list_lens.get(i, 0)
                out[i] = [self.metas[k + j][field] for j in range(n)]
                k += n
            else:
                out[i] = self.metas[k][field]
                k += 1
        return out

    def __dir__(self):
        """Lists the ``_saved_<argname>`` attributes (graph printers walk them)."""
        op = self.op
        tensors = {i for i, _, _ in op.tensor_args}
        saved = [f"_saved_{n}" for i, n in enumerate(op.argnames)
                 if i in op.saved_args or i not in tensors]
        saved += [f"_raw_saved_{n}" for i, n in enumerate(op.argnames)
                  if i in op.saved_args and i in tensors and
                  not any(i == j and is_list for j, is_list, _ in op.tensor_args)]
        if op.saves_result:
            saved.append("_saved_result")
            if self.out_metas is None:
                saved.append("_raw_saved_result")
        return sorted(set(super().__dir__()) | set(saved))

    def __getattr__(self, name):
        # torch exposes saved values as ``grad_fn._saved_<argname>``
        if name.startswith("_saved_"):
            arg = name[7:]
            op = self.op
            if arg == "result" and op.saves_result:
                self._check_released()
                return self.result if not isinstance(self.result, _Packed) else \
                    self.result.unpack()
            if arg.endswith("_sym_sizes") and arg[:-10] in op.argnames:
                # the shape of a tensor argument (torch saves it for e.g. sum, expand)
                i = op.argnames.index(arg[:-10])
                k = 0
                for j, is_list, _ in op.tensor_args:
                    if j == i and not is_list:
                        return tuple(self.metas[k][0])
                    k += self._list_lens.get(j, 0) if is_list else 1
            if arg in op.argnames:
                i = op.argnames.index(arg)
                if i in op.saved_args or not any(i == j for j, _, _ in op.tensor_args):
                    self._check_released()
                    needs = op.saved_needs.get(i)     # saved only for others' gradients,
                    if needs is not None and not any(  # none of which is needed: torch's None
                            isinstance(self.args[j], _Packed) or
                            isinstance(self.args[j], Tensor) and self.args[j]._requires_grad
                            for j in needs):
                        return None
                    v = self.args[i]
                    v = v.unpack() if isinstance(v, _Packed) else v
                    if (type(self).__name__, arg) in _NUMBERS_AS_TENSORS and \
                            isinstance(v, (bool, int, float, complex)):
                        return _number_tensor(v)
                    a = op.schema.args[i]
                    if a.type in ("int", "SymInt") and v is not None:   # (squeeze(0): int)
                        return _saved_ints(v, a.is_list and type(self).__name__ !=
                                           "SqueezeBackward1")
                    return v
        if name.startswith("_raw_saved_"):
            raw = self._lookup_raw(name[11:])
            if raw is not None:
                return raw
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _lookup_raw(self, arg):
        """``grad_fn._raw_saved_<arg>``: the SavedTensor of a saved tensor argument (or of
        the saved output, ``result``), one object per node and name; None when not saved."""
        op = self.op
        if arg == "result":
            if not op.saves_result or self.out_metas is not None:
                return None
            i = -1
        else:
            if arg not in op.argnames:
                return None
            i = op.argnames.index(arg)
            if i not in op.saved_args or not any(i == j and not is_list
                                                 for j, is_list, _ in op.tensor_args):
                return None
        cache = self.__dict__.setdefault("_raw", {})
        st = cache.get(i)
        if st is None:
            st = cache[i] = SavedTensor(self, i)
        return st

    def _check_released(self):
        if self.args is None:
            raise RuntimeError(_FREED_MSG)

    def _checked_args(self):
        args = self.args
        if args is None:
            raise RuntimeError(_FREED_MSG)
        for t, v in self.saved_versions:
            b = t._storage_base         # (t._version, without its inference check)
            if (t if b is None else b)._vc != v:
                is_out = type(t) is _OutputRef
                if is_out:
                    t = t.tensor(self)
                raise RuntimeError(_version_msg(t, v, self if is_out else None))
        return args

    def apply(self, grads):
        """grads: one per output (None where no gradient flowed); returns one per edge."""
        args = self._checked_args()
        op = self.op
        om = self.out_metas
        if om is None or len(grads) == 1 and len(om) == 1:
            g = grads[0]
            if g is None:
                return [None] * len(self.next_functions)
        else:
            if all(g is None for g in grads):
                return [None] * len(self.next_functions)
            g = tuple(grads) if getattr(op, "none_grads", False) else \
                tuple(x if x is not None or m is None else _zeros(m) for x, m in zip(grads, om))
        if self.packed:
            # Note [saved tensor hooks]: unpack once per backward call
            args = tuple(a.unpack() if isinstance(a, _Packed) else a for a in args)
            packed_result = self.result
            if isinstance(packed_result, _Packed):
                self.result = packed_result.unpack()
            elif isinstance(packed_result, tuple):
                self.result = tuple(r.unpack() if isinstance(r, _Packed) else r
                                    for r in packed_result)
            try:
                res = op.backward(self, g, *args)
            finally:
                self.result = packed_result
        else:
            res = op.backward(self, g, *args)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        return self._flatten(res)

    def _flatten(self, res):
        """Map per-argument gradients to per-edge ones, reduced to each input's shape."""
        out = []
        k = 0
        metas = self.metas
        nf = self.all_edges or self.next_functions
        for i, is_list, _ in self.op.tensor_args:
            g = res[i] if i < len(res) else None
            if is_list:
                n = self._list_lens.get(i, 0)
                gs = g if g is not None else [None] * n
                for j in range(n):
                    out.append(_fit(gs[j], metas[k + j], self, k + j)
                               if nf[k + j][0] is not None else None)
                k += n
            else:
                out.append(_fit(g, metas[k], self, k) if nf[k][0] is not None else None)
                k += 1
        if self.all_edges is not None:            # Note [node inputs]
            out = [g for g, e in zip(out, nf) if e is not _NOT_AN_INPUT]
        return out

    def release(self):
        if self.saved_versions or self._result is not None or self.op.saved_args:
            self.args = None
            self._result = None
            self.saved_versions = ()


class SavingOpNode(OpNode):
    """The base of the node classes of ops that save tensors or outputs (``saves=``).
    ``result``: the outputs the backward reads (Note [saved outputs]), None when released."""
    __slots__ = ("saved_versions", "_result")

    @property
    def result(self):
        r = self._result
        if type(r) is _SavedOutputs:
            return r.tensors(self)
        return r

    @result.setter
    def result(self, value):
        self._result = value


# Note [saved outputs]: an op whose backward reads its own output (tanh, softmax, the
# attention probabilities) saves it on its node, and the output's ``grad_fn`` is that node:
# a reference cycle, freed only by Python's cycle collector. A graph that never runs
# backward (a validation loss computed with grad on) then kept every activation alive until
# a collection, and the next steps' arrays landed on fresh pages (GPT forward: RSS +70 MiB
# over 10 passes). As torch's saved outputs, the node holds the output weakly, with its
# array: while the output lives the backward gets that very tensor; once it is gone, a new
# tensor on the saved array whose ``grad_fn`` is the node (nothing can have changed it in
# place then: a view of it would have kept it alive, and its base's version is kept).

# torch saves a number operand of these as a 0-d tensor (int64, float64, bool or complex128 by
# the number's type); other ops' number arguments (pow's exponent, clamp's bounds) stay numbers
_NUMBERS_AS_TENSORS = {("MulBackward0", "self"), ("MulBackward0", "other"),
                       ("DivBackward0", "other"), ("DivBackward2", "other")}


def _number_tensor(v):
    from ember import _dtype
    dt = _dtype.bool if isinstance(v, bool) else _dtype.int64 if isinstance(v, int) else \
        _dtype.float64 if isinstance(v, float) else _dtype.complex128
    return _make(np.asarray(v, dt.np))


class _OutputRef:
    """One saved output held weakly (Note [saved outputs]); stands in for the output in
    ``saved_versions`` (``_storage_base``, ``_vc``)."""
    __slots__ = ("ref", "data", "nr", "diff", "_storage_base", "version")

    def __init__(self, o, nr, version):
        self.ref = weakref.ref(o)
        self.data = o._data
        self.nr = nr
        self.diff = o._grad_fn is not None
        self._storage_base = o._storage_base
        self.version = version

    @property
    def _vc(self):
        o = self.ref()
        return self.version if o is None else o._vc

    def tensor(self, node):
        o = self.ref()
        if o is not None:
            return o
        t = _make(self.data)
        if self.diff:
            t._requires_grad = True
            t._grad_fn = node
            t._output_nr = self.nr
        return t


class _SavedOutputs:
    """A node's saved outputs: one ``_OutputRef`` (or None, an output not kept) per output."""
    __slots__ = ("refs", "single")

    def __init__(self, refs, single):
        self.refs = refs
        self.single = single

    def tensors(self, node):
        if self.single:
            return self.refs[0].tensor(node)
        return tuple(None if r is None else r.tensor(node) for r in self.refs)


_FREED_MSG = ("Trying to backward through the graph a second time (or directly access saved "
              "tensors after they have already been freed). Saved intermediate values of the "
              "graph are freed when you call .backward() or autograd.grad(). Specify "
              "retain_graph=True if you need to backward through the graph a second time or "
              "if you need to access saved tensors after calling backward.")

_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "complex64": "ComplexFloatTensor",
               "complex128": "ComplexDoubleTensor", "int64": "LongTensor",
               "int32": "IntTensor", "int16": "ShortTensor", "int8": "CharTensor",
               "uint8": "ByteTensor", "bool": "BoolTensor"}


def _type_str(t):
    name = t.dtype.name
    return "torch." + _TYPE_NAMES.get(name, name + "Tensor")


def _short_name(node):
    """torch names the producing op without its ``Backward<N>`` suffix in version errors."""
    return re.sub(r"Backward\d*$", "", node.name())


def _version_msg(t, expected, owner=None):
    """torch's message for a saved tensor modified in place. ``owner``: the node that saved
    ``t`` as its own output (named instead of ``t``'s current grad_fn)."""
    fn = owner if owner is not None else t._grad_fn
    which = f", which is output {t._output_nr} of {_short_name(fn)}," if fn is not None else ""
    if owner is None and fn is not None and t._view_info is not None:
        # its memory changed since its grad_fn was made: torch regenerates a view's grad_fn
        # as one as_strided of its base (a multi-output view's refuses, with its own text)
        cm = t._meta.creation_meta if t._meta is not None else None
        if cm is not None and cm[0] == "multi_output":
            return _MULTI_OUTPUT_MSG.format(t._output_nr, _short_name(fn), _STALE)
        which = ", which is output 0 of AsStrided,"
    if state.anomaly:
        hint = (" Hint: the backtrace further above shows the operation that failed to compute "
                "its gradient. The variable in question was changed in there or anywhere "
                "later. Good luck!")
    else:
        hint = (" Hint: enable anomaly detection to find the operation that failed to compute "
                "its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
    return (f"one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: [{_type_str(t)} {list(t.shape)}]{which} is at version "
            f"{t._version}; expected version {expected} instead.{hint}")


def _zeros(meta):
    shape, dt = meta
    return _make(np.zeros(shape, dt))


def _expandable(shape, to):
    """Can ``shape`` be broadcast to ``to``?"""
    if len(shape) > len(to):
        return False
    for s, t in zip(reversed(shape), reversed(to)):
        if s != t and s != 1:
            return False
    return True


def _fit(g, meta, node=None, index=0):
    """Note [grad shapes]: reduce a broadcast gradient to the input's shape and dtype."""
    if g is None:
        return None
    if not isinstance(g, Tensor):
        name = node.name() if node is not None else "backward"
        raise TypeError(f"{name} returned {type(g).__name__} as the gradient at index {index}, "
                        f"expected a Tensor or None")
    shape, dt = meta
    gs = g._data.shape
    if gs != shape:
        if not _expandable(shape, gs):
            name = node.name() if node is not None else "backward"
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {index} "
                               f"- got {list(gs)} but expected shape compatible with "
                               f"{list(shape)}")
        from ember._ops.core import sum_to_size
        g = sum_to_size(g, shape)
    if g._data.dtype != dt:
        if g._data.dtype.kind == "c" and dt.kind != "c":
            from ember._ops.core import real
            g = real(g)
        g = g.to(_dt(dt))
    return g


def _dt(np_dtype):
    from ember._dtype import _BY_NP
    return _BY_NP[np_dtype]


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``. Like torch's, it holds
    its leaf (``grad_fn.next_functions[0][0].variable`` is the leaf itself)."""
    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__(())
        self._seq = float("inf")    # like torch: runs as soon as it is ready
        self.variable = variable

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def apply(self, grads, steal=False):
        g = grads[0]
        t = self.variable
        if t is None or g is None:
            return []
        accumulate_into_grad(t, g, steal)
        m = t._meta
        if m.post_acc_hooks:
            for _, h in list(m.post_acc_hooks):
                r = h(t)
                if r is not None and not isinstance(r, Tensor):
                    raise TypeError(f"expected Variable, but hook returned "
                                    f"'{type(r).__name__}'")
                if r is not None:
                    raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        return []


def accumulate_into_grad(t, g, steal=False):
    """``t.grad += g`` with torch's rules: the first gradient is copied (kept differentiable
    under create_graph), later ones are added in place unless a graph is being built.

    ``steal``: the engine proved nothing else refers to ``g`` or its memory (Note [gradient
    stealing] in engine.py); the first gradient then becomes ``.grad`` without a copy."""
    m = t._autograd_meta()
    old = m.grad
    if type(g) is not Tensor and getattr(g, "_masked_mask", None) is not None:
        m.grad = g if old is None else old + g      # a MaskedTensor's: kept as it flowed
        return
    if hasattr(g._data, "layout") or hasattr(getattr(old, "_data", None), "layout"):
        m.grad = _sparse_sum(old, g)        # a sparse gradient (ember/_ops/sparse.py)
        return
    if g._data.shape != t._data.shape:
        from ember._ops.core import sum_to_size
        g = sum_to_size(g, t._data.shape)
    if state.grad_enabled:        # create_graph: keep the graph of the gradient
        if g._data.dtype != t._data.dtype:
            g = g.to(t.dtype)
        if old is not None:
            m.grad = old + g
        elif type(g._data) is Placeholder or type(t._data) is Placeholder:
            m.grad = g.clone()
        elif _dense_strides(t._data) is None:     # torch: a contiguous clone
            from ember import contiguous_format
            m.grad = g.clone(memory_format=contiguous_format)
        else:                     # a copy (CopyBackwards) with the leaf's strides
            m.grad = _make(_grad_buffer(t._data)).copy_(g)
    elif old is None:
        arr = g._data
        if type(arr) is Placeholder or type(t._data) is Placeholder:    # meta: no data
            m.grad = _make(placeholder(t._data.shape, t._data.dtype))
        elif steal and arr.dtype == t._data.dtype and arr.flags.writeable and \
                (arr.strides == t._data.strides and arr.flags.c_contiguous or
                 _obeys_layout(arr, t._data)):
            m.grad = _make(arr)     # same shape, dtype and layout as the parameter
        else:
            buf = _grad_buffer(t._data)
            np.copyto(buf, arr, casting="unsafe")
            m.grad = _make(buf)
    elif old._requires_grad or not old._data.flags.writeable:
        m.grad = old.detach() + g
    else:
        np.add(old._data, g._data, out=old._data, casting="unsafe")
        bump_version(old)


def _dense_strides(p):
    """``p``'s byte strides when it is non-overlapping and dense (its elements fill one
    block, in some order of dims), else None."""
    expect = p.itemsize
    for st, n in sorted((st, n) for n, st in zip(p.shape, p.strides) if n != 1):
        if st != expect:
            return None
        expect *= n
    return p.strides


def _obeys_layout(arr, p):
    """torch's gradient layout contract: a gradient with the strides of a non-overlapping
    and dense parameter (sizes 1 aside), else a C-contiguous one, may be ``.grad``."""
    want = _dense_strides(p)
    if want is None:
        return arr.flags.c_contiguous
    return all(n == 1 or a == b for n, a, b in zip(p.shape, arr.strides, want))


def _grad_buffer(p):
    """An uninitialized array for ``p``'s gradient: ``p``'s own strides when it is
    non-overlapping and dense (transposed, channels-last...), else C-contiguous."""
    want = _dense_strides(p)
    if want is None or p.flags.c_contiguous and p.strides == \
            np.empty(p.shape, p.dtype).strides:
        return np.empty(p.shape, p.dtype)
    flat = np.empty(p.size, p.dtype)
    return np.ndarray(p.shape, p.dtype, flat, 0, want)


def _sparse_sum(old, g):
    """``old + g`` where either is sparse: sparse + sparse stays sparse, else dense."""
    if old is None:
        return g.clone() if state.grad_enabled else g
    return g + old if hasattr(old._data, "layout") else old + g


class CopySlices(Node):
    """The base's history after an in-place op (node ``fn``, its output ``fn_nr``) wrote
    into one of its views. As in torch it wraps ``fn``: its edges are the base's old history
    and ``fn``'s edges other than the view's."""
    __slots__ = ("view_info", "base_meta", "mask", "fn", "fn_nr")

    def name(self):
        return "torch::autograd::CopySlices"

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return [None] * len(self.next_functions)
        from ember._ops.core import where_self
        # the written region's gradient goes through fn (its part for the view's old value
        # back into that region); the rest flows to the base's old history unchanged
        fn_grads = [None] * self.fn._num_outputs
        fn_grads[self.fn_nr] = replay_view(self.view_info, g)
        out = list(self.fn.apply(fn_grads))
        gb = where_self(self.mask, _make(np.zeros((), g._data.dtype)), g)
        if out[0] is not None:
            z = _make(np.zeros(g._data.shape, g._data.dtype))
            replay_view(self.view_info, z).copy_(out[0])
            gb = gb + z
        return [gb] + out[1:]

    def release(self):
        rel = getattr(self.fn, "release", None)
        if rel is not None:
            rel()


class Error(Node):
    """A node that raises when the engine reaches it (``once_differentiable``)."""
    __slots__ = ("msg", "n")

    def name(self):
        return "torch::autograd::Error"

    def __init__(self, msg, n, next_functions=()):
        super().__init__(next_functions)
        self.msg = msg
        self.n = n

    @property
    def _num_outputs(self):
        return self.n

    def apply(self, grads):
        raise RuntimeError(self.msg)


DelayedError = Error


# -------------------------------------------------------------------- saved tensor hooks
# Note [saved tensor hooks]: inside ``saved_tensors_hooks(pack, unpack)`` every tensor an
# op saves for backward is replaced by ``pack(tensor)``; the engine calls ``unpack`` once
# per backward call. Packed tensors skip the version check (the hooks own the value).


class _HookState(threading.local):
    def __init__(self):
        self.stack = []
        self.disabled = None


_hook_state = _HookState()


class _Packed:
    __slots__ = ("obj", "unpack_fn")

    def __init__(self, obj, unpack_fn):
        self.obj = obj
        self.unpack_fn = unpack_fn

    def unpack(self):
        t = self.unpack_fn(self.obj)
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        return t


def _pack(t):
    """``t`` packed by the innermost saved-tensor hooks, or None when none are active."""
    stack = _hook_state.stack
    if not stack:
        return None
    pack, unpack = stack[-1]
    return _packed(t, pack, unpack)


def _packed(t, pack, unpack):
    stack = _hook_state.stack
    _hook_state.stack = []          # ops inside the pack hook are not packed again
    root = t if t._storage_base is None else t._storage_base
    version = root._vc
    try:
        obj = pack(t)
    finally:
        _hook_state.stack = stack
    if root._vc != version:
        raise RuntimeError("A saved tensor pack hook is modifying its input in place. Tensors "
                           "provided as input to pack hook cannot be modified by in-place "
                           "operations as this can lead to unexpected side-effects. Please "
                           "open an issue if you need to perform in-place operations on the "
                           "input to a pack hook.")
    return _Packed(obj, unpack)


def _saved_ints(v, is_list):
    """A saved int (or int list, as a tuple) as torch's ``_saved_<name>`` reads it: an
    unsigned 64-bit value (``sum(x, -1)``'s ``_saved_dim`` is ``(18446744073709551615,)``)."""
    if is_list:
        return tuple(e + 2 ** 64 if e < 0 else e for e in ((v,) if type(v) is int else v))
    return v + 2 ** 64 if type(v) is int and v < 0 else v


class SavedTensor:
    """``grad_fn._raw_saved_<name>``: one saved tensor of a node, whose pack/unpack hooks
    ``register_hooks`` sets (as ``saved_tensors_hooks`` does for every saved tensor)."""
    __slots__ = ("_node", "_index")

    def __init__(self, node, index):
        self._node = node
        self._index = index          # the argument's position, -1 for the saved output

    def __repr__(self):
        return f"<torch._C._autograd.SavedTensor object at {id(self):#x}>"

    def register_hooks(self, *hooks):
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument "
                "types are supported:\n    1. (self: torch._C._autograd.SavedTensor, arg0: "
                "collections.abc.Callable, arg1: collections.abc.Callable) -> None\n\n"
                "Invoked with: " + ", ".join(repr(h) for h in (self,) + hooks))
        node, i = self._node, self._index
        if node.args is None:
            raise RuntimeError("Calling register_hooks on a saved tensor after it has been "
                               "freed. Saved intermediate values of the graph are freed when "
                               "you call .backward() or autograd.grad(). Specify "
                               "retain_graph=True if you need to backward through the graph a "
                               "second time or if you need to access saved variables after "
                               "calling backward.")
        if i < 0:
            if isinstance(node._result, _Packed):
                raise RuntimeError(_HOOKS_SET_MSG)
            value = node.result
        else:
            value = node.args[i]
            if isinstance(value, _Packed):
                raise RuntimeError(_HOOKS_SET_MSG)
            needs = node.op.saved_needs.get(i)       # Note [saved for whom]: torch's None
            if needs is not None and not any(
                    isinstance(node.args[j], _Packed) or
                    isinstance(node.args[j], Tensor) and node.args[j]._requires_grad
                    for j in needs):
                value = None
        if not isinstance(value, Tensor):
            raise RuntimeError("Calling register_hooks on a saved tensor with value None is "
                               "forbidden")
        packed = _packed(value, *hooks)
        # the hooks own the value now: no version check for it (Note [saved tensor hooks])
        kept = list(node.saved_versions)
        for k, (t, _) in enumerate(kept):
            if (t.nr == 0 if type(t) is _OutputRef else t is value and i >= 0):
                del kept[k]
                break
        node.saved_versions = kept
        if i < 0:
            node.result = packed
        else:
            node.args = node.args[:i] + (packed,) + node.args[i + 1:]
        node.packed = True


_HOOKS_SET_MSG = ("Calling register_hooks on a saved tensor whose hooks have already been set. "
                  "Hint: only one pair of hooks is allowed at a time.")


class saved_tensors_hooks:
    """Context manager setting pack/unpack hooks for tensors saved for backward."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _hook_state.disabled is not None:
            raise RuntimeError(_hook_state.disabled)
        _hook_state.stack.append((self.pack_hook, self.unpack_hook))
        count_rare(1)
        return self

    def __exit__(self, *exc):
        _hook_state.stack.pop()
        count_rare(-1)
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU (where ember tensors always are)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t, lambda t: t)


class disable_saved_tensors_hooks:
    """Inside, entering ``saved_tensors_hooks`` raises ``RuntimeError(error_message)``."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = _hook_state.disabled
        _hook_state.disabled = self.error_message
        if _hook_state.stack:
            raise RuntimeError(self.error_message)
        return self

    def __exit__(self, *exc):
        _hook_state.disabled = self.prev
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*a, **k)
        return wrapper


class GradientEdge(NamedTuple):
    """An edge of the graph: the node gradient flows into, and which of its inputs."""
    node: Node
    output_nr: int


def get_gradient_edge(tensor):
    """The ``GradientEdge`` through which gradient flows into ``tensor``."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    node, nr = grad_edge(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor):
    """Bump the version counter of ``tensor`` (or of each tensor of an iterable)."""
    if isinstance(tensor, Tensor):
        tensor = (tensor,)
    for t in tensor:
        bump_version(t)


# -------------------------------------------------------------------- recording

def grad_edge(t):
    """The edge through which gradient flows into tensor ``t``."""
    if t._view_info is not None:
        _refresh_view(t)
    if not t._requires_grad:
        return (None, 0)
    fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    m = t._meta
    if m is None:
        m = t._meta = AutogradMeta()
    elif m.creation_meta is not None and m.creation_meta[0] in _NO_HISTORY:
        return (None, 0)      # a view made in no_grad mode: requires grad, leads nowhere
    edge = m.acc_edge
    if edge is None:
        edge = m.acc_edge = (AccumulateGrad(t), 0)
        m.grad_acc = edge[0]
    return edge


def view_base(t):
    """The tensor whose history view ``t`` replays: the start of its view chain (torch's
    ``t._base``). ``_storage_base`` is the storage root (it owns the version counter), which
    may be a tensor the chain's start only aliases without autograd (``detach()``, ``.data``)."""
    src = t._view_info[1][0]
    while src._view_info is not None:
        src = src._view_info[1][0]
    return src


def is_view_of_leaf(t):
    """Is view ``t``, or the tensor it views, a leaf that requires grad (so in-place on
    ``t`` is forbidden with grad mode on)?"""
    b = view_base(t)
    return (t._requires_grad and t._grad_fn is None) or \
        (b._requires_grad and b._grad_fn is None)


def _refresh_view(t):
    """Note [view + in-place]: a view whose base's history changed since the view's
    grad_fn was made (an in-place op on the base or on another view) regenerates it."""
    tm = t._meta
    cm = tm.creation_meta if tm is not None else None
    if cm is not None and cm[0] != "custom_function":
        # no history to regenerate from: torch forbids using it once its memory changed
        if _counter(t) != cm[1] and t._requires_grad:
            raise _view_error(t, cm, _STALE)
        return
    b = view_base(t)
    if b._grad_fn is None:
        # a view of a leaf whose memory changed since its grad_fn was made (an in-place op
        # under no_grad): torch regenerates it, as one as_strided of the base
        if t._requires_grad and cm is None and _counter(t) != t._view_info[3] and \
                b._requires_grad:
            _regenerate_view_grad_fn(t)
        return
    bm = b._meta
    if (tm.view_gen if tm is not None else 0) != (bm.view_gen if bm is not None else 0):
        if cm is not None:
            raise _view_error(t, cm, _STALE)
        _regenerate_view_grad_fn(t)


def current_grad_fn(t):
    if t._view_info is not None:
        _refresh_view(t)
    return t._grad_fn


def record(op, args, outputs, inplace=False):
    """Create the node of ``op`` applied to ``args`` and attach it to ``outputs``.

    For an in-place op, ``outputs`` is None: the caller rebases argument 0 afterwards."""
    plan = _PLANS.get(op)
    if plan is None:
        plan = _PLANS[op] = _node_plan(op)
    if plan is _PLAIN:
        cls = op.node_class
        if cls is None:
            cls = op.node_class = node_class(op, op.grad_name)
        drop = ()
    else:
        cls, drop = _overload(op, plan, args)
    node = _object_new(cls)
    node._seq = _next_seq()
    rare = _rare[0]         # Note [rare autograd features]
    if rare and state.anomaly:
        node._anomaly_trace = _anomaly_stack()
    edges = []
    metas = []
    saved_versions = []
    saved = op.saved_args
    hooks = _hook_state.stack if saved and rare else None
    stored = list(args)
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        if is_list:
            node._list_lens[i] = len(a)
            for x in a:
                edges.append(grad_edge(x))
                metas.append((x._data.shape, x._data.dtype))
        elif isinstance(a, Tensor):
            # grad_edge(a), inlined for the common cases (Note [edges])
            if a._view_info is not None:
                edges.append(grad_edge(a))
            elif not a._requires_grad:
                edges.append(_NO_EDGE)
            elif a._grad_fn is not None:
                edges.append((a._grad_fn, a._output_nr))
            else:
                edges.append(grad_edge(a))
            arr = a._data
            metas.append((arr.shape, arr.dtype))
            if i in saved and not _read_by_no_grad(op, i, args):
                if inplace and i == 0:
                    a = stored[0] = _snapshot(a)
                p = _pack(a) if hooks else None
                if p is None:
                    saved_versions.append((a, _saved_version(a)))
                else:
                    stored[i] = p
                    node.packed = True
            elif i not in saved:
                stored[i] = None
        else:
            edges.append(_NO_EDGE)
            metas.append(_NUMBER_META)
    if drop:
        _drop_edges(node, op, args, edges, drop)
    else:
        node.next_functions = tuple(edges)
    node.metas = tuple(metas)
    node.args = tuple(stored)
    if saved_versions or isinstance(node, SavingOpNode):
        node.saved_versions = saved_versions
        node._result = None
    if inplace:
        return node
    if len(outputs) == 1:
        o = outputs[0]
        if o._data.dtype.kind in "fcV":
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = 0
        if op.saves_result:
            _save_result(node, outputs)
        return node
    out_metas = []
    k = 0
    for o in outputs:
        arr = o._data
        if arr.dtype.kind in "fcV":
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = k
            out_metas.append((arr.shape, arr.dtype))
        else:
            out_metas.append(None)
        k += 1
    node.out_metas = tuple(out_metas)
    if op.saves_result:
        _save_result(node, outputs)
    return node


# Note [saved for whom]: torch's nodes save an input only for the gradients that read it:
# ``z = y * 2`` keeps no ``y`` (only the gradient of ``2`` would read it), so modifying ``y``
# in place afterwards is no error there. ember's backward rules take every argument, so the
# argument stays referenced, but an op whose ``saved_needs`` says which arguments' gradients
# read a saved one registers no version for it (and makes no snapshot of an in-place
# ``self``) when none of those requires grad: the value its rule then sees may be stale,
# and it only feeds a gradient nobody takes.

def _read_by_no_grad(op, i, args):
    needs = op.saved_needs.get(i)
    if needs is None:
        return False
    for j in needs:
        a = args[j]
        if isinstance(a, Tensor) and a._requires_grad:
            return False
    return True


def make_recorder(op):
    """Note [fast path]: the recorder ``rec(*args, out)`` of an op front's fast block (the
    op's arguments in schema order, then its output), code generated once per op layout:
    ``record(op, args, (out,))`` unrolled over the tensor arguments (Tensors, numbers or
    None there, never lists; the first one a Tensor) with the saved ones known. It takes
    ``record`` itself for what it does not unroll: a node named by its arguments (Note
    [node inputs]), anomaly mode, saved-tensor hooks (Note [rare autograd features] in
    ``ember/_state.py``). Per node it stores only what backward reads: edges, metas, the
    arguments kept, and (ops that save) the saved versions; an input given twice
    (``x * x``) shares its edge and meta."""
    n = len(op.argnames)
    params = ", ".join(f"a{i}" for i in range(n))
    tup = f"({params}{',' if n == 1 else ''})"

    def general(*args):
        return record(op, args[:-1], (args[-1],))

    if not op.differentiable:
        return lambda *args: None
    plan = _node_plan(op)
    named = plan is not _PLAIN and plan[0] is None and not plan[1] and not plan[2]
    if plan is not _PLAIN and not named or any(is_list for _, is_list, _ in op.tensor_args):
        return general
    cls = op.node_class
    if cls is None and not named:
        cls = op.node_class = node_class(op, op.grad_name)
    saves = bool(op.saved_args or op.saves_result)
    lines = [f"def rec({params}, out):",
             "    if _rare[0]:",
             f"        return _record(_op, {tup}, (out,))",
             f"    node = _new(_class_of({tup})[0])" if named else "    node = _new(_cls)",
             "    node._seq = _next_seq()"]
    if op.saved_args:
        lines.append("    sv = []")
    edges, metas = [], []
    stored = [f"a{i}" for i in range(n)]
    first = None
    for i, _, _ in op.tensor_args:
        a = f"a{i}"
        body = [f"if {a}._view_info is not None:",
                f"    e{i} = _grad_edge({a})",
                f"elif not {a}._requires_grad:",
                f"    e{i} = _NO_EDGE",
                f"elif {a}._grad_fn is not None:",
                f"    e{i} = ({a}._grad_fn, {a}._output_nr)",
                "else:                      # a leaf: its AccumulateGrad edge, once made",
                f"    g{i} = {a}._meta",
                f"    e{i} = g{i}.acc_edge if g{i} is not None and g{i}.creation_meta is None "
                "else None",
                f"    if e{i} is None:",
                f"        e{i} = _grad_edge({a})",
                f"d{i} = {a}._data",
                f"m{i} = (d{i}.shape, d{i}.dtype)"]
        if i in op.saved_args:
            check = [f"b{i} = {a}._storage_base",
                     f"r{i} = {a} if b{i} is None else b{i}",
                     f"sv.append(({a}, r{i}._vc if r{i}._meta is None else "
                     f"_saved_version({a})))"]
            needs = op.saved_needs.get(i)
            if needs is not None:           # Note [saved for whom]
                cond = " or ".join(f"(isinstance(a{j}, _Tensor) and a{j}._requires_grad)"
                                   for j in needs)
                check = [f"if {cond}:"] + ["    " + c for c in check]
            body += check
        else:
            stored[i] = "None"
        if first is None:
            lines += ["    " + line for line in body]
            first = i
        else:
            same = [] if i in op.saved_args else [
                f"    if {a} is a{first}:", f"        e{i} = e{first}", f"        m{i} = m{first}",
                f"    elif isinstance({a}, _Tensor):"]
            lines += same or [f"    if isinstance({a}, _Tensor):"]
            lines += ["        " + line for line in body]
            lines += ["    else:", f"        e{i} = _NO_EDGE", f"        m{i} = _NUMBER_META"]
            if i not in op.saved_args:      # a number stays for the backward
                stored[i] = f"(a{i} if m{i} is _NUMBER_META else None)"
        edges.append(f"e{i}")
        metas.append(f"m{i}")
    lines += [f"    node.next_functions = ({', '.join(edges)},)",
              f"    node.metas = ({', '.join(metas)},)",
              f"    node.args = ({', '.join(stored)},)"]
    if saves:
        lines += [f"    node.saved_versions = {'sv' if op.saved_args else '()'}",
                  "    node._result = None"]
    lines += ["    if out._data.dtype.kind in 'fcV':",
              "        out._requires_grad = True",
              "        out._grad_fn = node"]
    if op.saves_result:
        lines += ["    _save_result(node, (out,))"]
    lines += ["    return node"]
    src = "\n".join(lines) + "\n"
    code = _RECORDER_CODE.get(src)
    if code is None:
        code = _RECORDER_CODE[src] = compile(src, "<ember recorder>", "exec")
    env = {"_rare": _rare, "_record": record, "_new": _object_new, "_cls": cls,
           "_next_seq": _next_seq, "_op": op, "_NO_EDGE": _NO_EDGE, "_grad_edge": grad_edge,
           "_saved_version": _saved_version, "_Tensor": Tensor, "_NUMBER_META": _NUMBER_META,
           "_save_result": _save_result,
           "_class_of": lambda args: _overload(op, plan, args)}      # a node named by its args
    exec(code, env)
    return env["rec"]


_RECORDER_CODE: dict = {}
_object_new = object.__new__
_NO_EDGE = (None, 0)
_NUMBER_META = ((), np.dtype(np.float64))


# Note [node inputs]: torch's node has an edge per differentiable input only. Integer or
# bool index, mask and target arguments are none (known by their names), nor is a Python
# number where torch's Python binding takes it through the op's Scalar overload, whose
# node has a name of its own. ``_OVERLOADS``: per op, the node's name when every listed
# argument is a tensor, and per argument position, the overload's name when that argument
# is a number (any listed argument that is then a number or None is no input). Dropped
# edges stay in ``all_edges`` (as ``_NOT_AN_INPUT``) for the node's own bookkeeping.
_OVERLOADS = {
    "pow.Tensor_Tensor": ("PowBackward1", {1: "PowBackward0", 0: "PowBackward2"}),
    "rsub.Tensor": ("RsubBackward0", {1: "RsubBackward1"}),
    "remainder.Tensor": ("RemainderBackward1", {1: "RemainderBackward0"}),
    "fmod.Tensor": ("FmodBackward1", {1: "FmodBackward0"}),
    "xlogy.Tensor": ("XlogyBackward0", {1: "XlogyBackward2", 0: "XlogyBackward1"}),
    "clamp.Tensor": ("ClampBackward0", {1: "ClampBackward1", 2: "ClampBackward1"}),
    "masked_fill.Tensor": ("MaskedFillBackward1", {2: "MaskedFillBackward0"}),
    "lerp.Tensor": ("LerpBackward1", {2: "LerpBackward0"}),
    "copysign.Tensor": ("CopysignBackward0", {1: "CopysignBackward1"}),
    "div.Tensor_mode": ("DivBackward2", {}),
    "index_fill.int_Tensor": ("IndexFillBackward1", {3: "IndexFillBackward0"}),
    "square": ("PowBackward0", {}),            # torch computes it as pow(x, 2)
    "clamp_min.Tensor": ("ClampMinBackward1", {1: "ClampMinBackward0"}),
    "clamp_max.Tensor": ("ClampMaxBackward1", {1: "ClampMaxBackward0"}),
    "fill.Tensor": ("FillBackward3", {1: "FillBackward2"}),
}


def _linear_name(args):
    """torch's last node of linear: addmm/mm on 2-D input, reshaped around it otherwise."""
    ndim, no_bias = args[0]._data.ndim, args[2] is None
    if ndim == 2:
        return "MmBackward0" if no_bias else "AddmmBackward0"
    if no_bias:
        return "SqueezeBackward4" if ndim == 1 else "UnsafeViewBackward0"
    return "ViewBackward0"


def _matmul_name(na, nb):
    """torch's last node of matmul: dot/mv/mm, or the view after folding into mm/bmm."""
    if na == 1:
        return "DotBackward0" if nb == 1 else "SqueezeBackward4" if nb == 2 else None
    if na == 2:
        return "MvBackward0" if nb == 1 else "MmBackward0" if nb == 2 else None
    return "UnsafeViewBackward0"


def _index_name(args):
    """torch's last node of a basic index: an int selects, a slice slices; in a tuple
    index, a slice that keeps its whole dim is skipped (nothing left: an alias). ember's
    fronts mark a bare index (``x[1:]``, never skipped) by leaving out the ``...``."""
    shape, index = args[0]._data.shape, args[1]
    bare = not any(i is Ellipsis for i in index)
    n_real = sum(1 for i in index if i is not Ellipsis)
    name, dim = "AliasBackward0", 0
    for item in index:
        if item is Ellipsis:
            dim += len(shape) - n_real
            continue
        if isinstance(item, slice):
            whole = item.start in (None, 0) and item.step in (None, 1) and \
                (item.stop is None or item.stop >= shape[dim])
            if bare or not whole:
                name = "SliceBackward0"
        else:
            name = "SelectBackward0"
        dim += 1
    return name


# ops whose node torch names by their arguments' values (None for the record's own name);
# for sum/mean, a given ``dim`` is torch's dim overload (ember's fronts do not tell an
# explicit ``dim=None`` from none: that stays ...0)
_NAMED_BY_ARGS = {
    "sum": lambda args: None if args[1] is None else "SumBackward1",
    "mean": lambda args: None if args[1] is None else "MeanBackward1",
    "linear": _linear_name,
    "matmul": lambda args: _matmul_name(args[0]._data.ndim, args[1]._data.ndim),
    "_basic_index": _index_name,
    "squeeze": lambda args: None if args[1] is None else
    "SqueezeBackward1" if isinstance(args[1], int) else "SqueezeBackward2",
}
_INDEX_ARGS = ("index", "indices", "mask", "condition", "target", "targets")
_NON_DIFFERENTIABLE = {"nll_loss_nd": ("weight",), "nll_loss": ("weight",)}
_PLANS: dict = {}
_PLAIN = ()
_NOT_AN_INPUT = (None, -1)


def _node_plan(op):
    """What Note [node inputs] asks of ``op``'s nodes: (its overloads or None, positions of
    index-like arguments, positions of non-differentiable ones); ``_PLAIN`` for nothing."""
    f = op.functional
    name = f.name.replace("_.", ".") if f is not None else op.name
    overloads = _OVERLOADS.get(name)
    tensor_pos = [i for i, is_list, _ in op.tensor_args if not is_list]
    index_like = tuple(i for i in tensor_pos if op.argnames[i] in _INDEX_ARGS)
    never = tuple(i for i in tensor_pos
                  if op.argnames[i] in _NON_DIFFERENTIABLE.get(name.split(".")[0], ()))
    by_args = _NAMED_BY_ARGS.get(name)
    if overloads is None and not index_like and not never and by_args is None:
        return _PLAIN
    return overloads, index_like, never, by_args


def _overload(op, plan, args):
    """The node class for this call and the argument positions that are no inputs."""
    overloads, index_like, never, by_args = plan
    drop = list(never)
    for i in index_like:
        a = args[i]
        if a is None or isinstance(a, Tensor) and a._data.dtype.kind in "biu":
            drop.append(i)
    name = op.grad_name
    if overloads is not None:
        name = overloads[0]
        numbers = [i for i in overloads[1] if isinstance(args[i], (int, float, complex))]
        if numbers:
            name = overloads[1][numbers[0]]
            drop.extend(i for i in overloads[1] if not isinstance(args[i], Tensor))
    if by_args is not None:
        name = by_args(args) or name
    key = (op, name)
    cls = _OVERLOAD_CLASSES.get(key)
    if cls is None:
        cls = _OVERLOAD_CLASSES[key] = node_class(op, name)
    return cls, drop


_OVERLOAD_CLASSES: dict = {}


def node_class(op, name):
    """A new node class of ``op`` named ``name`` (e.g. ``AddBackward0``)."""
    saves = op.saved_args or op.saves_result
    base = SavingOpNode if saves else OpNode
    if op.name == "linear":            # torch's edge order and view/transpose nodes
        from ember.autograd.linear_layout import LinearNode
        base = LinearNode
    return type(name, (base,), {"__slots__": (), "op": op})


def rename_node(node, name):
    """Make ``node`` an instance of a same-layout node class named ``name`` (torch names
    the node of ``t_`` TBackward1 where ember records ``t``)."""
    if type(node).__name__ == name or not isinstance(node, OpNode):
        return
    key = (node.op, name)
    cls = _OVERLOAD_CLASSES.get(key)
    if cls is None:
        cls = _OVERLOAD_CLASSES[key] = node_class(node.op, name)
    node.__class__ = cls


def _drop_edges(node, op, args, edges, drop):
    """``next_functions`` without the edges of the positions in ``drop``."""
    k = 0
    for i, is_list, _ in op.tensor_args:
        n = len(args[i]) if is_list else 1
        if i in drop:
            edges[k] = _NOT_AN_INPUT
        k += n
    node.all_edges = tuple(edges)
    node.next_functions = tuple(e for e in edges if e is not _NOT_AN_INPUT)


def _save_result(node, outputs):
    keep = node.op.saved_outputs
    if keep is not None:                   # only the outputs the backward names
        outputs = tuple(o if k in keep else None for k, o in enumerate(outputs))
    if _hook_state.stack:
        ps = tuple(None if o is None else _pack(o) for o in outputs)
        node.result = ps[0] if len(ps) == 1 else ps
        node.packed = True
        return
    saved = node.saved_versions
    if type(saved) is not list:
        saved = node.saved_versions = list(saved)
    refs = []
    for k, o in enumerate(outputs):        # Note [saved outputs]
        if o is None:
            refs.append(None)
            continue
        v = _counter(o)
        r = _OutputRef(o, k, v)
        refs.append(r)
        saved.append((r, v))
    node.result = _SavedOutputs(refs, len(outputs) == 1)


def _snapshot(t):
    """A copy of ``t`` with its current autograd identity (for in-place ops whose backward
    needs the value before the write)."""
    s = _make(t._data.copy())
    s._requires_grad = t._requires_grad
    s._grad_fn = t._grad_fn
    s._output_nr = t._output_nr
    if t._grad_fn is None and t._requires_grad:
        s._meta = AutogradMeta()
        s._meta.acc_edge = edge = grad_edge(t)
        s._meta.grad_acc = edge[0]
    return s


def bump_version(t):
    b = t._storage_base
    if b is None:
        t._vc += 1
    else:
        b._vc += 1


def rebase_history(t, node, output_nr=0):
    """After an in-place op on ``t`` recorded as ``node``: ``t`` is now that node's output
    ``output_nr``. When ``t`` is a view, its base's history becomes a CopySlices node."""
    if isinstance(node, OpNode) and node.op.saves_result:
        _save_result(node, (t,))
    if t._view_info is None:
        t._grad_fn = node
        t._output_nr = output_nr
        t._requires_grad = True
        # views of ``t`` taken before this write must regenerate their grad_fn
        t._autograd_meta().view_gen += 1
        return
    b = view_base(t)
    # Note [view + in-place]
    cs = CopySlices()
    cs.fn, cs.fn_nr = node, output_nr
    cs.next_functions = (grad_edge(b),) + tuple(node.next_functions[1:])
    cs.view_info = _view_chain(t)
    mask = np.zeros(b._data.shape, np.bool_)
    replay_view(cs.view_info, _make(mask))._data[...] = True
    cs.mask = _make(mask)
    b._grad_fn = cs
    b._output_nr = 0
    b._requires_grad = True
    bm = b._autograd_meta()
    bm.view_gen += 1
    _regenerate_view_grad_fn(t)


def _view_chain(t):
    """The list of (op, args-after-self) that rebuilds view ``t`` from its base."""
    chain = []
    while t._view_info is not None:
        chain.append(t._view_info[:3])
        t = t._view_info[1][0]
    chain.reverse()
    return chain


def replay_view(chain, base):
    from ember._dispatch import dispatch
    x = base
    for op, args, k in chain:
        x = dispatch(op, (x,) + tuple(args[1:]), None)
        if k is not None:
            x = x[k]
    return x


def _regenerate_view_grad_fn(t):
    b = view_base(t)
    chain = _view_chain(t)
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        a = t._data
        if len(chain) > 1 and type(a) is np.ndarray and not (0 in a.strides and a.size > 1):
            # torch regenerates a view as one as_strided of its base (AsStridedBackward0)
            from ember._ops.shape import as_strided
            v = as_strided(b, tuple(t.shape), t.stride(), t.storage_offset())
        else:
            v = replay_view(chain, b)
            rename_node(v._grad_fn, "AsStridedBackward0")
    finally:
        state.grad_enabled = prev
    t._grad_fn = v._grad_fn
    t._output_nr = v._output_nr
    t._requires_grad = v._requires_grad
    t._autograd_meta().view_gen = b._autograd_meta().view_gen
    t._view_info = t._view_info[:3] + (_counter(t),)


def set_view(out, src, op, args, k=None):
    """Mark ``out`` (output ``k`` of a multi-output view op, or its only output) as a view
    of ``src`` sharing its storage and version counter."""
    if not isinstance(src, Tensor):
        return
    b = src._storage_base
    out._storage_base = src if b is None else b
    if not op.autograd_view:
        return
    out._view_info = (op, args, k, _counter(out))   # (the version its grad_fn is of)
    base = view_base(out)
    bm = base._meta
    if bm is not None and bm.view_gen:
        out._autograd_meta().view_gen = bm.view_gen
    # Note [view + in-place]: views whose history cannot be replayed remember why, and the
    # version they were made at; a view of such a view inherits the reason
    sm = src._meta
    inherited = sm.creation_meta if sm is not None and src._view_info is not None else None
    if not state.grad_enabled and (src._requires_grad or base._requires_grad):
        # as in torch: it requires grad (like its base) but has no history
        kind = "inference_mode" if state.inference_mode else "no_grad"
        out._autograd_meta().creation_meta = (kind, _counter(out))
        out._requires_grad = True
    elif k is not None or (inherited is not None and inherited[0] != "custom_function"):
        kind = "multi_output" if inherited is None else inherited[0]
        out._autograd_meta().creation_meta = (kind, _counter(out))
        if kind in _NO_HISTORY:
            out._requires_grad = True


_NO_HISTORY = ("no_grad", "inference_mode")     # views made with grad mode off
_NO_GRAD_MSG = ("A view was created in {0} mode and {1}. Given that this use case is "
                "ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
                "both the view and the inplace either both inside the {2} block (if you "
                "don't want the inplace to be tracked) or both outside (if you want the inplace "
                "to be tracked).")
_MULTI_OUTPUT_MSG = ("Output {} of {} is a view and {}. This view is the output of a function "
                     "that returns multiple views. Such functions do not allow the output views "
                     "to be modified inplace. You should replace the inplace operation by an "
                     "out-of-place one.")
_CUSTOM_FUNCTION_MSG = ("Output {} of {} is a view and {}. This view was created inside a custom "
                        "Function (or because an input was returned as-is) and the autograd "
                        "logic to handle view+inplace would override the custom backward "
                        "associated with the custom Function, leading to incorrect gradients. "
                        "This behavior is forbidden. You can fix this by cloning the output of "
                        "the custom Function.")


def _counter(t):
    """The version counter's value, read without ``_version``'s inference-tensor check."""
    b = t._storage_base
    return (t if b is None else b)._vc


def mark_inference(t):
    """Note [inference tensors] (ember/autograd/grad_mode.py)."""
    t._autograd_meta().inference = True
    return t


def _saved_version(t):
    """``t._version`` for a tensor an op saves; inference tensors can't be saved."""
    b = t._storage_base
    root = t if b is None else b
    m = root._meta
    if m is None or not m.inference:
        return root._vc
    raise RuntimeError("Inference tensors cannot be saved for backward. Please do not use "
                       "Tensors created in inference mode in computation tracked by "
                       "autograd. To work around this, you can make a clone to get a "
                       "normal tensor and use it in autograd, or use `torch.no_grad()` "
                       "instead of `torch.inference_mode()`.")


def _view_error(t, cm, what):
    """torch's error for an in-place op on (``what="is being modified inplace"``), or a
    stale history of (``what="its base or another view..."``), a view it cannot rebase."""
    if cm[0] in _NO_HISTORY:
        where = "with grad mode enabled" if cm[0] == "no_grad" else "in normal mode"
        mode = "no_grad" if cm[0] == "no_grad" else "inference"
        return RuntimeError(_NO_GRAD_MSG.format(
            mode, f"{what} {where}" if what is _WRITTEN else
            f"its base or another view of its base has been modified inplace {where}", cm[0]))
    if cm[0] == "multi_output":
        name = t._grad_fn.name() if t._grad_fn is not None else t._view_info[0].grad_name
        return RuntimeError(_MULTI_OUTPUT_MSG.format(t._output_nr,
                                                     re.sub(r"Backward\d*$", "", name), what))
    return RuntimeError(_CUSTOM_FUNCTION_MSG.format(cm[2], _short_name(cm[1]), what))


_WRITTEN = "is being modified inplace"
_STALE = "its base or another view of its base has been modified inplace"


def check_inplace(t, req=False):
    """Raise torch's error for an in-place op (with grad mode on) on a view that autograd
    cannot rebase: one created in no_grad mode from a tensor requiring grad, an output of a
    multi-output view op (``unbind``, ``split``...), or an output of a custom Function that is
    a view. ``req``: another argument requires grad. The dispatcher calls this before
    in-place kernels."""
    b = t._storage_base
    rm = (t if b is None else b)._meta
    if rm is not None and rm.inference and not state.inference_mode:
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                           "details.")
    m = t._meta
    if m is None or m.creation_meta is None or not state.grad_enabled:
        return
    cm = m.creation_meta
    if cm[0] == "multi_output" and not (t._requires_grad or req):
        return
    raise _view_error(t, cm, _WRITTEN)


# -------------------------------------------------------------------- hooks

def register_tensor_hook(t, hook):
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node, nr = grad_edge(t)
    return node._register_tensor_hook(nr, hook)


def retain_grad(t):
    if not t._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if t._grad_fn is None:
        return
    m = t._autograd_meta()
    if m.retains_grad:
        return
    m.retains_grad = True
    node = t._grad_fn
    if node._retain_hooks is None:
        node._retain_hooks = {}
    node._retain_hooks[t._output_nr] = weakref.ref(t)


def register_post_accumulate_grad_hook(t, hook):
    """``hook(tensor)`` runs after a gradient was accumulated into the leaf's ``.grad``."""
    if not t._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if t._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    m = t._autograd_meta()
    if m.post_acc_hooks is None:
        m.post_acc_hooks = []
    h = RemovableHandle(m.post_acc_hooks)
    m.post_acc_hooks.append((h.id, hook))
    return h


class _MultiHandle(RemovableHandle):
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Register ``fn`` over several tensors. ``mode="all"``: ``fn(grads)`` once per backward
    call, after every gradient among ``tensors`` that this call computes is ready (None for
    the others). ``mode="any"``: ``fn(grad)`` on the first gradient computed."""
    from ember.autograd import engine
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "any":
        seen = {}

        def make_any(i):
            def hook(grad):
                task = engine.current_task()
                with lock:
                    if seen.get("task") is task:
                        return None
                    seen["task"] = task
                fn(grad)
                return None
            return hook
        return _MultiHandle(tuple(t.register_hook(make_any(i)) for i, t in enumerate(tensors)
                                  if t.requires_grad))

    per_task = {}

    def make_all(i):
        def hook(grad):
            task = engine.current_task()
            with lock:
                entry = per_task.get(id(task))
                if entry is None or entry[0] is not task:
                    expected = sum(1 for t in tensors if t.requires_grad and
                                   engine.will_run(task, grad_edge(t)[0]))
                    entry = per_task[id(task)] = [task, [None] * len(tensors), expected]
                entry[1][i] = grad
                entry[2] -= 1
                done = entry[2] <= 0
                if done:
                    del per_task[id(task)]
            if done:
                fn(tuple(entry[1]))
            return None
        return hook
    return _MultiHandle(tuple(t.register_hook(make_all(i)) for i, t in enumerate(tensors)
                              if t.requires_grad))


# -------------------------------------------------------------------- mutation of saved
# ``allow_mutation_on_saved_tensors``: inside, tensors saved for backward are packed (saved
# tensor hooks) under the memory they live on; a dispatcher mode sees every in-place write
# and, before the first one into that memory, clones the saved tensors there, so that
# backward unpacks the values they had when saved. Backward must run inside the context.

class _AllowMutationOnSavedContext:
    """The context's state: saved tensors by the memory they view, and their clones."""

    def __init__(self):
        self.original = {}      # handle -> saved tensor
        self.cloned = {}        # handle -> its clone, made before the first write
        self.by_memory = {}     # memory key -> [handles]
        self.closed = False

    def clear(self):
        self.original.clear()
        self.cloned.clear()
        self.by_memory.clear()


class _Handle:
    __slots__ = ("__weakref__",)


def _memory_key(t):
    """Where ``t``'s storage starts (views, ``detach()`` and ``.data`` share it)."""
    from ember._kernels.shape import address
    root = t._root()._data
    return address(root) + sum((n - 1) * st for n, st in zip(root.shape, root.strides)
                               if st < 0)


_mutation_ctx = [None]


def _written_tensors(op, args):
    if op.is_inplace:
        return (args[0],) if args and isinstance(args[0], Tensor) else ()
    out = []
    for i in op.mutated_args:
        a = args[i]
        out.extend(x for x in (a if isinstance(a, (list, tuple)) else (a,))
                   if isinstance(x, Tensor))
    return out


def _clone_before_write(ctx, op, args, kwargs):
    written = list(_written_tensors(op, args))
    if kwargs.get("out") is not None:
        o = kwargs["out"]
        written.extend(o if isinstance(o, (list, tuple)) else (o,))
    for t in written:
        if type(t._data) is not np.ndarray:
            continue
        for h in ctx.by_memory.get(_memory_key(t), ()):
            if h not in ctx.cloned:
                from ember.autograd.grad_mode import no_grad
                with no_grad():
                    ctx.cloned[h] = ctx.original[h].clone()


def _mutation_mode(ctx):
    from ember._dispatch import Mode

    class _CloneSavedOnWrite(Mode):
        def __ember_dispatch__(self, op, args, kwargs):
            if op.is_inplace or op.mutated_args or kwargs.get("out") is not None:
                _clone_before_write(ctx, op, args, kwargs)
            return op(*args, **kwargs)
    return _CloneSavedOnWrite()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Inside, a tensor saved for backward may be modified in place: it is cloned before
    the first write, and backward (which must run inside too) uses the saved values.
    Yields the context's state object."""
    if _mutation_ctx[0] is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()

    def pack(t):
        if ctx.closed:
            return t
        h = _Handle()
        ctx.original[h] = t
        if type(t._data) is np.ndarray:
            ctx.by_memory.setdefault(_memory_key(t), []).append(h)
        return h

    def unpack(h):
        if not isinstance(h, _Handle):
            return h
        if ctx.closed:
            raise AssertionError("Trying to backward outside of the "
                                 "'allow_mutation_on_saved_tensors' contextin which the graph "
                                 "was originally recorded.")
        return ctx.cloned.get(h, ctx.original[h])

    _mutation_ctx[0] = ctx
    mode = _mutation_mode(ctx)
    try:
        with saved_tensors_hooks(pack, unpack), mode:
            yield ctx
    finally:
        ctx.closed = True
        ctx.clear()
        _mutation_ctx[0] = None
