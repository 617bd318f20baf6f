"""Features announced in PyTorch's 1.4-1.11 release posts (the seed documents), run the way
the posts and docs show them, values against torch (or NumPy where torch cannot run it)."""
import io

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _fork_builtins(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            f = lib.jit.fork(lib.mm, x, x)
            g = lib.jit.fork(lib.sum, x, dim=0)
            return lib.jit.wait(f) + lib.jit.wait(g)
    return lib.jit.script(M())


def test_jit_fork_of_a_builtin_op():
    """1.6 fork/join: ``fork(torch.mm, x, x)`` in a scripted module (a builtin, not a
    scripted function) runs, saves and prints as torch's ``__forked_function`` closures."""
    x = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    m, tm = _fork_builtins(ember), _fork_builtins(torch)
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())
    assert m.code == tm.code
    buf = io.BytesIO()
    ember.jit.save(m, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    np.testing.assert_allclose(loaded(ember.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())


def _bf16(lib, a):
    return lib.tensor(a).to(lib.bfloat16)


_AUTOCAST_FP32_CASES = {
    # torch lists these among its CPU autocast float32 ops; ember writes them as composites
    "cross_entropy": lambda F, L, x, t, y: F.cross_entropy(x, y),
    "cross_entropy_probs": lambda F, L, x, t, y: F.cross_entropy(x, t),
    "mse_loss": lambda F, L, x, t, y: F.mse_loss(x, t),
    "l1_loss": lambda F, L, x, t, y: F.l1_loss(x, t),
    "smooth_l1_loss": lambda F, L, x, t, y: F.smooth_l1_loss(x, t),
    "kl_div": lambda F, L, x, t, y: F.kl_div(x, t, reduction="batchmean"),
    "bce_with_logits": lambda F, L, x, t, y: F.binary_cross_entropy_with_logits(x, t),
    "bce": lambda F, L, x, t, y: F.binary_cross_entropy(t, t.round()),
    "multi_margin": lambda F, L, x, t, y: F.multi_margin_loss(x, y),
    "poisson_nll": lambda F, L, x, t, y: F.poisson_nll_loss(x, t),
    "triplet": lambda F, L, x, t, y: F.triplet_margin_loss(x, t, x * 2),
    "margin_ranking": lambda F, L, x, t, y: F.margin_ranking_loss(x, t, L.ones(2, 3)),
    "avg_pool3d": lambda F, L, x, t, y: F.avg_pool3d(x.reshape(1, 1, 1, 2, 3), 1),
    "adaptive_avg_pool3d": lambda F, L, x, t, y: F.adaptive_avg_pool3d(x.reshape(1, 1, 1, 2, 3), 1),
    "max_pool3d": lambda F, L, x, t, y: F.max_pool3d(x.reshape(1, 1, 1, 2, 3), 1),
    "reflect_pad1d": lambda F, L, x, t, y: F.pad(x[None], (1, 1), mode="reflect"),
    "replicate_pad1d": lambda F, L, x, t, y: F.pad(x[None], (1, 1), mode="replicate"),
    "view_as_complex": lambda F, L, x, t, y: L.view_as_real(L.view_as_complex(x[:, :2].contiguous())),
}


@pytest.mark.parametrize("case", sorted(_AUTOCAST_FP32_CASES))
def test_cpu_autocast_runs_torchs_fp32_list_in_float32(case):
    """1.6 AMP: under CPU autocast (bf16) torch computes losses, 3-D pools and reflection /
    replication pads in float32 from the bf16 inputs: same dtype and value."""
    rng = np.random.default_rng(0)
    x, t = rng.standard_normal((2, 3)), rng.random((2, 3))
    got = []
    for lib in (ember, torch):
        fn = _AUTOCAST_FP32_CASES[case]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            r = fn(lib.nn.functional, lib, _bf16(lib, x), _bf16(lib, t), lib.tensor([0, 2]))
        got.append((str(r.dtype), r.detach().float().numpy()))
    assert got[0][0] == got[1][0]
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-5, atol=1e-6)


def test_autocast_keeps_constant_pad_and_3d_reflect_in_bf16():
    x = np.arange(8.0).reshape(1, 1, 2, 2, 2)
    for lib in (ember, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            assert lib.nn.functional.pad(_bf16(lib, x), (1,) * 6, mode="reflect").dtype == \
                lib.bfloat16
            assert lib.nn.functional.pad(_bf16(lib, x), (1, 1)).dtype == lib.bfloat16


@pytest.mark.parametrize("autocast", [False, True])
@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
def test_half_adaptive_avg_pool_and_interpolate_round_once(dt, autocast):
    """bf16/fp16 adaptive average pooling and bilinear/bicubic resizing compute in float32
    and round once, as torch (ember's averaging weights were rounded to the half dtype, and
    under autocast its matmul was lowered)."""
    rng = np.random.default_rng(1)
    x4 = rng.standard_normal((2, 3, 7, 7))
    outs = []
    for lib in (ember, torch):
        F = lib.nn.functional
        x = lib.tensor(x4).to(getattr(lib, dt))
        with lib.autocast("cpu", dtype=lib.bfloat16, enabled=autocast):
            rs = [F.adaptive_avg_pool2d(x, 3), F.adaptive_avg_pool1d(x[0], 3),
                  F.adaptive_avg_pool2d(x, 1), F.interpolate(x, scale_factor=2, mode="bilinear")]
        outs.append([(str(r.dtype), r.float().numpy()) for r in rs])
    for (de, e), (dtq, t) in zip(*outs):
        assert de == dtq
        np.testing.assert_allclose(e, t, rtol=0, atol=1e-2 if dt == "bfloat16" else 1e-3)
        assert np.mean(e != t) < 0.02        # at most a rare 1-ulp tie


def test_sparse_coo_bmm_with_a_dense_batch():
    """1.9 use_deterministic_algorithms example: ``torch.bmm(sparse, dense)`` on 3-D COO
    tensors (was NotImplementedError), deterministic, and torch's bmm_sparse errors."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 4, 5)) * (rng.random((3, 4, 5)) < 0.4)
    b = rng.standard_normal((3, 5, 2))
    ember.use_deterministic_algorithms(True)
    try:
        e = ember.bmm(ember.tensor(a).to_sparse(), ember.tensor(b))
        assert ember.bmm(ember.tensor(a).to_sparse(), ember.tensor(b)).eq(e).all().item()
    finally:
        ember.use_deterministic_algorithms(False)
    t = torch.bmm(torch.tensor(a).to_sparse(), torch.tensor(b))
    assert e.layout == ember.strided and str(e.dtype) == str(t.dtype)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
    for bad in ((3, 4, 2), (2, 5, 2), (5, 2)):
        msgs = []
        for lib in (ember, torch):
            with pytest.raises(RuntimeError) as info:
                lib.bmm(lib.tensor(a).to_sparse(), lib.zeros(bad, dtype=lib.float64))
            msgs.append(str(info.value))
        assert msgs[0] == msgs[1]


def _step_trace(lib, tmp_path, sched):
    import json
    model, x = lib.nn.Linear(3, 3), lib.ones(2, 3)
    seen = []

    def handler(p):
        path = tmp_path / f"{lib.__name__}_{len(seen)}.json"
        p.export_chrome_trace(str(path))
        names = [e["name"] for e in json.load(open(path))["traceEvents"]
                 if "Step" in e.get("name", "")]
        steps = [(e.key, e.count) for e in p.key_averages() if "Step" in e.key]
        linear = [e.count for e in p.key_averages() if e.key == "aten::linear"]
        seen.append((names, steps, linear))
    with lib.profiler.profile(activities=[lib.profiler.ProfilerActivity.CPU],
                              schedule=lib.profiler.schedule(**sched),
                              on_trace_ready=handler) as p:
        for _ in range(4):
            model(x)
            p.step()
    return seen


@pytest.mark.parametrize("sched", [dict(wait=1, warmup=1, active=2),
                                   dict(wait=0, warmup=0, active=3),
                                   dict(wait=0, warmup=1, active=2, repeat=1)])
def test_profiler_schedule_records_profiler_steps(sched, tmp_path):
    """1.9 torch.profiler with a schedule: each recorded step is a ``ProfilerStep#n`` range
    in the trace (``ProfilerStep*`` in key_averages), as the trace viewer expects."""
    assert _step_trace(ember, tmp_path, sched) == _step_trace(torch, tmp_path, sched)


def _fused_quantized(lib):
    nn = lib.nn
    aq = lib.ao.quantization

    class E(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.dq = aq.QuantStub(), aq.DeQuantStub()
            self.conv, self.relu = nn.Conv2d(3, 4, 3), nn.ReLU()
            self.fc, self.r2, self.fc2 = nn.Linear(4, 2), nn.ReLU(), nn.Linear(2, 2)

        def forward(self, x):
            x = self.relu(self.conv(self.q(x))).mean((2, 3))
            return self.dq(self.fc2(self.r2(self.fc(x))))
    lib.manual_seed(0)
    e = E().eval()
    e.qconfig = aq.get_default_qconfig("x86")
    fused = aq.fuse_modules(e, [["conv", "relu"], ["fc", "r2"]])
    prepared = aq.prepare(fused)
    prepared(lib.ones(2, 3, 6, 6))
    return fused, aq.convert(prepared)


def test_numeric_suite_compare_weights_of_a_fused_model():
    """1.6 quantization numeric suite: compare_weights pairs a fused float model's
    ``conv.0.weight`` / ``fc.0.weight`` with the quantized ``conv.weight`` / packed fc."""
    import torch.ao.ns._numeric_suite as tns
    import ember.ao.ns._numeric_suite as ens
    keys = []
    for lib, ns in ((ember, ens), (torch, tns)):
        fused, quantized = _fused_quantized(lib)
        wc = ns.compare_weights(fused.state_dict(), quantized.state_dict())
        keys.append(sorted((k, tuple(v["float"].shape)) for k, v in wc.items()))
    assert keys[0] == keys[1] and len(keys[0]) == 3


def test_graph_node_kind_is_callable_and_lite_buffer():
    """1.6/1.9 mobile: ``[n.kind() for n in m.graph.nodes()]`` as torch's Node API, and
    ``_save_to_buffer_for_lite_interpreter`` bytes load in the lite interpreter."""
    from ember.jit.mobile import _load_for_lite_interpreter
    m = ember.jit.script(ember.nn.Linear(2, 2))
    tm = torch.jit.script(torch.nn.Linear(2, 2))
    kinds = [n.kind() for n in m.graph.nodes()]
    assert kinds == [n.kind() for n in tm.graph.nodes()]
    assert all(type(n.kind()) is str and n.kind == n.kind() for n in m.graph.nodes())
    data = m._save_to_buffer_for_lite_interpreter()
    assert isinstance(data, bytes)
    x = ember.ones(3, 2)
    np.testing.assert_allclose(_load_for_lite_interpreter(io.BytesIO(data))(x).detach().numpy(),
                               m(x).detach().numpy())


_ZERO = """
lib = LIB
nn = lib.nn
from_np = lambda a: lib.from_numpy(np.ascontiguousarray(a))
rng = np.random.default_rng(0)
m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3), nn.Linear(3, 3, bias=False))
with lib.no_grad():
    for p in m.parameters():
        p.copy_(from_np(rng.standard_normal(tuple(p.shape))))
