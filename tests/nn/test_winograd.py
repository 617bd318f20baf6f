"""Winograd 3x3 convolution kernels (ember._kernels.winograd) vs a float64 direct
convolution (einsum over strided windows), forward and weight gradient."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import ember._kernels.nn_conv as KC
from ember._kernels import winograd as WG

rng = np.random.default_rng(7)


def _windows(x, lo, hi):
    """(N, C, Ho, Wo, 3, 3) float64 windows of the zero-padded x."""
    x = np.asarray(x, np.float64)
    xp = np.pad(x, ((0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1])))
    N, C, Hp, Wp = xp.shape
    s = xp.strides
    return as_strided(xp, (N, C, Hp - 2, Wp - 2, 3, 3), s + s[2:], writeable=False)


def ref_conv(x, w, lo, hi, bias=None):
    y = np.einsum("ncijkl,ockl->noij", _windows(x, lo, hi), np.asarray(w, np.float64))
    if bias is not None:
        y += np.asarray(bias, np.float64).reshape(1, -1, 1, 1)
    return y


def ref_wgrad(x, gy, lo, hi):
    return np.einsum("ncijkl,noij->ockl", _windows(x, lo, hi), np.asarray(gy, np.float64))


def _tol(dtype, terms, scale):
    """Absolute tolerance: float32 ~1e-4 relative to the size of a sum of ``terms``
    products; float64 tight."""
    eps = 1e-4 if dtype == np.float32 else 1e-11
    return eps * scale * max(1.0, np.sqrt(terms))


# (N, C, O, H, W, lo, hi)
SHAPES = [
    (2, 3, 4, 1, 1, (1, 1), (1, 1)),       # 1x1 plane
    (2, 3, 4, 1, 7, (1, 1), (1, 1)),       # 1xW
    (1, 2, 3, 2, 2, (1, 1), (1, 1)),       # 2x2, N=1
    (2, 4, 5, 7, 7, (1, 1), (1, 1)),
    (2, 4, 5, 8, 8, (1, 1), (1, 1)),       # even
    (2, 5, 6, 14, 14, (1, 1), (1, 1)),
    (2, 3, 2, 15, 17, (1, 1), (1, 1)),     # odd, non-square
    (2, 3, 4, 15, 17, (0, 0), (0, 0)),     # no padding
    (2, 3, 4, 9, 10, (2, 0), (0, 1)),      # asymmetric padding
    (2, 3, 4, 6, 5, (0, 2), (1, 0)),
    (1, 1, 6, 7, 9, (1, 1), (1, 1)),       # C=1
    (3, 6, 1, 7, 9, (1, 1), (1, 1)),       # O=1
    (2, 256, 8, 7, 7, (1, 1), (1, 1)),     # large C
    (1, 16, 256, 5, 6, (1, 1), (1, 1)),    # large O
    (1, 3, 3, 3, 3, (0, 0), (0, 0)),       # 1x1 output
]
IDS = ["x".join(map(str, s[:5])) + f"-p{s[5]}{s[6]}".replace(" ", "") for s in SHAPES]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("m", [None, 2, 4])
@pytest.mark.parametrize("with_bias", [False, True])
def test_forward(shape, dtype, m, with_bias):
    N, C, O, H, W, lo, hi = shape
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    w = rng.standard_normal((O, C, 3, 3)).astype(dtype)
    b = rng.standard_normal(O).astype(dtype) if with_bias else None
    y = WG.conv2d_3x3(x, w, lo, hi, b, m=m)
    ref = ref_conv(x, w, lo, hi, b)
    assert y.dtype == dtype and y.flags.c_contiguous
    assert y.shape == (N, O, H + lo[0] + hi[0] - 2, W + lo[1] + hi[1] - 2) == ref.shape
    np.testing.assert_allclose(y, ref, rtol=0, atol=_tol(dtype, 9 * C, 1.0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=IDS)
@pytest.mark.parametrize("r", [None, 2, 4])
def test_weight_grad(shape, dtype, r):
    N, C, O, H, W, lo, hi = shape
    Ho, Wo = H + lo[0] + hi[0] - 2, W + lo[1] + hi[1] - 2
    x = rng.standard_normal((N, C, H, W)).astype(dtype)
    gy = rng.standard_normal((N, O, Ho, Wo)).astype(dtype)
    gw = WG.conv2d_3x3_weight_grad(x, gy, lo, hi, r=r)
    ref = ref_wgrad(x, gy, lo, hi)
    assert gw.dtype == dtype and gw.shape == (O, C, 3, 3) == ref.shape
    np.testing.assert_allclose(gw, ref, rtol=0, atol=_tol(dtype, N * Ho * Wo, 1.0))


@pytest.mark.parametrize("shape", [(2, 8, 16, 14, 14, 1), (3, 16, 8, 9, 11, 0),
                                   (1, 32, 32, 7, 7, 1)])
def test_matches_im2col(shape):
    N, C, O, H, W, p = shape
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((O, C, 3, 3)).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32)
    ref = KC.conv_forward(x, w, [1, 1], [p, p], [1, 1], 1, b)
    y = WG.conv2d_3x3(x, w, (p, p), (p, p), b)
    np.testing.assert_allclose(y, ref, rtol=0, atol=_tol(np.float32, 9 * C, 1.0))
    gy = rng.standard_normal(ref.shape).astype(np.float32)
    gref = KC.conv_weight_grad(x, gy, w.shape, [1, 1], [p, p], [1, 1], 1)
    gw = WG.conv2d_3x3_weight_grad(x, gy, (p, p), (p, p))
    np.testing.assert_allclose(gw, gref, rtol=0, atol=_tol(np.float32, N * H * W, 1.0))


def test_transform_matrices_are_exact():
    """A^T [(G g) . (B^T d)] is the 1-D correlation of d with g, exactly in float64."""
    for m, r in [(2, 3), (4, 3), (3, 2), (3, 4)]:
        at, g, bt = WG._mats(m, r)
        d = rng.standard_normal(m + r - 1)
        f = rng.standard_normal(r)
        y = at @ ((g @ f) * (bt @ d))
        np.testing.assert_allclose(y, [d[i:i + r] @ f for i in range(m)], rtol=1e-13, atol=1e-13)


def _rms_err(a, ref):
    d = np.asarray(a, np.float64) - ref
    return float(np.sqrt((d ** 2).mean() / (ref ** 2).mean()))


# (N, C, O, H, W): ResNet-18 stages (smaller batches) and the 7x7 stage the rule skips
ACCURACY_SHAPES = [(2, 64, 64, 28, 28), (2, 128, 128, 28, 28), (2, 256, 64, 14, 14),
                   (2, 512, 32, 7, 7)]


@pytest.mark.parametrize("shape", ACCURACY_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_float32_error_within_torchs(shape):
    """Every convolution path (Winograd F(2x2, 3x3), im2col), forward, input and weight
    gradient: float32 error against float64 at most 1.5x torch's float32 error (rms)."""
    torch = pytest.importorskip("torch")
    N, C, O, H, W = shape
    g = np.random.default_rng(sum(shape))
    x = np.maximum(g.standard_normal((N, C, H, W)), 0).astype(np.float32)   # post-ReLU
    w = (g.standard_normal((O, C, 3, 3)) * np.sqrt(2 / (9 * C))).astype(np.float32)
    gy = g.standard_normal((N, O, H, W)).astype(np.float32)
    refs, errs_torch = [], []
    for dt in (torch.float64, torch.float32):
        xt = torch.from_numpy(x).to(dt).requires_grad_()
        wt = torch.from_numpy(w).to(dt).requires_grad_()
        torch.nn.functional.conv2d(xt, wt, padding=1).backward(torch.from_numpy(gy).to(dt))
        got = [torch.nn.functional.conv2d(xt, wt, padding=1).detach().numpy(),
               xt.grad.numpy(), wt.grad.numpy()]
        if dt is torch.float64:
            refs = got
        else:
            errs_torch = [_rms_err(a, r) for a, r in zip(got, refs)]
    flipped = np.ascontiguousarray(w.swapaxes(0, 1)[:, :, ::-1, ::-1])
    one = [1, 1]
    paths = {
        "winograd forward": (0, WG.conv2d_3x3(x, w, (1, 1), (1, 1))),
        "winograd input grad": (1, WG.conv2d_3x3(gy, flipped, (1, 1), (1, 1))),
        "winograd weight grad": (2, WG.conv2d_3x3_weight_grad(x, gy, (1, 1), (1, 1))),
        "im2col forward": (0, KC._conv_cols_gemm(x, w.reshape(1, O, -1), (3, 3), one, one, one,
                                                 one, [H, W])),
        "im2col input grad": (1, KC._conv_cols_gemm(gy, flipped.reshape(1, C, -1), (3, 3), one,
                                                    one, one, one, [H, W])),
        "ember forward": (0, KC.conv_forward(x, w, one, one, one, 1)),
        "ember weight grad": (2, KC.conv_weight_grad(x, gy, w.shape, one, one, one, 1)),
    }
    for name, (k, got) in paths.items():
        err = _rms_err(got, refs[k])
        assert err <= 1.5 * errs_torch[k], (name, err, errs_torch[k])


