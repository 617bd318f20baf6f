"""The RPC agent: ZeroMQ sockets, worker threads that take turns reading requests, and
one I/O thread for replies.

Every worker binds two ROUTERs (on tcp, and on ipc paths that peers on the same host
use): one for requests, one for the replies to its own requests. Messages go out through
DEALER sockets private to the sending thread (one per peer and ROUTER, opened on first
use; a ZeroMQ socket must stay with one thread), so a caller sends its request itself and
a worker thread sends its reply itself.

The ``num_worker_threads`` worker threads take turns (leader/followers, under a lock that
hands the socket from thread to thread) reading the request ROUTER: the leader takes a
request, decodes it, lets the next thread lead, and runs it. No thread hop lies between
the socket and the function. Functions marked ``_rpc_inline`` (the RRef bookkeeping of
``rref.py``) run while the lead is held, so they run in arrival order. A function that
returns a Future (``@async_execution``, or an inline one) is answered when the Future
completes, without holding a thread. The I/O thread reads the reply ROUTER (it never runs
user code, so replies are taken even while every worker thread is busy), completes the
callers' Futures, fails calls whose timeout passed and sends the one-way messages queued
by ``RRef.__del__`` (which may run in the middle of another send); when no worker thread
is free to lead it reads the requests itself, running the inline ones and queueing the
rest, so RRef bookkeeping never waits for a user function to end.

A message is ``[header, pickle, tensor buffers...]`` (``_wire.py``); the header packs the
kind (REQUEST / RESULT / ERROR), the request id (0: one-way, no reply) and the sender's
rank.
"""
from __future__ import annotations

import collections
import os
import queue
import socket
import struct
import tempfile
import threading
import time
import traceback
import weakref

import zmq

from ember.distributed.rpc import _wire
from ember.futures import Future

REQUEST, RESULT, ERROR = 1, 2, 3
_HEADER = struct.Struct("<BQI")
_POLL_MS = 20            # the I/O thread wakes at least this often (timeouts, RRef deletes)
_BATCH = 512             # messages taken from the ROUTER between those chores
_COPY_BELOW = 1 << 16    # frames smaller than this are copied into ZeroMQ (cheaper than lending)
_SNDMORE = zmq.SNDMORE


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
    __slots__ = ("future", "dst", "timeout", "deadline")

    def __init__(self, future, dst, timeout):
        self.future, self.dst, self.timeout = future, dst, timeout
        self.deadline = time.monotonic() + timeout if timeout > 0 else None


