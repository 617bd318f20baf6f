"""IterDataPipe, MapDataPipe and DataChunk: the base classes of every data pipe.

Pipes register themselves as methods by name (``functional_datapipe``), so
``IterableWrapper(x).map(f).batch(4)`` builds a chain. Each IterDataPipe's ``__iter__`` is
hooked (``_hook_iterator``): a new pass resets the pipe and invalidates older iterators.
"""
import functools
from typing import Dict, Generic, TypeVar

from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.datapipes._hook_iterator import hook_iterator

__all__ = ["DataChunk", "IterDataPipe", "MapDataPipe"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class _DataPipeMeta(type):
    """Hooks ``__iter__`` of every IterDataPipe subclass as it is defined."""

    def __new__(mcs, name, bases, namespace, **kwargs):
        if "__iter__" in namespace and name != "IterDataPipe":
            namespace["__iter__"] = hook_iterator(namespace["__iter__"])
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class _Registry:
    """Shared by both bases: the functional-form table and the pickling/repr hooks."""
    functions: Dict[str, functools.partial] = {}
    reduce_ex_hook = None
    getstate_hook = None
    str_hook = None
    repr_hook = None

    def __getattr__(self, attribute_name):
        functions = type(self)._base().functions
        if attribute_name in functions:
            function = functools.partial(functions[attribute_name], self)
            functools.update_wrapper(wrapper=function, wrapped=functions[attribute_name].func,
                                     assigned=("__doc__",))
            return function
        raise AttributeError(f"'{self.__class__.__name__}' object has no attribute "
                             f"'{attribute_name}")

    @classmethod
    def register_function(cls, function_name, function):
        cls._base().functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        base = cls._base()
        if function_name in base.functions:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")

        def class_function(cls_, source_dp, *args, **kwargs):
            return cls_(source_dp, *args, **kwargs)

        function = functools.partial(class_function, cls_to_register)
        functools.update_wrapper(wrapper=function, wrapped=cls_to_register,
                                 assigned=("__doc__",))
        base.functions[function_name] = function

    def __getstate__(self):
        state = self.__dict__
        hook = type(self)._base().getstate_hook
        return hook(state) if hook is not None else state

    def __reduce_ex__(self, *args, **kwargs):
        hook = type(self)._base().reduce_ex_hook
        if hook is not None:
            try:
                return hook(self)
            except NotImplementedError:
                pass
        return super().__reduce_ex__(*args, **kwargs)

    @classmethod
    def set_getstate_hook(cls, hook_fn):
        base = cls._base()
        if base.getstate_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing getstate_hook")
        base.getstate_hook = hook_fn

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn):
        base = cls._base()
        if base.reduce_ex_hook is not None and hook_fn is not None:
            raise RuntimeError("Attempt to override existing reduce_ex_hook")
        base.reduce_ex_hook = hook_fn

    def __repr__(self):
        hook = type(self)._base().repr_hook
        return hook(self) if hook is not None else str(self.__class__.__qualname__)

    def __str__(self):
        hook = type(self)._base().str_hook
        return hook(self) if hook is not None else str(self.__class__.__qualname__)

    def __dir__(self):
        return list(super().__dir__()) + list(type(self)._base().functions.keys())


class IterDataPipe(_Registry, IterableDataset, Generic[T_co], metaclass=_DataPipeMeta):
    """A stream of samples that can be chained by functional form (``dp.map(f)``)."""
    functions: Dict[str, functools.partial] = {}
    reduce_ex_hook = None
    getstate_hook = None
    str_hook = None
    repr_hook = None
    _valid_iterator_id = None
    _number_of_samples_yielded = 0
    _snapshot_state = None
    _fast_forward_iterator = None

    @classmethod
    def _base(cls):
        return IterDataPipe

    def __iter__(self):
        return self

    def reset(self) -> None:
        """Called at the start of each pass; pipes with buffers or RNGs clear them here."""


class MapDataPipe(_Registry, Dataset, Generic[T_co], metaclass=_DataPipeMeta):
    """An indexable collection of samples, chainable by functional form."""
    functions: Dict[str, functools.partial] = {}
    reduce_ex_hook = None
    getstate_hook = None
    str_hook = None
    repr_hook = None

    @classmethod
    def _base(cls):
        return MapDataPipe


class DataChunk(list, Generic[T]):
    """A batch: a list that remembers its items (``raw_iterator``) and prints compactly."""

    def __init__(self, items):
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        return indent + "[" + ", ".join(str(i) for i in iter(self)) + "]"

    def __iter__(self):
        yield from super().__iter__()

    def raw_iterator(self):
        yield from self.items



class _DataPipeSerializationWrapper:
    """How a DataLoader holds a pipe (``loader.dataset``): the pipe under ``_datapipe``."""

    def __init__(self, datapipe):
        self._datapipe = datapipe

    def __getstate__(self):
        return self._datapipe

    def __setstate__(self, state):
        self._datapipe = state

    def __len__(self):
        try:
            return len(self._datapipe)
        except Exception as e:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length") from e


class _IterDataPipeSerializationWrapper(_DataPipeSerializationWrapper, IterDataPipe):
    def __init__(self, datapipe):
        super().__init__(datapipe)
        self._datapipe_iter = None

    def __setstate__(self, state):
        super().__setstate__(state)
        self._datapipe_iter = None

    def __iter__(self):
        self._datapipe_iter = iter(self._datapipe)
        return self

    def __next__(self):
        return next(self._datapipe_iter)


class _MapDataPipeSerializationWrapper(_DataPipeSerializationWrapper, MapDataPipe):
    def __getitem__(self, idx):
        return self._datapipe[idx]
