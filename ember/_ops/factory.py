"""Factory op records and their fronts.

Every factory is an op record, so modes (profiler, tracer, func transforms) see it:
``zeros``, ``ones``, ``full``, ``empty``, ``empty_strided``, ``eye``, ``arange``, ``range``,
``linspace``, ``logspace``, the ``*_like`` family (records taking the input tensor, so they
keep its layout like torch's ``preserve_format``), ``Tensor.new_*`` and ``complex`` /
``polar``. The fronts parse torch's argument conventions (``zeros(2, 3)``,
``zeros((2, 3))``, ``dtype=``, ``out=``, ``device=``, ``requires_grad=``) and hand the
records concrete arguments: sizes as tuples of ints, a resolved dtype.
"""
from __future__ import annotations

import builtins
import numbers
import operator
import warnings

import numpy as np

from ember import _dtype
from ember._determinism import fill_uninitialized
from ember._device import to_device
from ember._kernels import factory as K
from ember._ops.parser_errors import factory_keywords
from ember._ops.registry import OpDef, defop, public
from ember._tensor import Tensor

# ------------------------------------------------------------------------------ records

zeros_op = OpDef("zeros(SymInt[] size, *, ScalarType dtype) -> Tensor", K.zeros, promote=None)
ones_op = OpDef("ones(SymInt[] size, *, ScalarType dtype) -> Tensor", K.ones, promote=None)
full_op = OpDef("full(SymInt[] size, Scalar fill_value, *, ScalarType dtype) -> Tensor", K.full,
                promote=None)


def _uninitialized(kernel):
    """An ``empty``-family kernel whose memory is filled under deterministic mode."""
    def run(*args, **kwargs):
        return fill_uninitialized(kernel(*args, **kwargs))
    run.__name__ = kernel.__name__
    return run


empty_op = OpDef("empty(SymInt[] size, *, ScalarType dtype, MemoryFormat? memory_format=None)"
                 " -> Tensor", _uninitialized(K.empty), promote=None)
empty_strided_op = OpDef("empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType dtype)"
                         " -> Tensor", _uninitialized(K.empty_strided), promote=None)
eye_op = OpDef("eye.m(SymInt n, SymInt m, *, ScalarType dtype) -> Tensor", K.eye, promote=None)
arange_op = OpDef("arange.start_step(Scalar start, Scalar end, Scalar step=1, *, "
                  "ScalarType dtype) -> Tensor", K.arange, promote=None)
range_op = OpDef("range.step(Scalar start, Scalar end, Scalar step=1, *, ScalarType dtype)"
                 " -> Tensor", K.range_, promote=None)
linspace_op = OpDef("linspace(Scalar start, Scalar end, int steps, *, ScalarType dtype)"
                    " -> Tensor", K.linspace, promote=None)
logspace_op = OpDef("logspace(Scalar start, Scalar end, int steps, float base=10.0, *, "
                    "ScalarType dtype) -> Tensor", K.logspace, promote=None)

_LIKE = ", *, ScalarType? dtype=None, MemoryFormat? memory_format=None) -> Tensor"
zeros_like_op = OpDef("zeros_like(Tensor self" + _LIKE, K.zeros_like, promote=None,
                      differentiable=False)
ones_like_op = OpDef("ones_like(Tensor self" + _LIKE, K.ones_like, promote=None,
                     differentiable=False)
empty_like_op = OpDef("empty_like(Tensor self" + _LIKE, _uninitialized(K.empty_like),
                      promote=None,
                      differentiable=False)
full_like_op = OpDef("full_like(Tensor self, Scalar fill_value" + _LIKE, K.full_like,
                     promote=None, differentiable=False)

complex_op = defop("complex(Tensor real, Tensor imag) -> Tensor", K.complex_, promote=None,
                   method=False)
polar_op = defop("polar(Tensor abs, Tensor angle) -> Tensor", K.polar, promote=None,
                 method=False, saves=("abs", "angle"))


def _imag_part(z):
    """imag(z) in ember ops: real(z * -i), with -i as a 0-d tensor so that the product's
    backward conjugates it."""
    from ember._ops.core import real as real_op
    return real_op(z * full_op((), -1j, dtype=z.dtype))


