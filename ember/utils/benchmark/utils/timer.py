"""Timer: runs a statement (after its setup) in a namespace built from ``globals`` and
times it with ``timer`` (``time.perf_counter``), at ``num_threads`` threads."""
from __future__ import annotations

import enum
import textwrap
import time

from ember.utils.benchmark.utils.common import Measurement, TaskSpec, set_torch_threads

__all__ = ["Timer", "timer", "Language"]

timer = time.perf_counter


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


def _dedent(code):
    """Code written indented in a triple-quoted string, made runnable (torch's Timer
    stores and runs stmt and setup this way)."""
    return textwrap.dedent(code).strip()


class Timer:
    """``Timer(stmt, setup, globals=..., label=..., sub_label=..., description=...,
    num_threads=...)``; ``timeit``, ``blocked_autorange`` and ``adaptive_autorange``
    return a :class:`Measurement`."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1,
                 language=Language.PYTHON):
        if not isinstance(stmt, str):
            raise ValueError("Currently only a `str` stmt is supported.")
        if language not in (Language.PYTHON, "py", "python"):
            raise NotImplementedError("ember's Timer runs Python statements only")
        stmt, setup = _dedent(stmt), _dedent(setup)
        import ember
        self._namespace = {"torch": ember, **(globals or {})}
        self._timer = timer
        self._task_spec = TaskSpec(stmt, setup, global_setup, label, sub_label, description,
                                   env, num_threads)
        self._stmt = compile(stmt, "<timeit-stmt>", "exec")
        self._setup_done = False
        self._setup = compile(setup, "<timeit-setup>", "exec")

    def _run(self, number):
        """Seconds taken by ``number`` executions of the statement."""
        if not self._setup_done:
            exec(self._setup, self._namespace)
            self._setup_done = True
        code, namespace, clock = self._stmt, self._namespace, self._timer
        start = clock()
        for _ in range(number):
            exec(code, namespace)
        return clock() - start

    def _measure(self, number, runs):
        with set_torch_threads(self._task_spec.num_threads):
            return [self._run(number) for _ in range(runs)]

    def timeit(self, number=1000000):
        """One run of ``number`` statements."""
        with set_torch_threads(self._task_spec.num_threads):
            self._run(max(number // 100, 2))            # warm up
            return Measurement(number, [self._run(number)], self._task_spec)

    def _block_size(self, target=1e-3):
        """Statements per run such that a run lasts at least ``target`` seconds (a power
        of ten)."""
        number = 1
        while True:
            if self._run(number) >= target or number >= 10 ** 9:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Runs of a block of statements (each run >= 1 ms) until ``min_run_time``
        seconds have been measured."""
        with set_torch_threads(self._task_spec.num_threads):
            number = self._block_size()
            times, total = [], 0.0
            while total < min_run_time or not times:
                t = self._run(number)
                if callback is not None:
                    callback(number, t)
                times.append(t)
                total += t
        return Measurement(number, times, self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Runs (each >= 1 ms) until the IQR is below ``threshold`` of the median and
        ``min_run_time`` has passed, or ``max_run_time`` is reached."""
        with set_torch_threads(self._task_spec.num_threads):
            number = self._block_size()
            times, total = [], 0.0
            while total < max_run_time:
                t = self._run(number)
                if callback is not None:
                    callback(number, t)
                times.append(t)
                total += t
                if len(times) > 3 and total >= min_run_time and \
                        Measurement(number, times, self._task_spec).meets_confidence(threshold):
                    break
        return Measurement(number, times, self._task_spec)

    def autorange(self, callback=None):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("See `Timer.blocked_autorange.`")

    def collect_callgrind(self, *args, **kwargs):
        raise NotImplementedError("ember has no Callgrind collection")

