"""The BLAS axpy route of in-place add_/sub_ with alpha, and relu's array-operand maximum
(ember/_kernels/fast_elementwise.py): values against NumPy and torch, and the cases that
must fall back to the plain NumPy route."""
import glob
import os

import numpy as np
import pytest
import torch

import ember
from ember._kernels import fast_elementwise as FE


def test_numpy_blas_routines_are_found():
    libdir = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), "numpy.libs")
    if not glob.glob(os.path.join(libdir, "libscipy_openblas*")):
        pytest.skip("this NumPy build ships no bundled OpenBLAS")
    from ember._kernels import numpy_blas
    assert numpy_blas.axpy(np.float32) is not None and numpy_blas.axpy(np.float64) is not None
    assert numpy_blas.axpy(np.int64) is None
    assert numpy_blas._lapack("getrf", "d") is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("alpha", [-0.01, 2.5, 3])
def test_axpy_values(dtype, alpha):
    rng = np.random.default_rng(0)
    y = rng.standard_normal((64, 130)).astype(dtype)
    x = rng.standard_normal((64, 130)).astype(dtype)
    ref = y.astype(np.float64) + alpha * x.astype(np.float64)
    assert FE.axpy_(y, x, alpha)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol)


def test_axpy_declines_what_blas_cannot_do():
    y = np.ones((100, 100), np.float32)
    assert not FE.axpy_(y, np.ones((100, 100), np.float64), 2.0)         # dtype mismatch
    assert not FE.axpy_(y, np.ones((100, 100), np.float32).T[::1, ::-1], 2.0)  # strided
    assert not FE.axpy_(y, np.ones(16, np.float32).reshape(4, 4), 2.0)   # shape
    assert not FE.axpy_(y, y, 2.0)                                       # overlap
    assert not FE.axpy_(y, np.ones((100, 100), np.float32), 0.0)         # alpha 0
    assert not FE.axpy_(y, np.ones((100, 100), np.float32), float("inf"))
    assert not FE.axpy_(np.ones(10, np.float32), np.ones(10, np.float32), 2.0)   # small
    assert (y == 1).all()


@pytest.mark.parametrize("op", ["add_", "sub_"])
@pytest.mark.parametrize("alpha", [-0.37, 0.0, 4])
def test_inplace_add_sub_alpha_match_torch(op, alpha):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((80, 90)).astype(np.float32)
    b = rng.standard_normal((80, 90)).astype(np.float32)
    b[0, 0], b[0, 1] = np.inf, np.nan
    ea, ta = ember.tensor(a.copy()), torch.tensor(a.copy())
    getattr(ea, op)(ember.tensor(b), alpha=alpha)
    getattr(ta, op)(torch.tensor(b), alpha=alpha)
    np.testing.assert_allclose(ea.numpy(), ta.numpy(), rtol=1e-6, atol=1e-6, equal_nan=True)


def test_optimizer_step_on_view_and_strided_params():
    # a transposed (non-contiguous) parameter takes the NumPy route; values must agree
    w = ember.randn(70, 80).t().detach().requires_grad_()
    tw = torch.tensor(w.detach().numpy()).requires_grad_()
    for p, lib in ((w, ember), (tw, torch)):
        opt = lib.optim.SGD([p], lr=0.1)
        (p * p).sum().backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), tw.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("n", [7, 5000, FE._SCALAR_CHUNK + 123])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_matches_torch(n, dtype):
    x = np.random.default_rng(2).standard_normal(n).astype(dtype)
    x[:4] = [np.nan, -np.inf, np.inf, -1.0]
    np.testing.assert_array_equal(ember.relu(ember.tensor(x)).numpy(),
                                  torch.relu(torch.tensor(x)).numpy())