@complex_op.def_backward
def _(ctx, g, real, imag):
    from ember._ops.core import real as real_op
    n = ctx.needs_input_grad
    return (real_op(g) if n[0] else None), (_imag_part(g) if n[1] else None)


@polar_op.def_backward
def _(ctx, g, abs, angle):
    # out = abs * u with u = exp(i angle): d/dabs = u, d/dangle = i * abs * u; PyTorch's
    # convention for real inputs of a complex function: grad = real(g * conj(derivative))
    from ember._ops.core import real as real_op
    n = ctx.needs_input_grad
    unit = polar_op(ones_like_op(abs, dtype=None, memory_format=None), angle)
    gu = g * unit.conj()
    return (real_op(gu) if n[0] else None), (_imag_part(gu) * abs if n[1] else None)


# ------------------------------------------------------------------------------ helpers

def _tname(x):
    return type(x).__name__


def _as_dim(s):
    """An int size entry, or None when ``s`` is not one (bool, float, non-integer tensor)."""
    t = type(s)
    if t is int:
        return s
    if t is builtins.bool or isinstance(s, (builtins.bool, np.bool_)):
        return None
    if isinstance(s, Tensor):
        if s.ndim == 0 and s.dtype.is_integer:
            return int(s.item())
        return None
    try:
        return operator.index(s)
    except TypeError:
        return None


def seq_size(size, fname, pos=1):
    """A ``size`` argument that must be a sequence of ints (``full(size, ...)``); ``pos``
    None: given by keyword."""
    if isinstance(size, (tuple, list)):
        return _dims(size, fname, "size", pos)
    raise TypeError(f"{fname}(): argument 'size' (position {pos}) must be tuple of ints, not "
                    f"{_tname(size)}")


def _dims(seq, fname, argname, pos):
    """The ints of list ``seq``, checked as torch's parser does (Note [int lists] in
    ember/_dispatch.py): it takes the list by its first element (no bool there; a bad one is
    "must be tuple of ints, but found element of type float at pos 0", or by keyword "must
    be tuple of ints, not tuple"), and unpacks the rest ("failed to unpack ... at pos 2")."""
    out = []
    for i, s in enumerate(seq):
        d = _as_dim(s)
        if d is None and i and isinstance(s, (builtins.bool, np.bool_)):
            d = int(s)
        if d is None:
            if i == 0 and pos is None:
                raise TypeError(f"{fname}(): argument '{argname}' must be tuple of ints, not "
                                f"{_tname(seq)}")
            if i == 0:
                raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple "
                                f"of ints, but found element of type {_tname(s)} at pos 0")
            raise TypeError(f"{fname}(): argument '{argname}' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{_tname(s)}\"")
        out.append(d)
    return tuple(out)


def var_size(args, fname, size_kw=None):
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(torch.Size)`` and ``f(size=(2, 3))``."""
    if size_kw is not None:
        if args:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        return seq_size(size_kw, fname, None)
    if len(args) == 1:
        a = args[0]
        if isinstance(a, (tuple, list)):
            return seq_size(a, fname)
        d = _as_dim(a)
        if d is None:
            raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{_tname(a)}")
        return (d,)
    if not args:
        raise TypeError(f"{fname}() missing 1 required positional arguments: \"size\"")
    if _as_dim(args[0]) is None:          # torch's parser: then no varargs list at all
        raise TypeError(f"{fname}() takes 1 positional argument but {len(args)} were given")
    return seq_size(args, fname)


# back-compat name used by other modules
def size_args(size):
    return var_size(size, "size")


def resolve_dtype(dtype, out=None, default=None, fname="tensor"):
    """The dtype a factory makes: ``dtype=``, else ``out``'s, else ``default()``."""
    if dtype is None:
        if out is not None and isinstance(out, Tensor):
            return out.dtype
        return (default or _dtype.default_float)()
    d = _dtype.dtype_argument(dtype, fname)
    if out is not None and isinstance(out, Tensor) and out.dtype is not d:
        raise RuntimeError(f"dtype {_dtype.scalar_type_name(d)} does not match dtype of out "
                           f"parameter ({_dtype.scalar_type_name(out.dtype)})")
    return d


