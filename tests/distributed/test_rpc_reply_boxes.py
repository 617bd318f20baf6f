"""ember.distributed.rpc reply boxes: a waiting thread reads its own replies, the I/O thread
reads those nobody waits for. Real worker processes on loopback, bounded in time."""
import textwrap

import pytest

pytest.importorskip("zmq")

from tests.distributed.workers import run_workers  # noqa: E402

PRELUDE = """
import threading, time
import ember.distributed.rpc as rpc

def tagged(thread, i, delay):
    time.sleep(delay)
    return (thread, i)

def slow(seconds, value):
    time.sleep(seconds)
    return value

def echo(x):
    return x

def hammer(peer, threads, calls):
    '''``threads`` threads each make ``calls`` rpc_sync calls to ``peer`` at once (plain
    ones with a varying delay on the callee, so replies interleave, and tensor ones); the
    calls whose reply was not the caller's own.'''
    wrong = []

    def run(t):
        for i in range(calls):
            if i % 3 == 2:
                got = rpc.rpc_sync(peer, ember.add, args=(ember.full((2,), float(t)), i))
                if got.tolist() != [t + i, t + i]:
                    wrong.append((t, i, got.tolist()))
            else:
                got = rpc.rpc_sync(peer, tagged, args=(t, i, (t + i) % 3 * 0.001))
                if got != (t, i):
                    wrong.append((t, i, got))
    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return wrong
"""


def _run(body, world_size=2):
    return run_workers(PRELUDE + textwrap.dedent(body), world_size, init=False, timeout=60)


def test_many_threads_calling_rpc_sync_at_once_both_ways_get_their_own_replies():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        back = rpc.rpc_async("worker1", hammer, args=("worker0", 4, 30))   # 1 -> 0 meanwhile
        report(hammer("worker1", 8, 30))
        report(back.wait())
    rpc.shutdown()
    """)
    assert out == [[[], []], []]


def test_callbacks_fire_with_nobody_waiting_and_futures_move_between_threads():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        got, fired = [], threading.Event()
        fut = rpc.rpc_async("worker1", slow, args=(0.05, 7))
        fut.then(lambda f: (got.append(f.value()), fired.set()))
        report([fired.wait(10), got])                  # nobody called wait()

        # a callback pending while this thread makes synchronous calls
        got, fired = [], threading.Event()
        rpc.rpc_async("worker1", slow, args=(0.1, 8)).add_done_callback(
            lambda f: (got.append(f.value()), fired.set()))
        sums = [rpc.rpc_sync("worker1", echo, args=(i,)) for i in range(20)]
        report([sum(sums), fired.wait(10), got])

        # made by a thread that has ended, waited for here; its box is reused
        made = []
        t = threading.Thread(target=lambda: made.append(
            rpc.rpc_async("worker1", slow, args=(0.05, 9))))
        t.start(); t.join()
        t = threading.Thread(target=lambda: made.append(rpc.rpc_sync("worker1", echo, args=(4,))))
        t.start(); t.join()
        report([made[0].wait(), made[1]])

        # a callback that makes a synchronous call itself (it runs while the box is read)
        chained = rpc.rpc_async("worker1", echo, args=(1,)).then(
            lambda f: rpc.rpc_sync("worker1", echo, args=(f.wait() + 1,)))
        report(chained.wait())

        # done() turns True without wait() or a callback
        fut = rpc.rpc_async("worker1", echo, args=(5,))
        deadline = time.monotonic() + 10
        while not fut.done() and time.monotonic() < deadline:
            time.sleep(0.001)
        report([fut.done(), fut.value()])

        # replies through the ROUTER (as from a peer on another host)
        agent = rpc.api._agent
        agent.near.discard(1)
        fired = threading.Event()
        rpc.rpc_async("worker1", echo, args=(2,)).then(lambda f: fired.set())
        report([rpc.rpc_sync("worker1", echo, args=(3,)), fired.wait(10),
                rpc.rpc_sync("worker1", ember.add, args=(ember.ones(2), 1)).tolist()])
        agent.near.add(1)
    rpc.shutdown()
    """)[0]
    assert out[0] == [True, [7]]
    assert out[1] == [sum(range(20)), True, [8]]
    assert out[2] == [9, 4]
    assert out[3] == 2
    assert out[4] == [True, 5]
    assert out[5] == [3, True, [2.0, 2.0]]


def test_plain_calls_and_values_skip_the_custom_pickler():
    import json
    import pickle

    import ember
    from ember.distributed.rpc import _wire
    frames = _wire.dumps_call(json.dumps, (1, "a", (2.5, None)), {"k": [True]})
    assert len(frames) == 1 and pickle.loads(frames[0])[0] == ("json", "dumps")
    assert _wire.loads_call(frames[0]) == (json.dumps, (1, "a", (2.5, None)), {"k": [True]})
    frames = _wire.dumps_call(ember.add, (1, 2), {})                 # ember op: by its namespace
    assert pickle.loads(frames[0])[0] == ("ember", "add")
    assert _wire.loads_call(frames[0])[0] is ember.add
    assert _wire.dumps_call(lambda: 0, (), {}) is None              # not found by name
    assert _wire.dumps_call(json.dumps, (list(range(40)),), {}) is None   # long: general
    assert _wire.dumps_call(json.dumps, (ember.nn.Parameter(ember.ones(2)),), {}) is None
    assert _wire.dumps_call(json.dumps, ([ember.ones(2)],), {}) is None   # nested tensor
    assert _wire.loads(_wire.dumps_plain({"a": (1, 2.0)})[0][0]) == {"a": (1, 2.0)}
    assert _wire.dumps_plain({"t": ember.ones(1)}) == (None, False)


def test_flat_tensor_calls_and_results_round_trip():
    """Top-level tensors of a call's arguments or of a result travel as slots + frames:
    values, dtypes, shapes, strided views, requires_grad and 0-d / empty tensors kept."""
    import json
    import pickle

    import numpy as np

    import ember
    from ember.distributed.rpc import _wire
    base = ember.arange(24, dtype=ember.float64).reshape(4, 6)
    view = base[:, ::2]                                              # strided: packed
    rg = ember.ones(3, requires_grad=True)
    args = (view, 7, ember.tensor(2.5), ember.zeros(0, 2, dtype=ember.int16), rg,
            ember.tensor([True, False]))
    sent = []
    frames = _wire.dumps_call(json.dumps, args, {"k": 1}, False, sent)
    assert len(frames) == 1 + 5 and len(sent) == 5
    name, template, kwargs, slots = pickle.loads(frames[0])
    assert name == ("json", "dumps") and template[1] == 7 and template[0] is None
    got = []
    func, back, kw = _wire.loads_call([bytes(f) for f in frames], got)
    assert func is json.dumps and kw == {"k": 1} and len(got) == 5 and back[1] == 7
    for a, b in zip(args, back):
        if isinstance(a, ember.Tensor):
            assert a.dtype == b.dtype and a.shape == b.shape
            assert a.requires_grad == b.requires_grad
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    for value in (view, (view, 3, "x"), [rg, None]):
        frames, flat = _wire.dumps_plain(value)
        assert flat
        back = _wire.loads_result([bytes(f) for f in frames])
        items = (back,) if isinstance(value, ember.Tensor) else back
        assert type(back) is type(value)
        for a, b in zip((value,) if isinstance(value, ember.Tensor) else value, items):
            if isinstance(a, ember.Tensor):
                np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
            else:
                assert a == b
    with pytest.raises((pickle.PicklingError, AttributeError)):    # as pickle refuses it
        _wire.encode((lambda: 0, (), {}))
