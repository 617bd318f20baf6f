"""The autograd graph: nodes (``grad_fn``), edges, saved tensors, views and in-place.

Note [edges]: an edge is ``(node, output_nr)``. A tensor's edge is its ``grad_fn`` and
``output_nr``, or its ``AccumulateGrad`` node when it is a leaf that requires grad, or
``(None, 0)`` when it needs no gradient.

Note [view + in-place]: a view remembers the op that made it (``_view_info``); an in-place
op on a view makes the base's history a ``CopySlices`` node (the base's old history for
the untouched part, the op's node for the written part), and the view's ``grad_fn`` is
regenerated from the base. Other views of the same base regenerate lazily: each view
records the base's history generation it was built at.
"""
from __future__ import annotations

import weakref

import numpy as np

from ember._state import state
from ember._tensor import Tensor, _make


class AutogradMeta:
    """Rarely used per-tensor autograd fields, allocated on first use."""
    __slots__ = ("grad", "grad_acc", "retains_grad", "hooks", "detached", "view_gen", "name",
                 "post_acc_hooks", "fw_grad")

    def __init__(self):
        self.grad = None
        self.grad_acc = None
        self.retains_grad = False
        self.hooks = None
        self.detached = False
        self.view_gen = 0
        self.name = None
        self.post_acc_hooks = None
        self.fw_grad = None


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


_seq = [0]


class Node:
    """Base of every ``grad_fn``: edges to the next nodes and hooks."""
    __slots__ = ("next_functions", "_pre_hooks", "_hooks", "_tensor_hooks", "_seq",
                 "metadata", "_anomaly_trace", "_retain_hooks", "__weakref__", "__dict__")

    def __init__(self, next_functions=()):
        self.next_functions = next_functions
        self._pre_hooks = None
        self._hooks = None
        self._tensor_hooks = None   # output_nr -> list of (id, hook)
        self._retain_hooks = None   # output_nr -> tensor (weak) retaining grad
        _seq[0] += 1
        self._seq = _seq[0]
        self.metadata = {}
        self._anomaly_trace = _anomaly_stack() if state.anomaly else None

    def name(self):
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

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
    import traceback
    return "".join(traceback.format_stack()[:-3])


class OpNode(Node):
    """The ``grad_fn`` of an op record's output: calls the record's backward rule."""
    __slots__ = ("op", "args", "result", "saved_versions", "metas", "out_metas", "released",
                 "_needs")

    def name(self):
        return self.op.grad_name

    @property
    def _num_outputs(self):
        return len(self.out_metas)

    @property
    def needs_input_grad(self):
        """Per positional argument: does it need a gradient (tuples for Tensor lists)."""
        if self._needs is None:
            needs = [False] * len(self.args if self.args is not None else self.op.argnames)
            k = 0
            for i, is_list, _ in self.op.tensor_args:
                if is_list:
                    n = len(self._list_lens[i])
                    needs[i] = tuple(self.next_functions[k + j][0] is not None for j in range(n))
                    k += n
                else:
                    needs[i] = self.next_functions[k][0] is not None
                    k += 1
            self._needs = tuple(needs)
        return self._needs

    @property
    def _list_lens(self):
        return self.__dict__.setdefault("_ll", {})

    @property
    def shapes(self):
        """Per positional argument: its shape (a list of shapes for a Tensor list)."""
        out = [None] * len(self.op.argnames)
        k = 0
        for i, is_list, _ in self.op.tensor_args:
            if is_list:
                n = self._list_lens.get(i, 0)
                out[i] = [self.metas[k + j][0] for j in range(n)]
                k += n
            else:
                out[i] = self.metas[k][0]
                k += 1
        return out

    @property
    def dtypes(self):
        out = [None] * len(self.op.argnames)
        k = 0
        for i, is_list, _ in self.op.tensor_args:
            if is_list:
                n = self._list_lens.get(i, 0)
                out[i] = [self.metas[k + j][1] for j in range(n)]
                k += n
            else:
                out[i] = self.metas[k][1]
                k += 1
        return out

    def _saved(self):
        if self.released:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.")
        for t, v in self.saved_versions:
            if t._version != v:
                raise RuntimeError(
                    f"one of the variables needed for gradient computation has been modified "
                    f"by an inplace operation: [{_type_str(t)} {list(t.shape)}], which is "
                    f"output {t._output_nr} of {_node_name(t)}, is at version {t._version}; "
                    f"expected version {v} instead. Hint: enable anomaly detection to find the "
                    f"operation that failed to compute its gradient, with "
                    f"torch.autograd.set_detect_anomaly(True).")
        return self.args

    def apply(self, grads):
        """grads: one per output (None where no gradient flowed); returns one per edge."""
        args = self._saved()
        op = self.op
        if len(grads) == 1 and len(self.out_metas) == 1:
            g = grads[0]
            if g is None:
                return [None] * len(self.next_functions)
        else:
            if all(g is None for g in grads):
                return [None] * len(self.next_functions)
            g = tuple(x if x is not None or m is None else _zeros(m)
                      for x, m in zip(grads, self.out_metas))
        res = op.backward(self, g, *args)
        if not isinstance(res, (tuple, list)):
            res = (res,)
        return self._flatten(res)

    def _flatten(self, res):
        """Map per-argument gradients to per-edge ones, reduced to each input's shape."""
        out = []
        k = 0
        metas = self.metas
        for i, is_list, _ in self.op.tensor_args:
            g = res[i] if i < len(res) else None
            if is_list:
                n = self._list_lens.get(i, 0)
                gs = g if g is not None else [None] * n
                for j in range(n):
                    out.append(_fit(gs[j], metas[k + j]) if self.next_functions[k + j][0]
                               is not None else None)
                k += n
            else:
                out.append(_fit(g, metas[k]) if self.next_functions[k][0] is not None else None)
                k += 1
        return out

    def release(self):
        if self.saved_versions or self.result is not None or self.op.saved_args:
            self.released = True
            self.args = None
            self.result = None
            self.saved_versions = ()