# factories torch parses with one signature: a requires_grad that is no bool is named
_ONE_SIGNATURE = frozenset(("zeros", "ones", "full", "empty"))


def finish(t, requires_grad, fname=None):
    if type(requires_grad) is not builtins.bool and requires_grad is not None and \
            fname in _ONE_SIGNATURE:
        from ember._legacy import type_name
        raise TypeError(f"{fname}(): argument 'requires_grad' must be bool, not "
                        f"{type_name(type(requires_grad))}")
    if requires_grad:
        if not (t.is_floating_point() or t.is_complex()):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad_(True)
    return t


def _make(op, args, kwargs, out, requires_grad):
    if out is not None:
        r = op(*args, **kwargs, out=out)
    else:
        r = op(*args, **kwargs)
    return finish(r, requires_grad, getattr(op, "public_name", None))


def _number(x, fname, argname, pos):
    """A Python number from a number, NumPy scalar or 0-d tensor (torch's ``Number``)."""
    if isinstance(x, Tensor):
        if x.ndim != 0:
            raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Number, "
                            f"not Tensor")
        return x.item()
    if isinstance(x, builtins.bool):
        return x
    if isinstance(x, np.bool_):          # no bool to torch's parser: a float
        return float(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, numbers.Complex):
        return complex(x)
    raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be Number, not "
                    f"{_tname(x)}")


def _number_kind(x):
    """0 bool, 1 integer, 2 floating, 3 complex (the category of a factory argument)."""
    if isinstance(x, Tensor):
        return x.dtype._category
    if isinstance(x, builtins.bool):
        return 0
    if isinstance(x, np.bool_):
        return 2
    if isinstance(x, numbers.Integral):
        return 1
    if isinstance(x, numbers.Real):
        return 2
    return 3


def _fill_dtype(fill_value):
    """full's dtype inference: bool -> bool, integer -> int64, complex -> default complex,
    anything else -> the default float dtype."""
    k = _number_kind(fill_value)
    return (_dtype.bool, _dtype.int64, _dtype.default_float(), _dtype._default_complex())[k]


# ------------------------------------------------------------------------------ fronts

@public()
def zeros(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False, **kw):
    """A tensor of zeros of the given size."""
    to_device(device)
    shape = var_size(size, "zeros", _size_kw(kw, "zeros"))
    d = resolve_dtype(dtype, out, fname="zeros")
    return _make(zeros_op, (shape,), {"dtype": d}, out, requires_grad)


@public()
def ones(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False, **kw):
    """A tensor of ones of the given size."""
    to_device(device)
    shape = var_size(size, "ones", _size_kw(kw, "ones"))
    d = resolve_dtype(dtype, out, fname="ones")
    return _make(ones_op, (shape,), {"dtype": d}, out, requires_grad)


@public()
def empty(*size, out=None, dtype=None, layout=None, device=None, pin_memory=False,
          requires_grad=False, memory_format=None, **kw):
    """An uninitialised tensor (ember fills it with zeros)."""
    to_device(device)
    shape = var_size(size, "empty", _size_kw(kw, "empty"))
    return _make(empty_op, (shape,), {"dtype": resolve_dtype(dtype, out, fname="empty"),
                                      "memory_format": memory_format}, out, requires_grad)


def _size_kw(kw, fname):
    size = kw.pop("size", None)
    if kw:
        raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kw))}'")
    return size


@public()
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
         requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it)."""
    to_device(device)
    shape = seq_size(size, "full")
    fill = _number(fill_value, "full", "fill_value", 2)
    d = resolve_dtype(dtype, out, lambda: _fill_dtype(fill_value), fname="full")
    return _make(full_op, (shape, fill), {"dtype": d}, out, requires_grad)


@public()
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialised tensor with the given strides (in elements)."""
    to_device(device)
    shape = seq_size(size, "empty_strided")
    st = _int_seq(stride, "empty_strided", "stride", 2)
    d = resolve_dtype(dtype, fname="empty_strided")
    return finish(empty_strided_op(shape, st, dtype=d), requires_grad)


