"""``MaskedTensor``: a tensor whose elements are each specified (mask True) or not.

A MaskedTensor is a Tensor subclass: its own memory is the data (``get_data()`` views it),
``_masked_mask`` holds the bool mask of the same shape. Every function or method called with
one reaches ``MaskedTensor.__torch_function__`` (ember's protocol is installed on the class's
hand-written methods too), which looks the call up by name in ``_HANDLERS``:

* unary and binary elementwise ops run on the data and keep the mask (two MaskedTensors must
  have equal masks; a plain tensor or a number is taken as fully specified);
* reductions run the ``ember.masked`` function of that name, the result specified where any
  element of its slice is;
* shape ops (indexing, views, transpose, cat...) apply the same call to the data and to the
  mask;
* names torch's MaskedTensor refuses raise its error; Tensor's own metadata methods (``dim``,
  ``shape``, ``backward``...) run as on a plain tensor.

Autograd: every op runs on plain *twins* of its MaskedTensor arguments (Tensor objects
sharing their memory and autograd identity), so graph nodes only ever hold plain tensors and
backward runs without MaskedTensors; a leaf's ``.grad`` is read back as a MaskedTensor with
the leaf's mask. Unlike torch, whose gradients are MaskedTensors themselves, the gradients
are plain: zero where a reduction, ``where`` or an op with a plain tensor leaves an element
out (torch leaves garbage there, masked), so plain tensors upstream get true gradients
(torch's get MaskedTensor gradients, or fail in an op MaskedTensor lacks, e.g. ``mm``).
"""
from __future__ import annotations

import warnings

import ember
from ember._tensor import Tensor, _object_new
from ember.overrides import _disabled_torch_function

__all__ = ["MaskedTensor", "is_masked_tensor"]

_TORCH_NAME = "<class 'torch.masked.maskedtensor.core.MaskedTensor'>"
_PROTOTYPE = ("The PyTorch API of MaskedTensors is in prototype stage and will change in the "
              "near future. Please open a Github issue for features requests and see our "
              "documentation on the torch.masked module for further information about the "
              "project.")
_SLOTS = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_storage_base", "_view_info",
          "_vc", "_meta")


def is_masked_tensor(a):
    return isinstance(a, MaskedTensor)


def _prototype_warning(stacklevel=3):
    warnings.warn(_PROTOTYPE, UserWarning, stacklevel=stacklevel)


_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "bool")


def _check(data, mask, requires_grad=False):
    """torch's checks of a MaskedTensor's data and mask, in its order."""
    if not isinstance(data, Tensor):
        raise TypeError("data must be a Tensor")
    if not isinstance(mask, Tensor):
        raise TypeError("mask must be a Tensor")
    if data.layout != mask.layout:
        raise TypeError("data and mask must have the same layout.")
    if data.layout not in (ember.strided, ember.sparse_coo, ember.sparse_csr):
        raise TypeError(f"data layout of {data.layout} is not supported.")
    if mask.dtype != ember.bool:
        raise TypeError("mask must have dtype bool.")
    if requires_grad and not (data.is_floating_point() or data.is_complex()):
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")
    if str(data.dtype).replace("torch.", "") not in _DTYPES:
        raise TypeError(f"{data.dtype} is not supported in MaskedTensor.")
    if data.shape != mask.shape:
        raise ValueError("data.size() must equal mask.size()")
    _install()


def _twin(mt):
    """A plain Tensor sharing ``mt``'s memory and autograd identity (a leaf that requires
    grad shares its gradient record, so gradients reach ``mt.grad``)."""
    if mt._requires_grad and mt._grad_fn is None:
        mt._autograd_meta()
    t = _object_new(Tensor)
    for s in _SLOTS:
        object.__setattr__(t, s, getattr(mt, s))
    return t


