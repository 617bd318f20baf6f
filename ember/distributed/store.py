"""Key-value stores of ``torch.distributed``: ``Store`` (subclassable), ``HashStore`` (in
process), ``FileStore`` (a shared append-only file), ``TCPStore`` (a server thread in the
master's process) and ``PrefixStore`` (``prefix/key`` over another store).

Keys are ``str``; values are ``str`` (UTF-8) or bytes and come back as ``bytes``. ``get``,
``wait``, ``multi_get``, ``queue_pop`` and ``barrier`` block until the store's ``timeout``
(``timedelta(seconds=300)`` by default) and then raise torch's error for that store.
"""
from __future__ import annotations

import collections
import fcntl
import ipaddress
import os
import socket
import struct
import threading
import time
import weakref
from datetime import timedelta

from ember.distributed._errors import DistNetworkError, DistStoreError, QueueEmptyError

__all__ = ["Store", "HashStore", "FileStore", "TCPStore", "PrefixStore"]

_DEFAULT_TIMEOUT = timedelta(seconds=300)


# ----------------------------------------------------------------------------- arguments

def _key(key, op: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{op}(): incompatible function arguments: key must be str, "
                        f"got {type(key).__name__}")
    return key


def _keys(keys, op: str) -> list:
    if isinstance(keys, (str, bytes)):
        raise TypeError(f"{op}(): incompatible function arguments: keys must be a sequence "
                        f"of str, got {type(keys).__name__}")
    return [_key(k, op) for k in keys]


def _value(value, op: str) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{op}(): incompatible function arguments: value must be str or bytes, "
                    f"got {type(value).__name__}")


def _amount(amount, op: str) -> int:
    if isinstance(amount, (float, str, bytes)) or not hasattr(amount, "__index__"):
        raise TypeError(f"{op}(): incompatible function arguments: amount must be int, "
                        f"got {type(amount).__name__}")
    return int(amount.__index__())


def _timedelta(timeout, op: str) -> timedelta:
    if not isinstance(timeout, timedelta):
        raise TypeError(f"{op}(): incompatible function arguments: timeout must be "
                        f"datetime.timedelta, got {type(timeout).__name__}")
    return timeout


def _ms(timeout: timedelta) -> int:
    return int(timeout / timedelta(milliseconds=1))


# ----------------------------------------------------------------------------- the table

def _compare_set(current, expected: bytes, desired: bytes):
    """(value to store or None, value returned) of compare_set on ``current`` (None if the
    key is missing): ``desired`` replaces a value equal to ``expected``, or a missing key
    when ``expected`` is empty; otherwise the current (or, if missing, expected) value."""
    if current == expected or (current is None and expected == b""):
        return desired, desired
    return None, expected if current is None else current


class _TimedOut(Exception):
    """A blocking table operation ran past its deadline."""


