"""The backward engine: dependency counting over the graph, a ready queue ordered like
torch's (most recently created node first; ``AccumulateGrad`` as soon as it is ready),
gradient buffers, hooks, capture for ``autograd.grad``, and freeing of saved tensors
unless ``retain_graph``.

Note [graph task]: each call of ``run_backward`` is a graph task, pushed on a per-thread
stack while it runs, so that code running inside backward (a custom Function's backward,
a hook, a reentrant checkpoint) can ask whether a node will run in the current call
(``will_run``) and whether the call runs the whole graph (``is_checkpoint_valid``).
Backward may be called reentrantly from inside backward: all engine state is per task.
"""
from __future__ import annotations

import heapq
import itertools
import sys
import threading

import numpy as np

from ember._state import state, rare as _rare
from ember._meta_tensor import Placeholder, placeholder
from ember._tensor import Tensor, _make
from ember.autograd.graph import AccumulateGrad, grad_edge, accumulate_into_grad


class GraphTask:
    __slots__ = ("needed", "accumulate", "has_inputs", "create_graph", "final_callbacks",
                 "__weakref__")

    def __init__(self, needed, accumulate, has_inputs, create_graph):
        self.needed = needed
        self.accumulate = accumulate
        self.has_inputs = has_inputs
        self.create_graph = create_graph
        self.final_callbacks = []       # queue_callback: run once the graph has run


class _TaskStack(threading.local):
    def __init__(self):
        self.stack = []


_tasks = _TaskStack()


def current_task():
    """The graph task running on this thread (None outside backward)."""
    s = _tasks.stack
    return s[-1] if s else None


def queue_callback(callback):
    """``Variable._execution_engine.queue_callback``: run ``callback()`` when the current
    backward call has run its graph, before it returns (callbacks may queue more)."""
    task = current_task()
    if task is None:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    task.final_callbacks.append(callback)


class _ExecutionEngine:
    """``torch.autograd.Variable._execution_engine``: the engine's Python entry points."""

    queue_callback = staticmethod(queue_callback)

    @staticmethod
    def is_checkpoint_valid():
        return is_checkpoint_valid()

    @staticmethod
    def run_backward(tensors, grad_tensors, keep_graph, create_graph, inputs=(),
                     allow_unreachable=True, accumulate_grad=True):
        out = run_backward(list(tensors), list(grad_tensors), keep_graph, create_graph,
                           list(inputs) if inputs else None, allow_unreachable,
                           accumulate_grad)
        return () if out is None else out


def will_run(task, node):
    """Will ``node`` run in graph task ``task``?"""
    return task is not None and node is not None and node in task.needed


def is_checkpoint_valid():
    """False inside ``autograd.grad`` or ``backward(inputs=...)`` (reentrant checkpoint can't
    run there: it would accumulate into every leaf)."""
    t = current_task()
    return t is None or (t.accumulate and not t.has_inputs)


def _edge_of(x):
    """(node, output_nr) of a Tensor or a GradientEdge."""
    if isinstance(x, Tensor):
        return grad_edge(x)
    return (x[0], x[1])


