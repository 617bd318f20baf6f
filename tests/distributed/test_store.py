"""Stores (Hash/File/TCP/Prefix) and init_method rendezvous against torch's own stores,
plus TCPStore/FileStore shared by two real processes."""
import os
import subprocess
import sys
import threading
from datetime import timedelta

import pytest

from ember.distributed import store as S   # the package's rendezvous function shadows the module
from ember.distributed._errors import (DistBackendError, DistError, DistNetworkError,
                                       DistStoreError, QueueEmptyError)

rdzv = sys.modules["ember.distributed.rendezvous"]
torch = pytest.importorskip("torch")
td = torch.distributed
trdzv = sys.modules["torch.distributed.rendezvous"]

SHORT = timedelta(milliseconds=100)
PY = sys.executable
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make(lib, kind, tmp_path):
    """A fresh store of ``kind`` from ``lib`` (ember.distributed.store or torch.distributed)."""
    if kind == "hash":
        return lib.HashStore()
    if kind == "file":
        return lib.FileStore(str(tmp_path / f"{lib.__name__}.store"), 1)
    if kind == "tcp":
        return lib.TCPStore("127.0.0.1", 0, 1, True, timedelta(seconds=10))
    return lib.PrefixStore("pre", lib.HashStore())


def outcome(fn):
    """The result, or (exception class name, message) — torch's class names are ours."""
    try:
        return fn()
    except Exception as e:                                      # noqa: BLE001
        name = type(e).__name__
        if isinstance(e, TypeError):
            return ("TypeError",)
        return ("DistStoreError" if name == "RuntimeError" else name, str(e))


def script(kind):
    """(label, op) pairs; every op returns something comparable."""
    ops = [
        ("num_keys0", lambda s: s.num_keys()),
        ("set str", lambda s: s.set("a", "x")),
        ("set bytes", lambda s: s.set("b", b"\x00\xff")),
        ("set list", lambda s: s.set("bl", [1, 2])),
        ("set int", lambda s: s.set("bi", 5)),
        ("get a", lambda s: s.get("a")),
        ("get b", lambda s: s.get("b")),
        ("num_keys", lambda s: s.num_keys()),
        ("add new", lambda s: s.add("c", 3)),
        ("add again", lambda s: s.add("c", -10)),
        ("get c", lambda s: s.get("c")),
        ("add float", lambda s: s.add("c", 1.5)),
        ("set then add", lambda s: (s.set("n", "12"), s.add("n", 1))),
        ("add 0", lambda s: s.add("z0", 0)),
        ("cas missing empty", lambda s: s.compare_set("cs1", "", "v1")),
        ("get cs1", lambda s: s.get("cs1")),
        ("cas missing other", lambda s: s.compare_set("cs2", "e", "v2")),
        ("check cs2", lambda s: s.check(["cs2"])),
        ("cas match", lambda s: s.compare_set("cs1", "v1", "v1b")),
        ("cas mismatch", lambda s: s.compare_set("cs1", "zz", "v1c")),
        ("cas existing empty", lambda s: s.compare_set("cs1", "", "v1d")),
        ("cas bytes", lambda s: s.compare_set("cs1", b"v1b", b"\x00")),
        ("check", lambda s: s.check(["a", "b"])),
        ("check missing", lambda s: s.check(["a", "nope"])),
        ("check empty", lambda s: s.check([])),
        ("append", lambda s: (s.append("ap", "po"), s.append("ap", b"tato"), s.get("ap"))),
        ("multi_set", lambda s: s.multi_set(["m1", "m2"], ["x", b"y"])),
        ("multi_get", lambda s: s.multi_get(["m1", "m2"])),
        ("multi_get empty", lambda s: s.multi_get([])),
        ("list_keys", lambda s: sorted(k for k in s.list_keys() if k != "efcount/")),
        ("num_keys after", lambda s: s.num_keys()),
        ("delete", lambda s: s.delete_key("a")),
        ("delete missing", lambda s: s.delete_key("a")),
        ("num_keys after delete", lambda s: s.num_keys()),
        ("empty key", lambda s: (s.set("", "e"), s.get(""))),
        ("empty value", lambda s: (s.set("ev", ""), s.get("ev"))),
        ("wait present", lambda s: s.wait(["b", "ev"])),
        ("wait none", lambda s: s.wait([])),
        ("barrier 1", lambda s: (s.barrier("bar", 1), sorted(k for k in s.list_keys()
                                                             if k.startswith("bar")))),
        ("has_extended_api", lambda s: s.has_extended_api()),
        ("queue_len none", lambda s: s.queue_len("q")),
        ("queue_push", lambda s: (s.queue_push("q", "one"), s.queue_push("q", b"two"))),
        ("queue_len", lambda s: s.queue_len("q")),
        ("check queue", lambda s: s.check(["q"])),
        ("queue not a key", lambda s: (s.num_keys(), "q" in s.list_keys())),
        ("queue_pop", lambda s: (s.queue_pop("q"), s.queue_pop("q", False))),
        ("queue_pop empty", lambda s: s.queue_pop("q", block=False)),
        ("check queue empty", lambda s: s.check(["q"])),
        ("timeout", lambda s: s.timeout),
        ("set_timeout", lambda s: (s.set_timeout(SHORT), s.timeout)),
        ("set_timeout int", lambda s: s.set_timeout(5)),
        ("clone shares", lambda s: (type(s.clone()).__name__, s.clone().get("b"))),
        ("num_keys end", lambda s: s.num_keys()),
    ]
    if kind != "file":       # torch's FileStore polls each second: its timeouts are tested below
        ops += [
            ("get missing", lambda s: s.get("missing")),
            ("wait missing", lambda s: s.wait(["missing", "b"])),
            ("wait timeout", lambda s: s.wait(["missing"], timedelta(milliseconds=50))),
            ("multi_get missing", lambda s: s.multi_get(["b", "missing"])),
            ("queue_pop blocks", lambda s: s.queue_pop("q")),
            ("barrier timeout", lambda s: s.barrier("bar2", 2, timedelta(milliseconds=50))),
        ]
    return ops


