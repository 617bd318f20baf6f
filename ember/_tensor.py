"""Tensor: a NumPy array plus autograd and view metadata.

Ops are not written here: every op method (``add``, ``__add__``, ``add_``...) is generated
from its op record and installed by ``install_methods`` at import. This file holds the
metadata API (shape, stride, storage, grad) and the conversions.
"""
from __future__ import annotations

import numbers

import numpy as np

from ember import _dtype
from ember._device import CPU, META, to_device
from ember._meta_tensor import Placeholder, no_data, strides_of as _meta_strides
from ember._meta_tensor import is_contiguous as _meta_contiguous
from ember._state import state

_object_new = object.__new__


class Size(tuple):
    """torch.Size: a tuple of ints with torch's repr."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        items = tuple(sizes)
        if any(type(s) is not int for s in items):
            items = tuple(_size_item(k, s) for k, s in enumerate(items))
        return _new_size(cls, items)

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return _new_size(Size, r) if isinstance(item, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to "
                            f"torch.Size")
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return _new_size(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__


_new_size = tuple.__new__        # a Size from a tuple known to hold ints (no checks)


def _size_item(k, s):
    """Item ``k`` of a Size as an int (NumPy and 0-d tensor integers convert)."""
    try:
        return s.__index__()
    except (AttributeError, TypeError):
        raise TypeError(f"torch.Size() takes an iterable of 'int' (item {k} is "
                        f"'{type(s).__name__}')") from None



def _requires_grad_argument(args, kwargs):
    """``requires_grad_``'s argument, with torch's argument parser's TypeErrors (one bool,
    positional or ``requires_grad=``)."""
    from ember._legacy import type_name
    for k in kwargs:
        if k != "requires_grad":
            raise TypeError(f"requires_grad_() got an unexpected keyword argument '{k}'")
    if len(args) + len(kwargs) > 1:
        if not args or len(args) == 1:
            raise TypeError("requires_grad_() got multiple values for argument "
                            "'requires_grad'")
        raise TypeError(f"requires_grad_() takes from 0 to 1 positional arguments but "
                        f"{len(args)} were given")
    if args:
        v, where = args[0], " (position 1)"
    else:
        v, where = kwargs.get("requires_grad", True), ""
    if type(v) is not bool:
        raise TypeError(f"requires_grad_(): argument 'requires_grad'{where} must be bool, not "
                        f"{type_name(type(v))}")
    return v

class Tensor:
    """A multi-dimensional array with autograd (torch.Tensor)."""
    __slots__ = ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_storage_base",
                 "_view_info", "_vc", "_meta", "__weakref__", "__dict__")

    # ------------------------------------------------------------------ construction
    def __new__(cls, *args, **kwargs):
        """torch's legacy constructor (``ember/_legacy.py``): ``Tensor(2, 3)`` is
        uninitialized of size (2, 3), ``Tensor([2, 3])`` holds 2 and 3."""
        if not args and not kwargs:
            t = _object_new(cls)
            _init(t, np.empty((0,), _dtype.default_float().np))
            return t
        from ember._legacy import legacy_new
        src = legacy_new(None, args, kwargs)
        if cls is Tensor:
            return src
        if src._storage_base is not None:         # an alias of a tensor argument
            return src.as_subclass(cls)
        t = _object_new(cls)
        _init(t, src._data)
        return t

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        """A subclass taking part in ``__torch_function__`` gets Tensor's hand-written
        methods and properties wrapped (``detach``, ``data``...), as op methods are."""
        super().__init_subclass__(**kwargs)
        from ember.overrides import install_subclass_protocol
        install_subclass_protocol(cls)

    @staticmethod
    def _make_subclass(cls, data, require_grad=False, **kwargs):
        """A ``cls`` instance sharing ``data``'s memory and version counter: a leaf with no
        history that requires grad if ``require_grad``."""
        if not isinstance(data, Tensor):
            raise TypeError(f"_make_subclass(): argument 'data' (position 2) must be Tensor, "
                            f"not {type(data).__name__}")
        _check_subclass(cls)
        from ember.overrides import _disabled_torch_function
        with _disabled_torch_function():
            d = Tensor.detach(data)
        t = _object_new(cls)
        for slot in ("_data", "_output_nr", "_storage_base", "_view_info", "_vc", "_meta"):
            object.__setattr__(t, slot, getattr(d, slot))
        t._grad_fn = None
        t._requires_grad = False
        if "_qparams" in d.__dict__:
            t._qparams = d._qparams
        if require_grad:       # (no handler or mode is asked: ``t`` is not made yet)
            dt = _dtype._BY_NP[d._data.dtype]
            if not (dt.is_floating_point or dt.is_complex):
                raise RuntimeError("Only Tensors of floating point and complex dtype can "
                                   "require gradients")
            m = (d if d._storage_base is None else d._storage_base)._meta
            if m is not None and m.inference and not state.inference_mode:
                raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                                   "InferenceMode is not allowed.")
            t._requires_grad = True
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Default protocol handler: run ``func`` with overrides disabled and return results
        as ``cls`` (so subclasses survive ops), or NotImplemented when another overriding
        type is not one of our superclasses (torch's rule)."""
        from ember.overrides import _disabled_torch_function
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with _disabled_torch_function():
            ret = func(*args, **(kwargs or {}))
        if cls is Tensor or _nowrap(func):
            return ret
        return _convert(ret, cls)

    def as_subclass(self, cls):
        """An alias of this tensor of type ``cls``: a view of it (``AliasBackward0``)."""
        _check_subclass(cls)
        from ember._ops.core import alias
        from ember.overrides import _disabled_torch_function
        with _disabled_torch_function():
            a = alias(self)
        t = _object_new(cls)
        for slot in ("_data", "_requires_grad", "_grad_fn", "_output_nr", "_storage_base",
                     "_view_info", "_vc", "_meta"):
            object.__setattr__(t, slot, getattr(a, slot))
        return t

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return _new_size(Size, self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return _new_size(Size, self._data.shape)
        if type(dim) is not int:
            from ember._ops.parser_errors import int_argument
            int_argument("size", "dim", 1, dim)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self):
        return _dtype._BY_NP[self._data.dtype]

    @property
    def device(self):
        return META if type(self._data) is Placeholder else CPU

    @property
    def is_cpu(self):
        return type(self._data) is not Placeholder

    @property
    def is_meta(self):
        return type(self._data) is Placeholder

    @property
    def is_sparse(self):
        return _layout_name(self) == "sparse_coo"

    @property
    def is_sparse_csr(self):
        return _layout_name(self) == "sparse_csr"

    @property
    def is_quantized(self):
        return self._data.dtype in _dtype.QUANTIZED_NP

    @property
    def layout(self):
        import ember
        return getattr(ember, _layout_name(self))

    @property
    def ndim(self):
        return self._data.ndim

    def dim(self):
        return self._data.ndim

    ndimension = dim

    def numel(self):
        return self._data.size

    nelement = numel

    def element_size(self):
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def is_floating_point(self):
        return self._data.dtype.kind == "f" or self._data.dtype == _dtype.bfloat16.np

    def is_complex(self):
        k = self._data.dtype.kind
        return k == "c" or k == "V" and self.dtype.is_complex

    def is_signed(self):
        return self.dtype.is_signed

    def stride(self, dim=None):
        """Strides in elements (torch's convention), not bytes; a meta tensor reports
        the ones torch would give it (Note [meta strides])."""
        item = self._data.itemsize
        st = tuple(s // item for s in self._data.strides)
        if type(self._data) is Placeholder:
            st = _meta_strides(self._data)
        elif self._data.size <= 1 or 0 in self._data.shape:
            st = _contiguous_strides(self._data.shape) if not st or self._data.size == 0 else st
        if dim is None:
            return st
        if type(dim) is not int:
            from ember._ops.parser_errors import int_argument
            int_argument("stride", "dim", 1, dim)
        return st[_wrap_dim(dim, self._data.ndim, "stride")]

    def _root(self):
        b = self._storage_base
        return self if b is None else b

    def storage_offset(self):
        if type(self._data) is Placeholder:
            return self._data.meta_offset
        root = self._root()._data
        return (_address(self._data) - _storage_start(root)) // self._data.itemsize

    def data_ptr(self):
        _dense_only(self)
        return 0 if type(self._data) is Placeholder else _address(self._data)

    def is_contiguous(self, memory_format=None):
        a = self._data
        if type(a) is Placeholder:
            return _meta_contiguous(a.shape, _meta_strides(a), memory_format is not None and
                                    "channels_last" in str(memory_format))
        if memory_format is not None:
            fmt = str(memory_format)
            if fmt.endswith("channels_last"):          # channels last: rank 4 only
                return a.ndim == 4 and a.transpose(0, 2, 3, 1).flags.c_contiguous
            if fmt.endswith("channels_last_3d"):
                return a.ndim == 5 and a.transpose(0, 2, 3, 4, 1).flags.c_contiguous
        return a.flags.c_contiguous

    def untyped_storage(self):
        if _layout_name(self) != "strided":
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        from ember.storage import UntypedStorage
        return UntypedStorage._of(self)

    def storage(self):
        from ember.storage import TypedStorage
        return TypedStorage._of(self)

    def storage_type(self):
        """The legacy storage class of this tensor's dtype (``torch.FloatStorage``...)."""
        from ember import storage
        storage._warn_typed()
        return getattr(storage, storage._LEGACY_NAMES[self._data.dtype.name])

    @property
    def _version(self):
        b = self._storage_base
        root = self if b is None else b
        if root._meta is not None and root._meta.inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return root._vc

    @property
    def _base(self):
        """torch's ``_base``: the tensor at the start of this view's chain of autograd views,
        or None (not a view, or only sharing memory: ``detach()``, ``.data``, ``view(dtype)``;
        an inference tensor's views are not tracked either). The storage root, which owns the
        memory and version counter, is ``_storage_base``."""
        if self._view_info is None or self.is_inference():
            return None
        from ember.autograd.graph import view_base
        return view_base(self)

    def _is_view(self):
        return self._view_info is not None and not self.is_inference()

    # ------------------------------------------------------------------ autograd
    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        if type(value) is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if self._grad_fn is not None and not value:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        if value and not (self.is_floating_point() or self.is_complex()):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        if value and self.is_inference() and not state.inference_mode:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        self._requires_grad = bool(value)

    def requires_grad_(self, *args, **kwargs):
        requires_grad = args[0] if len(args) == 1 and not kwargs else True
        if args and len(args) + len(kwargs) > 1 or type(requires_grad) is not bool or kwargs:
            requires_grad = _requires_grad_argument(args, kwargs)
        if requires_grad and not (self.is_floating_point() or self.is_complex()):
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def is_inference(self):
        """Made under ``inference_mode`` (or a view of such a tensor)."""
        b = self._storage_base
        m = (self if b is None else b)._meta
        return m is not None and m.inference

    @property
    def grad_fn(self):
        from ember.autograd.graph import current_grad_fn
        return current_grad_fn(self)

    @property
    def is_leaf(self):
        return self._grad_fn is None

    @property
    def grad(self):
        m = self._meta
        if self._grad_fn is not None and (m is None or m.grad is None) and \
                not (m is not None and m.retains_grad):
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be "
                          "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                          "Tensor. If you access the non-leaf Tensor by mistake, make sure you "
                          "access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/"
                          "30531 for more information.", UserWarning, stacklevel=2)
        return None if m is None else m.grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._data.shape != self._data.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(value.shape)}' to a tensor of size "
                                   f"'{list(self.shape)}'. Please ensure that the gradient and "
                                   f"the tensor are the same size")
            if value._data.dtype != self._data.dtype:
                from ember._kernels.blas import cname, sname
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{cname(value._data)}' to a "
                    f"tensor with grad_dtype '{sname(self._data)}'. The gradient must match "
                    f"the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
                    f"tensor's grad_dtype attribute with a specific dtype, or None to allow any "
                    f"dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                    f"its gradient may break downstream systems that assume they match.")
        self._autograd_meta().grad = value

    @grad.deleter
    def grad(self):
        self._autograd_meta().grad = None

    @property
    def _grad(self):
        """``grad`` without the non-leaf warning (torch's raw field)."""
        m = self._meta
        return None if m is None else m.grad

    @_grad.setter
    def _grad(self, value):
        Tensor.grad.fset(self, value)

    def _autograd_meta(self):
        m = self._meta
        if m is None:
            from ember.autograd.graph import AutogradMeta
            m = self._meta = AutogradMeta()
        return m

    @property
    def retains_grad(self):
        m = self._meta
        return bool(m and m.retains_grad)

    @property
    def output_nr(self):
        return self._output_nr

    def retain_grad(self):
        from ember.autograd.graph import retain_grad
        retain_grad(self)

    def register_hook(self, hook):
        from ember.autograd.graph import register_tensor_hook
        return register_tensor_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into the ``.grad`` of the leaves (or of ``inputs``)."""
        if inputs is None and gradient is None and not create_graph:
            from ember.autograd.engine import run_backward      # (the common case, direct)
            run_backward([self], [None], retain_graph, False)
            return
        from ember.autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self):
        """A tensor sharing data (and version counter) with no autograd history."""
        t = _make(self._data)
        b = self._storage_base
        t._storage_base = self if b is None else b
        t._view_info = None
        if t._meta is None:
            from ember.autograd.graph import AutogradMeta
            t._meta = AutogradMeta()
        t._meta.detached = True
        if self._data.dtype in _dtype.QUANTIZED_NP:
            t._qparams = self._qparams
        return t

    def set_(self, source=None, storage_offset=None, size=None, stride=None):
        """Make this tensor look at ``source``'s memory (a Tensor: its storage, offset, sizes
        and strides; a storage: all of it, or the window given), or at nothing (no
        argument). Its version counter steps; tensors on the old memory keep it."""
        from ember.storage import TypedStorage, UntypedStorage
        from ember._kernels.shape import address, check_window, from_address
        if type(self._data) is not np.ndarray or self._data.dtype in _dtype.QUANTIZED_NP:
            raise NotImplementedError("set_: only dense CPU tensors are supported")
        if self._requires_grad and self._grad_fn is None and state.grad_enabled:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        dt = self._data.dtype
        item = dt.itemsize
        version = self._version + 1
        if source is None:
            root_arr = np.zeros(0, dt)
            offset, size, stride = 0, (0,), (1,)
        else:
            if isinstance(source, Tensor):
                if source._data.dtype != dt:
                    from ember._kernels.blas import cname
                    raise RuntimeError(f"Could not set tensor of type {cname(source._data)} to "
                                       f"a tensor of type {cname(self._data)}")
                if storage_offset is None:
                    storage_offset = source.storage_offset()
                    size, stride = tuple(source.shape), source.stride()
                source = source.untyped_storage()
            elif isinstance(source, TypedStorage):
                source = source._untyped_storage
            if not isinstance(source, UntypedStorage):
                raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                                f"{type(source).__name__}")
            n = source.nbytes() // item
            if storage_offset is None:
                storage_offset, size, stride = 0, (n,), (1,)
            elif size is None:
                raise TypeError("set_() received an invalid combination of arguments: a "
                                "storage offset needs a size")
            size = tuple(size)
            if stride is None:
                stride = _contiguous_strides(size)
            if any(int(st) < 0 for st in stride):
                raise RuntimeError(f"Storage size calculation overflowed with sizes="
                                   f"{list(size)} and strides={list(stride)}")
            size, stride, offset, _ = check_window(size, stride, storage_offset, item,
                                                   _grown(source, size, stride,
                                                          storage_offset, item))
            n = source.nbytes() // item
            raw = source._bytes
            root_arr = from_address(address(raw), (n,), (item,), dt, raw, raw.flags.writeable)
        root = _make(root_arr)
        root._vc = self._vc = version       # (views taken before share the step, as torch's)
        self._data = from_address(address(root_arr) + offset * item, tuple(size),
                                  tuple(st * item for st in stride), dt, root_arr,
                                  root_arr.flags.writeable)
        self._storage_base = root
        self._view_info = None
        return self

    def detach_(self):
        if self._storage_base is not None and self._view_info is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are "
                               "using DistributedDataParallel (DDP) for training, and "
                               "gradient_as_bucket_view is set as True, gradients are views of "
                               "DDP buckets, and hence detach_() cannot be called on these "
                               "gradients. To fix this error, please refer to the "
                               "Optimizer.zero_grad() function in torch/optim/optimizer.py as "
                               "the solution.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self):
        """Like ``detach()``, but with a version counter of its own (starting at 0): for a
        view, a root of its own over the same memory array (the storage stays the same)."""
        t = self.detach()
        if not self.is_inference():
            b = self._storage_base
            if b is None:
                t._storage_base = None
            elif type(b._data) is np.ndarray:
                t._storage_base = _make(b._data)
        return t

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            from ember._legacy import type_name
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type_name(type(value))}")
        if self._requires_grad and value._data.dtype.kind not in "fcV":
            raise RuntimeError("data set to a tensor that requires gradients must be floating "
                               "point or complex dtype")
        self._data = value._data

    # ------------------------------------------------------------------ conversions
    def numpy(self, *, force=False):
        if type(force) is not bool:
            raise TypeError(f"numpy(): argument 'force' must be bool, not "
                            f"{type(force).__name__}")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.dtype == _dtype.bfloat16.np and not force:
            raise TypeError("Got unsupported ScalarType BFloat16")
        if self._data.dtype == _dtype.complex32.np:
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        if self._data.dtype in _dtype.QUANTIZED_NP:
            raise TypeError(f"Got unsupported ScalarType {_dtype.TYPE_NAMES[self.dtype.name]}")
        if _layout_name(self) != "strided":
            raise TypeError("can't convert Sparse layout tensor to numpy. Use "
                            "Tensor.to_dense() first.")
        if type(self._data) is Placeholder:
            raise TypeError("can't convert meta device type tensor to numpy. Use Tensor.cpu() "
                            "to copy the tensor to host memory first.")
        return self._data.view()     # shares memory; setting its .shape leaves the tensor

    def __array__(self, dtype=None):
        """``np.asarray(t)``: the data, shared. Without NumPy 2's ``copy`` keyword, as
        torch's (``np.array(t)`` warns that it will want one, then copies)."""
        if self._requires_grad:                      # torch: through numpy(), which refuses
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        a = self._data.view() if _layout_name(self) == "strided" else self.numpy()
        return a if dtype is None else a.astype(dtype)

    def tolist(self):
        if type(self._data) is Placeholder:
            no_data()
        if self._data.dtype in _dtype.QUANTIZED_NP:
            raise RuntimeError("load_scalar: invalid type")
        _dense_only(self)
        return _host(self._data).tolist()

    def item(self):
        if self._data.dtype in _dtype.QUANTIZED_NP and self._data.size == 1:
            return self.dequantize().item()
        if _layout_name(self) != "strided" and self._data.size == 1:
            return self.to_dense().item()
        if type(self._data) is Placeholder and self._data.size == 1:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               f"to Scalar")
        return _host(self._data).reshape(()).item()

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if self._data.size == 0 else 'more than one value'} is ambiguous")
        if type(self._data) is Placeholder:
            self.item()
        return bool(_host(self._data).reshape(()))

    def _python_scalar(self, kind):
        """The single element as a Python ``kind`` (float, int or complex), as torch
        converts it: a complex number with an imaginary part does not fit a real type."""
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if type(self._data) is Placeholder or self._data.dtype in _dtype.QUANTIZED_NP:
            return kind(self.item())
        v = _host(self._data).reshape(()).item()
        if type(v) is complex and kind is not complex:
            if v.imag != 0:
                ctype = "double" if kind is float else "int64_t"
                raise RuntimeError(f"value cannot be converted to type {ctype} without "
                                   f"overflow")
            v = v.real
        return kind(v)

    def __float__(self):
        if self._requires_grad and state.grad_enabled:
            _warn_scalar_of_grad()
        return self._python_scalar(float)

    def __int__(self):
        return self._python_scalar(int)

    def __complex__(self):
        if self._requires_grad and state.grad_enabled:
            _warn_scalar_of_grad()
        return self._python_scalar(complex)

    def __index__(self):
        if self._data.dtype.kind not in "biu" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if (self._data.ndim if type(self) is Tensor else self.dim()) == 0:   # (torch: dim())
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __contains__(self, element):
        if not isinstance(element, (Tensor, numbers.Number)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((self == element).any())

    def __dlpack__(self, stream=None, **kwargs):
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(**{k: v for k, v in kwargs.items()
                                        if k in ("max_version", "dl_device", "copy")})

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __reduce_ex__(self, protocol):
        if self._data.dtype in _dtype.QUANTIZED_NP:
            from ember._ops.quantized import rebuild_for_pickle
            return (rebuild_for_pickle, (self._data, self._qparams))
        from ember.serialization import _rebuild_tensor_for_pickle
        args = (self._data, self._requires_grad)
        if self._storage_base is not None and type(self._data) is np.ndarray:
            # a view travels with its whole storage, rebuilt at its offset (as torch's)
            from ember.storage import UntypedStorage
            raw = UntypedStorage._of(self)._bytes
            a = self._data
            args = (raw, self._requires_grad,
                    (self.storage_offset(), a.shape, self.stride(), a.dtype))
        if type(self) is Tensor:
            return (_rebuild_tensor_for_pickle, args)
        # a subclass: rebuilt as a Tensor, then as_subclass, then its __dict__ (as torch)
        from ember.serialization import _rebuild_from_type_v2
        return (_rebuild_from_type_v2, (_rebuild_tensor_for_pickle, type(self), args,
                                        dict(self.__dict__)))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        if type(self) is not Tensor and type(self.new_empty([])) is not type(self):
            raise RuntimeError("The default implementation of __deepcopy__() for non-wrapper "
                               "subclasses only works for subclass types that implement "
                               "new_empty() and for which that function returns another "
                               "instance of the same subclass. You should either properly "
                               "implement new_empty() for your subclass or override "
                               "__deepcopy__() if it is intended behavior for new_empty() to "
                               "return an instance of a different type.")
        if type(self._data) is not np.ndarray or self._data.dtype in _dtype.QUANTIZED_NP:
            t = type(self).__new__(type(self))
            _init(t, self._data.copy())
        else:
            t = _deepcopy_alias(self, memo)
        t._requires_grad = self._requires_grad
        if self.grad is not None:
            t.grad = self.grad.__deepcopy__(memo)
        if self.__dict__:
            import copy
            t.__dict__.update(copy.deepcopy(self.__dict__, memo))
        memo[id(self)] = t
        return t

    def __repr__(self, *, tensor_contents=None):
        from ember._tensor_str import tensor_repr
        r = tensor_repr(self, tensor_contents=tensor_contents)
        if type(self) is not Tensor and self.__dict__.get("_is_param"):
            return f"Parameter({r})"        # a Parameter of a custom tensor type (torch)
        return r

    def __format__(self, spec):
        if self._data.ndim == 0 and type(self) is Tensor:     # torch: a 0-d tensor formats
            return format(self.item(), spec)                  # as its number
        return object.__format__(self, spec) if spec else repr(self)

    __array_priority__ = 1000   # numpy defers binary operators to Tensor

    def __array_wrap__(self, array):
        """A NumPy function's result on tensors comes back as a Tensor, as torch's does
        (``np.exp(t)``, and ``t + array`` / ``t < array``, which Tensor leaves to NumPy: Note
        [NumPy operands]); a bool array becomes uint8, as torch's. The one-argument form is
        torch's too (NumPy 2 warns that it will want ``context, return_scalar``)."""
        from ember._creation import from_numpy
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return from_numpy(array)

    def cpu(self, memory_format=None):
        if type(self._data) is Placeholder:
            no_data()
        return self

    def cuda(self, device=None, non_blocking=False):
        to_device("cuda" if device is None else device)

    @property
    def H(self):
        return self.mT.conj() if self.ndim == 2 else _bad_H(self)

    @property
    def mH(self):
        return self.mT.conj()


def _deepcopy_alias(self, memo):
    """torch's deepcopy: the storage is copied once per ``memo`` and every tensor on it is
    rebuilt at its own offset and strides, so views copied together still alias (they are
    no autograd views: ``_base`` None). Each copy has a version counter of its own, at 1
    (a root of its own over the copied memory: torch's copies were each ``set_`` on it)."""
    from ember._kernels.shape import address, from_address
    root = self._root()
    ra = root._data
    lo = address(ra) + sum((n - 1) * st for n, st in zip(ra.shape, ra.strides) if st < 0)
    span = 0 if ra.size == 0 else ra.itemsize + sum((n - 1) * abs(st)
                                                   for n, st in zip(ra.shape, ra.strides))
    key = ("ember.storage", lo, span)       # the memory (roots made by set_ share it)
    new_root = memo.get(key)
    if new_root is None:
        buf = np.empty(max(span, 1), np.uint8)
        if span:
            buf[:] = from_address(lo, (span,), (1,), np.uint8, ra, False)
        arr = from_address(address(buf) + address(ra) - lo, ra.shape, ra.strides, ra.dtype,
                           buf, True)
        new_root = type(self).__new__(type(self)) if self is root else _object_new(Tensor)
        _init(new_root, arr)
        new_root._vc = 1
        memo[key] = new_root
        memo.setdefault(id(memo), []).append(root)        # keeps ``id(root)`` unique
        if self is root:
            return new_root
    a = self._data
    overlap = a.size > 1 and any(st == 0 and n > 1 for n, st in zip(a.shape, a.strides))
    nr = new_root._data
    new_lo = address(nr) + sum((n - 1) * st for n, st in zip(nr.shape, nr.strides) if st < 0)
    arr = from_address(new_lo + address(a) - lo, a.shape, a.strides, a.dtype, nr,
                       not overlap)
    t = type(self).__new__(type(self))
    _init(t, arr)
    own_root = _make(nr)                    # the same memory, its own version counter
    own_root._vc = 1
    t._storage_base = own_root
    return t


def _grown(storage, size, stride, offset, item):
    """The bytes of ``storage`` once ``set_`` has grown it to hold its window (as torch's
    resizable storages grow): a new buffer with the old bytes first. Every tensor on the
    old memory moves there (its owner becomes a view of a new root spanning the buffer).
    A storage over memory ember does not own (``from_numpy``) cannot grow."""
    have = storage.nbytes()
    try:
        sizes, strides, off = [int(x) for x in size], [int(x) for x in stride], int(offset)
    except (TypeError, ValueError):
        return have                         # (check_window reports bad arguments)
    if off < 0 or any(x < 0 for x in sizes):
        return have
    need = 0 if 0 in sizes else item * (off + 1 + sum(st * (n - 1)
                                                      for st, n in zip(strides, sizes)))
    if need <= have:
        return have
    owner = storage._owner
    if type(owner) is not np.ndarray or owner.base is not None or \
            not storage._bytes.flags.writeable:
        raise RuntimeError("Trying to resize storage that is not resizable")
    _move_storage(storage, need)
    return need


def _move_storage(storage, need):
    """Copy ``storage`` into a zeroed buffer of ``need`` bytes and move the tensors over
    the old memory (its owner, its owner's views, tensors on the same array) onto it."""
    import gc
    from ember._kernels.shape import address, from_address
    from ember.storage import _CACHE
    old = storage._bytes
    old_arr = storage._owner
    buf = np.zeros(need, np.uint8)
    buf[:old.shape[0]] = old
    lo = address(old)
    storage._bytes = storage._owner = buf
    owner = storage._root_ref() if storage._root_ref is not None else None
    if owner is None:
        return
    dt = owner._data.dtype
    new_root = _make(from_address(address(buf), (need // dt.itemsize,), (dt.itemsize,), dt,
                                  buf, True))
    new_root._vc = owner._vc
    on_old = {id(owner): owner}
    for r in gc.get_referrers(owner, old_arr):
        if isinstance(r, Tensor) and (r._storage_base is owner or r._data is old_arr):
            on_old[id(r)] = r
    for t in on_old.values():
        a = t._data
        t._data = from_address(address(buf) + address(a) - lo, a.shape, a.strides, a.dtype,
                               buf, a.flags.writeable)
        if t is owner or t._storage_base is owner:
            t._storage_base = new_root
    storage._owner = new_root._data
    _CACHE[id(new_root._data)] = storage


def _warn_scalar_of_grad():
    """torch's warning (once a process, or always after set_warn_always(True)) on
    float()/complex() of a tensor that requires grad with grad mode on (int() and item()
    say nothing)."""
    from ember._runtime_flags import warn_once
    warn_once("scalar of a tensor that requires grad",
              "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
              "behavior.\nConsider using tensor.detach() first.", stacklevel=4)


def _bad_H(t):
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {t.ndim}-D "
                       f"tensor.")


_TENSOR_TF = Tensor.__dict__["__torch_function__"].__func__


def _convert(ret, cls):
    """Results of the default handler, re-typed as the calling subclass."""
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        items = [_convert(r, cls) for r in ret]
        return type(ret)(*items) if hasattr(ret, "_fields") else type(ret)(items)
    return ret


def _nowrap(func):
    """Is ``func`` one of ``get_default_nowrap_functions()`` (the getter of ``_base``,
    ``grad`` or ``_grad``, before or after a TorchFunctionMode wrapped Tensor's)?"""
    prop = getattr(func, "__self__", None)
    if type(prop) is not property or getattr(func, "__name__", "") != "__get__":
        return False
    from ember.overrides import _WRAPPED
    return any(prop is Tensor.__dict__.get(n) or prop is _WRAPPED.get(n)
               for n in ("_base", "grad", "_grad"))


def _check_subclass(cls):
    """torch's TypeError when ``_make_subclass``/``as_subclass`` is given no Tensor class."""
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                        "Tensor is not possible. Make sure your class inherits from Tensor.")


