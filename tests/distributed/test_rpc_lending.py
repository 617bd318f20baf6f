"""Large tensors between workers of one host: lent (read from the sender's memory with
process_vm_readv) between LEND_MIN_BYTES and SHM_MIN_BYTES, /dev/shm files above, sockets
below — same values on every path, lent arrays freed once read. Real worker processes on
loopback, bounded in time."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("zmq")

import ember  # noqa: E402
from ember.distributed.rpc import _cma, _wire  # noqa: E402
from tests.distributed.workers import run_workers  # noqa: E402

needs_cma = pytest.mark.skipif(not _cma.can_read(os.getpid()),
                               reason="process_vm_readv not permitted here")

PRELUDE = """
import time
import numpy as np
import ember.distributed.rpc as rpc
from ember.distributed.rpc import api

def echo(x):
    return x

def pair(x, k):
    return (x * k, "tag", x[:3])

def lent_count():
    return len(api._agent.lent)

def lend_to():
    return sorted(api._agent.lend_to)
"""


def _run(body, env=None):
    return run_workers(PRELUDE + textwrap.dedent(body), 2, init=False, timeout=90, env=env)


@needs_cma
def test_cma_reads_another_process_and_refuses_a_bad_address():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert _cma.can_read(child.pid)
    finally:
        child.kill()
        child.wait()
    keep = []
    a = np.arange(200_000, dtype=np.float64)
    d = _cma.lend(a, keep)
    assert keep == [a] and len(d) == 24
    np.testing.assert_array_equal(_cma.read(d).view(np.float64), a)
    bad = _cma._DESCRIPTOR.pack(os.getpid(), 8, 64)          # nothing mapped at address 8
    with pytest.raises(RuntimeError, match="could not read a tensor of 64 bytes"):
        _cma.read(bad)


@needs_cma
def test_frames_lend_between_the_two_thresholds_only():
    keep = []
    small = ember.ones(1000)
    mid = ember.arange(300_000, dtype=ember.float32)          # 1.2 MB: lent
    frames = _wire.dumps_call(np.add, (small, mid), {}, True, [], keep)
    assert frames is None                                     # np.add is not a Python function
    frames = _wire.dumps_call(textwrap.dedent, (small, mid), {}, True, [], keep)
    slots = __import__("pickle").loads(frames[0])[3]
    assert [s[4] for s in slots] == [_wire.SOCKET, _wire.LENT] and len(keep) == 1
    back = _wire.loads_call([bytes(f) for f in frames])[1]
    np.testing.assert_array_equal(back[1].numpy(), mid.numpy())
    big = ember.zeros(_wire.SHM_MIN_BYTES // 4 + 1)           # /dev/shm even with keep
    keep = []
    frames, flat = _wire.dumps_plain(big, True, [], keep)
    assert flat and keep == [] and len(frames[1]) < 100
    assert _wire.loads_result(frames).shape == big.shape


@needs_cma
def test_lent_tensors_round_trip_and_are_freed_once_read():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        x = ember.arange(400_000, dtype=ember.float32).reshape(800, 500)   # 1.6 MB
        report(lend_to())
        y = rpc.rpc_sync("worker1", echo, args=(x,))
        report(bool((y == x).all()) and y.shape == x.shape)
        a, tag, head = rpc.rpc_sync("worker1", pair, args=(x[:, ::2], 2.0))  # a strided view
        report([bool((a == x[:, ::2] * 2).all()), tag, head.tolist() == (x[:3, ::2]).tolist()])
        futs = [rpc.rpc_async("worker1", echo, args=(x + i,)) for i in range(6)]
        report([float(f.wait()[0, 0]) for f in futs])
        deadline = time.monotonic() + 10                       # releases are messages too
        while rpc.rpc_sync("worker1", lent_count) and time.monotonic() < deadline:
            time.sleep(0.02)
        report(rpc.rpc_sync("worker1", lent_count))
        report(len(api._agent.pending))
    rpc.shutdown()
    """)[0]
    assert 1 in out[0]
    assert out[1] is True
    assert out[2] == [True, "tag", True]
    assert out[3] == [float(i) for i in range(6)]
    assert out[4] == 0 and out[5] == 0


def test_without_cross_memory_reads_large_tensors_go_by_socket():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        x = ember.randn(300_000)
        report([lend_to(), bool((rpc.rpc_sync("worker1", echo, args=(x,)) == x).all()),
                rpc.rpc_sync("worker1", lent_count)])
    rpc.shutdown()
    """, env={"EMBER_RPC_NO_CMA": "1"})[0]
    assert out == [[[], True, 0]]


@needs_cma
def test_a_timed_out_call_keeps_its_lent_arrays_until_the_late_reply():
    out = _run("""
    def slow_sum(x, seconds):
        time.sleep(seconds)
        return float(x.sum())

    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        x = ember.ones(300_000)
        try:
            rpc.rpc_sync("worker1", slow_sum, args=(x, 0.6), timeout=0.1)
            report("no timeout")
        except RuntimeError as e:
            report(["timeout" in str(e), len(api._agent.late)])
        time.sleep(3.0)                     # the late reply waits in this thread's box,
        value = rpc.rpc_sync("worker1", slow_sum, args=(x, 0))   # read by its next call
        report([len(api._agent.late), value])
    rpc.shutdown()
    """)[0]
    assert out == [[True, 1], [0, 300000.0]]