def test_small_resnet_gradients_within_torchs():
    """Through a small ResNet (Winograd and im2col layers), ember's float32 gradients are at
    most 1.5x further from float64 than torch's float32 gradients (F(4x4, 3x3) with one
    deep GEMM per position: up to 1.8x here, ~6x through a ResNet-18)."""
    torch = pytest.importorskip("torch")
    import ember

    def net(lib, params, x):
        F = lib.nn.functional
        c1, c2, c3, c4, fc = params
        h = F.relu(F.conv2d(x, c1, padding=1))
        h = F.relu(h + F.conv2d(F.relu(F.conv2d(h, c2, padding=1)), c2, padding=1))
        h = F.relu(F.conv2d(h, c3, stride=2, padding=1))
        h = F.relu(h + F.conv2d(h, c4, padding=1))
        return (h.mean((2, 3)) @ fc).logsumexp(1).sum()

    g = np.random.default_rng(3)
    shapes = [(64, 16, 3, 3), (64, 64, 3, 3), (256, 64, 3, 3), (256, 256, 3, 3), (256, 10)]
    params = [(g.standard_normal(s) * np.sqrt(2 / np.prod(s[1:]))).astype(np.float32)
              for s in shapes]
    x = g.standard_normal((8, 16, 28, 28)).astype(np.float32)
    assert WG.use_winograd(8, 256, 256, 14, 14, op="weight_grad")

    def grads(lib, dtype):
        ps = [lib.tensor(p, dtype=dtype, requires_grad=True) for p in params]
        net(lib, ps, lib.tensor(x, dtype=dtype)).backward()
        return [p.grad.numpy().astype(np.float64) for p in ps]

    ref = grads(torch, torch.float64)
    for e, t, r in zip(grads(ember, ember.float32), grads(torch, torch.float32), ref):
        assert _rms_err(e, r) <= 1.5 * _rms_err(t, r), (_rms_err(e, r), _rms_err(t, r))


