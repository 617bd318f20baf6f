"""Convolution / batch-norm kernel fast paths vs torch: values and gradients.

Each conv case runs twice, forcing the batched per-image GEMM layout and the single big
GEMM layout (``_BIG_GEMM_MIN``), so every im2col / col2im / flipped-kernel path is hit
in float32 and float64."""
import numpy as np
import pytest
import torch

import ember
import ember._kernels.nn_conv as KC
import ember.nn.functional as F
import torch.nn.functional as TF

rng = np.random.default_rng(1)
TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-9, atol=1e-9)}


@pytest.fixture(params=["batched", "big"])
def layout(request, monkeypatch):
    monkeypatch.setattr(KC, "_BIG_GEMM_MIN", 10 ** 12 if request.param == "batched" else -1)
    return request.param


def _run(fe, ft, arrays, dtype):
    arrays = [None if a is None else a.astype(dtype) for a in arrays]
    te = [None if a is None else ember.tensor(a, requires_grad=True) for a in arrays]
    tt = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    ye, yt = fe(*te), ft(*tt)
    tol = TOL[dtype]
    assert ye.dtype == ember.float32 if dtype == np.float32 else ember.float64
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), **tol)
    gy = rng.standard_normal(tuple(yt.shape)).astype(dtype)
    ye.backward(ember.tensor(gy))
    yt.backward(torch.tensor(gy))
    for a, b in zip(te, tt):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