ddp = lib.nn.parallel.DistributedDataParallel(m)
import importlib
ZeRO = importlib.import_module(lib.__name__ + ".distributed.optim").ZeroRedundancyOptimizer
zo = ZeRO(ddp.parameters(), optimizer_class=lib.optim.Adam, lr=0.01, betas=(0.8, 0.9))
local = [list(p.shape) for g in zo.optim.param_groups for p in g["params"]]
for i in range(3):
    zo.zero_grad()
    ddp(lib.ones(3, 4) * (RANK + 1 + i)).pow(2).sum().backward()
    zo.step()
zo.consolidate_state_dict(to=0)
summary = None
if RANK == 0:
    sd = zo.state_dict()
    summary = [sorted(sd["state"]), sd["param_groups"][0]["params"],
               sorted(sd["state"][0]), sd["state"][0]["exp_avg"].numpy().tolist()]
    zo.load_state_dict(sd)
else:
    try:
        zo.state_dict()
    except RuntimeError as e:
        summary = str(e)
zo.add_param_group({"params": [nn.Parameter(lib.ones(2))], "lr": 0.5})
Join = importlib.import_module(lib.__name__ + ".distributed.algorithms.join").Join
m2 = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
with lib.no_grad():
    for p in m2.parameters():
        p.copy_(from_np(rng.standard_normal(tuple(p.shape))))