@pytest.mark.parametrize("kind", ["hash", "file", "tcp", "prefix"])
def test_every_method_matches_torch(kind, tmp_path):
    ours, theirs = make(S, kind, tmp_path), make(td, kind, tmp_path)
    for label, op in script(kind):
        assert outcome(lambda: op(ours)) == outcome(lambda: op(theirs)), (kind, label)


@pytest.mark.parametrize("kind", ["hash", "tcp", "prefix"])
def test_literal_values(kind, tmp_path):
    s = make(S, kind, tmp_path)
    s.set("k", "v")
    assert s.get("k") == b"v" and isinstance(s.get("k"), bytes)
    assert s.add("n", 2) == 2 and s.add("n", 5) == 7 and s.get("n") == b"7"
    assert s.compare_set("new", "", "x") == b"x"
    assert s.compare_set("other", "e", "x") == b"e" and not s.check(["other"])
    assert s.compare_set("new", "y", "z") == b"x"
    blob = bytes(range(256)) * 3
    s.set("blob", blob)
    assert s.get("blob") == blob and s.multi_get(["blob", "k"]) == [blob, b"v"]
    s.queue_push("q", blob)
    assert s.queue_len("q") == 1 and s.queue_pop("q") == blob
    with pytest.raises(ValueError, match="stoll"):
        s.add("k", 1)
    with pytest.raises(QueueEmptyError, match="queue is empty"):
        s.queue_pop("q", block=False)
    assert s.timeout == (timedelta(seconds=10) if kind == "tcp" else timedelta(seconds=300))


@pytest.mark.parametrize("kind,message", [
    ("hash", "Wait timeout"),
    ("prefix", "Wait timeout"),
    ("tcp", "wait timeout after 100ms, keys: /nope"),
    ("file", "Timeout waiting for key: nope after 100 ms"),
])
def test_get_timeout_class_and_message(kind, message, tmp_path):
    s = make(S, kind, tmp_path)
    s.set_timeout(SHORT)
    with pytest.raises(DistStoreError) as info:
        s.get("nope")
    assert str(info.value) == message and isinstance(info.value, RuntimeError)
    with pytest.raises(DistStoreError, match="[Ww]ait timeout"):
        s.wait(["nope"], timedelta(milliseconds=20))


