"""Second derivatives: a first-order gradient that torch computes from the op's input too.

torch's backward formulas of pooling, reflection/replication padding and nll_loss take the
forward input (``max_pool2d_with_indices_backward(grad, self, ...)``), so under
``create_graph`` their result is a function of that input, with a zero derivative: the
gradient of a gradient penalty through them is zeros, not an error. ember's rules for
these ops compute the gradient from the incoming gradient and saved indices alone, so
``link_input`` adds the missing edge: ``g`` becomes the output of a node (named like
torch's ``...BackwardBackward0``) whose edges are ``g``'s own history and the op's input,
passing the gradient through to the first and zeros to the second.

Only under grad mode inside a backward (``create_graph=True``) and when that input requires
grad; a plain backward returns ``g`` untouched (no extra work).
"""
from __future__ import annotations

import numpy as np

from ember._state import state
from ember._tensor import _make
from ember.autograd.graph import Node, _next_seq, grad_edge

_CLASSES: dict = {}


class InputLinkNode(Node):
    """Edges: (g's history, input_1, ...); the gradient goes to the first, zeros of each
    input's (shape, dtype) to the others."""
    __slots__ = ("metas",)
    _num_outputs = 1

    def apply(self, grads):
        g = grads[0] if grads else None
        if g is None:
            return [None] * len(self.next_functions)
        return [g] + [_make(np.zeros(shape, dtype)) for shape, dtype in self.metas]


def _edge_index(ctx, arg):
    """Index in ctx's edges of positional argument ``arg`` (a single Tensor argument)."""
    k = 0
    lens = ctx.__dict__.get("_ll", {})
    for i, is_list, _ in ctx.op.tensor_args:
        if i == arg:
            return k
        k += lens.get(i, 0) if is_list else 1
    raise IndexError(f"argument {arg} of {ctx.op.name} is not a Tensor")


def _node_name(ctx):
    n = ctx.name()
    return n[:-1] + "Backward0" if n.endswith("Backward0") else n + "Backward"


def link_input(g, ctx, *args, name=None):
    """``g`` (computed by ``ctx``'s backward rule) made a function of ``ctx``'s inputs at
    positions ``args`` with zero derivative, under create_graph; else ``g`` itself. The new
    node is ``name``, or ctx's name with ``Backward`` doubled."""
    if g is None or not state.grad_enabled:
        return g
    edges = ctx.all_edges or ctx.next_functions
    extra, metas = [], []
    for a in args:
        k = _edge_index(ctx, a)
        e = edges[k]
        if e[0] is not None:
            extra.append(e)
            metas.append(ctx.metas[k])
    if not extra or g._data.dtype.kind not in "fc":
        return g
    if g._view_info is not None or g._storage_base is not None:
        g = g.clone()           # (a fresh tensor: its node can be replaced safely)
    name = name or _node_name(ctx)
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (InputLinkNode,), {"__slots__": ()})
    node = object.__new__(cls)
    node.next_functions = (grad_edge(g),) + tuple(extra)
    node.metas = tuple(metas)
    node._seq = _next_seq()
    out = _make(g._data)
    out._requires_grad = True
    out._grad_fn = node
    out._output_nr = 0
    return out
