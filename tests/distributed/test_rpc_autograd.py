"""ember.distributed.autograd, RRef.backward and DistributedOptimizer with real worker
processes on loopback; gradients and trained parameters compared with the same model
run in one process by torch (float64)."""
import textwrap

import numpy as np
import pytest

pytest.importorskip("zmq")

from tests.distributed.workers import run_workers  # noqa: E402

torch = pytest.importorskip("torch")

PRELUDE = """
import ember.distributed.rpc as rpc
import ember.distributed.autograd as dist_autograd
from ember.distributed.optim import DistributedOptimizer

def errors(fn):
    try:
        fn()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None

def grads_here(cid):
    return sorted([g.tolist() for g in dist_autograd.get_gradients(cid).values()])

W1 = None

def scale_by_w1(y):          # worker1's own parameter, a leaf there
    global W1
    if W1 is None:
        W1 = ember.tensor([[1.5, -0.5], [0.25, 2.0]], dtype=ember.float64, requires_grad=True)
    return ember.tanh(y @ W1)
"""

X = [[1.0, 2.0, -1.0], [0.5, -0.3, 0.8]]
W = [[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]]
W1 = [[1.5, -0.5], [0.25, 2.0]]


def _run(body, world_size=2, **kw):
    return run_workers(PRELUDE + textwrap.dedent(body), world_size, init=False, timeout=60,
                       **kw)


def _reference():
    x = torch.tensor(X, dtype=torch.float64)
    w = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    w1 = torch.tensor(W1, dtype=torch.float64, requires_grad=True)
    y = torch.mm(x, w)
    z = torch.tanh(y @ w1)
    loss = (z * z).sum() + (y * 3).sum()
    loss.backward()
    return w.grad.tolist(), w1.grad.tolist(), loss.item()


def test_backward_across_two_workers_equals_one_process():
    out = _run("""
    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        x = ember.tensor(%r, dtype=ember.float64)
        w = ember.tensor(%r, dtype=ember.float64, requires_grad=True)
        with dist_autograd.context() as cid:
            report([cid >> 48, cid & ((1 << 48) - 1)])
            y = rpc.rpc_sync("worker1", ember.mm, args=(x, w))          # w goes, y comes back
            z = rpc.rpc_sync("worker1", scale_by_w1, args=(y,))
            loss = (z * z).sum() + (y * 3).sum()
            report([y.requires_grad, y.is_leaf, type(y.grad_fn).__name__])
            dist_autograd.backward(cid, [loss])
            grads = dist_autograd.get_gradients(cid)
            report([list(grads) == [w], grads[w].tolist(), w.grad is None, loss.item()])
            report(rpc.rpc_sync("worker1", grads_here, args=(cid,)))
            report(errors(lambda: dist_autograd.backward(cid, [loss * 2])))   # graph freed
            report(errors(lambda: dist_autograd.backward(cid, [z])))
            report(errors(lambda: dist_autograd.backward(cid, [x.sum()])))
        report(errors(lambda: dist_autograd.get_gradients(cid)))
        with dist_autograd.context() as cid2:
            report(cid2 - cid)
            y = rpc.rpc_sync("worker1", ember.mm, args=(x, w))
            rr = rpc.remote("worker1", ember.sum, args=(y * y,))
            rr.backward(cid2)                      # runs on the owner, flows back here
            report(dist_autograd.get_gradients(cid2)[w].tolist())
        report(errors(lambda: rpc.RRef(3).backward()))
        rpc.RRef((w * 2).sum()).backward()         # no context: local backward into .grad
        report(w.grad.tolist())
    rpc.shutdown()
    """ % (X, W))[0]
    gw, gw1, loss = _reference()
    assert out[0] == [0, 0]
    assert out[1] == [True, False, "RecvRpcBackward"]
    assert out[2][0] is True and out[2][2] is True
    np.testing.assert_allclose(out[2][1], gw, rtol=1e-12)
    assert out[2][3] == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(out[3][0], gw1, rtol=1e-12)
    assert out[4][0] == "RuntimeError" and "second time" in out[4][1]
    assert out[5] == ["RuntimeError", out[5][1]] and out[5][1].endswith(
        "is not a scalar, all roots need to be scalar")
    assert out[6] == ["RuntimeError", "requires_grad not set on root"]
    assert out[7] == ["RuntimeError", "Could not find autograd context with id: 0"]
    assert out[8] == 1
    x = torch.tensor(X, dtype=torch.float64)
    w = torch.tensor(W, dtype=torch.float64, requires_grad=True)
    (torch.mm(x, w) ** 2).sum().backward()
    np.testing.assert_allclose(out[9], w.grad.numpy(), rtol=1e-12)
    assert out[10] == ["RuntimeError", "RRef should contain a tensor for .backward()"]
    assert out[11] == [[2.0, 2.0]] * 3


