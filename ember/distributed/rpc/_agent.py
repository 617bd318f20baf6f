"""The RPC agent: ZeroMQ sockets, one I/O thread, a pool of worker threads.

Every worker binds a ROUTER (requests come in, replies go out through the caller's
identity) and opens one DEALER per peer on first use (its requests go out, their replies
come back). One I/O thread owns all of these sockets (ZeroMQ sockets are not thread-safe):
other threads hand it messages through an inproc PUSH socket guarded by a lock. A message
is ``[header, pickle, tensor buffers...]`` (``_wire.py``); the header packs the kind
(REQUEST / RESULT / ERROR) and the request id; id 0 is a one-way request (no reply).

Requests run on ``num_worker_threads`` pool threads; functions marked ``_rpc_inline``
(the RRef bookkeeping of ``rref.py``) run on the I/O thread, in arrival order. A function
that returns a Future (``@async_execution``, or an inline one) is answered when the
Future completes, without holding a thread. Callers keep ``request id -> Future``; the
I/O thread fails the ones whose timeout passes.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import struct
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

import zmq

from ember.distributed.rpc import _wire
from ember.futures import Future

REQUEST, RESULT, ERROR = 1, 2, 3
_HEADER = struct.Struct("<BQ")
_RANK = struct.Struct("<I")
_TO_PEER, _TO_CALLER, _STOP = b"P", b"C", b"S"
_POLL_MS = 50            # the I/O thread wakes at least this often (timeouts, RRef deletes)
_BATCH = 256             # messages taken from one socket before the others get a turn


class RemoteError(Exception):
    """An exception raised by a remote function, as text: re-raised by the caller with
    its type (builtin exception types; others become RuntimeError, as in torch)."""

    def __init__(self, module, qualname, text):
        super().__init__(module, qualname, text)
        self.module, self.qualname, self.text = module, qualname, text

    @classmethod
    def capture(cls, exc, info):
        if isinstance(exc, RemoteError):
            return exc
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        kind = type(exc)
        return cls(kind.__module__, kind.__qualname__, f"On {info}:\n{exc!r}\n{tb}")

    def to_exception(self):
        if self.module == "builtins":
            import builtins
            kind = getattr(builtins, self.qualname, None)
            if isinstance(kind, type) and issubclass(kind, BaseException):
                try:
                    return kind(self.text)
                except Exception:       # noqa: BLE001 - constructor wants other arguments
                    pass
        return RuntimeError(f"{self.qualname.rsplit('.', 1)[-1]}: {self.text}")


def is_async(func):
    return getattr(func, "_wrapped_async_rpc_function", None) is not None


class _Pending:
    __slots__ = ("future", "dst", "timeout")

    def __init__(self, future, dst, timeout):
        self.future, self.dst, self.timeout = future, dst, timeout


class Agent:
    """The transport of one worker: ``info`` is its WorkerInfo, ``workers`` every peer's
    (rank -> WorkerInfo), ``addresses`` their ROUTER endpoints."""

    def __init__(self, info, host, options):
        self.info = info
        self.timeout = options.rpc_timeout
        self.num_worker_threads = options.num_worker_threads
        self.ctx = zmq.Context()
        self.router = self._socket(zmq.ROUTER)
        self.address = f"tcp://{host}:{self.router.bind_to_random_port(f'tcp://{host}')}"
        inbox = f"inproc://ember-rpc-{id(self)}"
        self.pull = self._socket(zmq.PULL)
        self.pull.bind(inbox)
        self.push = self._socket(zmq.PUSH)
        self.push.connect(inbox)
        self.push_lock = threading.Lock()
        self.pool = ThreadPoolExecutor(options.num_worker_threads,
                                       thread_name_prefix=f"rpc-{info.name}")
        self.pending = {}                       # request id -> _Pending
        self.ids = itertools.count(1)
        self.oneway = collections.deque()       # (rank, frames) queued from any thread
        self.workers, self.addresses = {}, {}
        self.dealers = {}                       # rank -> DEALER (I/O thread only)
        self.heap = []                          # (deadline, request id) (I/O thread only)
        self.running = False
        self.thread = None
        self.io_ident = None

    def _socket(self, kind):
        s = self.ctx.socket(kind)
        s.linger = 0
        s.sndhwm = s.rcvhwm = 0                 # no message limit: never block or drop
        return s

    # ------------------------------------------------------------------ lifecycle
    def start(self, workers, addresses):
        self.workers, self.addresses = workers, addresses
        self.by_name = {w.name: w for w in workers.values()}
        self.running = True
        self.thread = threading.Thread(target=self._loop, name=f"rpc-io-{self.info.name}",
                                       daemon=True)
        self.thread.start()

    def stop(self):
        """Stop the I/O thread, close every socket, fail what is still pending."""
        if not self.running:
            return
        self.running = False
        with self.push_lock:
            self.push.send_multipart([_STOP])
        self.thread.join(10)
        with self.push_lock:
            self.push.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
        error = RuntimeError(f"RPC agent of {self.info} was shut down")
        for msg_id in list(self.pending):
            p = self.pending.pop(msg_id, None)
            if p is not None and not p.future.done():
                p.future.set_exception(error)
        self.ctx.destroy(linger=0)

    def is_idle(self):
        return not self.pending

    # ------------------------------------------------------------------ client side
    def request(self, dst, frames, timeout):
        """Send ``frames`` (``_wire.encode`` output) to rank ``dst``; a Future of the reply.
        ``timeout`` seconds, 0 = none."""
        msg_id = next(self.ids)
        fut = Future()
        self.pending[msg_id] = _Pending(fut, dst, timeout)
        self._send(_TO_PEER + _RANK.pack(dst), [_HEADER.pack(REQUEST, msg_id)] + frames)
        return fut

    def notify(self, dst, frames):
        """A one-way request from any thread (also ``__del__``): sent by the I/O thread."""
        self.oneway.append((dst, [_HEADER.pack(REQUEST, 0)] + frames))

    def _send(self, route, frames):
        if threading.get_ident() == self.io_ident:
            self._route(route, frames)
            return
        with self.push_lock:
            if not self.running:
                raise RuntimeError(f"RPC agent of {self.info} is shut down")
            self.push.send_multipart([route] + frames, copy=False)

    # ------------------------------------------------------------------ I/O thread
    def _loop(self):
        self.io_ident = threading.get_ident()
        self.poller = zmq.Poller()
        self.poller.register(self.router, zmq.POLLIN)
        self.poller.register(self.pull, zmq.POLLIN)
        try:
            while self._step():
                pass
        finally:
            for s in [self.router, self.pull, *self.dealers.values()]:
                s.close(0)

    def _step(self):
        wait = _POLL_MS
        if self.heap:
            wait = min(wait, max(0.0, (self.heap[0][0] - time.monotonic()) * 1000))
        for sock, _ in self.poller.poll(wait):
            if sock is self.pull:
                if not self._drain_outbox():
                    return False
            elif sock is self.router:
                self._drain(sock, self._on_request)
            else:
                self._drain(sock, self._on_reply)
        while self.oneway:
            dst, frames = self.oneway.popleft()
            self._to_peer(dst, frames)
        if self.heap:
            self._expire()
        return True

    def _drain(self, sock, handle):
        for _ in range(_BATCH):
            try:
                frames = sock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            handle(frames)

    def _drain_outbox(self):
        for _ in range(_BATCH):
            try:
                frames = self.pull.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return True
            route = frames[0].bytes
            if route == _STOP:
                return False
            self._route(route, frames[1:])
        return True

    def _route(self, route, frames):
        if route[:1] == _TO_PEER:
            self._to_peer(_RANK.unpack(route[1:])[0], frames)
        else:
            self.router.send_multipart([route[1:]] + frames, copy=False)

    def _to_peer(self, dst, frames):
        head = frames[0]
        kind, msg_id = _HEADER.unpack(getattr(head, "bytes", head))
        sock = self.dealers.get(dst)
        if sock is None:
            sock = self.dealers[dst] = self._socket(zmq.DEALER)
            sock.identity = _RANK.pack(self.info.id)
            sock.connect(self.addresses[dst])
            self.poller.register(sock, zmq.POLLIN)
        p = self.pending.get(msg_id)
        if p is not None and p.timeout > 0:
            heapq.heappush(self.heap, (time.monotonic() + p.timeout, msg_id))
        sock.send_multipart(frames, copy=False)

    def _expire(self):
        now = time.monotonic()
        while self.heap and self.heap[0][0] <= now:
            _, msg_id = heapq.heappop(self.heap)
            p = self.pending.pop(msg_id, None)
            if p is not None:
                p.future.set_exception(RuntimeError(
                    f"RPCErr:1:RPC ran for more than set timeout ({int(p.timeout * 1000)} ms) "
                    f"and will now be marked with an error (RPC to {self.workers[p.dst]})"))

    def _on_reply(self, frames):
        kind, msg_id = _HEADER.unpack(frames[0].bytes)
        p = self.pending.pop(msg_id, None)
        if p is None:
            return                           # timed out already
        try:
            value = _wire.decode(frames[1:])
        except BaseException as e:          # noqa: BLE001 - the caller gets it
            p.future.set_exception(e)
            return
        if kind == ERROR:
            p.future.set_exception(value.to_exception())
        else:
            p.future.set_result(value)

    def _on_request(self, frames):
        caller = frames[0].bytes
        _, msg_id = _HEADER.unpack(frames[1].bytes)
        try:
            func, args, kwargs = _wire.decode(frames[2:])
        except BaseException as e:          # noqa: BLE001 - sent back to the caller
            self._reply(caller, msg_id, None, RemoteError.capture(e, self.info))
            return
        if getattr(func, "_rpc_inline", False):
            self._serve(caller, msg_id, func, args, kwargs)
        else:
            self.pool.submit(self._serve, caller, msg_id, func, args, kwargs)

    # ------------------------------------------------------------------ server side
    def run(self, func, args, kwargs):
        """Call ``func`` here and now; a Future of its value (an async function's Future
        is followed). Errors become RemoteError naming this worker."""
        out = Future()
        try:
            value = func(*args, **kwargs)
            if is_async(func) or (isinstance(value, Future) and getattr(func, "_rpc_inline", False)):
                if not isinstance(value, Future):
                    raise TypeError(f"async_execution function {func.__qualname__} must "
                                    f"return a Future, got {type(value).__name__}")
                value.add_done_callback(lambda f: self._settle(out, f))
                return out
        except BaseException as e:          # noqa: BLE001 - delivered to the caller
            out.set_exception(RemoteError.capture(e, self.info))
            return out
        out.set_result(value)
        return out

    def _settle(self, out, fut):
        try:
            out.set_result(fut.wait())
        except BaseException as e:          # noqa: BLE001 - delivered to the caller
            out.set_exception(RemoteError.capture(e, self.info))

    def _serve(self, caller, msg_id, func, args, kwargs):
        self.run(func, args, kwargs).add_done_callback(
            lambda f: self._reply(caller, msg_id, *_outcome(f)))

    def _reply(self, caller, msg_id, value, error):
        if msg_id == 0 or not self.running:
            return
        try:
            if error is None:
                frames = [_HEADER.pack(RESULT, msg_id)] + _wire.encode(value)
            else:
                frames = [_HEADER.pack(ERROR, msg_id)] + _wire.encode(error)
        except BaseException as e:          # noqa: BLE001 - e.g. an unpicklable result
            frames = [_HEADER.pack(ERROR, msg_id)] + _wire.encode(RemoteError.capture(e, self.info))
        try:
            self._send(_TO_CALLER + caller, frames)
        except RuntimeError:
            pass                             # shut down meanwhile


def _outcome(fut):
    """(value, None) or (None, RemoteError) of a completed Future."""
    try:
        return fut.wait(), None
    except RemoteError as e:
        return None, e
