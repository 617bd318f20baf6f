"""torch's graph for ``F.linear`` (and a multi-element basic index) around ember's one
fused node.

torch builds linear from ``t``, ``addmm``/``mm``/``matmul``, views and ``add``, so the
output's ``grad_fn`` and its ``next_functions`` show that chain: ``AddmmBackward0`` with
edges (bias, input, ``TBackward0`` -> weight) for a 2-D input; a ``ViewBackward0`` (or
``UnsafeViewBackward0``, ``SqueezeBackward4``, ``AddBackward0``) around it otherwise.
ember computes the three gradients in one node (one GEMM each); ``dress_linear`` gives
that node torch's edge order and puts thin relay nodes where torch has view/transpose
nodes. A relay only passes its gradient on (the fused node already made it in the shape
the next node wants), except ``TBackward0``, which transposes.

``dress_index`` does the same for ``x[0, 1:]``-style indices (one Select/Slice node per
step in torch), and ``torch_node`` names the output node of a functional written in ember
ops after torch's kernel (``UpsampleNearest2DBackward0``...). These change what
``grad_fn`` shows, never what backward computes.
"""
from __future__ import annotations

from ember._state import state
from ember._tensor import Tensor, _make
from ember.autograd.graph import Node, SavingOpNode, _NO_EDGE, _next_seq, rename_node

_X, _W, _B, _WT = 0, 1, 2, 3     # routes: internal gradient index, or the weight's transposed


class LinearNode(SavingOpNode):
    """Base of linear's node classes: gradients computed per (input, weight, bias), handed
    out in the order of the dressed ``next_functions`` (``_route``, set by dress_linear)."""
    __slots__ = ()

    def _flatten(self, res):
        out = SavingOpNode._flatten(self, res)
        route = self.__dict__.get("_route")
        if route is None:
            return out
        return [_transposed(out[_W]) if r == _WT else out[r] for r in route]


def _transposed(g):
    """``g.mT`` for TBackward0 to undo; without a graph to record, a bare transposed view
    that remembers ``g`` (the weight then gets ``g`` itself, contiguous)."""
    if g is None:
        return None
    if type(g) is Tensor and not state.grad_enabled and g._data.ndim == 2:
        t = _make(g._data.T)
        t._t_src = g
        return t
    return g.mT


class RelayNode(Node):
    """A node standing where torch has a view or transpose node: ``fn`` maps the incoming
    gradient to the gradients of ``next_functions``."""
    __slots__ = ("fn",)
    _num_outputs = 1

    def apply(self, grads):
        g = grads[0] if grads else None
        if g is None:
            return [None] * len(self.next_functions)
        return self.fn(g)


_RELAY_CLASSES: dict = {}


def _relay(name, edges, fn, seq):
    cls = _RELAY_CLASSES.get(name)
    if cls is None:
        cls = _RELAY_CLASSES[name] = type(name, (RelayNode,), {"__slots__": ()})
    node = object.__new__(cls)
    node.next_functions = tuple(edges)
    node.fn = fn
    node._seq = seq
    return (node, 0)


def _pass(g):
    return [g]


def _untranspose(g):
    src = g.__dict__.get("_t_src") if type(g) is Tensor else None
    return [src if src is not None else g.mT]


def _viewable(x):
    """Whether ``x`` folds to (rows, in) without a copy (matmul's reshape is a view)."""
    v = x._data.view()
    try:
        v.shape = (-1, x._data.shape[-1]) if x._data.shape[-1] else (v.size, 0)
    except (AttributeError, ValueError):
        return False
    return True


