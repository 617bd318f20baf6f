"""What a benchmark measured (``Measurement``) and what it ran (``TaskSpec``), with the
unit and significant-figure helpers the reports use."""
from __future__ import annotations

import collections
import math
import textwrap

import numpy as np

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig",
           "ordered_unique", "set_torch_threads"]

MAX_SIGNIFICANT_FIGURES = 4
MIN_CONFIDENCE_INTERVAL = 25e-9     # seconds: no timer resolves better than this
IQR_WARN = 0.1                      # IQR / median above this: a warning
IQR_GROSS_WARN = 0.25               # ... and above this, a stronger one

_UNITS = {-3: ("ns", 1e-9), -2: ("us", 1e-6), -1: ("ms", 1e-3)}
_ENGLISH = {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}


def select_unit(t: float):
    """(unit, scale) for showing a time of ``t`` seconds: ns, us, ms or s."""
    exponent = int(math.log10(t) // 3) if t > 0 else 0
    return _UNITS.get(exponent, ("s", 1.0))


def unit_to_english(unit: str) -> str:
    return _ENGLISH[unit]


def trim_sigfig(x: float, n: int) -> float:
    """``x`` rounded (half to even) to ``n`` significant figures, as torch writes it:
    ``round(x / 10**p) * 10**p`` with ``p = ceil(log10|x|) - n``."""
    if x == 0:
        return 0.0
    scale = 10.0 ** (int(math.ceil(math.log10(abs(x)))) - n)
    return float(round(x / scale) * scale)


def ordered_unique(items):
    return list(dict.fromkeys(items))


def set_torch_threads(n):
    """Context manager running with ``n`` threads (restored after)."""
    import contextlib
    import ember

    @contextlib.contextmanager
    def scope():
        before = ember.get_num_threads()
        ember.set_num_threads(n)
        try:
            yield
        finally:
            ember.set_num_threads(before)
    return scope()


_SpecFields = collections.namedtuple(
    "_SpecFields", "stmt setup global_setup label sub_label description env num_threads",
    defaults=("", None, None, None, None, 1))


class TaskSpec(_SpecFields):
    """What a Timer runs (everything but its globals): an immutable, hashable record."""
    __slots__ = ()
    __repr__ = object.__repr__

    @property
    def title(self) -> str:
        """The label (or, lacking one, the statement), with the sub-label."""
        sub = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + sub
        if "\n" not in self.stmt:
            return self.stmt + sub
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n" \
               f"{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if not self.setup or self.setup == "pass":
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}\n"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, a multi-line block followed by a blank line."""
        parts = [self.title, self.description or "", self.setup_str()]
        return "\n".join(p + "\n" if "\n" in p and not p.endswith("\n") else p
                         for p in parts if p)


class Measurement:
    """``raw_times``: the seconds each of the runs of ``number_per_run`` statements took;
    the statistics are over per-statement times (``times``)."""

    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata
        self.times = [t / number_per_run for t in self.raw_times]
        self._stats = None

    def __getattr__(self, name):            # label, stmt, env... come from the task spec
        spec = self.__dict__.get("task_spec")
        if spec is not None and name in TaskSpec._fields:
            return getattr(spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    def _lazy_init(self):
        if self._stats is None:
            t = np.asarray(self.times, dtype=np.float64)
            q25, median, q75 = np.percentile(t, [25, 50, 75]) if t.size else (0, 0, 0)
            self._stats = dict(median=float(median), mean=float(t.mean()) if t.size else 0.0,
                               p25=float(q25), p75=float(q75), iqr=float(q75 - q25))
        return self._stats

    median = property(lambda self: self._lazy_init()["median"])
    mean = property(lambda self: self._lazy_init()["mean"])
    iqr = property(lambda self: self._lazy_init()["iqr"])

    @property
    def title(self):
        return self.task_spec.title

    @property
    def env(self):
        return "Unspecified env" if self.task_spec.env is None else self.task_spec.env

    @property
    def as_row_name(self):
        return self.task_spec.sub_label or self.task_spec.stmt or "[Unknown]"

    @property
    def has_warnings(self) -> bool:
        return self.iqr / self.median > IQR_WARN if self.median else False

    def meets_confidence(self, threshold: float = IQR_WARN) -> bool:
        return self.iqr / self.median < threshold

    @property
    def significant_figures(self) -> int:
        """How many figures of the median the spread supports (1 to 4), as torch counts
        them: over the middle half of the sorted times (``n // 4`` dropped from each
        end), a z = 1.645 confidence interval of the mean (population std / sqrt(n)),
        at least the timer's resolution; ``floor(log10(median / interval))``."""
        times = np.sort(np.asarray(self.times, dtype=np.float64))
        n = len(times)
        middle = times[n // 4:n - n // 4]
        std = float(np.std(middle)) if len(middle) else 0.0
        interval = max(1.645 * std / math.sqrt(max(len(middle), 1)), MIN_CONFIDENCE_INTERVAL)
        figures = int(math.floor(math.log10(self.median / interval)))
        return min(max(figures, 1), MAX_SIGNIFICANT_FIGURES)

    def __repr__(self):
        unit, scale = select_unit(self.median)
        n = len(self.times)
        lines = [object.__repr__(self), self.task_spec.summarize()]
        if n > 1:
            lines.append(f"  Median: {self.median / scale:.2f} {unit}")
            if n >= 4:
                s = self._lazy_init()
                lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} "
                             f"({s['p25'] / scale:.2f} to {s['p75'] / scale:.2f})")
        else:
            lines.append(f"  {self.median / scale:.2f} {unit}")
        threads = self.task_spec.num_threads
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement' if n > 1 else ''}, {threads} "
                     f"thread{'s' if threads > 1 else ''}")
        if self.has_warnings:
            ratio = self.iqr / self.median
            why = "This suggests significant environmental influence." if ratio > \
                IQR_GROSS_WARN else "This could indicate system fluctuation."
            lines += [f"  WARNING: Interquartile range is {ratio * 100:.1f}% of the median "
                      f"measurement.", f"           {why}"]
        return "\n".join(lines)

    @staticmethod
    def merge(measurements):
        """One Measurement per task spec, pooling the per-statement times."""
        pooled = {}
        for m in measurements:
            pooled.setdefault(m.task_spec, []).extend(m.times)
        return [Measurement(1, times, spec) for spec, times in pooled.items()]
