"""IterDataPipe, MapDataPipe and DataChunk: the base classes of every data pipe.

Pipes register themselves as methods by name (``functional_datapipe``), so
``IterableWrapper(x).map(f).batch(4)`` builds a chain. Each IterDataPipe's ``__iter__`` is
hooked (``_hook_iterator``): a new pass resets the pipe and invalidates older iterators.
"""
import abc
import contextlib
import functools
from typing import Dict, Generic, TypeVar

from ember.utils.data.dataset import Dataset, IterableDataset
from ember.utils.data.datapipes._hook_iterator import hook_iterator

__all__ = ["DataChunk", "DFIterDataPipe", "IterDataPipe", "MapDataPipe"]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class _DataPipeMeta(abc.ABCMeta):     # (IterableDataset is an abc.Iterable)
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
        registered = type(self)._base().functions.get(attribute_name)
        if registered is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute "
                                 f"'{attribute_name}")
        bound = functools.partial(registered, self)
        return functools.update_wrapper(bound, registered.func, assigned=("__doc__",))

    @classmethod
    def register_function(cls, function_name, function):
        cls._base().functions[function_name] = function

    @classmethod
    def register_datapipe_as_function(cls, function_name, cls_to_register,
                                      enable_df_api_tracing=False):
        table = cls._base().functions
        if function_name in table:
            raise Exception(f"Unable to add DataPipe function name {function_name} as it is "
                            "already taken")
        builder = functools.partial(_construct, cls_to_register)
        table[function_name] = functools.update_wrapper(builder, cls_to_register,
                                                        assigned=("__doc__",))

    def __getstate__(self):
        hook = type(self)._base().getstate_hook
        return self.__dict__ if hook is None else hook(self.__dict__)

    def __reduce_ex__(self, *args, **kwargs):
        hook = type(self)._base().reduce_ex_hook
        if hook is not None:
            with contextlib.suppress(NotImplementedError):
                return hook(self)
        return super().__reduce_ex__(*args, **kwargs)

    @classmethod
    def _install_hook(cls, slot, hook_fn):
        """Set class-wide hook ``slot``; replacing one that is set is an error."""
        base = cls._base()
        if hook_fn is not None and getattr(base, slot) is not None:
            raise RuntimeError(f"Attempt to override existing {slot}")
        setattr(base, slot, hook_fn)

    @classmethod
    def set_getstate_hook(cls, hook_fn):
        cls._install_hook("getstate_hook", hook_fn)

    @classmethod
    def set_reduce_ex_hook(cls, hook_fn):
        cls._install_hook("reduce_ex_hook", hook_fn)

    def _shown(self, slot):
        hook = getattr(type(self)._base(), slot)
        return type(self).__qualname__ if hook is None else hook(self)

    def __repr__(self):
        return self._shown("repr_hook")

    def __str__(self):
        return self._shown("str_hook")

    def __dir__(self):
        return [*super().__dir__(), *type(self)._base().functions]


def _construct(pipe_class, source, *args, **kwargs):
    """What ``source.<name>(*args, **kwargs)`` runs for a registered pipe class."""
    return pipe_class(source, *args, **kwargs)


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


class DFIterDataPipe(IterDataPipe):
    """An IterDataPipe whose items are data frames (it answers ``_is_dfpipe()`` with True)."""

    def _is_dfpipe(self):
        return True


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
    """A batch: a list that keeps the sequence it was made from (``items``)."""

    def __init__(self, items):
        super().__init__(items)
        self.items = items

    def as_str(self, indent: str = "") -> str:
        """``indent`` + ``[a, b, ...]`` with ``str`` of each element."""
        return f"{indent}[{', '.join(map(str, self))}]"

    def __iter__(self):
        yield from list.__iter__(self)

    def raw_iterator(self):
        """The original ``items``, element by element."""
        yield from self.items


class _DataPipeSerializationWrapper:
    """How a DataLoader holds a pipe (``loader.dataset``): pickles as the bare pipe, kept
    under ``_datapipe``."""

    def __init__(self, datapipe):
        self._datapipe = datapipe

    def __getstate__(self):
        return self._datapipe

    def __setstate__(self, state):
        self._datapipe = state

    def __len__(self):
        try:
            size = len(self._datapipe)
        except Exception as e:
            raise TypeError(f"{type(self).__name__} instance doesn't have valid length") from e
        return size


class _IterDataPipeSerializationWrapper(_DataPipeSerializationWrapper, IterDataPipe):
    """Iterates the wrapped pipe (one pass per ``iter``)."""
    _datapipe_iter = None

    def __iter__(self):
        self._datapipe_iter = iter(self._datapipe)
        return self

    def __next__(self):
        return next(self._datapipe_iter)


class _MapDataPipeSerializationWrapper(_DataPipeSerializationWrapper, MapDataPipe):
    """Indexes the wrapped pipe."""

    def __getitem__(self, idx):
        return self._datapipe[idx]
