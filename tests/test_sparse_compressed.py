"""The compressed sparse layouts CSC, BSR and BSC (and CSR beside them) against torch 2.13:
construction, conversions, indices, printing, products with autograd, saving, errors."""
import io

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = [pytest.mark.skipif(torch is None, reason="torch oracle not installed"),
              pytest.mark.filterwarnings("ignore::UserWarning")]

X = [[0., 1., 0., 2.], [3., 0., 0., 0.], [0., 0., 0., 0.], [0., 4., 5., 0.]]
LAYOUTS = {"csr": lambda x: x.to_sparse_csr(), "csc": lambda x: x.to_sparse_csc(),
           "bsr": lambda x: x.to_sparse_bsr((2, 2)), "bsc": lambda x: x.to_sparse_bsc((2, 2)),
           "bsr12": lambda x: x.to_sparse_bsr((1, 2)), "bsc21": lambda x: x.to_sparse_bsc([2, 1])}
INDEX_NAMES = {"sparse_csr": ("crow_indices", "col_indices"),
               "sparse_bsr": ("crow_indices", "col_indices"),
               "sparse_csc": ("ccol_indices", "row_indices"),
               "sparse_bsc": ("ccol_indices", "row_indices")}


def _both(fn):
    return fn(ember), fn(torch)


def _np(x):
    return np.asarray(x.detach().numpy())


def assert_same(e, t):
    """Same layout, shape, dtype, index arrays, values and dense contents."""
    assert repr(e.layout) == repr(t.layout)
    assert tuple(e.shape) == tuple(t.shape) and str(e.dtype) == str(t.dtype)
    name = repr(t.layout)[6:]
    if name in INDEX_NAMES:
        for idx in INDEX_NAMES[name]:
            np.testing.assert_array_equal(_np(getattr(e, idx)()), _np(getattr(t, idx)()))
        np.testing.assert_array_equal(_np(e.values()), _np(t.values()))
        assert e._nnz() == t._nnz()
    elif name == "sparse_coo":
        np.testing.assert_array_equal(_np(e._indices()), _np(t._indices()))
        np.testing.assert_array_equal(_np(e._values()), _np(t._values()))
        assert e.is_coalesced() == t.is_coalesced()
    dense = (lambda x: x.to_dense()) if name != "strided" else (lambda x: x)
    np.testing.assert_allclose(_np(dense(e)), _np(dense(t)), rtol=1e-6)


def outcome(fn):
    res = []
    for m in (ember, torch):
        try:
            res.append(("ok", fn(m)))
        except Exception as ex:     # noqa: BLE001 - the class is compared
            res.append(("raise", type(ex).__name__, str(ex)))
    return res


def same_outcome(fn):
    (e, t) = outcome(fn)
    assert e[0] == t[0], (e, t)
    if e[0] == "raise":
        assert e[1] == t[1], (e, t)
    else:
        assert_same(e[1], t[1])


# ------------------------------------------------------------------ construction

@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_from_dense_payload_properties_and_repr(layout):
    e, t = _both(lambda m: LAYOUTS[layout](m.tensor(X)))
    assert_same(e, t)
    assert repr(e) == repr(t)
    for attr in ("is_sparse", "is_sparse_csr", "ndim"):
        assert getattr(e, attr) == getattr(t, attr)
    assert (e.sparse_dim(), e.dense_dim()) == (t.sparse_dim(), t.dense_dim())


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("target", ["to_sparse", "to_sparse_csr", "to_sparse_csc",
                                    "bsr22", "bsc22", "bsr11", "to_dense"])
def test_conversions(layout, target):
    conv = {"bsr22": lambda s: s.to_sparse_bsr((2, 2)), "bsc22": lambda s: s.to_sparse_bsc(2),
            "bsr11": lambda s: s.to_sparse_bsr((1, 1))}.get(
        target, lambda s: getattr(s, target)())
    same_outcome(lambda m: conv(LAYOUTS[layout](m.tensor(X))))


@pytest.mark.parametrize("layout", ["sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"])
def test_to_sparse_with_layout(layout):
    block = (1, 2) if layout in ("sparse_bsr", "sparse_bsc") else None
    same_outcome(lambda m: m.tensor(X).to_sparse(layout=getattr(m, layout), blocksize=block))
    same_outcome(lambda m: m.tensor(X).to_sparse().to_sparse(layout=getattr(m, layout),
                                                            blocksize=block))