def _init(t, arr):
    t._data = arr
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._storage_base = None
    t._view_info = None
    t._vc = 0
    t._meta = None


# Device-type and layout flags torch's tensors carry: ember's tensors live on the CPU (or on
# meta, see is_meta), strided and dense, so all of these are False.
for _flag in ("is_cuda", "is_xpu", "is_mps", "is_ipu", "is_hpu", "is_maia", "is_mtia", "is_xla",
              "is_ort", "is_vulkan", "is_mkldnn", "is_nested"):
    setattr(Tensor, _flag, property(lambda self: False))


def _is_set_to(self, tensor):
    """Same storage, offset, size and strides."""
    return (self.untyped_storage().data_ptr() == tensor.untyped_storage().data_ptr()
            and self.storage_offset() == tensor.storage_offset()
            and self.shape == tensor.shape and self.stride() == tensor.stride())


Tensor.is_set_to = _is_set_to
Tensor.is_same_size = lambda self, other: self.shape == other.shape
Tensor.is_nonzero = lambda self: bool(self)
Tensor.is_distributed = lambda self: False
Tensor.is_shared = lambda self: False        # no tensor lives in shared memory by itself
Tensor.is_pinned = lambda self, device=None: False


def _layout_name(t):
    """'strided', or a sparse tensor's layout (``ember/_kernels/sparse.py``)."""
    return getattr(t._data, "layout", "strided")