def _wrap(t, mask):
    """A MaskedTensor sharing plain ``t``'s memory and autograd identity, with ``mask``."""
    if mask._data.shape != t._data.shape:
        mask = ember.broadcast_to(mask, t.shape)
    m = _object_new(MaskedTensor)
    for s in _SLOTS:
        object.__setattr__(m, s, getattr(t, s))
    m._masked_mask = mask
    return m


def _from_values(data, mask):
    """The result of a reduction (torch warns for one that requires grad)."""
    if data.requires_grad:
        warnings.warn("It is not recommended to create a MaskedTensor with a tensor that "
                      "requires_grad. To avoid this, you can use data.detach().clone()",
                      UserWarning, stacklevel=2)
    return _wrap(data, mask)


def _plain(a):
    """``a`` with MaskedTensors (also inside lists and tuples) replaced by their twins."""
    if isinstance(a, MaskedTensor):
        return _twin(a)
    if type(a) in (list, tuple):
        return type(a)(_plain(x) for x in a)
    return a


def _mask_of(a):
    """The mask standing for ``a`` in a shape op: a MaskedTensor's mask, else ``a``."""
    if isinstance(a, MaskedTensor):
        return a._masked_mask
    if type(a) in (list, tuple):
        return type(a)(_mask_of(x) for x in a)
    return a


def _masks_match(a, b):
    ma, mb = a._masked_mask, b._masked_mask
    return ma.shape == mb.shape and bool(ember.equal(ma, mb))


def _unsupported(aten):
    raise TypeError(f"Multiple dispatch failed for 'torch._ops.aten.{aten}'; all "
                    f"__torch_dispatch__ handlers returned NotImplemented:\n\n"
                    f"  - tensor subclass {_TORCH_NAME}\n\n"
                    f"For more information, try re-running with TORCH_LOGS=not_implemented")


# ------------------------------------------------------------------------------ handlers

def _unary(func, args, kwargs, inplace):
    self = args[0]
    if any(isinstance(a, Tensor) for a in (*args[1:], *kwargs.values())):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    if kwargs:                  # (keyword-only arguments: round's decimals...)
        raise ValueError("MaskedTensor unary ops require that len(kwargs) == 0. If you need "
                         "support for this, please open an issue on Github.")
    return _run(func, args, kwargs, self._masked_mask, inplace)


def _run(func, args, kwargs, mask, inplace):
    """``func`` on the twins; an in-place call updates its MaskedTensor's history."""
    pargs = _plain(args)
    r = func(*pargs, **kwargs)
    if inplace:
        self, twin = args[0], pargs[0]
        for s in ("_requires_grad", "_grad_fn", "_output_nr", "_vc", "_meta"):
            object.__setattr__(self, s, getattr(twin, s))
        return self
    return _wrap(r, mask)


def _binary(func, args, kwargs, inplace):
    if kwargs:
        raise ValueError("len(kwargs) must equal 0")
    a, b = args[0], args[1]
    if inplace and not isinstance(a, MaskedTensor):
        raise AttributeError("'Tensor' object has no attribute '_set_data_mask'")
    if isinstance(a, MaskedTensor) and isinstance(b, MaskedTensor):
        if not _masks_match(a, b):
            raise ValueError("Input masks must match. If you need support for this, please "
                             "open an issue on Github.")
    mask = (a if isinstance(a, MaskedTensor) else b)._masked_mask
    if not inplace and any(type(x) is not MaskedTensor and isinstance(x, Tensor) and
                           x.requires_grad for x in (a, b)):
        return _with_plain_grad(func, a, b, mask)
    return _run(func, args, {}, mask, inplace)


_DIVISIONS = {"div", "divide", "true_divide", "floor_divide", "remainder", "fmod"}


class _GradMask(ember.autograd.Function):
    """Identity whose gradient is zero where ``mask`` is False."""

    @staticmethod
    def forward(ctx, x, mask):
        ctx.mask = mask
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return ember.where(ctx.mask, g, 0), None


