"""The RPC agent: ZeroMQ sockets, two I/O threads taking turns, a pool of worker threads.

Every worker binds an *inbox* (a PULL socket on an ipc path) where requests from workers on
its host arrive, and a ROUTER on tcp for workers on other hosts. Requests go out through
sockets private to the sending thread (PUSH to a peer's inbox, DEALER to a remote ROUTER;
one per peer, opened on first use; ZeroMQ sockets must stay with one thread).

Replies from a peer on this host go to a *reply box* of the calling thread: a PULL socket
bound on ``<ipc path>-b<box id>.ipc``, named in the request's header; the callee answers
through a PUSH socket of its own to that path. The thread that waits for a reply reads its
box itself (the Future's ``_driver``, ``_drive``) and completes every reply it finds there,
so ``rpc_sync`` needs no thread to wake it. Boxes with calls that
nobody may be waiting for (``rpc_async``, RRef bookkeeping) are *watched*: the leading I/O
thread polls their file descriptors too and reads them, each time it wakes, when no waiter
holds them (so callbacks fire with nobody calling ``wait``). Whoever reads a box holds its
lock. Replies from other hosts (box 0) come back to the ROUTER. The boxes and sockets of a
thread that has ended go to the next new thread.

The leading I/O thread owns the inbox and the ROUTER ("the ROUTER" below means both): it
hands requests to the pool, fails calls whose
timeout passed, sends the one-way messages queued by ``RRef.__del__`` (which may run
inside another send), and fails at once the calls to a peer on this host whose process
has exited.

A message is ``[header + pickle, tensor buffers...]`` (``_wire.py``); the header packs the
kind (REQUEST / RESULT / ERROR / PROFILED, with the PLAIN flag when the pickle needs no
persistent ids: ``pickle.loads`` reads it, and FLAT when such a result holds tensors in
slots), the number of buffer frames, the request id
(0: one-way, no reply), the sender's rank, the reply box, and the distributed autograd
context id and autograd message id (-1: none; see ``ember.distributed.autograd``): a
request runs inside its context, and the tensors requiring grad of requests and replies
get send/recv nodes. A PROFILED request runs under a profile and its reply is ``(value, events)``
(``_profiling.py``). A request arriving while no I/O thread runs one is run by the
leading I/O thread itself, which sends the reply, lending the ROUTER to the other I/O
thread meanwhile, which takes it only if the request runs longer than ``_LEND_S``
(``_loop``); requests arriving while one runs go to ``num_worker_threads`` pool threads.
So a stream of short requests runs with no thread hand-off at all. Functions marked
``_rpc_inline`` (the RRef bookkeeping of ``rref.py``) run on the I/O thread that holds the
ROUTER, in arrival order. A function that returns a Future (``@async_execution``, or an
inline one) is answered when the Future completes, without holding a thread.
"""
from __future__ import annotations

import collections
import itertools
import os
import queue
import socket
import struct
import tempfile
import threading
import time
import traceback
import types
import weakref

try:
    import zmq
except ImportError:
    raise ImportError("ember.distributed.rpc runs on ZeroMQ: install the optional extra "
                      "'ember[rpc]' (pyzmq)") from None

from ember.distributed import autograd as dist_autograd
from ember.distributed.rpc import _cma, _profiling, _wire
from ember.futures import Future