def test_error_hierarchy_is_torchs():
    for ours, theirs in [(DistError, td.DistError), (DistStoreError, td.DistStoreError),
                         (DistNetworkError, td.DistNetworkError),
                         (DistBackendError, td.DistBackendError),
                         (QueueEmptyError, td.QueueEmptyError)]:
        assert [c.__name__ for c in ours.__mro__[:-3]] == [c.__name__ for c in theirs.__mro__[:-3]]


@pytest.mark.parametrize("kind", ["hash", "tcp"])
def test_blocking_get_and_barrier_wake_up_across_threads(kind, tmp_path):
    s = make(S, kind, tmp_path)
    other = s.clone()
    arrived = []
    t = threading.Thread(target=lambda: (other.barrier("b", 2, timedelta(seconds=5)),
                                         arrived.append(other.get("late"))))
    t.start()
    s.barrier("b", 2, timedelta(seconds=5))
    s.set("late", "here")
    t.join(5)
    assert arrived == [b"here"]


def test_file_store_queue_and_extended_api(tmp_path):
    s = S.FileStore(str(tmp_path / "f"), 1)
    assert s.has_extended_api() is False and s.path == str(tmp_path / "f")
    with pytest.raises(NotImplementedError, match="queue support is not implemented."):
        s.queue_push("q", "x")
    s.set_timeout(SHORT)
    with pytest.raises(RuntimeError, match="^Wait timeout$"):
        s.barrier("bar", 2, timedelta(milliseconds=50))


def test_file_store_removes_file_after_last_of_world_size(tmp_path):
    seen = {}
    for lib in (S, td):
        path = str(tmp_path / lib.__name__)
        stores = [lib.FileStore(path, 2) for _ in range(3)]
        first = stores[0].num_keys()
        exists = []
        while stores:
            stores.pop()
            exists.append(os.path.exists(path))
        keep = lib.FileStore(path + "-keep")          # world_size -1: the file stays
        keep.set("a", "1")
        del keep
        again = lib.FileStore(path + "-keep")
        seen[lib.__name__] = (first, exists, again.get("a"), again.num_keys())
        del again
    expected = (1, [True, True, False], b"1", 3)
    assert seen["ember.distributed.store"] == seen["torch.distributed"] == expected


def test_tcp_store_server_and_clients():
    master = S.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=5))
    assert master.port > 0 and master.host == "127.0.0.1" and master.libuvBackend is True
    assert master.num_keys() == 0
    client = S.TCPStore("127.0.0.1", master.port, 3, False, timedelta(seconds=5), use_libuv=False)
    assert master.num_keys() == 1 and master.list_keys() == []   # the hidden join counter
    assert client.libuvBackend is False
    client.set("k", "v")
    assert master.get("k") == b"v"
    master.barrier("bar", 1)
    assert master.get("bar") == b"1"
    with pytest.raises(DistNetworkError, match=f"port: {master.port}, useIpv6: false, code: -98, "
                                               "name: EADDRINUSE, message: address already in use"):
        S.TCPStore("127.0.0.1", master.port, 1, True, SHORT)
    with pytest.raises(ValueError, match="TCPStore world size cannot be 0"):
        S.TCPStore("127.0.0.1", 0, 0, True, SHORT)
    with pytest.raises(DistStoreError, match="barrier timeout after 50ms, key: b2"):
        master.barrier("b2", 2, timedelta(milliseconds=50))


def test_tcp_store_wait_for_workers_and_connect_timeout():
    with pytest.raises(DistStoreError, match=r"^Timed out after 1 seconds waiting for clients. "
                                             r"1/2 clients joined.$"):
        S.TCPStore("127.0.0.1", 0, 2, True, timedelta(milliseconds=300))
    assert S.TCPStore("127.0.0.1", 0, 2, True, SHORT, wait_for_workers=False).num_keys() == 0
    free = S.TCPStore("127.0.0.1", 0, None, True, SHORT)
    port = free.port
    del free                                         # the server stops with its master
    message = rf"^The client socket has timed out after 200ms while trying to connect to " \
              rf"\(127.0.0.1, {port}\).$"
    with pytest.raises(DistNetworkError, match=message):
        S.TCPStore("127.0.0.1", port, None, False, timedelta(milliseconds=200))


