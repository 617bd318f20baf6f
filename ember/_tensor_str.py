"""How ember turns a tensor into text (``repr``/``str``), matching torch 2.13 output.

Layout of this module:

* a module-level option table (``_OPTIONS``) with ``set_printoptions``,
  ``get_printoptions`` and the ``printoptions`` context manager on top of it;
* ``_Formatter``: looks once at the values that will be shown and settles on a
  notation (integer-like, fixed point, scientific) and a column width;
* ``_render``: a recursive writer for brackets, rows, wrapping and ``...`` gaps;
* ``tensor_repr``: prefix, body and the trailing ``dtype=``/``grad_fn=`` notes.

The array is read directly with NumPy, so printing never goes through ember's
dispatch (profilers, tracers and modes do not see it).
"""
from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np

from ember import _dtype

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]


# ------------------------------------------------------------------------------ options

_PRESETS = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

_OPTIONS: dict[str, Any] = dict(_PRESETS["default"], sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Change how tensors print (same knobs as ``torch.set_printoptions``).

    Args:
        precision: digits after the decimal point for floats (4 by default).
        threshold: element count above which only the edges are shown (1000).
        edgeitems: how many leading/trailing entries per dimension a summary keeps (3).
        linewidth: target line length used for wrapping (80).
        profile: ``"default"``, ``"short"`` or ``"full"``; applied first, then any of the
            explicit arguments above.
        sci_mode: ``True``/``False`` forces or forbids scientific notation; ``None``
            lets the values decide. Always updated, even when left as ``None``.
    """
    if profile in _PRESETS:
        _OPTIONS.update(_PRESETS[profile])
    explicit = {"precision": precision, "threshold": threshold,
                "edgeitems": edgeitems, "linewidth": linewidth}
    _OPTIONS.update({k: v for k, v in explicit.items() if v is not None})
    _OPTIONS["sci_mode"] = sci_mode


class _PrinterOptions:
    """``PRINT_OPTS``: the options as attributes, read and written through ``_OPTIONS``
    (scripts read ``torch._tensor_str.PRINT_OPTS.precision`` or set it directly)."""
    __slots__ = ()

    def __getattr__(self, name):
        try:
            return _OPTIONS[name]
        except KeyError:
            raise AttributeError(f"'__PrinterOptions' object has no attribute '{name}'") \
                from None

    def __setattr__(self, name, value):
        _OPTIONS[name] = value

    def __repr__(self):
        return "__PrinterOptions(" + ", ".join(f"{k}={v!r}" for k, v in _OPTIONS.items()) + ")"


PRINT_OPTS = _PrinterOptions()


def get_printoptions() -> dict[str, Any]:
    """A copy of the current options, usable as ``set_printoptions(**opts)``."""
    return dict(_OPTIONS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Apply ``set_printoptions(**kwargs)`` for the duration of a ``with`` block."""
    saved = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**saved)


# ------------------------------------------------------------------------------ values

def _floating(arr) -> bool:
    return arr.dtype.kind == "f" or arr.dtype == _dtype.bfloat16.np


def _py_values(arr) -> list:
    """Flat list of Python scalars, widened the way ``Tensor.tolist`` widens them."""
    flat = arr.reshape(-1)
    if _floating(flat):
        flat = flat.astype(np.float64)
    elif flat.dtype.kind == "c":
        flat = flat.astype(np.complex128)
    return flat.tolist()


def _kept_indices(n: int, summarize: bool):
    """(head, shows_gap, tail) positions along one dimension of length ``n``."""
    k = _OPTIONS["edgeitems"]
    if summarize and n > 2 * k:
        return range(k), True, range(n - k, n)
    return range(n), False, range(0)


def _visible_part(arr, summarize: bool):
    """The sub-array of entries a (possibly summarised) print actually shows."""
    if not summarize or arr.ndim == 0:
        return arr
    picks = []
    for n in arr.shape:
        head, _, tail = _kept_indices(n, True)
        picks.append(list(head) + list(tail))
    return arr[np.ix_(*picks)]


class _Formatter:
    """Chooses a notation and a width for one real-valued array, then formats items."""

    def __init__(self, arr):
        self.precision = _OPTIONS["precision"]
        self.is_float = _floating(arr)
        self.style = "plain"        # plain | int | fixed | sci
        self.width = 1
        if not self.is_float:
            if arr.size:
                extremes = (arr.min().item(), arr.max().item())
                self.width = max(1, *(len(str(x)) for x in extremes))
            return
        vals = arr.reshape(-1).astype(np.float64)
        vals = vals[np.isfinite(vals) & (vals != 0)]
        self.style = "int"
        if vals.size == 0:
            return
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        whole = bool((vals == np.ceil(vals)).all())
        forced = _OPTIONS["sci_mode"]
        sci = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if forced is None else forced
        self.style = "sci" if sci else ("int" if whole else "fixed")
        extra = 1 if self.style == "int" else 0
        self.width = max(1, max(len(self._text(x)) for x in vals.tolist()) + extra)

    def _text(self, x) -> str:
        if self.style == "sci":
            return f"{x:.{self.precision}e}"
        if self.style == "fixed":
            return f"{x:.{self.precision}f}"
        if self.style == "int":
            return f"{x:.0f}"
        return str(x)

    def __call__(self, x) -> str:
        s = self._text(x)
        if self.style == "int" and math.isfinite(x):
            s += "."
        return s.rjust(self.width)


