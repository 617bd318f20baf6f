"""Parametrization-based weight and spectral normalization (torch.nn.utils.parametrizations),
built on ``ember.nn.utils.parametrize``: the tensor becomes ``module.parametrizations.<name>``
with its originals stored under ``original`` / ``original0``, ``original1``."""
import ember
from ember import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize
from ember.nn.utils.weight_norm import _rebuild, norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    """weight = g * v / ||v|| (norm over every dim but ``dim``; ``dim=None``: the whole v)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _rebuild(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrise ``module.<name>`` as magnitude (``original0``) times direction
    (``original1``); loads old ``<name>_g`` / ``<name>_v`` checkpoints too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                     unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_compat_hook)
    return module


class _SpectralNorm(Module):
    """weight / sigma, sigma the largest singular value of the weight seen as a
    ``(shape[dim], -1)`` matrix, estimated by power iteration on the buffers ``_u``, ``_v``
    (advanced only in training mode). A 1-D weight is just normalized."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        rank = weight.ndim
        if not -rank <= dim < rank:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{rank}, {rank - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim, self.eps = dim % rank, eps
        if rank == 1:
            return                      # a vector is only normalized: no power iteration
        self.n_power_iterations = n_power_iterations
        mat = self._reshape_weight_to_matrix(weight)
        for name, size in (("_u", mat.shape[0]), ("_v", mat.shape[1])):   # u drawn first
            with ember.no_grad():
                start = ember.empty(size, dtype=mat.dtype).normal_(0, 1)
            self.register_buffer(name, F.normalize(start, dim=0, eps=eps))
        self._power_method(mat, 15)     # a good estimate before the first forward

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        with ember.no_grad():
            mat = mat.detach()
            for _ in range(n_power_iterations):       # buffers updated in place
                self._u.copy_(F.normalize(ember.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(mat.t().conj(), self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight):
        if weight.ndim < 2:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        # sigma = u^H W v with copies of the buffers (the next step updates them in place)
        return weight / ember.vdot(self._u.clone(), ember.mv(mat, self._v.clone()))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Register a spectral-norm parametrization on ``module.<name>`` (``dim`` defaults to 1
    for transposed convolutions, else 0)."""
    from ember.nn.modules.conv import _ConvTransposeNd
    target = getattr(module, name, None)
    if not isinstance(target, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:                 # the output channels: dim 1 of a transposed conv weight
        dim = int(isinstance(module, _ConvTransposeNd))
    norm = _SpectralNorm(target, n_power_iterations=n_power_iterations, dim=dim, eps=eps)
    return parametrize.register_parametrization(module, name, norm)