def _dense_only(t):
    """Refuse to read a sparse tensor's (absent) strided data, as torch does."""
    if _layout_name(t) != "strided":
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


def _host(arr):
    """The array Python reads values from: complex32 pairs as complex64."""
    if arr.dtype.kind == "V" and arr.dtype.names == ("real", "imag"):
        from ember._kernels.complex32 import to_c64
        return to_c64(arr)
    return arr


def _make(arr):
    """Wrap a NumPy array (no copy) as a fresh Tensor with no history."""
    t = _object_new(Tensor)
    t._data = arr
    t._requires_grad = False
    t._grad_fn = None
    t._output_nr = 0
    t._storage_base = None
    t._view_info = None
    t._vc = 0
    t._meta = None
    return t


def _address(a):
    return a.__array_interface__["data"][0]


def _storage_start(root):
    """Lowest address of the root array's memory (its strides may be negative only if it
    came from NumPy)."""
    return _address(root)


def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


def _wrap_dim(dim, ndim, opname="op"):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


# Python operators and their op names: (operator, function name, reflected?)
_OPERATORS = [
    ("__add__", "add"), ("__sub__", "sub"), ("__mul__", "mul"), ("__truediv__", "div"),
    ("__floordiv__", "floor_divide"), ("__mod__", "remainder"), ("__pow__", "pow"),
    ("__matmul__", "matmul"), ("__and__", "bitwise_and"), ("__or__", "bitwise_or"),
    ("__xor__", "bitwise_xor"), ("__lshift__", "bitwise_left_shift"),
    ("__rshift__", "bitwise_right_shift"),
    ("__eq__", "eq"), ("__ne__", "ne"), ("__lt__", "lt"), ("__le__", "le"), ("__gt__", "gt"),
    ("__ge__", "ge"), ("__neg__", "neg"), ("__abs__", "abs"), ("__invert__", "bitwise_not"),
    ("__iadd__", "add_"), ("__isub__", "sub_"), ("__imul__", "mul_"), ("__itruediv__", "div_"),
    ("__ifloordiv__", "floor_divide_"), ("__imod__", "remainder_"), ("__ipow__", "pow_"),
    ("__iand__", "bitwise_and_"), ("__ior__", "bitwise_or_"), ("__ixor__", "bitwise_xor_"),
    ("__ilshift__", "bitwise_left_shift_"), ("__irshift__", "bitwise_right_shift_"),
]
_REFLECTED = [
    ("__rfloordiv__", "floor_divide"), ("__rmod__", "remainder"), ("__rpow__", "pow"),
    ("__rmatmul__", "matmul"), ("__rlshift__", "bitwise_left_shift"),
    ("__rrshift__", "bitwise_right_shift"),
]
# ``other <op> self`` that torch computes as ``fn(self, other)`` (so ``2 * b`` records
# ``b`` as the node's first input, and ``1 - b`` is ``rsub(b, 1)``)
_REFLECTED_SELF_FIRST = [
    ("__radd__", "add"), ("__rsub__", "rsub"), ("__rmul__", "mul"), ("__rand__", "bitwise_and"),
    ("__ror__", "bitwise_or"), ("__rxor__", "bitwise_xor"),
]


