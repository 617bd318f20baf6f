"""torch.profiler: ``profile`` with activities and a step schedule, over the op-level
profiler of ``ember.autograd.profiler`` (CPU activity only)."""
from __future__ import annotations

import gzip
import os
import socket
import time
from enum import Enum

from ember.autograd import profiler as _ap
from ember.autograd.profiler import record_function, EventList  # noqa: F401

__all__ = ["profile", "record_function", "ProfilerActivity", "ProfilerAction", "schedule",
           "tensorboard_trace_handler", "supported_activities", "DeviceType", "kineto_available"]


class ProfilerActivity(Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3


# the device kinds profiler events name (torch's numbering; ember records CPU only)
DeviceType = Enum("DeviceType", dict(
    CPU=0, CUDA=1, MKLDNN=2, OPENGL=3, OPENCL=4, IDEEP=5, HIP=6, FPGA=7, MAIA=8, XLA=9,
    Vulkan=10, Metal=11, XPU=12, MPS=13, Meta=14, HPU=15, VE=16, Lazy=17, IPU=18, MTIA=19,
    PrivateUse1=20), module=__name__)


def kineto_available():
    """True, as in torch's CPU build: ``profile`` (this module's activity-based profiler)
    works, recording CPU activity; programs that check this take that CPU path."""
    return True


class ProfilerAction(Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities():
    return {ProfilerActivity.CPU}


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """Step number -> action: skip ``skip_first`` steps, then cycles of ``wait`` idle,
    ``warmup`` and ``active`` steps (the last active one saves), ``repeat`` times (0:
    forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")
    num = wait + warmup + active

    def fn(step):
        if step < 0:
            raise AssertionError("step must be non-negative")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if repeat > 0 and step // num >= repeat:
            return ProfilerAction.NONE
        mod = step % num
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num - 1 else ProfilerAction.RECORD_AND_SAVE
    return fn


def _always_record(step):
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class profile(_ap.profile):
    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, **kwargs):
        acts = set(activities) if activities else supported_activities()
        bad = acts - supported_activities()
        if bad:
            import warnings
            warnings.warn(f"Unsupported profiler activities {sorted(a.name for a in bad)}: "
                          f"ember profiles the CPU only")
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops)
        self.activities = acts
        self.schedule = schedule if schedule is not None else _always_record
        self._user_schedule = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(0)

    def start(self):
        if self.current_action in _RECORDING:
            self._start()

    def _start(self):
        super()._start()
        self._open_step()

    def _open_step(self):
        """With a schedule, each recorded step is a range holding its ops: ``ProfilerStep*``
        in events and averages, ``ProfilerStep#<n>`` in the trace, as torch's."""
        self._step_ev = None
        if self._user_schedule and self._recording:
            self._step_ev = self._push("ProfilerStep*", [] if self.record_shapes else None,
                                       user=True)
            self._step_ev.trace_name = f"ProfilerStep#{self.step_num}"

    def _close_step(self):
        ev, self._step_ev = getattr(self, "_step_ev", None), None
        if ev is not None and self._recording:
            self._pop(ev)

    def stop(self):
        if self._recording:
            self._stop()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def export_chrome_trace(self, path):
        """The op trace plus what torch's (Kineto's) trace carries for viewers such as the
        TensorBoard plugin: schema and run metadata, process/thread names, the profiler's
        span, and each step range named ``ProfilerStep#<n>`` (events say ``ProfilerStep*``)."""
        import json
        import uuid
        super().export_chrome_trace(path)
        names = {ev.start_us: ev.trace_name for ev in self.events()
                 if getattr(ev, "trace_name", None)}
        with open(path) as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        for e in events:
            if e.get("name") == "ProfilerStep*" and e.get("ts") in names:
                e["name"] = names[e["ts"]]
        timed = [e for e in events if e.get("ph") == "X"]
        start = min((e["ts"] for e in timed), default=0.0)
        end = max((e["ts"] + e.get("dur", 0) for e in timed), default=start)
        pid = os.getpid()
        tids = sorted({e["tid"] for e in events if "tid" in e and e.get("pid") == 0})
        for e in events:
            if e.get("pid") == 0:
                e["pid"] = pid
        meta = [{"ph": "M", "name": "process_name", "ts": start, "pid": pid, "tid": 0,
                 "args": {"name": "python"}},
                {"ph": "M", "name": "process_labels", "ts": start, "pid": pid, "tid": 0,
                 "args": {"labels": "CPU"}},
                {"ph": "M", "name": "process_sort_index", "ts": start, "pid": pid, "tid": 0,
                 "args": {"sort_index": pid}}]
        for t in tids:
            meta += [{"ph": "M", "name": "thread_name", "ts": start, "pid": pid, "tid": t,
                      "args": {"name": f"thread {t} (python)"}},
                     {"ph": "M", "name": "thread_sort_index", "ts": start, "pid": pid, "tid": t,
                      "args": {"sort_index": t}}]
        meta.append({"ph": "M", "name": "process_sort_index", "ts": start, "pid": "Spans",
                     "tid": 0, "args": {"sort_index": 536870912}})
        span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans",
                "tid": "PyTorch Profiler", "ts": start, "dur": end - start,
                "args": {"Op count": 0}}
        base = (time.time_ns() - _ap._now_ns()) // 10 ** 9 * 10 ** 9
        out = {"schemaVersion": 1, "deviceProperties": [], "trace_id": uuid.uuid4().hex.upper()}
        if self.profile_memory:                 # torch writes only the options that are on
            out["profile_memory"] = 1
        if self.record_shapes:
            out["record_shapes"] = 1
        out.update({"host_name": socket.gethostname(),
                    "displayTimeUnit": trace.get("displayTimeUnit", "ms"),
                    "baseTimeNanoseconds": base, "traceName": os.fspath(path),
                    "traceEvents": meta + events + [span]})
        with open(path, "w") as f:
            json.dump(out, f)

    def step(self):
        prev = self.current_action
        self._close_step()
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        if prev in _RECORDING and (prev is ProfilerAction.RECORD_AND_SAVE or
                                   self.current_action not in _RECORDING):
            self.stop()
        if self.current_action in _RECORDING:
            if self._recording:
                self._open_step()
            else:
                self._start()


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` writing each trace to
    ``dir_name/<worker_name>.<time_ns>.pt.trace.json[.gz]``."""
    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json")
        prof.export_chrome_trace(path)
        if use_gzip:
            with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                g.write(f.read())
            os.remove(path)
    return handler