def test_use_winograd_rule():
    """Only the weight gradient (64 channels on 28x28+, 128 from 14x14): the accurate
    forward kernel does not beat im2col (Note [Winograd accuracy])."""
    for shape in [(8, 128, 128, 28, 28), (8, 256, 256, 14, 14), (8, 64, 64, 56, 56)]:
        assert not WG.use_winograd(*shape)
    assert WG.use_winograd(8, 128, 128, 28, 28, op="weight_grad")
    assert WG.use_winograd(8, 256, 256, 14, 14, op="weight_grad")
    assert WG.use_winograd(8, 64, 64, 56, 56, op="weight_grad")
    assert not WG.use_winograd(64, 64, 64, 14, 14, op="weight_grad")
    assert not WG.use_winograd(2, 512, 512, 14, 14, op="weight_grad")
    assert not WG.use_winograd(64, 1, 32, 28, 28, op="weight_grad")
    assert not WG.use_winograd(8, 512, 512, 7, 7, op="weight_grad")
    with pytest.raises(ValueError):
        WG.use_winograd(1, 64, 64, 14, 14, op="backward")


def test_tile_choice():
    """F(4x4, 3x3) is ~5x less accurate than torch in float32: never chosen by itself."""
    for shape in [(64, 32, 64, 14, 14), (8, 64, 64, 56, 56), (8, 512, 512, 7, 7),
                  (8, 128, 128, 28, 28)]:
        assert WG.forward_tile(*shape) == 2 and WG.wgrad_tile(*shape) == 2


def test_scatter_paths_and_scratch_reuse():
    """Both output scatter variants (narrow and wide tile grids), twice in a row so the
    second call runs on reused scratch buffers, stay exact vs the reference."""
    for S, m in [(7, 4), (30, 2), (30, 4)]:
        x = rng.standard_normal((3, 8, S, S))
        w = rng.standard_normal((5, 8, 3, 3))
        b = rng.standard_normal(5)
        ref = ref_conv(x, w, (1, 1), (1, 1), b)
        for _ in range(2):
            np.testing.assert_allclose(WG.conv2d_3x3(x, w, (1, 1), (1, 1), b, m=m), ref,
                                       rtol=0, atol=1e-10)


def test_noncontiguous_and_mixed_dtype_inputs():
    x = rng.standard_normal((4, 6, 9, 11)).astype(np.float32)
    w = rng.standard_normal((5, 4, 3, 3))             # float64 weight -> cast to x's dtype
    xt = x.transpose(1, 0, 2, 3)                      # (6, 4, 9, 11) non-contiguous view
    y = WG.conv2d_3x3(xt, w, (0, 0), (0, 0))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, ref_conv(xt, w, (0, 0), (0, 0)), rtol=0,
                               atol=_tol(np.float32, 36, 1.0))
    gy = rng.standard_normal((6, 6, 7, 9)).astype(np.float32)
    gw = WG.conv2d_3x3_weight_grad(xt, gy, (0, 0), (0, 0))
    np.testing.assert_allclose(gw, ref_wgrad(xt, gy, (0, 0), (0, 0)), rtol=0,
                               atol=_tol(np.float32, 6 * 63, 1.0))
