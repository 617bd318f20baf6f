"""TorchScript RPC (``rpc_async``/``rpc_sync``/``remote`` inside scripted functions,
scripted functions called over RPC) and DDP + RPC (an ``EmbeddingBag`` on a parameter
server, the dense part in DDP over two trainers, one distributed autograd backward and a
DistributedOptimizer), in real worker processes on loopback; values against eager ember,
and the trained parameters against one-process torch training (float64)."""
import textwrap

import numpy as np
import pytest

pytest.importorskip("zmq")

from tests.distributed.workers import free_port, run_workers  # noqa: E402

torch = pytest.importorskip("torch")

JIT_BODY = """
import ember.distributed.rpc as rpc
from ember import Tensor
from typing import Tuple

@ember.jit.script
def target(x: Tensor, k: int) -> Tensor:
    return ember.tanh(x) * k + 1

@ember.jit.script
def pair(x: Tensor) -> Tuple[Tensor, int]:
    return x.sum(), x.dim()

@ember.jit.script
def via_async(dst: str, x: Tensor) -> Tensor:
    fut = rpc.rpc_async(dst, target, (x, 3))
    return fut.wait() + ember.jit.wait(rpc.rpc_async(dst, target, args=(x, 2), timeout=20.0))

@ember.jit.script
def via_sync(dst: str, x: Tensor) -> Tuple[Tensor, int]:
    return rpc.rpc_sync(dst, pair, (rpc.rpc_sync(dst, target, (x, 2)),))

@ember.jit.script
def via_remote(dst: str, x: Tensor) -> Tensor:
    r = rpc.remote(dst, target, (x, 5))
    return r.to_here() + ember.add(x, x)

@ember.jit.script
def via_builtin(dst: str, x: Tensor) -> Tensor:
    return rpc.rpc_sync(dst, ember.mul, (x, x))

rpc.init_rpc(f"worker{RANK}", rank=RANK, world_size=WORLD)
if RANK == 0:
    x = ember.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=ember.float64)
    report(str(via_async.graph).count("prim::rpc_async"))
    report([via_async("worker1", x).tolist(),
            (target(x, 3) + target(x, 2)).tolist()])
    s, d = via_sync("worker1", x)
    report([s.item(), d, target(x, 2).sum().item()])
    report([via_remote("worker1", x).tolist(), (target(x, 5) + 2 * x).tolist()])
    report([via_builtin("worker1", x).tolist(), (x * x).tolist()])
    report(rpc.rpc_sync("worker1", via_async, args=("worker0", x)).tolist())   # nested
rpc.shutdown()
"""


def test_scripted_functions_call_rpc_and_run_over_rpc():
    out = run_workers(JIT_BODY, 2, init=False, timeout=60)[0]
    x = torch.tensor([[0.5, -1.0], [2.0, 0.25]], dtype=torch.float64)
    expect = lambda k: torch.tanh(x) * k + 1          # noqa: E731
    assert out[0] == 2
    np.testing.assert_allclose(out[1][0], out[1][1], rtol=1e-15)
    np.testing.assert_allclose(out[1][0], (expect(3) + expect(2)).numpy(), rtol=1e-12)
    assert out[2][1] == 2 and out[2][0] == pytest.approx(out[2][2], rel=1e-15)
    np.testing.assert_allclose(out[3][0], (expect(5) + 2 * x).numpy(), rtol=1e-12)
    np.testing.assert_allclose(out[3][0], out[3][1], rtol=1e-15)
    assert out[4][0] == out[4][1]
    np.testing.assert_allclose(out[5], out[1][0], rtol=1e-15)


def test_scripted_rpc_rejects_a_plain_python_target():
    import ember
    import ember.distributed.rpc as rpc

    def caller(x: ember.Tensor) -> ember.Tensor:
        return rpc.rpc_sync("w", 3, (x,))

    with pytest.raises(RuntimeError, match="scripted function or a builtin op"):
        ember.jit.script(caller)


EMB, DIN, DOUT, LR, STEPS = (10, 3), 3, 2, 0.1, 3
RNG = np.random.default_rng(7)
E0 = RNG.standard_normal(EMB)
W0, B0 = RNG.standard_normal((DOUT, DIN)), RNG.standard_normal(DOUT)
BATCHES = [[(RNG.integers(0, EMB[0], 6).tolist(), [0, 2, 5], RNG.standard_normal((3, DOUT)))
            for _ in range(2)] for _ in range(STEPS)]       # [step][trainer]

