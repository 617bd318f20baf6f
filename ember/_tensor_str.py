"""Tensor printing, as torch 2.13 prints (``torch/_tensor_str.py`` logic on NumPy arrays).

``repr(t)``: ``tensor([1., 2., 3.])``; precision 4, fixed or scientific notation chosen from
the range of the values, alignment across elements, summarisation with ``...`` above
``threshold`` elements, line wrapping at ``linewidth``, and the suffixes torch adds
(``size=``, ``dtype=``, ``requires_grad=True``, ``grad_fn=<...>``). Printing reads the
array directly: it never dispatches ops, so it is invisible to modes (profiler, tracer).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np

from ember import _dtype

__all__ = ["set_printoptions", "get_printoptions", "printoptions"]


@dataclasses.dataclass
class __PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = __PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set options for printing (torch.set_printoptions).

    Args:
        precision: digits of precision for floating point output (default 4).
        threshold: total number of elements above which the repr is summarised (1000).
        edgeitems: items shown at the start and end of each summarised dimension (3).
        linewidth: characters per line before wrapping (80).
        profile: ``"default"``, ``"short"`` or ``"full"`` presets (others override them).
        sci_mode: force (True) or disable (False) scientific notation; ``None`` chooses.
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
        elif profile == "short":
            PRINT_OPTS.precision = 2
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 2
            PRINT_OPTS.linewidth = 80
        elif profile == "full":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = math.inf
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    """The current options, as keyword arguments for ``set_printoptions``."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


# ------------------------------------------------------------------------------ formatting

def _is_float_dtype(a):
    return a.dtype.kind == "f" or a.dtype == _dtype.bfloat16.np


def _as_py_floats(a):
    """Values as float64 (exactly the Python floats torch's ``item()`` gives)."""
    return a.astype(np.float64)


class _Formatter:
    def __init__(self, a):
        self.floating_dtype = _is_float_dtype(a)
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = a.reshape(-1)
        if not self.floating_dtype:
            if flat.size:
                if flat.dtype == np.bool_:
                    self.max_width = 5 if (~flat).any() else 4
                else:
                    self.max_width = max(1, max(len(str(v)) for v in
                                                (flat.min().item(), flat.max().item())))
            return
        vals = _as_py_floats(flat)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:
            return
        absv = np.abs(nz)
        vmin, vmax = float(absv.min()), float(absv.max())
        self.int_mode = bool((nz == np.ceil(nz)).all())
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        values = nz.tolist()
        if self.int_mode:
            if self.sci_mode:
                fmt = f"{{:.{p}e}}"
                self.max_width = max(self.max_width, max(len(fmt.format(v)) for v in values))
            else:
                self.max_width = max(self.max_width,
                                     max(len(f"{v:.0f}") for v in values) + 1)
        else:
            fmt = f"{{:.{p}e}}" if self.sci_mode else f"{{:.{p}f}}"
            self.max_width = max(self.max_width, max(len(fmt.format(v)) for v in values))

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating_dtype:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{p}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{p}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _tolist(a):
    """Python values of a 1-D array (floats as float64, like ``Tensor.tolist``)."""
    if _is_float_dtype(a):
        return _as_py_floats(a).tolist()
    if a.dtype.kind == "c":
        return a.astype(np.complex128).tolist()
    return a.tolist()


def _scalar_str(a, formatter1, formatter2=None):
    if formatter2 is not None:
        real_str = _scalar_str(a.real, formatter1)
        imag_str = (_scalar_str(a.imag, formatter2) + "j").lstrip()
        if imag_str[0] == "+" or imag_str[0] == "-":
            return real_str + imag_str
        return real_str + "+" + imag_str
    v = a.reshape(())
    v = float(v) if _is_float_dtype(a) else v.item()
    return formatter1.format(v)