class _Table:
    """Thread-safe keys -> bytes and keys -> queues; blocking reads wait on a Condition.
    HashStore holds one; the TCPStore server serves one."""

    def __init__(self):
        self.data: dict = {}
        self.queues: dict = collections.defaultdict(collections.deque)
        self.cond = threading.Condition()

    def _until(self, ready, timeout: float):
        if not self.cond.wait_for(ready, None if timeout is None else max(timeout, 0.0)):
            raise _TimedOut

    def _present(self, key) -> bool:
        return key in self.data or bool(self.queues.get(key))

    def set(self, key, value):
        with self.cond:
            self.data[key] = value
            self.cond.notify_all()

    def get(self, key, timeout):
        with self.cond:
            self._until(lambda: key in self.data, timeout)
            return self.data[key]

    def add(self, key, amount) -> int:
        with self.cond:
            old = self.data.get(key, b"0")
            try:
                new = int(old) + amount
            except ValueError:
                raise ValueError("stoll") from None   # torch's message: the C++ parse
            self.data[key] = str(new).encode()
            self.cond.notify_all()
            return new

    def compare_set(self, key, expected, desired) -> bytes:
        with self.cond:
            new, answer = _compare_set(self.data.get(key), expected, desired)
            if new is not None:
                self.data[key] = new
                self.cond.notify_all()
            return answer

    def delete(self, key) -> bool:
        with self.cond:
            return self.data.pop(key, None) is not None

    def check(self, keys) -> bool:
        with self.cond:
            return all(self._present(k) for k in keys)

    def wait(self, keys, timeout):
        with self.cond:
            self._until(lambda: all(self._present(k) for k in keys), timeout)

    def append(self, key, value):
        with self.cond:
            self.data[key] = self.data.get(key, b"") + value
            self.cond.notify_all()

    def multi_get(self, keys, timeout) -> list:
        with self.cond:
            self._until(lambda: all(k in self.data for k in keys), timeout)
            return [self.data[k] for k in keys]

    def multi_set(self, keys, values):
        with self.cond:
            self.data.update(zip(keys, values))
            self.cond.notify_all()

    def num_keys(self) -> int:
        with self.cond:
            return len(self.data)

    def list_keys(self) -> list:
        with self.cond:
            return list(self.data)

    def queue_push(self, key, value):
        with self.cond:
            self.queues[key].append(value)
            self.cond.notify_all()

    def queue_pop(self, key, block, timeout) -> bytes:
        with self.cond:
            if not self.queues.get(key):
                if not block:
                    raise QueueEmptyError("queue is empty")
                self._until(lambda: bool(self.queues.get(key)), timeout)
            return self.queues[key].popleft()

    def queue_len(self, key) -> int:
        with self.cond:
            return len(self.queues.get(key, ()))

    def wait_count(self, key, count, timeout) -> int:
        """Block until the counter ``key`` reaches ``count``; returns it (or raises)."""
        with self.cond:
            self._until(lambda: int(self.data.get(key, b"0")) >= count, timeout)
            return int(self.data[key])


# ----------------------------------------------------------------------------- Store

class Store:
    """Base class of the stores; subclass it in Python and override the methods you serve
    (the others raise NotImplementedError, a RuntimeError as torch's)."""

    def __init__(self):
        self._timeout = _DEFAULT_TIMEOUT

    def _unsupported(self, name):
        raise NotImplementedError(f"{type(self).__name__}.{name}: not implemented by this store")

    @property
    def timeout(self) -> timedelta:
        """The default timeout of get/wait/multi_get/queue_pop/barrier."""
        return getattr(self, "_timeout", _DEFAULT_TIMEOUT)

    def set_timeout(self, timeout):
        self._timeout = _timedelta(timeout, "set_timeout")

    def set(self, key, value):
        self._unsupported("set")

    def get(self, key) -> bytes:
        self._unsupported("get")

    def add(self, key, amount) -> int:
        self._unsupported("add")

    def compare_set(self, key, expected_value, desired_value) -> bytes:
        self._unsupported("compare_set")

    def delete_key(self, key) -> bool:
        self._unsupported("delete_key")

    def num_keys(self) -> int:
        self._unsupported("num_keys")

    def check(self, keys) -> bool:
        self._unsupported("check")

    def wait(self, keys, timeout=None):
        self._unsupported("wait")

    def append(self, key, value):
        self._unsupported("append")

    def multi_get(self, keys) -> list:
        self._unsupported("multi_get")

    def multi_set(self, keys, values):
        self._unsupported("multi_set")

    def list_keys(self) -> list:
        self._unsupported("list_keys")

    def queue_push(self, key, value):
        self._unsupported("queue_push")

    def queue_pop(self, key, block=True) -> bytes:
        self._unsupported("queue_pop")

    def queue_len(self, key) -> int:
        self._unsupported("queue_len")

    def clone(self) -> "Store":
        self._unsupported("clone")

    def has_extended_api(self) -> bool:
        return False

    def barrier(self, key, world_size, timeout=None):
        """Block until ``world_size`` callers reached ``barrier(key, ...)``: counts in
        ``key/num_members``, the last one sets ``key/last_member``."""
        key, world_size = _key(key, "barrier"), _amount(world_size, "barrier")
        if self.add(f"{key}/num_members", 1) == world_size:
            self.set(f"{key}/last_member", "1")
        self.wait([f"{key}/last_member"], self.timeout if timeout is None else timeout)