DDP_BODY = """
import ember.distributed.rpc as rpc
import ember.distributed.autograd as dist_autograd
from ember.distributed.optim import DistributedOptimizer
E0, W0, B0, BATCHES, LR = np.array(%r), np.array(%r), np.array(%r), %r, %r

import threading
EMBEDDING, LOCK = None, threading.Lock()

def embedding():                        # runs on the server: the RRefs' value
    global EMBEDDING
    with LOCK:
        if EMBEDDING is None:
            EMBEDDING = ember.nn.EmbeddingBag(*E0.shape, mode="sum").double()
            with ember.no_grad():
                EMBEDDING.weight.copy_(ember.from_numpy(E0))
    return EMBEDDING

def lookup(emb_rref, indices, offsets):
    return emb_rref.local_value()(indices, offsets)

def parameter_rrefs(emb_rref):
    return [rpc.RRef(p) for p in emb_rref.local_value().parameters()]

rpc.init_rpc("ps" if RANK == 2 else f"trainer{RANK}", rank=RANK, world_size=WORLD)
if RANK < 2:
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + os.environ["PG_PORT"],
                            rank=RANK, world_size=2)
    dense = ember.nn.Linear(E0.shape[1], W0.shape[0]).double()
    with ember.no_grad():
        dense.weight.copy_(ember.from_numpy(W0))
        dense.bias.copy_(ember.from_numpy(B0))
    ddp = ember.nn.parallel.DistributedDataParallel(dense)
    emb_rref = rpc.remote("ps", embedding)       # both trainers: the server's one module
    params = rpc.rpc_sync("ps", parameter_rrefs, args=(emb_rref,))
    params += [rpc.RRef(p) for p in ddp.parameters()]
    opt = DistributedOptimizer(ember.optim.SGD, params, lr=LR)
    for step in BATCHES:
        idx, offsets, y = step[RANK]
        with dist_autograd.context() as cid:
            e = rpc.rpc_sync("ps", lookup, args=(emb_rref, ember.tensor(idx),
                                                 ember.tensor(offsets)))
            loss = ((ddp(e) - ember.from_numpy(np.array(y))) ** 2).sum()
            dist_autograd.backward(cid, [loss])
            grads = dist_autograd.get_gradients(cid)
            assert dense.weight.grad is None and set(grads) == set(dense.parameters())
            opt.step(cid)
        dist.barrier()                  # both trainers stepped the shared embedding
    report([dense.weight.tolist(), dense.bias.tolist()])
    if RANK == 0:
        report(rpc.rpc_sync("ps", lookup, args=(emb_rref, ember.arange(E0.shape[0]),
                                                ember.arange(E0.shape[0]))).tolist())
    dist.destroy_process_group()
rpc.shutdown()
"""


def _reference():
    """One process: the embedding gets both trainers' gradients, the dense layer their
    average (what DDP all-reduces), plain SGD."""
    e = torch.tensor(E0, requires_grad=True)
    w, b = torch.tensor(W0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    for step in BATCHES:
        ge, gw, gb = 0, 0, 0
        for idx, offsets, y in step:
            out = torch.nn.functional.embedding_bag(torch.tensor(idx), e,
                                                    torch.tensor(offsets), mode="sum")
            loss = ((out @ w.T + b - torch.tensor(y)) ** 2).sum()
            de, dw, db = torch.autograd.grad(loss, [e, w, b])
            ge, gw, gb = ge + de, gw + dw / 2, gb + db / 2
        with torch.no_grad():
            e -= LR * ge
            w -= LR * gw
            b -= LR * gb
    return e.detach().numpy(), w.detach().numpy(), b.detach().numpy()


def test_ddp_with_a_parameter_server_embedding_equals_one_process_training():
    body = DDP_BODY % (E0.tolist(), W0.tolist(), B0.tolist(),
                       [[(i, o, y.tolist()) for i, o, y in s] for s in BATCHES], LR)
    out = run_workers(textwrap.dedent(body), 3, init=False, timeout=90,
                      env={"PG_PORT": str(free_port())})
    e, w, b = _reference()
    for rank in (0, 1):
        np.testing.assert_allclose(out[rank][0][0], w, rtol=1e-12)
        np.testing.assert_allclose(out[rank][0][1], b, rtol=1e-12)
    np.testing.assert_allclose(out[0][1], e, rtol=1e-12)