CONV = [  # (n, N, Cin, size, Cout, ksize, kwargs)
    (2, 3, 4, (7, 8), 6, (3, 3), dict(padding=1)),
    (2, 2, 1, (9, 9), 8, (3, 3), dict(padding=1)),              # few input channels
    (2, 2, 8, (9, 9), 2, (3, 3), dict(padding=1)),              # few output channels
    (2, 2, 4, (9, 10), 6, (3, 2), dict(stride=2, padding=1)),
    (2, 2, 4, (11, 9), 6, (3, 3), dict(stride=(2, 1), padding=(2, 0), dilation=(1, 2))),
    (2, 2, 6, (8, 8), 6, (3, 3), dict(groups=3, padding=1)),
    (2, 2, 4, (8, 8), 8, (3, 3), dict(groups=2, dilation=2, padding=3)),
    (2, 2, 4, (8, 7), 6, (1, 1), dict()),                        # 1x1 without im2col
    (2, 2, 4, (8, 7), 6, (1, 1), dict(stride=2)),                # 1x1 strided by slicing
    (2, 2, 4, (8, 7), 6, (1, 1), dict(stride=(1, 2), padding=1)),
    (2, 2, 4, (8, 8), 6, (4, 2), dict(padding="same")),          # asymmetric 'same'
    (2, 2, 4, (9, 8), 6, (3, 3), dict(padding="same", dilation=2)),
    (2, 1, 3, (6, 6), 4, (6, 6), dict()),                        # kernel = whole map
    (1, 3, 4, (12,), 5, (3,), dict(padding=2, dilation=2)),
    (1, 3, 4, (12,), 6, (4,), dict(stride=3, groups=2)),
    (1, 3, 4, (12,), 5, (1,), dict()),
    (3, 2, 3, (5, 6, 4), 4, (3, 2, 3), dict(padding=1)),
    (3, 2, 4, (6, 5, 5), 4, (2, 3, 3), dict(stride=(2, 1, 2), padding=(0, 1, 1), groups=2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONV, ids=str)
def test_conv(case, bias, dtype, layout):
    n, N, Cin, size, Cout, ks, kw = case
    g = kw.get("groups", 1)
    x = rng.standard_normal((N, Cin) + size)
    w = rng.standard_normal((Cout, Cin // g) + ks)
    b = rng.standard_normal(Cout) if bias else None
    fe = getattr(F, f"conv{n}d")
    ft = getattr(TF, f"conv{n}d")
    _run(lambda x, w, b: fe(x, w, b, **kw), lambda x, w, b: ft(x, w, b, **kw), [x, w, b], dtype)


CONVT = [  # (n, N, Cin, size, Cout_per_group, ksize, kwargs)
    (2, 2, 4, (5, 6), 3, (3, 3), dict()),
    (2, 2, 4, (5, 6), 3, (3, 3), dict(padding=1)),
    (2, 2, 8, (5, 5), 1, (3, 3), dict(padding=1)),               # col2im (few outputs)
    (2, 2, 4, (5, 6), 3, (3, 2), dict(stride=2, padding=1, output_padding=1)),
    (2, 2, 4, (5, 6), 2, (3, 3), dict(groups=2, dilation=2, padding=1)),
    (2, 2, 4, (5, 5), 3, (3, 3), dict(padding=3)),               # padding > kernel reach
    (2, 2, 4, (5, 5), 3, (1, 1), dict()),
    (1, 2, 4, (7,), 3, (3,), dict(stride=2, output_padding=1)),
    (1, 2, 4, (7,), 3, (3,), dict(padding=1)),
    (3, 2, 4, (3, 4, 3), 2, (2, 3, 2), dict(padding=(0, 1, 1))),
    (3, 2, 4, (3, 4, 3), 2, (2, 2, 2), dict(stride=2, groups=2)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONVT, ids=str)
def test_conv_transpose(case, bias, dtype, layout):
    n, N, Cin, size, Cog, ks, kw = case
    g = kw.get("groups", 1)
    x = rng.standard_normal((N, Cin) + size)
    w = rng.standard_normal((Cin, Cog) + ks)
    b = rng.standard_normal(Cog * g) if bias else None
    fe = getattr(F, f"conv_transpose{n}d")
    ft = getattr(TF, f"conv_transpose{n}d")
    _run(lambda x, w, b: fe(x, w, b, **kw), lambda x, w, b: ft(x, w, b, **kw), [x, w, b], dtype)


def test_conv_double_backward(layout):
    x = rng.standard_normal((2, 3, 6, 6))
    w = rng.standard_normal((4, 3, 3, 3))
    xe, we = (ember.tensor(a, requires_grad=True) for a in (x, w))
    xt, wt = (torch.tensor(a, requires_grad=True) for a in (x, w))
    ge = ember.autograd.grad(F.conv2d(xe, we, padding=1).square().sum(), [xe, we],
                             create_graph=True)
    gt = torch.autograd.grad(TF.conv2d(xt, wt, padding=1).square().sum(), [xt, wt],
                             create_graph=True)
    (ge[0].sum() + ge[1].square().sum()).backward()
    (gt[0].sum() + gt[1].square().sum()).backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(we.grad.numpy(), wt.grad.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 4, 5, 6), (2, 3, 3, 4, 2)], ids=str)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm(shape, affine, training, momentum, dtype):
    C = shape[1]
    nd = {2: 1, 3: 1, 4: 2, 5: 3}[len(shape)]
    x = rng.standard_normal(shape) * 3 + 1
    tdt = torch.float32 if dtype == np.float32 else torch.float64
    me = getattr(ember.nn, f"BatchNorm{nd}d")(C, momentum=momentum, affine=affine,
                                              dtype=ember.float32 if dtype == np.float32
                                              else ember.float64)
    mt = getattr(torch.nn, f"BatchNorm{nd}d")(C, momentum=momentum, affine=affine, dtype=tdt)
    if affine:
        w, b = rng.standard_normal(C), rng.standard_normal(C)
        with torch.no_grad():
            mt.weight.copy_(torch.tensor(w)), mt.bias.copy_(torch.tensor(b))
        with ember.no_grad():
            me.weight.copy_(ember.tensor(w)), me.bias.copy_(ember.tensor(b))
    me.train(training), mt.train(training)
    for _ in range(2):           # twice: running statistics (cumulative for momentum None)
        _run(me, mt, [x], dtype)
    tol = TOL[dtype]
    np.testing.assert_allclose(me.running_mean.numpy(), mt.running_mean.numpy(), **tol)
    np.testing.assert_allclose(me.running_var.numpy(), mt.running_var.numpy(), **tol)
    if affine:
        np.testing.assert_allclose(me.weight.grad.numpy(), mt.weight.grad.numpy(), **tol)
        np.testing.assert_allclose(me.bias.grad.numpy(), mt.bias.grad.numpy(), **tol)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_module_noncontiguous_grad(training):
    x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    me, mt = ember.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    me.train(training), mt.train(training)
    xe = ember.tensor(x, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    me(xe).transpose(1, 3).sum(1).square().sum().backward()
    mt(xt).transpose(1, 3).sum(1).square().sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(me.weight.grad.numpy(), mt.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)


def test_large_convs_use_the_scratch_buffers_correctly():
    """Note [conv scratch]: im2col columns and padded inputs above 16 MB live on reused
    per-thread buffers; consecutive calls of different shapes must not see stale data."""
    import threading
    K = KC
    rng = np.random.default_rng(11)
    cases = [((2, 64, 96, 96), (16, 64, 3, 3), 1), ((2, 32, 80, 80), (8, 32, 5, 5), 2),
             ((2, 64, 96, 96), (16, 64, 3, 3), 1)]
    for xs, ws, pad in cases:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        assert x.nbytes * ws[2] * ws[3] >= K._SCRATCH_MIN_BYTES    # really on the scratch
        ex = ember.tensor(x, requires_grad=True)
        ew = ember.tensor(w, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        tw = torch.tensor(w, requires_grad=True)
        ey = ember.nn.functional.conv2d(ex, ew, padding=pad)
        ty = torch.nn.functional.conv2d(tx, tw, padding=pad)
        np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-4,
                                   atol=1e-3)
        ey.square().sum().backward()
        ty.square().sum().backward()
        for e, t in ((ex, tx), (ew, tw)):
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-3,
                                       atol=1e-1)
    # another thread gets its own buffers
    x = rng.standard_normal((2, 64, 96, 96)).astype(np.float32)
    w = rng.standard_normal((16, 64, 3, 3)).astype(np.float32)
    want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    got = {}
    th = threading.Thread(target=lambda: got.setdefault(
        "y", ember.nn.functional.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy()))
    th.start()
    th.join()
    np.testing.assert_allclose(got["y"], want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("lo, hi", [((1, 1), (1, 1)), ((2, 0), (0, 3)), ((0, 0), (1, 0))])
def test_pad_lohi_zeroes_the_border_of_a_stale_scratch(lo, hi):
    """``_pad_lohi`` writes the inside and zeroes only the border: a reused scratch buffer
    (filled with NaN here) must not show through."""
    x = np.random.default_rng(3).standard_normal((2, 3, 1100, 1100)).astype(np.float32)
    shape = (2, 3, 1100 + lo[0] + hi[0], 1100 + lo[1] + hi[1])
    assert 4 * np.prod(shape) >= KC._SCRATCH_MIN_BYTES
    KC._scratch("pad", shape, np.float32).fill(np.nan)
    got = KC._pad_lohi(x, list(lo), list(hi))
    want = np.pad(x, ((0, 0), (0, 0), (lo[0], hi[0]), (lo[1], hi[1])))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed", [False, True])
def test_winograd_route_through_conv2d(dtype, transposed, monkeypatch):
    """3x3 stride-1 convolutions the Winograd kernels take (forward, the flipped-kernel
    input gradient, the weight gradient): values and gradients against torch, and the
    route is really taken (forced for the forward: the rule currently declines it, see
    Note [Winograd accuracy])."""
    import ember._kernels.winograd as W
    from ember._kernels import ort_conv
    monkeypatch.setattr(W, "use_winograd", lambda *a, **k: True)
    monkeypatch.setitem(ort_conv._state, "enabled", False)      # float32 goes to onnxruntime
    from ember._kernels import nn_conv
    monkeypatch.setattr(nn_conv, "_CHUNK_MIN_MACS", 1 << 62)    # (by image chunks otherwise)
    calls = []
    for name in ("conv2d_3x3", "conv2d_3x3_weight_grad"):
        fn = getattr(W, name)
        monkeypatch.setattr(W, name, lambda *a, _fn=fn, _n=name, **k: (calls.append(_n),
                                                                        _fn(*a, **k))[1])
    x = rng.standard_normal((6, 128, 14, 14))
    w = rng.standard_normal((128, 128, 3, 3)) * 0.05
    b = rng.standard_normal(128)
    if transposed:
        _run(lambda x, w, b: F.conv_transpose2d(x, w, b, padding=1),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, padding=1), [x, w, b], dtype)
    else:
        _run(lambda x, w, b: F.conv2d(x, w, b, padding=1),
             lambda x, w, b: TF.conv2d(x, w, b, padding=1), [x, w, b], dtype)
    assert calls.count("conv2d_3x3") == 2 and calls.count("conv2d_3x3_weight_grad") == 1