def test_tcp_store_multi_tenant_shares_the_server():
    a = S.TCPStore("127.0.0.1", 0, 1, True, SHORT, multi_tenant=True)
    b = S.TCPStore("127.0.0.1", a.port, 1, True, SHORT, multi_tenant=True)
    a.set("k", "v")
    assert b.get("k") == b"v" and b.num_keys() == 2


def test_prefix_store_nesting_and_python_subclass():
    base = S.HashStore()
    base.set("other", "1")
    p = S.PrefixStore("pre", base)
    pp = S.PrefixStore("b", p)
    pp.set("k", "v")
    p.set("a", "1")
    assert sorted(base.list_keys()) == ["other", "pre/a", "pre/b/k"]
    assert sorted(p.list_keys()) == ["a", "b/k"]
    assert pp.list_keys() == ["k"] and pp.num_keys() == 3
    assert pp.underlying_store is p and pp._underlying_non_prefix_store is base
    p.set_timeout(timedelta(seconds=7))
    assert base.timeout == pp.timeout == timedelta(seconds=7)
    assert pp.clone().underlying_store.underlying_store is base

    class DictStore(S.Store):
        def __init__(self):
            super().__init__()
            self.d = {}

        def set(self, key, value):
            self.d[key] = value

        def get(self, key):
            return self.d[key]
    mine = DictStore()
    q = S.PrefixStore("x", mine)
    q.set("a", "b")
    assert q.get("a") == "b" and mine.d == {"x/a": "b"}
    with pytest.raises(RuntimeError, match="num_keys"):
        q.num_keys()


TCP_CHILD = """
import sys
from datetime import timedelta
sys.path.insert(0, {repo!r})
from ember.distributed.store import TCPStore
s = TCPStore("127.0.0.1", int(sys.argv[1]), 2, False, timedelta(seconds=10))
s.set("from_child", bytes(range(256)))
s.add("count", 5)
s.barrier("done", 2)
print(s.get("from_master").decode())
"""