def _multi_set_args(keys, values, op="multi_set"):
    keys, values = _keys(keys, op), [_value(v, op) for v in values]
    if len(keys) != len(values):
        raise ValueError(f"{op}: got {len(keys)} keys but {len(values)} values")
    return keys, values


# ----------------------------------------------------------------------------- HashStore

class HashStore(Store):
    """In-process store (threads share it); ``clone`` returns the store itself."""

    def __init__(self):
        super().__init__()
        self._table = _Table()

    def _block(self, fn, *args, timeout=None):
        seconds = (self.timeout if timeout is None else timeout).total_seconds()
        try:                                   # a zero timeout waits for ever, as torch's
            return fn(*args, None if seconds == 0 else seconds)
        except _TimedOut:
            raise DistStoreError("Wait timeout") from None

    def set(self, key, value):
        self._table.set(_key(key, "set"), _value(value, "set"))

    def get(self, key):
        return self._block(self._table.get, _key(key, "get"))

    def add(self, key, amount):
        return self._table.add(_key(key, "add"), _amount(amount, "add"))

    def compare_set(self, key, expected_value, desired_value):
        op = "compare_set"
        return self._table.compare_set(_key(key, op), _value(expected_value, op),
                                       _value(desired_value, op))

    def delete_key(self, key):
        return self._table.delete(_key(key, "delete_key"))

    def num_keys(self):
        return self._table.num_keys()

    def check(self, keys):
        return self._table.check(_keys(keys, "check"))

    def wait(self, keys, timeout=None):
        timeout = None if timeout is None else _timedelta(timeout, "wait")
        self._block(self._table.wait, _keys(keys, "wait"), timeout=timeout)

    def append(self, key, value):
        self._table.append(_key(key, "append"), _value(value, "append"))

    def multi_get(self, keys):
        return self._block(self._table.multi_get, _keys(keys, "multi_get"))

    def multi_set(self, keys, values):
        self._table.multi_set(*_multi_set_args(keys, values))

    def list_keys(self):
        return self._table.list_keys()

    def queue_push(self, key, value):
        self._table.queue_push(_key(key, "queue_push"), _value(value, "queue_push"))

    def queue_pop(self, key, block=True):
        return self._block(self._table.queue_pop, _key(key, "queue_pop"), bool(block))

    def queue_len(self, key):
        return self._table.queue_len(_key(key, "queue_len"))

    def clone(self):
        return self

    def has_extended_api(self):
        return True


# ----------------------------------------------------------------------------- PrefixStore

class PrefixStore(Store):
    """``store`` seen through ``prefix``: every key ``k`` becomes ``prefix/k``."""

    def __init__(self, prefix, store):
        super().__init__()
        if not isinstance(prefix, str):
            raise TypeError(f"PrefixStore(): prefix must be str, got {type(prefix).__name__}")
        if not isinstance(store, Store):
            raise TypeError(f"PrefixStore(): store must be a Store, got {type(store).__name__}")
        self._prefix, self._store = prefix, store

    def _k(self, key, op):
        return f"{self._prefix}/{_key(key, op)}"

    def _ks(self, keys, op):
        return [self._k(k, op) for k in _keys(keys, op)]

    @property
    def underlying_store(self) -> Store:
        """The store this PrefixStore wraps."""
        return self._store

    @property
    def _underlying_non_prefix_store(self) -> Store:
        store = self._store
        while isinstance(store, PrefixStore):
            store = store._store
        return store

    @property
    def timeout(self):
        return self._store.timeout

    def set_timeout(self, timeout):
        self._store.set_timeout(timeout)

    def set(self, key, value):
        self._store.set(self._k(key, "set"), value)

    def get(self, key):
        return self._store.get(self._k(key, "get"))

    def add(self, key, amount):
        return self._store.add(self._k(key, "add"), amount)

    def compare_set(self, key, expected_value, desired_value):
        return self._store.compare_set(self._k(key, "compare_set"), expected_value, desired_value)

    def delete_key(self, key):
        return self._store.delete_key(self._k(key, "delete_key"))

    def num_keys(self):
        return self._store.num_keys()

    def check(self, keys):
        return self._store.check(self._ks(keys, "check"))

    def wait(self, keys, timeout=None):
        keys = self._ks(keys, "wait")
        return self._store.wait(keys) if timeout is None else self._store.wait(keys, timeout)

    def append(self, key, value):
        self._store.append(self._k(key, "append"), value)

    def multi_get(self, keys):
        return self._store.multi_get(self._ks(keys, "multi_get"))

    def multi_set(self, keys, values):
        self._store.multi_set(self._ks(keys, "multi_set"), values)

    def list_keys(self):
        head = self._prefix + "/"
        return [k[len(head):] for k in self._store.list_keys() if k.startswith(head)]

    def queue_push(self, key, value):
        self._store.queue_push(self._k(key, "queue_push"), value)

    def queue_pop(self, key, block=True):
        return self._store.queue_pop(self._k(key, "queue_pop"), block)

    def queue_len(self, key):
        return self._store.queue_len(self._k(key, "queue_len"))

    def clone(self):
        return PrefixStore(self._prefix, self._store.clone())

    def has_extended_api(self):
        return self._store.has_extended_api()

    def barrier(self, key, world_size, timeout=None):
        self._store.barrier(self._k(key, "barrier"), world_size, timeout)


