"""dtype/device conversion fronts: ``Tensor.to``, ``.float()``..., ``.type()``, and the
matrix-transpose properties. They call op records (``_to_copy``, ``transpose``)."""
from __future__ import annotations

import builtins
import numbers

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


# Note [to overloads]: torch's parser tries ``to``'s three forms in order (_TO_FORMS); the
# first whose arguments all fit is taken. A device is a str, torch.device, an int index or
# None (form 1 only); a dtype a torch.dtype or Python's float/int/bool/complex; the
# ``tensor`` of form 3 a Tensor or a Python number, which becomes a 0-d tensor first
# (``x.to(1.5)`` is float64, ``x.to(True)`` bool); non_blocking/copy only a bool;
# memory_format a memory format or None. When no form fits, five arguments fit only form
# 1's count and get its own message (too many positional, a repeated, mistyped or unknown
# argument); any other count gets the overload list with the keywords in reverse order.
_TO_PARAMS = (("device", "dtype", "non_blocking", "copy"), ("dtype", "non_blocking", "copy"),
              ("tensor", "non_blocking", "copy"))
_PY_DTYPES = ((float, _dtype.float64), (int, _dtype.int64), (bool, _dtype.bool),
              (complex, _dtype.complex128))
_SHOWN = {"device": "torch.device", "dtype": "torch.dtype", "non_blocking": "bool",
          "copy": "bool", "memory_format": "torch.memory_format"}


def _py_dtype(v):
    for t, d in _PY_DTYPES:
        if v is t:
            return d
    return None


def _fits(name, v, form):
    if name == "device":
        return v is None and form == 0 or isinstance(v, (str, _device_cls)) or \
            isinstance(v, numbers.Integral) and not isinstance(v, bool)
    if name == "dtype":
        return v is None and form == 0 or isinstance(v, _dtype.dtype) or \
            _py_dtype(v) is not None
    if name == "tensor":
        return isinstance(v, (Tensor, numbers.Number))
    if name == "memory_format":
        return v is None or _is_memory_format(v)
    return builtins.type(v) is bool                 # non_blocking, copy


def _bind_to(form, args, kwargs):
    """``to``'s arguments bound to form ``form`` (a dict), or None when they do not fit."""
    names = _TO_PARAMS[form]
    if len(args) > len(names):
        return None
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k == "memory_format":
            continue
        if k not in names or k in bound:
            return None
        bound[k] = v
    if form and names[0] not in bound:
        return None
    if not _fits("memory_format", kwargs.get("memory_format"), form):
        return None
    for k, v in bound.items():
        if not _fits(k, v, form):
            return None
    return bound


def _to_error(args, kwargs):
    """torch's TypeError for ``to`` arguments no form takes (Note [to overloads])."""
    if len(args) + len(kwargs) == 5:              # only the device form takes five
        params = _TO_PARAMS[0] + ("memory_format",)
        if len(args) > 4:
            return TypeError(f"to() takes from 0 to 4 positional arguments but {len(args)} "
                             f"were given")
        for i, name in enumerate(params):
            if i < len(args) and name in kwargs:
                return TypeError(f"to() got multiple values for argument '{name}'")
            if i < len(args) or name in kwargs:
                v = args[i] if i < len(args) else kwargs[name]
                if not _fits(name, v, 0):
                    where = f" (position {i + 1})" if i < len(args) else ""
                    return TypeError(f"to(): argument '{name}'{where} must be {_SHOWN[name]}, "
                                     f"not {_legacy.type_name(builtins.type(v))}")
        bad = [k for k in kwargs if k not in params]
        if bad:
            return TypeError(f"to() got an unexpected keyword argument '{bad[0]}'")
    from ember._ops.parser_errors import _got, _type_name
    shown = dict(reversed(list(kwargs.items())))
    forms = _TO_FORMS
    if len(args) + len(kwargs) == 6:          # torch explains the device form at six
        why = "some of the keywords were incorrect: " + ", ".join(shown) if kwargs else \
            "some of the arguments have invalid types: (" + \
            ", ".join(f"!{_type_name(a)}!" for a in args) + ")"
        first, rest = forms.split("\n", 1)
        forms = f"{first}\n      didn't match because {why}\n{rest}"
    return TypeError(f"to() received an invalid combination of arguments - got "
                     f"({_got(list(args), shown)}), but expected one of:\n{forms}")


def _parse_to(args, kwargs):
    """(dtype, device, copy, memory_format) of a ``to`` call (Note [to overloads])."""
    for form in range(3):
        bound = _bind_to(form, args, kwargs)
        if bound is not None:
            break
    else:
        raise _to_error(args, kwargs)
    dev = bound.get("device")
    if form == 2:
        other = bound["tensor"]
        if isinstance(other, Tensor):
            dtype, dev = other.dtype, other.device
        else:                                     # a number: as its 0-d tensor
            dtype = _dtype.bool if isinstance(other, bool) else \
                _dtype.int64 if isinstance(other, numbers.Integral) else \
                _dtype.float64 if isinstance(other, numbers.Real) else _dtype.complex128
    else:
        dtype = bound.get("dtype")
        if dtype is not None and not isinstance(dtype, _dtype.dtype):
            dtype = _py_dtype(dtype)
    if isinstance(dev, numbers.Integral):         # an accelerator's index
        if dev < 0:
            raise RuntimeError("Device index must not be negative")
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return dtype, dev, bound.get("copy", False), kwargs.get("memory_format")


def _suggested_format(t):
    """torch's ``suggest_memory_format`` of ``t``, by name."""
    if t.ndim in (4, 5):
        from ember._kernels.layout import suggests_channels_last
        if suggests_channels_last(t._data):
            return "channels_last" if t.ndim == 4 else "channels_last_3d"
    return "contiguous_format"


@public(method=True, function=False)
def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(other)``, ``to(device, dtype)`` with
    ``non_blocking``, ``copy`` and ``memory_format`` (Note [to overloads]); returns
    ``self`` when nothing changes: the same dtype and device (a device with an index is a
    change), no ``copy``, and a memory format that is ``preserve_format`` or the one
    ``self`` suggests. Else one differentiable ``_to_copy``."""
    if not kwargs and len(args) == 1 and isinstance(args[0], _dtype.dtype):    # to(dtype)
        return self if args[0] is self.dtype else to_copy(self, dtype=_dtype._used(args[0]))
    dtype, dev, copy, memory_format = _parse_to(args, kwargs)
    if dtype is not None:
        dtype = _dtype._used(dtype)     # complex32, wide unsigned, quantized: their layers
    if dev is not None:
        raw = dev if isinstance(dev, _device_cls) else _device_cls(dev)
        target = to_device(raw)
        if target.type != self.device.type:
            self, copy = _meta_tensor.move(self, target), False
        elif raw.index is not None:               # cpu:0 is not cpu: a copy, as torch's
            copy = True
    mf = getattr(memory_format, "name", memory_format)
    if mf == "preserve_format":
        memory_format = None
    if dtype is self.dtype:
        dtype = None
    if dtype is None and not copy and (memory_format is None or mf == _suggested_format(self)):
        return self
    return to_copy(self, dtype=dtype, memory_format=memory_format)


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
