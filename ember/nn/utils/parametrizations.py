"""Parametrization-based orthogonality, weight and spectral normalization
(torch.nn.utils.parametrizations), built on ``ember.nn.utils.parametrize``: the tensor becomes
``module.parametrizations.<name>`` with its originals stored under ``original`` /
``original0``, ``original1``."""
import ember
from ember import Tensor
from ember.nn import functional as F
from ember.nn.modules.module import Module
from ember.nn.utils import parametrize
from ember.nn.utils.weight_norm import _rebuild, norm_except_dim

__all__ = ["orthogonal", "weight_norm", "spectral_norm"]


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


# ---- orthogonal -------------------------------------------------------------------------

_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _positive_qr(x):
    """The Q of ``x = QR`` (shape (..., n, k), n >= k) normalised so that diag(R) > 0."""
    q, r = ember.linalg.qr(x)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _tall(fn):
    """Run ``fn(self, x)`` on the tall orientation (..., n, k), n >= k, of x; transpose back."""
    def wrapped(self, x):
        wide = x.size(-2) < x.size(-1)
        out = fn(self, x.mT if wide else x)
        return out.mT if wide and isinstance(out, Tensor) else out
    return wrapped


class _Orthogonal(Module):
    """Maps any tensor of shape (..., n, k) onto matrices with orthonormal columns (rows when
    n < k).

    ``matrix_exp`` / ``cayley``: the lower triangle ``L`` of x gives the skew-Hermitian
    ``A = L - L^H`` (zero-padded to n x n); Q is the first k columns of ``exp(A)`` or of
    ``(I - A/2)^-1 (I + A/2)``.  ``householder``: the strict lower triangle holds the
    Householder vectors (unit head implied); the columns are scaled by ``int(diag(x))``
    (the signs right_inverse stores there).  With trivialization, a buffer ``base``
    (n x n orthogonal) multiplies Q from the left and right_inverse resets x to ``-I``,
    whose image is ``I``.
    """

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    @property
    def use_trivialization(self):
        return "base" in self._buffers

    @_tall
    def forward(self, x):
        n, k = x.size(-2), x.size(-1)
        if self.orthogonal_map == "householder":
            vectors = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (vectors * vectors.conj()).sum(dim=-2))
            q = ember.linalg.householder_product(vectors, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            lower = x.tril()
            if n != k:
                lower = ember.cat([lower, lower.new_zeros(*x.shape[:-2], n, n - k)], dim=-1)
            skew = lower - lower.mH
            if self.orthogonal_map == "matrix_exp":
                q = ember.linalg.matrix_exp(skew)
            else:
                eye = ember.eye(n, dtype=skew.dtype)
                q = ember.linalg.solve(eye - skew / 2, eye + skew / 2)
            q = q[..., :k]
        if self.use_trivialization:
            q = self.base @ q
        return q

    def right_inverse(self, value):
        if value.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {value.shape}.")
        return self._inverse(value)

    @_tall
    def _inverse(self, q):
        n, k = q.size(-2), q.size(-1)
        if not self.use_trivialization:
            if self.orthogonal_map != "householder":
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            # reflectors below the diagonal, R above it, and on it the signs of R's diagonal,
            # flipped where LAPACK used no reflector (tau = 0): forward's tau is never 0
            packed, tau = ember.geqrf(q)
            diag = packed.diagonal(dim1=-2, dim2=-1)
            diag.copy_(diag.sgn() * ember.where(tau == 0, -1.0, 1.0).to(diag.dtype))
            return packed
        gram = q.mH @ q
        if not ember.allclose(gram, ember.eye(k, dtype=q.dtype).expand_as(gram)):
            q = _positive_qr(q)
        if n != k:                      # complete the columns to an n x n orthogonal base
            extra = ember.randn(*q.shape[:-2], n, n - k, dtype=q.dtype)
            q = _positive_qr(ember.cat([q, extra], dim=-1))
        self.base = q
        return -ember.eye(n, k, dtype=q.dtype).expand(*q.shape[:-2], n, k).clone()


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make ``module.<name>`` (a matrix or a batch of matrices, shape (..., n, k)) orthogonal
    (unitary if complex): ``Q^H Q = I`` if n >= k, else ``Q Q^H = I``.

    ``orthogonal_map``: "matrix_exp", "cayley" or "householder"; by default "matrix_exp"
    for square or complex matrices, "householder" otherwise.  With ``use_trivialization``
    (default) the current weight becomes the buffer ``base`` (orthogonalised by a
    sign-normalised QR first unless it is already orthogonal; a thin matrix is completed with
    random columns), as it also does for "householder" without it; "matrix_exp"/"cayley"
    without trivialization start from the map of the current weight and cannot be assigned.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.size(-2) == weight.size(-1)
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    parametrization = _Orthogonal(weight, orthogonal_map,
                                  use_trivialization=use_trivialization)
    return parametrize.register_parametrization(module, name, parametrization, unsafe=True)
