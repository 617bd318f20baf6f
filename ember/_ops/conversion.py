"""dtype/device conversion fronts: ``Tensor.to``, ``.float()``..., ``.type()``, and the
matrix-transpose properties. They call op records (``_to_copy``, ``transpose``)."""
from __future__ import annotations

import builtins

from ember import _dtype, _legacy
from ember import _meta_tensor
from ember._device import device as _device_cls, to_device
from ember._ops.core import to_copy, transpose, permute
from ember._ops.registry import public
from ember._tensor import Tensor


_TO_FORMS = (
    " * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, "
    "bool copy = False, *, torch.memory_format memory_format = None)\n"
    " * (torch.dtype dtype, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n"
    " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
    "torch.memory_format memory_format = None)\n")


def _to_error(args, kwargs):
    names = sorted(kwargs)
    got = [_legacy.type_name(builtins.type(a)) for a in args] + \
        [f"{k}={_legacy.type_name(builtins.type(kwargs[k]))}" for k in names]
    got = ", ".join(got) + (", " if names and not args else "")
    return TypeError(f"to() received an invalid combination of arguments - got ({got}), but "
                     f"expected one of:\n{_TO_FORMS}")


def _parse_to(args, kwargs):
    given = dict(kwargs)
    dtype = kwargs.pop("dtype", None)
    dev = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:          # (Note [unknown keywords]: the overload list, keywords reversed)
        from ember._ops.parser_errors import METHOD, keyword_text
        raise TypeError(keyword_text("to", METHOD["to"], list(args), given))
    if dtype is not None and not isinstance(dtype, _dtype.dtype) and \
            not any(dtype is t for t in (float, int, bool, complex)):
        raise _to_error(args, given)
    for k, a in enumerate(args):
        if isinstance(a, Tensor):
            if k or dtype is not None:          # only to(other, non_blocking, copy)
                raise _to_error(args, given)
            dtype = a.dtype
        elif k == 0 and builtins.type(a) is int:      # a device index
            raise RuntimeError("Cannot access accelerator device when none is available.")
        elif isinstance(a, _dtype.dtype) or any(a is t for t in (float, int, complex)):
            # a dtype first, or second after a device: to(float64, float32) matches no form
            if "dtype" in given or dtype is not None or \
                    k > 0 and not (k == 1 and (args[0] is None or
                                               isinstance(args[0], (str, _device_cls)))):
                raise _to_error(args, given)
            dtype = _dtype.to_dtype(a)
        elif isinstance(a, (str, _device_cls)) and k == 0:
            dev = a
        elif isinstance(a, bool):
            copy = a if dtype is not None else copy
        elif a is not None:
            raise _to_error(args, given)
    return dtype, dev, copy, memory_format


@public(method=True, function=False)
def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)``; returns ``self``
    when nothing changes (unless ``copy=True``)."""
    dtype, dev, copy, memory_format = _parse_to(args, kwargs)
    if dev is not None and to_device(dev).type != self.device.type:
        self, copy = _meta_tensor.move(self, to_device(dev)), False
    if dtype is None or dtype is self.dtype:
        result = to_copy(self) if copy else self
    else:
        result = to_copy(self, dtype=_dtype.to_dtype(dtype))
    mf = getattr(memory_format, "name", memory_format)
    if mf not in (None, "preserve_format") and not result.is_contiguous(
            memory_format=memory_format):      # laid out as asked (a copy)
        result = result.contiguous(memory_format=memory_format)
    return result


def _caster(name, d):
    def cast(self, *args, memory_format=None):
        if args or memory_format is not None and not _is_memory_format(memory_format):
            _cast_error(name, args, memory_format)
        return self if self.dtype is d else to_copy(self, dtype=d)
    cast.__name__ = cast.__qualname__ = name
    return cast


def _is_memory_format(v):
    import ember
    return builtins.type(v) is builtins.type(ember.contiguous_format)


def _cast_error(name, args, memory_format):
    """torch's parser TypeErrors of ``x.float(...)`` (no positional argument)."""
    if args:
        raise TypeError(f"{name}() takes 0 positional arguments but {len(args)} "
                        f"{'was' if len(args) == 1 else 'were'} given")
    raise TypeError(f"{name}(): argument 'memory_format' must be torch.memory_format, not "
                    f"{_legacy.type_name(builtins.type(memory_format))}")


for _name, _d in [("float", _dtype.float32), ("double", _dtype.float64), ("half", _dtype.float16),
                  ("bfloat16", _dtype.bfloat16), ("int", _dtype.int32), ("long", _dtype.int64),
                  ("short", _dtype.int16), ("char", _dtype.int8), ("byte", _dtype.uint8),
                  ("bool", _dtype.bool), ("cfloat", _dtype.complex64),
                  ("cdouble", _dtype.complex128)]:
    public(_name, method=True, function=False)(_caster(_name, _d))

