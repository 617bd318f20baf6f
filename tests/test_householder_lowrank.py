"""torch.geqrf / torch.ormqr (ember/_ops/householder.py) and torch.svd_lowrank /
torch.pca_lowrank (ember/_lowrank.py) against torch 2.13: values, gradients, errors."""
import numpy as np
import pytest
import torch

import ember

rng = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def _fresh_rng():
    """Each test draws the same numbers whatever ran before it (xdist reorders tests)."""
    global rng
    rng = np.random.default_rng(11)


def _mat(shape, dtype):
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _tol(dtype):
    return 1e-4 if dtype in (np.float32, np.complex64) else 1e-10


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 6, 4), (0, 3), (3, 0)])
def test_geqrf_matches_torch(shape, dtype):
    a = _mat(shape, dtype)
    ea, et = ember.geqrf(ember.tensor(a))
    ta, tt = torch.geqrf(torch.tensor(a))
    np.testing.assert_allclose(ea.numpy(), ta.numpy(), rtol=_tol(dtype), atol=_tol(dtype))
    np.testing.assert_allclose(et.numpy(), tt.numpy(), rtol=_tol(dtype), atol=_tol(dtype))
    r = ember.tensor(a).geqrf()
    assert r.a.shape == ta.shape and r.tau.shape == tt.shape


def test_geqrf_errors_and_no_derivative():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.geqrf(ember.ones(3))
    with pytest.raises(NotImplementedError, match="not implemented for 'Int'"):
        ember.geqrf(ember.ones(3, 3, dtype=ember.int32))
    x = ember.tensor(_mat((4, 3), np.float64), requires_grad=True)
    a, tau = ember.geqrf(x)
    assert a.requires_grad and type(a.grad_fn).__name__ == "GeqrfBackward0"
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not"):
        a.sum().backward()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.float32])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("m,n,batch", [(5, 3, ()), (4, 4, (2,)), (3, 5, ())])
def test_ormqr_values_and_gradients_match_torch(m, n, batch, left, transpose, dtype):
    a = _mat(batch + (m, n), dtype)
    k = min(m, n)
    other = _mat(batch + ((m, 2) if left else (2, m)), dtype)
    ta, ttau = torch.geqrf(torch.tensor(a))
    ins = [ta.numpy(), ttau.numpy(), other]
    e = [ember.tensor(v, requires_grad=True) for v in ins]
    t = [torch.tensor(v, requires_grad=True) for v in ins]
    assert e[1].shape[-1] == k
    ye = ember.ormqr(*e, left=left, transpose=transpose)
    yt = torch.ormqr(*t, left=left, transpose=transpose)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=_tol(dtype),
                               atol=_tol(dtype))
    g = _mat(tuple(yt.shape), dtype)
    ye.backward(ember.tensor(g))
    yt.backward(torch.tensor(g))
    for x, y in zip(e, t):
        np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=10 * _tol(dtype),
                                   atol=10 * _tol(dtype))


def test_ormqr_gradcheck():
    a = ember.tensor(_mat((4, 3), np.float64), requires_grad=True)
    tau = ember.tensor(rng.uniform(0.5, 1.5, 3), requires_grad=True)
    c = ember.tensor(_mat((4, 2), np.float64), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, t, c: ember.ormqr(a, t, c, transpose=True),
                                    (a, tau, c))


@pytest.mark.parametrize("args,kw", [
    (((3,), (3,), (3, 3)), {}),
    (((4, 3), (3,), (3, 2)), {}),
    (((4, 3), (2,), (4, 2)), {}),
    (((4, 3), (3,), (4, 2)), {"left": False}),
    (((2, 4, 3), (3, 3), (2, 4, 2)), {}),
    (((4, 3), (3,), (3,)), {}),
])
def test_ormqr_errors_match_torch(args, kw):
    ts = [torch.zeros(s) for s in args]
    es = [ember.zeros(s) for s in args]
    with pytest.raises(RuntimeError) as te:
        torch.ormqr(*ts, **kw)
    with pytest.raises(RuntimeError) as ee:
        ember.ormqr(*es, **kw)
    assert str(ee.value) == str(te.value)


def test_ormqr_dtype_mismatch():
    with pytest.raises(RuntimeError, match="same dtype"):
        ember.ormqr(ember.zeros(4, 3), ember.zeros(3), ember.zeros(4, 2, dtype=ember.float64))


@pytest.mark.parametrize("shape,q,M", [((9, 6), 3, False), ((6, 9), 4, False),
                                       ((2, 8, 5), 5, False), ((9, 6), 3, True)])
def test_svd_lowrank_seeded_matches_torch(shape, q, M):
    a = _mat(shape, np.float64)
    mean = _mat(shape[:-2] + (1, shape[-1]), np.float64) if M else None
    ember.manual_seed(3)
    torch.manual_seed(3)
    U, S, V = ember.svd_lowrank(ember.tensor(a), q=q, M=None if mean is None else
                                ember.tensor(mean))
    tU, tS, tV = torch.svd_lowrank(torch.tensor(a), q=q, M=None if mean is None else
                                   torch.tensor(mean))
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-9, atol=1e-9)
    # singular vectors agree up to one sign per column (the SVD's own convention)
    for e, t in ((U, tU), (V, tV)):
        sign = np.sign(np.sum(e.numpy() * t.numpy(), axis=-2, keepdims=True))
        np.testing.assert_allclose(e.numpy() * sign, t.numpy(), rtol=1e-8, atol=1e-8)


def test_svd_lowrank_recovers_a_low_rank_matrix_and_differentiates():
    L = _mat((30, 3), np.float64) @ _mat((3, 20), np.float64)
    U, S, V = ember.svd_lowrank(ember.tensor(L), q=5, niter=2)
    assert U.shape == (30, 5) and S.shape == (5,) and V.shape == (20, 5)
    recon = (U * S) @ V.mT
    np.testing.assert_allclose(recon.numpy(), L, atol=1e-9)
    np.testing.assert_allclose(S.numpy()[:3], np.linalg.svd(L, compute_uv=False)[:3],
                               rtol=1e-10)
    x = ember.tensor(L, requires_grad=True)
    ember.manual_seed(0)
    ember.svd_lowrank(x, q=3)[1].sum().backward()
    torch.manual_seed(0)
    tx = torch.tensor(L, requires_grad=True)
    torch.svd_lowrank(tx, q=3)[1].sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank_matches_torch(center):
    a = _mat((12, 5), np.float64) + 3.0
    ember.manual_seed(1)
    torch.manual_seed(1)
    U, S, V = ember.pca_lowrank(ember.tensor(a), center=center)
    tU, tS, tV = torch.pca_lowrank(torch.tensor(a), center=center)
    assert isinstance(ember.pca_lowrank(ember.tensor(a)), tuple)
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-9)
    assert U.shape == tU.shape and V.shape == tV.shape


def test_pca_lowrank_argument_errors_match_torch():
    for kw in ({"q": 7}, {"q": -1}, {"niter": -1}):
        with pytest.raises(ValueError) as te:
            torch.pca_lowrank(torch.zeros(5, 4), **kw)
        with pytest.raises(ValueError) as ee:
            ember.pca_lowrank(ember.zeros(5, 4), **kw)
        assert str(ee.value) == str(te.value)
