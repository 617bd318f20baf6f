"""``torch.__future__``: opt-in switches for how ``nn.Module`` conversions (``.to(...)``,
``.double()``, ``.cpu()``...) treat existing Parameter objects.

- overwrite: each parameter becomes a new Parameter object (instead of ``.data`` being set
  on the old one);
- swap: the converted tensor is swapped into the old object with
  ``torch.utils.swap_tensors`` (same object, new class and contents); wins over overwrite.
"""
from __future__ import annotations

_ON = {"overwrite": False, "swap": False}


def _pair(kind):
    """The set_/get_ functions of one switch."""
    def set_switch(value: bool) -> None:
        _ON[kind] = value

    def get_switch() -> bool:
        return _ON[kind]

    for f, verb in ((set_switch, "set"), (get_switch, "get")):
        f.__name__ = f.__qualname__ = f"{verb}_{kind}_module_params_on_conversion"
    return set_switch, get_switch


set_overwrite_module_params_on_conversion, get_overwrite_module_params_on_conversion = \
    _pair("overwrite")
set_swap_module_params_on_conversion, get_swap_module_params_on_conversion = _pair("swap")