class _Cells:
    """Formats one element (real, or complex as real+imag) and knows its cell width."""

    def __init__(self, real: _Formatter, imag: _Formatter | None = None):
        self.real, self.imag = real, imag
        self.cell = real.width + 2 + (imag.width + 1 if imag is not None else 0)

    def __call__(self, x) -> str:
        if self.imag is None:
            return self.real(x)
        im = (self.imag(x.imag) + "j").lstrip()
        sep = "" if im[0] in "+-" else "+"
        return self.real(x.real) + sep + im


def _render(arr, indent: int, summarize: bool, cells: _Cells) -> str:
    if arr.ndim == 0:
        return cells(_py_values(arr)[0])
    head, gap, tail = _kept_indices(arr.shape[0], summarize)
    if arr.ndim == 1:
        if summarize and not _OPTIONS["edgeitems"]:
            items = ["..."]
        else:
            items = [cells(v) for v in _py_values(arr[list(head)])]
            if gap:
                items.append(" ...")
                items += [cells(v) for v in _py_values(arr[list(tail)])]
        per_line = max(1, math.floor((_OPTIONS["linewidth"] - indent) / cells.cell))
        rows = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(rows) + "]"
    parts = [_render(arr[i], indent + 1, summarize, cells) for i in head]
    if gap:
        parts.append("...")
        parts += [_render(arr[i], indent + 1, summarize, cells) for i in tail]
    joiner = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + joiner.join(parts) + "]"


def _body(arr, indent: int) -> str:
    summarize = arr.size > _OPTIONS["threshold"]
    shown = _visible_part(arr, summarize)
    if arr.dtype.kind == "c":
        cells = _Cells(_Formatter(shown.real), _Formatter(shown.imag))
    else:
        cells = _Cells(_Formatter(shown))
    return _render(arr, indent, summarize, cells)


# ------------------------------------------------------------------------------ repr

def _append_notes(text: str, notes: list, indent: int) -> str:
    """Close the repr, putting each note after a comma or on a new indented line."""
    out = [text]
    used = len(text) - text.rfind("\n") + 1
    for note in notes:
        if used + len(note) + 2 > _OPTIONS["linewidth"]:
            out.append(",\n" + " " * indent + note)
            used = indent + len(note)
        else:
            out.append(", " + note)
            used += len(note) + 2
    return "".join(out) + ")"


def _is_ember_parameter(cls) -> bool:
    from ember.nn.parameter import Parameter
    return cls is Parameter


def tensor_repr(t, *, tensor_contents=None):
    """The text ``repr(t)`` produces, torch style; ``tensor_contents`` replaces the body."""
    from ember._tensor import Tensor
    if hasattr(t._data, "layout"):          # sparse: ember/_ops/sparse.py
        from ember._ops.sparse import sparse_repr
        return sparse_repr(t)
    cls = type(t)
    plain = cls is Tensor or _is_ember_parameter(cls)
    opener = "tensor(" if plain else cls.__name__ + "("
    indent = len(opener)
    arr, dt = t._data, t.dtype
    default = _dtype.get_default_dtype()

    notes = []
    if t.is_meta:                   # no data: the shape stands in for the body
        notes += ["device='meta'", f"size={tuple(arr.shape)}"]
        if dt is not default:
            notes.append(f"dtype={dt}")
        body = "..."
    elif arr.size == 0 and arr.dtype not in _dtype.QUANTIZED_NP:
        if arr.ndim != 1:
            notes.append(f"size={tuple(arr.shape)}")
        if dt is not default:
            notes.append(f"dtype={dt}")
        body = "[]"
    elif arr.dtype in _dtype.QUANTIZED_NP:     # the values it stands for, then its scheme
        from ember._ops.quantized import float_array, qparams
        qp = qparams(t)
        notes += [f"size={tuple(arr.shape)}", f"dtype={dt}",
                  f"quantization_scheme={qp.qscheme}"]
        if qp.per_channel:
            from ember._tensor import _make
            notes += [f"scale={tensor_repr(_make(qp.scale))}",
                      f"zero_point={tensor_repr(_make(qp.zero_point))}", f"axis={qp.axis}"]
        else:
            notes += [f"scale={qp.scale}", f"zero_point={qp.zero_point}"]
        body = "[]" if arr.size == 0 else _body(float_array(t), indent)
        body = None if tensor_contents is not None else body
    else:
        if not _OPTIONS["edgeitems"]:
            notes.append(f"size={tuple(arr.shape)}")
        if dt not in (default, _dtype._default_complex(), _dtype.int64, _dtype.bool):
            notes.append(f"dtype={dt}")
        if dt is _dtype.complex32:          # pairs of float16: print them as complex
            from ember._kernels.complex32 import to_c64
            arr = to_c64(arr)
        body = None if tensor_contents is not None else _body(arr, indent)
    if tensor_contents is not None:
        body = tensor_contents

    try:
        fn = t.grad_fn
        fn_name = None if fn is None else type(fn).__name__
    except RuntimeError:
        fn_name = "Invalid"
    if fn_name is not None:
        notes.append(f"grad_fn=<{fn_name}>")
    elif t.requires_grad:
        notes.append("requires_grad=True")

    text = _append_notes(opener + body, notes, indent)
    if not plain and any(_is_ember_parameter(c) for c in cls.__mro__):
        text = f"Parameter({text})"
    return text