def test_constructors():
    same_outcome(lambda m: m.sparse_csc_tensor(m.tensor([0, 1, 1, 2]), m.tensor([1, 0]),
                                               m.tensor([1., 2.])))
    same_outcome(lambda m: m.sparse_csc_tensor([0, 1, 1, 2], [1, 0], [1., 2.], (3, 3),
                                               dtype=m.float64))
    same_outcome(lambda m: m.sparse_bsr_tensor([0, 1, 1], [1], m.ones(1, 2, 2)))
    same_outcome(lambda m: m.sparse_bsr_tensor([0, 1, 1], [1], m.ones(1, 2, 2), (4, 6)))
    same_outcome(lambda m: m.sparse_bsc_tensor([0, 1, 1], [1], m.arange(6.).reshape(1, 2, 3)))
    same_outcome(lambda m: m.sparse_compressed_tensor([0, 1, 1], [1], m.ones(1, 2, 2),
                                                      layout=m.sparse_bsc))
    same_outcome(lambda m: m.sparse_compressed_tensor([0, 1, 2], [1, 0], m.ones(2),
                                                      layout=m.sparse_csr))
    same_outcome(lambda m: m.sparse_compressed_tensor([0, 2, 2], [1, 0], m.ones(2),
                                                      layout=m.sparse_csc))


@pytest.mark.parametrize("call", [
    lambda m: m.sparse_compressed_tensor([0, 1, 1], [1], m.ones(1, 2, 2)),
    lambda m: m.sparse_bsr_tensor([0, 1], [0], m.ones(1, 2)),
    lambda m: m.tensor(X)[:3].to_sparse_bsr((2, 2)),
    lambda m: m.tensor(X).to_sparse(layout=m.sparse_bsr),
    lambda m: m.tensor(X).to_sparse_bsr((1, 2)).to_sparse_bsr((1, 1)),
    lambda m: m.tensor(X).to_sparse_bsr(2).to_sparse_csr(),
    lambda m: m.tensor(X).to_sparse_bsc(2).to_sparse_csc(),
    lambda m: m.tensor(X).to_sparse_csc().crow_indices(),
    lambda m: m.tensor(X).to_sparse_csc().col_indices(),
    lambda m: m.tensor(X).to_sparse_bsr(2).ccol_indices(),
    lambda m: m.tensor(X).to_sparse_csr().row_indices(),
    lambda m: m.tensor(X).to_sparse_bsc(2) @ m.ones(4, 2),
    lambda m: m.ones(2, 4) @ m.tensor(X).to_sparse_bsr(2),
    lambda m: m.tensor(X).to_sparse_bsc(2) @ m.ones(4),
], ids=lambda f: "")
def test_errors_as_torch(call):
    (e, t) = outcome(call)
    assert e[0] == t[0] == "raise", (e, t)
    assert e[1] == t[1], (e, t)


# ------------------------------------------------------------------ products, autograd

DENSE_OPS = {
    "matmul": lambda s, d: s @ d, "mm": lambda s, d: ember_or_torch(d).mm(s, d),
    "sparse.mm": lambda s, d: ember_or_torch(d).sparse.mm(s, d),
    "mv": lambda s, d: s @ d[:, 0], "dense_at_sparse": lambda s, d: d.t() @ s,
    "addmm": lambda s, d: ember_or_torch(d).addmm(d, s, d, beta=0.5, alpha=2.0),
    "t": lambda s, d: s.t().to_dense(), "mul_scalar": lambda s, d: (s * 3).to_dense(),
    "neg": lambda s, d: (-s).to_dense(), "sum": lambda s, d: s.sum(),
}


def ember_or_torch(x):
    return ember if isinstance(x, ember.Tensor) else torch


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", list(DENSE_OPS))
def test_products_with_dense(layout, op):
    def run(m):
        s = LAYOUTS[layout](m.tensor(X))
        d = m.arange(8.).reshape(4, 2)
        return DENSE_OPS[op](s, d)
    (e, t) = outcome(run)
    assert e[0] == t[0], (e, t)
    if e[0] == "ok":
        assert repr(e[1].layout) == repr(t[1].layout)
        np.testing.assert_allclose(_np(e[1]), _np(t[1]), rtol=1e-6)
    else:
        assert e[1] == t[1]


