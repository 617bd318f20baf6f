"""RPCs in ``ember.autograd.profiler.profile()``, named as torch names them.

A call made while a profile records on the calling thread gets an event
``rpc_sync#aten::add(worker0 -> worker1)`` (``rpc_async#``, ``rpc_remote#``) lasting
from the call to its reply. Its request is sent as PROFILED: the callee runs the
function under its own profile and returns the events with the value; they join the
caller's profile as ``<name>#remote_op: <op>`` with ``node_id`` the callee's rank.
"""
from __future__ import annotations

from ember.autograd import profiler
from ember.futures import Future


def recording():
    """The profiles recording on this thread."""
    active = profiler._local.active
    return [p for p in active if p._recording] if active else active


def func_name(func):
    """``aten::add`` for ember's ops, the qualified name of other functions."""
    module = getattr(func, "__module__", None) or "ember"
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if module.startswith("ember") and not module.startswith("ember.distributed") and \
            type(func).__name__ != "ScriptFunction":
        return f"aten::{getattr(func, '__name__', name)}"
    return name if module == "__main__" else f"{module}.{name}"


def start(name, profiles, node_id):
    """Open an event ``name`` in each of ``profiles`` (not on their range stacks: it ends
    on whichever thread completes the call)."""
    events = []
    for p in profiles:
        events.append((p, _event(p, name, profiler._now_us(), node_id, _parent(p))))
    return events


def _parent(p):
    return p._stack[-1] if p._stack else None


def _event(p, name, start_us, node_id, parent):
    ev = profiler.FunctionEvent(p._next_id, name, start_us, p._thread)
    p._next_id += 1
    ev.node_id = node_id
    if parent is not None:
        ev.cpu_parent = parent
        if parent.cpu_children:
            parent.cpu_children.append(ev)
        else:
            parent.cpu_children = [ev]
    p._events.append(ev)
    return ev


def finish(events, remote=(), node_id=-1):
    """Close ``events``; add the callee's ``remote`` events (name, start, end, parent
    index) under each one's name."""
    now = profiler._now_us()
    for p, ev in events:
        ev.end_us = now
        made = []
        for name, start_us, end_us, parent in remote:
            r = _event(p, f"{ev.name}#remote_op: {name}", start_us, node_id,
                       made[parent] if parent >= 0 else None)
            r.end_us = end_us
            made.append(r)


def follow(raw, events, node_id, unwrap):
    """A Future of ``raw``'s value that closes ``events`` when ``raw`` completes;
    ``unwrap``: the value is ``(value, remote events)``."""
    out = Future()
    out._driver = raw._driver           # a waiter reads the reply itself (``_agent``)

    def done(fut):
        try:
            value = fut.wait()
        except BaseException as e:          # noqa: BLE001 - the caller gets it
            finish(events)
            out.set_exception(e)
            return
        remote = ()
        if unwrap:
            value, remote = value
        finish(events, remote, node_id)
        out.set_result(value)
    raw.add_done_callback(done)
    return out


def run_profiled(run):
    """``run()`` under a profile of this thread: (its result, its events as tuples)."""
    with profiler.profile() as prof:
        result = run()
    evs = list(prof.function_events)
    index = {id(e): i for i, e in enumerate(evs)}
    return result, [(e.name, e.start_us, e.end_us,
                     index.get(id(e.cpu_parent), -1) if e.cpu_parent is not None else -1)
                    for e in evs]
