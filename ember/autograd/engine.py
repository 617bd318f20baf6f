"""The backward engine: dependency counting over the graph, a ready queue ordered like
torch's (most recently created node first), gradient buffers, hooks, capture for
``autograd.grad``, and freeing of saved tensors unless ``retain_graph``.
"""
from __future__ import annotations

import heapq

import numpy as np

from ember._state import state
from ember._tensor import Tensor, _make
from ember.autograd.graph import AccumulateGrad, grad_edge


def _make_grads(outputs, grad_outputs, create_graph):
    grads = []
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if o._requires_grad:
                if o._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if o._data.dtype.kind == "c":
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       "outputs")
            g = _make(np.ones(o._data.shape, o._data.dtype))
        elif not isinstance(g, Tensor):
            from ember._creation import as_tensor
            g = as_tensor(g, dtype=o.dtype)
        if g._data.shape != o._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {o.shape}.")
        grads.append(g)
    return grads


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 allow_unused=False, accumulate=True, materialize_grads=False):
    """Shared core of ``Tensor.backward``, ``autograd.backward`` and ``autograd.grad``.

    Returns the gradients of ``inputs`` when ``accumulate`` is False (``autograd.grad``)."""
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs, create_graph)
    roots = []
    for i, o in enumerate(outputs):
        edge = grad_edge(o)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        roots.append(edge)

    capture = {}   # node -> list of (input index, output_nr)
    input_edges = []
    if inputs is not None:
        for k, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError("inputs to autograd.grad/backward must be Tensors")
            if not t._requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            e = grad_edge(t)
            input_edges.append(e)
            capture.setdefault(e[0], []).append((k, e[1]))

    # which nodes must run: all, or (with inputs) those from which an input is reachable
    order = _topo_nodes([e[0] for e in roots])
    if inputs is not None:
        needed = set()
        for n in reversed(order):   # children before parents
            if n in capture and (not accumulate or not isinstance(n, AccumulateGrad)) or \
                    any(nx in needed for nx, _ in n.next_functions if nx is not None):
                needed.add(n)
            if accumulate and isinstance(n, AccumulateGrad) and n in capture:
                needed.add(n)
    else:
        needed = set(order)
    deps = {}
    for n in order:
        if n not in needed:
            continue
        for nx, _ in n.next_functions:
            if nx is not None and nx in needed:
                deps[nx] = deps.get(nx, 0) + 1

    buffers = {}
    for (node, nr), g in zip(roots, grads):
        _accumulate(buffers, node, nr, g)
    heap = []
    pushed = set()
    for node, _ in roots:
        if node not in pushed and deps.get(node, 0) == 0 and node in needed:
            heapq.heappush(heap, (-node._seq, id(node), node))
            pushed.add(node)
    captured = [None] * len(input_edges)

    prev_grad = state.grad_enabled
    state.grad_enabled = create_graph
    try:
        while heap:
            _, _, node = heapq.heappop(heap)
            gs = buffers.pop(node, None)
            if gs is None:
                gs = [None] * node._num_outputs
            gs = _run_tensor_hooks(node, gs)
            if node in capture:
                for k, nr in capture[node]:
                    captured[k] = gs[nr] if nr < len(gs) else None
            if isinstance(node, AccumulateGrad) and not accumulate:
                continue
            if inputs is not None and node in capture and not isinstance(node, AccumulateGrad) \
                    and not any(nx in needed for nx, _ in node.next_functions if nx is not None):
                continue
            if node._pre_hooks:
                for _, h in list(node._pre_hooks):
                    r = h(tuple(gs))
                    if r is not None:
                        gs = list(r)
            out = node.apply(gs)
            if state.anomaly and state.anomaly_check_nan:
                _check_nan(node, out)
            if node._hooks:
                for _, h in list(node._hooks):
                    r = h(tuple(out), tuple(gs))
                    if r is not None:
                        out = list(r)
            if not retain_graph and hasattr(node, "release"):
                node.release()
            for (nx, nr), g in zip(node.next_functions, out):
                if nx is None or nx not in needed:
                    continue
                if g is not None:
                    _accumulate(buffers, nx, nr, g)
                d = deps[nx] - 1
                deps[nx] = d
                if d == 0:
                    heapq.heappush(heap, (-nx._seq, id(nx), nx))
    finally:
        state.grad_enabled = prev_grad

    if accumulate:
        return None
    result = []
    for k, g in enumerate(captured):
        if g is None:
            if not allow_unused and not materialize_grads:
                raise RuntimeError("One of the differentiated Tensors appears to not have been "
                                   "used in the graph. Set allow_unused=True if this is the "
                                   "desired behavior.")
            if materialize_grads:
                t = inputs[k]
                g = _make(np.zeros(t._data.shape, t._data.dtype))
        result.append(g)
    return tuple(result)


def _topo_nodes(starts):
    """Nodes reachable from ``starts``, parents before children (reverse post-order)."""
    seen = set()
    post = []
    for s in starts:
        if s is None or s in seen:
            continue
        seen.add(s)
        stack = [(s, iter(s.next_functions))]
        while stack:
            node, it = stack[-1]
            for nx, _ in it:
                if nx is not None and nx not in seen:
                    seen.add(nx)
                    stack.append((nx, iter(nx.next_functions)))
                    break
            else:
                stack.pop()
                post.append(node)
    post.reverse()
    return post


def _accumulate(buffers, node, nr, g):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * max(node._num_outputs, nr + 1)
    old = buf[nr]
    buf[nr] = g if old is None else old + g


def _run_tensor_hooks(node, gs):
    th = node._tensor_hooks
    if th:
        for nr, hooks in th.items():
            if nr < len(gs) and gs[nr] is not None:
                for _, h in list(hooks):
                    r = h(gs[nr])
                    if r is not None:
                        gs[nr] = r
    rh = node._retain_hooks
    if rh:
        for nr, ref in rh.items():
            t = ref()
            if t is not None and nr < len(gs) and gs[nr] is not None:
                m = t._autograd_meta()
                g = gs[nr]
                if m.grad is None:
                    m.grad = g.detach().clone() if not state.grad_enabled else g
                else:
                    m.grad = m.grad + g
    if isinstance(node, AccumulateGrad):
        t = node.variable
        if t is not None and t._meta is not None and t._meta.hooks:
            for _, h in list(t._meta.hooks):
                r = h(gs[0])
                if r is not None:
                    gs[0] = r
    return gs


def _check_nan(node, out):
    for i, g in enumerate(out):
        if g is not None and np.isnan(g._data).any():
            msg = f"Function '{node.name()}' returned nan values in its {i}th output."
            if node._anomaly_trace:
                import warnings
                warnings.warn("Error detected in " + node.name() + ". Traceback of forward call "
                              "that caused the error:\n" + node._anomaly_trace)
            raise RuntimeError(msg)
