"""ember.distributed.pipelining: microbatch helpers against torch in one process; stages
and schedules on real 2- and 4-rank runs against a single-process full-batch reference."""
import numpy as np
import pytest

import ember
from ember.distributed.pipelining import Pipe, SplitPoint, pipe_split, pipeline
from ember.distributed.pipelining.microbatch import (TensorChunkSpec, _Replicate,
                                                     merge_chunks,
                                                     split_args_kwargs_into_chunks,
                                                     sum_reducer)

# The model every run uses: blocks of Linear+Tanh with a pipe_split() after each but the
# last, then a head. ``make`` builds it and a batch of 8 deterministically.
MODEL = '''
import ember
from ember.distributed.pipelining import pipe_split


class Net(ember.nn.Module):
    def __init__(self, n_blocks):
        super().__init__()
        self.blocks = ember.nn.ModuleList(
            [ember.nn.Sequential(ember.nn.Linear(5, 5), ember.nn.Tanh())
             for _ in range(n_blocks)])
        self.head = ember.nn.Linear(5, 3)

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i < len(self.blocks) - 1:
                pipe_split()
        return self.head(x)


def make(n_blocks, dtype):
    ember.manual_seed(0)
    dtype = getattr(ember, dtype)
    model = Net(n_blocks).to(dtype)
    x, y = ember.randn(8, 5, dtype=dtype), ember.randn(8, 3, dtype=dtype)
    return model, x, y


def manual_stage_module(model, stage, n_stages):
    """Stage ``stage`` of ``model`` cut by hand: block ``stage`` (and the head at the end)."""
    parts = [model.blocks[stage]] + ([model.head] if stage == n_stages - 1 else [])
    return ember.nn.Sequential(*parts)
'''
model_ns = {}
exec(MODEL, model_ns)
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=1e-4, atol=1e-6)}


def reference(n_blocks, dtype, n_microbatches=4):
    """One full-batch forward; the per-microbatch losses, the output, and the gradients
    of the microbatch losses' mean (the full batch's mean loss when they are equal)."""
    model, x, y = model_ns["make"](n_blocks, dtype)
    out = model(x)
    losses = [ember.nn.functional.mse_loss(o, t)
              for o, t in zip(ember.tensor_split(out, n_microbatches),
                              ember.tensor_split(y, n_microbatches))]
    (sum(losses) / n_microbatches).backward()
    mb_losses = [l.item() for l in losses]
    grads = {n: p.grad.numpy() for n, p in model.named_parameters()}
    return mb_losses, out.detach().numpy(), grads


# ------------------------------------------------------------- microbatch helpers
@pytest.fixture(scope="module")
def tmb():
    """torch's microbatch module (the oracle)."""
    global torch
    torch = pytest.importorskip("torch")
    from torch.distributed.pipelining import microbatch
    return microbatch


def _to_torch(v):
    if isinstance(v, (tuple, list)):
        return type(v)(_to_torch(i) for i in v)
    if isinstance(v, dict):
        return {k: _to_torch(i) for k, i in v.items()}
    return torch.from_numpy(v.numpy().copy()) if isinstance(v, ember.Tensor) else v


def _spec_to_torch(s, tmb):
    if isinstance(s, (tuple, list)):
        return type(s)(_spec_to_torch(i, tmb) for i in s)
    if isinstance(s, dict):
        return {k: _spec_to_torch(i, tmb) for k, i in s.items()}
    if isinstance(s, TensorChunkSpec):
        return tmb.TensorChunkSpec(s.split_dim)
    if s is _Replicate:
        return tmb._Replicate
    return tmb.sum_reducer if s is sum_reducer else s


def _assert_same(mine, theirs):
    if isinstance(theirs, (tuple, list)):
        assert type(mine) is type(theirs) and len(mine) == len(theirs)
        for a, b in zip(mine, theirs):
            _assert_same(a, b)
    elif isinstance(theirs, dict):
        assert mine.keys() == theirs.keys()
        for k in theirs:
            _assert_same(mine[k], theirs[k])
    elif isinstance(theirs, torch.Tensor):
        np.testing.assert_array_equal(mine.numpy(), theirs.numpy())
    else:
        assert mine == theirs


