"""torch.autograd.profiler: an op-level CPU profiler as a dispatcher mode.

While a profiler records, ``_ProfilerMode`` sits on the mode stack and wraps every op in an
event (``aten::<name>``, start/end in microseconds, input shapes, bytes of the outputs).
``record_function`` ranges are pushed straight into the recording profilers, so they work
whichever modes are active; ops run inside a range become its children (self time = total
minus children). With no profiler active nothing is on the stack: the dispatcher pays
nothing. A composite op record is an event and so is each op it runs, nested inside it
(Note [composite parts] in ember/_dispatch.py), as in torch's profiler.
"""
from __future__ import annotations

import functools
import json
import sys
import threading
import time
import weakref
from collections import OrderedDict

import numpy as np

from ember._dispatch import Mode, dispatch
from ember._tensor import Tensor

__all__ = ["profile", "record_function", "FunctionEvent", "FunctionEventAvg", "EventList"]


class _Local(threading.local):
    def __init__(self):
        self.active = []          # recording profiles, outermost first


_local = _Local()


_now_ns = time.perf_counter_ns
_get_ident = threading.get_ident


def _now_us():
    return _now_ns() / 1000.0


class FunctionEvent:
    """One op call or range. Note [cheap events]: made once per op while profiling, so the
    constructor stores only what differs per event and the rest are class defaults;
    ``input_shapes``, ``stack`` and ``cpu_children`` become lists when the profiler stops."""

    cpu_parent = None
    cpu_children = ()
    input_shapes = ()
    stack = ()
    cpu_memory_usage = 0          # bytes allocated minus freed, children included
    _self_mem = 0                 # bytes allocated minus freed by this event itself
    flops = 0
    count = 1
    is_user_annotation = False
    device_type = "CPU"

    def __init__(self, id, name, start_us, thread, input_shapes=None, stack=None,
                 is_user_annotation=False):
        self.id = id
        self.name = self.key = name
        self.start_us = self.end_us = start_us
        self.thread = thread
        if input_shapes is not None:
            self.input_shapes = input_shapes
        if stack:
            self.stack = stack
        if is_user_annotation:
            self.is_user_annotation = True

    def _finish(self):
        """Plain lists for the public fields (Note [cheap events])."""
        if type(self.cpu_children) is not list:
            self.cpu_children = list(self.cpu_children)
        if type(self.input_shapes) is not list:     # array shapes (tuples) -> lists
            self.input_shapes = [list(x) if type(x) is tuple else x
                                 for x in self.input_shapes]
        if type(self.stack) is not list:
            self.stack = list(self.stack)

    @property
    def source(self):
        """Innermost user frame ("file:line") when recorded with_stack."""
        return _source_of(self.stack)

    @property
    def cpu_time_total(self):
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} cpu_time="
                f"{_format_time(self.cpu_time_total)} input_shapes={self.input_shapes}>")


class FunctionEventAvg:
    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.input_shapes = None
        self.stack = None
        self.flops = 0
        self.is_user_annotation = False

    def add(self, ev):
        if self.key is None:
            self.key = ev.key
            self.input_shapes = ev.input_shapes
            self.stack = ev.stack
            self.is_user_annotation = ev.is_user_annotation
        self.count += ev.count
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.cpu_memory_usage += ev.cpu_memory_usage
        self.self_cpu_memory_usage += ev.self_cpu_memory_usage
        self.flops += ev.flops
        return self

    @property
    def cpu_time(self):
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time="
                f"{_format_time(self.self_cpu_time_total)} cpu_time="
                f"{_format_time(self.cpu_time)} input_shapes={self.input_shapes}>")


def _in_ember(frame):
    """Is this frame ember's own code (a module of the package, or a generated op front)?

    Decided by the frame's module name, not by its file name: a path test misfires when the
    user's own files lie under a folder called ``ember`` (a clone of this repository), and
    generated code has no real file at all.
    """
    module = frame.f_globals.get("__name__") or ""
    return module == "ember" or module.startswith("ember.") or \
        frame.f_code.co_filename.startswith("<ember")