def _make_grads(outputs, grad_outputs):
    grads = []
    for i, (o, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(o, Tensor):      # a GradientEdge
            if g is None:
                raise RuntimeError("grad_outputs must be given for GradientEdge outputs")
            grads.append(g)
            continue
        if g is None:
            if o._requires_grad:
                if o._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if o._data.dtype.kind == "c":
                    raise RuntimeError(f"grad can be implicitly created only for real scalar "
                                       f"outputs but got {o.dtype}")
            if type(o._data) is Placeholder:        # a meta output gets a meta seed
                g = _make(placeholder(o._data.shape, o._data.dtype))
            else:
                g = _make(np.ones(o._data.shape, o._data.dtype))
        elif isinstance(g, Tensor):
            if g._data.shape != o._data.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{g.shape} and output[{i}] has a shape of {o.shape}.")
            if (g._data.dtype.kind == "c") != (o._data.dtype.kind == "c"):
                raise RuntimeError(f"For complex Tensors, both grad_output and output are "
                                   f"required to have the same dtype. Mismatch in dtype: "
                                   f"grad_output[{i}] has a dtype of {g.dtype} and output[{i}] "
                                   f"has a dtype of {o.dtype}.")
            if g._data.dtype != o._data.dtype and o._data.dtype.kind in "fcV":
                g = g.to(o.dtype)           # torch casts a seed of another float dtype
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
        grads.append(g)
    return grads


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 allow_unused=False, accumulate=True, materialize_grads=False):
    """Shared core of ``Tensor.backward``, ``autograd.backward`` and ``autograd.grad``.

    ``outputs``/``inputs`` hold Tensors or GradientEdges. Returns the gradients of
    ``inputs`` when ``accumulate`` is False (``autograd.grad``); with ``accumulate`` and
    ``inputs``, only those inputs get their ``.grad`` accumulated (non-leaves included)."""
    if retain_graph is None:
        retain_graph = create_graph
    grads = _make_grads(outputs, grad_outputs)     # like torch: types checked first
    if len(grad_outputs) < len(outputs):      # extra gradients are ignored, as in torch
        raise RuntimeError(f"got {len(outputs)} tensors and {len(grad_outputs)} gradients")
    roots = []
    for i, o in enumerate(outputs):
        edge = _edge_of(o)
        if edge[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               f"a grad_fn")
        roots.append(edge)

    capture = {}   # node -> list of (input index, output_nr)
    if inputs is not None:
        for k, t in enumerate(inputs):
            if isinstance(t, Tensor):
                if not t._requires_grad:
                    raise RuntimeError("One of the differentiated Tensors does not require grad")
            elif not (isinstance(t, tuple) and len(t) == 2):
                raise RuntimeError(f"all inputs have to be Tensors or GradientEdges, but got "
                                   f"{type(t).__name__}")
            e = _edge_of(t)
            capture.setdefault(e[0], []).append((k, e[1]))

    # which nodes must run: all, or (with inputs) those from which an input is reachable
    if inputs is None:
        needed, deps = _dependencies([e[0] for e in roots])
    else:
        order = _topo_nodes([e[0] for e in roots])
        needed = set()
        for n in reversed(order):   # children before parents
            if n in capture or any(nx in needed for nx, _ in n.next_functions
                                   if nx is not None):
                needed.add(n)
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
    tie = itertools.count()     # ready AccumulateGrads (equal _seq) run in the order they
    pushed = set()              # became ready, as torch's (not by address: deterministic)
    for node, _ in roots:
        if node not in pushed and deps.get(node, 0) == 0 and node in needed:
            heapq.heappush(heap, (-node._seq, next(tie), node))
            pushed.add(node)
    captured = [None] * (len(inputs) if inputs is not None else 0)

    task = GraphTask(needed, accumulate, inputs is not None, create_graph)
    tasks = _tasks.stack
    tasks.append(task)
    st = state
    prev_grad = st.grad_enabled
    st.grad_enabled = create_graph
    heappop, heappush = heapq.heappop, heapq.heappush
    try:
        while heap:
            node = heappop(heap)[2]
            gs = buffers.pop(node, None)
            if gs is None:
                gs = [None] * node._num_outputs
            is_acc = isinstance(node, AccumulateGrad)
            if node._tensor_hooks or node._retain_hooks or is_acc and node.variable is not None \
                    and node.variable._meta is not None and node.variable._meta.hooks:
                gs = _run_tensor_hooks(node, gs)
            if capture and node in capture:
                for k, nr in capture[node]:
                    g = gs[nr] if nr < len(gs) else None
                    captured[k] = g
                    if accumulate and not is_acc and g is not None and \
                            isinstance(inputs[k], Tensor) and \
                            not _retains(node, nr, inputs[k]):
                        accumulate_into_grad(inputs[k], g)
                if not is_acc and not any(nx in needed for nx, _ in node.next_functions
                                          if nx is not None):
                    continue
            if is_acc and not accumulate:
                continue
            if node._pre_hooks:
                for _, h in list(node._pre_hooks):
                    r = h(tuple(gs))
                    if r is not None:
                        gs = _check_hook_values(h, gs, r)
            if _rare[0] and st.anomaly:        # Note [rare autograd features]
                out = _apply_anomaly(node, gs)
            elif is_acc and not create_graph and type(node) is AccumulateGrad:
                out = g = r = None      # drop this loop's own references before counting
                out = node.apply(gs, _sole_owner(gs))
            else:
                out = node.apply(gs)
            if node._hooks:
                for _, h in list(node._hooks):
                    r = h(tuple(out), tuple(gs))
                    if r is not None:
                        out = _check_hook_values(h, out, r)
            if not retain_graph:
                rel = getattr(node, "release", None)
                if rel is not None:
                    rel()
            for (nx, nr), g in zip(node.next_functions, out):
                if nx is None or nx not in needed:
                    continue
                if g is not None:
                    if nx in buffers:
                        _accumulate(buffers, nx, nr, g)
                    else:
                        buf = buffers[nx] = [None] * max(nx._num_outputs, nr + 1)
                        buf[nr] = g
                d = deps[nx] - 1
                deps[nx] = d
                if d == 0:
                    heappush(heap, (-nx._seq, next(tie), nx))
        callbacks = task.final_callbacks
        while callbacks:
            callbacks.pop(0)()
    finally:
        st.grad_enabled = prev_grad
        tasks.pop()

    if accumulate:
        return None
    result = []
    for k, g in enumerate(captured):
        if g is None:
            if not allow_unused and not materialize_grads:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have "
                                   f"been used in the graph. Set allow_unused=True if this is "
                                   f"the desired behavior.")
            if materialize_grads:
                t = inputs[k]
                if not isinstance(t, Tensor):
                    raise RuntimeError("materialize_grads cannot be used when the given input "
                                       "is a GradientEdge")
                g = _make(np.zeros(t._data.shape, t._data.dtype))
                if create_graph:
                    g._requires_grad = True
        result.append(g)
    return tuple(result)