ddp2 = lib.nn.parallel.DistributedDataParallel(m2)
zo2 = ZeRO(ddp2.parameters(), optimizer_class=lib.optim.SGD, lr=0.01)
with Join([ddp2, zo2]):                 # uneven inputs: rank 1 runs 3 more steps
    for i in range(2 + 3 * RANK):
        zo2.zero_grad()
        ddp2(lib.ones(2, 3) * (0.2 * i + 0.5)).pow(2).sum().backward()
        zo2.step()
report([local, [p.detach().numpy().tolist() for p in m.parameters()], summary,
        [len(g["params"]) for g in zo.optim.param_groups],
        [p.detach().numpy().tolist() for p in m2.parameters()]])
dist.destroy_process_group()
"""


def test_zero_redundancy_optimizer_matches_torch():
    """ZeroRedundancyOptimizer (1.8, listed with DDP): torch's greedy shards, identical
    parameters after DDP steps, a consolidated global state dict on rank 0 (global indices)
    and torch's error elsewhere, add_param_group, Join([ddp, zero]) with uneven inputs."""
    pytest.importorskip("mpi4py")
    from tests.distributed.workers import PROLOGUE, run_workers
    torch_prologue = PROLOGUE.replace("import ember\nimport ember.distributed as dist",
                                      "import torch\nimport torch.distributed as dist")
    ours = run_workers(_ZERO.replace("LIB", "ember"), 2)
    theirs = run_workers(_ZERO.replace("LIB", "torch"), 2, prologue=torch_prologue)
    for rank in range(2):
        (local, params, summary, groups, joined), = ours[rank]
        (t_local, t_params, t_summary, t_groups, t_joined), = theirs[rank]
        assert local == t_local and groups == t_groups
        for a, b in zip(params + joined, t_params + t_joined):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        if rank == 0:
            assert summary[:3] == t_summary[:3]
            np.testing.assert_allclose(summary[3], t_summary[3], rtol=1e-5, atol=1e-7)
        else:
            assert summary == t_summary


