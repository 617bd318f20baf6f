"""ember's own float32 GEMM (Note [own GEMM] in ember/_kernels/own_gemm.py): values against
float64 products, bits independent of the split over threads, and the layers that use it
against torch with it and without it."""
import numpy as np
import pytest

import ember

pytest.importorskip("numba")
from ember._kernels import compiled, own_gemm, split  # noqa: E402
from ember._threads import _settings  # noqa: E402


@pytest.fixture
def gemm():
    g = compiled.module("gemm")
    if g is None:
        pytest.skip("compiled kernels switched off")
    return g


def _packed(g, a):
    out = np.empty((-(-a.shape[0] // g.R), a.shape[1], g.R), np.float32)
    g.pack_a(a, out)
    return out


def _close(got, a, b, extra=0.0):
    ref = a.astype(np.float64) @ b.astype(np.float64) + extra
    bound = 4e-7 * np.sqrt(a.shape[1]) * (np.abs(a).astype(np.float64) @ np.abs(b) + 1)
    assert (np.abs(got - ref) <= bound).all()


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (12, 5, 16), (13, 7, 17), (11, 300, 33),
                                   (25, 257, 32), (40, 600, 48), (7, 2, 70), (36, 513, 65)])
def test_tiles_match_float64_products(gemm, m, k, n):
    rng = np.random.default_rng(m * 1000 + k + n)
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    ap = _packed(gemm, a)
    c = np.full((m, n), np.nan, np.float32)
    gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, 0, 0, c.ctypes.data, n, m, k, 0,
               ap.shape[0], 0)
    _close(c, a, b)
    c_in = rng.standard_normal((m, n), np.float32)
    c2 = np.full((m, n), np.nan, np.float32)
    gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, c_in.ctypes.data, 1, c2.ctypes.data, n,
               m, k, 0, ap.shape[0], 0)
    _close(c2, a, b, c_in)


def test_strided_operands_leave_the_rest_alone(gemm):
    rng = np.random.default_rng(3)
    m, k, n = 29, 40, 37
    a = rng.standard_normal((m, k), np.float32)
    big_b = rng.standard_normal((k, n + 9), np.float32)
    b = big_b[:, 4:4 + n]
    big_c = np.full((m, n + 11), 7.0, np.float32)
    ap = _packed(gemm, a)
    gemm.tiles(ap.ctypes.data, b.ctypes.data, n + 9, n, 0, 0, big_c[:, 5:].ctypes.data,
               n + 11, m, k, 0, ap.shape[0], 0)
    _close(big_c[:, 5:5 + n], a, b)
    assert (big_c[:, :5] == 7).all() and (big_c[:, 5 + n:] == 7).all()


def test_pack_of_a_transposed_view_is_the_same(gemm):
    a = np.random.default_rng(4).standard_normal((30, 19), np.float32)
    out = np.empty((3, 19, gemm.R), np.float32)
    gemm.pack_a_t(np.ascontiguousarray(a.T), out)
    assert np.array_equal(out, _packed(gemm, a))


def test_bits_do_not_depend_on_the_split(gemm):
    """Any split of the tiles (and so any thread count) gives the same bits; depth past
    one block of k (KC) included."""
    rng = np.random.default_rng(5)
    m, k, n = 100, 3 * gemm.KC + 17, 70
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    ap = _packed(gemm, a)
    whole = np.empty((m, n), np.float32)
    gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, 0, 0, whole.ctypes.data, n, m, k, 0,
               ap.shape[0], 0)
    _close(whole, a, b)
    parts = np.empty((m, n), np.float32)
    for lo, hi in [(0, 1), (1, 4), (4, 5), (5, ap.shape[0])]:
        gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, 0, 0, parts.ctypes.data, n, m, k, lo,
                   hi, 0)
    assert np.array_equal(parts, whole)