def dress_linear(out, x, w, b):
    """Give ``out`` (just made by the linear op) torch's ``grad_fn`` chain; see above."""
    node = out._grad_fn
    if not isinstance(node, LinearNode) or "_route" in node.__dict__:
        return
    ex, ew, eb = node.next_functions
    nd = x._data.ndim
    seq = node._seq
    folded = b is not None and (nd <= 2 or x.is_contiguous())   # torch: view, addmm, view
    wt = _NO_EDGE if ew[0] is None else _relay("TBackward0", (ew,), _untranspose, seq)
    xe = ex
    if ex[0] is not None and nd != 2:
        if nd == 1:
            xe = _relay("ViewBackward0" if folded else "UnsqueezeBackward0", (ex,), _pass, seq)
        elif folded or x.is_contiguous():
            xe = _relay("ViewBackward0", (ex,), _pass, seq)
        elif _viewable(x):                      # reshape of strided memory: an alias
            xe = _relay("ReshapeAliasBackward0", (ex,), _pass, seq)
        else:                                   # reshape copies: clone, then _unsafe_view
            xe = _relay("UnsafeViewBackward0",
                        (_relay("CloneBackward0", (ex,), _pass, seq),), _pass, seq)
    node.all_edges = (ex, ew, eb if folded or nd == 2 else _NO_EDGE)
    if b is not None and (folded or nd == 2):
        rename_node(node, "AddmmBackward0")
        node.next_functions, node._route = (eb, xe, wt), (_B, _X, _WT)
    else:
        rename_node(node, "MmBackward0")
        node.next_functions, node._route = (xe, wt), (_X, _WT)
    if nd == 2:
        return
    top = _next_seq()
    if folded:
        out._grad_fn = _relay("ViewBackward0", ((node, 0),), _pass, top)[0]
    elif b is None:
        out._grad_fn = _relay("SqueezeBackward4" if nd == 1 else "UnsafeViewBackward0",
                              ((node, 0),), _pass, top)[0]
    else:                                       # matmul, then ``+ bias``
        lead = tuple(range(nd - 1))
        inner = _relay("UnsafeViewBackward0", ((node, 0),), _pass, top)
        out._grad_fn = _relay("AddBackward0", (inner, eb),
                              lambda g: [g, g.sum(lead)], _next_seq())[0]


def dress_index(out, shape, index):
    """``out = x[index]`` (one fused node named after the index's last step) shown as
    torch's chain: one SelectBackward0 per int and SliceBackward0 per narrowing slice, in
    order (``shape``: x's; ``index``: a tuple of ints, slices and at most one ``...``)."""
    node = out._grad_fn
    if node is None or len(node.next_functions) != 1 or node.next_functions[0][0] is None:
        return
    n_real = sum(1 for i in index if i is not Ellipsis)
    names, dim = [], 0
    for item in index:
        if item is Ellipsis:
            dim += len(shape) - n_real
            continue
        if type(item) is slice:
            whole = item.start in (None, 0) and item.step in (None, 1) and \
                (item.stop is None or item.stop >= shape[dim])
            if not whole:
                names.append("SliceBackward0")
        elif isinstance(item, int):
            names.append("SelectBackward0")
        else:
            return
        dim += 1
    if len(names) < 2:
        return
    edge = node.next_functions[0]
    for name in names[:-1]:
        edge = _relay(name, (edge,), _pass, node._seq)
    node.next_functions = (edge,)


def torch_node(namer):
    """Decorator for a functional written in ember ops: the node of its result is named as
    torch names its own kernel's node (``namer(result, *args, **kwargs)`` -> a name, or
    None to keep ember's). Only a node made by this call is renamed."""
    import functools

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            first = _next_seq()
            res = fn(*args, **kwargs)
            out = res[0] if isinstance(res, tuple) and res else res
            node = getattr(out, "_grad_fn", None)
            if node is not None and node._seq > first and state.grad_enabled:
                name = namer(out, *args, **kwargs)
                if name is not None:
                    rename_node(node, name)
            return res
        return call
    return wrap


def named(name):
    """``torch_node`` with a fixed name."""
    return torch_node(lambda out, *a, **k: name)


def spatial_named(fmt, batch_dims=2):
    """``torch_node`` naming by the spatial rank of the first argument (``fmt`` holds
    ``{d}``): ``GridSampler{d}DBackward0``..."""
    return torch_node(lambda out, x, *a, **k: fmt.format(d=x.dim() - batch_dims))