def _with_plain_grad(func, a, b, mask):
    """A binary op between a MaskedTensor and a plain tensor that requires grad: the plain
    tensor's gradient sums over the specified elements only (torch's gradients are
    MaskedTensors), so unspecified data takes no part (0, or 1 as a divisor)."""
    def filled(x, fill):
        if not isinstance(x, MaskedTensor):
            return x
        d = _twin(x)
        return ember.where(x._masked_mask, d, ember.full_like(d.detach(), fill))
    divisor_fill = 1 if _name(func) in _DIVISIONS else 0
    r = func(filled(a, 0), filled(b, divisor_fill))
    return _wrap(_GradMask.apply(r, mask), mask)


def _rtruediv(func, args, kwargs):
    self, other = args[0], args[1]
    return _wrap(ember.reciprocal(_twin(self)) * other, self._masked_mask)


def _reduce_mask(mask, dim, keepdim):
    if dim is None:
        return mask.any()
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return mask.any()
    out = mask
    for d in sorted((d % max(mask.dim(), 1) for d in dims), reverse=True):
        out = out.any(dim=d, keepdim=keepdim)
    return out


def _reduction(name):
    def handler(func, args, kwargs):
        self = args[0]
        kwargs = dict(kwargs)
        if name == "norm":
            raise TypeError("_reduce_dim_args() got an unexpected keyword argument 'p'")
        dim = args[1] if len(args) > 1 else kwargs.pop("dim", None)
        keepdim = bool(args[2]) if len(args) > 2 else bool(kwargs.pop("keepdim", False))
        if dim is None and kwargs:
            raise TypeError("_reduce_dim_args() missing 1 required positional argument: 'dim'")
        for k in kwargs:
            if k != "dtype" or name in ("var", "std", "all"):
                raise TypeError(f"_reduce_dim_args() got an unexpected keyword argument '{k}'")
        data, mask = _twin(self), self._masked_mask
        if name == "all":
            filled = data.masked_fill(~mask, True)
            r = filled.all() if dim is None else ember.all(filled, dim, keepdim)
        else:
            fn = getattr(ember.masked, name)
            if dim is None:
                r = fn(data, mask=mask, **kwargs)
            else:
                r = fn(data, dim, keepdim=keepdim, mask=mask, **kwargs)
        return _from_values(r, _reduce_mask(mask, dim, keepdim))
    return handler


def _softmax(name):
    def handler(func, args, kwargs):
        self = args[0]
        dim = args[1] if len(args) > 1 else kwargs.get("dim")
        r = getattr(ember.masked, name)(_twin(self), dim, mask=self._masked_mask)
        return _wrap(r, self._masked_mask)
    return handler


def _where(func, args, kwargs):
    cond, a, b = args[0], args[1], args[2]
    if isinstance(cond, MaskedTensor):
        raise RecursionError("maximum recursion depth exceeded while calling a Python object")

    def mask(x):
        if isinstance(x, MaskedTensor):
            return x._masked_mask
        return ember.ones(x.shape if isinstance(x, Tensor) else (), dtype=ember.bool)
    data = ember.where(cond, _plain(a), _plain(b))
    return _wrap(data, ember.where(cond, mask(a), mask(b)))


def _shape_op(func, args, kwargs):
    """The same call on the data and on the mask (indexing, views, cat, split...)."""
    data = func(*_plain(args), **_plain(kwargs))
    with _disabled_torch_function():
        mask = func(*_mask_of(args), **_mask_of(kwargs))
    if isinstance(data, (tuple, list)):
        return type(data)(_wrap(d, m) for d, m in zip(data, mask))
    return _wrap(data, mask)


def _to(func, args, kwargs):
    self = args[0]
    r = func(*_plain(args), **kwargs)
    if isinstance(r, str):                  # .type() without a dtype: the name
        return r
    return _wrap(r, self._masked_mask)


def _ones_like(func, args, kwargs):
    self = args[0]
    return _wrap(func(*_plain(args), **kwargs), self._masked_mask)


def _data_property(func, args, kwargs):
    self = args[0]
    with _disabled_torch_function():
        d = func(_twin(self))
    return _wrap(d, self._masked_mask)