@pytest.mark.parametrize("fname", ["zeros", "ones", "empty", "rand", "randn"])
def test_named_tensor_factories_refused_as_torch(fname):
    """Named tensors (1.3-1.4 prototype) are gone from torch: ``names=`` is a TypeError
    (ember silently dropped it and returned an unnamed tensor)."""
    for lib in (ember, torch):
        with pytest.raises(TypeError, match="names"):
            getattr(lib, fname)(2, 3, names=("N", "C"))


_SYNC_BN = """
import importlib
lib = importlib.import_module("LIB")
m = lib.nn.SyncBatchNorm.convert_sync_batchnorm(
    lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3)))
try:
    lib.nn.parallel.DistributedDataParallel(m)
    report("built")
except ValueError as e:
    report(str(e))
dist.destroy_process_group()
"""


def test_ddp_refuses_sync_batchnorm_on_cpu_as_torch():
    """DDP of a CPU module holding SyncBatchNorm: torch raises (its sync runs on GPUs
    only); ember built it and normalised each rank on its own statistics."""
    pytest.importorskip("mpi4py")
    from tests.distributed.workers import PROLOGUE, run_workers
    torch_prologue = PROLOGUE.replace("import ember\nimport ember.distributed as dist",
                                      "import torch\nimport torch.distributed as dist")
    ours = run_workers(_SYNC_BN.replace("LIB", "ember"), 1)
    theirs = run_workers(_SYNC_BN.replace("LIB", "torch"), 1, prologue=torch_prologue)
    assert ours == theirs == [["SyncBatchNorm layers only work with GPU modules"]]