def test_relu_noncontiguous_and_integer():
    x = ember.tensor(np.arange(-3000, 3000, dtype=np.float32).reshape(60, 100)).t()
    np.testing.assert_array_equal(ember.relu(x).numpy(), np.maximum(x.numpy(), 0))
    xi = ember.arange(-5, 5)
    np.testing.assert_array_equal(ember.relu(xi).numpy(), np.maximum(np.arange(-5, 5), 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_single_matrix_solve_through_numpy_lapack(dtype, monkeypatch):
    from ember._kernels import numpy_blas
    calls = []
    real = numpy_blas.lu_solve_inplace
    monkeypatch.setattr(numpy_blas, "lu_solve_inplace",
                        lambda a, b: calls.append(1) or real(a, b))
    rng = np.random.default_rng(4)
    a = rng.standard_normal((40, 40)) + 5 * np.eye(40)
    b = rng.standard_normal((40, 3))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((40, 40))
        b = b + 1j * rng.standard_normal((40, 3))
    a, b = a.astype(dtype), b.astype(dtype)
    x = ember.linalg.solve(ember.tensor(a), ember.tensor(b)).numpy()
    tol = 1e-4 if dtype in (np.float32, np.complex64) else 1e-10
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.complex128), b), rtol=tol,
                               atol=tol)
    assert calls and x.flags.c_contiguous
    # singular: torch's error, and NaN + info from solve_ex
    s = a.copy()
    s[:, 7] = 0
    with pytest.raises(RuntimeError, match="singular"):
        ember.linalg.solve(ember.tensor(s), ember.tensor(b))
    r, info = ember.linalg.solve_ex(ember.tensor(s), ember.tensor(b))
    tr, tinfo = torch.linalg.solve_ex(torch.tensor(s), torch.tensor(b))
    assert int(info) == int(tinfo) > 0 and np.isnan(r.numpy()).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transposed_grad", [False, True])
