"""Hook-based weight normalisation (the ``torch.nn.utils.weight_norm`` API).

A parameter ``w`` is split into a magnitude ``w_g`` and a direction ``w_v`` with
``w = w_g * w_v / ||w_v||`` (the norm taken over every dimension except ``dim``).
A forward pre-hook rebuilds ``w`` from the two pieces before each call.
"""
import warnings

import ember  # noqa: F401  (keeps ember's tensor methods loaded for the maths below)
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """p-norm of ``v`` over all dimensions but ``dim`` (kept as size-1 dims).

    ``dim == -1`` means "no dimension is spared": a single norm over the whole tensor.
    """
    if dim == -1:
        if hasattr(v, "norm"):
            return v.norm(pow)
        return (v.abs() ** pow).sum() ** (1.0 / pow)
    ndim = max(v.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return ember.norm_except_dim(v, pow, dim % ndim)      # (torch's norms: Note [weight norm])


def _rebuild(direction, magnitude, dim):
    return ember._weight_norm(direction, magnitude, dim)      # (Note [weight norm])


class WeightNorm:
    """The pre-hook object; ``name`` is the parameter it manages, ``dim`` the kept axis."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    @property
    def _g(self):
        return self.name + "_g"

    @property
    def _v(self):
        return self.name + "_v"

    def compute_weight(self, module):
        return _rebuild(getattr(module, self._v), getattr(module, self._g), self.dim)

    @staticmethod
    def apply(module, name, dim):
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
        if any(isinstance(h, WeightNorm) and h.name == name
               for h in module._forward_pre_hooks.values()):
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                               f"parameter {name}")
        hook = WeightNorm(name, dim)
        original = getattr(module, name)
        if isinstance(original, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        # swap the single parameter for its magnitude/direction pair
        del module._parameters[name]
        magnitude = norm_except_dim(original, 2, hook.dim).detach()
        module.register_parameter(hook._g, Parameter(magnitude))
        module.register_parameter(hook._v, Parameter(original.detach()))
        setattr(module, name, hook.compute_weight(module))
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module):
        merged = self.compute_weight(module)
        delattr(module, self.name)
        for piece in (self._g, self._v):
            del module._parameters[piece]
        setattr(module, self.name, Parameter(merged.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrise ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v``."""
    # the deprecation is reported from inside ``apply`` at this line (a library location,
    # so Python's default filter shows it once per process, as torch does)
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo ``weight_norm``: fold ``<name>_g``/``<name>_v`` back into one parameter."""
    hooks = module._forward_pre_hooks
    key = next((k for k, h in hooks.items()
                if isinstance(h, WeightNorm) and h.name == name), None)
    if key is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hooks[key].remove(module)
    del hooks[key]
    return module