def _comparison(fn, numpy_too):
    """``==``/``!=`` with a non-number (None, a string...) fall back to identity; ``!=`` with
    a NumPy array too (Note [NumPy operands])."""
    def op(self, other):
        if not isinstance(other, (Tensor, int, float, bool, complex, np.generic, list, tuple)) \
                and not (numpy_too and isinstance(other, np.ndarray)):
            return NotImplemented
        return fn(self, other)
    return op


def _invert(fn):
    def __invert__(self):
        if self._data.dtype.kind not in "biu":
            raise TypeError(f"~ (operator.invert) is only implemented on integer and Boolean-type "
                            f"tensors")
        return fn(self)
    return __invert__


# Note [NumPy operands]: as in torch, a Python operator with a NumPy array operand
# (``t + a``, ``t < a``, ``a * t``, ``t += a``) is NotImplemented on Tensor's side, except
# ``t == a`` (a Tensor). For ``t + a`` Python then asks the array: NumPy computes it with its
# own promotion (float32 tensor + int64 array is float64) and ``Tensor.__array_wrap__``
# returns a Tensor; ``a + t`` and ``t < a`` find NumPy deferring to Tensor's higher
# ``__array_priority__`` and raise Python's TypeError; ``a / t`` is ``t.reciprocal() * a``,
# the latter again left to NumPy.

