"""ember.nn.functional (torch.nn.functional). Each family lives in its own private module
(``_activation``, ``_conv``, ``_pooling``, ``_norm``, ``_loss``, ``_rnn``, ``_attention``,
``_vision``, ``_sparse`` ...) and lists its public names in ``__all__``; they are re-exported
here."""
import importlib as _importlib
import pkgutil as _pkgutil

__all__ = []
for _m in sorted(m.name for m in _pkgutil.iter_modules(__path__) if m.name.startswith("_")):
    _mod = _importlib.import_module(f"{__name__}.{_m}")
    for _name in getattr(_mod, "__all__", ()):
        globals()[_name] = getattr(_mod, _name)
        __all__.append(_name)

