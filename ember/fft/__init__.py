"""ember.fft — torch.fft on scipy.fft (float32/complex64 precision kept).

Every function resolves ``n``/``s``, ``dim`` and ``norm`` like torch and calls one of
three op records in ``ember/_ops/fft.py`` (``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r``);
gradients come from those records (and from ``conj``/``narrow``/``cat`` for the Hermitian
and resized variants). Integer and bool inputs compute in the default float dtype
(so ``fft(arange(4))`` is complex64).
"""
from __future__ import annotations

import numpy as np

from ember import _dtype
from ember._ops.fft import fft_c2c, fft_r2c, fft_c2r, _DUAL

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _norm(norm):
    if norm is None:
        return "backward"
    if norm not in ("backward", "ortho", "forward"):
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _float_input(x):
    """ints/bool -> default float dtype (torch promotes before transforming)."""
    from ember._tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"fft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(_dtype.get_default_dtype())
    elif x.dtype in (_dtype.float16, _dtype.bfloat16):
        raise RuntimeError(f"Unsupported dtype {_dtype.scalar_type_name(x.dtype.np)}")
    return x


def _wrap(d, nd):
    lo, hi = -max(nd, 1), max(nd, 1) - 1
    if not lo <= d <= hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], "
                         f"but got {d})")
    return d % max(nd, 1)


def _check_n(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _one_n(n):
    """A 1-d transform's ``n`` as a sizes list (there -1 is refused; ``s`` takes it as
    'keep the size')."""
    if n is None:
        return None
    _check_n(n)
    return [n]


def _out(r, out, name=None):
    """``r`` written into ``out`` (torch's "<name> expects a complex / floating point output
    tensor" when ``out`` cannot hold it: ``name`` is torch's, n-d for the 2-d variants)."""
    if out is not None:
        if name is not None and (not out.is_complex() if r.is_complex()
                                 else not out.is_floating_point()):
            kind = "complex" if r.is_complex() else "floating point"
            raise RuntimeError(f"{name} expects a {kind} output tensor, but got "
                               f"{_dtype.scalar_type_name(out.dtype.np)}")
        from types import SimpleNamespace
        from ember._dispatch import _write_out
        return _write_out(SimpleNamespace(public_name="fft", num_outputs=1, returns_list=False),
                          r, out)
    return r


def _resolve(x, s, dim, default_dim=None, last_half=None):
    """torch's canonicalisation of (s, dim): returns (sizes, dims) lists."""
    nd = x.ndim
    import sys
    from ember._dispatch import check_int_list
    front = "fft_" + sys._getframe(2).f_code.co_name          # the public function's name
    for name, v in (("s", s), ("dim", dim)):
        if isinstance(v, (list, tuple)):
            from ember._dispatch import all_ints, user_position
            check_int_list(front, name, v, None if all_ints(tuple(v)) else
                           user_position(sys._getframe(2), name))
    if s is not None:
        s = [int(v) for v in (s if isinstance(s, (list, tuple)) else [s])]
    if dim is not None:
        dim = [int(v) for v in (dim if isinstance(dim, (list, tuple)) else [dim])]
    elif default_dim is not None and s is None:
        dim = list(default_dim)
    elif default_dim is not None and s is not None and len(s) == len(default_dim):
        dim = list(default_dim)
    if dim is not None:
        dim = [_wrap(d, nd) for d in dim]
        if len(set(dim)) != len(dim):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(s) != len(dim):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > nd:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {nd} "
                               f"dimensions.")
        if dim is None:
            dim = list(range(nd - len(s), nd))
        sizes = []
        for d, v in zip(dim, s):
            if v == -1:
                v = x.shape[d] if last_half is None or d != dim[-1] else last_half(x.shape[d])
            _check_n(v)
            sizes.append(v)
        return sizes, dim
    if dim is None:
        dim = list(range(nd))
    sizes = [x.shape[d] for d in dim]
    if last_half is not None and dim:
        sizes[-1] = last_half(sizes[-1])
    for v in sizes:
        _check_n(v)
    return sizes, dim


def _half_to_full(m):
    return 2 * (m - 1)


def _c2c(x, s, dim, norm, forward, default_dim=None, out=None, name="fftn"):
    x = _float_input(x)
    sizes, dims = _resolve(x, s, dim, default_dim)
    norm = _norm(norm)
    if not x.is_complex():
        if forward:
            return _out(fft_r2c(x, sizes, dims, norm, False), out, name)
    return _out(fft_c2c(x, sizes, dims, norm, forward), out, name)


def _r2c(name, x, s, dim, norm, default_dim=None, out=None):
    x = _float_input(x)
    if x.is_complex():
        raise RuntimeError(f"{name} expects a real input tensor, but got "
                           f"{_dtype.scalar_type_name(x.dtype.np)}")
    sizes, dims = _resolve(x, s, dim, default_dim)
    return _out(fft_r2c(x, sizes, dims, _norm(norm), True), out, name)