def _int_seq(seq, fname, argname, pos):
    if not isinstance(seq, (tuple, list)):
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be tuple of ints, "
                        f"not {_tname(seq)}")
    return _dims(seq, fname, argname, pos)


def _int_arg(x, fname, argname, pos):
    d = _as_dim(x)
    if d is None:
        raise TypeError(f"{fname}(): argument '{argname}' (position {pos}) must be int, not "
                        f"{_tname(x)}")
    return d


@public()
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
        requires_grad=False, **_kw):
    """A 2-D tensor with ones on the diagonal."""
    if _kw:
        factory_keywords("eye", _kw)
    to_device(device)
    n = _int_arg(n, "eye", "n", 1)
    m = n if m is None else _int_arg(m, "eye", "m", 2)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    d = resolve_dtype(dtype, out, fname="eye")
    return _make(eye_op, (n, m), {"dtype": d}, out, requires_grad)


def _range_args(fname, start, end, step):
    single = False
    if end is None:
        if start is None:
            raise TypeError(f"{fname}() missing required argument 'end'")
        start, end, single = 0, start, True
    elif start is None:
        start = 0
    names = ("start", "end", "step")
    raw = (start, end, step)
    vals = tuple(_number(v, fname, n, i + (0 if single else 1))
                 for i, (v, n) in enumerate(zip(raw, names)))
    return raw, vals


@public()
def arange(start=None, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           pin_memory=False, requires_grad=False, **_kw):
    """Values from ``start`` up to (excluding) ``end`` by ``step``: int64 for integer
    arguments, the default float dtype when any is floating-point."""
    if _kw:
        factory_keywords("arange", _kw)
    if type(start) is int and end is None and step == 1 and type(step) is int and \
            dtype is None and out is None and device is None:       # arange(n)
        return _make(arange_op, (0, start, 1), {"dtype": _dtype.int64}, None, requires_grad)
    to_device(device)
    raw, (s, e, st) = _range_args("arange", start, end, step)
    cat = builtins.max(builtins.max(_number_kind(v) for v in raw), 1)
    d = resolve_dtype(dtype, out, lambda: _dtype.int64 if cat == 1 else
                      _dtype.default_float() if cat == 2 else _dtype._default_complex(),
                      fname="arange")
    return _make(arange_op, (s, e, st), {"dtype": d}, out, requires_grad)


