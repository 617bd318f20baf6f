"""FFT op records (torch.fft): three primitives, like ATen's, with every public
``ember.fft.*`` function a thin front over them (see ``ember/fft/__init__.py``).

``_fft_c2c``  complex -> complex (forward or inverse)
``_fft_r2c``  real -> complex (``onesided``: the last transformed dim is halved)
``_fft_c2r``  Hermitian-halved complex -> real

``s`` is always fully resolved (one size per transformed dim) and ``norm`` is one of
"backward" / "ortho" / "forward". Backward rules follow torch's (FftC2CBackward0 ...):
the gradient of a transform is the transform in the other direction with the *dual*
normalisation (same scale factor), then each transformed dim is cut or zero-padded back to
the input's size. Complex gradients follow the conjugate-Wirtinger convention.
"""
from __future__ import annotations

from ember._kernels import fft as K
from ember._ops.registry import OpDef

_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}

fft_c2c = OpDef("_fft_c2c(Tensor self, int[] s, int[] dim, str norm, bool forward) -> Tensor",
                K.fft_c2c, promote=None, grad_name="FftC2CBackward0")
fft_r2c = OpDef("_fft_r2c(Tensor self, int[] s, int[] dim, str norm, bool onesided) -> Tensor",
                K.fft_r2c, promote=None, grad_name="FftR2CBackward0")
fft_c2r = OpDef("_fft_c2r(Tensor self, int[] s, int[] dim, str norm) -> Tensor",
                K.fft_c2r, promote=None, grad_name="FftC2RBackward0")


def resize_dims(t, dims, sizes):
    """Cut or zero-pad ``t`` along each of ``dims`` to ``sizes`` (differentiable)."""
    from ember._ops.shape import cat  # noqa: F401  (registered front)
    import ember
    for d, n in zip(dims, sizes):
        cur = t.shape[d]
        if n < cur:
            t = t.narrow(d, 0, n)
        elif n > cur:
            shp = list(t.shape)
            shp[d] = n - cur
            t = ember.cat([t, t.new_zeros(shp)], d)
    return t


def _in_sizes(ctx, dim):
    shape = ctx.shapes[0]
    return [shape[d] for d in dim]


@fft_c2c.def_backward
def _(ctx, g, self, s, dim, norm, forward):
    gi = fft_c2c(g, list(s), list(dim), _DUAL[norm], not forward)
    return resize_dims(gi, dim, _in_sizes(ctx, dim))


@fft_r2c.def_backward
def _(ctx, g, self, s, dim, norm, onesided):
    if onesided:
        g = resize_dims(g, [dim[-1]], [s[-1]])      # the discarded half: zero gradient
    gi = fft_c2c(g, list(s), list(dim), _DUAL[norm], False).real
    return resize_dims(gi, dim, _in_sizes(ctx, dim))


def _double_mask(n_half, n_full, like):
    """Weights 1, 2, ..., 2, (1): entries 1..n_full-n_half count twice (Hermitian pairs)."""
    import numpy as np
    from ember._creation import tensor
    m = np.ones(n_half)
    m[1:1 + max(n_full - n_half, 0)] = 2
    return tensor(m, dtype=like.dtype.to_real() if like.is_complex() else like.dtype)


@fft_c2r.def_backward
def _(ctx, g, self, s, dim, norm):
    gi = fft_r2c(g, list(s), list(dim), _DUAL[norm], True)
    n_full, n_half = s[-1], gi.shape[dim[-1]]
    mask = _double_mask(n_half, n_full, gi)
    nd = gi.ndim
    d = dim[-1] % nd
    mask = mask.reshape([-1] + [1] * (nd - 1 - d))
    gi = gi * mask
    return resize_dims(gi, dim, _in_sizes(ctx, dim))
