"""``torch.futures``: the Future type (the same class as ``ember.jit.Future``) and helpers
that wait on several."""
from __future__ import annotations

from ember.jit._futures import Future

__all__ = ["Future", "collect_all", "wait_all"]


def collect_all(futures):
    """A Future completed (with the list of input futures) once all of ``futures`` are."""
    futures = list(futures)
    out = Future()
    remaining = [len(futures)]
    if not futures:
        out.set_result([])
        return out

    def one_done(_):
        remaining[0] -= 1
        if remaining[0] == 0:
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one_done)
    return out


def wait_all(futures):
    """Wait for every future and return their values (the first error is raised)."""
    return [f.wait() for f in collect_all(futures).wait()]
