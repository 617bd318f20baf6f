"""DistributedDataParallel, Join and the comm hooks in real processes (2 ranks, some 3).

Each body runs once with ember and, where torch is the oracle, once with torch's gloo DDP
(the same body: ``lib`` is ``ember`` or ``torch``); parameters, gradients and bucket
layouts are compared, and trajectories against single-process training on the whole
batch (float64).
"""
import numpy as np
import pytest

from tests.distributed.workers import PROLOGUE, run_workers

torch = pytest.importorskip("torch")

COMMON = """
import importlib
lib = LIB
DDP = lib.nn.parallel.DistributedDataParallel
hooks = lambda name: importlib.import_module(
    lib.__name__ + ".distributed.algorithms.ddp_comm_hooks" + (name and "." + name))
from_np = lambda a: lib.from_numpy(np.ascontiguousarray(a))

def mlp(seed, sizes=(4, 8, 3), dtype=np.float64):
    rng = np.random.default_rng(seed)
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = lib.nn.Linear(a, b).to(lib.float64 if dtype == np.float64 else lib.float32)
        with lib.no_grad():
            lin.weight.copy_(from_np(rng.standard_normal((b, a)).astype(dtype)))
            lin.bias.copy_(from_np(rng.standard_normal(b).astype(dtype)))
        layers += [lin, lib.nn.Tanh()] if i < len(sizes) - 2 else [lin]
    return lib.nn.Sequential(*layers)

def batch(seed, n, d_in=4, d_out=3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return from_np(rng.standard_normal((n, d_in)).astype(dtype)), \\
        from_np(rng.standard_normal((n, d_out)).astype(dtype))

def params(m):
    return [p.detach().numpy().tolist() for p in m.parameters()]

def grads(m):
    return [None if p.grad is None else p.grad.numpy().tolist() for p in m.parameters()]

def digest(m):
    # a short fingerprint of each gradient: sum, sum of squares, first entries
    out = []
    for p in m.parameters():
        g = None if p.grad is None else p.grad.detach().numpy().ravel()
        out.append(None if g is None else [float(g.sum()), float((g * g).sum())] +
                   g[:3].tolist())
    return out

def shard(t):
    n = t.shape[0] // WORLD
    return t[RANK * n:(RANK + 1) * n]
"""

EMBER = PROLOGUE + "LIB = ember\n" + COMMON
TORCH = PROLOGUE.replace("import ember\nimport ember.distributed as dist",
                         "import torch\nimport torch.distributed as dist") + \
    "LIB = torch\n" + COMMON


def both(body, world=2, **kw):
    """(ember's reports, torch's reports) of ``body``."""
    return (run_workers(body, world, prologue=EMBER, **kw),
            run_workers(body, world, prologue=TORCH, **kw))


def close(a, b, tol=1e-10):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            close(x, y, tol)
    elif a is None or isinstance(a, (str, bool)):
        assert a == b
    else:
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


TRAJECTORY = """
X, Y = batch(100, 8)
for opt_name in ("SGD", "Adam"):
    model = mlp(0 if RANK == 0 else 5)        # rank 1's weights are replaced by rank 0's
    ddp = DDP(model, bucket_cap_mb=BUCKET, gradient_as_bucket_view=VIEW)
    opt = getattr(lib.optim, opt_name)(ddp.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step, 8)
        opt.zero_grad()
        lib.nn.functional.mse_loss(ddp(shard(x)), shard(y)).backward()
        opt.step()
    report([opt_name, params(ddp), list(ddp.state_dict())])
    ref = mlp(0)
    opt = getattr(lib.optim, opt_name)(ref.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step, 8)
        opt.zero_grad()
        lib.nn.functional.mse_loss(ref(x), y).backward()
        opt.step()
    report(params(ref))
"""


@pytest.mark.parametrize("bucket,view", [(25, False), (0.0001, True)])
def test_trajectory_equals_single_process_and_torch(bucket, view):
    body = TRAJECTORY.replace("BUCKET", str(bucket)).replace("VIEW", str(view))
    ours, theirs = both(body)
    for rank in range(2):
        for k in (0, 2):                        # SGD, Adam
            name, trained, keys = ours[rank][k]
            close(trained, ours[rank][k + 1])   # DDP == one process on the whole batch
            close(trained, theirs[rank][k][1])  # == torch's DDP
            assert keys == theirs[rank][k][2] == ["module.0.weight", "module.0.bias",
                                                  "module.2.weight", "module.2.bias"]


BUCKETS = """
import itertools
def layout(**kw):
    model = mlp(0, sizes=(100, 100, 10, 100, 10, 10))
    ddp = DDP(model, **kw)
    names = {id(p): n for n, p in model.named_parameters()}
    seen = []
    def hook(state, bucket):
        seen.append([bucket.index(), bucket.is_last(), bucket.buffer().numel(),
                     [names[id(p)] for p in bucket.parameters()],
                     [list(g.shape) for g in bucket.gradients()]])
        return hooks("default_hooks").allreduce_hook(state, bucket)
    ddp.register_comm_hook(None, hook)
    out = []
    for it in range(3):
        seen.clear()
        x, y = batch(it, 4, 100, 10)
        ddp(x).sum().backward()
        out.append(list(seen))
    return out, digest(ddp)
for kw in ({}, {"bucket_cap_mb": 0.04}, {"bucket_cap_mb": 0.04, "find_unused_parameters": True},
           {"bucket_cap_mb": 0.01, "static_graph": True}):
    report(layout(**kw))
"""


def _rebuilt_ok(buckets, cap):
    """Rebuilt buckets: later layers first, each closed once it reached its cap (the first
    at min(1 MiB, cap)), gradients shaped like their parameters."""
    layers = [int(name.split(".")[0]) for b in buckets for name in b[3]]
    assert layers == sorted(layers, reverse=True) and len(layers) == 10
    for b in buckets[:-1]:
        assert b[2] * 8 >= min(cap, 1 << 20)
        assert b[2] * 8 - min(b[4][-1][0] * (b[4][-1] + [1])[1] * 8, b[2] * 8) < \
            min(cap, 1 << 20)                   # it was still open before its last tensor
    assert [b[0] for b in buckets] == list(range(len(buckets)))
    assert [b[1] for b in buckets] == [False] * (len(buckets) - 1) + [True]


def test_bucket_layout_and_comm_hook_arguments_match_torch():
    ours, theirs = both(BUCKETS)
    mb = 1 << 20
    caps = [25 * mb, 0.04 * mb, 0.04 * mb, 0.01 * mb]
    for k, (a, b) in enumerate(zip(ours[0], theirs[0])):
        close(a[1], b[1])                       # accumulated gradients
        if k == 2:                              # find_unused: fixed layout, as torch's
            assert a[0] == b[0]
            continue
        rebuild_after = 2 if k == 3 else 1      # static graph: after the second iteration
        assert a[0][:rebuild_after] == b[0][:rebuild_after]   # one bucket, registration order
        _rebuilt_ok(a[0][rebuild_after], caps[k])
        assert a[0][-1] == a[0][rebuild_after]
    assert len(ours[0][1][0][1]) == 2           # the small cap gives several buckets
    assert len(ours[0][3][0][2]) == 3