EMB = np.linspace(-1, 1, 30).reshape(10, 3).tolist()
LIN = {"1": ([[0.3, -0.2, 0.5]], [0.1]), "2": ([[-0.4, 0.6, 0.2]], [-0.3])}
IDX = {"1": [[0, 1, 2], [3, 4, 0], [2, 2, 4]], "2": [[5, 6, 7], [8, 9, 5], [7, 7, 9]]}
TARGET = [[1.0, -1.0, 0.5], [0.0, 2.0, -0.5], [1.5, 0.5, -1.0]]


def test_parameter_server_with_two_trainers_equals_one_process_training():
    """The server owns an embedding; each trainer a linear layer and its own rows of the
    embedding (so the order in which the trainers' steps interleave does not matter)."""
    out = _run("""
    EMB, LIN, IDX, TARGET = %r, %r, %r, %r
    if RANK == 0:
        emb = ember.nn.Embedding(10, 3, dtype=ember.float64)
        with ember.no_grad():
            emb.weight.copy_(ember.tensor(EMB, dtype=ember.float64))

    def param_rrefs():
        return [rpc.RRef(p) for p in emb.parameters()]

    def server_forward(indices):
        return emb(indices)

    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK > 0:
        lin = ember.nn.Linear(3, 1, dtype=ember.float64)
        w, b = LIN[str(RANK)]
        with ember.no_grad():
            lin.weight.copy_(ember.tensor(w, dtype=ember.float64))
            lin.bias.copy_(ember.tensor(b, dtype=ember.float64))
        params = rpc.rpc_sync("worker0", param_rrefs) + [rpc.RRef(p) for p in lin.parameters()]
        opt = DistributedOptimizer(ember.optim.SGD, params, lr=0.1, momentum=0.9)
        for idx, target in zip(IDX[str(RANK)], TARGET):
            with dist_autograd.context() as cid:
                e = rpc.rpc_sync("worker0", server_forward, args=(ember.tensor(idx),))
                pred = lin(e).squeeze(-1)
                loss = ((pred - ember.tensor(target, dtype=ember.float64)) ** 2).mean()
                dist_autograd.backward(cid, [loss])
                opt.step(cid)
        report([lin.weight.tolist(), lin.bias.tolist(), lin.weight.grad is None])
    rpc.shutdown()
    if RANK == 0:
        report([emb.weight.tolist(), emb.weight.grad is None])
    """ % (EMB, LIN, IDX, TARGET), world_size=3)
    emb = torch.nn.Embedding(10, 3, dtype=torch.float64)
    with torch.no_grad():
        emb.weight.copy_(torch.tensor(EMB, dtype=torch.float64))
    for rank in (1, 2):              # one trainer after the other, in one process
        lin = torch.nn.Linear(3, 1, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.tensor(LIN[str(rank)][0], dtype=torch.float64))
            lin.bias.copy_(torch.tensor(LIN[str(rank)][1], dtype=torch.float64))
        opt = torch.optim.SGD([emb.weight, *lin.parameters()], lr=0.1, momentum=0.9)
        for idx, target in zip(IDX[str(rank)], TARGET):
            opt.zero_grad()
            pred = lin(emb(torch.tensor(idx))).squeeze(-1)
            ((pred - torch.tensor(target, dtype=torch.float64)) ** 2).mean().backward()
            opt.step()
        np.testing.assert_allclose(out[rank][0][0], lin.weight.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(out[rank][0][1], lin.bias.detach().numpy(), rtol=1e-12)
        assert out[rank][0][2] is True                  # gradients stayed in the context
    np.testing.assert_allclose(out[0][0][0], emb.weight.detach().numpy(), rtol=1e-12)
    assert out[0][0][1] is True


def test_profiler_records_rpc_events_and_the_callees_ops_like_torch():
    out = _run("""
    from ember.autograd import profiler

    def udf(x):
        return x * 2 + 1

    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 0:
        x = ember.ones(2)
        with profiler.profile() as prof:
            a = rpc.rpc_sync("worker1", ember.add, args=(x, 1))
            b = rpc.rpc_async("worker1", udf, args=(x,)).wait()
            c = rpc.remote("worker1", ember.mul, args=(x, 3)).to_here()
        report([a.tolist(), b.tolist(), c.tolist()])
        report([[e.name, getattr(e, "node_id", 0), e.cpu_parent.name if e.cpu_parent else None,
                 e.end_us >= e.start_us] for e in prof.function_events])
        report(rpc.rpc_sync("worker1", ember.add, args=(x, 1)).tolist())   # not profiled
        with ember.profiler.profile() as prof:
            rpc.rpc_sync("worker1", ember.add, args=(x, 1))
        report([e.name for e in prof.events()])
    rpc.shutdown()
    """)[0]
    assert out[0] == [[2.0, 2.0], [3.0, 3.0], [3.0, 3.0]]
    events = {name: (node, parent, ok) for name, node, parent, ok in out[1]}
    assert all(ok for _, _, ok in events.values())
    sync = "rpc_sync#aten::add(worker0 -> worker1)"
    assert events[sync] == (0, None, True)
    assert events[f"{sync}#remote_op: aten::add"] == (1, None, True)
    udf = "rpc_async#udf(worker0 -> worker1)"
    assert events[udf] == (0, None, True)
    assert events[f"{udf}#remote_op: aten::mul"] == (1, None, True)
    assert events[f"{udf}#remote_op: aten::add"] == (1, None, True)
    assert events["rpc_remote#aten::mul(worker0 -> worker1)"] == (0, None, True)
    assert events["to_here#(worker0)->(worker1)"] == (0, None, True)
    assert out[2] == [2.0, 2.0]
    assert out[3] == [sync, f"{sync}#remote_op: aten::add"]


def test_nested_calls_through_three_workers_and_retained_graph_accumulate():
    out = _run("""
    def via_worker2(x, w):           # runs on worker1 inside the caller's context
        return ember.sin(rpc.rpc_sync("worker2", ember.mul, args=(x, w))) * w

    rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
    if RANK == 1:
        with dist_autograd.context() as cid:
            report([cid >> 48, cid & 0xFFFF])
    if RANK == 0:
        x = ember.tensor([0.5, -1.0, 2.0], dtype=ember.float64, requires_grad=True)
        w = ember.tensor([1.5, 0.25, -0.75], dtype=ember.float64, requires_grad=True)
        with dist_autograd.context() as cid:
            loss = rpc.rpc_sync("worker1", via_worker2, args=(x, w)).sum()
            dist_autograd.backward(cid, [loss], retain_graph=True)
            first = dist_autograd.get_gradients(cid)
            once = {"x": first[x].tolist(), "w": first[w].tolist()}
            dist_autograd.backward(cid, [loss])
            grads = dist_autograd.get_gradients(cid)
            report([once, grads[x].tolist(), grads[w].tolist(), x.grad is None])
    rpc.shutdown()
    """, world_size=3)
    assert out[1] == [[1, 0]]
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([1.5, 0.25, -0.75], dtype=torch.float64, requires_grad=True)
    (torch.sin(x * w) * w).sum().backward()
    once, gx, gw, no_grad = out[0][0]
    np.testing.assert_allclose(once["x"], x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(once["w"], w.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gx, 2 * x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw, 2 * w.grad.numpy(), rtol=1e-12)
    assert no_grad is True
