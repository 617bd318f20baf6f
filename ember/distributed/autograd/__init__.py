"""``torch.distributed.autograd``: backward through RPCs.

While a ``context()`` is active on a thread, every RPC it sends carries the context id
in its header, and the receiver runs the call inside the same context. A message whose
tensors require grad records a ``SendRpcBackward`` node on the sending side (its edges
lead to those tensors) and a ``RecvRpcBackward`` node on the receiving side (the
received tensors are its outputs), both tagged with one autograd message id
(``worker id << 48 | counter``, like context ids).

``backward(context_id, roots)`` runs the graph here from the roots (``_Pass``, torch's
FAST mode: the send nodes of the context count as roots too, fed when their gradients
arrive); leaves' gradients are accumulated into the context, not ``.grad``; a recv node
sends its gradients back to the sender (``_backward_from_send``), which continues from
the matching send node the same way. Every worker waits for the gradients it sent on to
be processed, so ``backward`` returns when all the work it caused has finished. Leaves'
post-accumulate-grad hooks and ``queue_callback`` work as in local backward: this is
how DDP's reducer averages the gradients in the context (``_grads_target``).
"""
from __future__ import annotations

import heapq
import itertools
import threading
from contextlib import contextmanager

import numpy as np

from ember._state import state
from ember._tensor import _make
from ember.autograd import engine
from ember.autograd.graph import AccumulateGrad, Node, grad_edge

__all__ = ["context", "backward", "get_gradients", "is_available"]

_lock = threading.Lock()
_contexts = {}                  # context id -> _Context
_context_ids = itertools.count()
_message_ids = itertools.count()
_pass_ids = itertools.count()
class _Local(threading.local):
    context_id = None           # the context active on this thread (None: none)


_local = _Local()


class _Context:
    __slots__ = ("id", "sends", "grads", "lock", "backward_pass")

    def __init__(self, context_id):
        self.id = context_id
        self.backward_pass = None   # the _Pass running or last run here
        self.sends = {}             # autograd message id -> SendRpcBackward
        self.grads = {}             # leaf tensor -> its accumulated gradient
        self.lock = threading.RLock()


class SendRpcBackward(Node):
    """Recorded where tensors requiring grad leave this worker: passes the gradients that
    come back from the receiver on to those tensors (one gradient per sent tensor)."""

    def __init__(self, tensors):
        super().__init__(tuple(grad_edge(t) for t in tensors))

    @property
    def _num_outputs(self):
        return len(self.next_functions)

    def apply(self, grads):
        return list(grads)


class RecvRpcBackward(Node):
    """The ``grad_fn`` of tensors received in a context: their gradients are sent back to
    worker ``src``, to the send node of message ``message_id``."""

    def __init__(self, context_id, src, message_id, n):
        super().__init__(())
        self.context_id, self.src, self.message_id, self.n = context_id, src, message_id, n

    @property
    def _num_outputs(self):
        return self.n

    def apply(self, grads):
        return []


def is_available():
    """True: distributed autograd rides on ember's RPC."""
    return True


def _worker_id():
    from ember.distributed.rpc import api
    return api._current().info.id


def _retrieve(context_id):
    ctx = _contexts.get(context_id)
    if ctx is None:
        raise RuntimeError(f"Could not find autograd context with id: {context_id}")
    return ctx


def _get_or_create(context_id):
    with _lock:
        ctx = _contexts.get(context_id)
        if ctx is None:
            ctx = _contexts[context_id] = _Context(context_id)
        return ctx


@contextmanager
def context():
    """A new distributed autograd context for the calls made inside; yields its id
    (``worker id << 48 | counter``). On exit it is released here and on every peer."""
    context_id = (_worker_id() << 48) | next(_context_ids)
    _get_or_create(context_id)
    previous = _local.context_id
    _local.context_id = context_id
    try:
        yield context_id
    finally:
        _local.context_id = previous
        _release(context_id)
        _release_on_peers(context_id)