REQUEST, RESULT, ERROR, PROFILED = 1, 2, 3, 4     # PROFILED: a request to run profiled
PLAIN = 0x80             # kind flag: a plain pickle (``_wire.loads_call`` / ``loads`` read it)
FLAT = 0x40              # kind flag of a PLAIN result: tensors in slots (``loads_result``)
LENT = 0x20              # kind flag of a result: the sender holds arrays until released
_FLAGS = PLAIN | FLAT | LENT
_HEADER = struct.Struct("<BIQIIqq")  # kind, buffers, request id, sender, box, ctx id, ae id
NO_AUTOGRAD = (-1, -1)
_ALIVE_S = 0.25          # how often peers on this host with calls pending are checked
_POLL_MS = 20            # the I/O thread wakes at least this often (timeouts, RRef deletes)
_WAIT_MS = 10            # a waiting caller looks at its Future at least this often
_LEND_S = 0.003          # a request run by the leading I/O thread lends the ROUTER this long
_SPIN_S = 150e-6         # after a small reply the I/O thread polls this long without sleeping
_LOAD_CHECK_S = 1.0      # ... while the host's load average, read this often, is below its CPUs
_BATCH = 512             # messages taken from the ROUTER between those chores
_COPY_BELOW = 1 << 16    # frames smaller than this are copied into ZeroMQ (cheaper than lending)
_FunctionType = types.FunctionType
_SNDMORE = zmq.SNDMORE
_POLLIN = zmq.POLLIN
_EVENTS = zmq.EVENTS


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

    def _kind(self):
        """The exception class, where this process has it (a builtin, or a class its module
        here defines), else None."""
        import sys
        if self.module == "builtins":
            import builtins
            kind = getattr(builtins, self.qualname, None)
        else:
            kind = sys.modules.get(self.module)
            for part in self.qualname.split(".") if kind is not None else ():
                kind = getattr(kind, part, None)
        return kind if isinstance(kind, type) and issubclass(kind, BaseException) else None

    def to_exception(self):
        """The error of an RRef's value (``to_here``, ``local_value``): the remote type
        with the remote text, where this process has the type."""
        kind = self._kind()
        if kind is not None and (self.module == "builtins" or issubclass(kind, Exception)):
            try:
                e = kind(self.text)
                e._remote_error = self
                return e
            except Exception:           # noqa: BLE001 - constructor wants other arguments
                pass
        e = RuntimeError(f"{self.qualname.rsplit('.', 1)[-1]}: {self.text}")
        e._remote_error = self
        return e

    def to_future_exception(self):
        """The error of an rpc_sync / rpc_async Future (torch 2.13): the text behind the
        type's name, as ``TypeName: str(exc)``, raised as ValueError or TypeError for those
        (and their subclasses), else RuntimeError."""
        kind = self._kind()
        name = self.qualname.rsplit(".", 1)[-1]
        text = self.text
        if kind is not None:
            try:
                text = str(kind(self.text))        # (KeyError quotes its text)
            except Exception:           # noqa: BLE001
                pass
        out = ValueError if kind is not None and issubclass(kind, ValueError) else \
            TypeError if kind is not None and issubclass(kind, TypeError) else RuntimeError
        e = out(f"{name}: {text}")
        e._remote_error = self
        return e


def is_async(func):
    return getattr(func, "_wrapped_async_rpc_function", None) is not None


_modes = {}              # function -> its _mode, for the functions called by name


def _mode(func):
    """``(inline, async)`` of a requested function: ``_rpc_inline`` (run on the I/O thread
    in arrival order) and ``@async_execution`` (answered when its Future completes)."""
    mode = _modes.get(func) if type(func) is _FunctionType else None
    if mode is None:
        mode = (bool(getattr(func, "_rpc_inline", False)), is_async(func))
        if type(func) is _FunctionType:
            _modes[func] = mode
    return mode


class _Flag:
    """``threading.Event`` as a Future uses it (``is_set``, ``set`` once, ``wait``), on one
    lock held until set: much cheaper to make."""
    __slots__ = ("_lock", "_set")

    def __init__(self):
        self._lock = threading.Lock()
        self._lock.acquire()
        self._set = False

    def is_set(self):
        return self._set

    def set(self):
        if not self._set:
            self._set = True
            self._lock.release()

    def wait(self, timeout=None):
        if not self._set and self._lock.acquire(True, -1 if timeout is None else timeout):
            self._lock.release()            # let the next waiter through
        return self._set


class _Reply(Future):
    """The Future of a reply: an ``ember.futures.Future`` made without a threading.Event."""

    def __init__(self):                     # noqa: super-init-not-called - same fields
        self._done = _Flag()
        self._value = self._error = None
        self._callbacks = []
        self._lock = threading.Lock()
        self._task = self._on_wait = self._driver = None
        self._claimed = False


_Reply.__name__ = _Reply.__qualname__ = "Future"   # type(fut).__name__, as torch's

class _Pending:
    """A request waiting for its reply; ``keep``: the arrays it lends (or None)."""
    __slots__ = ("future", "dst", "timeout", "deadline", "box", "keep")

    def __init__(self, future, dst, timeout, box, keep=None):
        self.future, self.dst, self.timeout, self.box, self.keep = future, dst, timeout, box, keep
        self.deadline = time.monotonic() + timeout if timeout > 0 else None


class _Box:
    """A thread's reply box: ``sock`` (PULL) is read by whoever holds ``lock``; ``ids``
    are the requests whose replies come here; ``busy``: a waiter is reading it."""
    __slots__ = ("id", "sock", "fd", "lock", "ids", "busy", "closed")

    def __init__(self, box_id, sock):
        self.id, self.sock, self.fd = box_id, sock, sock.getsockopt(zmq.FD)
        self.lock = threading.RLock()       # a callback run while reading may wait again
        self.ids = set()
        self.busy = 0
        self.closed = False