@pytest.mark.parametrize("engine", ["qnnpack", "x86"])
def test_dynamic_quantized_linear_per_engine(engine):
    """1.6 mobile: dynamic (per-tensor and per-channel) quantized Linear under QNNPACK, whose
    kernel ignores reduce_range (ember quantized the activations to 7 bits as fbgemm)."""
    rng = np.random.default_rng(3)
    w, b, x = rng.standard_normal((4, 6)), rng.standard_normal(4), rng.standard_normal((3, 6))
    outs = []
    for lib in (ember, torch):
        aq = lib.ao.quantization
        old = lib.backends.quantized.engine
        lib.backends.quantized.engine = engine
        try:
            for qconfig in (aq.default_dynamic_qconfig, aq.per_channel_dynamic_qconfig):
                lin = lib.nn.Linear(6, 4)
                with lib.no_grad():
                    lin.weight.copy_(lib.tensor(w, dtype=lib.float32))
                    lin.bias.copy_(lib.tensor(b, dtype=lib.float32))
                q = aq.quantize_dynamic(lib.nn.Sequential(lin), {lib.nn.Linear: qconfig})
                outs.append(q(lib.tensor(x, dtype=lib.float32)).numpy())
        finally:
            lib.backends.quantized.engine = old
    for e, t in zip(outs[:2], outs[2:]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_local_response_norm_under_autocast_and_half_renorm():
    """AMP: torch's local_response_norm over 4-D input pools with avg_pool3d, float32 under
    CPU autocast (a float32 result); half renorm takes norm and factor in float32 and
    rounds the factor to the half dtype before scaling."""
    rng = np.random.default_rng(4)
    x4 = rng.standard_normal((2, 3, 4, 4))
    x2 = rng.standard_normal((6, 5)) * 2
    got = []
    for lib in (ember, torch):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            lrn = lib.nn.functional.local_response_norm(_bf16(lib, x4), 2)
        rs = [lrn] + [lib.tensor(x2).to(dt).renorm(2, 0, 1)
                      for dt in (lib.bfloat16, lib.float16)]
        got.append([(str(r.dtype), r.float().numpy()) for r in rs])
    for (de, e), (dt, t) in zip(*got):
        assert de == dt
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-7)


def _trace_layout(lib, tmp_path):
    import json
    prof = lib.profiler
    model = lib.nn.Linear(4, 4)
    out = tmp_path / lib.__name__
    with prof.profile(activities=[prof.ProfilerActivity.CPU], record_shapes=True,
                      schedule=prof.schedule(wait=0, warmup=0, active=2, repeat=1),
                      on_trace_ready=prof.tensorboard_trace_handler(str(out), "w")) as p:
        for _ in range(2):
            model(lib.ones(2, 4)).sum().backward()
            p.step()
    path, = out.iterdir()
    trace = json.load(open(path))
    meta = sorted(e["name"] for e in trace["traceEvents"] if e.get("ph") == "M")
    spans = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "Trace"]
    return (sorted(trace), trace["schemaVersion"], trace["record_shapes"],
            trace["traceName"] == str(path), sorted(set(meta)), spans)


def test_tensorboard_trace_has_torchs_metadata(tmp_path):
    """1.9 profiler + TensorBoard plugin: the trace file carries torch's top-level
    metadata (schemaVersion, deviceProperties, baseTimeNanoseconds, traceName...), process
    and thread name events and the profiler's span (ember wrote only traceEvents)."""
    assert _trace_layout(ember, tmp_path) == _trace_layout(torch, tmp_path)


class _LiteOps(ember.nn.Module):
    def forward(self, x):
        a = x.sum(0) + x.mean(1)
        b = x.unsqueeze(0).squeeze(0).roll(1, 0)
        c = x.masked_fill(x > 0, 0.5)
        d = ember.nn.functional.gelu(ember.stack([x, x.where(x > 0, x * 2)]).sum(0))
        e = ember.nn.functional.pad(x, [1, 1]).sum(1) + x.std(0) + x.var() + x.norm()
        f = x.view(x.size(0), -1).permute(1, 0).contiguous().flip(0).repeat(1, 2)[0]
        g = ember.cat(x.chunk(3, 1) + x.split(1, 1), 1).sum(0).narrow(0, 0, 3) + x.new_zeros(3)
        h = (x > 0).float().sum(0) + x.reshape(9).view(3, 3).expand(3, 3).sum(1)
        h = h + x.max(1)[0] + x.topk(3)[0][1] + x.sort(1)[0][0]
        return a.sum() + b.sum(1) + c.squeeze(1).sum(0) + d.sum(0) + e + f.narrow(0, 0, 3) + \
            g + h