def _current_id():
    """The id of the context active on this thread, or -1."""
    cid = _local.context_id
    return -1 if cid is None else cid


@contextmanager
def _active(context_id):
    """Run the body inside ``context_id`` (a request that came with it); no-op for -1."""
    if context_id == -1:
        yield
        return
    previous = _local.context_id
    _local.context_id = context_id
    try:
        yield
    finally:
        _local.context_id = previous


def _release(context_id):
    with _lock:
        _contexts.pop(context_id, None)


_release._rpc_inline = True


def _release_on_peers(context_id):
    from ember.distributed.rpc import _wire, api
    agent = api._agent
    if agent is None or not agent.running:
        return
    for rank in agent.workers:
        if rank != agent.info.id:
            agent.notify(rank, _wire.encode((_release, (context_id,), {})))


# ---------------------------------------------------------------------- RPC hooks
def _on_send(context_id, tensors):
    """Before sending a message of ``context_id`` holding ``tensors``: the autograd message
    id of the send node recorded for those requiring grad, or -1 (none do)."""
    if context_id == -1 or not state.grad_enabled:
        return -1
    needing = [t for t in tensors if t._requires_grad]
    if not needing:
        return -1
    ctx = _get_or_create(context_id)
    message_id = (_worker_id() << 48) | next(_message_ids)
    with ctx.lock:
        ctx.sends[message_id] = SendRpcBackward(needing)
    return message_id


def _on_recv(context_id, src, message_id, tensors):
    """After receiving a message of ``context_id``: the context exists here, and the
    received tensors requiring grad become outputs of a recv node."""
    if context_id == -1:
        return
    _get_or_create(context_id)
    if message_id == -1:
        return
    needing = [t for t in tensors if t._requires_grad]
    node = RecvRpcBackward(context_id, src, message_id, len(needing))
    for k, t in enumerate(needing):
        t._grad_fn, t._output_nr = node, k


# ---------------------------------------------------------------------- backward
class _Pass:
    """One backward pass of a context on this worker (torch's FAST mode): dependencies are
    counted once over the graph below the local roots and *every* send node of the
    context; each send node is ready when its gradients arrive from the receiver. Ready
    nodes run under the context's lock; a recv node that is ready sends its gradients on."""

    def __init__(self, pass_id, roots):
        self.id = pass_id
        self.order = engine._topo_nodes(roots)
        self.deps = {}
        for n in self.order:
            for nx, _ in n.next_functions:
                if nx is not None:
                    self.deps[nx] = self.deps.get(nx, 0) + 1
        self.buffers = {}
        self.heap = []
        self.tie = itertools.count()

    def feed(self, node, grads):
        """Gradients for the outputs of ``node`` (a root or a send node)."""
        for nr, g in enumerate(grads):
            if g is not None:
                engine._accumulate(self.buffers, node, nr, g)
        if self.deps.get(node, 0) == 0:
            heapq.heappush(self.heap, (-node._seq, next(self.tie), node))

    def run(self, ctx, retain_graph):
        """Run every ready node; the Futures of the gradients sent to other workers."""
        futures = []
        prev = state.grad_enabled
        state.grad_enabled = False
        try:
            while self.heap:
                _, _, node = heapq.heappop(self.heap)
                gs = self.buffers.pop(node, None) or [None] * node._num_outputs
                gs = engine._run_tensor_hooks(node, gs)
                if isinstance(node, AccumulateGrad):
                    if node.variable is not None and gs[0] is not None:
                        old = ctx.grads.get(node.variable)
                        ctx.grads[node.variable] = gs[0] if old is None else old + gs[0]
                        _post_accumulate_hooks(node.variable)
                    continue
                if isinstance(node, RecvRpcBackward):
                    if any(g is not None for g in gs):
                        futures.append(_send_back(ctx, self.id, node, gs, retain_graph))
                    continue
                out = node.apply(gs)
                if not retain_graph and hasattr(node, "release"):
                    node.release()
                for (nx, nr), g in zip(node.next_functions, out):
                    if nx is None:
                        continue
                    if g is not None:
                        engine._accumulate(self.buffers, nx, nr, g)
                    self.deps[nx] -= 1
                    if self.deps[nx] == 0:
                        heapq.heappush(self.heap, (-nx._seq, next(self.tie), nx))
        finally:
            state.grad_enabled = prev
        return futures