@public()
def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
          pin_memory=False, requires_grad=False):
    """Deprecated: values from ``start`` to ``end`` inclusive (default float dtype)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    to_device(device)
    if end is None:
        raise TypeError("range() missing required argument 'end' (pos 2)")
    s, e, st = (_number(v, "range", n, i + 1)
                for i, (v, n) in enumerate(zip((start, end, step), ("start", "end", "step"))))
    d = resolve_dtype(dtype, out, fname="range")
    return _make(range_op, (s, e, st), {"dtype": d}, out, requires_grad)


def _space_args(fname, start, end, steps):
    for v, n in ((start, "start"), (end, "end")):
        if isinstance(v, Tensor) and v.ndim != 0:
            raise RuntimeError(f"{fname} only supports 0-dimensional start and end tensors, but "
                               f"got start with {getattr(start, 'ndim', 0)} dimension(s) and end "
                               f"with {getattr(end, 'ndim', 0)} dimension(s).")
    if steps is None:
        raise TypeError(f"{fname}() missing required argument 'steps' (pos 3)")
    s = _number(start, fname, "start", 1)
    e = _number(end, fname, "end", 2)
    n = _int_arg(steps, fname, "steps", 3)
    cplx = _number_kind(start) == 3 or _number_kind(end) == 3
    return s, e, n, cplx


@public()
def linspace(start, end, steps=None, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=False, requires_grad=False, **_kw):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if _kw:
        factory_keywords("linspace", _kw)
    to_device(device)
    s, e, n, cplx = _space_args("linspace", start, end, steps)
    d = resolve_dtype(dtype, out, _dtype._default_complex if cplx else None, fname="linspace")
    return _make(linspace_op, (s, e, n), {"dtype": d}, out, requires_grad)


@public()
def logspace(start, end, steps=None, base=10.0, *, out=None, dtype=None, layout=None,
             device=None, pin_memory=False, requires_grad=False):
    """``base ** linspace(start, end, steps)``."""
    to_device(device)
    s, e, n, cplx = _space_args("logspace", start, end, steps)
    b = _number(base, "logspace", "base", 4)
    d = resolve_dtype(dtype, out, _dtype._default_complex if cplx else None, fname="logspace")
    return _make(logspace_op, (s, e, n, float(b) if not isinstance(b, complex) else b),
                 {"dtype": d}, out, requires_grad)


# ------------------------------------------------------------------------------ *_like

def check_input(input, fname):
    """``input`` must be a tensor (or a tensor-like taking part in __torch_function__)."""
    if not isinstance(input, Tensor) and not hasattr(type(input), "__torch_function__"):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{_tname(input)}")


def _like_front(op, name, extra_arg=None):
    """Build ``zeros_like``-style fronts (a record call, plus requires_grad/device)."""
    if extra_arg is None:
        def front(input, *, dtype=None, layout=None, device=None, requires_grad=False,
                  memory_format=None):
            check_input(input, name)
            to_device(device)
            d = None if dtype is None else _dtype.dtype_argument(dtype, name)
            return finish(op(input, dtype=d, memory_format=memory_format), requires_grad)
    else:
        def front(input, fill_value, *, dtype=None, layout=None, device=None,
                  requires_grad=False, memory_format=None):
            check_input(input, name)
            to_device(device)
            d = None if dtype is None else _dtype.dtype_argument(dtype, name)
            fill = _number(fill_value, name, "fill_value", 2)
            return finish(op(input, fill, dtype=d, memory_format=memory_format), requires_grad)
    front.__name__ = front.__qualname__ = name
    front.__doc__ = f"A tensor like ``input`` (shape, dtype, layout) from the ``{op.name}`` " \
                    f"record."
    return public(name)(front)


zeros_like = _like_front(zeros_like_op, "zeros_like")
ones_like = _like_front(ones_like_op, "ones_like")
empty_like = _like_front(empty_like_op, "empty_like")
full_like = _like_front(full_like_op, "full_like", "fill_value")


# ------------------------------------------------------------------------------ new_*

def _new(op, self, shape, dtype, device, requires_grad, *extra):
    to_device(device)
    d = self.dtype if dtype is None else _dtype.dtype_argument(dtype, f"new_{op.public_name}")
    if any(s < 0 for s in shape):         # torch's message (zeros' own differs)
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{next(s for s in shape if s < 0)}: {list(shape)}")
    return finish(op(shape, *extra, dtype=d), requires_grad)


@public(method=True, function=False)
def new_zeros(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False, **kw):
    return _new(zeros_op, self, var_size(size, "new_zeros", _size_kw(kw, "new_zeros")), dtype,
                device, requires_grad)


@public(method=True, function=False)
def new_ones(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False, **kw):
    return _new(ones_op, self, var_size(size, "new_ones", _size_kw(kw, "new_ones")), dtype,
                device, requires_grad)


@public(method=True, function=False)
def new_empty(self, *size, dtype=None, layout=None, device=None, pin_memory=False,
              requires_grad=False, **kw):
    to_device(device)
    d = self.dtype if dtype is None else _dtype.dtype_argument(dtype, "new_empty")
    shape = var_size(size, "new_empty", _size_kw(kw, "new_empty"))
    return finish(empty_op(shape, dtype=d), requires_grad)


@public(method=True, function=False)
def new_full(self, size, fill_value, *, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    return _new(full_op, self, seq_size(size, "new_full"), dtype, device, requires_grad,
                _number(fill_value, "new_full", "fill_value", 2))


@public(method=True, function=False)
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    to_device(device)
    d = self.dtype if dtype is None else _dtype.dtype_argument(dtype, "new_empty_strided")
    return finish(empty_strided_op(seq_size(size, "new_empty_strided"),
                                   _int_seq(stride, "new_empty_strided", "stride", 2), dtype=d),
                  requires_grad)


@public(method=True, function=False)
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    from ember._creation import _new_tensor
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    return _new_tensor(data, self.dtype if dtype is None else dtype, device, requires_grad)