# ----------------------------------------------------------------------------- FileStore

_SET, _DELETE = b"S", b"D"
_REFCOUNT, _CLEANUP = "refcount/", "cleanup/"   # internal keys (user keys start with "/")


def _record(op: bytes, key: str, value: bytes = b"") -> bytes:
    k = key.encode()
    return op + struct.pack("!I", len(k)) + k + struct.pack("!I", len(value)) + value


class FileStore(Store):
    """Store shared by the processes that open ``file_name``: an append-only log of
    set/delete records under ``fcntl.flock``; each instance replays what is new. The
    file is removed when the last user goes away, if ``world_size`` > 0 (as torch)."""

    def __init__(self, file_name, world_size=-1):
        super().__init__()
        if not isinstance(file_name, str):
            raise TypeError(f"FileStore(): file_name must be str, got {type(file_name).__name__}")
        self._path, self._world_size = file_name, _amount(world_size, "FileStore")
        self._state: dict = {}
        self._offset = 0
        self._mutex = threading.Lock()        # one thread at a time replays/appends
        self._closed = True
        self._locked(lambda: self._add(_REFCOUNT, 1))
        self._closed = False

    path = property(lambda self: self._path, doc="The file holding the key-value pairs.")

    # -- the log
    def _locked(self, fn, exclusive=True):
        try:
            f = open(self._path, "a+b")
        except OSError as e:
            raise DistStoreError(f"FileStore: cannot open {self._path!r}: {e.strerror}") from None
        with f, self._mutex:
            fcntl.flock(f, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                self._replay(f)
                self._file = f
                return fn()
            finally:
                self._file = None
                fcntl.flock(f, fcntl.LOCK_UN)

    def _replay(self, f):
        size = os.fstat(f.fileno()).st_size
        if size < self._offset:                       # the file was removed and recreated
            self._state, self._offset = {}, 0
        f.seek(self._offset)
        data, pos = f.read(), 0
        while pos + 5 <= len(data):
            op, (klen,) = data[pos:pos + 1], struct.unpack_from("!I", data, pos + 1)
            key = data[pos + 5:pos + 5 + klen].decode()
            (vlen,) = struct.unpack_from("!I", data, pos + 5 + klen)
            start = pos + 9 + klen
            if op == _SET:
                self._state[key] = data[start:start + vlen]
            else:
                self._state.pop(key, None)
            pos = start + vlen
        self._offset += pos

    def _write(self, op, key, value=b""):
        self._file.seek(0, os.SEEK_END)
        self._file.write(_record(op, key, value))
        self._file.flush()
        self._offset = self._file.tell()
        if op == _SET:
            self._state[key] = value
        else:
            self._state.pop(key, None)

    def _add(self, key, amount):
        old = self._state.get(key, b"0")
        try:
            new = int(old) + amount
        except ValueError:
            raise ValueError("stoll") from None
        self._write(_SET, key, str(new).encode())
        return new

    def _poll(self, keys, timeout, message):
        deadline = time.monotonic() + timeout.total_seconds()
        while True:
            if self._locked(lambda: all(k in self._state for k in keys), exclusive=False):
                return
            if time.monotonic() >= deadline:
                raise DistStoreError(message)
            time.sleep(0.01)

    # -- the API
    def set(self, key, value):
        key, value = "/" + _key(key, "set"), _value(value, "set")
        self._locked(lambda: self._write(_SET, key, value))

    def get(self, key):
        k = "/" + _key(key, "get")
        timeout = self.timeout
        self._poll([k], timeout, f"Timeout waiting for key: {key} after {_ms(timeout)} ms")
        return self._locked(lambda: self._state[k], exclusive=False)

    def add(self, key, amount):
        key, amount = "/" + _key(key, "add"), _amount(amount, "add")
        return self._locked(lambda: self._add(key, amount))

    def compare_set(self, key, expected_value, desired_value):
        op = "compare_set"
        key = "/" + _key(key, op)
        expected, desired = _value(expected_value, op), _value(desired_value, op)

        def swap():
            new, answer = _compare_set(self._state.get(key), expected, desired)
            if new is not None:
                self._write(_SET, key, new)
            return answer
        return self._locked(swap)

    def delete_key(self, key):
        key = "/" + _key(key, "delete_key")
        self._locked(lambda: self._write(_DELETE, key))
        return True                                    # torch's FileStore always says True

    def num_keys(self):
        return self._locked(lambda: len(self._state), exclusive=False)

    def check(self, keys):
        keys = ["/" + k for k in _keys(keys, "check")]
        return self._locked(lambda: all(k in self._state for k in keys), exclusive=False)

    def wait(self, keys, timeout=None):
        keys = ["/" + k for k in _keys(keys, "wait")]
        timeout = self.timeout if timeout is None else _timedelta(timeout, "wait")
        self._poll(keys, timeout, "Wait timeout")

    def append(self, key, value):
        key, value = "/" + _key(key, "append"), _value(value, "append")
        self._locked(lambda: self._write(_SET, key, self._state.get(key, b"") + value))

    def multi_get(self, keys):
        return [self.get(k) for k in _keys(keys, "multi_get")]

    def multi_set(self, keys, values):
        keys, values = _multi_set_args(keys, values)

        def write_all():
            for k, v in zip(keys, values):
                self._write(_SET, "/" + k, v)
        self._locked(write_all)

    def list_keys(self):
        return self._locked(lambda: [k[1:] for k in self._state if k.startswith("/")],
                            exclusive=False)

    def _no_queue(self, *args, **kwargs):
        raise NotImplementedError("queue support is not implemented.")

    queue_push = queue_pop = queue_len = _no_queue

    def clone(self):
        return FileStore(self._path, self._world_size)

    def _release(self):
        if self._closed:
            return
        self._closed = True

        def leave():
            left = self._add(_REFCOUNT, -1)
            self._add(_CLEANUP, 1)
            return left
        try:
            if self._locked(leave) <= 0 and self._world_size > 0:
                os.unlink(self._path)
        except Exception:      # at interpreter exit the module may already be torn down
            pass

    def __del__(self):
        self._release()


# ----------------------------------------------------------------------------- TCPStore wire

# request: op byte, argument count, then each argument length-prefixed; the reply: status
# byte, argument count, arguments. Only keys and values travel (no pickle).
_OK, _TIMEOUT, _BAD_VALUE, _EMPTY = range(4)
(_OP_SET, _OP_GET, _OP_ADD, _OP_CAS, _OP_DELETE, _OP_CHECK, _OP_WAIT, _OP_APPEND, _OP_MGET,
 _OP_MSET, _OP_NUM, _OP_LIST, _OP_QPUSH, _OP_QPOP, _OP_QLEN, _OP_COUNT) = range(1, 17)
_HEAD = struct.Struct("!BI")
_LEN = struct.Struct("!I")


def _send(sock, code: int, args) -> None:
    parts = [_HEAD.pack(code, len(args))]
    for a in args:
        parts += [_LEN.pack(len(a)), a]
    sock.sendall(b"".join(parts))


def _recv_exact(sock, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("Failed to recv, got 0 bytes. Connection was likely closed. "
                                  "Did the remote server shutdown or crash?")
        buf += chunk
    return bytes(buf)


def _recv(sock):
    code, n = _HEAD.unpack(_recv_exact(sock, _HEAD.size))
    return code, [_recv_exact(sock, _LEN.unpack(_recv_exact(sock, _LEN.size))[0]) for _ in range(n)]


def _seconds(arg: bytes) -> float:
    return float(arg)


_HANDLERS = {
    _OP_SET: lambda t, a: t.set(a[0], a[1]),
    _OP_GET: lambda t, a: [t.get(a[0], _seconds(a[1]))],
    _OP_ADD: lambda t, a: [str(t.add(a[0], int(a[1]))).encode()],
    _OP_CAS: lambda t, a: [t.compare_set(a[0], a[1], a[2])],
    _OP_DELETE: lambda t, a: [b"1" if t.delete(a[0]) else b"0"],
    _OP_CHECK: lambda t, a: [b"1" if t.check(a) else b"0"],
    _OP_WAIT: lambda t, a: t.wait(a[1:], _seconds(a[0])),
    _OP_APPEND: lambda t, a: t.append(a[0], a[1]),
    _OP_MGET: lambda t, a: t.multi_get(a[1:], _seconds(a[0])),
    _OP_MSET: lambda t, a: t.multi_set(a[0::2], a[1::2]),
    _OP_NUM: lambda t, a: [str(t.num_keys()).encode()],
    _OP_LIST: lambda t, a: t.list_keys(),
    _OP_QPUSH: lambda t, a: t.queue_push(a[0], a[1]),
    _OP_QPOP: lambda t, a: [t.queue_pop(a[0], a[1] == b"1", _seconds(a[2]))],
    _OP_QLEN: lambda t, a: [str(t.queue_len(a[0])).encode()],
    _OP_COUNT: lambda t, a: [str(t.wait_count(a[0], int(a[1]), _seconds(a[2]))).encode()],
}


def _serve_client(conn, table):
    """One client's requests, in order; blocking ones wait here (server side)."""
    try:
        while True:
            op, args = _recv(conn)
            try:
                reply = _HANDLERS[op](table, args) or []
                _send(conn, _OK, reply)
            except _TimedOut:
                _send(conn, _TIMEOUT, [])
            except QueueEmptyError:
                _send(conn, _EMPTY, [])
            except (ValueError, KeyError, IndexError) as e:   # a malformed request
                _send(conn, _BAD_VALUE, [str(e).encode()])
    except (OSError, ConnectionError, struct.error):
        pass
    finally:
        conn.close()


def _accept_loop(listener, table, conns):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conns.add(conn)
        threading.Thread(target=_serve_client, args=(conn, table), daemon=True,
                         name="TCPStore-client").start()


def _shutdown(listener, conns):
    for s in [listener, *list(conns)]:
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()


class _Server:
    """The master's listening socket and table; stops when no store holds it."""

    _by_port: "weakref.WeakValueDictionary[int, _Server]" = weakref.WeakValueDictionary()

    def __init__(self, host, port, listen_fd=None):
        self.table = _Table()
        if listen_fd is not None:                # a launcher bound and listens already
            listener = socket.socket(fileno=listen_fd)
        else:
            listener = self._listen(host, port)
        self.port = listener.getsockname()[1]
        conns = weakref.WeakSet()
        threading.Thread(target=_accept_loop, args=(listener, self.table, conns), daemon=True,
                         name=f"TCPStore-server:{self.port}").start()
        self._finalizer = weakref.finalize(self, _shutdown, listener, conns)

    @staticmethod
    def _listen(host, port):
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((host if _is_loopback(host) else "", port))
            listener.listen(128)
            return listener
        except OSError as e:
            listener.close()
            raise DistNetworkError(
                f"The server socket has failed to listen on any local network address. "
                f"port: {port}, useIpv6: {str(':' in host).lower()}, code: {-e.errno}, "
                f"name: {_errno_name(e.errno)}, message: {e.strerror.lower()}") from None

    @classmethod
    def obtain(cls, host, port, multi_tenant, listen_fd=None):
        server = cls._by_port.get(port) if multi_tenant and port else None
        if server is None:
            server = cls(host, port, listen_fd)
            if multi_tenant:
                cls._by_port[server.port] = server
        return server

    def close(self):
        self._finalizer()


def _is_loopback(host) -> bool:
    """Loopback masters listen on loopback only; others on every interface (as torch)."""
    try:
        return all(ipaddress.ip_address(info[4][0].split("%")[0]).is_loopback
                   for info in socket.getaddrinfo(host, None))
    except (OSError, ValueError):
        return False


def _errno_name(code):
    import errno
    return errno.errorcode.get(code, str(code))


# ----------------------------------------------------------------------------- TCPStore

_INIT_KEY = b"init/"   # counts the stores that joined (user keys travel as "/key")


class TCPStore(Store):
    """Store served over TCP by the master (``is_master=True``), which runs the server in
    a daemon thread of its process; ``port=0`` picks a free port (see ``.port``)."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, multi_tenant=False,
                 master_listen_fd=None, use_libuv=True):
        super().__init__()
        if not isinstance(host_name, str):
            raise TypeError(f"TCPStore(): host_name must be str, got {type(host_name).__name__}")
        port = _amount(port, "TCPStore")
        world_size = None if world_size is None else _amount(world_size, "TCPStore")
        self._timeout = _timedelta(timeout, "TCPStore")
        if world_size == 0:
            raise ValueError("TCPStore world size cannot be 0")
        self._host, self._use_libuv = host_name, bool(use_libuv)
        self._server = (_Server.obtain(host_name, port, multi_tenant, master_listen_fd)
                        if is_master else None)
        self._port = self._server.port if self._server else port
        self._lock = threading.Lock()
        self._sock = self._connect()
        if wait_for_workers and world_size is not None and world_size > 0:
            self._call(_OP_ADD, [_INIT_KEY, b"1"])
            if is_master:
                self._wait_for_workers(world_size)

    host = property(lambda self: self._host, doc="The host name the store connects to.")
    port = property(lambda self: self._port, doc="The port the server listens on.")
    libuvBackend = property(lambda self: self._use_libuv,
                            doc="use_libuv as given (ember has one backend).")

    def _connect(self):
        deadline = time.monotonic() + self.timeout.total_seconds()
        while True:
            try:
                sock = socket.create_connection(
                    (self._host, self._port), timeout=max(deadline - time.monotonic(), 0.01))
                sock.settimeout(None)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError:
                if time.monotonic() >= deadline:
                    raise DistNetworkError(
                        f"The client socket has timed out after {_ms(self.timeout)}ms while "
                        f"trying to connect to ({self._host}, {self._port}).") from None
                time.sleep(0.05)

    def _wait_for_workers(self, world_size):
        try:
            self._call(_OP_COUNT, [_INIT_KEY, b"%d" % world_size, self._secs(None)])
        except DistStoreError:
            joined = int(self._call(_OP_GET, [_INIT_KEY, b"0"])[0])
            raise DistStoreError(
                f"Timed out after {int(self.timeout.total_seconds()) + 1} seconds waiting for "
                f"clients. {joined}/{world_size} clients joined.") from None

    def _secs(self, timeout):
        return repr((self.timeout if timeout is None else timeout).total_seconds()).encode()

    def _call(self, op, args, timeout_message="wait timeout"):
        with self._lock:
            try:
                _send(self._sock, op, args)
                status, reply = _recv(self._sock)
            except (OSError, ConnectionError) as e:
                raise DistNetworkError(str(e)) from None
        if status == _TIMEOUT:
            raise DistStoreError(timeout_message)
        if status == _EMPTY:
            raise QueueEmptyError("queue is empty")
        if status == _BAD_VALUE:
            raise ValueError(reply[0].decode())
        return reply

    def _blocking(self, op, args, keys, timeout=None):
        timeout = self.timeout if timeout is None else timeout
        message = f"wait timeout after {_ms(timeout)}ms, keys: {', '.join('/' + k for k in keys)}"
        return self._call(op, args, message)

    @staticmethod
    def _k(key, op):
        return b"/" + _key(key, op).encode()

    def set(self, key, value):
        self._call(_OP_SET, [self._k(key, "set"), _value(value, "set")])

    def get(self, key):
        return self._blocking(_OP_GET, [self._k(key, "get"), self._secs(None)], [key])[0]

    def add(self, key, amount):
        return int(self._call(_OP_ADD, [self._k(key, "add"), b"%d" % _amount(amount, "add")])[0])

    def compare_set(self, key, expected_value, desired_value):
        op = "compare_set"
        return self._call(_OP_CAS, [self._k(key, op), _value(expected_value, op),
                                    _value(desired_value, op)])[0]

    def delete_key(self, key):
        return self._call(_OP_DELETE, [self._k(key, "delete_key")])[0] == b"1"

    def num_keys(self):
        return int(self._call(_OP_NUM, [])[0])

    def check(self, keys):
        return self._call(_OP_CHECK, [self._k(k, "check") for k in _keys(keys, "check")])[0] == b"1"

    def wait(self, keys, timeout=None):
        keys = _keys(keys, "wait")
        timeout = None if timeout is None else _timedelta(timeout, "wait")
        args = [self._secs(timeout)] + [self._k(k, "wait") for k in keys]
        self._blocking(_OP_WAIT, args, keys, timeout)

    def append(self, key, value):
        self._call(_OP_APPEND, [self._k(key, "append"), _value(value, "append")])

    def multi_get(self, keys):
        keys = _keys(keys, "multi_get")
        args = [self._secs(None)] + [self._k(k, "multi_get") for k in keys]
        return self._blocking(_OP_MGET, args, keys)

    def multi_set(self, keys, values):
        keys, values = _multi_set_args(keys, values)
        pairs = [x for k, v in zip(keys, values) for x in (self._k(k, "multi_set"), v)]
        self._call(_OP_MSET, pairs)

    def list_keys(self):
        return [k[1:].decode() for k in self._call(_OP_LIST, []) if k.startswith(b"/")]

    def queue_push(self, key, value):
        self._call(_OP_QPUSH, [self._k(key, "queue_push"), _value(value, "queue_push")])

    def queue_pop(self, key, block=True):
        args = [self._k(key, "queue_pop"), b"1" if block else b"0", self._secs(None)]
        return self._blocking(_OP_QPOP, args, [key])[0]

    def queue_len(self, key):
        return int(self._call(_OP_QLEN, [self._k(key, "queue_len")])[0])

    def has_extended_api(self):
        return True

    def barrier(self, key, world_size, timeout=None):
        """Counts arrivals in ``key``; waits server-side until ``world_size`` arrived."""
        k, world_size = self._k(key, "barrier"), _amount(world_size, "barrier")
        timeout = self.timeout if timeout is None else _timedelta(timeout, "barrier")
        self._call(_OP_ADD, [k, b"1"])
        self._call(_OP_COUNT, [k, b"%d" % world_size, self._secs(timeout)],
                   f"barrier timeout after {_ms(timeout)}ms, key: {key}")

    def clone(self):
        """A new connection to the same server (it keeps the server alive too)."""
        other = TCPStore(self._host, self._port, None, False, self.timeout,
                         wait_for_workers=False, use_libuv=self._use_libuv)
        other._server = self._server
        return other

    def __repr__(self):
        role = f", server=TCPServer(port={self._port})" if self._server else ""
        return f"TCPStore(host={self._host!r}, port={self._port}{role})"

    def __del__(self):
        sock = getattr(self, "_sock", None)
        if sock is not None:
            sock.close()
