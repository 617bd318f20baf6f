"""torch.nn.utils.init: ``skip_init`` builds a module without running its initializers."""
import inspect

import ember

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialized (empty) parameters and buffers:
    built on the meta device, then given fresh storage on ``kwargs['device']`` (cpu)."""
    if not issubclass(module_cls, ember.nn.Module):     # (TypeError for a non-class)
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