def _post_accumulate_hooks(t):
    """The leaf's post-accumulate-grad hooks (DDP's reducer): they find the gradient in the
    context through ``_grads_target``."""
    m = t._meta
    if m is not None and m.post_acc_hooks:
        for _, hook in list(m.post_acc_hooks):
            hook(t)


def _grads_target():
    """During a distributed backward pass on this thread: its context's ``{leaf: grad}``
    (where DDP reads and writes gradients instead of ``.grad``); else None."""
    return getattr(_local, "grads", None)


def _run_pass(ctx, run):
    """``run()`` (a pass's ready nodes; the Futures it sent) as one local graph task:
    ``queue_callback`` works inside, and the callbacks run once the gradients sent on have
    been processed."""
    task = engine.GraphTask(None, True, False, False)
    engine._tasks.stack.append(task)
    previous = getattr(_local, "grads", None)
    _local.grads = ctx.grads
    try:
        _wait(run())
        callbacks = task.final_callbacks
        while callbacks:
            callbacks.pop(0)()
    finally:
        _local.grads = previous
        engine._tasks.stack.pop()


def _send_back(ctx, pass_id, node, grads, retain_graph):
    from ember.distributed.rpc import api
    return api.rpc_async(node.src, _backward_from_send,
                         args=(ctx.id, pass_id, node.message_id, grads, retain_graph))


def _wait(futures):
    errors = []
    for f in futures:
        try:
            f.wait()
        except Exception as e:              # noqa: BLE001 - all finish, the first is raised
            errors.append(e)
    if errors:
        raise errors[0]


def backward(context_id, roots, retain_graph=False):
    """Backward from the scalar tensors ``roots`` through every worker the graph spans;
    leaves' gradients go to each worker's context ``context_id`` (``get_gradients``)."""
    ctx = _retrieve(context_id)
    roots = list(roots)
    edges = []
    for r in roots:
        if not r._requires_grad:
            raise RuntimeError("requires_grad not set on root")
        if r.numel() != 1:
            raise RuntimeError(f"{r!r} is not a scalar, all roots need to be scalar")
        edge = grad_edge(r)
        if edge[0] is None:
            raise RuntimeError("requires_grad not set on root")
        edges.append(edge)
    pass_id = (_worker_id() << 48) | next(_pass_ids)

    def run():
        with ctx.lock:
            sends = list(ctx.sends.values())
            p = ctx.backward_pass = _Pass(pass_id, [e[0] for e in edges] + sends)
            for (node, nr), r in zip(edges, roots):
                grads = [None] * max(node._num_outputs, nr + 1)
                grads[nr] = _make(np.ones(r._data.shape, r._data.dtype))
                p.feed(node, grads)
            return p.run(ctx, retain_graph)
    _run_pass(ctx, run)


def _backward_from_send(context_id, pass_id, message_id, grads, retain_graph):
    """Gradients for the tensors of message ``message_id`` arrived: continue from there."""
    ctx = _retrieve(context_id)

    def run():
        with ctx.lock:
            send = ctx.sends.get(message_id)
            if send is None:
                raise RuntimeError(f"Could not find send function for autograd message id "
                                   f"{message_id} in context {context_id}")
            p = ctx.backward_pass
            if p is None or p.id != pass_id:
                p = ctx.backward_pass = _Pass(pass_id, list(ctx.sends.values()))
            p.feed(send, grads)
            return p.run(ctx, retain_graph)
    _run_pass(ctx, run)


def get_gradients(context_id):
    """``{tensor: gradient}`` accumulated on this worker in context ``context_id``."""
    ctx = _retrieve(context_id)
    with ctx.lock:
        return dict(ctx.grads)
