"""``functional_datapipe``: register a pipe class as a method of every pipe."""
from ember.utils.data.datapipes.datapipe import IterDataPipe, MapDataPipe

__all__ = ["functional_datapipe", "guaranteed_datapipes_determinism", "non_deterministic"]


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
