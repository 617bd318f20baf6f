"""Compare: measurements laid out as tables, one per label: a row per sub-label (grouped
by thread count, then environment), a column per description, times in one unit."""
from __future__ import annotations

import enum
import math

from ember.utils.benchmark.utils.common import (Measurement, ordered_unique, select_unit,
                                                unit_to_english)

__all__ = ["Colorize", "Compare"]

BEST, GOOD, VERY_BAD, BAD = "\033[92m\033[1m", "\033[34m\033[1m", "\033[31m\033[1m", \
    "\033[2m\033[91m"
TERMINATE = "\033[0m\033[0m"
SEPARATOR = "  |  "
WARNING_NOTE = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.")


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _color(value, best):
    """The escape code for a time ``value`` against the best (smallest) of its group:
    within 1% (or about four timer resolutions, 0.1 us) it ties the best."""
    ratio = value / best
    if ratio <= 1.01 or value - best <= 1.1e-7:
        return BEST
    if ratio <= 1.1:
        return GOOD
    if ratio >= 5:
        return VERY_BAD
    if ratio >= 2:
        return BAD
    return ""


class Compare:
    """``Compare(results).print()``: a table per label. ``trim_significant_figures``
    rounds each time to the figures its spread supports; ``colorize`` marks the best and
    the slow entries of each column (or row); ``highlight_warnings`` flags noisy ones."""

    def __init__(self, results):
        self._results = []
        self._trim = False                 # round to each measurement's figures
        self._colors = Colorize.NONE
        self._flag_noisy = False           # append (! IQR%) to high-variance entries
        self.extend_results(results)

    def extend_results(self, results):
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} "
                                 f"instead.")
        self._results.extend(results)

    def trim_significant_figures(self):
        self._trim = True

    def colorize(self, rowwise=False):
        self._colors = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self):
        self._flag_noisy = True

    def __str__(self):
        return "\n".join(self._render())

    def print(self):
        print(str(self))

    def _render(self):
        merged = Measurement.merge(self._results)
        labels = ordered_unique(m.label for m in merged)
        return [self._layout([m for m in merged if m.label == label]) for label in labels]

    def _layout(self, results):
        """One table (a string ending in its unit line)."""
        unit, scale = select_unit(min(m.median for m in results))
        per_unit = 1 / scale           # times shown are ``median * per_unit``
        columns = ordered_unique(m.description for m in results)
        threads = sorted(set(m.num_threads for m in results))
        envs = ordered_unique(m.env for m in results)
        show_env = len(envs) > 1
        env_width = max(len(f"({e})") for e in envs) if show_env else 2
        cells = {}                     # (threads, env, row name) -> {column: measurement}
        for m in results:
            cells.setdefault((m.num_threads, m.env, m.as_row_name), {})[m.description] = m
        order = sorted(cells, key=lambda k: (threads.index(k[0]), envs.index(k[1])))

        decimals = 1
        if self._trim:
            decimals = max(0, min(m.significant_figures - _int_digits(m.median * per_unit)
                                  for m in results))

        def number(m):
            value = m.median * per_unit
            if self._trim:
                value = _round_sig(value, m.significant_figures)
            return f"{value:.{decimals}f}"
        flag = self._flag_noisy and any(m.has_warnings for m in results)
        # a column's numbers are right-aligned on the integer digits of its largest time
        # (so 9.99 -> '10.0' overflows by one, as in torch)
        widths = {c: max(_int_digits(m.median * per_unit) for m in results
                         if m.description == c) + (decimals + 1 if decimals else 0)
                  for c in columns}

        def cell(m):
            if m is None:
                return ""
            text = number(m).rjust(widths[m.description])
            if flag:
                text += f" (! {m.iqr / m.median * 100:.0f}%)" if m.has_warnings else " " * 7
            return text

        rows, last_env = [], {}
        for key in order:
            n, env, name = key
            env_text = f"({env})" if show_env and last_env.get(n) != env else ""
            last_env[n] = env
            row = [m for m in (cells[key].get(c) for c in columns)]
            rows.append((n, f"  {env_text.ljust(env_width)}  {name}", row))
        best = self._best(rows, columns)
        texts = [[cell(m) for m in row] for _, _, row in rows]
        widths = [max([len(str(c))] + [len(t[i]) for t in texts])
                  for i, c in enumerate(columns)]
        name_width = max(len(name) for _, name, _ in rows)

        def line(name, values):
            return SEPARATOR.join([name.ljust(name_width)] + values)
        header = line("", [str(c).center(w) for c, w in zip(columns, widths)])
        total = len(header)
        out = [f"[{f' {results[0].label or chr(32)} '.center(total - 2, '-')}]", header]
        shown_threads = None
        for (n, name, row), text, colors in zip(rows, texts, best):
            if n != shown_threads:
                shown_threads = n
                head = f"{n} threads: "
                out.append(head + "-" * (total - len(head)))
            values = []
            for t, w, color in zip(text, widths, colors):
                t = t.center(w)
                values.append(f"{color}{t}{TERMINATE}" if color else t)
            out.append(line(name, values))
        out += ["", f"Times are in {unit_to_english(unit)}s ({unit})."]
        if flag:
            out.append(WARNING_NOTE)
        return "\n".join(out) + "\n"

    def _best(self, rows, columns):
        """The color code of every cell (all empty unless colorized)."""
        codes = [["" for _ in columns] for _ in rows]
        if self._colors is Colorize.NONE:
            return codes
        groups = {}                    # column (or row) -> the cells it holds
        for r, (n, _, row) in enumerate(rows):
            for c, m in enumerate(row):
                if m is not None:
                    key = (n, r) if self._colors is Colorize.ROWWISE else (n, c)
                    groups.setdefault(key, []).append((r, c, m.median))
        for cells in groups.values():
            best = min(v for _, _, v in cells)
            for r, c, v in cells:
                codes[r][c] = _color(v, best)
        return codes


def _int_digits(x):
    """torch's count of integer digits: ceil(log10(x)) (so exactly 10.0 counts one)."""
    return int(math.ceil(math.log10(x))) if x > 0 else 1


def _round_sig(x, figures):
    from ember.utils.benchmark.utils.common import trim_sigfig
    return trim_sigfig(x, figures)
