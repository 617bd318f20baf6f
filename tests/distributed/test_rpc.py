"""ember.distributed.rpc: the wire format in process, then every API with 2-3 real worker
processes on loopback (``run_workers(init=False)``), each run bounded in time."""
import pickle
import textwrap

import numpy as np
import pytest

pytest.importorskip("zmq")

import ember  # noqa: E402
import ember.distributed.rpc as rpc  # noqa: E402
from ember.distributed.rpc import _wire  # noqa: E402
from ember.distributed.rpc._agent import RemoteError  # noqa: E402
from tests.distributed.workers import run_workers  # noqa: E402

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------- in process
def test_wire_round_trip_keeps_values_dtypes_and_grad_flags():
    a = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    w = ember.ones(2, 3, requires_grad=True)
    p = ember.nn.Parameter(ember.zeros(4))
    obj = {"a": a, "t": (w, [ember.tensor(True), ember.tensor(7)]), "p": p, "s": "x",
           "e": ember.zeros(0, 5), "c": ember.tensor([1 + 2j])}
    frames = _wire.encode(obj)
    assert len(frames) == 1 + 7                  # pickle + one buffer per tensor
    back = _wire.decode([bytes(f) for f in frames])
    np.testing.assert_array_equal(back["a"].numpy(), a.numpy())
    assert back["a"].dtype == ember.float64 and back["a"].shape == (3, 4)
    assert back["t"][0].requires_grad and back["t"][0].is_leaf
    assert not back["a"].requires_grad
    assert back["t"][1][0].item() is True and back["t"][1][1].item() == 7
    assert type(back["p"]) is ember.nn.Parameter and back["p"].requires_grad
    assert back["e"].shape == (0, 5) and back["s"] == "x"
    assert back["c"].item() == 1 + 2j
    back["a"].add_(1)                            # received tensors are writable
    np.testing.assert_array_equal(back["a"].numpy(), a.numpy() + 1)


def test_wire_views_send_only_their_elements_without_copying():
    big = ember.arange(1_000_000, dtype=ember.float32)
    part = big[1000:3000]
    frames = _wire.encode(part)
    assert len(frames) == 2 and memoryview(frames[1]).nbytes == 2000 * 4
    assert np.shares_memory(frames[1], big.numpy())         # zero-copy of a contiguous view
    strided = big[::1000]
    frames = _wire.encode(strided)
    assert memoryview(frames[1]).nbytes == 1000 * 4
    np.testing.assert_array_equal(_wire.decode(frames).numpy(), big.numpy()[::1000])
    col = ember.arange(12.).reshape(3, 4)[:, 1]
    np.testing.assert_array_equal(_wire.decode(_wire.encode(col)).numpy(), [1., 5., 9.])
    assert len(frames[0]) < 300                                # no element in the pickle


def test_wire_large_buffer_is_wrapped_not_copied():
    zmq = pytest.importorskip("zmq")
    t = ember.arange(100_000, dtype=ember.float64)
    frames = [zmq.Frame(f) for f in _wire.encode(t)]
    back = _wire.decode(frames)
    assert np.shares_memory(back.numpy(), np.frombuffer(frames[1].buffer, np.uint8))
    np.testing.assert_array_equal(back.numpy(), t.numpy())


def test_remote_error_keeps_builtin_types_like_torch():
    class Custom(Exception):
        pass
    info = rpc.WorkerInfo("worker1", 1)
    try:
        raise KeyError("k")
    except KeyError as e:
        err = RemoteError.capture(e, info)
    exc = pickle.loads(pickle.dumps(err)).to_exception()
    assert type(exc) is KeyError and "On WorkerInfo(id=1, name=worker1):" in str(exc)
    assert "Traceback (most recent call last)" in str(exc)
    exc = RemoteError.capture(Custom("c"), info).to_exception()
    assert type(exc) is RuntimeError and str(exc).startswith("Custom: On WorkerInfo(")