def _user_stack():
    """The calling frames outside ember as "file(line): function", innermost first."""
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        if not _in_ember(frame):
            code = frame.f_code
            frames.append(f"{code.co_filename}({frame.f_lineno}): {code.co_name}")
        frame = frame.f_back
    return frames


def _source_of(stack):
    if not stack:
        return None
    fr = stack[0]                 # "file(line): name", innermost first
    head = fr.split(": ", 1)[0]
    if head.endswith(")") and "(" in head:
        f, line = head[:-1].rsplit("(", 1)
        return f"{f}:{line}"
    return head


def _format_time(us):
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_time_in(us, unit):
    scale = {"s": 1e6, "ms": 1e3, "us": 1.0}[unit]
    return f"{us / scale:.3f}{unit}"


def _format_memory(n):
    KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3
    a = abs(n)
    if a >= GB:
        return f"{n / GB:.2f} GB"
    if a >= MB:
        return f"{n / MB:.2f} MB"
    if a >= KB:
        return f"{n / KB:.2f} KB"
    return f"{n} B"


_SORT_KEYS = ("cpu_time", "cpu_time_total", "self_cpu_time_total", "cpu_memory_usage",
              "self_cpu_memory_usage", "count", "flops")


class EventList(list):
    def __init__(self, *args, profile_memory=False, with_flops=False, **kw):
        super().__init__(*args)
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        self._memory_records = []     # (ts_us, delta_bytes, total_allocated, thread)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        groups = OrderedDict()
        for ev in self:
            key = (ev.key,)
            if group_by_input_shape:
                key += (str(ev.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(ev.stack[:group_by_stack_n])
            groups.setdefault(key, FunctionEventAvg()).add(ev)
        r = EventList(groups.values(), profile_memory=self._profile_memory,
                      with_flops=self._with_flops)
        r._grouped_by_shape = group_by_input_shape
        return r

    def total_average(self):
        t = FunctionEventAvg()
        for ev in self:
            t.add(ev)
        t.key = "Total"
        return t

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, time_unit=None):
        if time_unit not in (None, "s", "ms", "us"):
            raise ValueError(f"Invalid time_unit '{time_unit}'; expected one of 's', 'ms', "
                             f"'us'")
        fmt_time = _format_time if time_unit is None else \
            (lambda us: _format_time_in(us, time_unit))
        evs = list(self)
        if top_level_events_only:
            evs = [e for e in evs if getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            if sort_by not in _SORT_KEYS:
                raise AttributeError(f"unknown sort_by key '{sort_by}'")
            evs.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit > 0:
            evs = evs[:row_limit]
        shapes = getattr(self, "_grouped_by_shape", False)
        total_self = sum(e.self_cpu_time_total for e in self) or 1.0
        name_w = min(max([len(e.key) for e in evs] + [4]) + 4, max_name_column_width)
        heads = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
        if self._profile_memory:
            heads += ["CPU Mem", "Self CPU Mem"]
        heads.append("# of Calls")
        if self._with_flops:
            heads.append("Total MFLOPs")
        if shapes:
            heads.append("Input Shapes")
        widths = [name_w] + [12] * (len(heads) - 1)
        if shapes:
            widths[-1] = min(max([len(str(e.input_shapes)) for e in evs] + [12]) + 2,
                             max_shapes_column_width)
        fmt = "".join("{:>" + str(w) + "}  " for w in widths)
        sep = "".join("-" * w + "  " for w in widths)
        lines = [sep]
        if header:
            lines = [header, sep]
        lines += [fmt.format(*heads), sep]
        for e in evs:
            name = e.key if len(e.key) <= name_w - 3 else e.key[:name_w - 6] + "..."
            row = [name, f"{100 * e.self_cpu_time_total / total_self:.2f}%",
                   fmt_time(e.self_cpu_time_total),
                   f"{100 * e.cpu_time_total / total_self:.2f}%",
                   fmt_time(e.cpu_time_total), fmt_time(e.cpu_time)]
            if self._profile_memory:
                row += [_format_memory(e.cpu_memory_usage),
                        _format_memory(e.self_cpu_memory_usage)]
            row.append(str(e.count))
            if self._with_flops:
                row.append(f"{e.flops / 1e6:.3f}")
            if shapes:
                text = str(e.input_shapes)
                w = widths[-1]
                row.append(text if len(text) <= w else text[:w - 3] + "...")
            lines.append(fmt.format(*row))
        lines.append(sep)
        lines.append(f"Self CPU time total: {fmt_time(self.self_cpu_time_total)}")
        return "\n".join(lines) + "\n"

    def export_chrome_trace(self, path):
        events = []
        for e in self:
            d = {"ph": "X", "cat": "user_annotation" if e.is_user_annotation else "cpu_op",
                 "name": e.name, "pid": 0, "tid": e.thread, "ts": e.start_us,
                 "dur": e.cpu_time_total, "args": {}}
            if e.input_shapes:
                d["args"]["Input Dims"] = e.input_shapes
            if e.stack:
                d["args"]["Call stack"] = ";".join(e.stack)
                if e.source:
                    d["args"]["Source"] = e.source
            if self._profile_memory:
                d["args"]["CPU Mem"] = e.cpu_memory_usage
                d["args"]["Self CPU Mem"] = e.self_cpu_memory_usage
            events.append(d)
        for ts, delta, total, tid in self._memory_records:
            events.append({"ph": "C", "cat": "cpu_instant_event", "name": "[memory]",
                           "pid": 0, "tid": tid, "ts": ts,
                           "args": {"Total Allocated": total}})
            events.append({"ph": "i", "s": "t", "cat": "cpu_instant_event",
                           "name": "[memory]", "pid": 0, "tid": tid, "ts": ts,
                           "args": {"Device Type": 0, "Device Id": -1, "Addr": 0,
                                    "Bytes": delta, "Total Allocated": total,
                                    "Total Reserved": total}})
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Flame-graph input: one ``frame;frame;...;op value`` line (outermost frame first)
        per event recorded with a stack and a non-zero ``metric``."""
        with open(path, "w") as f:
            for e in self:
                if not e.stack:
                    continue
                v = int(getattr(e, metric, 0) or 0)
                if v <= 0:
                    continue
                frames = [fr.replace(";", ",").replace(" ", "_") for fr in reversed(e.stack)]
                f.write(";".join(frames + [e.name.replace(" ", "_")]) + f" {v}\n")


def _shape(a):
    if isinstance(a, Tensor):
        return list(a._data.shape)
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
        return [list(x._data.shape) for x in a]
    return []


def _root(a):
    """The array owning ``a``'s memory (following views)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _out_tensors(r, out):
    if isinstance(r, Tensor):
        out.append(r)
    elif isinstance(r, (list, tuple)):
        for x in r:
            _out_tensors(x, out)
    return out


def _in_roots(args, kwargs):
    ids = set()
    for a in _out_tensors(list(args) + list(kwargs.values()), []):
        d = getattr(a, "_data", None)
        if isinstance(d, np.ndarray):
            ids.add(id(_root(d)))
    return ids


_FLOP_OPS = {"mm", "addmm", "bmm", "baddbmm", "matmul"}


def _flops(op, args):
    n = op.public_name
    if n not in _FLOP_OPS:
        return 0
    ts = [a for a in args if isinstance(a, Tensor)]
    a, b = ts[-2], ts[-1]
    if a.dim() < 2 or b.dim() < 2:
        return 0
    batch = 1
    for s in a.shape[:-2]:
        batch *= s
    return 2 * batch * a.shape[-2] * a.shape[-1] * b.shape[-1]


_EVENT_NAMES: dict = {}       # op record -> "aten::<name>"


class _ProfilerMode(Mode):
    sees_composite_parts = True     # Note [composite parts] in ember/_dispatch.py

    def __init__(self, prof):
        self.prof = prof

    def __ember_dispatch__(self, op, args, kwargs):
        p = self.prof
        if not p._recording:
            return op(*args, **kwargs)
        name = _EVENT_NAMES.get(op)
        if name is None:
            name = _EVENT_NAMES[op] = "aten::" + op.public_name
        ev = p._push(name, tuple([a._data.shape if type(a) is Tensor else _shape(a)
                                  for a in args]) if p.record_shapes else None)
        try:
            r = dispatch(op, args, kwargs["out"] if kwargs else None)
            if p.profile_memory:
                p._track_outputs(r, args, kwargs)
        finally:
            p._pop(ev)
        if p.with_flops:
            ev.flops = _flops(op, args)
        return r


class profile:
    """``profile(enabled=True, *, record_shapes=False, profile_memory=False,
    with_stack=False, with_flops=False, use_cuda=False)``: records every op run inside."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False,
                 with_flops=False, profile_memory=False, with_stack=False,
                 with_modules=False, use_kineto=False, use_cpu=True, **kwargs):
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self._recording = False
        self._mode = _ProfilerMode(self)
        self._events = []
        self._stack = []
        self._next_id = 0
        self.function_events = None
        self._mem_records = []
        self._tracked = {}            # id(root array) -> weakref.finalize
        self._mem_total = 0

    # -------------------------------------------------------------- memory
    def _track_outputs(self, r, args, kwargs):
        """Charge the new memory of ``r``'s tensors to the innermost open event and watch
        it (a finalizer on the owning NumPy array) to charge its release later."""
        outs = _out_tensors(r, [])
        if not outs:
            return
        ins = None
        for t in outs:
            d = getattr(t, "_data", None)
            if not isinstance(d, np.ndarray):
                continue
            root = _root(d)
            rid = id(root)
            if rid in self._tracked:
                continue
            if ins is None:
                ins = _in_roots(args, kwargs)
            if rid in ins:                    # a view of (or the same as) an input
                continue
            n = root.nbytes
            if n == 0:
                continue
            try:
                fin = weakref.finalize(root, _freed, weakref.ref(self), rid, n)
            except TypeError:
                continue
            fin.atexit = False
            self._tracked[rid] = fin
            self._mem_event(n)

    def _mem_event(self, delta):
        self._mem_total += delta
        tid = threading.get_ident()
        self._mem_records.append((_now_us(), delta, self._mem_total, tid))
        if self._stack:
            self._stack[-1]._self_mem += delta
        else:                                  # outside every op/range: like torch
            ev = FunctionEvent(self._next_id, "[memory]", _now_us(), tid)
            self._next_id += 1
            ev._self_mem = ev.cpu_memory_usage = delta
            self._events.append(ev)

    # -------------------------------------------------------------- recording
    def _start(self):
        if self._recording:
            return
        self._events, self._stack = [], []
        self._thread = _get_ident()     # modes are per thread: every event comes from this one
        self._mem_records, self._mem_total = [], 0
        self._recording = True
        self._mode.__enter__()
        _local.active.append(self)

    def _stop(self):
        if not self._recording:
            return
        self._recording = False
        self._mode.__exit__()
        if self in _local.active:
            _local.active.remove(self)
        for ev in reversed(self._stack):     # ranges still open
            self._pop(ev)
        for fin in self._tracked.values():   # stop watching: later frees aren't ours
            fin.detach()
        self._tracked = {}
        for ev in self._events:
            ev._finish()
        self.function_events = EventList(
            sorted(self._events, key=lambda e: (e.start_us, -e.end_us)),
            profile_memory=self.profile_memory, with_flops=self.with_flops)
        self.function_events._memory_records = self._mem_records

    def _push(self, name, shapes=None, user=False):
        stack = _user_stack() if self.with_stack else None
        ev = FunctionEvent(self._next_id, name, _now_ns() / 1000.0, self._thread, shapes,
                           stack, user)
        self._next_id += 1
        st = self._stack
        if st:
            parent = ev.cpu_parent = st[-1]
            if parent.cpu_children:
                parent.cpu_children.append(ev)
            else:
                parent.cpu_children = [ev]
        st.append(ev)
        self._events.append(ev)
        return ev

    def _pop(self, ev):
        ev.end_us = _now_ns() / 1000.0
        st = self._stack
        if st and st[-1] is ev:
            st.pop()
        elif any(e is ev for e in st):
            while st:
                top = st.pop()
                if top is ev:
                    break
                top.end_us = ev.end_us
                _close_mem(top)
        if ev._self_mem or ev.cpu_children:
            _close_mem(ev)

    def __enter__(self):
        if self.enabled:
            self._start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop()
        return False

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write flame-graph stacks (needs ``with_stack=True``)."""
        self._check()
        self.function_events.export_stacks(path, metric)

    # -------------------------------------------------------------- results
    def _check(self):
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def events(self):
        self._check()
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        self._check()
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self):
        self._check()
        return self.function_events.total_average()

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False):
        self._check()
        return self.function_events.table(sort_by, row_limit, max_src_column_width,
                                          max_name_column_width, max_shapes_column_width,
                                          header, top_level_events_only)

    def export_chrome_trace(self, path):
        self._check()
        self.function_events.export_chrome_trace(path)

    @property
    def self_cpu_time_total(self):
        self._check()
        return self.function_events.self_cpu_time_total

    def __str__(self):
        return self.table() if self.function_events is not None else "<unfinished profile>"


