"""ember.linalg vs torch.linalg (oracle) and NumPy/SciPy: values (invariants for
decompositions with sign/phase freedom), dtypes, shapes, batching, errors, gradients."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ember
from helpers import torch, assert_close

pytestmark = pytest.mark.skipif(torch is None, reason="torch oracle needed")

DTYPES = ("float32", "float64", "complex64", "complex128")
TOL = {"float32": 1e-3, "complex64": 1e-3, "float64": 1e-8, "complex128": 1e-8}


def rnd(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if "complex" in dtype:
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def spd(shape, dtype, seed=0):
    a = rnd(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2).conj() + n * np.eye(n)).astype(dtype)


def wellcond(shape, dtype, seed=0):
    return (rnd(shape, dtype, seed) + 3 * np.eye(shape[-1])).astype(dtype)


def E(x):
    return ember.from_numpy(np.array(x)) if isinstance(x, np.ndarray) else x


def T(x):
    return torch.from_numpy(np.array(x)) if isinstance(x, np.ndarray) else x


def close(a, b, dtype, msg=""):
    if isinstance(b, torch.Tensor):
        b = b.detach().resolve_conj().resolve_neg().numpy()
    assert_close(a, b, atol=TOL[dtype], rtol=TOL[dtype], msg=msg)


def same_meta(r, t):
    rs = r if isinstance(r, tuple) else (r,)
    ts = t if isinstance(t, tuple) else (t,)
    assert len(rs) == len(ts)
    for x, y in zip(rs, ts):
        assert str(x.dtype) == str(y.dtype), (x.dtype, y.dtype)
        assert tuple(x.shape) == tuple(y.shape), (x.shape, y.shape)


# -------------------------------------------------------------------- forward: direct values

# name, input builder(s), kwargs; compared elementwise with torch
DIRECT = [
    ("det", [wellcond], (3, 3), {}),
    ("det", [rnd], (2, 4, 4), {}),
    ("slogdet", [rnd], (2, 3, 3), {}),
    ("inv", [wellcond], (2, 3, 3), {}),
    ("inv_ex", [wellcond], (4, 4), {}),
    ("solve", [wellcond, rnd], ((2, 3, 3), (2, 3, 2)), {}),
    ("solve", [wellcond, rnd], ((2, 3, 3), (2, 3)), {}),
    ("solve", [wellcond, rnd], ((3, 3), (3,)), {}),
    ("solve", [wellcond, rnd], ((2, 3, 3), (4, 3)), {"left": False}),
    ("solve", [wellcond, rnd], ((3, 3), (5, 2, 3, 4)), {}),
    ("solve_ex", [wellcond, rnd], ((2, 3, 3), (2, 3, 2)), {}),
    ("cholesky", [spd], (2, 3, 3), {}),
    ("cholesky", [spd], (4, 4), {"upper": True}),
    ("cholesky_ex", [spd], (3, 3), {}),
    ("eigvalsh", [spd], (2, 4, 4), {}),
    ("eigvalsh", [spd], (4, 4), {"UPLO": "U"}),
    ("svdvals", [rnd], (2, 3, 5), {}),
    ("pinv", [rnd], (2, 3, 5), {}),
    ("pinv", [spd], (4, 4), {"hermitian": True}),
    ("matrix_exp", [rnd], (2, 3, 3), {}),
    ("matrix_power", [wellcond], (2, 3, 3), {"n": 3}),
    ("matrix_power", [wellcond], (3, 3), {"n": -2}),
    ("matrix_power", [wellcond], (3, 3), {"n": 0}),
    ("norm", [rnd], (3, 4), {}),
    ("norm", [rnd], (3, 4), {"ord": "nuc"}),
    ("norm", [rnd], (2, 3, 4), {"dim": (1, 2), "ord": 2}),
    ("norm", [rnd], (5,), {"ord": 3}),
    ("vector_norm", [rnd], (2, 3, 4), {"ord": 1, "dim": (0, 2), "keepdim": True}),
    ("matrix_norm", [rnd], (2, 3, 4), {}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": "nuc"}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": 1}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": -1}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": float("inf")}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": -float("inf"), "keepdim": True}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": 2}),
    ("matrix_norm", [rnd], (2, 3, 4), {"ord": -2}),
    ("cond", [wellcond], (2, 3, 3), {}),
    ("cond", [wellcond], (3, 3), {"p": "fro"}),
    ("cond", [wellcond], (3, 3), {"p": 1}),
    ("matrix_rank", [rnd], (2, 3, 5), {}),
    ("matrix_rank", [spd], (4, 4), {"hermitian": True}),
    ("matrix_rank", [rnd], (3, 5), {"atol": 1.0, "rtol": 0.1}),
    ("cross", [rnd, rnd], ((2, 3), (2, 3)), {}),
    ("cross", [rnd, rnd], ((3, 1), (3, 4)), {"dim": 0}),
    ("vecdot", [rnd, rnd], ((2, 3), (2, 3)), {}),
    ("diagonal", [rnd], (2, 3, 4), {"offset": 1}),
    ("vander", [rnd], (2, 4), {}),
    ("vander", [rnd], (3,), {"N": 5}),
    ("tensorinv", [wellcond], (6, 6), {"ind": 1}),
    ("householder_product", [rnd, rnd], ((5, 3), (2,)), {}),
    ("householder_product", [rnd, rnd], ((2, 4, 4), (2, 3)), {}),
    ("lu_factor", [rnd], (2, 4, 4), {}),
    ("lu_factor", [rnd], (3, 5), {}),
    ("lu", [rnd], (2, 4, 3), {}),
    ("lu", [rnd], (3, 5), {}),
]


def _build(builders, shapes, dtype):
    if len(builders) == 1:
        shapes = (shapes,)
    return [b(s, dtype, seed=i) for i, (b, s) in enumerate(zip(builders, shapes))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", DIRECT, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}")
def test_direct(case, dtype):
    name, builders, shapes, kw = case
    if name in ("cross", "householder_product") and "complex" in dtype and name == "cross":
        pass
    args = _build(builders, shapes, dtype)
    if name == "tensorinv":
        args = [args[0].reshape(6, 2, 3)]
    r = getattr(ember.linalg, name)(*[E(a) for a in args], **kw)
    t = getattr(torch.linalg, name)(*[T(a) for a in args], **kw)
    same_meta(r, t)
    rs = r if isinstance(r, tuple) else (r,)
    ts = t if isinstance(t, tuple) else (t,)
    for x, y in zip(rs, ts):
        close(x, y, dtype, name)
    if isinstance(t, tuple) and type(t).__module__ == "torch.return_types":
        assert type(r).__name__ == type(t).__name__
        assert all(hasattr(r, f) for f in dir(t) if not f.startswith("_") and f not in
                   ("count", "index", "n_fields", "n_sequence_fields", "n_unnamed_fields"))


# -------------------------------------------------------------------- forward vs NumPy/SciPy


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reference(dtype):
    a = wellcond((3, 4, 4), dtype)
    b = rnd((3, 4, 2), dtype, 1)
    close(ember.linalg.det(E(a)), np.linalg.det(a), dtype)
    close(ember.linalg.inv(E(a)), np.linalg.inv(a), dtype)
    close(ember.linalg.solve(E(a), E(b)), np.linalg.solve(a, b), dtype)
    close(ember.linalg.svdvals(E(a)), np.linalg.svd(a, compute_uv=False), dtype)
    close(ember.linalg.pinv(E(a)), np.linalg.pinv(a), dtype)
    import scipy.linalg as sl
    close(ember.linalg.matrix_exp(E(a[0] / 4)), sl.expm(a[0] / 4), dtype)
    s = spd((3, 4, 4), dtype)
    close(ember.linalg.cholesky(E(s)), np.linalg.cholesky(s), dtype)
    close(ember.linalg.eigvalsh(E(s)), np.linalg.eigvalsh(s), dtype)


# -------------------------------------------------------------------- decompositions


def _np(x):
    return x.detach().resolve_conj().numpy() if isinstance(x, torch.Tensor) else x._data


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (2, 3, 5)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, shape, mode):
    a = rnd(shape, dtype)
    Q, R = ember.linalg.qr(E(a), mode=mode)
    tQ, tR = torch.linalg.qr(T(a), mode=mode)
    same_meta((Q, R), (tQ, tR))
    close(np.abs(_np(R)), np.abs(_np(tR)), dtype)
    if mode != "r":
        close(_np(Q) @ _np(R), a, dtype)
        qq = np.swapaxes(_np(Q), -1, -2).conj() @ _np(Q)
        close(qq, np.broadcast_to(np.eye(Q.shape[-1]), qq.shape), dtype)
    assert np.allclose(np.tril(_np(R), -1), 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (2, 3, 5), (0, 3)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, shape, full):
    a = rnd(shape, dtype)
    U, S, Vh = ember.linalg.svd(E(a), full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(T(a), full_matrices=full)
    same_meta((U, S, Vh), (tU, tS, tVh))
    close(S, tS, dtype)
    k = S.shape[-1]
    u, s, vh = _np(U)[..., :k], _np(S), _np(Vh)[..., :k, :]
    close((u * s[..., None, :]) @ vh, a, dtype)
    uu = np.swapaxes(_np(U), -1, -2).conj() @ _np(U)
    close(uu, np.broadcast_to(np.eye(U.shape[-1]), uu.shape), dtype)
    # torch.svd: V, some=, compute_uv=
    r = ember.svd(E(a), some=not full)
    tr = torch.svd(T(a), some=not full)
    same_meta(tuple(r), tuple(tr))
    assert type(r).__name__ == "svd" and r._fields == ("U", "S", "V")
    r = ember.svd(E(a), compute_uv=False)
    tr = torch.svd(T(a), compute_uv=False)
    same_meta(tuple(r), tuple(tr))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, uplo):
    a = rnd((2, 4, 4), dtype)
    L, V = ember.linalg.eigh(E(a), UPLO=uplo)
    tL, tV = torch.linalg.eigh(T(a), UPLO=uplo)
    same_meta((L, V), (tL, tV))
    close(L, tL, dtype)
    v, l = _np(V), _np(L)
    h = np.tril(a, -1) + np.swapaxes(np.tril(a, -1), -1, -2).conj() if uplo == "L" else \
        np.triu(a, 1) + np.swapaxes(np.triu(a, 1), -1, -2).conj()
    h = h + np.eye(4) * np.diagonal(a, 0, -2, -1).real[..., None, :]
    close((v * l[..., None, :]) @ np.swapaxes(v, -1, -2).conj(), h, dtype)
    assert type(ember.linalg.eigh(E(a))).__name__ == "linalg_eigh"


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig(dtype):
    a = rnd((2, 4, 4), dtype)
    L, V = ember.linalg.eig(E(a))
    tL, tV = torch.linalg.eig(T(a))
    same_meta((L, V), (tL, tV))
    key = lambda w: np.sort_complex(np.round(w, 4))  # noqa: E731
    close(key(_np(L)), key(_np(tL)), dtype)
    v, l = _np(V), _np(L)
    close(a @ v, v * l[..., None, :], dtype)
    close(np.linalg.norm(v, axis=-2), np.ones(v.shape[:-1]), dtype)
    w = ember.linalg.eigvals(E(a))
    same_meta(w, torch.linalg.eigvals(T(a)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left,adjoint", [(True, False), (True, True), (False, False),
                                          (False, True)])
def test_lu_solve(dtype, left, adjoint):
    a = wellcond((2, 4, 4), dtype)
    b = rnd((2, 4, 3) if left else (2, 3, 4), dtype, 1)
    LU, piv = ember.linalg.lu_factor(E(a))
    tLU, tpiv = torch.linalg.lu_factor(T(a))
    close(LU, tLU, dtype)
    assert piv.dtype == ember.int32 and np.array_equal(_np(piv), _np(tpiv))
    x = ember.linalg.lu_solve(LU, piv, E(b), left=left, adjoint=adjoint)
    tx = torch.linalg.lu_solve(tLU, tpiv, T(b), left=left, adjoint=adjoint)
    close(x, tx, dtype)
    P, L, U = ember.lu_unpack(LU, piv)
    tP, tL, tU = torch.lu_unpack(tLU, tpiv)
    for p, q in zip((P, L, U), (tP, tL, tU)):
        close(p, q, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper,left,unit", [(True, True, False), (False, True, True),
                                             (True, False, False), (False, False, True)])
def test_solve_triangular(dtype, upper, left, unit):
    a = wellcond((2, 4, 4), dtype)
    b = rnd((2, 4, 3) if left else (2, 3, 4), dtype, 1)
    r = ember.linalg.solve_triangular(E(a), E(b), upper=upper, left=left, unitriangular=unit)
    t = torch.linalg.solve_triangular(T(a), T(b), upper=upper, left=left, unitriangular=unit)
    same_meta(r, t)
    close(r, t, dtype)
    r = ember.triangular_solve(E(b if left else b.swapaxes(-1, -2)), E(a), upper=upper,
                               unitriangular=unit)
    t = torch.triangular_solve(T(b if left else b.swapaxes(-1, -2)), T(a), upper=upper,
                               unitriangular=unit)
    close(r[0], t[0], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss", "gels"])
def test_lstsq(dtype, driver):
    a = rnd((2, 5, 3), dtype)
    b = rnd((2, 5, 2), dtype, 1)
    r = ember.linalg.lstsq(E(a), E(b), driver=driver)
    t = torch.linalg.lstsq(T(a), T(b), driver=driver)
    assert type(r).__name__ == "linalg_lstsq" == type(t).__name__
    assert r._fields == ("solution", "residuals", "rank", "singular_values")
    same_meta(tuple(r), tuple(t))
    for x, y in zip(r, t):
        close(x, y, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl(dtype, hermitian):
    a = rnd((2, 4, 4), dtype)
    a = a + (np.swapaxes(a, -1, -2).conj() if hermitian else np.swapaxes(a, -1, -2))
    b = rnd((2, 4, 2), dtype, 1)
    LD, piv, info = ember.linalg.ldl_factor_ex(E(a), hermitian=hermitian)
    tLD, tpiv, tinfo = torch.linalg.ldl_factor_ex(T(a), hermitian=hermitian)
    same_meta((LD, piv, info), (tLD, tpiv, tinfo))
    close(LD, tLD, dtype)
    assert np.array_equal(_np(piv), _np(tpiv))
    x = ember.linalg.ldl_solve(LD, piv, E(b), hermitian=hermitian)
    close(x, torch.linalg.ldl_solve(tLD, tpiv, T(b), hermitian=hermitian), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_aliases(dtype):
    a = wellcond((2, 3, 3), dtype)
    s = spd((2, 3, 3), dtype)
    b = rnd((2, 3, 2), dtype, 1)
    ea, ta = E(a), T(a)
    for name in ("det", "inverse", "matrix_exp", "pinverse", "logdet"):
        close(getattr(ember, name)(ea), getattr(torch, name)(ta), dtype, name)
        close(getattr(ea, name)(), getattr(ta, name)(), dtype, name)
    r, t = ember.slogdet(ea), torch.slogdet(ta)
    assert type(r).__name__ == "slogdet" == type(t).__name__ and r._fields == ("sign", "logabsdet")
    close(r[1], t[1], dtype)
    close(ember.matrix_power(ea, 3), torch.matrix_power(ta, 3), dtype)
    L = ember.linalg.cholesky(E(s))
    tL = torch.linalg.cholesky(T(s))
    close(ember.cholesky_solve(E(b), L), torch.cholesky_solve(T(b), tL), dtype)
    close(ember.cholesky_inverse(L), torch.cholesky_inverse(tL), dtype)
    U = ember.linalg.cholesky(E(s), upper=True)
    tU = torch.linalg.cholesky(T(s), upper=True)
    close(ember.cholesky_solve(E(b), U, upper=True), torch.cholesky_solve(T(b), tU, upper=True),
          dtype)
    q, r_ = ember.qr(ea)
    tq, tr = torch.qr(ta)
    close(_np(q) @ _np(r_), a, dtype)
    assert type(ember.qr(ea)).__name__ == "qr"
    lu, piv = ember.lu(ea)
    tlu, tpiv = torch.linalg.lu_factor(ta)
    close(lu, tlu, dtype)
    close(ember.lu_solve(E(b), lu, piv), torch.lu_solve(T(b), tlu, tpiv), dtype)


def test_multi_dot_and_tensorsolve():
    a, b, c = rnd((3,), "float64"), rnd((3, 4), "float64", 1), rnd((4,), "float64", 2)
    d = rnd((4, 5), "float64", 3)
    close(ember.linalg.multi_dot([E(a), E(b), E(c)]),
          torch.linalg.multi_dot([T(a), T(b), T(c)]), "float64")
    close(ember.linalg.multi_dot([E(b), E(d), E(d.T), E(b.T)]),
          torch.linalg.multi_dot([T(b), T(d), T(d.T), T(b.T)]), "float64")
    A = wellcond((6, 6), "float64").reshape(2, 3, 6)
    B = rnd((2, 3), "float64")
    close(ember.linalg.tensorsolve(E(A), E(B)), torch.linalg.tensorsolve(T(A), T(B)), "float64")
    A2 = np.moveaxis(wellcond((6, 6), "float64").reshape(6, 2, 3), 0, 2)
    close(ember.linalg.tensorsolve(E(A2), E(rnd((6,), "float64")), dims=(0, 1)),
          torch.linalg.tensorsolve(T(A2), T(rnd((6,), "float64")), dims=(0, 1)), "float64")


def test_float32_stays_float32_and_no_scipy_at_import():
    import subprocess
    import sys
    code = "import ember, sys; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "False", out.stderr
    a = E(wellcond((3, 3), "float32"))
    for f in ("det", "inv", "matrix_exp", "pinv", "cholesky"):
        x = a @ a.mT if f == "cholesky" else a
        assert getattr(ember.linalg, f)(x).dtype == ember.float32


# -------------------------------------------------------------------- errors


def _err(fn_e, fn_t):
    with pytest.raises(Exception) as te:
        fn_t()
    et = type(te.value)
    if issubclass(et, torch.linalg.LinAlgError):
        et = ember.linalg.LinAlgError
    with pytest.raises(et, match=re.escape(str(te.value).split("\n")[0])):
        fn_e()


ERRS = [
    ("det non-square", lambda m: m.linalg.det(m.zeros(3, 2, dtype=m.float64))),
    ("det 1d", lambda m: m.linalg.det(m.zeros(3, dtype=m.float64))),
    ("det int", lambda m: m.linalg.det(m.zeros(3, 3, dtype=m.int64))),
    ("inv singular", lambda m: m.linalg.inv(m.tensor([[1., 0., 0.], [0., 1., 0.], [0., 0., 0.]],
                                                     dtype=m.float64))),
    ("inv singular batched", lambda m: m.linalg.inv(m.stack([m.eye(2, dtype=m.float64),
                                                             m.zeros(2, 2, dtype=m.float64)]))),
    ("cholesky not pd", lambda m: m.linalg.cholesky(m.tensor([[1., 2.], [2., 1.]],
                                                             dtype=m.float64))),
    ("solve singular", lambda m: m.linalg.solve(m.zeros(2, 2, dtype=m.float64),
                                                m.ones(2, dtype=m.float64))),
    ("solve dtype", lambda m: m.linalg.solve(m.eye(2, dtype=m.float64), m.ones(2))),
    ("qr mode", lambda m: m.linalg.qr(m.eye(2), mode="bad")),
    ("lu no pivot", lambda m: m.linalg.lu_factor(m.eye(2), pivot=False)),
    ("matrix_norm ord", lambda m: m.linalg.matrix_norm(m.eye(2), ord=3)),
    ("lstsq driver", lambda m: m.linalg.lstsq(m.eye(2), m.eye(2), driver="foo")),
    ("eigh uplo", lambda m: m.linalg.eigh(m.eye(2), UPLO="X")),
    ("tensorinv", lambda m: m.linalg.tensorinv(m.ones(2, 3), ind=1)),
]


@pytest.mark.parametrize("case", ERRS, ids=lambda c: c[0])
def test_errors(case):
    _, f = case
    _err(lambda: f(ember), lambda: f(torch))


def test_ex_variants_report_info():
    A = np.stack([np.eye(3), np.diag([1., 1., 0.])])
    r, info = ember.linalg.inv_ex(E(A))
    tr, tinfo = torch.linalg.inv_ex(T(A))
    assert np.array_equal(_np(info), _np(tinfo)) and info.dtype == ember.int32
    L, info = ember.linalg.cholesky_ex(E(np.array([[1., 2.], [2., 1.]])))
    assert int(info) == 2
    _, _, info = ember.linalg.lu_factor_ex(E(A))
    assert np.array_equal(_np(info), _np(torch.linalg.lu_factor_ex(T(A)).info))
    _, info = ember.linalg.solve_ex(E(A), E(np.ones((2, 3))))
    assert np.array_equal(_np(info), _np(torch.linalg.solve_ex(T(A), T(np.ones((2, 3)))).info))


# -------------------------------------------------------------------- gradients


def _herm(x):
    return x @ x.mH + ember.eye(x.shape[-1], dtype=x.dtype) * x.shape[-1]


GRADS = [
    ("det", lambda x: ember.linalg.det(x), [wellcond], ((2, 3, 3),)),
    ("slogdet", lambda x: ember.linalg.slogdet(x).logabsdet, [wellcond], ((2, 3, 3),)),
    ("slogdet_sign", lambda x: tuple(ember.linalg.slogdet(x)), [wellcond], ((3, 3),)),
    ("logdet", lambda x: ember.logdet(_herm(x)), [rnd], ((3, 3),)),
    ("inv", lambda x: ember.linalg.inv(x), [wellcond], ((2, 3, 3),)),
    ("inv_ex", lambda x: ember.linalg.inv_ex(x).inverse, [wellcond], ((3, 3),)),
    ("solve", lambda a, b: ember.linalg.solve(a, b), [wellcond, rnd], ((2, 3, 3), (2, 3, 2))),
    ("solve_vec", lambda a, b: ember.linalg.solve(a, b), [wellcond, rnd], ((3, 3), (3,))),
    ("solve_right", lambda a, b: ember.linalg.solve(a, b, left=False), [wellcond, rnd],
     ((3, 3), (2, 3))),
    ("solve_triangular", lambda a, b: ember.linalg.solve_triangular(a, b, upper=True),
     [wellcond, rnd], ((3, 3), (3, 2))),
    ("solve_triangular_unit", lambda a, b: ember.linalg.solve_triangular(
        a, b, upper=False, left=False, unitriangular=True), [wellcond, rnd], ((3, 3), (2, 3))),
    ("cholesky", lambda x: ember.linalg.cholesky(_herm(x)), [rnd], ((2, 3, 3),)),
    ("cholesky_upper", lambda x: ember.linalg.cholesky(_herm(x), upper=True), [rnd], ((3, 3),)),
    ("qr_tall", lambda x: tuple(ember.linalg.qr(x)), [rnd], ((4, 3),)),
    ("qr_square", lambda x: tuple(ember.linalg.qr(x)), [rnd], ((2, 3, 3),)),
    ("qr_wide", lambda x: tuple(ember.linalg.qr(x)), [rnd], ((3, 4),)),
    ("eigh", lambda x: _eigh_inv(x + x.mH), [rnd], ((2, 3, 3),)),
    ("eigvalsh", lambda x: ember.linalg.eigvalsh(x + x.mH), [rnd], ((3, 3),)),
    ("svd", lambda x: _svd_inv(x, False), [rnd], ((4, 3),)),
    ("svd_wide", lambda x: _svd_inv(x, False), [rnd], ((2, 3, 4),)),
    ("svd_full", lambda x: _svd_inv(x, True), [rnd], ((3, 3),)),
    ("svdvals", lambda x: ember.linalg.svdvals(x), [rnd], ((3, 4),)),
    ("eig", lambda x: _eig_inv(x), [rnd], ((3, 3),)),
    ("eigvals", lambda x: ember.linalg.eigvals(x), [rnd], ((3, 3),)),
    ("pinv", lambda x: ember.linalg.pinv(x), [rnd], ((4, 3),)),
    ("pinv_wide", lambda x: ember.linalg.pinv(x), [rnd], ((2, 4),)),
    ("lstsq", lambda a, b: ember.linalg.lstsq(a, b).solution, [rnd, rnd], ((4, 3), (4, 2))),
    ("matrix_exp", lambda x: ember.linalg.matrix_exp(x), [rnd], ((2, 3, 3),)),
    ("matrix_power", lambda x: ember.linalg.matrix_power(x, -2), [wellcond], ((3, 3),)),
    ("lu_factor", lambda x: ember.linalg.lu_factor(x).LU, [rnd], ((2, 3, 3),)),
    ("lu", lambda x: tuple(ember.linalg.lu(x))[1:], [rnd], ((3, 3),)),
    ("lu_solve", lambda a, b: ember.linalg.lu_solve(*ember.linalg.lu_factor(a), b),
     [wellcond, rnd], ((3, 3), (3, 2))),
    ("matrix_norm_nuc", lambda x: ember.linalg.matrix_norm(x, "nuc"), [rnd], ((3, 4),)),
    ("matrix_norm_2", lambda x: ember.linalg.matrix_norm(x, 2), [rnd], ((3, 4),)),
    ("matrix_norm_inf", lambda x: ember.linalg.matrix_norm(x, float("inf")), [rnd], ((3, 4),)),
    ("cond", lambda x: ember.linalg.cond(x), [wellcond], ((3, 3),)),
    ("multi_dot", lambda a, b: ember.linalg.multi_dot([a, b, a.mT]), [rnd, rnd],
     ((3, 4), (4, 4))),
    ("householder_product", lambda a, t: ember.linalg.householder_product(a, t), [rnd, rnd],
     ((4, 3), (2,))),
    ("cholesky_solve", lambda b, x: ember.cholesky_solve(b, ember.linalg.cholesky(_herm(x))),
     [rnd, rnd], ((3, 2), (3, 3))),
    ("vander", lambda x: ember.linalg.vander(x), [rnd], ((3,),)),
    ("vecdot", lambda x, y: ember.linalg.vecdot(x, y), [rnd, rnd], ((2, 3), (2, 3))),
]


def _eigh_inv(a):
    L, V = ember.linalg.eigh(a)
    return L, (V * V.conj()).real if V.is_complex() else V


def _svd_inv(a, full):
    U, S, Vh = ember.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    U, Vh = U[..., :k], Vh[..., :k, :]
    # gauge-invariant: S and U diag(S) Vh projections
    return S, U @ Vh, (U * U.conj()).real if U.is_complex() else U


def _eig_inv(a):
    L, V = ember.linalg.eig(a)
    return L, V.abs()


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("case", GRADS, ids=lambda c: c[0])
def test_gradcheck(case, dtype):
    name, fn, builders, shapes = case
    if name == "eig" and dtype == "float64":
        pass
    args = [ember.from_numpy(b(s, dtype, seed=i)).requires_grad_()
            for i, (b, s) in enumerate(zip(builders, shapes))]
    if name == "householder_product":
        args[0] = ember.from_numpy(rnd(shapes[0], dtype) / 2).requires_grad_()
    assert ember.autograd.gradcheck(fn, tuple(args), atol=1e-5, rtol=1e-3)


GRADGRAD = ["det", "inv", "solve", "cholesky", "eigh", "svd", "qr_tall", "matrix_exp", "slogdet",
            "solve_triangular", "pinv"]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("case", [c for c in GRADS if c[0] in GRADGRAD], ids=lambda c: c[0])
def test_gradgradcheck(case, dtype):
    name, fn, builders, shapes = case
    args = [ember.from_numpy(b(s, dtype, seed=i)).requires_grad_()
            for i, (b, s) in enumerate(zip(builders, shapes))]
    assert ember.autograd.gradgradcheck(fn, tuple(args), atol=1e-4, rtol=1e-3)


def _tHerm(x):
    return x @ x.mH + torch.eye(x.shape[-1], dtype=x.dtype) * x.shape[-1]


VS_TORCH = [
    ("det", lambda m, x: m.linalg.det(x), wellcond),
    ("inv", lambda m, x: m.linalg.inv(x), wellcond),
    ("solve", lambda m, x: m.linalg.solve(x, x[..., :, :1].exp()), wellcond),
    ("cholesky", lambda m, x: m.linalg.cholesky(x @ x.mH + 3 * m.eye(3, dtype=x.dtype)), rnd),
    ("qr", lambda m, x: m.linalg.qr(x).R.abs() + m.linalg.qr(x).Q.abs(), rnd),
    ("eigh", lambda m, x: m.linalg.eigh(x + x.mH).eigenvalues, rnd),
    ("svdvals", lambda m, x: m.linalg.svdvals(x), rnd),
    ("svd_proj", lambda m, x: (lambda u, s, vh: u @ vh * s.sum())(*m.linalg.svd(x, False)), rnd),
    ("slogdet", lambda m, x: m.linalg.slogdet(x).logabsdet, wellcond),
    ("matrix_exp", lambda m, x: m.linalg.matrix_exp(x), rnd),
]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("case", VS_TORCH, ids=lambda c: c[0])
def test_grad_vs_torch(case, dtype):
    name, f, build = case
    a = build((2, 3, 3), dtype)
    w = rnd((2, 3, 3), dtype, 7)
    xe = ember.from_numpy(a.copy()).requires_grad_()
    xt = torch.from_numpy(a.copy()).requires_grad_()
    re, rt = f(ember, xe), f(torch, xt)
    we = ember.from_numpy(w[..., :re.shape[-1]] if re.ndim == 2 else w) if re.ndim >= 2 else \
        ember.from_numpy(w[..., 0, :re.shape[-1]] if re.ndim == 2 else w[:, 0, 0])
    if re.ndim == 3:
        we = ember.from_numpy(w[..., :re.shape[-2], :re.shape[-1]])
    elif re.ndim == 2:
        we = ember.from_numpy(w[:, 0, :re.shape[-1]])
    else:
        we = ember.from_numpy(w[:, 0, 0])
    if not re.is_complex():
        we = we.real if we.is_complex() else we
    (re * we).sum().abs().backward() if re.is_complex() else (re * we).sum().backward()
    wt = torch.from_numpy(we.numpy().copy())
    (rt * wt).sum().abs().backward() if rt.is_complex() else (rt * wt).sum().backward()
    close(xe.grad, xt.grad, dtype, name)


# -------------------------------------------------------------------- parity regressions


def _both(fn, *arrays, grad=False):
    """fn(module, *tensors) on ember and torch; returns (ember_out, torch_out, e_args, t_args)."""
    ea = [ember.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    ta = [torch.from_numpy(a.copy()).requires_grad_(grad) for a in arrays]
    return fn(ember, *ea), fn(torch, *ta), ea, ta


EMPTY_FWD = [
    ("cholesky_inverse", lambda m, x: m.cholesky_inverse(x), [(0, 0)]),
    ("cholesky_solve", lambda m, b, x: m.cholesky_solve(b, x), [(0, 0), (0, 0)]),
    ("cholesky_solve_batched", lambda m, b, x: m.cholesky_solve(b, x), [(2, 0, 3), (2, 0, 0)]),
    ("ldl_factor", lambda m, x: m.linalg.ldl_factor(x).LD, [(0, 0)]),
    ("ldl_factor_pivots", lambda m, x: m.linalg.ldl_factor(x).pivots, [(0, 0)]),
    ("ldl_factor_ex", lambda m, x: m.linalg.ldl_factor_ex(x).info, [(0, 0)]),
    ("ldl_factor_batched", lambda m, x: m.linalg.ldl_factor_ex(x).LD, [(2, 0, 0)]),
    ("lu_solve_empty_B", lambda m, a, b: m.linalg.lu_solve(*m.linalg.lu_factor(a), b),
     [(3, 3), (3, 0)]),
    ("lu_solve_empty_B_right", lambda m, a, b: m.linalg.lu_solve(
        *m.linalg.lu_factor(a), b, left=False, adjoint=True), [(3, 3), (0, 3)]),
]


@pytest.mark.parametrize("case", EMPTY_FWD, ids=lambda c: c[0])
def test_empty_matrices_forward(case):
    name, fn, shapes = case
    arrays = [wellcond(s, "float64") if s[-1] == s[-2] and s[-1] else rnd(s, "float64")
              for s in shapes]
    re, rt, _, _ = _both(fn, *arrays)
    assert tuple(re.shape) == tuple(rt.shape)
    assert_close(re, rt)


EMPTY_GRAD = [
    ("linalg.cholesky", lambda m, x: m.linalg.cholesky(x), (0, 0)),
    ("linalg.cholesky_ex", lambda m, x: m.linalg.cholesky_ex(x).L, (0, 0)),
    ("cholesky", lambda m, x: m.cholesky(x), (2, 0, 0)),
    ("linalg.qr", lambda m, x: m.linalg.qr(x).R.sum() + m.linalg.qr(x).Q.sum(), (5, 0)),
    ("qr", lambda m, x: m.qr(x).Q.sum() + m.qr(x).R.sum(), (5, 0)),
    ("householder_product", lambda m, x: m.linalg.householder_product(x, x[..., 0, :0]),
     (3, 0)),
    ("householder_product_no_tau", lambda m, x: m.linalg.householder_product(
        x, x.new_zeros(0)), (4, 2)),
    ("matrix_power_0", lambda m, x: m.linalg.matrix_power(x, 0), (2, 3, 3)),
    ("matrix_power_0_alias", lambda m, x: m.matrix_power(x, 0), (3, 3)),
]


@pytest.mark.parametrize("case", EMPTY_GRAD, ids=lambda c: c[0])
def test_grad_of_degenerate_inputs(case):
    name, fn, shape = case
    a = rnd(shape, "float64")
    re, rt, (xe,), (xt,) = _both(fn, a, grad=True)
    assert re.requires_grad == rt.requires_grad
    assert tuple(re.shape) == tuple(rt.shape)
    assert_close(re.detach(), rt.detach())
    re.sum().backward()
    rt.sum().backward()
    assert xe.grad is not None and tuple(xe.grad.shape) == shape
    # torch leaves .grad None where its backward returns an undefined (zero) gradient
    assert_close(xe.grad, np.zeros(shape) if xt.grad is None else xt.grad)


def test_matrix_power_0_zero_grad_with_inf():
    x = ember.tensor([[float("inf"), 1.0], [2.0, 3.0]], requires_grad=True)
    r = ember.linalg.matrix_power(x, 0)
    assert r.requires_grad
    r.sum().backward()
    assert_close(x.grad, np.zeros((2, 2)))
    y = ember.ones(2, 2)
    assert not ember.linalg.matrix_power(y, 0).requires_grad


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_left_adjoint_vs_torch(dtype, left, adjoint):
    a = rnd((2, 4, 4), dtype, 1)
    b = rnd((2, 4, 3) if left else (2, 3, 4), dtype, 2)

    def fn(m, a, b):
        return m.linalg.lu_solve(*m.linalg.lu_factor(a), b, left=left, adjoint=adjoint)
    re, rt, _, _ = _both(fn, a, b)
    assert_close(re, rt.resolve_conj(), atol=1e-10, rtol=1e-8)
    A = np.swapaxes(a, -1, -2).conj() if adjoint else a
    X = re.numpy()
    assert_close(A @ X if left else X @ A, b, atol=1e-10, rtol=1e-8)


def test_vander_0d():
    x = ember.tensor(2.0)
    assert_close(ember.linalg.vander(x, N=2), torch.linalg.vander(torch.tensor(2.0), N=2))
    for e, t in ((lambda: ember.linalg.vander(x), lambda: torch.linalg.vander(torch.tensor(2.0))),
                 (lambda: ember.linalg.vander(x, N=1),
                  lambda: torch.linalg.vander(torch.tensor([2.0]), N=1))):
        with pytest.raises(RuntimeError) as et:
            t()
        with pytest.raises(RuntimeError, match=re.escape(str(et.value))):
            e()
    assert_close(ember.linalg.vander(x, N=2), np.array([[1.0, 2.0]]))


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("vec", [False, True])
def test_lstsq_residuals_grad_vs_torch(dtype, vec):
    a = rnd((2, 5, 3), dtype, 3)
    b = rnd((2, 5) if vec else (2, 5, 2), dtype, 4)
    w = rnd((2,) if vec else (2, 2), "float64", 5)

    def fn(m, a, b):
        r = m.linalg.lstsq(a, b, driver="gelsd")
        return r.solution, r.residuals
    (se, ree), (st, rtt), ea, ta = _both(fn, a, b, grad=True)
    assert_close(ree.detach(), rtt.detach(), atol=1e-10, rtol=1e-8)
    (ree * ember.from_numpy(w)).sum().backward()
    (rtt * torch.from_numpy(w)).sum().backward()
    for ge, gt in zip(ea, ta):
        assert_close(ge.grad, gt.grad, atol=1e-10, rtol=1e-8)
    # gradcheck through both outputs, twice differentiable
    args = (ember.from_numpy(a).requires_grad_(), ember.from_numpy(b).requires_grad_())

    def f(a, b):
        r = ember.linalg.lstsq(a, b, driver="gelsd")
        return r.solution, r.residuals
    assert ember.autograd.gradcheck(f, args, atol=1e-5, rtol=1e-3)


LU_NONSQUARE = [
    ("lu_factor", lambda m, x: m.linalg.lu_factor(x).LU),
    ("lu_factor_ex", lambda m, x: m.linalg.lu_factor_ex(x).LU),
    ("lu_L", lambda m, x: m.linalg.lu(x).L),
    ("lu_U", lambda m, x: m.linalg.lu(x).U),
    ("lu_LU", lambda m, x: m.linalg.lu(x).L.sum() + m.linalg.lu(x).U.sum()),
    ("torch_lu", lambda m, x: m.lu(x)[0]),
]


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 2), (2, 2, 4)])
@pytest.mark.parametrize("case", LU_NONSQUARE, ids=lambda c: c[0])
def test_lu_grad_nonsquare_vs_torch(case, shape, dtype):
    name, fn = case
    a = rnd(shape, dtype, 6)
    re, rt, (xe,), (xt,) = _both(fn, a, grad=True)
    w = np.asarray(rnd(tuple(re.shape), dtype, 8))
    if re.is_complex():
        (re * ember.from_numpy(w)).sum().abs().backward()
        (rt * torch.from_numpy(w)).sum().abs().backward()
    else:
        (re * ember.from_numpy(w)).sum().backward()
        (rt * torch.from_numpy(w)).sum().backward()
    assert_close(xe.grad, xt.grad, atol=1e-9, rtol=1e-7)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4)])
def test_lu_factor_grad_nonsquare_gradcheck(shape):
    x = ember.from_numpy(rnd(shape, "float64", 9)).requires_grad_()
    assert ember.autograd.gradcheck(lambda x: ember.linalg.lu_factor(x).LU, (x,),
                                    atol=1e-5, rtol=1e-3)
    assert ember.autograd.gradgradcheck(lambda x: ember.linalg.lu_factor(x).LU, (x,),
                                        atol=1e-4, rtol=1e-3)
