"""``functional_datapipe``: register a pipe class as a method of every pipe; determinism and
type-validation decorators."""
import functools
import inspect
import typing

from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["argument_validation", "functional_datapipe", "guaranteed_datapipes_determinism",
           "non_deterministic", "runtime_validation", "runtime_validation_disabled"]


class functional_datapipe:
    """``@functional_datapipe("name")`` makes ``dp.name(*args)`` build ``Cls(dp, *args)``."""

    def __init__(self, name: str, enable_df_api_tracing=False):
        self.name = name
        self.enable_df_api_tracing = enable_df_api_tracing

    def __call__(self, cls):
        if isinstance(cls, type) and issubclass(cls, IterDataPipe):
            IterDataPipe.register_datapipe_as_function(self.name, cls,
                                                       self.enable_df_api_tracing)
        elif isinstance(cls, type) and issubclass(cls, MapDataPipe):
            MapDataPipe.register_datapipe_as_function(self.name, cls)
        else:
            raise TypeError("`functional_datapipe` can only decorate IterDataPipe")
        return cls


_determinism = False


class guaranteed_datapipes_determinism:
    """Context manager: inside it, pipes marked ``non_deterministic`` refuse to be built."""

    def __enter__(self):
        global _determinism
        self.prev, _determinism = _determinism, True

    def __exit__(self, *exc):
        global _determinism
        _determinism = self.prev


def non_deterministic(cls):
    """Mark a pipe class whose output order is not determined by its input."""
    if not (isinstance(cls, type) and issubclass(cls, IterDataPipe)):
        raise NotImplementedError("non_deterministic in ember decorates IterDataPipe "
                                  "classes only")
    init = cls.__init__

    def checked_init(self, *args, **kwargs):
        if _determinism:
            raise TypeError(f"{cls.__name__} is non-deterministic, but you set "
                            "'guaranteed_datapipes_determinism'. You can turn off determinism "
                            "for this DataPipe if that is acceptable for your application")
        init(self, *args, **kwargs)
    cls.__init__ = checked_init
    return cls


# ---- type validation ----------------------------------------------------------------------

_runtime_validation_enabled = True


class runtime_validation_disabled:
    """Context manager: inside it, ``runtime_validation`` lets every item through."""

    def __enter__(self):
        global _runtime_validation_enabled
        self.prev, _runtime_validation_enabled = _runtime_validation_enabled, False

    def __exit__(self, *exc):
        global _runtime_validation_enabled
        _runtime_validation_enabled = self.prev


def _pipe_class(hint):
    """The DataPipe class a hint names (``IterDataPipe`` or ``IterDataPipe[int]``), or None."""
    return hint if isinstance(hint, type) and issubclass(hint, (IterDataPipe, MapDataPipe)) \
        else None


def argument_validation(f):
    """Check, at each call of ``f`` (typically ``__init__``), that arguments annotated with
    a DataPipe class are instances of it (TypeError otherwise).  Annotations subscripted
    with an item type (``IterDataPipe[int]``) are not checked, as in torch 2.13."""
    signature = inspect.signature(f)
    hints = typing.get_type_hints(f)

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        for name, value in bound.arguments.items():
            cls = _pipe_class(hints.get(name))
            if cls is not None and not isinstance(value, cls):
                raise TypeError(f"Expected argument '{name}' as a {cls.__name__}, but found "
                                f"{type(value)}")
        return f(*args, **kwargs)
    return wrapper


def _item_type(pipe):
    """The item type ``T`` of ``class P(IterDataPipe[T])`` when it is a plain class."""
    for klass in type(pipe).__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            args = typing.get_args(base)
            if _pipe_class(typing.get_origin(base)) and len(args) == 1:
                return args[0] if isinstance(args[0], type) else None
    return None


def runtime_validation(f):
    """Decorate a pipe's ``__iter__``: while validation is enabled (see
    ``runtime_validation_disabled``) every item must be an instance of the item type ``T`` of
    ``class P(IterDataPipe[T])`` (RuntimeError otherwise; no check for typing constructs).
    torch 2.13 itself fails here (its DataPipes lost the ``type`` attribute); ember checks."""
    if f.__name__ != "__iter__":
        raise TypeError(f"Can not decorate function {f.__name__} with 'runtime_validation'")

    @functools.wraps(f)
    def wrapper(self):
        expected = _item_type(self) if _runtime_validation_enabled else None
        for item in f(self):
            if expected is not None and not isinstance(item, expected):
                raise RuntimeError(f"Expected an instance as subtype of {expected.__name__}, "
                                   f"but found {item!r}({type(item)})")
            yield item
    return wrapper
