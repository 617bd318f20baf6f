"""Note [named composites]: a function that ember writes in smaller ops but torch computes
with one fused kernel (``mse_loss``, ``binary_cross_entropy``...) shows in the graph as
torch's node: ``record_as("MseLossBackward0", fn, input, target)`` runs ``fn`` and gives
its result one ``grad_fn`` of that name, with one edge per given tensor (torch's
differentiable inputs; other arguments ride in ``fn``'s closure).

The small ops still do the work. ``fn`` runs on aliases of the inputs (``view_as``), so
its own graph hangs off the node, reaches the inputs only through those aliases, and
the node's backward is that graph's gradient with respect to the aliases (computed with
``create_graph`` when the engine builds one, so double backward and hessians go through
the same small ops). With no gradient to record, or under a dispatcher mode (vmap,
forward AD, tracers), ``fn`` simply runs.
"""
from __future__ import annotations

from ember._state import state
from ember._tensor import Tensor, _make
from ember.autograd.graph import Node, grad_edge, _FREED_MSG, _saved_version, _version_msg

__all__ = ["record_as", "record_inplace_as"]


def record_as(name, fn, *tensors):
    """``fn(*tensors)``, recorded as one node named ``name`` (see the module note)."""
    if not state.grad_enabled or state.modes or \
            not any(isinstance(t, Tensor) and t._requires_grad for t in tensors):
        return fn(*tensors)
    aliases = tuple(t.view_as(t) if isinstance(t, Tensor) and t._requires_grad else t
                    for t in tensors)
    out = fn(*aliases)
    if not out._requires_grad:
        return out
    node = _node_class(name)()
    node.next_functions = tuple(grad_edge(t) if isinstance(t, Tensor) else (None, 0)
                                for t in tensors)
    node.inner = out
    node.aliases = aliases
    # like torch's fused node, it saves its inputs: writing into one later is an error
    node.versions = tuple((t, _saved_version(t)) for t in tensors if isinstance(t, Tensor))
    result = _make(out._data)
    result._requires_grad = True
    result._grad_fn = node
    return result


def record_inplace_as(name, fn, self, saves_result=False):
    """``self`` overwritten with ``fn(self)``, recorded as torch's in-place node ``name``
    (``EluBackward1``...): one node whose edge leads to ``self``'s history before the write
    (a view's base gets the usual CopySlices). ``fn``'s graph hangs off a copy of the old
    value. ``saves_result``: the node keeps ``self``, so a later write into it is an error
    at backward, as in torch."""
    if not state.grad_enabled or state.modes or not self._requires_grad:
        return self.copy_(fn(self))
    from ember._dispatch import check_inplace_target
    from ember.autograd.graph import rebase_history
    check_inplace_target(self, False, True)
    edge = grad_edge(self)
    src = self.clone()
    out = fn(src)
    state.grad_enabled = False
    try:
        self.copy_(out)
    finally:
        state.grad_enabled = True
    node = _node_class(name)()
    node.next_functions = (edge,)
    node.inner = out
    node.aliases = (src,)
    node.versions = ((self, self._version),) if saves_result else ()
    rebase_history(self, node)
    return self


class CompositeNode(Node):
    """The node of a named composite: backward differentiates the composite's own graph."""
    __slots__ = ("inner", "aliases", "versions")
    _num_outputs = 1

    def apply(self, grads):
        g = grads[0]
        if g is None:
            return [None] * len(self.next_functions)
        if self.inner is None:
            raise RuntimeError(_FREED_MSG)
        for t, v in self.versions:
            if t._version != v:
                raise RuntimeError(_version_msg(t, v))
        from ember.autograd.engine import run_backward
        wanted = [a for a, (n, _) in zip(self.aliases, self.next_functions) if n is not None]
        got = iter(run_backward([self.inner], [g], True, state.grad_enabled, inputs=wanted,
                                allow_unused=True, accumulate=False))
        grads = [next(got) if n is not None else None for n, _ in self.next_functions]
        if state.grad_enabled:          # building a graph (create_graph)
            name = type(self).__name__[:-1] + "Backward0"      # torch's double-backward node
            grads = [_linked(r, a, name) if r is not None and a._requires_grad else r
                     for r, a in zip(grads, self.aliases)]
        return grads

    def release(self):
        self.inner = self.aliases = None
        self.versions = ()


def _linked(grad, alias, name):
    """``grad`` with an edge of zero derivative to ``alias``, its node named ``name``. torch's
    fused backward kernels take their input, so under create_graph the gradient they return
    depends on it (zero where the function is piecewise linear: ReLU-like activations): a
    double backward then gives the input, and what produced it, zero gradients, not none."""
    link = _LINK.get(None)
    if link is None:
        from ember.autograd.function import Function

        class _ZeroLink(Function):
            _functorch_exempt = True        # (inside ember.func's transforms too)

            @staticmethod
            def forward(ctx, g, x):
                ctx.like = (tuple(x.shape), x.dtype)
                return g.clone()

            @staticmethod
            def backward(ctx, gg):
                import ember
                return gg, ember.zeros(ctx.like[0], dtype=ctx.like[1])
        link = _LINK[None] = _ZeroLink
    out = link.apply(grad, alias)
    node = out.grad_fn
    cls = _LINK.get(name)
    if cls is None:
        base = type(node)
        cls = _LINK[name] = type(name, (base,), {"__slots__": ()} if "__slots__" in
                                 base.__dict__ else {})
    node.__class__ = cls
    return out


_LINK: dict = {}
_CLASSES: dict = {}


def _node_class(name):
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name, (CompositeNode,), {"__slots__": ()})
    return cls