def test_relu_backward_bit_mask_matches_torch(dtype, transposed_grad):
    """threshold_backward's bit-mask route: masked lanes are +0.0 even under inf/NaN
    gradients, a NaN input passes its gradient, signs of zero as torch's."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 5)).astype(dtype)
    x[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    g = rng.standard_normal((5, 6) if transposed_grad else (6, 5)).astype(dtype)
    g = g.T if transposed_grad else g
    g[0, :4] = [np.nan, np.inf, -0.0, np.nan]
    g[1, :3] = [-0.0, np.inf, -np.inf]
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ember.relu(xe).backward(ember.from_numpy(g))
    torch.relu(xt).backward(torch.from_numpy(np.ascontiguousarray(g)))
    got, want = xe.grad.numpy(), xt.grad.numpy()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_threshold_backward_with_threshold_and_int_input():
    """The threshold itself is masked (x <= threshold), also for integer inputs."""
    g = np.arange(1.0, 7.0, dtype=np.float32)
    x = np.array([0, 1, 2, 3, 4, 5])
    rec = ember._ops.elementwise.threshold_backward
    got = rec(ember.from_numpy(g), ember.from_numpy(x), 2).numpy()
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x), 2)
    np.testing.assert_array_equal(got, want.numpy())


@pytest.mark.parametrize("b", [2, 2.5, -0.0, True, 1e-45, 3.4e38, 7, "array"])
def test_pooled_mul_and_scalar_add_match_numpy_bits(b):
    # x * b and x + b of large float32 tensors run on OpenBLAS's threads where the pool is in
    # use: the same bits as NumPy's (and torch's) for every operand kind
    import torch
    rng = np.random.default_rng(7)
    v = rng.standard_normal(300_000).astype(np.float32)
    v[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 3e38]
    other = rng.standard_normal(300_000).astype(np.float32) if b == "array" else b
    x = ember.from_numpy(v)
    y = ember.from_numpy(other) if b == "array" else other
    t, ty = torch.from_numpy(v), (torch.from_numpy(other) if b == "array" else other)
    with np.errstate(all="ignore"):
        for got, want, ref in ((x * y, np.multiply(v, other), t * ty),
                               (x + y, np.add(v, other), t + ty)):
            g = got.numpy()
            assert g.dtype == np.float32
            np.testing.assert_array_equal(g, want)
            np.testing.assert_array_equal(g, ref.numpy())
            assert np.array_equal(np.signbit(g), np.signbit(want))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [7, 4096, 100003, (1 << 20) + 77])
def test_add_scaled_rounds_once_compiled_or_not(dtype, n):
    # add/sub with alpha: the compiled fused multiply-add (fast_elementwise.add_scaled), and
    # without numba the float64 route or BLAS, give torch's bits, in place and not
    from ember._kernels import compiled
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(dtype)
    x = (rng.standard_normal(n) * 3).astype(dtype)
    for on in (True, False):
        (compiled.enable if on else compiled.disable)()
        try:
            for alpha in (-0.0137, 3):
                for name in ("add", "sub"):
                    want = getattr(torch, name)(torch.tensor(y), torch.tensor(x), alpha=alpha)
                    got = getattr(ember, name)(ember.tensor(y), ember.tensor(x), alpha=alpha)
                    np.testing.assert_array_equal(got.numpy(), want.numpy())
                    got = getattr(ember.tensor(y), name + "_")(ember.tensor(x), alpha=alpha)
                    np.testing.assert_array_equal(got.numpy(), want.numpy())
        finally:
            compiled.enable()
    if n > 1000 and compiled.module("elementwise") is not None:
        assert FE.add_scaled(y, x, 0.5) is not None          # the compiled path was taken


def test_add_scaled_overlaps_and_out_arguments_as_torch():
    rng = np.random.default_rng(1)
    base = rng.standard_normal(20000).astype(np.float32)
    got, want = ember.tensor(base), torch.tensor(base)
    for t in (got, want):                            # b overlaps the target, shifted
        with pytest.raises(RuntimeError, match="single memory location"):
            t[1:].add_(t[:-1], alpha=0.5)
    got.add_(got, alpha=-0.25)                       # b is the target itself
    want.add_(want, alpha=-0.25)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    out_e, out_t = ember.zeros(20000, 2)[:, 0], torch.zeros(20000, 2)[:, 0]   # strided out
    ember.add(got, got.flip(0), alpha=3, out=out_e)
    torch.add(want, want.flip(0), alpha=3, out=out_t)
    np.testing.assert_array_equal(out_e.numpy(), out_t.numpy())
    a = np.ones(5000, np.float32)
    assert FE.add_scaled(a, np.ones(5000, np.float64), 2.0) is None       # dtypes differ
    assert FE.add_scaled(a, np.ones(10000, np.float32)[::2], 2.0) is None  # strided b


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", [100, 6400, 20000])
def test_where_zero_fast_paths_keep_numpy_bits(dtype, n):
    # where(cond, g, 0) (clamp's gradient): compiled, or g's bits under a mask; NaN, infinities
    # and -0.0 under a false condition become +0.0, as np.where and torch.where
    from ember._kernels import compiled
    from ember._kernels import core as K
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(dtype)
    x[:6] = [np.nan, -np.inf, -0.0, np.inf, np.nan, -0.0]
    c = rng.standard_normal(n) > 0
    c[:6] = [False, False, False, False, True, True]
    for on in (True, False):
        (compiled.enable if on else compiled.disable)()
        try:
            for y in (0, 0.0, np.zeros((), dtype)):
                got = K.where(c, x, y)
                want = np.where(c, x, y)
                assert got.dtype == want.dtype
                np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        finally:
            compiled.enable()
    t = torch.where(torch.from_numpy(c), torch.from_numpy(x), 0)
    np.testing.assert_array_equal(ember.where(ember.from_numpy(c), ember.from_numpy(x), 0)
                                  .numpy().view(np.uint8), t.numpy().view(np.uint8))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_emulation_matches_the_compiled_kernel(dtype):
    # addcmul/lerp's fma: the NumPy emulation (no numba) and the CPU's fma (compiled) agree
    # bit for bit, midpoints of the float32 rounding and tiny results included
    from ember._kernels import compiled
    from ember._kernels import elementwise as E
    rng = np.random.default_rng(0)
    n = 60000
    x, y, z = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    x[:1000] = y[:1000] = 1 + 2.0 ** -12                   # products with a 2^-24 tail
    x[1000:2000] = 2.0 ** -30
    z[1000:2000] = 1 + 2.0 ** -23 * rng.integers(0, 4, 1000)
    x[2000:3000] *= 1e-20
    y[2000:3000] *= 1e-20
    z[2000:3000] *= 1e-38
    if dtype == "float32":          # float64 sums on a float32 midpoint, normal and subnormal
        x[:10], y[:10], z[:10] = 2.0 ** -12 * (1 + 2.0 ** -23), 2.0 ** -12 * (1 - 2.0 ** -23), \
            1 + 2.0 ** -23
        x[2000:2010], y[2000:2010] = 2.0 ** -75 * (1 + 2.0 ** -23), 2.0 ** -75 * (1 - 2.0 ** -23)
        z[2000:2010] = 2.0 ** -130 + 2.0 ** -149
    pieces = (slice(None), slice(0, 1000), slice(1000, 2000), slice(2000, 3000),
              slice(3000, None))          # each kind alone: the short path or the two-sum
    compiled.disable()
    try:
        emulated = [E.fma(x[p], y[p], z[p]) for p in pieces]
    finally:
        compiled.enable()
    if compiled.module("elementwise") is None:
        pytest.skip("numba is not installed")
    hw = E.fma(x, y, z)
    for p, e in zip(pieces, emulated):
        np.testing.assert_array_equal(e.view(np.uint8), hw[p].view(np.uint8))
    want = torch.addcmul(torch.from_numpy(z), torch.from_numpy(x), torch.from_numpy(y))
    np.testing.assert_array_equal(hw.view(np.uint8), want.numpy().view(np.uint8))


def test_add_alpha_broadcast_rounds_once_on_a_float32_midpoint():
    # broadcast shapes take the NumPy emulation: the float64 sum of 1 + 2**-23 and
    # 2**-24 - 2**-70 falls on a float32 midpoint; one rounding gives 1 + 2**-23 (torch's),
    # the float64 sum rounded again gave 1 + 2**-22
    a = np.full((2, 1), 1 + 2 ** -23, np.float32)
    b = np.full((2, 3), 2 ** -24 * (1 + 2 ** -23), np.float32)
    alpha = 1 - 2 ** -23
    want = torch.add(torch.from_numpy(a), torch.from_numpy(b), alpha=alpha).numpy()
    assert (want == np.float32(1 + 2 ** -23)).all()
    got = ember.add(ember.from_numpy(a), ember.from_numpy(b), alpha=alpha).numpy()
    np.testing.assert_array_equal(got, want)
    got = ember.sub(ember.from_numpy(a), ember.from_numpy(-b), alpha=alpha).numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("array_x", [False, True])
def test_large_float32_fma_blocks_equal_the_one_shot_path(array_x, monkeypatch):
    # elementwise.fma's blocked float32 path (above _FMA_BLOCK elements) against the same
    # values through the one-shot path (slices below the block size), midpoints and tiny
    # sums included (they send the blocked path back to the exact two-sum); NumPy paths
    from ember._kernels import compiled
    from ember._kernels import elementwise as EK
    monkeypatch.setitem(compiled._state, "enabled", False)
    called = []
    blocks = EK._fma32_blocks
    monkeypatch.setattr(EK, "_fma32_blocks", lambda *a: called.append(1) or blocks(*a))
    rng = np.random.default_rng(7)
    n = EK._FMA_BLOCK * 2 + 123
    y = rng.standard_normal(n).astype(np.float32)
    z = rng.standard_normal(n).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32) if array_x else np.float32(-0.01)
    for case in ("plain", "midpoint", "tiny"):
        yy, zz = y.copy(), z.copy()
        if case == "midpoint":          # 1 + 2^-24: halfway between two float32 values
            yy[n - 5], zz[n - 5] = np.float32(2.0 ** -24), np.float32(1.0)
            xx = x.copy() if array_x else np.float32(1.0)
            if array_x:
                xx[n - 5] = 1
        elif case == "tiny":
            yy[3], zz[3] = np.float32(1e-20), np.float32(1e-39)
            xx = x.copy() if array_x else np.float32(1e-20)
            if array_x:
                xx[3] = np.float32(1e-20)
        else:
            xx = x
        got = EK.fma(xx, yy, zz)
        parts = []
        for lo in range(0, n, 1000):
            xs = xx[lo:lo + 1000] if array_x else xx
            parts.append(EK.fma(xs, yy[lo:lo + 1000], zz[lo:lo + 1000]))
        want = np.concatenate(parts)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert called                       # the blocked path ran
    if not array_x:
        assert EK.fma(np.float32(1.0), np.full(n, 2.0 ** -24, np.float32),
                      np.ones(n, np.float32))[0] == np.float32(1.0)   # the tie to even


@pytest.mark.parametrize("op", ["add_", "sub_"])
def test_inplace_alpha_without_numba_takes_axpy_not_the_emulation(op, monkeypatch):
    # Note [axpy rounds once]: without the compiled kernels p.add_(g, alpha) is BLAS's axpy
    # (one pass); the NumPy fma emulation is not computed first and thrown away
    from ember._kernels import compiled
    from ember._kernels import elementwise as EK
    from ember._ops import core
    monkeypatch.setitem(compiled._state, "enabled", False)
    if not core._axpy_fuses(np.dtype(np.float32)):
        pytest.skip("this BLAS's axpy does not round once")
    calls = []
    fma = EK.fma
    monkeypatch.setattr(EK, "fma", lambda *a: calls.append(1) or fma(*a))
    monkeypatch.setattr(core._EK, "fma", EK.fma)
    rng = np.random.default_rng(1)
    n = 547 * core._AXPY_BLOCK            # whole blocks: no tail for the emulation
    p = rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    e = ember.from_numpy(p.copy())
    getattr(e, op)(ember.from_numpy(g), alpha=-0.01)
    t = torch.from_numpy(p.copy())
    getattr(t, op)(torch.from_numpy(g), alpha=-0.01)
    np.testing.assert_array_equal(e.numpy().view(np.uint32), t.numpy().view(np.uint32))
    assert not calls


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("shape", [(64, 32, 28, 28), (128, 512), (100, 30)])
def test_threshold_backward_matches_torch_bits(held, shape, monkeypatch):
    """ReLU's gradient of a float32 array, on OpenBLAS's threads, the compiled pass (over
    ember's threads once onnxruntime's pool ran: the conv nets; on the caller's for mid-size
    arrays) or NumPy's passes (small ones): torch's bits, with the threshold itself, NaN
    inputs and signed zeros in the gradient."""
    from ember._kernels import compiled, split
    if compiled.module("elementwise") is None:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(split, "_own_pools_ran", [held])
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    x.reshape(-1)[:64] = [0.5, np.nan, 0.0, -0.0] * 16
    g.reshape(-1)[64:128] = -0.0
    rec = ember._ops.elementwise.threshold_backward
    got = rec(ember.from_numpy(g), ember.from_numpy(x), 0.5).numpy()
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x), 0.5)
    np.testing.assert_array_equal(got.view(np.int32), want.numpy().view(np.int32))


@pytest.mark.parametrize("held", [False, True])
@pytest.mark.parametrize("shape", [(64, 32, 28, 28), (128, 512), (100, 30)])
def test_relu_matches_torch_bits(held, shape, monkeypatch):
    """relu of a float32 array on every route (pool, compiled pass, NumPy) keeps -0.0 and
    NaN as torch does."""
    from ember._kernels import compiled, split
    if compiled.module("elementwise") is None:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(split, "_own_pools_ran", [held])
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    x.reshape(-1)[:64] = [np.nan, -0.0, 0.0, -np.inf] * 16
    got = ember.relu(ember.from_numpy(x)).numpy()
    want = torch.relu(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