@pytest.mark.parametrize("depth", [100, 256, 576])
def test_depth_blocks_are_summed_chains(gemm, depth):
    """``depth``: each block of k its own chain, added in order, as NumPy's blocked sum of
    per-block products (Note [GEMM depth]); bits independent of the split."""
    rng = np.random.default_rng(depth)
    m, k, n = 40, 1300, 50
    a = rng.standard_normal((m, k), np.float32)
    b = rng.standard_normal((k, n), np.float32)
    ap = _packed(gemm, a)
    c = np.empty((m, n), np.float32)
    gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, 0, 0, c.ctypes.data, n, m, k, 0,
               ap.shape[0], depth)
    _close(c, a, b)
    blocks = [np.empty((m, n), np.float32) for _ in range(0, k, depth)]
    for i, k0 in enumerate(range(0, k, depth)):
        kb = min(depth, k - k0)
        pb = _packed(gemm, np.ascontiguousarray(a[:, k0:k0 + kb]))
        gemm.tiles(pb.ctypes.data, b[k0:].ctypes.data, n, n, 0, 0, blocks[i].ctypes.data, n,
                   m, kb, 0, pb.shape[0], 0)
    total = blocks[0]
    for part in blocks[1:]:
        total = total + part
    assert np.array_equal(c, total)
    parts = np.empty((m, n), np.float32)
    for lo, hi in [(0, 2), (2, ap.shape[0])]:
        gemm.tiles(ap.ctypes.data, b.ctypes.data, n, n, 0, 0, parts.ctypes.data, n, m, k, lo,
                   hi, depth)
    assert np.array_equal(parts, c)


@pytest.fixture
def own_on(monkeypatch):
    if compiled.module("gemm") is None:
        pytest.skip("compiled kernels switched off")
    monkeypatch.setitem(own_gemm._state, "usable", True)     # on any host (AVX2 too)
    saved = _settings["threads"]
    yield
    _settings["threads"] = saved


@pytest.mark.parametrize("shape", [(256, 784, 512), (300, 129, 257), (33, 1000, 700),
                                   (9, 4000, 300)])
def test_split_matmul_same_bits_at_any_thread_count(own_on, shape):
    m, k, n = shape
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((m, k), np.float32)
    for b in (rng.standard_normal((k, n), np.float32),
              rng.standard_normal((n, k), np.float32).T):
        assert own_gemm.wanted(a, b)
        _settings["threads"] = 1
        ref = split.matmul(a, b)
        _close(ref, a, b)
        for t in (2, 3):
            _settings["threads"] = t
            assert np.array_equal(split.matmul(a, b), ref)
        out = np.empty((m, n), np.float32)
        assert split.matmul(a, b, out=out) is out and np.array_equal(out, ref)


def test_batched_and_folded_products(own_on):
    rng = np.random.default_rng(6)
    a3, b3 = rng.standard_normal((3, 90, 200), np.float32), \
        rng.standard_normal((3, 200, 80), np.float32)
    got = split.matmul(a3, b3)
    for i in range(3):
        _close(got[i], a3[i], b3[i])
    af, w = rng.standard_normal((4, 50, 256), np.float32), \
        rng.standard_normal((256, 30), np.float32)
    got = split.matmul(af, w)
    for i in range(4):
        _close(got[i], af[i], w)


@pytest.mark.parametrize("use_own", [True, False])
def test_layers_match_torch_with_and_without(monkeypatch, use_own):
    """Linear (forward and both gradients) and an LSTM layer agree with torch on either
    GEMM."""
    torch = pytest.importorskip("torch")
    if use_own and compiled.module("gemm") is None:
        pytest.skip("compiled kernels switched off")
    monkeypatch.setitem(own_gemm._state, "usable", use_own)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 300), np.float32)
    w = (rng.standard_normal((200, 300)) / 17).astype(np.float32)
    xe, we = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ye, yt = ember.nn.functional.linear(xe, we), torch.nn.functional.linear(xt, wt)
    g = rng.standard_normal(ye.shape, np.float32)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    for e, t in ((ye, yt), (xe.grad, xt.grad), (we.grad, wt.grad)):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-4,
                                   atol=1e-4)
    ember.manual_seed(0)
    lstm = ember.nn.LSTM(40, 96, batch_first=True)
    tl = torch.nn.LSTM(40, 96, batch_first=True)
    with torch.no_grad():
        for (name, p) in lstm.named_parameters():
            getattr(tl, name).copy_(torch.tensor(p.detach().numpy()))
    xs = rng.standard_normal((24, 9, 40), np.float32)
    xe, xt = ember.tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
    (oe, _), (ot, _) = lstm(xe), tl(xt)
    oe.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-4,
                               atol=2e-5)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=2e-5)
    np.testing.assert_allclose(lstm.weight_hh_l0.grad.numpy(), tl.weight_hh_l0.grad.numpy(),
                               rtol=1e-4, atol=1e-4)