torch = None
X = ember.arange(24.0).reshape(6, 4)
SPLIT_CASES = [
    ((X,), None, 3, None, None),
    ((X,), None, 4, None, None),                       # uneven: 2, 2, 1, 1
    ((X[:3],), None, 4, None, None),                   # fewer rows than chunks
    ((X, 5, "a"), {"k": X, "z": None}, 2, None, None),
    ((X,), {"k": X}, 2, (TensorChunkSpec(1),), {"k": TensorChunkSpec(0)}),
    ((X,), None, 2, (_Replicate,), None),
    (([X, X[:, :2]],), None, 3, None, None),
    (({"a": X},), None, 2, None, None),
    ((X, X[:5]), None, 3, None, None),
    ((), None, 2, None, None),
]


@pytest.mark.parametrize("case", range(len(SPLIT_CASES)))
def test_split_args_kwargs_into_chunks_matches_torch(case, tmb):
    args, kwargs, chunks, aspec, kspec = SPLIT_CASES[case]
    mine = split_args_kwargs_into_chunks(args, kwargs, chunks, aspec, kspec)
    theirs = tmb.split_args_kwargs_into_chunks(_to_torch(args), _to_torch(kwargs), chunks,
                                               _spec_to_torch(aspec, tmb),
                                               _spec_to_torch(kspec, tmb))
    _assert_same(mine[0], theirs[0])
    _assert_same(mine[1], theirs[1])


def test_split_errors_match_torch():
    with pytest.raises(IndexError, match="no dimensions"):
        split_args_kwargs_into_chunks((ember.tensor(1.0),), None, 2)
    with pytest.raises(AssertionError):
        split_args_kwargs_into_chunks((X,), None, 2, (TensorChunkSpec(0),) * 2)


MERGE_CASES = [
    ([X[:3], X[3:]], None),
    ([X[:, :1], X[:, 1:]], TensorChunkSpec(1)),
    ([{"a": X[:2]}, {"a": X[2:]}], None),
    ([{"a": X[:2]}, {"a": X[2:]}], {"a": TensorChunkSpec(0)}),
    ([(X[:2], X[:, :1]), (X[2:], X[:, 1:2])], (TensorChunkSpec(0), TensorChunkSpec(1))),
    ([ember.tensor(1.0), ember.tensor(2.5)], sum_reducer),
]


@pytest.mark.parametrize("case", range(len(MERGE_CASES)))
def test_merge_chunks_matches_torch(case, tmb):
    chunks, spec = MERGE_CASES[case]
    want = tmb.merge_chunks(_to_torch(chunks), _spec_to_torch(spec, tmb))
    _assert_same(merge_chunks(chunks, spec), want)


def test_merge_errors():
    with pytest.raises(IndexError):
        merge_chunks([], None)
    with pytest.raises(TypeError):
        merge_chunks([1, 2], None)
    with pytest.raises(RuntimeError):
        merge_chunks([ember.tensor(1.0), ember.tensor(2.0)], None)


def test_chunk_spec_constructors():
    assert [s.split_dim for s in TensorChunkSpec.from_tuple((0, 1))] == [0, 1]
    assert TensorChunkSpec.from_dict({"a": 1})["a"].split_dim == 1
    assert str(TensorChunkSpec(1)) == "TensorChunkSpec(1)"


