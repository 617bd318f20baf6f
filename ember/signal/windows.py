"""ember.signal.windows: the symmetric-by-default window functions of torch.signal.windows
(``sym=True`` is ``periodic=False`` of the ``*_window`` factories)."""
from __future__ import annotations

import math

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _kw(dtype, requires_grad):
    return dict(dtype=dtype, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return ember.hann_window(M, periodic=not sym, **_kw(dtype, requires_grad))


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return ember.hamming_window(M, periodic=not sym, **_kw(dtype, requires_grad))


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return ember.blackman_window(M, periodic=not sym, **_kw(dtype, requires_grad))


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return ember.bartlett_window(M, periodic=not sym, **_kw(dtype, requires_grad))


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    return ember.kaiser_window(M, periodic=not sym, beta=beta, **_kw(dtype, requires_grad))


def _from_numpy(vals, dtype, requires_grad):
    r = ember.tensor(vals, dtype=dtype or ember.get_default_dtype())
    return r.requires_grad_(True) if requires_grad else r


def _n(M, sym):
    import numpy as np
    if M < 0:
        raise ValueError(f"window length M must be non-negative, got M = {M}")
    return np.arange(M, dtype=np.float64), (M if not sym else M - 1) if M > 1 else 1


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    import numpy as np
    k, d = _n(M, sym)
    w = sum(((-1) ** i) * c * np.cos(2 * math.pi * i * k / d) for i, c in enumerate(a))
    return _from_numpy(np.ones(M) if M == 1 else w, dtype, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1 - alpha], sym=sym, dtype=dtype,
                          requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, requires_grad=requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    import numpy as np
    k, _ = _n(M, sym)
    d = M + 1 if not sym and M > 1 else M     # a periodic window of length 1 is [1.]
    return _from_numpy(np.sin(math.pi * (k + 0.5) / d), dtype, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    import numpy as np
    k, _ = _n(M, sym)
    c = M / 2 if not sym and M > 1 else (M - 1) / 2
    return _from_numpy(np.exp(-((k - c) / std) ** 2 / 2), dtype, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    import numpy as np
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    k, _ = _n(M, sym)
    c = (M / 2 if not sym and M > 1 else (M - 1) / 2) if center is None else center
    return _from_numpy(np.exp(-np.abs(k - c) / tau), dtype, requires_grad)