public("new", method=True, function=False)(_legacy.new)


def _type_target(tp):
    """The dtype ``Tensor.type(tp)`` casts to: a dtype, a type name ('torch.LongTensor'), a
    typed tensor type (``LongTensor``) or ``Tensor`` (the default dtype)."""
    if isinstance(tp, _dtype.dtype):
        return tp
    if isinstance(tp, str):
        if tp.startswith("torch.cuda."):
            to_device("cuda")
        if tp in _legacy.TYPE_NAMES:
            return _legacy.TYPE_NAMES[tp]
        raise ValueError(f"invalid type: '{tp}'")
    if tp is Tensor:
        return _dtype.default_float()
    if isinstance(tp, _legacy._TensorType):
        return tp.dtype
    if not isinstance(tp, builtins.type):
        raise TypeError("dtype must be a type, str, or dtype object")
    raise ValueError(f"invalid type: '{_legacy.type_name(tp)}'")


@public(method=True, function=False)
def type(self, dtype=None, non_blocking=False, **kwargs):
    """Without arguments the type name ('torch.FloatTensor'); with one, a cast (``self``
    when the dtype already matches)."""
    if dtype is None:
        return _NAME_OF[self.dtype]
    d = _type_target(dtype)
    return self if d is self.dtype else to_copy(self, dtype=d)


_NAME_OF = {d: name for name, d in _legacy.TYPE_NAMES.items()}
_NAME_OF.update({_dtype.quint8: "torch.quantized.QUInt8Tensor",
                 _dtype.qint8: "torch.quantized.QInt8Tensor",
                 _dtype.qint32: "torch.quantized.QInt32Tensor",
                 _dtype.quint4x2: "torch.quantized.QUInt4x2Tensor"})


@public(method=True, function=False)
def type_as(self, other):
    if not isinstance(other, Tensor):
        from ember._ops.parser_errors import tensor_argument
        tensor_argument("type_as", "other", 1, other)
    return to(self, other.dtype)


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.ndim}-D tensor.")
    return transpose(self, -2, -1)


def _T(self):
    if self.ndim not in (0, 2):              # once a process, as torch's
        from ember._runtime_flags import user_stacklevel, warn_once
        warn_once("x.T", "The use of `x.T` on tensors of dimension other than 2 to reverse "
                  "their shape is deprecated and it will throw an error in a future release. "
                  "Consider `x.mT` to transpose batches of matrices or `x.permute(*torch."
                  "arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                  stacklevel=user_stacklevel() + 1)
    return permute(self, tuple(range(self.ndim - 1, -1, -1)))


def _real_prop(self):
    if self.__class__ is Tensor and self._data.dtype.kind not in "cV":   # (type: the method)
        return self                 # torch: ``x.real is x`` for a real tensor
    from ember._ops.core import real
    return real(self)


def _imag_prop(self):
    from ember._ops.core import imag
    return imag(self)


def _set_part(which):
    def setter(self, value):
        getattr(self, which).copy_(value if isinstance(value, Tensor) else
                                   self.new_full(self.shape, value).real)
    return setter


Tensor.real = property(_real_prop, _set_part("real"))
Tensor.imag = property(_imag_prop, _set_part("imag"))
Tensor.mT = property(_mT)
Tensor.T = property(_T)


def _inplace_view(name):
    """``t_``, ``transpose_``, ``squeeze_``...: change ``self``'s view of its memory in place
    (the autograd history becomes that of the corresponding view op)."""
    def method(self, *args, **kwargs):
        from ember._state import state
        if state.grad_enabled and self._requires_grad and self._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        try:
            v = getattr(self, name)(*args, **kwargs)
        except RuntimeError as e:          # torch names the in-place op: "t_() expects..."
            if str(e).startswith(name + "()"):
                raise RuntimeError(name + "_" + str(e)[len(name):]) from None
            raise
        self._data = v._data
        if v._grad_fn is not None:
            from ember.autograd.graph import rename_node
            self._grad_fn, self._output_nr = v._grad_fn, v._output_nr
            rename_node(v._grad_fn, _inplace_view_name(name, args, kwargs))
        from ember.autograd.graph import bump_version
        bump_version(self)
        return self
    method.__name__ = name + "_"
    return method


def _inplace_view_name(name, args, kwargs):
    """torch's node of an in-place view op (``t_`` -> TBackward1, ``squeeze_(0)`` ->
    SqueezeBackward4...)."""
    if name == "squeeze":
        dim = args[0] if args else kwargs.get("dim")
        return "SqueezeBackward" + ("3" if dim is None else "4" if isinstance(dim, int) else "5")
    base = {"t": "T", "unsqueeze": "Unsqueeze", "as_strided": "AsStrided"}.get(name, "Transpose")
    return base + "Backward1"


for _name in ("t", "transpose", "squeeze", "unsqueeze", "swapaxes", "swapdims", "as_strided"):
    public(_name + "_", method=True, function=False)(_inplace_view(_name))


# ---------------------------------------------------------------- apply_ / map_ (Python loops)

def _refuse_grad(name, *tensors):
    if any(t.requires_grad for t in tensors):
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                           f"var.detach().{name}() instead.")