def _close_mem(ev):
    ev.cpu_memory_usage = ev._self_mem + sum(c.cpu_memory_usage for c in ev.cpu_children)


def _freed(pref, rid, n):
    p = pref()
    if p is None or p._tracked.pop(rid, None) is None:
        return
    if p._recording:
        p._mem_event(-n)


class record_function:
    """A labelled range: an event in every recording profiler, parent of the ops inside.
    Context manager or decorator."""

    def __init__(self, name, args=None):
        self.name = name
        self.args = args
        self._evs = []

    def __enter__(self):
        self._evs = [(p, p._push(self.name, [] if p.record_shapes else None, user=True))
                     for p in list(_local.active) if p._recording]
        return self

    def __exit__(self, *exc):
        for p, ev in self._evs:
            p._pop(ev)
        self._evs = []
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*a, **k):
            with record_function(self.name, self.args):
                return func(*a, **k)
        return wrapper



def torch_op_range(name):
    """Decorator for a Python function that torch runs as one aten op and ember as several
    (``F.conv2d``: torch records ``aten::conv2d`` above ``aten::convolution``). While a
    profiler records, each call is an event called ``name`` (a string, or a function of the
    call's bound arguments) holding the ops inside, with the arguments' shapes when shapes
    are recorded (tensors' sizes, ``[]`` for the rest, as torch lists them)."""
    def decorate(fn):
        import inspect
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not _local.active:
                return fn(*args, **kwargs)
            profs = [p for p in _local.active if p._recording]
            if not profs:
                return fn(*args, **kwargs)
            try:
                bound = sig.bind(*args, **kwargs)
                bound.apply_defaults()
                values = bound.arguments
            except TypeError:              # let the function raise its own error
                return fn(*args, **kwargs)
            label = name if isinstance(name, str) else name(values)
            shapes = [_shape(v) for v in values.values()]
            evs = [(p, p._push(label, list(shapes) if p.record_shapes else None)) for p in profs]
            try:
                return fn(*args, **kwargs)
            finally:
                for p, ev in reversed(evs):
                    p._pop(ev)
        return wrapper
    return decorate
