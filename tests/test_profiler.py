"""ember.profiler / ember.autograd.profiler: events per op, ranges, averages, tables,
schedules (firing steps vs torch's), chrome traces; no mode left behind."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import ember
from ember._state import state
from ember.profiler import profile, ProfilerActivity, record_function, schedule, \
    ProfilerAction

torch = pytest.importorskip("torch")


def _work():
    x = ember.randn(4, 4)
    with record_function("blk"):
        y = ember.mm(x, x).relu()
    return y + 1


def test_events_names_shapes_memory_nesting():
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True) as p:
        _work()
    assert state.modes == ()
    names = [e.name for e in p.events()]
    assert "blk" in names and "aten::mm" in names and "aten::relu" in names
    assert "aten::add" in names
    blk = next(e for e in p.events() if e.name == "blk")
    mm = next(e for e in p.events() if e.name == "aten::mm")
    assert mm.cpu_parent is blk and mm in blk.cpu_children
    assert mm.input_shapes == [[4, 4], [4, 4]]
    assert mm.cpu_memory_usage == 64
    assert blk.cpu_time_total >= mm.cpu_time_total
    assert blk.self_cpu_time_total == pytest.approx(
        blk.cpu_time_total - sum(c.cpu_time_total for c in blk.cpu_children))
    assert all(e.end_us >= e.start_us for e in p.events())


def test_key_averages_and_table_columns_like_torch():
    with profile(record_shapes=True, profile_memory=True) as p:
        for _ in range(3):
            _work()
    ka = p.key_averages()
    mm = next(e for e in ka if e.key == "aten::mm")
    assert mm.count == 3
    t = ka.table(sort_by="cpu_time_total", row_limit=2)
    x = torch.randn(2, 2)
    with torch.profiler.profile(profile_memory=True, record_shapes=True) as tp:
        torch.mm(x, x)
    tt = tp.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    assert t.splitlines()[1].split() == tt.splitlines()[1].split()
    assert t.strip().splitlines()[-1].startswith("Self CPU time total:")
    assert len(t.strip().splitlines()) == 2 + 3 + 1 + 1     # sep/head/sep, rows, sep, total
    tg = p.key_averages(group_by_input_shape=True).table(row_limit=50)
    assert "Input Shapes" in tg and "[[4, 4], [4, 4]]" in tg
    ttg = tp.key_averages(group_by_input_shape=True).table()
    assert ttg.splitlines()[1].split() == tg.splitlines()[1].split()
    with pytest.raises(AttributeError):
        ka.table(sort_by="nonsense")


def test_autograd_profiler_and_backward_ops():
    w = ember.randn(3, 3, requires_grad=True)
    with ember.autograd.profiler.profile(record_shapes=True, with_stack=True) as p:
        (w @ w).sum().backward()
    names = {e.name for e in p.function_events}
    assert "aten::matmul" in names and "aten::sum" in names
    assert any(e.stack for e in p.function_events)
    assert "Self CPU" in str(p)


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2),
                                dict(wait=1, warmup=1, active=2, repeat=1),
                                dict(wait=0, warmup=0, active=1, repeat=2, skip_first=3),
                                dict(wait=2, warmup=0, active=3, repeat=0, skip_first=1)])
def test_schedule_matches_torch(kw):
    se, st = schedule(**kw), torch.profiler.schedule(**kw)
    assert [se(i).name for i in range(20)] == [st(i).name for i in range(20)]
    fired_e, fired_t, n_e = [], [], []

    def he(p):
        fired_e.append(p.step_num)
        n_e.append(sum(e.name == "aten::add" for e in p.events()))

    with profile(schedule=se, on_trace_ready=he) as p:
        for _ in range(9):
            ember.ones(2) + 1
            p.step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=st,
                                on_trace_ready=lambda p: fired_t.append(p.step_num)) as p:
        for _ in range(9):
            torch.ones(2) + 1
            p.step()
    assert fired_e == fired_t
    # full active spans hold one add per step; the span cut by exit may hold fewer
    assert all(n == kw["active"] for n in n_e[:-1]) and 0 < n_e[-1] <= kw["active"]
    assert state.modes == ()


def test_no_schedule_fires_once_and_chrome_trace(tmp_path):
    calls = []
    with profile(on_trace_ready=calls.append) as p:
        _work()
    assert calls == [p]
    path = tmp_path / "trace.json"
    p.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    evs = data["traceEvents"]
    # besides the op ranges, torch's trace names the process and threads ("M" events)
    assert evs and all(e["ph"] == "X" and "ts" in e and "dur" in e
                       for e in evs if e["ph"] != "M")
    assert {"blk", "aten::mm"} <= {e["name"] for e in evs}


def test_tensorboard_handler(tmp_path):
    with profile(schedule=schedule(wait=0, warmup=0, active=1, repeat=1),
                 on_trace_ready=ember.profiler.tensorboard_trace_handler(
                     str(tmp_path), worker_name="w")) as p:
        for _ in range(2):
            ember.ones(1) * 2
            p.step()
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("w.") and files[0].endswith(".pt.trace.json")


def test_record_function_without_profiler_and_flops():
    with record_function("nothing"):
        ember.ones(1) + 1
    assert state.modes == ()

    @record_function("deco")
    def f(a):
        return ember.mm(a, a)
    with profile(with_flops=True) as p:
        f(ember.ones(2, 3).t() @ ember.ones(2, 3))
    mm = next(e for e in p.events() if e.name == "aten::mm")
    assert mm.flops == 2 * 3 * 3 * 3 and mm.cpu_parent.name == "deco"
    assert "Total MFLOPs" in p.key_averages().table()
    assert ProfilerAction.RECORD_AND_SAVE.value == 3


# ------------------------------------------------------------------ memory, stacks, traces

def test_memory_allocated_and_freed_known_workloads():
    with profile(profile_memory=True) as p:
        a = ember.ones(1000, 1000)
        b = ember.ones(10, 20)
        with record_function("free_a"):
            c = ember.mm(b.t(), b)                  # 20x20 f32 = 1600 bytes
            del a                                   # released inside the range
        d = c.view(400)                             # a view: no new memory
    ones = [e for e in p.events() if e.name == "aten::ones"]
    assert ones[0].cpu_memory_usage == 4_000_000 == ones[0].self_cpu_memory_usage
    assert ones[1].cpu_memory_usage == 800
    mm = next(e for e in p.events() if e.name == "aten::mm")
    assert mm.self_cpu_memory_usage == mm.cpu_memory_usage == 1600
    rng = next(e for e in p.events() if e.name == "free_a")
    assert rng.self_cpu_memory_usage == -4_000_000
    assert rng.cpu_memory_usage == -4_000_000 + 1600 + sum(
        c.cpu_memory_usage for c in rng.cpu_children if c.name != "aten::mm")
    view = next(e for e in p.events() if e.name == "aten::view")
    assert view.cpu_memory_usage == 0
    ka = p.key_averages()
    assert next(e for e in ka if e.key == "aten::ones").cpu_memory_usage == 4_000_800
    del b, c, d


def test_frees_outside_ops_and_after_stop():
    a = None
    with profile(profile_memory=True) as p:
        a = ember.ones(100)
        a = None                                    # freed outside any op: a [memory] row
    mem = [e for e in p.events() if e.name == "[memory]"]
    assert [e.self_cpu_memory_usage for e in mem] == [-400]
    with profile(profile_memory=True) as p2:
        keep = ember.ones(50)
    del keep                                        # after stop: not charged
    assert sum(e.self_cpu_memory_usage for e in p2.events()) == 200
    assert state.modes == ()


def test_memory_table_like_torch_release_example():
    nn = ember.nn

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.b1 = nn.BatchNorm2d(c)
            self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.b2 = nn.BatchNorm2d(c)

        def forward(self, x):
            return (self.b2(self.c2(self.b1(self.c1(x)).relu())) + x).relu()

    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), Block(8), Block(8),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    inputs = ember.randn(2, 3, 16, 16)
    with ember.autograd.profiler.profile(profile_memory=True, record_shapes=True) as prof:
        model(inputs)
    t = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    tm = torch.nn.Conv2d(3, 8, 3)
    with torch.autograd.profiler.profile(profile_memory=True, record_shapes=True) as tp:
        tm(torch.randn(1, 3, 8, 8))
    tt = tp.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
    assert t.splitlines()[1].split() == tt.splitlines()[1].split()
    assert "CPU Mem" in t and "Self CPU Mem" in t
    rows = t.strip().splitlines()[3:-2]
    assert len(rows) == 10
    ka = sorted(prof.key_averages(), key=lambda e: e.self_cpu_memory_usage, reverse=True)
    assert rows[0].split()[0] == ka[0].key
    conv = next(e for e in prof.key_averages() if e.key == "aten::convolution")
    # 1 conv 2x8x16x16 + 4 block convs 2x8x16x16, float32
    assert conv.cpu_memory_usage == 5 * 2 * 8 * 16 * 16 * 4


def test_chrome_trace_nested_ranges_and_memory_counters(tmp_path):
    with profile(profile_memory=True, with_stack=True) as p:
        with record_function("outer"):
            with record_function("inner"):
                x = ember.ones(256, 256)
            y = x + 1
        del x, y
    path = tmp_path / "t.json"
    p.export_chrome_trace(str(path))
    with open(path) as f:
        data = json.load(f)
    evs = data["traceEvents"]
    spans = {e["name"]: e for e in evs if e["ph"] == "X"}
    o, i, ones = spans["outer"], spans["inner"], spans["aten::ones"]
    assert o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"]
    assert i["ts"] <= ones["ts"] and ones["ts"] + ones["dur"] <= i["ts"] + i["dur"]
    counters = [e for e in evs if e["ph"] == "C"]
    totals = [e["args"]["Total Allocated"] for e in counters]
    assert totals[:2] == [262144, 524288] and totals[-1] == 0
    assert ones["args"]["CPU Mem"] == 262144
    assert ones["args"]["Source"].startswith(__file__ + ":")


def test_with_stack_source_and_export_stacks(tmp_path):
    def user_fn(x):
        return ember.mm(x, x)                       # the line the mm event points at

    import inspect
    line = inspect.getsourcelines(user_fn)[1] + 1
    with profile(with_stack=True) as p:
        user_fn(ember.randn(64, 64))
    mm = next(e for e in p.events() if e.name == "aten::mm")
    assert mm.source == f"{__file__}:{line}"
    assert all("ember" not in fr.split("/")[-1] for fr in mm.stack[:1])
    path = tmp_path / "stacks.txt"
    p.export_stacks(str(path), metric="self_cpu_time_total")
    lines = path.read_text().splitlines()
    assert lines
    mm_lines = [ln for ln in lines if ln.rsplit(" ", 1)[0].endswith(";aten::mm")]
    assert len(mm_lines) == 1
    stack, value = mm_lines[0].rsplit(" ", 1)
    assert int(value) > 0 and "user_fn" in stack.split(";")[-2]
    assert all(len(ln.rsplit(" ", 1)) == 2 and ln.rsplit(" ", 1)[1].isdigit() for ln in lines)


def test_composite_op_parts_are_nested_events_like_torch():
    """Note [composite parts]: inner -> tensordot -> permute/reshape/mm, as in torch."""
    import torch
    a, b = np.ones((4, 6), np.float32), np.ones((5, 6), np.float32)
    with ember.profiler.profile() as p:
        ember.inner(ember.tensor(a), ember.tensor(b))
    with torch.profiler.profile() as tp:
        ta, tb = torch.tensor(a), torch.tensor(b)
        torch.inner(ta, tb)
    keep = {"aten::inner", "aten::tensordot", "aten::permute", "aten::mm"}
    names = [e.name for e in p.events() if e.name in keep]
    tnames = [e.name for e in tp.events() if e.name in keep]
    assert names == tnames == ["aten::inner", "aten::tensordot", "aten::permute",
                               "aten::permute", "aten::mm"]
    avg = {e.key: e for e in p.key_averages()}
    # the composite's total time covers its parts; its self time excludes them
    assert avg["aten::inner"].cpu_time_total >= avg["aten::mm"].cpu_time_total
    assert avg["aten::inner"].self_cpu_time_total < avg["aten::inner"].cpu_time_total


_SOURCE_SCRIPT = """\
import ember
from ember.autograd.profiler import profile


def user_fn(x):
    return ember.mm(x, x)


with profile(with_stack=True) as p:
    user_fn(ember.zeros(4, 4))
    y = ember.ones(2) + 1
for e in p.events():
    print(e.name, e.source)
"""


@pytest.mark.parametrize("how", ["file", "dash_c"])
def test_with_stack_source_skips_ember_frames_in_any_layout(tmp_path, how):
    """Source attribution must not depend on where the user's files lie (here under a folder
    named ``ember``, as in a clone of this repository), on bytecode caches, or on running
    code from a string: it skips ember's own frames and its generated op fronts only."""
    import os
    import subprocess
    import sys
    folder = tmp_path / "ember" / "project"
    folder.mkdir(parents=True)
    script = folder / "script.py"
    script.write_text(_SOURCE_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__)))
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=root)
    cmd = [sys.executable, str(script)] if how == "file" else \
        [sys.executable, "-c", _SOURCE_SCRIPT]
    out = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    where = str(script) if how == "file" else "<string>"
    got = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert got["aten::mm"] == f"{where}:6"
    assert got["aten::zeros"] == f"{where}:10"
    assert got["aten::ones"] == f"{where}:11"
    assert got["aten::add"] == f"{where}:11"
