"""index_add / scatter / scatter_reduce / embedding_bag on their fast paths (whole-row
scatters, the compiled row adder, the flat ``ufunc.at``) against torch."""
import numpy as np
import pytest

import ember
from ember._kernels import compiled

torch = pytest.importorskip("torch")


@pytest.fixture(params=["compiled", "numpy"])
def path(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setitem(compiled._state, "enabled", False)
    return request.param


@pytest.mark.parametrize("V,n,D,dim,dtype", [
    (512, 512, 64, 0, "float32"), (100, 20000, 16, 0, "float32"), (50, 300, 64, 1, "float64"),
    (40, 1000, 8, 0, "int64"), (7, 1000, 3, 0, "float32"), (30, 200, 5, 1, "complex64")])
def test_index_add_matches_torch(V, n, D, dim, dtype, path):
    rng = np.random.default_rng(V + n)
    shape, sshape = ((V, D), (n, D)) if dim == 0 else ((D, V), (D, n))
    a = (rng.standard_normal(shape) * 10).astype(dtype)
    s = (rng.standard_normal(sshape) * 10).astype(dtype)
    i = rng.integers(0, V, n)
    got = ember.from_numpy(a.copy()).index_add(dim, ember.from_numpy(i), ember.from_numpy(s),
                                                alpha=2).numpy()
    want = torch.from_numpy(a.copy()).index_add(dim, torch.from_numpy(i), torch.from_numpy(s),
                                                 alpha=2).numpy()
    if compiled.module("scatter") is not None and dim == 0 and n * D >= 4096:   # torch's order
        np.testing.assert_array_equal(got, want)
    # (runs of many repeats are summed first on NumPy's path: float rounding of the order)
    scale = np.abs(s).max() * 2 * np.sqrt(n / V + 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale * max(n // V, 1))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce_matches_torch(reduce, include_self, dim):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 7)).astype(np.float32)
    src = rng.standard_normal((9, 8)).astype(np.float32)
    idx = rng.integers(0, 6 if dim == 0 else 7, (5, 4))
    got = ember.from_numpy(a.copy()).scatter_reduce(dim, ember.from_numpy(idx), ember.from_numpy(src),
                                                    reduce, include_self=include_self).numpy()
    want = torch.from_numpy(a.copy()).scatter_reduce(dim, torch.from_numpy(idx), torch.from_numpy(src),
                                                     reduce, include_self=include_self).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_scatter_add_and_reduce_kinds_match_torch():
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 5, (3, 4, 6))
    src = rng.standard_normal((3, 4, 6))
    e = ember.zeros(3, 5, 6, dtype=ember.float64)
    t = torch.zeros(3, 5, 6, dtype=torch.float64)
    got = [e.scatter_add(1, ember.from_numpy(idx), ember.from_numpy(src)),
           e.scatter(1, ember.from_numpy(idx), ember.from_numpy(src), reduce="add"),
           (e + 2).scatter(1, ember.from_numpy(idx), ember.from_numpy(src), reduce="multiply"),
           e.scatter(1, ember.from_numpy(idx), 1.5, reduce="add")]
    want = [t.scatter_add(1, torch.from_numpy(idx), torch.from_numpy(src)),
            t.scatter(1, torch.from_numpy(idx), torch.from_numpy(src), reduce="add"),
            (t + 2).scatter(1, torch.from_numpy(idx), torch.from_numpy(src), reduce="multiply"),
            t.scatter(1, torch.from_numpy(idx), 1.5, reduce="add")]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_offsets_match_torch(mode, path):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((300, 32)).astype(np.float32)
    idx = rng.integers(0, 300, 2000)
    off = np.sort(rng.choice(np.arange(1, 2000), 150, replace=False))
    off = np.concatenate([[0], off])
    got = ember.nn.functional.embedding_bag(ember.from_numpy(idx), ember.from_numpy(w),
                                            ember.from_numpy(off), mode=mode).numpy()
    want = torch.nn.functional.embedding_bag(torch.from_numpy(idx), torch.from_numpy(w),
                                             torch.from_numpy(off), mode=mode).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype,lo,hi,n", [("int64", 0, 512, 100000), ("int32", -50, 50, 12000),
                                           ("int8", -100, 100, 5000), ("uint8", 3, 200, 3000),
                                           ("int64", 0, 10 ** 9, 5000), ("int16", 7, 8, 2000)])
def test_unique_by_counting_matches_torch(dtype, lo, hi, n):
    x = np.random.default_rng(n).integers(lo, hi, n).astype(dtype)
    got = ember.from_numpy(x).unique(return_inverse=True, return_counts=True)
    want = torch.from_numpy(x).unique(return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert str(g.dtype) == str(w.dtype)
        np.testing.assert_array_equal(g.numpy(), w.numpy())
