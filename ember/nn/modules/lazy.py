"""Lazy modules: parameters declared as ``Uninitialized*`` placeholders get their shapes
from the first input. A forward pre-hook calls ``initialize_parameters(*args)``; once
nothing is left uninitialized the module becomes ``cls_to_become``."""
from ember.nn.parameter import is_lazy

__all__ = []


class LazyModuleMixin:
    """Mix in before a Module class; the subclass defines ``initialize_parameters``."""
    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def has_uninitialized_params(self):
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(is_lazy(t) for t in tensors)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """As Module's, but placeholders go in as they are (detaching one would hide that it
        is uninitialized: its ops raise, as torch's)."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        if not keep_vars:
            for name, t in list(self._parameters.items()) + list(self._buffers.items()):
                if is_lazy(t) and prefix + name in destination:
                    destination[prefix + name] = t

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module, args):
        module.initialize_parameters(*args)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {type(module).__name__} has not been fully "
                               "initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become