def _c2r(x, s, dim, norm, default_dim=None, out=None, name="irfftn"):
    x = _float_input(x)
    sizes, dims = _resolve(x, s, dim, default_dim, last_half=_half_to_full)
    if not x.is_complex():
        x = x.to(_dtype.complex64 if x.dtype is _dtype.float16 else x.dtype.to_complex())
    return _out(fft_c2r(x, sizes, dims, _norm(norm)), out, name)


# ------------------------------------------------------------------ one-dimensional

def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """Discrete Fourier transform of ``input`` along ``dim``."""
    return _c2c(input, _one_n(n), [dim], norm, True, out=out, name="fft")


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse discrete Fourier transform along ``dim``."""
    x = _float_input(input)
    if not x.is_complex():
        # torch's 1-d inverse of a real signal is the conjugate of its forward transform under
        # the dual norm (zero imaginary parts -0 where the forward's are +0; ifftn's are +0)
        sizes, dims = _resolve(x, _one_n(n), [dim])
        return _out(fft_r2c(x, sizes, dims, _DUAL[_norm(norm)], False).conj_physical(), out,
                    "ifft")
    return _c2c(input, _one_n(n), [dim], norm, False, out=out, name="ifft")


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of a real signal: the ``n // 2 + 1`` non-negative frequencies."""
    return _r2c("rfft", input, _one_n(n), [dim], norm, out=out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of rfft: a real signal of length ``n`` (default ``2 * (m - 1)``)."""
    return _c2r(input, _one_n(n), [dim], norm, out=out, name="irfft")


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """FFT of a Hermitian-symmetric signal given by its first half: a real result."""
    x = _float_input(input)
    return _c2r(x.conj() if x.is_complex() else x, _one_n(n), [dim],
                _DUAL[_norm(norm)], out=out, name="hfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """Inverse of hfft: the first half of the inverse FFT of a real signal."""
    x = _float_input(input)
    if x.is_complex():
        raise RuntimeError(f"ihfft expects a real input tensor, but got "
                           f"{_dtype.scalar_type_name(x.dtype.np)}")
    return _out(_r2c("ihfft", x, _one_n(n), [dim], _DUAL[_norm(norm)]).conj(),
                out, "ihfft")


# ------------------------------------------------------------------ n-dimensional

def fftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c(input, s, dim, norm, True, out=out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2c(input, s, dim, norm, False, out=out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c(input, s, dim, norm, True, out=out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c(input, s, dim, norm, False, out=out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _r2c("rfftn", input, s, dim, norm, out=out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _r2c("rfftn", input, s, dim, norm, out=out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    return _c2r(input, s, dim, norm, out=out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2r(input, s, dim, norm, out=out)


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    x = _float_input(input)
    return _c2r(x.conj() if x.is_complex() else x, s, dim, _DUAL[_norm(norm)], out=out,
                name="hfftn")


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return hfftn(input, s, dim, norm, out=out)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    x = _float_input(input)
    if x.is_complex():
        raise RuntimeError(f"ihfftn expects a real-valued input tensor, but got "
                           f"{_dtype.scalar_type_name(x.dtype.np)}")
    return _out(_r2c("ihfftn", x, s, dim, _DUAL[_norm(norm)]).conj(), out, "ihfftn")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return ihfftn(input, s, dim, norm, out=out)


# ------------------------------------------------------------------ helpers

def _freq(name, vals, n, d, dtype, out, requires_grad):
    from ember._creation import tensor
    dt = dtype or (out.dtype if out is not None else _dtype.get_default_dtype())
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if dt.is_complex:
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{_dtype.scalar_type_name(dt.np)}'")
    with np.errstate(all="ignore"):
        r = tensor(np.asarray(vals, dtype=np.float64) / (n * d), dtype=dt)
    if requires_grad:
        r.requires_grad_(True)
    return _out(r, out)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Sample frequencies of a length-``n`` FFT: ``[0, 1, ..., -n//2, ..., -1] / (d * n)``."""
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    idx = np.arange(n)
    vals = np.where(idx <= (n - 1) // 2, idx, idx - n)
    return _freq("fftfreq", vals, n, d, dtype, out, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Sample frequencies of a length-``n`` rfft: ``[0, 1, ..., n//2] / (d * n)``."""
    return _freq("rfftfreq", np.arange(n // 2 + 1), n, d, dtype, out, requires_grad)


def _shift(x, dim, sign):
    if dim is None:
        dim = list(range(x.ndim))
    elif isinstance(dim, int):
        dim = [dim]
    dim = [_wrap(int(d), x.ndim) for d in dim]
    shifts = [sign * (x.shape[d] // 2) if sign > 0 else -(x.shape[d] // 2) for d in dim]
    if not dim:
        return x.clone()
    return x.roll(shifts, dim)


def fftshift(input, dim=None):
    """Move the zero-frequency term to the centre of the spectrum."""
    return _shift(input, dim, 1)


def ifftshift(input, dim=None):
    """Inverse of fftshift."""
    return _shift(input, dim, -1)