def _hand_written_operator(fn, arg_error):
    """``self <op> other`` over a hand-written method (``/`` is ``div``): an operand that is
    no Tensor or number is NotImplemented (Note [NumPy operands])."""
    def op(self, other):
        try:
            return fn(self, other)
        except arg_error as e:
            if e.value is not other:
                raise
            return NotImplemented
    op.__name__ = fn.__name__
    return op


def _reflected(fn, arg_error, self_first=False):
    """``other <op> self``: a list or NumPy operand is NotImplemented (Note [argument types]
    in ``ember/_ops/registry.py``, Note [NumPy operands])."""
    def op(self, other):
        try:
            return fn(self, other) if self_first else fn(other, self)
        except arg_error as e:
            if e.value is not other:
                raise
            return NotImplemented
    return op


def install_methods(methods, functions):
    """Attach the generated op methods and the Python operators to Tensor."""
    from ember._dispatch import ArgumentTypeError
    from ember._ops.registry import operator_front
    for name, fn in methods.items():
        if name not in Tensor.__dict__ or name in ("__getitem__", "__setitem__"):
            setattr(Tensor, name, fn)
    for dunder, name in _OPERATORS:
        fn = methods.get(name)
        if fn is not None:
            if hasattr(fn, "_op"):
                fn = operator_front(fn, inplace=name.endswith("_"))
            elif dunder not in ("__neg__", "__abs__", "__invert__"):
                fn = _hand_written_operator(fn, ArgumentTypeError)
            setattr(Tensor, dunder, _comparison(fn, dunder == "__eq__")
                    if dunder in ("__eq__", "__ne__") else fn)
    for dunder, name in _REFLECTED:
        fn = functions.get(name)
        if fn is not None:
            setattr(Tensor, dunder, _reflected(fn, ArgumentTypeError))
    for dunder, name in _REFLECTED_SELF_FIRST:
        fn = functions.get(name)
        if fn is not None:
            setattr(Tensor, dunder, _reflected(fn, ArgumentTypeError, self_first=True))
    # operator wrappers carry their dunder names (``__torch_function__`` handlers read them)
    for dunder in ("__eq__", "__ne__", "__getitem__", "__setitem__") + tuple(
            d for d, _ in _REFLECTED + _REFLECTED_SELF_FIRST):
        fn = Tensor.__dict__.get(dunder)
        if fn is not None and getattr(fn, "__name__", dunder) in ("op", "getitem", "setitem"):
            fn.__name__, fn.__qualname__ = dunder, f"Tensor.{dunder}"
    if "reciprocal" in methods and "mul" in methods:
        recip, mul = methods["reciprocal"], methods["mul"]

        def rtruediv(other, self):
            """``other / self`` as torch computes it: ``self.reciprocal() * other`` (in float32
            ``255 / 250.`` is then 1.0200001, not the correctly rounded 1.0199999)."""
            if isinstance(other, np.ndarray):           # Note [NumPy operands]
                return recip(self) * other
            return mul(recip(self), other)
        Tensor.__rtruediv__ = Tensor.__rdiv__ = _reflected(rtruediv, ArgumentTypeError)
        Tensor.__rdiv__.__name__, Tensor.__rdiv__.__qualname__ = "__rdiv__", "Tensor.__rdiv__"
    if "positive" in methods:
        Tensor.__pos__ = methods["positive"]
    if "bitwise_not" in methods:
        Tensor.__invert__ = _invert(methods["bitwise_not"])