def _dropout(func, args, kwargs):
    """``F.dropout``: the input itself in eval mode; training draws a mask torch's
    MaskedTensor cannot make."""
    training = args[2] if len(args) > 2 else kwargs.get("training", True)
    if not training:
        return args[0]
    _unsupported("empty_like.default")


def _float_power(func, args, kwargs):
    self = args[0]
    if any(isinstance(a, Tensor) for a in args[1:]):
        raise TypeError("MaskedTensor unary ops do not support additional Tensor arguments")
    return _wrap(ember.pow(_twin(self).to(ember.float64), args[1]), self._masked_mask)


def _isclose(func, args, kwargs):
    a, b = args[0], args[1]
    if isinstance(a, MaskedTensor) and isinstance(b, MaskedTensor) and not _masks_match(a, b):
        raise ValueError("Input masks must match. If you need support for this, please open "
                         "an issue on Github.")
    mask = (a if isinstance(a, MaskedTensor) else b)._masked_mask
    return _wrap(func(*_plain(args), **kwargs), mask)


def _outer(func, args, kwargs):
    """``outer`` multiplies a column by a row: their masks never match."""
    raise ValueError("Input masks must match. If you need support for this, please open an "
                     "issue on Github.")


def _refused_as(aten):
    def handler(func, args, kwargs):
        _unsupported(aten)
    return handler


def _tolist(func, args, kwargs):
    raise RuntimeError(".tolist() is not supported for tensor subclasses, got MaskedTensor")


def _numpy(func, args, kwargs):
    raise RuntimeError(".numpy() is not supported for tensor subclasses.")


def _setitem(func, args, kwargs):
    """``mt[i] = v``: accepted and, as in torch, without effect."""
    return None


def _deepcopy(func, args, kwargs):
    self, memo = args[0], (args[1] if len(args) > 1 else kwargs.get("memo"))
    if memo is not None and id(self) in memo:
        return memo[id(self)]
    with ember.no_grad():
        data = _twin(self).clone()
    r = _wrap(data, self._masked_mask.clone())
    if self.__dict__.get("_masked_layout") is not None:
        r._masked_layout = self._masked_layout
    if self.requires_grad and self.is_leaf:
        r.requires_grad_()
    if memo is not None:
        memo[id(self)] = r
    return r


def _T(func, args, kwargs):
    _unsupported("permute.default")


_UNARY = ["abs", "absolute", "acos", "arccos", "acosh", "arccosh", "angle", "asin", "arcsin",
          "asinh", "arcsinh", "atan", "arctan", "atanh", "arctanh", "bitwise_not", "ceil",
          "clamp", "clip", "conj_physical", "cos", "cosh", "deg2rad", "digamma", "erf", "erfc",
          "erfinv", "exp", "exp2", "expm1", "fix", "floor", "frac", "lgamma", "log", "log10",
          "log1p", "log2", "logit", "i0", "isnan", "nan_to_num", "neg", "negative", "positive",
          "pow", "rad2deg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sgn", "signbit",
          "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh", "trunc", "isfinite"]
_UNARY_NO_INPLACE = {"angle", "positive", "signbit", "isnan", "isfinite"}
_BINARY = ["add", "atan2", "arctan2", "bitwise_and", "bitwise_or", "bitwise_xor",
           "bitwise_left_shift", "bitwise_right_shift", "div", "divide", "floor_divide", "fmod",
           "logaddexp", "logaddexp2", "mul", "multiply", "nextafter", "remainder", "sub",
           "subtract", "true_divide", "eq", "ne", "le", "ge", "greater", "greater_equal", "gt",
           "less_equal", "lt", "less", "maximum", "minimum", "fmax", "fmin", "not_equal"]