def _type_str(t):
    return {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
            "int64": "torch.LongTensor"}.get(t.dtype.name, f"torch.{t.dtype.name}Tensor")


def _node_name(t):
    fn = t._grad_fn
    return fn.name() if fn is not None else "AccumulateGrad"


def _zeros(meta):
    shape, dt = meta
    return _make(np.zeros(shape, dt))


def _fit(g, meta):
    """Note [grad shapes]: reduce a broadcast gradient to the input's shape and dtype."""
    if g is None:
        return None
    if not isinstance(g, Tensor):
        raise RuntimeError(f"backward rule returned {type(g).__name__}, expected a Tensor")
    shape, dt = meta
    gs = g._data.shape
    if gs != shape:
        from ember._ops.core import sum_to_size
        g = sum_to_size(g, shape)
    if g._data.dtype != dt:
        if g._data.dtype.kind == "c" and dt.kind != "c":
            g = g.real
        g = g.to(_dt(dt))
    return g


def _dt(np_dtype):
    from ember._dtype import _BY_NP
    return _BY_NP[np_dtype]


class AccumulateGrad(Node):
    """Leaf node: adds the incoming gradient into ``variable.grad``."""
    __slots__ = ("_variable",)

    def __init__(self, variable):
        super().__init__(())
        self._variable = weakref.ref(variable)

    @property
    def variable(self):
        return self._variable()

    def apply(self, grads):
        g = grads[0]
        t = self._variable()
        if t is None or g is None:
            return []
        m = t._autograd_meta()
        old = m.grad
        if state.grad_enabled:        # create_graph: keep the graph of the gradient
            m.grad = g if old is None else old + g
        elif old is None:
            arr = g._data
            m.grad = _make(np.array(arr, copy=True, order="C") if arr.dtype == t._data.dtype
                           else arr.astype(t._data.dtype))
        elif old._requires_grad:
            m.grad = old.detach() + g
        else:
            np.add(old._data, g._data, out=old._data, casting="unsafe")
        if m.post_acc_hooks:
            for _, h in list(m.post_acc_hooks):
                h(t)
        return []


class CopySlices(Node):
    """The base's history after an in-place op wrote into one of its views."""
    __slots__ = ("view_info", "base_meta", "mask")

    def name(self):
        return "CopySlices"

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return [None, None]
        from ember._ops.core import where_self
        # the written region gets its gradient from the op; the rest flows to the old base
        gv = replay_view(self.view_info, g)
        gb = where_self(self.mask, _make(np.zeros((), g._data.dtype)), g)
        return [gb, gv]


# -------------------------------------------------------------------- recording