def test_lite_bytecode_loads_in_torch():
    """1.9 mobile interpreter: ember's lite bytecode for ``sum(x, 0)``, ``squeeze(dim)``,
    ``roll(1, 0)`` and ``masked_fill(mask, 0.5)`` names torch's overloads and passes int
    lists where torch's schemas take them (torch's runtime rejected the file's calls);
    gelu, stack, where, pad, std, var, norm, view/reshape/permute/expand/repeat/flip with
    varargs (run-time) sizes, chunk, split, contiguous, .float(), max(dim), topk and sort
    (a tuple built from the operator's outputs) export (they had no lite operator); the
    file also runs in ember's lite runtime."""
    from torch.jit.mobile import _load_for_lite_interpreter
    x = np.random.default_rng(5).standard_normal((3, 3)).astype(np.float32)
    m = ember.jit.script(_LiteOps())
    data = m._save_to_buffer_for_lite_interpreter()
    got = _load_for_lite_interpreter(io.BytesIO(data))(torch.from_numpy(x))
    t = torch.from_numpy(x)
    want = t.sum(0) + t.mean(1)
    want = want.sum() + t.roll(1, 0).sum(1) + t.masked_fill(t > 0, 0.5).sum(0)
    want = want + torch.nn.functional.gelu(t + t.where(t > 0, t * 2)).sum(0)
    want = want + torch.nn.functional.pad(t, [1, 1]).sum(1) + t.std(0) + t.var() + t.norm()
    want = want + t.t().flip(0).repeat(1, 2)[0][:3] + torch.cat(t.chunk(3, 1) + t.split(1, 1),
                                                               1).sum(0)[:3]
    want = want + (t > 0).float().sum(0) + t.sum(1)
    want = want + t.max(1)[0] + t.topk(3)[0][1] + t.sort(1)[0][0]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    np.testing.assert_allclose(m(ember.from_numpy(x)).detach().numpy(), want.numpy(), rtol=1e-5)
    import ember_lite
    np.testing.assert_allclose(ember_lite.load(io.BytesIO(data))(x), want.numpy(), rtol=1e-5)


class _TorchLiteOps(torch.nn.Module):
    def forward(self, x):
        a = x.exp().log() + x.abs().sqrt() + x.pow(2) + torch.nn.functional.gelu(x)
        b = x.flip(0).roll(1, 0).cumsum(0) + x.masked_fill(x > 0, 0.5)
        c = torch.stack([x, x]).sum(0) + x.unsqueeze(0).squeeze(0) + x.narrow(0, 0, 3)
        d = x.max(1)[0] + x.sort(1)[0][:, 0] + x.topk(2)[0][:, 1] + x.argmax(1).float()
        e = torch.cat(x.chunk(3) + x.split(1), 0).sum(0) + x.repeat(1, 2)[:, :3].sum(1)
        f = torch.nn.functional.pad(x, [1, 1]).sum(1) + x.index_select(0, torch.tensor([2, 0, 1]))[0]
        g = torch.einsum("ij,jk->ik", x, x).log_softmax(1).sum(1) + x.std(0) + x.var() + x.norm()
        return a + b + c + (d + e + f + g).unsqueeze(1) + x.new_zeros(3, 3) + x.expand(3, 3)


def test_lite_runtime_runs_torchs_common_ops():
    """1.9 mobile interpreter: a lite file torch writes with common pointwise, shape,
    reduction and sorting ops runs in ember's lite runtime (they were missing kernels:
    'Following ops cannot be found')."""
    import ember_lite
    x = np.random.default_rng(6).standard_normal((3, 3)).astype(np.float32)
    m = torch.jit.script(_TorchLiteOps())
    data = m._save_to_buffer_for_lite_interpreter()
    got = ember_lite.load(io.BytesIO(data))(x)
    np.testing.assert_allclose(np.asarray(got), m(torch.from_numpy(x)).numpy(), rtol=1e-5,
                               atol=1e-5)
