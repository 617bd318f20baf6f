"""ember.special — torch.special.

Functions torch.special shares with the top level are the same fronts (aliases of the
existing records: ``special.erf is ember.erf``); the rest are records in
``ember/_ops/special.py`` (kernels: ``ember/_kernels/special.py``, on scipy.special).
"""
from __future__ import annotations

import ember as _e
from ember._ops.special import FRONTS as _FRONTS

globals().update(_FRONTS)

erf = _e.erf
erfc = _e.erfc
erfinv = _e.erfinv
expit = _e.sigmoid
exp2 = _e.exp2
expm1 = _e.expm1
log1p = _e.log1p
logit = _e.logit
xlogy = _e.xlogy
i0 = _e.i0
gammaln = _e.lgamma
digamma = _e.digamma
psi = _e.digamma


def polygamma(n, input, *, out=None):
    """special.polygamma(n, input): the n-th derivative of digamma."""
    from ember._ops.elementwise import _order
    return _e.polygamma(_order(n, "special_polygamma"), input, out=out)


multigammaln = _e.mvlgamma
sinc = _e.sinc
round = _e.round
logsumexp = _e.logsumexp
gammainc = _e.igamma
gammaincc = _e.igammac


def softmax(input, dim, *, dtype=None):
    """softmax along ``dim`` (``dtype``: cast the input first)."""
    return _e.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax along ``dim`` (``dtype``: cast the input first)."""
    return _e.log_softmax(input, dim, dtype=dtype)


__all__ = sorted(["erf", "erfc", "erfinv", "expit", "exp2", "expm1", "log1p", "logit", "xlogy",
                  "i0", "gammaln", "digamma", "psi", "polygamma", "multigammaln", "sinc",
                  "round", "logsumexp", "gammainc", "gammaincc", "softmax", "log_softmax"]
                 + list(_FRONTS))
