"""ember.signal.windows: the symmetric-by-default window functions of torch.signal.windows.

Each is composed of tensor ops in the requested dtype as torch composes them (found by
comparing values bit for bit): sample positions by ``linspace`` over the scaled range, then
the window's formula, so float32 windows round as torch's do (``blackman`` here is not
``blackman_window``'s formula: its ends are -1.49e-08, not -2.98e-08) and a window asked
``requires_grad`` carries the last op's ``grad_fn``. Lengths 0 and 1 are ``empty`` / ``ones``
except for ``cosine``, ``gaussian`` and ``exponential``, which compute one sample."""
from __future__ import annotations

import math

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _check(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout != ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _trivial(M, dtype, requires_grad):
    """The windows of length 0 and 1, or None."""
    if M == 0:
        return ember.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return ember.ones((1,), dtype=dtype, requires_grad=requires_grad)
    return None


def _dtype(dtype):
    return ember.get_default_dtype() if dtype is None else dtype


def general_cosine(M, *, a, sym=True, dtype=None, layout=ember.strided, device=None,
                   requires_grad=False, _name="general_cosine"):
    dtype = _dtype(dtype)
    _check(_name, M, dtype, layout)
    r = _trivial(M, dtype, requires_grad)
    if r is not None:
        return r
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    step = 2 * math.pi / (M - 1 if sym else M)
    k = ember.linspace(0, (M - 1) * step, M, dtype=dtype, requires_grad=requires_grad)
    # w(n) = sum_j (-1)^j a_j cos(j k_n): one row per term, summed over the rows
    signed = ember.tensor([-w if j % 2 else w for j, w in enumerate(a)], dtype=dtype)[:, None]
    harmonics = ember.arange(len(a), dtype=dtype)[:, None]
    return (signed * ember.cos(harmonics * k)).sum(dim=0)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=ember.strided, device=None,
                    requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=ember.strided, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout,
                           requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
            requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad, _name="blackman")


def nuttall(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
            requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _check("bartlett", M, dtype, layout)
    r = _trivial(M, dtype, requires_grad)
    if r is not None:
        return r
    step = 2 / (M if not sym else M - 1)
    k = ember.linspace(-1, -1 + (M - 1) * step, M, dtype=dtype, requires_grad=requires_grad)
    return 1 - ember.abs(k)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=ember.strided, device=None,
           requires_grad=False):
    dtype = _dtype(dtype)
    _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    r = _trivial(M, dtype, requires_grad)
    if r is not None:
        return r
    b = ember.tensor(beta, dtype=dtype)
    start = -b
    step = 2.0 * b / (M if not sym else M - 1)
    end = ember.minimum(b, start + (M - 1) * step)
    k = ember.linspace(start, end, M, dtype=dtype, requires_grad=requires_grad)
    return ember.i0(ember.sqrt(b * b - ember.pow(k, 2))) / ember.i0(b)


def cosine(M, *, sym=True, dtype=None, layout=ember.strided, device=None,
           requires_grad=False):
    dtype = _dtype(dtype)
    _check("cosine", M, dtype, layout)
    if M == 0:
        return ember.empty((0,), dtype=dtype, requires_grad=requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    k = ember.linspace(0.5 * step, (0.5 + (M - 1)) * step, M, dtype=dtype,
                       requires_grad=requires_grad)
    return ember.sin(k)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=ember.strided, device=None,
             requires_grad=False):
    dtype = _dtype(dtype)
    _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return ember.empty((0,), dtype=dtype, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    step = 1 / (std * math.sqrt(2))
    k = ember.linspace(start * step, (start + (M - 1)) * step, M, dtype=dtype,
                       requires_grad=requires_grad)
    return ember.exp(-k ** 2)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=ember.strided,
                device=None, requires_grad=False):
    dtype = _dtype(dtype)
    _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return ember.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = ember.linspace(-center / tau, (-center + (M - 1)) / tau, M, dtype=dtype,
                       requires_grad=requires_grad)
    return ember.exp(-ember.abs(k))