FILE_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from ember.distributed.store import FileStore
s = FileStore(sys.argv[1], 2)
s.add("count", 5)
s.set("from_child", "hi")
print(s.get("from_master").decode(), s.add("count", 0))
"""


def run_child(code, arg, parent):
    proc = subprocess.Popen([PY, "-c", code.format(repo=REPO), arg], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        parent()
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        return out.split()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_tcp_store_between_two_processes():
    master = S.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=10))

    def parent():
        master.add("count", 1)
        master.barrier("done", 2)
        assert master.get("from_child") == bytes(range(256)) and master.get("count") == b"6"
        master.set("from_master", "ok")
    assert run_child(TCP_CHILD, str(master.port), parent) == ["ok"]


def test_file_store_between_two_processes(tmp_path):
    path = str(tmp_path / "shared")
    store = S.FileStore(path, 2)

    def parent():
        store.add("count", 1)
        store.set_timeout(timedelta(seconds=10))
        assert store.get("from_child") == b"hi"
        store.set("from_master", "ok")
    assert run_child(FILE_CHILD, path, parent) == ["ok", "6"]
    store._release()                                  # what collecting it does
    assert not os.path.exists(path)


def master_port():
    return S.TCPStore("127.0.0.1", 0, None, True, SHORT).port   # free once collected


@pytest.mark.parametrize("env,kwargs", [
    ({}, {}), ({}, {"rank": 0}), ({}, {"rank": 0, "world_size": 1}),
    ({"MASTER_ADDR": "127.0.0.1"}, {"rank": 0, "world_size": 1}),
])
def test_env_rendezvous_missing_variables(env, kwargs, monkeypatch):
    for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError) as ours:
        next(rdzv.rendezvous("env://", **kwargs))
    with pytest.raises(ValueError) as theirs:
        next(trdzv.rendezvous("env://", **kwargs))
    assert str(ours.value) == str(theirs.value)


def test_env_rendezvous(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(master_port()))
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "1")
    gen = rdzv.rendezvous("env://?rank=0")                       # the url's rank wins
    store, rank, world_size = next(gen)
    assert isinstance(store, S.TCPStore) and (rank, world_size) == (0, 1)
    assert store.timeout == timedelta(minutes=30) and store.num_keys() == 1
    with pytest.raises(RuntimeError, match="Unable to perform re-rendezvous using env:// method"):
        next(gen)


def test_tcp_and_file_rendezvous(tmp_path):
    port = master_port()
    store, rank, size = next(rdzv.rendezvous(f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                                             timeout=timedelta(seconds=2)))
    assert (store.port, store.timeout, rank, size) == (port, timedelta(seconds=2), 0, 1)
    path = str(tmp_path / "rdzv")
    store, rank, size = next(rdzv.rendezvous(f"file://{path}?rank=0&world_size=1"))
    assert isinstance(store, S.FileStore) and store.path == path and (rank, size) == (0, 1)


@pytest.mark.parametrize("url,kwargs", [
    ("tcp://127.0.0.1:29536?world_size=1", {}),
    ("tcp://127.0.0.1:29536?rank=0", {}),
    ("tcp://127.0.0.1?rank=0&world_size=1", {}),
    ("tcp://127.0.0.1:29537", {"rank": 0}),
    ("tcp://127.0.0.1:29537?rank=0&world_size=1", {"rank": 1}),
    ("file:///tmp/x?rank=0", {}),
    ("file:///tmp/x?world_size=1", {}),
    ("file://?rank=0&world_size=1", {}),
    ("foo://x", {}), ("", {}), (5, {}),
    ("env://", {"rank": "0"}), ("env://", {"rank": 0, "world_size": "1"}),
])
def test_rendezvous_bad_urls_match_torch(url, kwargs):
    ours, theirs = (outcome(lambda: next(m.rendezvous(url, **kwargs))) for m in (rdzv, trdzv))
    assert ours == theirs and isinstance(ours, tuple)


def test_register_rendezvous_handler():
    with pytest.raises(RuntimeError, match=r"Rendezvous handler for tcp:// already registered"):
        rdzv.register_rendezvous_handler("tcp", lambda url, **kw: iter(()))

    def handler(url, **kwargs):
        yield url, kwargs
    rdzv.register_rendezvous_handler("embertest", handler)
    try:
        assert next(rdzv.rendezvous("embertest://h:1/p", rank=1, world_size=3, timeout=5)) == (
            "embertest://h:1/p?rank=1&world_size=3", {"timeout": 5})
    finally:
        del rdzv._rendezvous_handlers["embertest"]


def test_hash_store_zero_timeout_waits_until_set():
    s = S.HashStore()
    threading.Timer(0.05, lambda: s.set("k", "v")).start()
    s.wait(["k"], timedelta(0))
    assert s.get("k") == b"v"


@pytest.mark.parametrize("kind", ["file", "tcp"])
def test_concurrent_adds_from_threads(kind, tmp_path):
    s = make(S, kind, tmp_path)
    copies = [s.clone() for _ in range(4)]
    threads = [threading.Thread(target=lambda c=c: [c.add("n", 1) for _ in range(25)])
               for c in copies + [s]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert s.get("n") == b"125"


def test_base_store_methods_are_unimplemented_like_torch():
    class Bare(S.Store):
        pass

    class TorchBare(td.Store):
        pass
    for name, args in [("get", ("k",)), ("set", ("k", "v")), ("num_keys", ())]:
        with pytest.raises(NotImplementedError, match=name):
            getattr(Bare(), name)(*args)
        with pytest.raises(RuntimeError):
            getattr(TorchBare(), name)(*args)
    assert Bare().timeout == TorchBare().timeout == timedelta(seconds=300)


def test_tcp_store_serves_a_listening_socket_handed_over():
    import socket
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    master = S.TCPStore("127.0.0.1", port, 1, True, SHORT, master_listen_fd=listener.detach())
    client = S.TCPStore("127.0.0.1", port, None, False, SHORT)
    client.set("k", "v")
    assert master.port == port and master.get("k") == b"v"