class _Pool:
    """``n`` daemon threads running ``submit(fn, *args)`` calls in order of arrival."""

    def __init__(self, n, name):
        self.queue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def submit(self, fn, *args):
        self.queue.put((fn, args))

    def _work(self):
        while True:
            item = self.queue.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except BaseException:           # noqa: BLE001 - fn reports its own errors
                traceback.print_exc()
            del item, fn, args              # drop the arguments (RRefs) before waiting

    def shutdown(self):
        for _ in self.threads:
            self.queue.put(None)


class Agent:
    """The transport of one worker: ``info`` is its WorkerInfo, ``workers`` every peer's
    (rank -> WorkerInfo), ``addresses`` their endpoints ``(tcp, ipc, host, pid)``."""

    def __init__(self, info, host, options):
        self.info = info
        self.timeout = options.rpc_timeout
        self.num_worker_threads = options.num_worker_threads
        self.ctx = zmq.Context()
        self.router = self._socket(zmq.ROUTER)  # requests and replies from other hosts
        tcp = f"tcp://{host}:{self.router.bind_to_random_port(f'tcp://{host}')}"
        self.ipc_path = os.path.join(tempfile.gettempdir(),
                                     f"ember-rpc-{os.getpid()}-{id(self):x}.ipc")
        self.inbox = self._socket(zmq.PULL)     # requests from this host (no identity frame)
        self.inbox.bind(f"ipc://{self.ipc_path}")
        self.address = (tcp, f"ipc://{self.ipc_path}", socket.gethostname(), os.getpid())
        self.dead = {}                          # rank -> why: peers seen to have exited
        self.wake_r, self.wake_w = os.pipe()    # wakes the leading I/O thread
        os.set_blocking(self.wake_r, False)
        self.local = threading.local()          # .out: this thread's sockets; .box
        self.pending = {}                       # request id -> _Pending
        self.ids = iter(range(1, 1 << 63))      # next() is atomic
        self.box_ids = itertools.count(1)
        self.boxes, self.free_boxes = [], collections.deque()
        self.free_sockets = collections.deque()   # the sockets of threads that have ended
        self.watch = set()                      # boxes the I/O thread reads
        self.oneway = collections.deque()       # (rank, frames) queued from any thread
        self.workers, self.addresses, self.near = {}, {}, set()
        self.running = False
        self.threads, self.pool = [], None
        self.turn = threading.Condition()       # guards leader / lender / lent_at
        self.leader = None                      # the I/O thread owning the ROUTER (None: lent)
        self.lender, self.lent_at = None, 0.0
        self.serving = set()                    # I/O threads running a request themselves
        self.hot_until = self.spin_checked = 0.0     # Note [spin after serving]
        self.spin_ok = False
        self.lend_to = frozenset()              # peers that read lent arrays (_cma.py)
        self.lent = {}                          # (rank, request id) -> arrays of a reply
        self.late = {}                          # request id -> arrays of a timed-out request
        self.stopping = self.stop_requested = False

    def _socket(self, kind):
        s = self.ctx.socket(kind)
        s.linger = 0
        s.sndhwm = s.rcvhwm = 0                 # no message limit: never block or drop
        return s

    # ------------------------------------------------------------------ lifecycle
    def start(self, workers, addresses):
        self.workers, self.addresses = workers, addresses
        self.near = {r for r, a in addresses.items() if a[2] == self.address[2]}
        self.lend_to = frozenset(r for r in self.near if _cma.can_read(addresses[r][3]))
        self.by_name = {w.name: w for w in workers.values()}
        self.pool = _Pool(self.num_worker_threads, f"rpc-{self.info.name}")
        self.running = True
        name = f"rpc-io-{self.info.name}"
        self.threads = [threading.Thread(target=self._loop, name=f"{name}-{i}", daemon=True)
                        for i in range(2)]
        for t in self.threads:
            t.start()

    def stop(self):
        """Stop the threads, close every socket, fail what is still pending."""
        was_running, self.running = self.running, False
        if was_running:
            self.stop_requested = True
            self._wake()
            for t in self.threads:
                t.join(10)
            self.pool.shutdown()
        self._fail_pending()
        for box in self.boxes:                  # waiters leave once their Future failed
            got = box.lock.acquire(timeout=2)
            box.closed = True
            if got:
                box.lock.release()
        self.ctx.destroy(linger=0)
        self._fail_pending()                    # calls made while stopping
        self.lent.clear()
        self.late.clear()
        os.close(self.wake_r)
        os.close(self.wake_w)
        _wire.unlink_created()
        for path in [self.ipc_path] + [self._box_path(b.id) for b in self.boxes]:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _fail_pending(self):
        error = RuntimeError(f"RPC agent of {self.info} was shut down")
        for msg_id in list(self.pending):
            p = self._take(msg_id)
            if p is not None and not p.future.done():
                p.future.set_exception(error)

    def _wake(self):
        try:
            os.write(self.wake_w, b"w")
        except OSError:                         # full (already woken) or closed
            pass

    # ------------------------------------------------------------------ sending
    def _out(self, dst):
        """This thread's socket to rank ``dst``: a PUSH to its inbox on this host (ipc),
        else a DEALER to its ROUTER (tcp)."""
        socks = getattr(self.local, "out", None)
        if socks is None:
            socks = self._thread_sockets()
        sock = socks.get(dst)
        if sock is None:
            if not self.running:
                raise RuntimeError(f"RPC agent of {self.info} is shut down")
            tcp, ipc, host, _ = self.addresses[dst]
            if dst in self.near:
                sock = socks[dst] = self._socket(zmq.PUSH)
                sock.connect(ipc)
            else:
                sock = socks[dst] = self._socket(zmq.DEALER)
                sock.connect(tcp)
        return sock

    def _thread_sockets(self):
        """This thread's sockets (rank or (rank, box) -> socket): those of a thread that has
        ended if any (closing them could drop what they have not sent yet)."""
        try:
            socks = self.free_sockets.popleft()
        except IndexError:
            socks = {}
        self.local.out = socks
        weakref.finalize(threading.current_thread(), self.free_sockets.append, socks)
        return socks

    def _box_path(self, box_id, ipc_path=None):
        return f"{(ipc_path or self.ipc_path)[:-4]}-b{box_id}.ipc"

    def _to_box(self, dst, box_id):
        """This thread's PUSH to reply box ``box_id`` of rank ``dst`` (on this host)."""
        socks = getattr(self.local, "out", None)
        if socks is None:
            socks = self._thread_sockets()
        key = (dst, box_id)
        sock = socks.get(key)
        if sock is None:
            if not self.running:
                raise RuntimeError(f"RPC agent of {self.info} is shut down")
            sock = socks[key] = self._socket(zmq.PUSH)
            sock.connect("ipc://" + self._box_path(box_id, self.addresses[dst][1][6:]))
        return sock

    def _box(self):
        """This thread's reply box (made, or taken from a thread that has ended)."""
        box = getattr(self.local, "box", None)
        if box is not None:
            return box
        try:
            box = self.free_boxes.popleft()
        except IndexError:
            box_id = next(self.box_ids)
            sock = self._socket(zmq.PULL)
            sock.rcvtimeo = _WAIT_MS
            sock.bind("ipc://" + self._box_path(box_id))
            box = _Box(box_id, sock)
            self.boxes.append(box)
        self.local.box = box
        weakref.finalize(threading.current_thread(), self.free_boxes.append, box)
        return box

    def submit(self, fn, *args):
        """Run ``fn(*args)`` on a worker thread."""
        self.pool.submit(fn, *args)

    def same_host(self, dst):
        return dst in self.near

    def _send(self, sock, frames, dst):
        try:
            if len(frames) == 1:
                sock.send(frames[0])
                return
            last = len(frames) - 1
            for i, frame in enumerate(frames):     # small frames copied, large ones lent
                sock.send(frame, _SNDMORE if i < last else 0, copy=len(frame) < _COPY_BELOW)
        except zmq.ZMQError as e:
            raise RuntimeError(f"RPC agent of {self.info} could not send to "
                               f"{self.workers[dst]}: {e}") from None

    def request(self, dst, frames, timeout, autograd=NO_AUTOGRAD, profiled=False,
                plain=False, sync=False, keep=None):
        """Send ``frames`` (``_wire.encode`` output) to rank ``dst``; a Future of the reply.
        ``timeout`` seconds, 0 = none; ``autograd``: (context id, autograd message id);
        ``plain``: ``frames`` is a plain pickle; ``sync``: the caller waits at once (its
        box needs no watching); ``keep``: the arrays the frames lend, held until the reply."""
        msg_id = next(self.ids)
        fut = _Reply()
        if dst in self.dead:
            fut.set_exception(RuntimeError(self.dead[dst]))
            return fut
        if not self.running:
            raise RuntimeError(f"RPC agent of {self.info} is shut down")
        box = self._box() if dst in self.near else None
        self.pending[msg_id] = _Pending(fut, dst, timeout, box, keep or None)
        kind = (PROFILED if profiled else REQUEST) | (PLAIN if plain else 0)
        if box is not None:
            box.ids.add(msg_id)
            if sync:
                fut._driver = lambda: self._drive(fut, box)
        try:
            self._send(self._out(dst), _message(frames, kind, msg_id, self.info.id,
                                                box.id if box else 0, *autograd), dst)
        except RuntimeError:
            self._take(msg_id)
            raise
        if box is not None and not sync and box not in self.watch:
            self.watch.add(box)
            self._wake()
        return fut

    def notify(self, dst, frames):
        """A one-way request from any thread (also ``__del__``): sent by the I/O thread."""
        self.oneway.append((dst, _message(frames, REQUEST, 0, self.info.id, 0, *NO_AUTOGRAD)))

    def _take(self, msg_id):
        """Remove request ``msg_id`` from the pending ones: its _Pending, or None."""
        p = self.pending.pop(msg_id, None)
        if p is not None and p.box is not None:
            p.box.ids.discard(msg_id)
        return p

    # ------------------------------------------------------------------ reply boxes
    def _drive(self, fut, box):
        """Wait for ``fut`` by reading ``box`` (``Future.wait`` calls this first)."""
        done = fut._done.is_set
        lock = box.lock
        while not done():
            if not lock.acquire(timeout=_WAIT_MS / 1000):   # another thread reads it now
                continue
            try:
                if box.closed:
                    return
                box.busy += 1
                sock = box.sock
                try:
                    while not done():
                        try:
                            head = sock.recv()          # waits at most _WAIT_MS
                        except zmq.Again:
                            continue
                        except zmq.ZMQError:            # closed by stop(): it fails fut
                            return
                        self._on_box(sock, head)
                    if box.ids:             # leave it empty: its descriptor signals anew
                        self._read_box(box)
                finally:
                    box.busy -= 1
            finally:
                lock.release()

    def _read_box(self, box):
        """Complete every reply waiting in ``box`` (its lock held)."""
        sock = box.sock
        while sock.getsockopt(_EVENTS) & _POLLIN:
            self._on_box(sock, sock.recv(zmq.NOBLOCK))

    def _on_box(self, sock, head):
        """A reply whose first frame ``head`` was read from ``sock``: complete its Future."""
        kind, n, msg_id, src, _, ctx_id, ae_id = _HEADER.unpack_from(head)
        frames = [memoryview(head)[_HEADER.size:]]
        for _ in range(n):
            frames.append(sock.recv(copy=False))
        try:
            self._on_reply(kind, msg_id, frames, src, ctx_id, ae_id)
        except Exception:                   # noqa: BLE001 - a user callback failed: go on
            traceback.print_exc()

    # ------------------------------------------------------------------ I/O thread
    def _loop(self):
        """Two I/O threads take turns (leader/follower): the leader owns the ROUTER; a
        request arriving while neither thread serves one is run by the leader itself, which
        lends the ROUTER meanwhile: if the request takes more than ``_LEND_S`` the other
        thread (which looks every ``_LEND_S``) takes the ROUTER over, else the leader goes on
        leading. No thread is woken on the callee's path of a short call."""
        poller = zmq.Poller()
        poller.register(self.router, _POLLIN)
        poller.register(self.inbox, _POLLIN)
        poller.register(self.wake_r, _POLLIN)
        self._next = {"scan": 0.0, "alive": 0.0, "shm": 0.0}
        poller._ember_boxes = {}                # fd -> box registered in this poller
        me = threading.get_ident()
        while self._take_lead(me):
            job = self._lead(poller)
            if job is None:
                with self.turn:
                    self.stopping, self.leader = True, None
                    self.turn.notify_all()
                return
            self.serving.add(me)
            self.lender, self.lent_at = me, time.monotonic()
            self.leader = None                  # lent, without waking anyone
            try:
                job[0](*job[1])
            except BaseException:           # noqa: BLE001 - fn reports its own errors
                traceback.print_exc()
            finally:
                del job
                self.serving.discard(me)

    def _take_lead(self, me):
        """Wait until this thread may own the ROUTER (its own lent one at once, another's
        after ``_LEND_S``); False once the agent stops."""
        with self.turn:
            while not self.stopping:
                if self.leader is None:
                    wait = 0 if self.lender == me else self.lent_at + _LEND_S - time.monotonic()
                    if wait <= 0:
                        self.leader = me
                        return True
                self.turn.wait(_LEND_S)
            return False

    def _lead(self, poller):
        """Serve the ROUTER until a request is to run on this thread (``(fn, args)``) or
        the agent stops (None)."""
        while not self.stopping:
            timeout = self._watch(poller)
            events = self._spin(poller) if self.hot_until else None
            if not events:
                events = dict(poller.poll(timeout))
            if self.stop_requested:
                self.stopping = True
                return None
            try:
                job = self._step(events, poller._ember_boxes)
            except Exception:               # noqa: BLE001 - never let the I/O thread die
                traceback.print_exc()
                continue
            if job is not None:
                return job
        return None

    def _spin(self, poller):
        """Note [spin after serving]: once a small reply went out (no tensor frames: its
        caller is not busy reading a large one), the I/O thread polls without sleeping
        until ``hot_until``, for the caller's next request may come at once: on
        an otherwise idle host, waking a sleeping thread on a halted (virtual) CPU costs
        more than the whole call (a raw ZeroMQ round trip here: 140-160 us asleep, 55-70 us
        with the callee spinning; ember's empty call 135-210 -> 90-110 us). On a busy host
        spinning takes the cores from others and from ZeroMQ's own I/O threads (p50 60 ->
        80-120 us there), so it is done only while the load average is below the number of
        CPUs plus one (the spinner's own share). The events found, or None."""
        end, self.hot_until = self.hot_until, 0.0
        now = time.monotonic()
        if now >= end or not self._spin_allowed(now):
            return None
        poll = poller.poll
        while now < end:
            found = poll(0)
            if found:
                return dict(found)
            now = time.monotonic()
        return None

    def _spin_allowed(self, now):
        if now >= self.spin_checked + _LOAD_CHECK_S:
            self.spin_checked = now
            try:
                # (the spinner itself adds about one to the load average)
                self.spin_ok = os.getloadavg()[0] < (os.cpu_count() or 1) + 1
            except (OSError, AttributeError):     # no load average here: never spin
                self.spin_ok = False
        return self.spin_ok

    def _watch(self, poller):
        """Register in ``poller`` the watched boxes with replies to come that no waiter
        reads; the poll timeout (short while a waiter holds one)."""
        polled = poller._ember_boxes
        if not self.watch and not polled:
            return _POLL_MS
        want, busy = {}, False
        for box in list(self.watch):
            if not box.ids:
                self.watch.discard(box)
                if not box.ids:                 # (a request may have come meanwhile)
                    continue
                self.watch.add(box)
            if box.busy or box.closed:
                busy = True
            else:
                want[box.fd] = box
        for fd in [fd for fd in polled if fd not in want]:
            poller.unregister(fd)
            del polled[fd]
        for fd, box in want.items():
            if fd not in polled:
                poller.register(fd, _POLLIN)
                polled[fd] = box
        return 2 if busy else _POLL_MS

    def _read_unless_busy(self, box):
        if box.lock.acquire(blocking=False):
            try:
                if not box.closed:
                    self._read_box(box)
            finally:
                box.lock.release()

    def _step(self, events, boxes):
        if self.inbox in events:
            job = self._drain(self.inbox, False)
            if job is not None:
                return job
        if self.router in events:
            job = self._drain(self.router, True)
            if job is not None:
                return job
        if self.wake_r in events:
            try:
                os.read(self.wake_r, 4096)
            except OSError:
                pass
        for box in boxes.values():          # watched boxes nobody else reads now (all of
            self._read_unless_busy(box)     # them: a descriptor signals only new arrivals)
        while self.oneway:
            dst, frames = self.oneway.popleft()
            try:
                self._send(self._out(dst), frames, dst)
            except RuntimeError:
                pass
        now, due = time.monotonic(), self._next
        if now >= due["scan"]:
            due["scan"] = now + _POLL_MS / 1000
            self._expire(now)
        if (self.pending or self.lent) and now >= due["alive"]:
            due["alive"] = now + _ALIVE_S
            self._check_peers()
        if _wire.shm_created and now >= due["shm"]:
            due["shm"] = now + 2.0
            _wire.forget_taken()

    def _drain(self, sock, routed):
        """Take the messages waiting in ``sock`` (``routed``: the ROUTER, whose messages
        start with the sender's identity); a request to run on this thread, if one comes."""
        for _ in range(_BATCH):
            try:
                head = sock.recv(zmq.NOBLOCK)
                if routed:                  # that was the sender's identity
                    head = sock.recv()
            except zmq.Again:
                return
            kind, n, msg_id, src, box, ctx_id, ae_id = _HEADER.unpack_from(head)
            frames = [memoryview(head)[_HEADER.size:]]
            for _ in range(n):
                frames.append(sock.recv(copy=False))
            try:
                if kind & ~_FLAGS in (REQUEST, PROFILED):
                    job = self._on_request(kind, src, msg_id, frames, ctx_id, ae_id, box)
                    if job is not None:
                        return job
                else:
                    self._on_reply(kind, msg_id, frames, src, ctx_id, ae_id)
            except Exception:               # noqa: BLE001 - a user callback failed: go on
                traceback.print_exc()

    def _release_now(self, src, msg_id):
        """Tell ``src`` at once that the arrays its reply ``msg_id`` lent were read (so
        they are freed while still in cache and the next transfer reuses warm memory)."""
        try:
            frames = _wire.encode((_release_lent, (self.info.id, [msg_id]), {}))
            self._send(self._out(src), _message(frames, REQUEST, 0, self.info.id, 0,
                                                *NO_AUTOGRAD), src)
        except RuntimeError:                 # shut down meanwhile: nothing to free
            pass

    def _check_peers(self):
        """Fail at once the calls to a peer on this host whose process has exited (the
        others wait for their timeout: ZeroMQ reconnects silently), and free what this
        worker lent to it."""
        peers = {p.dst for p in list(self.pending.values())} | {r for r, _ in list(self.lent)}
        for dst in peers:
            if dst in self.dead or dst not in self.near:
                continue
            pid = self.addresses[dst][3]
            if _alive(pid):
                continue
            self.dead[dst] = (f"RPC to {self.workers[dst]} failed: the worker (pid {pid}) "
                              f"has exited")
            for key in [key for key in list(self.lent) if key[0] == dst]:
                self.lent.pop(key, None)
            for msg_id, p in list(self.pending.items()):
                if p.dst == dst and self._take(msg_id):
                    try:
                        p.future.set_exception(RuntimeError(self.dead[dst]))
                    except Exception:       # noqa: BLE001 - a user callback failed: go on
                        traceback.print_exc()

    def _expire(self, now):
        for msg_id, p in list(self.pending.items()):
            if p.deadline is not None and p.deadline <= now and self._take(msg_id):
                if p.keep:                   # the callee may still read them
                    self.late[msg_id] = p.keep
                try:
                    p.future.set_exception(RuntimeError(
                        f"RPCErr:1:RPC ran for more than set timeout ({int(p.timeout * 1000)} "
                        f"ms) and will now be marked with an error"))
                except Exception:           # noqa: BLE001 - a user callback failed: go on
                    traceback.print_exc()

    def _on_reply(self, kind, msg_id, frames, src=-1, ctx_id=-1, ae_id=-1):
        p = self._take(msg_id)
        try:
            if p is None:                    # timed out already: free what it carries
                self.late.pop(msg_id, None)
                if not kind & LENT:          # (its /dev/shm files)
                    try:
                        _decode_reply(kind, frames)
                    except BaseException:   # noqa: BLE001 - nobody wants it
                        pass
                return
            try:
                tensors = []
                value = _decode_reply(kind, frames, tensors)
                if ctx_id != -1:
                    dist_autograd._on_recv(ctx_id, src, ae_id, tensors)
            except BaseException as e:      # noqa: BLE001 - the caller gets it
                p.future.set_exception(e)
                return
        finally:
            if kind & LENT:                  # read: the sender may free it now
                self._release_now(src, msg_id)
        if kind & ~_FLAGS == ERROR:
            p.future.set_exception(value.to_future_exception())
        else:
            p.future.set_result(value)

    def _on_request(self, kind, src, msg_id, frames, ctx_id=-1, ae_id=-1, box=0):
        try:
            if kind & PLAIN:
                tensors = []
                func, args, kwargs = _wire.loads_call(frames, tensors)
                if ctx_id != -1:
                    dist_autograd._on_recv(ctx_id, src, ae_id, tensors)
            else:
                tensors = []
                func, args, kwargs = _wire.decode(frames, tensors)
                dist_autograd._on_recv(ctx_id, src, ae_id, tensors)
        except BaseException as e:          # noqa: BLE001 - sent back to the caller
            self._reply(src, msg_id, None, RemoteError.capture(e, self.info), ctx_id, box)
            return
        call = (src, msg_id, func, args, kwargs, ctx_id, kind & ~_FLAGS == PROFILED, box)
        if _mode(func)[0]:
            self._serve(*call)
        elif not self.serving:
            return self._serve, call         # run by this I/O thread (lending the ROUTER)
        else:
            self.pool.submit(self._serve, *call)
        return None

    # ------------------------------------------------------------------ server side
    def run(self, func, args, kwargs):
        """Call ``func`` here and now; a Future of its value (an async function's Future
        is followed). Errors become RemoteError naming this worker."""
        out = Future()
        try:
            value = func(*args, **kwargs)
            inline_future = isinstance(value, Future) and getattr(func, "_rpc_inline", False)
            if is_async(func) or inline_future:
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

    def _serve(self, src, msg_id, func, args, kwargs, ctx_id=-1, profiled=False, box=0):
        if ctx_id == -1 and not profiled and not any(_mode(func)):
            try:                             # the common case: no Future needed
                value = func(*args, **kwargs)
            except BaseException as e:      # noqa: BLE001 - delivered to the caller
                self._reply(src, msg_id, None, RemoteError.capture(e, self.info), -1, box)
                return
            self._reply(src, msg_id, value, None, -1, box)
            return
        with dist_autograd._active(ctx_id):
            if not profiled:
                result = self.run(func, args, kwargs)
                result.add_done_callback(
                    lambda f: self._reply(src, msg_id, *_outcome(f), ctx_id, box))
                return
            result, events = _profiling.run_profiled(lambda: self.run(func, args, kwargs))
        result.add_done_callback(
            lambda f: self._reply(src, msg_id, *_outcome(f, events), ctx_id, box))

    def _reply(self, dst, msg_id, value, error, ctx_id=-1, box=0):
        if msg_id == 0 or not self.running:
            return
        me, no = self.info.id, NO_AUTOGRAD
        keep = [] if dst in self.lend_to else None
        try:
            if error is None:
                tensors = []
                frames, flat = _wire.dumps_plain(value, dst in self.near, tensors, keep)
                if frames is not None:
                    ae_id = dist_autograd._on_send(ctx_id, tensors) if tensors else -1
                    kind = RESULT | PLAIN | (FLAT if flat else 0) | (LENT if keep else 0)
                    frames = _message(frames, kind, msg_id, me, 0, ctx_id, ae_id)
                else:
                    tensors, keep = [], (None if keep is None else [])
                    frames = _wire.encode(value, dst in self.near, tensors, keep)
                    ae_id = dist_autograd._on_send(ctx_id, tensors)
                    frames = _message(frames, RESULT | (LENT if keep else 0), msg_id, me, 0,
                                      ctx_id, ae_id)
                if keep:
                    self.lent[(dst, msg_id)] = keep
            else:
                frames = _message(_wire.encode(error), ERROR, msg_id, me, 0, *no)
        except BaseException as e:          # noqa: BLE001 - e.g. an unpicklable result
            frames = _message(_wire.encode(RemoteError.capture(e, self.info)), ERROR, msg_id, me,
                              0, *no)
        if len(frames) == 1:                # a small reply: the caller's next request may
            self.hot_until = time.monotonic() + _SPIN_S      # come at once (_spin)
        try:
            if box:
                self._send(self._to_box(dst, box), frames, dst)
            else:
                self._send(self._out(dst), frames, dst)
        except RuntimeError:
            pass                             # shut down meanwhile


