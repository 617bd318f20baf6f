"""Compile-time errors of TorchScript, as ``torch.jit.frontend`` names them. Each carries
the source range it points at and prints it as torch does: the source lines (two of
context either side), the range underlined with ``~`` and ``<--- HERE`` after its end.

A range is anything with ``filename``, ``line``, ``col``, ``end_col``, ``lines`` (the
function's source lines) and ``first_line`` (the file line of ``lines[0]``); an
``end_line`` makes it span several lines (``Span``)."""
from __future__ import annotations


class Span:
    """A source range over one or several lines (``end_col`` None: to the line's end)."""
    __slots__ = ("filename", "line", "col", "end_line", "end_col", "lines", "first_line",
                 "fn_name")

    def __init__(self, filename, line, col, end_line, end_col, lines, first_line, fn_name=None):
        self.filename, self.line, self.col = filename, line, col
        self.end_line, self.end_col = end_line, end_col
        self.lines, self.first_line, self.fn_name = lines, first_line, fn_name

    def traceback_compile(self):
        return format_range(self)


def format_range(r, context=2):
    """``  File "f.py", line N`` and the underlined source, torch's compile-time form."""
    lines, first = r.lines, r.first_line
    start = r.line - first
    end = (getattr(r, "end_line", None) or r.line) - first
    lo, hi = max(0, start - context), min(len(lines), end + 1 + context)
    out = [f'  File "{r.filename}", line {r.line}']
    for k in range(lo, hi):
        text = lines[k].rstrip("\n") if k < len(lines) else ""
        out.append(text)
        if start <= k <= end:
            a = r.col if k == start else len(text) - len(text.lstrip())
            b = r.end_col if k == end and r.end_col is not None else len(text.rstrip())
            b = max(b, a + 1)
            out.append(" " * a + "~" * (b - a) + (" <--- HERE" if k == end else ""))
    return "\n".join(out)


class FrontendError(RuntimeError):
    def __init__(self, msg, source=None):
        self.msg, self.source = msg, source
        super().__init__(self._text())

    def _text(self):
        if self.source is None:
            return self.msg
        return f"{self.msg}:\n{format_range(self.source)}\n"


class NotSupportedError(FrontendError):
    """A Python construct TorchScript does not support (``try``, ``lambda``, ``global``...)."""


class UnsupportedNodeError(NotSupportedError):
    pass


class CompileError(RuntimeError):
    """A type or name error found while compiling (torch raises RuntimeError for these).
    ``also`` adds a second range after ``and was used here:`` (torch's form for a name
    defined on one path only)."""
    def __init__(self, msg, source=None, also=None):
        self.msg, self.source = msg, source
        if source is None:
            text = msg
        else:
            text = f"\n{msg}:\n{format_range(source)}\n"
            if also is not None:
                text += f"and was used here:\n{format_range(also)}\n"
        super().__init__(text)