class Agent:
    """The transport of one worker: ``info`` is its WorkerInfo, ``workers`` every peer's
    (rank -> WorkerInfo), ``addresses`` their endpoints ``(tcp, ipc, host)``."""

    def __init__(self, info, host, options):
        self.info = info
        self.timeout = options.rpc_timeout
        self.num_worker_threads = options.num_worker_threads
        self.ctx = zmq.Context()
        self.ipc_paths = []
        self.router, req = self._bind(host, "req")      # read by the worker threads
        self.replies, rep = self._bind(host, "rep")     # read by the I/O thread
        self.address = {"host": socket.gethostname(), "req": req, "rep": rep}
        self.control = f"inproc://ember-rpc-control-{id(self)}"
        self.stop_socket = self._socket(zmq.PULL)
        self.stop_socket.bind(self.control)
        self.lead = threading.Lock()            # held by the thread reading requests
        self.jobs = queue.SimpleQueue()         # (fn, args) for the worker threads
        self.local = threading.local()          # .out: (rank, ROUTER) -> this thread's DEALER
        self.pending = {}                       # request id -> _Pending
        self.ids = iter(range(1, 1 << 63))      # next() is atomic
        self.oneway = collections.deque()       # (rank, frames) queued from any thread
        self.workers, self.addresses = {}, {}
        self.running = False
        self.thread = None
        self.threads = []

    def _socket(self, kind):
        s = self.ctx.socket(kind)
        s.linger = 0
        s.sndhwm = s.rcvhwm = 0                 # no message limit: never block or drop
        return s

    def _bind(self, host, tag):
        """A ROUTER bound on tcp (random port) and ipc; it and its (tcp, ipc) endpoints."""
        sock = self._socket(zmq.ROUTER)
        tcp = f"tcp://{host}:{sock.bind_to_random_port(f'tcp://{host}')}"
        path = os.path.join(tempfile.gettempdir(),
                            f"ember-rpc-{os.getpid()}-{id(self):x}-{tag}.ipc")
        sock.bind(f"ipc://{path}")
        self.ipc_paths.append(path)
        return sock, (tcp, f"ipc://{path}")

    # ------------------------------------------------------------------ lifecycle
    def start(self, workers, addresses):
        self.workers, self.addresses = workers, addresses
        self.by_name = {w.name: w for w in workers.values()}
        self.running = True
        self.thread = threading.Thread(target=self._loop, name=f"rpc-io-{self.info.name}",
                                       daemon=True)
        self.thread.start()
        self.threads = [threading.Thread(target=self._work, name=f"rpc-{self.info.name}-{i}",
                                         daemon=True)
                        for i in range(self.num_worker_threads)]
        for t in self.threads:
            t.start()

    def stop(self):
        """Stop the threads, close every socket, fail what is still pending."""
        was_running, self.running = self.running, False
        if was_running:
            stop = self.ctx.socket(zmq.PUSH)
            stop.connect(self.control)
            stop.send(b"stop")
            self.thread.join(10)
            stop.close(0)
            if self.lead.acquire(timeout=1):    # no worker thread is reading requests
                self.lead.release()
        error = RuntimeError(f"RPC agent of {self.info} was shut down")
        for msg_id in list(self.pending):
            p = self.pending.pop(msg_id, None)
            if p is not None and not p.future.done():
                p.future.set_exception(error)
        self.ctx.destroy(linger=0)
        _wire.unlink_created()
        for path in self.ipc_paths:
            try:
                os.unlink(path)
            except OSError:
                pass

    def submit(self, fn, *args):
        """Run ``fn(*args)`` on a worker thread."""
        self.jobs.put((fn, args))

    # ------------------------------------------------------------------ sending
    def _out(self, dst, to):
        """This thread's DEALER to ROUTER ``to`` ("req" / "rep") of rank ``dst`` (ipc on
        the same host, else tcp)."""
        socks = getattr(self.local, "out", None)
        if socks is None:
            socks = self.local.out = {}
            weakref.finalize(threading.current_thread(), _close_all, socks)
        sock = socks.get((dst, to))
        if sock is None:
            if not self.running:
                raise RuntimeError(f"RPC agent of {self.info} is shut down")
            tcp, ipc = self.addresses[dst][to]
            sock = socks[(dst, to)] = self._socket(zmq.DEALER)
            sock.connect(ipc if self.same_host(dst) else tcp)
        return sock

    def same_host(self, dst):
        return self.addresses[dst]["host"] == self.address["host"]

    def _send(self, dst, frames, to="req"):
        try:
            sock = self._out(dst, to)
            last = len(frames) - 1
            for i, frame in enumerate(frames):     # small frames copied, large ones lent
                sock.send(frame, _SNDMORE if i < last else 0, copy=len(frame) < _COPY_BELOW)
        except zmq.ZMQError as e:
            raise RuntimeError(f"RPC agent of {self.info} could not send to "
                               f"{self.workers[dst]}: {e}") from None

    def request(self, dst, frames, timeout):
        """Send ``frames`` (``_wire.encode`` output) to rank ``dst``; a Future of the reply.
        ``timeout`` seconds, 0 = none."""
        msg_id = next(self.ids)
        fut = Future()
        self.pending[msg_id] = _Pending(fut, dst, timeout)
        try:
            self._send(dst, [_HEADER.pack(REQUEST, msg_id, self.info.id)] + frames)
        except RuntimeError:
            self.pending.pop(msg_id, None)
            raise
        return fut

    def notify(self, dst, frames):
        """A one-way request from any thread (also ``__del__``): sent by the I/O thread."""
        self.oneway.append((dst, [_HEADER.pack(REQUEST, 0, self.info.id)] + frames))

    # ------------------------------------------------------------------ I/O thread
    def _loop(self):
        poller = zmq.Poller()
        poller.register(self.replies, zmq.POLLIN)
        poller.register(self.stop_socket, zmq.POLLIN)
        next_scan = next_shm_scan = 0.0
        while True:
            events = dict(poller.poll(_POLL_MS))
            if self.stop_socket in events:
                return
            if self.replies in events:
                self._drain()
            while self.oneway:
                dst, frames = self.oneway.popleft()
                try:
                    self._send(dst, frames)
                except RuntimeError:
                    pass
            if self.lead.acquire(blocking=False):   # every worker thread is busy:
                try:                                # keep RRef bookkeeping going
                    self._take_requests()
                finally:
                    self.lead.release()
            now = time.monotonic()
            if now >= next_scan:
                next_scan = now + _POLL_MS / 1000
                self._expire(now)
            if _wire.shm_created and now >= next_shm_scan:
                next_shm_scan = now + 2.0
                _wire.forget_taken()

    def _drain(self):
        replies = self.replies
        for _ in range(_BATCH):
            if not replies.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return
            frames = replies.recv_multipart(copy=False)
            kind, msg_id, _ = _HEADER.unpack(frames[1].bytes)
            try:
                self._on_reply(kind, msg_id, frames[2:])
            except Exception:               # noqa: BLE001 - a user callback failed: go on
                traceback.print_exc()

    # ------------------------------------------------------------------ worker threads
    def _work(self):
        """Lead (read one request, or take a job), hand the lead on, run; repeat."""
        while True:
            with self.lead:
                job = self._next_job()
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except BaseException:           # noqa: BLE001 - fn reports its own errors
                traceback.print_exc()
            del job, fn, args               # drop the arguments (RRefs) before waiting

    def _take_requests(self):
        """Read the requests waiting now (holding the lead): run the inline ones, queue
        the others for the worker threads."""
        router = self.router
        for _ in range(_BATCH):
            if not router.getsockopt(zmq.EVENTS) & zmq.POLLIN:
                return
            frames = router.recv_multipart(copy=False)
            kind, msg_id, src = _HEADER.unpack(frames[1].bytes)
            job = self._on_request(src, msg_id, frames[2:])
            if job is not None:
                self.jobs.put(job)

    def _next_job(self):
        router = self.router
        while self.running:
            try:
                return self.jobs.get_nowait()
            except queue.Empty:
                pass
            try:
                if not router.getsockopt(zmq.EVENTS) & zmq.POLLIN and not router.poll(_POLL_MS):
                    continue
                frames = router.recv_multipart(copy=False)
            except zmq.ZMQError:
                return None                 # closed by stop()
            kind, msg_id, src = _HEADER.unpack(frames[1].bytes)
            job = self._on_request(src, msg_id, frames[2:])
            if job is not None:
                return job
        return None

    def _expire(self, now):
        for msg_id, p in list(self.pending.items()):
            if p.deadline is not None and p.deadline <= now and self.pending.pop(msg_id, None):
                try:
                    p.future.set_exception(RuntimeError(
                        f"RPCErr:1:RPC ran for more than set timeout ({int(p.timeout * 1000)} "
                        f"ms) and will now be marked with an error (RPC to "
                        f"{self.workers[p.dst]})"))
                except Exception:           # noqa: BLE001 - a user callback failed: go on
                    traceback.print_exc()

    def _on_reply(self, kind, msg_id, frames):
        p = self.pending.pop(msg_id, None)
        if p is None:                        # timed out already: free what it carries
            try:
                _wire.decode(frames)
            except BaseException:           # noqa: BLE001 - nobody wants it
                pass
            return
        try:
            value = _wire.decode(frames)
        except BaseException as e:          # noqa: BLE001 - the caller gets it
            p.future.set_exception(e)
            return
        if kind == ERROR:
            p.future.set_exception(value.to_exception())
        else:
            p.future.set_result(value)

    def _on_request(self, src, msg_id, frames):
        """Decode a request; run it now if it is inline, else return the job."""
        try:
            func, args, kwargs = _wire.decode(frames)
        except BaseException as e:          # noqa: BLE001 - sent back to the caller
            self._reply(src, msg_id, None, RemoteError.capture(e, self.info))
            return None
        if getattr(func, "_rpc_inline", False):
            try:
                self._serve(src, msg_id, func, args, kwargs)
            except Exception:               # noqa: BLE001 - a user callback failed: go on
                traceback.print_exc()
            return None
        return self._serve, (src, msg_id, func, args, kwargs)

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

    def _serve(self, src, msg_id, func, args, kwargs):
        self.run(func, args, kwargs).add_done_callback(
            lambda f: self._reply(src, msg_id, *_outcome(f)))

    def _reply(self, dst, msg_id, value, error):
        if msg_id == 0 or not self.running:
            return
        try:
            if error is None:
                frames = [_HEADER.pack(RESULT, msg_id, self.info.id)] + _wire.encode(
                    value, self.same_host(dst))
            else:
                frames = [_HEADER.pack(ERROR, msg_id, self.info.id)] + _wire.encode(error)
        except BaseException as e:          # noqa: BLE001 - e.g. an unpicklable result
            frames = [_HEADER.pack(ERROR, msg_id, self.info.id)] + _wire.encode(
                RemoteError.capture(e, self.info))
        try:
            self._send(dst, frames, "rep")
        except RuntimeError:
            pass                             # shut down meanwhile


def _close_all(socks):
    """Close the DEALERs of a thread that has ended (nobody else uses them)."""
    for sock in socks.values():
        sock.close(0)


def _outcome(fut):
    """(value, None) or (None, RemoteError) of a completed Future."""
    try:
        return fut.wait(), None
    except RemoteError as e:
        return None, e