def grad_edge(t):
    """The edge through which gradient flows into tensor ``t``."""
    if not t._requires_grad:
        return (None, 0)
    fn = t._grad_fn
    if t._base is not None and t._view_info is not None:
        b = t._base
        if b._grad_fn is not None and b._meta is not None and t._meta is not None \
                and t._meta.view_gen != b._meta.view_gen:
            _regenerate_view_grad_fn(t)
            fn = t._grad_fn
    if fn is not None:
        return (fn, t._output_nr)
    m = t._meta
    if m is None:
        m = t._meta = AutogradMeta()
    acc = m.grad_acc
    if acc is None:
        acc = m.grad_acc = AccumulateGrad(t)
    return (acc, 0)


def current_grad_fn(t):
    if t._grad_fn is not None and t._base is not None:
        grad_edge(t)
    return t._grad_fn


def record(op, args, outputs, inplace=False):
    """Create the node of ``op`` applied to ``args`` and attach it to ``outputs``.

    For an in-place op, ``outputs`` is None: the caller rebases argument 0 afterwards."""
    cls = op.node_class
    if cls is None:
        cls = op.node_class = type(op.grad_name, (OpNode,), {"__slots__": ()})
    node = cls.__new__(cls)
    Node.__init__(node)
    node.op = op
    edges = []
    metas = []
    saved_versions = []
    saved = op.saved_args
    stored = list(args)
    for i, is_list, _ in op.tensor_args:
        a = args[i]
        if is_list:
            node._list_lens[i] = a
            for x in a:
                edges.append(grad_edge(x))
                metas.append((x._data.shape, x._data.dtype))
        elif isinstance(a, Tensor):
            edges.append(grad_edge(a))
            metas.append((a._data.shape, a._data.dtype))
            if i in saved:
                if inplace and i == 0:
                    a = stored[0] = _snapshot(a)
                saved_versions.append((a, a._version))
            else:
                stored[i] = None
        else:
            edges.append((None, 0))
            metas.append(((), np.dtype(np.float64)))
    node.next_functions = tuple(edges)
    node.metas = metas
    node.args = tuple(stored)
    node.saved_versions = saved_versions
    node.released = False
    node._needs = None
    node.result = None
    if inplace:
        self = args[0]
        node.out_metas = [(self._data.shape, self._data.dtype)]
        return node
    out_metas = []
    for k, o in enumerate(outputs):
        if o._data.dtype.kind in "fcV" or o._data.dtype == np.float16:
            o._requires_grad = True
            o._grad_fn = node
            o._output_nr = k
            out_metas.append((o._data.shape, o._data.dtype))
        else:
            out_metas.append(None)
    node.out_metas = out_metas
    if op.saves_result:
        node.result = outputs[0] if len(outputs) == 1 else outputs
        for o in outputs:
            saved_versions.append((o, o._version))
    return node


def _snapshot(t):
    """A copy of ``t`` with its current autograd identity (for in-place ops whose backward
    needs the value before the write)."""
    s = _make(t._data.copy())
    s._requires_grad = t._requires_grad
    s._grad_fn = t._grad_fn
    s._output_nr = t._output_nr
    if t._grad_fn is None and t._requires_grad:
        s._meta = AutogradMeta()
        s._meta.grad_acc = grad_edge(t)[0]
    return s


def bump_version(t):
    b = t._base
    if b is None:
        t._vc += 1
    else:
        b._vc += 1


def rebase_history(t, node):
    """After an in-place op on ``t`` recorded as ``node``: ``t`` is now that node's output.
    When ``t`` is a view, its base's history becomes a CopySlices node."""
    if node.op.saves_result:
        node.result = t
        node.saved_versions.append((t, t._version))
    b = t._base
    if b is None or t._view_info is None:
        t._grad_fn = node
        t._output_nr = 0
        t._requires_grad = True
        return
    # Note [view + in-place]
    cs = CopySlices()
    cs.next_functions = (grad_edge(b), (node, 0))
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
        chain.append(t._view_info)
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
    b = t._base
    chain = _view_chain(t)
    prev = state.grad_enabled
    state.grad_enabled = True
    try:
        v = replay_view(chain, b)
    finally:
        state.grad_enabled = prev
    t._grad_fn = v._grad_fn
    t._output_nr = v._output_nr
    t._requires_grad = v._requires_grad
    t._autograd_meta().view_gen = b._autograd_meta().view_gen


def set_view(out, src, op, args, k=None):
    """Mark ``out`` (output ``k`` of a multi-output view op, or its only output) as a view
    of ``src`` sharing its storage and version counter."""
    if not isinstance(src, Tensor):
        return
    b = src._base
    out._base = src if b is None else b
    out._view_info = (op, args, k)
    bm = out._base._meta
    if bm is not None and bm.view_gen:
        out._autograd_meta().view_gen = bm.view_gen


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