# ------------------------------------------------------------- tracing frontend
def test_pipeline_cuts_at_pipe_split_and_keeps_qualified_names():
    model, x, _ = model_ns["make"](3, "float64")
    pipe = pipeline(model, (x[:2],))
    assert isinstance(pipe, Pipe) and pipe.num_stages == 3
    names = [[n for n, _ in pipe.get_stage_module(i).named_parameters()] for i in range(3)]
    assert names == [["blocks.0.0.weight", "blocks.0.0.bias"],
                     ["blocks.1.0.weight", "blocks.1.0.bias"],
                     ["blocks.2.0.weight", "blocks.2.0.bias", "head.weight", "head.bias"]]
    np.testing.assert_allclose(pipe(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(ValueError, match="Invalid stage index 3!"):
        pipe.get_stage_module(3)
    with pytest.raises(ValueError, match="Invalid stage index -1!"):
        pipe.build_stage(-1, "cpu")


def test_pipeline_split_spec_and_pass_through_values():
    class Skip(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = ember.nn.ModuleList([ember.nn.Linear(4, 4) for _ in range(4)])

        def forward(self, x):
            h = x
            for layer in self.layers:
                h = ember.relu(layer(h))
            return h + x.sum(1, keepdim=True)   # x is used by the last stage only

    ember.manual_seed(0)
    model, x = Skip().double(), ember.randn(3, 4, dtype=ember.float64)
    pipe = pipeline(model, (x,), split_spec={"layers.1": SplitPoint.END,
                                             "layers.3": SplitPoint.BEGINNING})
    assert pipe.num_stages == 3
    names = [[n for n, _ in pipe.get_stage_module(i).named_parameters()] for i in range(3)]
    assert names == [["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"],
                     ["layers.2.weight", "layers.2.bias"],
                     ["layers.3.weight", "layers.3.bias"]]
    np.testing.assert_allclose(pipe(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(AttributeError):
        pipeline(model, (x,), split_spec={"nope": SplitPoint.END})


def test_pipe_split_is_a_no_op_when_run():
    assert pipe_split() is None


# ------------------------------------------------------------- real runs
SCHEDULES = """
import ember.nn.functional as F
from ember.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                          ScheduleInterleaved1F1B, ScheduleLoopedBFS,
                                          build_stage, pipeline)
CLASSES = {"GPipe": ScheduleGPipe, "1F1B": Schedule1F1B, "LoopedBFS": ScheduleLoopedBFS,
           "Interleaved1F1B": ScheduleInterleaved1F1B}


def run(kind, sched, dtype, n_stages, steps=1, loss=True, n_mb=4):
    model, x, y = make(n_stages, dtype)
    if kind == "manual":
        mine = range(RANK, n_stages, WORLD)
        stages = [PipelineStage(manual_stage_module(model, s, n_stages), s, n_stages, "cpu")
                  for s in mine]
    else:
        pipe = pipeline(model, (x[:2],))
        assert pipe.num_stages == n_stages
        stages = [pipe.build_stage(s, "cpu") for s in range(RANK, n_stages, WORLD)]
    single = len(stages) == 1
    schedule = CLASSES[sched](stages[0] if single else stages, n_mb,
                              loss_fn=F.mse_loss if loss else None)
    losses, out = [], None
    has_first = any(s.is_first for s in stages)
    has_last = any(s.is_last for s in stages)
    for _ in range(steps):
        args = (x,) if has_first else ()
        kw = dict(target=y, losses=losses) if has_last and loss else {}
        out = schedule.step(*args, **kw)
    grads = {n: p.grad.tolist() for n, p in model.named_parameters() if p.grad is not None}
    report({"case": [kind, sched, dtype, steps, loss, n_mb], "losses": [l.item() for l in losses],
            "out": None if out is None else out.tolist(),
            "out_requires_grad": None if out is None else out.requires_grad,
            "grads": grads})
"""


def _run(body, world):
    from distributed.workers import run_workers
    return run_workers(MODEL + SCHEDULES + body, world, timeout=150)


def _check(results, n_stages, world):
    """Every case: the union of the ranks' gradients is the full-batch gradient; the last
    stage's losses and output match."""
    refs = {}
    by_case = {}
    for rank_reports in results:
        for r in rank_reports:
            by_case.setdefault(tuple(r["case"]), []).append(r)
    assert by_case, "no reports"
    for case, reports in by_case.items():
        kind, sched, dtype, steps, loss, n_mb = case
        assert len(reports) == world, case
        if (dtype, n_mb) not in refs:
            refs[dtype, n_mb] = reference(n_stages, dtype, n_mb)
        mb_losses, out, grads = refs[dtype, n_mb]
        tol = TOL[dtype]
        got = {}
        for r in reports:
            assert not set(got) & set(r["grads"]), "a parameter has gradients on two ranks"
            got.update(r["grads"])
        if loss:
            assert sorted(got) == sorted(grads), case
            scale = 1 + (steps - 1) / n_mb  # torch divides the accumulated .grad each step
            for name, g in got.items():
                np.testing.assert_allclose(g, grads[name] * scale, err_msg=f"{case} {name}",
                                           **tol)
        else:
            assert got == {}, case
        outs = [r for r in reports if r["out"] is not None]
        assert len(outs) == 1, case
        np.testing.assert_allclose(outs[0]["out"], out, err_msg=str(case), **tol)
        assert outs[0]["out_requires_grad"] is (not loss)
        if loss:
            np.testing.assert_allclose(outs[0]["losses"], mb_losses, err_msg=str(case), **tol)


def test_two_ranks_gpipe_1f1b_manual_and_traced():
    body = """
for kind in ("manual", "traced"):
    for sched in ("GPipe", "1F1B"):
        for dtype in ("float64", "float32"):
            run(kind, sched, dtype, 2)
run("manual", "GPipe", "float64", 2, steps=2)
run("traced", "1F1B", "float64", 2, loss=False)
"""
    _check(_run(body, 2), 2, 2)


def test_four_ranks_gpipe_1f1b_manual_and_traced():
    body = """
for kind in ("manual", "traced"):
    for sched in ("GPipe", "1F1B"):
        run(kind, sched, "float64", 4)
run("manual", "1F1B", "float32", 4)
"""
    _check(_run(body, 4), 4, 4)


def test_two_pipelines_in_subgroups():
    """Ranks {0, 1} and {2, 3} each run a 2-stage pipeline in their own group (the
    pipeline half of PP x DP); the last stage returns a dict (any output is fine there)."""
    body = """
class DictHead(ember.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return {"y": self.inner(x)}


groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]
group, stage_index = groups[RANK // 2], RANK % 2
model, x, y = make(2, "float64")
sub = manual_stage_module(model, stage_index, 2)
stage = PipelineStage(sub if stage_index == 0 else DictHead(sub), stage_index, 2, "cpu",
                      group=group)
schedule = Schedule1F1B(stage, 4, loss_fn=lambda out, t: F.mse_loss(out["y"], t))
losses = []
out = schedule.step(x) if stage_index == 0 else schedule.step(target=y, losses=losses)
report({"case": ["manual", "1F1B", "float64", 1, True, 4],
        "losses": [l.item() for l in losses],
        "out": None if out is None else out["y"].tolist(),
        "out_requires_grad": None if out is None else out["y"].requires_grad,
        "grads": {n: p.grad.tolist() for n, p in model.named_parameters()
                  if p.grad is not None}})
"""
    results = _run(body, 4)
    _check(results[:2], 2, 2)
    _check(results[2:], 2, 2)


def test_two_ranks_two_stages_each_looped_bfs_and_interleaved_1f1b():
    body = """
for kind in ("manual", "traced"):
    for sched in ("LoopedBFS", "Interleaved1F1B"):
        run(kind, sched, "float64", 4)
run("manual", "Interleaved1F1B", "float64", 4, n_mb=3)
run("traced", "LoopedBFS", "float64", 4, n_mb=1)
run("manual", "Interleaved1F1B", "float64", 4, loss=False)
"""
    _check(_run(body, 2), 4, 2)


def test_errors_like_torch():
    body = """
def error(fn):
    try:
        fn()
    except Exception as e:
        return [type(e).__name__, str(e)]
    return None

model, x, y = make(2, "float64")
mod = manual_stage_module(model, RANK, 2)
report(error(lambda: PipelineStage(mod, 2, 2, "cpu")))
stage = PipelineStage(mod, RANK, 2, "cpu")
report(error(lambda: Schedule1F1B(stage, 1, loss_fn=F.mse_loss)))
gpipe = ScheduleGPipe(stage, 4, loss_fn=F.mse_loss)
report(error(lambda: gpipe.step(x[:3]) if RANK == 0 else gpipe.step(target=y[:3])))
report(error(lambda: gpipe.step() if RANK == 1 else None))
# a last stage whose input_args disagree with what arrives (forward only: nobody waits)
wrong = (ember.zeros(2, 7, dtype=ember.float64),) if RANK == 1 else None
checked = ScheduleGPipe(PipelineStage(mod, RANK, 2, "cpu", input_args=wrong), 2)
report(error(lambda: checked.step(x) if RANK == 0 else checked.step()))
# a first stage whose output_args disagree with what it computes (raised before sending)
wrong = (ember.zeros(2, 5, dtype=ember.float32),) if RANK == 0 else None
checked = ScheduleGPipe(PipelineStage(mod, RANK, 2, "cpu", output_args=wrong), 2)
report(error(lambda: checked.step(x) if RANK == 0 else None))
# right example args change nothing
right = (x[:2],) if RANK == 0 else (ember.zeros(2, 5, dtype=ember.float64),)
checked = ScheduleGPipe(PipelineStage(mod, RANK, 2, "cpu", input_args=right), 2)
report(error(lambda: checked.step(x) if RANK == 0 else checked.step()))
"""
    r0, r1 = _run(body, 2)
    assert r0[0] == r1[0] == ["ValueError", "Stage index 2 is out of range of 2"]
    msg = "Number of microbatches (1) must be greater than or equal to the number of stages (2)."
    assert r0[1] == r1[1] == ["ValueError", msg]
    assert r0[2] == ["ValueError", "Expecting 4 arg_mbs but got 3"]
    assert r1[2][0] == "AssertionError"
    assert r0[3] is None
    assert r1[3] == ["PipeliningMetadataError",
                     "Stage 1: loss_fn and target required for last stage"]
    assert r0[4] is None
    assert r1[4][0] == "PipeliningMetadataError" and "input_args" in r1[4][1]
    assert r0[5][0] == "PipeliningMetadataError" and "output_args" in r0[5][1]
    assert r1[5] is None
    assert r0[6] is None and r1[6] is None


# ------------------------------------------------------------- the same script in torch
TORCH_SCRIPT = """
import numpy as np
import torch
import torch.nn.functional as F
from torch.distributed.pipelining import (PipelineStage, Schedule1F1B, ScheduleGPipe,
                                          pipe_split, pipeline)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l0, self.l1 = torch.nn.Linear(5, 6), torch.nn.Linear(6, 3)

    def forward(self, x):
        h = torch.tanh(self.l0(x))
        pipe_split()
        return self.l1(h)


def make():
    rng = np.random.default_rng(0)
    net = Net().double()
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.standard_normal(tuple(p.shape))))
    return net, torch.from_numpy(rng.standard_normal((8, 5))), \\
        torch.from_numpy(rng.standard_normal((8, 3)))


for kind, cls in (("manual", ScheduleGPipe), ("manual", Schedule1F1B),
                  ("traced", Schedule1F1B)):
    net, x, y = make()
    if kind == "manual":
        sub = torch.nn.Sequential(net.l0, torch.nn.Tanh()) if RANK == 0 else net.l1
        stage = PipelineStage(sub, RANK, 2, torch.device("cpu"))
    else:
        stage = pipeline(net, (x[:2],)).build_stage(RANK, torch.device("cpu"))
    schedule = cls(stage, 4, loss_fn=F.mse_loss)
    losses = []
    for _ in range(2):                      # gradients accumulate over two steps
        out = schedule.step(x) if RANK == 0 else schedule.step(target=y, losses=losses)
    report({"case": [kind, cls.__name__], "losses": [l.item() for l in losses],
            "out": None if out is None else out.tolist(),
            "grads": {n: p.grad.tolist() for n, p in net.named_parameters()
                      if p.grad is not None}})
dist.destroy_process_group()
"""

TORCH_PROLOGUE = """
import json, os
import torch.distributed as dist
RANK = int(os.environ["RANK"])

def report(obj):
    print("REPORT " + json.dumps(obj), flush=True)

"""


def test_same_script_as_torch():
    """A torch pipelining script run by torch (gloo) and by ember (torch aliased to
    ember): the same losses, outputs and accumulated gradients."""
    pytest.importorskip("torch")
    from distributed.workers import run_workers
    theirs = run_workers(TORCH_SCRIPT, 2, timeout=150, prologue=TORCH_PROLOGUE)
    mine = run_workers(TORCH_SCRIPT, 2, timeout=150,
                       prologue="import ember.run\nember.run.install()\n" + TORCH_PROLOGUE)
    for rank in range(2):
        assert len(mine[rank]) == len(theirs[rank]) == 3
        for a, b in zip(mine[rank], theirs[rank]):
            assert a["case"] == b["case"] and sorted(a["grads"]) == sorted(b["grads"])
            for name in b["grads"]:
                np.testing.assert_allclose(a["grads"][name], b["grads"][name], rtol=1e-10,
                                           atol=1e-12, err_msg=f"{a['case']} {name}")
            np.testing.assert_allclose(a["losses"], b["losses"], rtol=1e-12)
            assert (a["out"] is None) == (b["out"] is None)
            if b["out"] is not None:
                np.testing.assert_allclose(a["out"], b["out"], rtol=1e-12, atol=1e-14)


def test_traced_stage_passes_several_tensors_and_keyword_inputs():
    """Stage 0 hands the next stage its own inputs too (``x`` and the keyword ``scale``
    are used by the last stage): three tensors travel, two of which need no gradient."""
    body = """
import copy
import ember.nn as nn
from ember.distributed.pipelining.microbatch import TensorChunkSpec


class Skip(nn.Module):
    def __init__(self):
        super().__init__()
        self.l0, self.l1 = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x, scale=None):
        h = ember.tanh(self.l0(x))
        pipe_split()
        return self.l1(h) * scale + x.sum(1, keepdim=True)


ember.manual_seed(0)
model = Skip().double()
x, scale, y = (ember.randn(6, 4, dtype=ember.float64), ember.rand(6, 1, dtype=ember.float64),
               ember.randn(6, 2, dtype=ember.float64))
ref = copy.deepcopy(model)
ref_out = ref(x, scale=scale)
F.mse_loss(ref_out, y).backward()
pipe = pipeline(model, (x[:2],), {"scale": scale[:2]})
stage = build_stage(pipe.get_stage_module(RANK), RANK, pipe.info(), "cpu")
schedule = Schedule1F1B(stage, 3, loss_fn=F.mse_loss,
                        kwargs_chunk_spec={"scale": TensorChunkSpec(0)})
out = schedule.step(x, scale=scale) if RANK == 0 else schedule.step(target=y)
mine = dict(model.named_parameters())
report({"grad_err": max((mine[n].grad - p.grad).abs().max().item()
                        for n, p in ref.named_parameters() if mine[n].grad is not None),
        "names": sorted(n for n, p in mine.items() if p.grad is not None),
        "out_err": None if out is None else (out - ref_out).abs().max().item()})
"""
    (r0,), (r1,) = _run(body, 2)
    assert r0["names"] == ["l0.bias", "l0.weight"] and r1["names"] == ["l1.bias", "l1.weight"]
    assert r0["grad_err"] < 1e-12 and r1["grad_err"] < 1e-12
    assert r0["out_err"] is None and r1["out_err"] < 1e-12


def test_one_rank_holds_every_stage():
    """A group of one: both stages on rank 0 hand tensors over in memory."""
    body = """
for sched in ("LoopedBFS", "Interleaved1F1B"):
    run("traced", sched, "float64", 2)
"""
    _check(_run(body, 1), 2, 1)


def test_pipeline_and_data_parallel():
    """4 ranks = 2 pipelines x 2 data-parallel replicas, stages wrapped in DDP: the
    replicas all-reduce once per step, and the gradients equal those of the mean of the
    replicas' full-batch losses (two steps, .grad zeroed between)."""
    body = """
import copy
from ember.nn.parallel import DistributedDataParallel as DDP

pp = [dist.new_group([0, 1]), dist.new_group([2, 3])][RANK // 2]
dp = [dist.new_group([0, 2]), dist.new_group([1, 3])][RANK % 2]
stage_index, replica = RANK % 2, RANK // 2
model, _, _ = make(2, "float64")
ref = copy.deepcopy(model)
xs, ys = ember.randn(2, 8, 5, dtype=ember.float64), ember.randn(2, 8, 3, dtype=ember.float64)
(sum(F.mse_loss(ref(xs[i]), ys[i]) for i in range(2)) / 2).backward()
ref_grads = dict(ref.named_parameters())
for sched in ("GPipe", "1F1B"):
    ddp = DDP(manual_stage_module(model, stage_index, 2), process_group=dp)
    schedule = CLASSES[sched](PipelineStage(ddp, stage_index, 2, "cpu", group=pp), 4,
                              loss_fn=F.mse_loss)
    errors = []
    for _ in range(2):
        model.zero_grad()
        if stage_index == 0:
            schedule.step(xs[replica])
        else:
            schedule.step(target=ys[replica])
        errors.append(max((p.grad - ref_grads[n].grad).abs().max().item()
                          for n, p in model.named_parameters() if p.grad is not None))
    report([sched, errors])
"""
    for reports in _run(body, 4):
        assert [r[0] for r in reports] == ["GPipe", "1F1B"]
        for sched, errors in reports:
            assert max(errors) < 1e-12, (sched, errors)
