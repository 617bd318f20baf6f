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