def _apply_anomaly(node, gs):
    """``node.apply`` under anomaly mode: check for NaN, print the forward traceback of
    a failing node (as a warning, like torch) and re-raise."""
    try:
        out = node.apply(gs)
        if state.anomaly_check_nan:
            for i, g in enumerate(out):
                if g is not None and g._data.dtype.kind in "fc" and np.isnan(g._data).any():
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                       f"{i}th output.")
        return out
    except Exception:
        import warnings
        trace = node._anomaly_trace
        if trace:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                          f"caused the error:\n{trace}", UserWarning, stacklevel=2)
        else:
            warnings.warn(f"Error detected in {node.name()}. No forward pass information "
                          f"available. Enable detect anomaly during forward pass for more "
                          f"information.", UserWarning, stacklevel=2)
        raise


def _dependencies(starts):
    """The nodes reachable from ``starts`` and, per node, how many edges lead into it."""
    deps = {}
    seen = set()
    stack = []
    for s in starts:
        if s is not None and s not in seen:
            seen.add(s)
            stack.append(s)
    while stack:
        for nx, _ in stack.pop().next_functions:
            if nx is not None:
                deps[nx] = deps.get(nx, 0) + 1
                if nx not in seen:
                    seen.add(nx)
                    stack.append(nx)
    return seen, deps


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


def _ref_counts(gs):
    g = gs[0]
    arr = g._data
    b = arr.base
    gb = g._storage_base
    return (sys.getrefcount(g), sys.getrefcount(arr),
            sys.getrefcount(b) if b is not None else 0,
            sys.getrefcount(gb) if gb is not None else 0)


def _calibrate():
    """The counts of fresh, sole-owned gradients: an owning one, and a view (``t()``)."""
    plain = _ref_counts([_make(np.empty((2, 3))[::1])])
    prev = state.grad_enabled
    state.grad_enabled = False
    try:
        view = _ref_counts([_make(np.empty((2, 3))).t()])
    finally:
        state.grad_enabled = prev
    return plain, view


_SOLE = None