_BINARY_NO_INPLACE = {"logaddexp", "logaddexp2", "fmin", "minimum", "fmax", "maximum"}
_SHAPE = ["__getitem__", "view", "reshape", "flatten", "t", "transpose", "unsqueeze", "expand",
          "select", "split", "cat", "concat", "concatenate", "stack", "clone", "contiguous",
          "detach", "narrow", "view_as", "reshape_as", "expand_as", "chunk", "unflatten",
          "swapaxes", "swapdims", "mT", "split_with_sizes"]
_TO = ["to", "double", "float", "half", "bfloat16", "int", "long", "short", "bool", "type",
       "type_as"]
_REDUCTIONS = ["sum", "mean", "amax", "amin", "argmax", "argmin", "prod", "all", "norm", "var",
               "std"]

# a dunder as the op it is (``a < b`` is ``lt``, ``a += b`` is ``add_``...)
_DUNDERS = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul",
            "__rmul__": "mul", "__truediv__": "div", "__div__": "div",
            "__floordiv__": "floor_divide", "__mod__": "remainder", "__eq__": "eq",
            "__ne__": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
            "__and__": "bitwise_and", "__rand__": "bitwise_and", "__or__": "bitwise_or",
            "__ror__": "bitwise_or", "__xor__": "bitwise_xor", "__rxor__": "bitwise_xor",
            "__lshift__": "bitwise_left_shift", "__rshift__": "bitwise_right_shift",
            "__neg__": "neg", "__abs__": "abs", "__invert__": "bitwise_not", "__pos__": "positive",
            "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
            "__idiv__": "div_", "__ifloordiv__": "floor_divide_", "__imod__": "remainder_",
            "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
            "__ipow__": "pow_"}

_HANDLERS: dict = {}
for _n in _UNARY:
    _HANDLERS[_n] = (lambda f, a, k: _unary(f, a, k, False))
    if _n not in _UNARY_NO_INPLACE:
        _HANDLERS[_n + "_"] = (lambda f, a, k: _unary(f, a, k, True))
for _n in _BINARY:
    _HANDLERS[_n] = (lambda f, a, k: _binary(f, a, k, False))
    if _n not in _BINARY_NO_INPLACE:
        _HANDLERS[_n + "_"] = (lambda f, a, k: _binary(f, a, k, True))
for _n in _SHAPE:
    _HANDLERS[_n] = _shape_op
for _n in _TO:
    _HANDLERS[_n] = _to
for _n in _REDUCTIONS:
    _HANDLERS[_n] = _reduction(_n)
_HANDLERS.update({"softmax": _softmax("softmax"), "softmin": _softmax("softmin"),
                  "where": _where, "ones_like": _ones_like, "__rtruediv__": _rtruediv,
                  "__rdiv__": _rtruediv, "data": _data_property, "tolist": _tolist, "T": _T,
                  "numpy": _numpy, "__setitem__": _setitem, "__deepcopy__": _deepcopy,
                  "dropout": _dropout, "float_power": _float_power, "isclose": _isclose,
                  "outer": _outer, "ger": _outer,
                  # torch decomposes these into an op its MaskedTensor lacks
                  "layer_norm": _refused_as("native_layer_norm.default"),
                  "normalize": _refused_as("linalg_vector_norm.default"),
                  "movedim": _refused_as("permute.default"),
                  "moveaxis": _refused_as("permute.default"),
                  "einsum": _refused_as("permute.default"),
                  "tile": _refused_as("repeat.default")})

# ops torch's MaskedTensor refuses whose aten overload is not ``.default`` (by call form)
_ATEN = {"log_softmax": "_log_softmax.default", "copysign": "copysign.Tensor", "masked_fill": "masked_fill.Scalar",
         "lerp": "lerp.Scalar", "xlogy": "xlogy.Tensor", "unbind": "unbind.int",
         "linear": "mm.default", "matmul": "mm.default", "permute": "permute.default",
         "logsumexp": "logsumexp.default", "count_nonzero": "count_nonzero.default",
         "nansum": "nansum.default"}
_DIM_OVERLOAD = {"any", "max", "min", "median", "squeeze"}

