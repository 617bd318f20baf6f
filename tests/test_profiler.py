"""ember.profiler / ember.autograd.profiler: events per op, ranges, averages, tables,
schedules (firing steps vs torch's), chrome traces; no mode left behind."""
from __future__ import annotations

import json
import os

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
    assert evs and all(e["ph"] == "X" and "ts" in e and "dur" in e for e in evs)
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