def _sole_owner(gs):
    """Note [gradient stealing]: may ``gs[0]`` become a leaf's ``.grad`` without a copy?
    Only if nothing but the engine's list refers to the Tensor (not a root gradient, which
    ``grads`` holds; not a tensor sent to another edge, which a buffer holds; not one a hook,
    ``retain_grad``, ``autograd.grad`` capture or a custom backward kept), nothing but that
    Tensor refers to its array, and, for a view, nothing but the view refers to its base
    Tensor and nothing but the two refer to the base array. Reference counts are compared
    exactly with those of fresh tensors, so any other holder means a copy."""
    global _SOLE
    g = gs[0] if gs else None
    if type(g) is not Tensor or g._requires_grad:
        return False
    arr = g._data
    if type(arr) is not np.ndarray or not arr.flags.writeable:
        return False
    b = arr.base
    gb = g._storage_base
    if gb is not None:
        if type(gb) is not Tensor or gb._storage_base is not None or gb._data is not b or \
                gb._requires_grad:
            return False
    if b is not None and (type(b) is not np.ndarray or b.base is not None):
        return False
    view = gb is not None
    del g, arr, b, gb
    if _SOLE is None:
        _SOLE = _calibrate()
    counts = _ref_counts(gs)
    ref = _SOLE[1] if view else _SOLE[0]
    if counts[0] != ref[0] or counts[1] != ref[1] or counts[3] != ref[3]:
        return False
    return (counts[2] == 0 and not view) or counts[2] == ref[2]


def _accumulate(buffers, node, nr, g):
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * max(node._num_outputs, nr + 1)
    old = buf[nr]
    buf[nr] = g if old is None else g + old if hasattr(old._data, "layout") else old + g


def _retains(node, nr, t):
    """Whether ``t`` (output ``nr`` of ``node``) retains its grad: its retain hook has put
    the gradient into ``t.grad`` already, so ``backward(inputs=[t])`` must not add it again
    (torch accumulates it once)."""
    hooks = node._retain_hooks
    ref = hooks.get(nr) if hooks else None
    return ref is not None and ref() is t


def _run_tensor_hooks(node, gs):
    th = node._tensor_hooks
    if th:
        for nr, hooks in th.items():
            if nr < len(gs) and gs[nr] is not None:
                for _, h in list(hooks):
                    r = h(gs[nr])
                    if r is not None:
                        gs[nr] = _check_hook_value(h, gs[nr], r)
    if isinstance(node, AccumulateGrad):
        t = node.variable
        if t is not None and t._meta is not None and t._meta.hooks:
            for _, h in list(t._meta.hooks):
                r = h(gs[0])
                if r is not None:
                    gs[0] = _check_hook_value(h, gs[0], r)
    rh = node._retain_hooks
    if rh:
        for nr, ref in rh.items():
            t = ref()
            if t is not None and nr < len(gs) and gs[nr] is not None:
                m = t._autograd_meta()
                g = gs[nr]
                if m.grad is None:
                    m.grad = g.detach().clone() if not state.grad_enabled else g.clone()
                else:
                    m.grad = m.grad + g
    return gs


def _hook_name(h):
    return getattr(h, "__name__", "<unknown>")


def _check_hook_value(h, old, new):
    """torch's checks of a gradient returned by a hook: a Tensor of the same dtype and size
    as the one it replaces (``old``; None where no gradient flowed)."""
    if new is None:
        return None
    if not isinstance(new, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(new).__name__}'")
    if old is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if new._data.dtype != old._data.dtype:
        from ember.autograd.graph import _type_str
        raise RuntimeError(f"hook '{_hook_name(h)}' has changed the type of value (was "
                           f"{_type_str(old)} got {_type_str(new)})")
    if new._data.shape != old._data.shape:
        raise RuntimeError(f"hook '{_hook_name(h)}' has changed the size of value")
    return new


def _check_hook_values(h, old, new):
    """The tuple returned by a Node pre- or post-hook: one value per gradient."""
    if not isinstance(new, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(new).__name__}'")
    if len(new) != len(old):
        raise RuntimeError(f"hook '{_hook_name(h)}' has returned an incorrect number of values "
                           f"(got {len(new)}, but expected {len(old)})")
    return [_check_hook_value(h, o, n) for o, n in zip(old, new)]