_TENSOR_NAMES: dict = {}      # id of a Tensor method -> its attribute name ('__truediv__')
_FUNCTION_NAMES: dict = {}    # id of an ember function -> its public name ('div')


def _name(func):
    """The name ``func`` is reached by (a property setter as ``name=``), dunders as ops."""
    name = getattr(func, "__name__", "")
    if name in ("__get__", "__set__"):
        prop = getattr(func, "__self__", None)
        for k, v in Tensor.__dict__.items():
            if v is prop:
                return k if name == "__get__" else k + "="
    name = _TENSOR_NAMES.get(id(getattr(func, "__wrapped__", func)), name)
    if name.startswith("_") and not name.startswith("__"):     # ember's '_div_function'
        name = _FUNCTION_NAMES.get(id(getattr(func, "__wrapped__", func)), name)
    return _DUNDERS.get(name, name)


def _aten(name, args, kwargs):
    if name in _ATEN:
        return _ATEN[name]
    if name in _DIM_OVERLOAD and (len(args) > 1 or "dim" in kwargs):
        return name + ".dim"
    return name + ".default"


class MaskedTensor(Tensor):
    """A tensor with a bool mask of the same shape: ``True`` where an element is specified."""
    __slots__ = ()

    def __new__(cls, data, mask, requires_grad=False):
        _check(data, mask, requires_grad)
        _prototype_warning()
        layout = data.layout
        if layout != ember.strided:         # held dense, shown and reduced as torch's
            data, mask = data.to_dense(), mask.to_dense()
        t = Tensor._make_subclass(cls, data, bool(requires_grad))
        t._masked_mask = mask
        if layout != ember.strided:
            t._masked_layout = layout
        return t

    def __init__(self, data, mask, requires_grad=False):
        pass

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        handler = _HANDLERS.get(name)
        layout = _sparse_layout(args)
        if layout is not None:
            return _sparse_call(name, handler, func, args, kwargs, layout)
        if handler is not None:
            return handler(func, args, kwargs)
        if name in _PASSTHROUGH or func is ember.autograd.grad or \
                func is ember.autograd.backward:
            with _disabled_torch_function():     # metadata and autograd: as a plain tensor
                return func(*args, **kwargs)
        _unsupported(_aten(name, args, kwargs))

    # ---------------------------------------------------------------- torch's API
    def get_data(self):
        """The data as a plain tensor sharing this one's memory (gradients pass through);
        a sparse MaskedTensor's in its layout, at the specified elements."""
        d = ember._ops.core.alias(_twin(self))
        return _sparse_of(d, self) if _layout(self) != ember.strided else d

    def get_mask(self):
        m = self._masked_mask
        return _sparse_of(m, self) if _layout(self) != ember.strided else m

    def is_sparse_coo(self):
        return _layout(self) == ember.sparse_coo

    def is_sparse_csr(self):
        return _layout(self) == ember.sparse_csr

    def to_tensor(self, value):
        """The data with unspecified elements set to ``value``."""
        if _layout(self) != ember.strided:      # (torch's inverts a sparse mask)
            _refuse_inverted_mask(self)
        return _twin(self).masked_fill(~self._masked_mask, value)

    def _gradient_of(self, g):
        """``autograd.grad``'s gradient for this input: a MaskedTensor with its mask."""
        return _wrap(g, self._masked_mask)

    @property
    def grad(self):
        m = self._meta
        g = None if m is None else m.grad
        if g is None or isinstance(g, MaskedTensor):    # (the mask that flowed to it)
            return g
        return _wrap(g, self._masked_mask)

    @grad.setter
    def grad(self, value):
        with _disabled_torch_function():
            Tensor.grad.fset(self, _twin(value) if isinstance(value, MaskedTensor) else value)

    # Python's operator protocol: torch's MaskedTensor declines these
    def __rsub__(self, other):
        return NotImplemented

    def __rpow__(self, other):
        return NotImplemented

    def __pow__(self, other):
        if isinstance(other, Tensor):
            return NotImplemented
        return _unary(Tensor.pow, (self, other), {}, False)

    def __matmul__(self, other):
        return NotImplemented

    def __lshift__(self, other):
        return NotImplemented

    def __rshift__(self, other):
        return NotImplemented

    def __rmatmul__(self, other):
        return NotImplemented

    def __repr__(self):
        return _repr(self)

    __str__ = __repr__