def _grads_of_matmul(m, layout):
    """Gradients of a loss of ``s @ d`` to ``s``'s values and to ``d``."""
    s0 = LAYOUTS[layout](m.tensor(X))
    v = s0.values().detach().requires_grad_(True)
    rows = s0.layout in (m.sparse_csr, m.sparse_bsr)
    idx = (s0.crow_indices(), s0.col_indices()) if rows else (s0.ccol_indices(),
                                                              s0.row_indices())
    s = m.sparse_compressed_tensor(*idx, v, (4, 4), layout=s0.layout)
    d = m.arange(8.).reshape(4, 2).requires_grad_(True)
    ((s @ d) * m.tensor([1., -2.])).sum().backward()
    return v.grad, d.grad


@pytest.mark.parametrize("layout", ["csr", "csc"])
def test_matmul_gradients_to_dense_and_values(layout):
    (ve, de), (vt, dt) = _grads_of_matmul(ember, layout), _grads_of_matmul(torch, layout)
    np.testing.assert_allclose(_np(de), _np(dt), rtol=1e-6)
    np.testing.assert_allclose(_np(ve), _np(vt), rtol=1e-6)


def test_bsr_matmul_gradients_match_the_dense_product():
    """torch has no CPU backward for BSR @ dense (BSC @ dense); ember's gradients equal the
    dense product's, read at the stored blocks."""
    with pytest.raises(RuntimeError):
        _grads_of_matmul(torch, "bsr")
    ve, de = _grads_of_matmul(ember, "bsr")
    x = torch.tensor(X, requires_grad=True)
    d = torch.arange(8.).reshape(4, 2).requires_grad_(True)
    ((x @ d) * torch.tensor([1., -2.])).sum().backward()
    np.testing.assert_allclose(_np(de), _np(d.grad), rtol=1e-6)
    s = torch.tensor(X).to_sparse_bsr((2, 2))
    rows = np.repeat(np.arange(2), np.diff(s.crow_indices().numpy()))
    want = [x.grad[2 * r:2 * r + 2, 2 * c:2 * c + 2].numpy() for r, c in
            zip(rows, s.col_indices().numpy())]
    np.testing.assert_allclose(_np(ve), np.stack(want), rtol=1e-6)


def test_to_dense_gradient_through_dense_input():
    def run(m):
        x = m.tensor(X, requires_grad=True)
        (x.to_sparse_csc().to_dense() * m.arange(16.).reshape(4, 4)).sum().backward()
        return x.grad
    np.testing.assert_allclose(_np(run(ember)), _np(run(torch)))


# ------------------------------------------------------------------ saving

@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_save_load_in_torch_format(layout):
    e = LAYOUTS[layout](ember.tensor(X))
    buf = io.BytesIO()
    ember.save({"s": e}, buf)
    buf.seek(0)
    got = torch.load(buf, weights_only=False)["s"]
    assert_same(e, got)
    buf = io.BytesIO()
    torch.save({"s": LAYOUTS[layout](torch.tensor(X))}, buf)
    buf.seek(0)
    assert_same(ember.load(buf, weights_only=False)["s"], LAYOUTS[layout](torch.tensor(X)))


@pytest.mark.filterwarnings("default::UserWarning")
def test_first_compressed_tensor_warns_beta_once():
    import ember._ops.sparse as S
    import warnings
    S._beta_warned[0] = False
    with pytest.warns(UserWarning, match="Sparse BSC tensor support is in beta state"):
        ember.eye(2).to_sparse_bsc(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.eye(2).to_sparse_csr()


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("side", ["sparse_first", "dense_first", "alpha"])
def test_add_with_dense(layout, side):
    def run(m):
        s, d = LAYOUTS[layout](m.tensor(X)), m.arange(16.).reshape(4, 4)
        return {"sparse_first": lambda: s + d, "dense_first": lambda: d + s,
                "alpha": lambda: s.add(d, alpha=2)}[side]()
    same_outcome(run)