def test_options_constants_and_worker_info_match_torch():
    mine = rpc.TensorPipeRpcBackendOptions()
    theirs = torch.distributed.rpc.TensorPipeRpcBackendOptions()
    for attr in ("num_worker_threads", "rpc_timeout", "init_method", "device_maps", "devices"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    for name in ("DEFAULT_RPC_TIMEOUT_SEC", "UNSET_RPC_TIMEOUT", "DEFAULT_INIT_METHOD",
                 "DEFAULT_NUM_WORKER_THREADS", "DEFAULT_SHUTDOWN_TIMEOUT"):
        assert getattr(rpc.constants, name) == getattr(torch.distributed.rpc.constants, name)
    assert repr(rpc.BackendType.TENSORPIPE) == repr(torch.distributed.rpc.BackendType.TENSORPIPE)
    with pytest.raises(NotImplementedError, match="device_maps"):
        rpc.TensorPipeRpcBackendOptions(device_maps={"worker1": {0: 1}})
    with pytest.raises(NotImplementedError, match="set_device_map"):
        mine.set_device_map("worker1", {0: 1})
    info = rpc.WorkerInfo("worker1", 1)
    assert repr(info) == "WorkerInfo(id=1, name=worker1)"
    assert info == rpc.WorkerInfo("worker1", 1) and info != rpc.WorkerInfo("worker2", 1)
    assert hash(info) == hash(rpc.WorkerInfo("worker1", 1))


def test_not_initialized_errors_match_torch():
    for call in (lambda: rpc.rpc_sync("a", len), lambda: rpc.get_worker_info(), rpc.shutdown):
        with pytest.raises(RuntimeError, match="RPC has not been initialized"):
            call()
    with pytest.raises(RuntimeError, match="Current RPC agent is not set"):
        rpc.RRef(1)


# ---------------------------------------------------------------------- worker processes
PRELUDE = """
import gc, time
import ember.distributed.rpc as rpc

def boom(x):
    raise ValueError(f"bad value {x}")

class Custom(Exception):
    pass

def custom():
    raise Custom("custom")

def slow(seconds, value=1):
    time.sleep(seconds)
    return value

def echo(x):
    return x

@ember.jit.script
def scripted(x, y: int):
    return x * y + 1

@rpc.functions.async_execution
def async_add_chained(to, x, y, z):
    return rpc.rpc_async(to, ember.add, args=(x, y)).then(lambda fut: fut.wait() + z)

def owned():
    gc.collect()
    time.sleep(0.2)          # one-way deletes from other workers arrive
    return [rpc.rref._owned_count(), rpc.rref._user_count()]

def fetch_sum(rref):
    return rref.to_here().sum().item()

def errors(fn):
    try:
        fn()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None
"""


def _run(body, world_size=3, **kw):
    return run_workers(PRELUDE + textwrap.dedent(body), world_size, init=False, timeout=60, **kw)


def test_calls_targets_exceptions_and_timeouts():
    out = _run("""
    opts = rpc.TensorPipeRpcBackendOptions(rpc_timeout=30)
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD, rpc_backend_options=opts)
    if RANK == 0:
        me, w1 = rpc.get_worker_info(), rpc.get_worker_info("worker1")
        report([repr(me), repr(w1), w1.id, w1.name, w1 == rpc.get_worker_info("worker1")])
        x = ember.arange(6.).reshape(2, 3)
        report(rpc.rpc_sync("worker1", ember.add, args=(x, 1)).tolist())            # builtin
        report(rpc.rpc_sync(2, ember.mul, args=(x,), kwargs={"other": 3}).tolist())
        report(rpc.rpc_sync(w1, echo, args=({"k": x[:, 1]},))["k"].tolist())       # python
        report(rpc.rpc_sync("worker2", scripted, args=(x, 2)).tolist())             # scripted
        g = rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2, requires_grad=True), 1))
        report([g.requires_grad, rpc.rpc_sync("worker1", echo, args=(x,)).requires_grad])
        futs = [rpc.rpc_async(f"worker{1 + i % 2}", ember.add, args=(x, i)) for i in range(20)]
        report([f.sum().item() for f in ember.futures.wait_all(futs)])
        report(rpc.rpc_sync("worker1", async_add_chained,
                            args=("worker2", ember.ones(2), 1, 1)).tolist())
        report(errors(lambda: rpc.rpc_sync(1, boom, args=(3,))))
        report(errors(lambda: rpc.rpc_async("worker2", custom).wait()))
        report(errors(lambda: rpc.rpc_sync("worker1", slow, args=(2,), timeout=0.3)))
        report(errors(lambda: rpc.rpc_async("worker1", slow, args=(2,), timeout=0.3).wait()))
        report(rpc.rpc_sync("worker1", slow, args=(0.4, 5), timeout=0))             # no limit
        report(errors(lambda: rpc.rpc_sync("nobody", ember.add, args=(1, 2))))
        report(errors(lambda: rpc.rpc_sync(7, ember.add, args=(1, 2))))
        report(errors(lambda: rpc.rpc_sync("worker1", lambda: 1)))
        bad_callback = rpc.rpc_async("worker1", slow, args=(0.2,))
        bad_callback.add_done_callback(lambda fut: 1 / 0)        # must not stop the agent
        bad_callback.wait()
        report([rpc.get_rpc_timeout(), rpc.rpc_sync("worker1", ember.add, args=(2, 3)).item()])
        late = rpc.rpc_async("worker2", slow, args=(0.5, 9))
    rpc.shutdown()
    if RANK == 0:
        report(late.wait())                    # graceful shutdown waited for it
    """)[0]
    assert out[0] == ["WorkerInfo(id=0, name=worker0)", "WorkerInfo(id=1, name=worker1)", 1,
                      "worker1", True]
    x = np.arange(6.).reshape(2, 3)
    assert out[1] == (x + 1).tolist() and out[2] == (x * 3).tolist()
    assert out[3] == [1.0, 4.0] and out[4] == (x * 2 + 1).tolist()
    assert out[5] == [True, False]
    assert out[6] == [x.sum() + 6 * i for i in range(20)]
    assert out[7] == [3.0, 3.0]                                  # torch 1.6's example
    kind, msg = out[8]
    assert kind == "ValueError" and msg.startswith("ValueError: On WorkerInfo(id=1, name="
                                                   "worker1):\nValueError('bad value 3')\n"
                                                   "Traceback")       # (torch 2.13's form)
    assert 'in boom\n    raise ValueError(f"bad value {x}")' in msg
    assert out[9][0] == "RuntimeError" and out[9][1].startswith(
        "Custom: On WorkerInfo(id=2, name=worker2):\nCustom('custom')")
    for kind, msg in out[10:12]:
        assert kind == "RuntimeError"
        assert msg == ("RPCErr:1:RPC ran for more than set timeout (300 ms) and will now be "
                       "marked with an error")                  # (torch 2.13: no worker)
    assert out[12] == 5
    assert out[13] == ["RuntimeError", "name:worker0,rank:0 could not find destination name nobody"]
    assert out[14] == ["RuntimeError", "name:worker0,rank:0 could not find destination id 7"]
    assert out[15][0] in ("AttributeError", "PicklingError")     # lambdas do not pickle
    assert out[16] == [30.0, 5]
    assert out[17] == 9


def test_rref_api_proxies_forking_and_reference_counting():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        rr = rpc.remote("worker1", ember.add, args=(ember.ones(3), 1))
        report([repr(rr), rr.to_here().tolist(), rr.is_owner(), repr(rr.owner()),
                rr.owner_name(), rr.confirmed_by_owner()])
        report(errors(rr.local_value))
        report(rpc.rpc_sync("worker1", owned))                       # 1 value held for us
        report(rpc.rpc_sync("worker2", fetch_sum, args=(rr,)))       # forked to worker2
        kept = rpc.remote("worker2", echo, args=(rr,))               # worker2 keeps a fork
        report(rpc.rpc_sync("worker1", owned))
        del rr
        gc.collect(); time.sleep(0.2)
        report(rpc.rpc_sync("worker1", owned))                       # the fork keeps it
        del kept
        gc.collect(); time.sleep(0.2)
        rpc.rpc_sync("worker2", gc.collect)
        time.sleep(0.2)
        report(rpc.rpc_sync("worker1", owned))                       # last user gone: freed
        local = rpc.RRef(ember.arange(4.))
        report([repr(local), local.is_owner(), local.to_here().tolist(),
                local.local_value().tolist(), local.confirmed_by_owner()])
        report(rpc.rpc_sync("worker1", fetch_sum, args=(local,)))    # owner forks its own
        report(rpc.rpc_sync("worker0", owned))
        lst = rpc.remote("worker1", list, args=([3, 1, 2],))
        report([lst.rpc_sync().__len__(), lst.rpc_async().count(1).wait(),
                lst.remote().index(2).to_here()])
        bad = rpc.remote("worker2", boom, args=(1,))
        report(errors(bad.to_here))
        slow_rref = rpc.remote("worker1", slow, args=(2,), timeout=0.3)
        time.sleep(0.5)
        report([slow_rref.confirmed_by_owner(), errors(slow_rref.to_here)[0]])
        mine = rpc.remote("worker0", ember.ones, args=(2,))
        report([mine.is_owner(), mine.to_here().tolist()])
        home = rpc.rpc_sync("worker1", echo, args=(local,))           # comes back to owner
        report([home.is_owner(), home.local_value().sum().item()])
    rpc.shutdown()
    """)[0]
    assert out[0][0].startswith("UserRRef(RRefId = GloballyUniqueId(created_on=0, local_id=")
    assert out[0][1:] == [[2.0, 2.0, 2.0], False, "WorkerInfo(id=1, name=worker1)", "worker1",
                          True]
    assert out[1][0] == "RuntimeError" and "can't call localValue() on user WorkerInfo(id=0, " \
        "name=worker0). Call it on owner WorkerInfo(id=1, name=worker1)" in out[1][1]
    assert out[2] == [1, 1] and out[3] == 6.0                  # one value, one user
    assert out[4] == [1, 2] and out[5] == [1, 1] and out[6] == [0, 0]
    assert out[7][0].startswith("OwnerRRef(GloballyUniqueId(created_on=0, local_id=")
    assert out[7][1:] == [True, [0., 1., 2., 3.], [0., 1., 2., 3.], True]
    assert out[8] == 6.0 and out[9] == [0, 0]
    assert out[10] == [3, 1, 2]
    assert out[11][0] == "ValueError" and "bad value 1" in out[11][1]
    assert out[12] == [False, "RuntimeError"]
    assert out[13] == [True, [1.0, 1.0]]
    assert out[14] == [True, 6.0]


BATCH = """
import threading

class BatchServer:
    def __init__(self, size):
        self.size, self.lock, self.seen = size, threading.Lock(), []
        self.future = ember.futures.Future()

    @staticmethod
    @rpc.functions.async_execution
    def add(server_rref, value):
        self = server_rref.local_value()
        with self.lock:
            self.seen.append(value)
            fut = self.future
            if len(self.seen) == self.size:
                fut.set_result(sum(self.seen))
                self.seen, self.future = [], ember.futures.Future()
        return fut
"""


def test_async_execution_batching_server_with_two_threads():
    out = _run(BATCH + textwrap.dedent("""
    def call_server(server, values):
        futs = [rpc.rpc_async(server.owner(), BatchServer.add, args=(server, v)) for v in values]
        return [f.wait() for f in futs]

    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=2, rpc_timeout=20)
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD, rpc_backend_options=opts)
    if RANK == 0:          # 8 concurrent callers, 2 threads on the server
        server = rpc.RRef(BatchServer(8))
        futs = [rpc.rpc_async(r, call_server, args=(server, range(r - 1, 8, 2))) for r in (1, 2)]
        report([f.wait() for f in futs])
    rpc.shutdown()
    """))[0]
    assert out == [[[sum(range(8))] * 4] * 2]


def test_killed_worker_fails_calls_within_timeout_and_others_keep_working():
    out = _run("""
    import os
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 2:
        os._exit(3)
    if RANK == 0:
        time.sleep(0.5)
        t = time.monotonic()
        report(errors(lambda: rpc.rpc_sync("worker2", ember.add, args=(1, 2), timeout=30)))
        report(time.monotonic() - t < 5)              # seen dead long before the timeout
        report(errors(lambda: rpc.rpc_async("worker2", ember.add, args=(1, 2)).wait()))
        report(rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 2)).tolist())
    t = time.monotonic()
    report(errors(lambda: rpc.shutdown(timeout=2)))
    report(time.monotonic() - t < 10)
    """, expect_fail=(2,))
    r0, r1 = out[0], out[1]
    assert r0[0][0] == "RuntimeError" and r0[0][1].startswith(
        "RPC to WorkerInfo(id=2, name=worker2) failed: the worker (pid ") and "exited" in r0[0][1]
    assert r0[1] is True and r0[2] == r0[0] and r0[3] == [3.0, 3.0]
    for reports in (r0[4:], r1):
        assert reports[0][0] == "RuntimeError" and "['worker2']" in reports[0][1]
        assert reports[1] is True


def test_duplicate_worker_names_are_refused_as_in_torch():
    out = _run("""
    report(errors(lambda: rpc.init_rpc("dup", rank=RANK, world_size=WORLD)))
    """, world_size=2)
    assert out == [[["RuntimeError", "RPC worker name dup is not unique. Workers 0 and 1 share "
                     "the same name."]],
                   [["RuntimeError", "RPC worker name dup is not unique. Workers 1 and 0 share "
                     "the same name."]]]


def test_wire_large_tensors_between_local_workers_go_through_shared_memory():
    if not _wire.HAS_SHM:
        pytest.skip("no /dev/shm")
    import os
    t = ember.arange(5_000_000, dtype=ember.float32)[::2]     # 10 MB once packed
    frames = _wire.encode({"t": t}, shm=True)
    name = bytes(frames[1]).decode()
    assert len(frames[1]) < 100 and os.path.exists(os.path.join(_wire.SHM_DIR, name))
    back = _wire.decode(frames)["t"]
    assert not os.path.exists(os.path.join(_wire.SHM_DIR, name))  # the receiver took it
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    back.mul_(2)                                                  # writable
    small = _wire.encode(ember.ones(10), shm=True)
    assert memoryview(small[1]).nbytes == 40


def test_rref_bookkeeping_is_served_while_the_only_worker_thread_is_busy():
    out = _run("""
    def bounce(rref):       # holds worker1's only thread while worker0 fetches from worker1
        return rpc.rpc_sync("worker0", fetch_sum, args=(rref,))

    opts = rpc.TensorPipeRpcBackendOptions(num_worker_threads=1, rpc_timeout=20)
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD, rpc_backend_options=opts)
    if RANK == 0:
        rr = rpc.remote("worker1", ember.ones, args=(3,))
        report(rpc.rpc_sync("worker1", bounce, args=(rr,)))
    rpc.shutdown()
    """, world_size=2)[0]
    assert out == [3.0]


def test_wire_sends_ember_functions_by_reference():
    for fn in (ember.add, ember.ones, ember.matmul, ember.nn.functional.relu, np.add):
        frames = _wire.encode((fn, (1,), {}))
        assert len(frames[0]) < 120 and _wire.decode(frames)[0] is fn