def _vector_str(a, indent, summarize, formatter1, formatter2=None):
    element_length = formatter1.width() + 2
    if formatter2 is not None:
        element_length += formatter2.width() + 1
    elements_per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))

    def _val_formatter(val):
        if formatter2 is not None:
            real_str = formatter1.format(val.real)
            imag_str = (formatter2.format(val.imag) + "j").lstrip()
            if imag_str[0] == "+" or imag_str[0] == "-":
                return real_str + imag_str
            return real_str + "+" + imag_str
        return formatter1.format(val)

    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [_val_formatter(v) for v in _tolist(a[:e])] + [" ..."] + \
            [_val_formatter(v) for v in _tolist(a[-e:])]
    else:
        data = [_val_formatter(v) for v in _tolist(a)]
    lines = [", ".join(data[i:i + elements_per_line])
             for i in range(0, len(data), elements_per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(a, indent, summarize, formatter1, formatter2=None):
    dim = a.ndim
    if dim == 0:
        return _scalar_str(a, formatter1, formatter2)
    if dim == 1:
        return _vector_str(a, indent, summarize, formatter1, formatter2)
    e = PRINT_OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
                  for i in range(e)] + ["..."] + \
                 [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
                  for i in range(a.shape[0] - e, a.shape[0])]
    else:
        slices = [_tensor_str_with_formatter(a[i], indent + 1, summarize, formatter1, formatter2)
                  for i in range(a.shape[0])]
    tensor_str = ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices)
    return "[" + tensor_str + "]"


def get_summarized_data(a):
    """The elements a summarised print shows (edge items of every dimension)."""
    dim = a.ndim
    if dim == 0:
        return a
    e = PRINT_OPTS.edgeitems
    if dim == 1:
        if a.shape[0] > 2 * e:
            return np.concatenate((a[:e], a[-e:]))
        return a
    if not e:
        return a[tuple(slice(0, 0) for _ in range(dim))]
    if a.shape[0] > 2 * e:
        rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0]))
    else:
        rows = range(a.shape[0])
    return np.stack([get_summarized_data(a[i]) for i in rows])


def _tensor_str(a, indent):
    if a.size == 0:
        return "[]"
    summarize = a.size > PRINT_OPTS.threshold
    if a.dtype.kind == "c":
        real, imag = a.real, a.imag
        real_formatter = _Formatter(get_summarized_data(real) if summarize else real)
        imag_formatter = _Formatter(get_summarized_data(imag) if summarize else imag)
        return _tensor_str_with_formatter(a, indent, summarize, real_formatter, imag_formatter)
    formatter = _Formatter(get_summarized_data(a) if summarize else a)
    return _tensor_str_with_formatter(a, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _is_parameter_class(cls):
    return any(c.__name__ == "Parameter" and c.__module__.startswith("ember")
               for c in cls.__mro__)


def _str_intern(inp, *, tensor_contents=None):
    from ember._tensor import Tensor
    cls = type(inp)
    is_plain_tensor = cls is Tensor or (cls.__name__ == "Parameter" and
                                        cls.__module__.startswith("ember"))
    prefix = "tensor(" if is_plain_tensor else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    custom_contents_provided = tensor_contents is not None
    if custom_contents_provided:
        tensor_str = tensor_contents
    a = inp._data
    dt = inp.dtype
    default = _dtype.get_default_dtype()
    has_default_dtype = dt in (default, _dtype._default_complex(), _dtype.int64, _dtype.bool)
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dt is not default:
            suffixes.append("dtype=" + str(dt))
        if not custom_contents_provided:
            tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(a.shape)))
        if not has_default_dtype:
            suffixes.append("dtype=" + str(dt))
        if not custom_contents_provided:
            tensor_str = _tensor_str(a, indent)

    grad_fn_name = None
    try:
        grad_fn = inp.grad_fn
    except RuntimeError:
        grad_fn_name = "Invalid"
        grad_fn = None
    if grad_fn_name is None and grad_fn is not None:
        grad_fn_name = type(grad_fn).__name__
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif inp.requires_grad:
        suffixes.append("requires_grad=True")

    string_repr = _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)
    if not is_plain_tensor and _is_parameter_class(cls):
        string_repr = f"Parameter({string_repr})"
    return string_repr


def _str(self, *, tensor_contents=None):
    return _str_intern(self, tensor_contents=tensor_contents)


def tensor_repr(t, *, tensor_contents=None):
    """``repr(t)`` as torch prints it."""
    return _str_intern(t, tensor_contents=tensor_contents)