def _write_python_values(self, values):
    """Overwrite ``self`` (any layout) with Python scalars listed in its logical order,
    straight into its memory: torch's loop leaves the version counter alone too."""
    import numbers
    import numpy as np
    from ember._creation import tensor
    for v in values:
        if not isinstance(v, numbers.Number):
            raise TypeError(f"must be real number, not {builtins.type(v).__name__}")
    new = tensor(values, dtype=self.dtype).reshape(self.shape)
    np.copyto(self._data, new._data)
    return self


@public(method=True, function=False)
def apply_(self, callable):
    """``self[i] = callable(self[i])`` for every element, as Python scalars (slow: a loop)."""
    _refuse_grad("apply_", self)
    return _write_python_values(self, [callable(v) for v in self.reshape(-1).tolist()])


@public(method=True, function=False)
def map_(self, tensor, callable):
    """``self[i] = callable(self[i], tensor[i])`` with ``tensor`` broadcast to ``self``."""
    _refuse_grad("map_", self, tensor)
    if tensor.dtype != self.dtype:
        raise TypeError(f"map_: expected {_NAME_OF[self.dtype]} for 'other' "
                        f"(got {_NAME_OF[tensor.dtype]})")
    others = tensor.expand(self.shape).reshape(-1).tolist()
    mine = self.reshape(-1).tolist()
    return _write_python_values(self, [callable(a, b) for a, b in zip(mine, others)])


@public(method=True, function=False)
def map2_(self, x, y, callable):
    """``self[i] = callable(self[i], x[i], y[i])`` with ``x`` and ``y`` broadcast to ``self``."""
    _refuse_grad("map2_", self, x, y)
    for arg, t in (("x", x), ("y", y)):
        if t.dtype != self.dtype:
            raise TypeError(f"map2_: expected {_NAME_OF[self.dtype]} for argument '{arg}' "
                            f"(got {_NAME_OF[t.dtype]})")
    xs, ys = (t.expand(self.shape).reshape(-1).tolist() for t in (x, y))
    mine = self.reshape(-1).tolist()
    return _write_python_values(self, [callable(a, b, c) for a, b, c in zip(mine, xs, ys)])


@public(method=True, function=False)
def get_device(self):
    """The device index: -1 for CPU tensors (all of ember's)."""
    return -1


@public(method=True, function=False)
def const_data_ptr(self):
    """The address of the first element (read-only intent), as ``data_ptr()``."""
    return self.data_ptr()


@public(method=True, function=False)
def pin_memory(self, device=None):
    """Page-locked memory needs an accelerator: refused as a CPU-only torch refuses it."""
    raise RuntimeError("Cannot access accelerator device when none is available.")


@public(method=True, function=False)
def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (stride order, ties by position);
    ``ambiguity_check``: refuse layouts with more than one such order (size-1 or equal
    strides), or (a list of memory formats) those that match none of them exactly."""
    strides = self.stride()
    order = tuple(sorted(range(self.dim()), key=lambda d: (-strides[d], d)))
    if ambiguity_check is False:
        return order
    if ambiguity_check is not True and not isinstance(ambiguity_check, (list, tuple)):
        raise TypeError("dim_order(): ambiguity_check must be a bool or a list of memory "
                        "formats")
    ambiguous = len(set(strides)) < len(strides) or 1 in self.shape
    if isinstance(ambiguity_check, (list, tuple)):
        ambiguous = not any(self.is_contiguous(memory_format=f) for f in ambiguity_check)
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                           "exact one of the given memory formats.")
    return order


@public(method=True, function=False)
def resize(self, *sizes):
    """Deprecated: ``self.clone().resize_(*sizes)`` with torch's warning."""
    import warnings
    warnings.warn("non-inplace resize is deprecated")
    return self.detach().clone().resize_(*sizes)


@public(method=True, function=False)
def resize_as(self, tensor):
    """Deprecated: ``self.clone().resize_as_(tensor)`` with torch's warning."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated")
    return self.detach().clone().resize_(tensor.shape)


@public(method=True, function=False)
def orgqr(self, input2):
    """``torch.linalg.householder_product(self, input2)``."""
    import ember
    return ember.linalg.householder_product(self, input2)


@public(method=True, function=False)
def module_load(self, other, assign=False):
    """What ``load_state_dict`` swaps in for ``self`` from the state dict's ``other``
    (with ``torch.__future__``'s swap): ``other`` detached when assigning, else ``self``
    with ``other`` copied in, detached."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


@public(method=True)
def adjoint(input):
    """The conjugate transpose of the last two dims (``mH``) of a (batch of) matrices."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    return input.mH
