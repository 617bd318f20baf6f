"""Spectral normalization (Miyato et al., 2018) as a forward pre-hook: before each forward,
``module.<name>`` is recomputed as ``<name>_orig / sigma``, where sigma, the largest singular
value of the weight viewed as a ``(shape[dim], -1)`` matrix, is estimated by power iteration
with the persistent vectors ``<name>_u`` (length shape[dim]) and ``<name>_v``."""
import numpy as np

import ember
from ember.nn.parameter import Parameter, UninitializedParameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook",
           "spectral_norm", "remove_spectral_norm"]


def _unit(x, eps):
    """``x / max(||x||, eps)`` for a vector."""
    return x / (x * x).sum(0, keepdim=True).sqrt().clamp(min=eps)


class SpectralNorm:
    """The pre-hook object; one per normalized parameter."""
    _version = 1     # v1 stores ``<name>_v`` too (v0 checkpoints hold the computed weight)

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """``weight`` with ``dim`` moved first, flattened to 2-D."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def _power_iteration(self, mat, u, v):
        """Advance the singular-vector estimates, writing into the buffers themselves."""
        for _ in range(self.n_power_iterations):
            v.copy_(_unit(ember.mv(mat.t(), u), self.eps))
            u.copy_(_unit(ember.mv(mat, v), self.eps))

    def compute_weight(self, module, do_power_iteration):
        """``<name>_orig / sigma`` with sigma = u^T W v."""
        weight, u, v = (getattr(module, f"{self.name}{s}") for s in ("_orig", "_u", "_v"))
        mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with ember.no_grad():
                self._power_iteration(mat, u, v)
            u, v = u.clone(), v.clone()         # keep autograd off the buffers changed later
        return weight / ember.dot(u, ember.mv(mat, v))

    def remove(self, module):
        with ember.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """A ``v`` with ``u^T W v = target_sigma`` (least squares), for v0 checkpoints."""
        w = weight_mat.numpy(force=True)
        v = ember.from_numpy(np.linalg.pinv(w.T @ w) @ w.T @ u.numpy(force=True))
        v = v.to(weight_mat.dtype)
        scale = target_sigma / ember.dot(u, ember.mv(weight_mat, v))
        return v * scale

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        if any(isinstance(hook, SpectralNorm) and hook.name == name
               for hook in module._forward_pre_hooks.values()):
            raise RuntimeError("Cannot register two spectral_norm hooks on the same "
                               f"parameter {name}")
        method = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "spectral normalization")
        sizes = method.reshape_weight_to_matrix(weight).shape
        with ember.no_grad():           # random unit vectors, u (rows) drawn before v (columns)
            u, v = [_unit(weight.new_empty(n).normal_(0, 1), eps) for n in sizes]
        del module._parameters[name]
        module.register_parameter(f"{name}_orig", weight)
        setattr(module, name, weight.data)     # plain attribute until the first forward
        for suffix, vector in (("_u", u), ("_v", v)):
            module.register_buffer(f"{name}{suffix}", vector)
        module.register_forward_pre_hook(method)
        module._register_state_dict_hook(SpectralNormStateDictHook(method))
        module._register_load_state_dict_pre_hook(SpectralNormLoadStateDictPreHook(method))
        return method


class SpectralNormLoadStateDictPreHook:
    """Upgrades version-0 checkpoints (weight + weight_orig + u, no v) on load."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys,
                 unexpected_keys, error_msgs):
        fn = self.fn
        versions = local_metadata.get("spectral_norm", {})
        version = versions.get(f"{fn.name}.version")
        if version is not None and version >= 1:
            return
        key = prefix + fn.name
        if version is None and key not in state_dict \
                and all(key + s in state_dict for s in ("_orig", "_u", "_v")):
            return                      # already in the current layout
        absent = [key + s for s in ("_orig", "", "_u") if key + s not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with ember.no_grad():
            orig = state_dict[key + "_orig"]
            sigma = (orig / state_dict.pop(key)).mean()
            state_dict[key + "_v"] = fn._solve_v_and_rescale(
                fn.reshape_weight_to_matrix(orig), state_dict[key + "_u"], sigma)


class SpectralNormStateDictHook:
    """Records the SpectralNorm version in the state dict's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectrally normalize ``module.<name>``; ``dim`` defaults to 1 for ConvTranspose
    layers (their output channels), else 0."""
    if dim is None:
        transposed = type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d",
                                               "ConvTranspose3d")
        dim = 1 if transposed else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def _drop_first(hooks, match):
    for k, hook in hooks.items():
        if match(hook):
            del hooks[k]
            return


def remove_spectral_norm(module, name="weight"):
    """Undo ``spectral_norm``: ``module.<name>`` becomes a Parameter holding the current
    normalized weight."""
    hooks = module._forward_pre_hooks
    key = next((k for k, h in hooks.items() if isinstance(h, SpectralNorm) and h.name == name),
               None)
    if key is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hooks[key].remove(module)
    del hooks[key]
    _drop_first(module._state_dict_hooks,
                lambda h: isinstance(h, SpectralNormStateDictHook) and h.fn.name == name)
    _drop_first(module._load_state_dict_pre_hooks,
                lambda h: isinstance(h, SpectralNormLoadStateDictPreHook)
                and h.fn.name == name)
    return module