def _decode_reply(kind, frames, tensors=None):
    """The value of a reply's ``frames``; ``tensors`` receives its tensors."""
    if kind & FLAT:
        return _wire.loads_result(frames, tensors)
    return _wire.loads(frames[0]) if kind & PLAIN else _wire.decode(frames, tensors)


def _release_lent(rank, msg_ids):
    """On the worker that replied: rank ``rank`` has read the arrays lent by these replies."""
    from ember.distributed.rpc import api
    lent = api._current().lent
    for msg_id in msg_ids:
        lent.pop((rank, msg_id), None)


_release_lent._rpc_inline = True


def _message(frames, kind, msg_id, src, box, ctx_id, ae_id):
    """``[header + pickle, buffers...]`` of ``frames`` (``[pickle, buffers...]``)."""
    head = _HEADER.pack(kind, len(frames) - 1, msg_id, src, box, ctx_id, ae_id)
    return [head + frames[0], *frames[1:]]


def _alive(pid):
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            pass
        return True


def _outcome(fut, events=None):
    """(value, None) or (None, RemoteError) of a completed Future; with ``events`` (of a
    profiled run) the value is ``(value, events)``."""
    try:
        value = fut.wait()
        return (value if events is None else (value, events)), None
    except RemoteError as e:
        return None, e
