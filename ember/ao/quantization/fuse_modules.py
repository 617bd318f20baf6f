"""Module fusion (torch.ao.quantization.fuse_modules): replace listed submodules (by
qualified name) with one fused module in the first's place and ``Identity`` in the others'."""
from __future__ import annotations

import copy

from ember import nn
from ember.ao.quantization.fuser_method_mappings import get_fuser_method

__all__ = ["fuse_known_modules", "fuse_modules", "fuse_modules_qat"]


def _get_module(model, name):
    for part in name.split("."):
        model = getattr(model, part)
    return model


def _set_module(model, name, module):
    *parents, leaf = name.split(".")
    for part in parents:
        model = getattr(model, part)
    setattr(model, leaf, module)


def fuse_known_modules(mod_list, is_qat, additional_fuser_method_mapping=None):
    """[fused, Identity, ...] for the modules ``mod_list`` (a known type sequence). The first
    module's forward pre-hooks and the last one's forward hooks move to the fused module."""
    types = tuple(type(m) for m in mod_list)
    fuser_method = get_fuser_method(types, additional_fuser_method_mapping)
    fused = fuser_method(is_qat, *mod_list)
    for hook in mod_list[0]._forward_pre_hooks.values():
        fused.register_forward_pre_hook(hook)
    mod_list[0]._forward_pre_hooks.clear()
    for hook in mod_list[-1]._forward_hooks.values():
        fused.register_forward_hook(hook)
    mod_list[-1]._forward_hooks.clear()
    new_mods = [fused]
    for _ in mod_list[1:]:
        identity = nn.Identity()
        identity.training = mod_list[0].training
        new_mods.append(identity)
    return new_mods


def _fuse_one(model, names, is_qat, fuser_func, fuse_custom_config_dict):
    extra = (fuse_custom_config_dict or {}).get("additional_fuser_method_mapping", {})
    mods = [_get_module(model, n) for n in names]
    for name, new in zip(names, fuser_func(mods, is_qat, extra)):
        _set_module(model, name, new)


def _fuse_modules(model, modules_to_fuse, is_qat, inplace=False,
                  fuser_func=fuse_known_modules, fuse_custom_config_dict=None):
    if not inplace:
        model = copy.deepcopy(model)
    if all(isinstance(m, str) for m in modules_to_fuse):
        _fuse_one(model, modules_to_fuse, is_qat, fuser_func, fuse_custom_config_dict)
    else:
        for names in modules_to_fuse:
            _fuse_one(model, names, is_qat, fuser_func, fuse_custom_config_dict)
    return model


def fuse_modules(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                 fuse_custom_config_dict=None):
    """Fuse each list of module names in ``modules_to_fuse`` (or the one list) for
    post-training quantization (conv+bn folded: the model must be in eval mode).
    Supported: conv+bn, conv+bn+relu, conv+relu, linear+relu, linear+bn, bn+relu,
    convtranspose+bn. Returns the fused model (a copy unless ``inplace``)."""
    return _fuse_modules(model, modules_to_fuse, is_qat=False, inplace=inplace,
                         fuser_func=fuser_func, fuse_custom_config_dict=fuse_custom_config_dict)


def fuse_modules_qat(model, modules_to_fuse, inplace=False, fuser_func=fuse_known_modules,
                     fuse_custom_config_dict=None):
    """:func:`fuse_modules` for quantization-aware training (batch norm kept, in
    ``ConvBn*``/``LinearBn1d`` containers)."""
    return _fuse_modules(model, modules_to_fuse, is_qat=True, inplace=inplace,
                         fuser_func=fuser_func, fuse_custom_config_dict=fuse_custom_config_dict)
