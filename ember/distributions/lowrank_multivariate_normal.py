"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): a Gaussian whose covariance is low
rank plus diagonal."""
import ember
from . import constraints
from ._discrete import LOG_2PI, LowRankCovariance, checks_value, matvec
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


class LowRankMultivariateNormal(Distribution):
    """``N(loc, W W^T + diag(d))`` with ``loc (..., n)``, ``W = cov_factor (..., n, m)`` and
    ``d = cov_diag (..., n)``: densities cost ``O(n m^2)`` through the ``m x m`` capacitance
    matrix (see :class:`LowRankCovariance`)."""
    support = constraints.real_vector
    has_rsample = True
    _batched = ("loc", "cov_factor", "cov_diag")
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        n = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        if cov_factor.shape[-2] != n:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {n} x m")
        if cov_diag.shape[-1:] != loc.shape[-1:]:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {loc.shape[-1:]}")
        try:  # the vectors as (..., n, 1) columns beside the (..., n, m) factor
            columns = ember.broadcast_tensors(loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_factor, self.cov_diag = (columns[0][..., 0], columns[1],
                                                   columns[2][..., 0])
        self._covariance = LowRankCovariance(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], loc.shape[-1:], validate_args=validate_args)

    # torch's names for the unbroadcast pieces
    _unbroadcasted_cov_factor = property(lambda self: self._covariance.W)
    _unbroadcasted_cov_diag = property(lambda self: self._covariance.d)
    _capacitance_tril = property(lambda self: self._covariance.K)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        cov = self._covariance
        return (cov.W.square().sum(-1) + cov.d).expand(self.batch_shape + self.event_shape)

    @lazy_property
    def scale_tril(self):
        return self._covariance.scale_tril().expand(self.batch_shape + self.event_shape * 2)

    @lazy_property
    def covariance_matrix(self):
        return self._covariance.dense().expand(self.batch_shape + self.event_shape * 2)

    @lazy_property
    def precision_matrix(self):
        return self._covariance.precision().expand(self.batch_shape + self.event_shape * 2)

    def rsample(self, sample_shape=ember.Size()):
        """``loc + W eps_m + sqrt(d) * eps_n`` with independent standard normal ``eps``."""
        shape = self._extended_shape(sample_shape)
        cov = self._covariance
        eps_factor = _standard_normal(shape[:-1] + cov.W.shape[-1:], dtype=self.loc.dtype)
        eps_diag = _standard_normal(shape, dtype=self.loc.dtype)
        return self.loc + matvec(cov.W, eps_factor) + cov.d.sqrt() * eps_diag

    @checks_value
    def log_prob(self, value):
        cov = self._covariance
        quadratic = cov.mahalanobis(value - self.loc)
        return -0.5 * (self.event_shape[0] * LOG_2PI + cov.log_det() + quadratic)

    def entropy(self):
        h = 0.5 * (self.event_shape[0] * (1 + LOG_2PI) + self._covariance.log_det())
        return h.expand(self.batch_shape)
