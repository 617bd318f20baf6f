"""The few ``torch._C`` names Python programs use directly: the switches of the
``__torch_function__`` protocol (``ember/overrides.py``) and ``_make_subclass``'s home."""
from ember.overrides import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                             _disabled_torch_function_impl, is_torch_function_enabled)
from ember._tensor import Tensor as TensorBase  # noqa: F401


def _is_torch_function_enabled():
    return is_torch_function_enabled()


def _is_torch_function_mode_enabled():
    from ember.overrides import _mode_active
    return _mode_active()


def __getattr__(name):
    # ``torch._C._nn``: the nn.functional functions torch implements in C, under their C
    # names; fx prints calls to them so (``torch._C._nn.gelu``) and its code runs them
    if name == "_nn":
        import types
        from ember.fx._names import C_NN
        from ember.nn import functional as F
        ns = types.ModuleType("ember._C._nn")
        for py_name, c_name in C_NN.items():
            setattr(ns, c_name, getattr(F, py_name))
        globals()["_nn"] = ns
        return ns
    raise AttributeError(f"module 'ember._C' has no attribute '{name}'")