# what runs on a MaskedTensor as on a plain tensor: metadata, conversions to numbers and
# autograd (everything else torch's MaskedTensor does not implement is refused)
_PASSTHROUGH = {"dim", "ndimension", "size", "shape", "dtype", "device", "layout", "numel",
                "nelement", "__len__", "item", "__float__", "__int__", "__bool__", "__index__",
                "__complex__", "__format__", "is_contiguous", "requires_grad",
                "requires_grad=", "requires_grad_", "is_leaf", "grad_fn", "backward",
                "retain_grad", "retains_grad", "register_hook", "is_floating_point",
                "is_complex", "is_signed", "element_size", "itemsize", "nbytes", "stride",
                "storage_offset", "data_ptr", "is_sparse", "is_quantized", "is_meta", "is_cpu",
                "is_cuda", "is_mkldnn", "is_nested", "ndim", "_version", "_base", "_is_view",
                "is_inference", "__reduce_ex__", "__setstate__", "cpu",
                "output_nr", "get_device", "__dir__", "is_shared", "_grad", "_grad=",
                "grad_fn=", "names", "is_tensor", "is_nonzero", "is_same_size", "typename",
                "__contains__", "__sizeof__", "__dlpack_device__"}

_INSTALLED = False


def _install():
    """Route Tensor's hand-written methods (once) and nn.functional (whenever a test put the
    originals back) through the protocol."""
    global _INSTALLED
    from ember import overrides
    if not overrides._FUNCTIONAL_WRAPPED:
        overrides._wrap_functional()
        _FUNCTION_NAMES.clear()
        for k, v in vars(ember).items():
            if callable(v) and not k.startswith("_"):
                _FUNCTION_NAMES.setdefault(id(getattr(v, "__wrapped__", v)), k)
    if _INSTALLED:
        return
    _INSTALLED = True
    for k, v in Tensor.__dict__.items():
        if callable(v):
            _TENSOR_NAMES.setdefault(id(v), k)
    own = set(MaskedTensor.__dict__)
    for name, orig in overrides._protocol_names().items():
        if name in own:
            continue
        setattr(MaskedTensor, name, overrides._wrap_property(name, orig)
                if isinstance(orig, property) else overrides._wrap_method(name, orig))


# ------------------------------------------------------------------------------ sparse
#
# A sparse (COO or CSR) MaskedTensor is held as a dense one with ``_masked_layout`` set: it
# prints, reduces and applies elementwise ops as torch's (whose ops act on the specified
# values only), ``get_data()``/``get_mask()`` give the layout back at the mask's elements,
# and the calls torch's refuses on a sparse one are refused.

def _layout(mt):
    return mt.__dict__.get("_masked_layout", ember.strided)


def _sparse_layout(args):
    for a in args:
        if isinstance(a, MaskedTensor) and "_masked_layout" in a.__dict__:
            return a._masked_layout
    return None


def _refuse_inverted_mask(mt):
    """torch's error where an op inverts a sparse mask (``to_tensor``, ``softmax``)."""
    if _layout(mt) == ember.sparse_csr:
        raise RuntimeError("unsupported tensor layout: SparseCsr")
    from ember._ops.sparse import _refuse
    _refuse("bitwise_not", mt.get_mask())


def _sparse_of(dense, mt):
    """``dense`` at ``mt``'s specified elements, in ``mt``'s sparse layout."""
    mask = mt._masked_mask
    idx = mask.nonzero().t()
    coo = ember.sparse_coo_tensor(idx, dense[mask], dense.shape, check_invariants=False)
    return coo.to_sparse_csr() if _layout(mt) == ember.sparse_csr else coo.coalesce()


