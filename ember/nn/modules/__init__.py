"""nn modules, one file per family (``module``, ``container``, ``linear``, ``conv``,
``pooling``, ``normalization``, ``activation``, ``loss``, ``rnn``, ``transformer`` ...),
each listing its public classes in ``__all__``; re-exported here and from ``ember.nn``."""
import importlib as _importlib
import pkgutil as _pkgutil

__all__ = []
_FIRST = ("module", "container")      # others subclass these
for _m in list(_FIRST) + sorted(m.name for m in _pkgutil.iter_modules(__path__)
                                if m.name not in _FIRST):
    try:
        _mod = _importlib.import_module(f"{__name__}.{_m}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_m}":
            raise
        continue
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)