_SPARSE_KEEP = set(_UNARY) | {n + "_" for n in _UNARY} | set(_BINARY) | \
    {n + "_" for n in _BINARY} | set(_SHAPE) | set(_TO) | {"__rtruediv__", "__rdiv__"}


def _sparse_call(name, handler, func, args, kwargs, layout):
    if name == "layout":
        return layout
    if name == "is_sparse":
        return True
    if name == "to_dense":
        self = args[0]
        return _wrap(_twin(self).clone(), self._masked_mask.clone())
    if name in _REDUCTIONS and (len(args) > 1 or "dim" in kwargs):
        raise TypeError(f"Multiple dispatch failed for 'torch.Tensor.{name}'; all "
                        f"__torch_function__ handlers returned NotImplemented:\n\n"
                        f"  - tensor subclass {_TORCH_NAME}\n\n"
                        f"For more information, try re-running with TORCH_LOGS=not_implemented")
    if layout == ember.sparse_csr and name in ("t", "transpose"):
        raise TypeError("data layout of torch.sparse_csc is not supported.")
    if name in ("softmax", "softmin"):
        _refuse_inverted_mask(args[0])
    if name in _BINARY and all(isinstance(a, MaskedTensor) for a in args[:2]):
        la, lb = _layout(args[0]), _layout(args[1])
        if la != lb:
            raise ValueError(f"`a` and `b` must have the same layout. Got {la} and {lb}")
    out = MaskedTensor.__torch_function__.__func__(MaskedTensor, func, (MaskedTensor,),
                                                   _dense_args(args), kwargs)
    if name in _SPARSE_KEEP:
        for r in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(r, MaskedTensor):
                r._masked_layout = layout
    return out


def _dense_args(args):
    """``args`` with sparse MaskedTensors as dense ones (the same memory and mask)."""
    def dense(a):
        if isinstance(a, MaskedTensor) and "_masked_layout" in a.__dict__:
            return _wrap(_twin(a), a._masked_mask)
        if type(a) in (list, tuple):
            return type(a)(dense(x) for x in a)
        return a
    return tuple(dense(a) for a in args)


def _to_sparse(layout):
    def handler(func, args, kwargs):
        self = args[0]
        r = _wrap(_twin(self), self._masked_mask)
        r._masked_layout = layout
        return r
    return handler


_HANDLERS.update({"to_sparse": _to_sparse(ember.sparse_coo),
                  "to_sparse_coo": _to_sparse(ember.sparse_coo),
                  "to_sparse_csr": _to_sparse(ember.sparse_csr),
                  "to_dense": lambda f, a, k: _wrap(_twin(a[0]), a[0]._masked_mask)})


# ------------------------------------------------------------------------------ repr

def _item_text(v, is_float):
    return f"{v:8.4f}" if is_float else str(v)


def _row(values, mask, is_float):
    texts = [_item_text(v, is_float) if m else None for v, m in zip(values, mask)]
    width = max([8] + [len(t) for t in texts if t is not None])
    return "[" + ", ".join("--".rjust(width) if t is None else t for t in texts) + "]"


def _render(values, mask, is_float, indent):
    pad = " " * indent
    if not values or not isinstance(values[0], list):
        return pad + _row(values, mask, is_float)
    inner = ",\n".join(_render(v, m, is_float, indent + 2) for v, m in zip(values, mask))
    return f"{pad}[\n{inner}\n{pad}]"


def _repr(mt):
    arr = mt._data
    mask = mt._masked_mask._data
    is_float = arr.dtype.kind in "fc"
    if arr.ndim == 0:
        m = bool(mask)
        return f"MaskedTensor({_item_text(arr.item(), is_float) if m else '--'}, {m})"
    return f"MaskedTensor(\n{_render(arr.tolist(), mask.tolist(), is_float, 2)}\n)"
