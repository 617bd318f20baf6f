"""Sparse tensors (COO and CSR) against torch 2.13: construction, layouts, printing,
products, reductions, elementwise ops, autograd, saving and the errors."""
import io
import warnings

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = [pytest.mark.skipif(torch is None, reason="torch oracle not installed"),
              pytest.mark.filterwarnings("ignore::UserWarning")]


def _both(fn):
    """``fn(lib)`` with ember and with torch."""
    return fn(ember), fn(torch)


def _dense(x):
    """A NumPy copy of an ember or torch tensor of any layout."""
    strided = ember.strided if isinstance(x, ember.Tensor) else torch.strided
    return np.asarray((x if x.layout is strided else x.to_dense()).detach().numpy())


def assert_same(e, t):
    """Same layout, shape, dtype, payload and values."""
    assert repr(e.layout) == repr(t.layout)
    assert tuple(e.shape) == tuple(t.shape)
    assert str(e.dtype) == str(t.dtype)
    if t.layout is torch.sparse_coo:
        assert e.is_coalesced() == t.is_coalesced()
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(e._values().detach().numpy(), t._values().detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
    elif t.layout is torch.sparse_csr:
        np.testing.assert_array_equal(e.crow_indices().numpy(), t.crow_indices().numpy())
        np.testing.assert_array_equal(e.col_indices().numpy(), t.col_indices().numpy())
    np.testing.assert_allclose(_dense(e), _dense(t), rtol=1e-6, atol=1e-6)


I = [[0, 1, 1, 0], [2, 0, 2, 2]]
V = [3., 4., 5., -1.]
D = [[0., 2., 0.], [1., 0., 3.], [0., 0., 0.]]


def _coo(lib, **kw):
    return lib.sparse_coo_tensor(lib.tensor(I), lib.tensor(V), (2, 3), **kw)


def _csr(lib):
    return lib.sparse_csr_tensor(lib.tensor([0, 1, 3]), lib.tensor([2, 0, 2]),
                                 lib.tensor([3., 4., 5.]), (2, 3))


# ------------------------------------------------------------------ construction

def test_layouts_and_properties():
    e, t = _both(_coo)
    assert_same(e, t)
    assert e.is_sparse and not e.is_sparse_csr and e.layout is ember.sparse_coo
    assert (e.sparse_dim(), e.dense_dim(), e._nnz()) == (t.sparse_dim(), t.dense_dim(), t._nnz())
    assert type(e) is ember.Tensor
    x = ember.ones(2)
    assert x.layout is ember.strided and not x.is_sparse and not x.is_sparse_csr
    assert (x.sparse_dim(), x.dense_dim()) == (0, 1)
    c, tc = _both(_csr)
    assert_same(c, tc)
    assert c.is_sparse_csr and not c.is_sparse and c.layout is ember.sparse_csr
    assert (c._nnz(), c.sparse_dim(), c.dense_dim()) == (tc._nnz(), 2, 0)


@pytest.mark.parametrize("case", ["infer", "hybrid", "dtype", "ints", "empty", "coalesced"])
def test_sparse_coo_tensor_forms(case):
    def make(lib):
        if case == "infer":
            return lib.sparse_coo_tensor(I, V)
        if case == "hybrid":
            return lib.sparse_coo_tensor(lib.tensor(I), lib.ones(4, 2), (2, 3, 2))
        if case == "dtype":
            return lib.sparse_coo_tensor(I, [1, 2, 3, 4], (2, 3), dtype=lib.float64)
        if case == "ints":
            return lib.sparse_coo_tensor(lib.tensor(I), lib.tensor([1, 2, 3, 4]), (2, 3))
        if case == "empty":
            return lib.sparse_coo_tensor(lib.zeros(2, 0, dtype=lib.int64), lib.zeros(0),
                                         (2, 3))
        return lib.sparse_coo_tensor([[0, 2]], [1., 2.], (3,), is_coalesced=True)
    e, t = _both(make)
    assert_same(e, t)
    assert repr(e) == repr(t)


def test_requires_grad_leaf():
    e, t = _both(lambda lib: _coo(lib, requires_grad=True))
    assert e.requires_grad and e.is_leaf and e.grad_fn is None
    assert repr(e) == repr(t)


def test_invariant_errors():
    for args in [([[0, 5]], [1., 2.], (3,)), ([0, 1], [1., 2.], (3,)),
                 ([[0, 1]], [1., 2., 3.], (3,)), ([[-1, 1]], [1., 2.], (3,))]:
        with pytest.raises(RuntimeError) as te:
            torch.sparse_coo_tensor(*args, check_invariants=True)
        with pytest.raises(RuntimeError) as ee:
            ember.sparse_coo_tensor(*args, check_invariants=True)
        if "size is inconsistent" in str(te.value) or "len(size)" in str(te.value):
            assert str(ee.value) == str(te.value)


# ------------------------------------------------------------------ conversions

def test_to_sparse_and_back():
    e, t = _both(lambda lib: lib.tensor(D).to_sparse())
    assert_same(e, t)
    e, t = _both(lambda lib: lib.tensor(D).to_sparse_coo())
    assert_same(e, t)
    e, t = _both(lambda lib: lib.tensor(D).to_sparse_csr())
    assert_same(e, t)
    e, t = _both(lambda lib: lib.tensor(D).to_sparse(layout=lib.sparse_csr))
    assert_same(e, t)
    e, t = _both(lambda lib: _coo(lib).to_sparse_csr().to_sparse())
    assert_same(e, t)
    e, t = _both(lambda lib: _csr(lib).to_sparse_coo().to_dense())
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    x = ember.tensor(D)
    assert x.to_dense() is x


def test_to_sparse_dim():
    def make(lib):
        x = lib.zeros(3, 2, 2)
        x[1] = 1.0
        x[2, 0, 1] = 2.0
        return x.to_sparse(1)
    e, t = _both(make)
    assert_same(e, t)
    assert (e.sparse_dim(), e.dense_dim()) == (1, 2)
    assert repr(e) == repr(t)


def test_coalesce_sums_duplicates():
    def make(lib):
        return lib.sparse_coo_tensor([[1, 0, 1, 2]], [1., 2., 3., 4.], (3,))
    e, t = _both(make)
    assert not e.is_coalesced()
    ec, tc = e.coalesce(), t.coalesce()
    assert_same(ec, tc)
    assert ec.coalesce() is ec
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    np.testing.assert_array_equal(ec.values().numpy(), tc.values().numpy())


def test_payload_accessor_errors():
    e, t = _both(_coo)
    for name in ("indices", "values"):
        with pytest.raises(RuntimeError) as te:
            getattr(t, name)()
        with pytest.raises(RuntimeError) as ee:
            getattr(e, name)()
        assert str(ee.value) == str(te.value)
    for obj, name in [(e, "crow_indices"), (_csr(ember), "indices")]:
        tobj = t if obj is e else _csr(torch)
        with pytest.raises(RuntimeError) as te:
            getattr(tobj, name)()
        with pytest.raises(RuntimeError) as ee:
            getattr(obj, name)()
        assert str(ee.value) == str(te.value)
    with pytest.raises(TypeError) as te:
        t.numpy()
    with pytest.raises(TypeError) as ee:
        e.numpy()
    assert str(ee.value) == str(te.value)


# ------------------------------------------------------------------ printing

@pytest.mark.parametrize("case", range(7))
def test_repr_matches_torch(case):
    def make(lib):
        x = lib.zeros(2, 8)
        x[0] = lib.arange(1., 9.) * 1.5
        return [_coo(lib), _csr(lib), x.to_sparse_csr(), x.double().to_sparse(),
                x.double().to_sparse_csr(), lib.ones(2, 3).requires_grad_().to_sparse(),
                lib.zeros(3, 2, dtype=lib.float64).to_sparse()][case]
    e, t = _both(make)
    assert repr(e) == repr(t)
    assert str(e) == str(t)


# ------------------------------------------------------------------ products

B = np.arange(6.0, dtype=np.float32).reshape(3, 2) - 2


@pytest.mark.parametrize("form", ["sparse.mm", "mm", "spmm", "matmul", "@", "csr@"])
def test_sparse_times_dense(form):
    def run(lib):
        s, d = _coo(lib), lib.tensor(B)
        if form == "sparse.mm":
            return lib.sparse.mm(s, d)
        if form == "mm":
            return lib.mm(s, d)
        if form == "spmm":
            return lib.spmm(s, d)
        if form == "matmul":
            return lib.matmul(s, d)
        if form == "@":
            return s @ d
        return _csr(lib) @ d
    e, t = _both(run)
    assert e.layout is ember.strided
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_dense_times_sparse_and_vector():
    e, t = _both(lambda lib: lib.tensor(B) @ _coo(lib))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    e, t = _both(lambda lib: _coo(lib) @ lib.tensor([1., 2., 3.]))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_sparse_times_sparse():
    e, t = _both(lambda lib: lib.mm(_coo(lib), _coo(lib).t()))
    assert_same(e, t)


def test_addmm():
    e, t = _both(lambda lib: lib.sparse.addmm(lib.ones(2, 2), _coo(lib), lib.tensor(B),
                                              beta=0.5, alpha=2))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    e, t = _both(lambda lib: lib.addmm(lib.ones(2, 2), _coo(lib), lib.tensor(B)))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)


def test_mm_shape_error():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError):
            lib.sparse.mm(_coo(lib), lib.ones(2, 2))


# ------------------------------------------------------------------ reductions, softmax

@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), -1])
def test_sparse_sum(dim):
    def run(lib):
        s = _coo(lib)
        return lib.sparse.sum(s) if dim is None else lib.sparse.sum(s, dim)
    e, t = _both(run)
    assert_same(e, t)


def test_sum_method_and_hybrid():
    e, t = _both(lambda lib: _coo(lib).sum())
    assert_same(e, t)
    e, t = _both(lambda lib: _coo(lib).sum(0))
    assert_same(e, t)

    def hybrid(lib):
        return lib.sparse_coo_tensor(lib.tensor(I), lib.arange(8.).reshape(4, 2), (2, 3, 2))
    for dim in [0, 2, (0, 1), (1, 2)]:
        e, t = _both(lambda lib: lib.sparse.sum(hybrid(lib), dim))
        assert_same(e, t)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sparse_softmax(fn, dim):
    e, t = _both(lambda lib: getattr(lib.sparse, fn)(_coo(lib), dim))
    assert_same(e.coalesce(), t.coalesce())


def test_softmax_hybrid_dense_dim():
    def run(lib):
        s = lib.sparse_coo_tensor(lib.tensor(I), lib.arange(8.).reshape(4, 2), (2, 3, 2))
        return lib.sparse.softmax(s, 2)
    e, t = _both(run)
    assert_same(e, t)


# ------------------------------------------------------------------ elementwise

@pytest.mark.parametrize("expr", ["s * 2", "2 * s", "s / 2", "-s", "s.abs()", "s ** 2",
                                  "s + s", "s - s.coalesce()", "s * s", "s.mul(d)",
                                  "d * s", "d + s", "s.add(s, alpha=3)", "torch.relu(s)",
                                  "s.double()", "s.clone()", "s.sqrt()", "s.t()",
                                  "s.transpose(0, 1)", "c + c", "c * 2",
                                  "torch.tensor(2.) * s", "d.sub(s, alpha=2)"])
def test_elementwise(expr):
    def run(lib):
        s, c, d = _coo(lib).abs(), _csr(lib), lib.tensor([[1., 2., 3.], [4., 5., 6.]])
        return eval(expr, {"s": s, "c": c, "d": d, "torch": lib})
    e, t = _both(run)
    if t.layout is torch.strided:
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    else:
        assert_same(e.coalesce() if e.is_sparse else e, t.coalesce() if t.is_sparse else t)


@pytest.mark.parametrize("expr", ["s + d", "s + 1", "s - 1"])
def test_add_sparse_dense_refused(expr):
    msgs = []
    for lib in (ember, torch):
        s, d = _coo(lib), lib.ones(2, 3)
        with pytest.raises(RuntimeError) as err:
            eval(expr, {"s": s, "d": d})
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("expr", ["s.exp()", "s.view(-1)", "s == s", "torch.sigmoid(s)",
                                  "c.exp()"])
def test_unsupported_ops_raise_not_implemented(expr):
    for lib in ((torch, ember) if "s" in expr else (ember,)):
        s, c = _coo(lib), _csr(lib)
        with pytest.raises(NotImplementedError) as err:
            eval(expr, {"s": s, "c": c, "torch": lib})
    msg = str(err.value)
    assert "Could not run 'aten::" in msg and ("SparseCPU" in msg or "SparseCsrCPU" in msg)
    assert ("sparse_coo" in msg) or ("sparse_csr" in msg)


def test_dense_ops_still_fast_path_after_sparse():
    _coo(ember)
    a, b = ember.ones(4, 4), ember.ones(4, 4)
    np.testing.assert_array_equal((a + b).numpy(), np.full((4, 4), 2.0, np.float32))


# ------------------------------------------------------------------ autograd

def test_sparse_mm_gradients():
    def run(lib):
        s = _coo(lib, requires_grad=True)
        d = lib.tensor(B, requires_grad=True)
        lib.sparse.mm(s, d).pow(2).sum().backward()
        return s.grad, d.grad
    (es, ed), (ts, td) = _both(run)
    assert es.is_sparse and ts.is_sparse
    assert_same(es, ts)
    np.testing.assert_allclose(ed.numpy(), td.numpy(), rtol=1e-6)


def test_gradient_to_values():
    def run(lib):
        v = lib.tensor(V, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(I), v, (2, 3))
        w = lib.tensor(B, requires_grad=True)
        out = lib.sparse.mm(s, w).sum() + (s.to_dense() * lib.arange(6.).reshape(2, 3)).sum()
        out.backward()
        return v.grad, w.grad, s.grad_fn is not None
    (ev, ew, ef), (tv, tw, tf) = _both(run)
    assert ef and tf
    np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), rtol=1e-6)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "sum"])
def test_gradient_through_reductions(fn):
    def run(lib):
        v = lib.tensor(V, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(I), v, (2, 3)).coalesce()
        if fn == "sum":
            out = lib.sparse.sum(s, 1).to_dense()
        else:
            out = getattr(lib.sparse, fn)(s, 1).to_dense()
        (out * lib.tensor([1., -2.]).reshape(2, 1 if fn != "sum" else -1)[:, 0:1].reshape(
            (2,) if fn == "sum" else (2, 1))).sum().backward()
        return v.grad
    e, t = _both(run)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_to_sparse_gradient_is_dense():
    def run(lib):
        x = lib.tensor(D, requires_grad=True)
        (x.to_sparse() * 3).to_dense().sum().backward()
        return x.grad
    e, t = _both(run)
    assert e.layout is ember.strided
    np.testing.assert_allclose(e.numpy(), t.numpy())


def test_gradients_accumulate_sparse():
    def run(lib):
        s = _coo(lib, requires_grad=True)
        d = lib.tensor(B)
        for _ in range(2):
            lib.sparse.mm(s, d).sum().backward()
        return s.grad
    e, t = _both(run)
    assert e.is_sparse
    np.testing.assert_allclose(_dense(e), _dense(t), rtol=1e-6)


# ------------------------------------------------------------------ saving

def test_save_in_ember_load_in_torch():
    buf = io.BytesIO()
    ember.save({"coo": _coo(ember), "csr": _csr(ember), "hybrid": ember.ones(2, 2).to_sparse(1),
                "layout": ember.sparse_coo}, buf)
    got = torch.load(io.BytesIO(buf.getvalue()))
    assert_same(_coo(ember), got["coo"])
    assert_same(_csr(ember), got["csr"])
    assert got["hybrid"].sparse_dim() == 1 and got["layout"] is torch.sparse_coo


def test_save_in_torch_load_in_ember():
    buf = io.BytesIO()
    torch.save({"coo": _coo(torch).coalesce(), "csr": _csr(torch)}, buf)
    for weights_only in (True, False):
        got = ember.load(io.BytesIO(buf.getvalue()), weights_only=weights_only)
        assert_same(got["coo"], _coo(torch).coalesce())
        assert_same(got["csr"], _csr(torch))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert got["coo"].is_coalesced()


# ------------------------------------------------------------------ in place, indexing, cat

@pytest.mark.parametrize("expr", ["d.add_(s)", "d.sub_(s, alpha=2)", "s.clone().add_(s)",
                                  "s.clone().mul_(2)", "s.clone().div_(2)", "s.clone().zero_()",
                                  "torch.zeros_like(s)", "s[1]", "s[1, 2]", "s.select(1, 2)",
                                  "torch.cat([s, s])", "torch.cat([s, s], 1)",
                                  "(d * 3).sparse_mask(s)", "(d * 3).sparse_mask(c)"])
def test_inplace_index_cat(expr):
    def run(lib):
        s, d = _coo(lib).coalesce(), lib.arange(6.).reshape(2, 3)
        return eval(expr, {"s": s, "d": d, "c": _csr(lib), "torch": lib})
    e, t = _both(run)
    if t.layout is torch.strided:
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    else:
        assert_same(e.coalesce() if e.is_sparse else e, t.coalesce() if t.is_sparse else t)


def test_no_strided_data():
    for lib in (torch, ember):
        s = _coo(lib)
        with pytest.raises(RuntimeError, match="doesn't have storage"):
            s.tolist()
        with pytest.raises(RuntimeError, match="doesn't have storage"):
            s.data_ptr()
        with pytest.raises(NotImplementedError, match="Cannot access storage"):
            s.untyped_storage()
        assert lib.sparse_coo_tensor([[0]], [2.5], (1,)).item() == 2.5
    with pytest.raises(TypeError, match="Sparse layout"):
        np.asarray(_coo(ember))


def test_sparse_self_inplace_with_grad_refused():
    s = _coo(ember, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place"):
        s.mul_(2)
    with pytest.raises(NotImplementedError, match="mul_"):
        ember.ones(2, 3).mul_(_coo(ember))


# ------------------------------------------------------------------ embeddings, optimizers

def test_embedding_sparse_gradient():
    def run(lib):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(5, 3, sparse=True)
        emb(lib.tensor([[0, 2], [2, 4]])).pow(2).sum().backward()
        return emb.weight.grad
    e, t = _both(run)
    assert e.is_sparse
    assert_same(e, t)


def test_embedding_dense_gradient_unchanged():
    emb = ember.nn.Embedding(5, 3)
    emb(ember.tensor([0, 2])).sum().backward()
    assert not emb.weight.grad.is_sparse


@pytest.mark.parametrize("opt", ["SparseAdam", "SGD"])
def test_optimizers_step_with_sparse_gradients(opt):
    def run(lib):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(5, 3, sparse=True)
        kw = {"maximize": True} if opt == "SparseAdam" else {}
        o = getattr(lib.optim, opt)(emb.parameters(), lr=0.1, **kw)
        for _ in range(3):
            o.zero_grad()
            emb(lib.tensor([[0, 2], [2, 4]])).pow(2).sum().backward()
            o.step()
        return emb.weight
    e, t = _both(run)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_graph_convolution_training_step():
    """A two-layer GCN step on a sparse normalized adjacency, as the examples write it."""
    def run(lib):
        lib.manual_seed(0)
        n = 6
        edges = lib.tensor([[0, 1, 1, 2, 3, 4, 5, 0, 2, 3], [1, 0, 2, 1, 4, 3, 0, 5, 3, 2]])
        adj = lib.sparse_coo_tensor(edges, lib.ones(edges.shape[1]), (n, n))
        adj = (adj + lib.eye(n).to_sparse()).coalesce()
        deg = lib.sparse.sum(adj, 1).to_dense()
        norm = adj * (deg.pow(-0.5)[:, None] * deg.pow(-0.5)[None, :])
        x = lib.randn(n, 4)
        w1, w2 = lib.nn.Linear(4, 8), lib.nn.Linear(8, 2)
        h = lib.relu(lib.sparse.mm(norm, w1(x)))
        out = lib.sparse.mm(norm, w2(h))
        loss = lib.nn.functional.cross_entropy(out, lib.tensor([0, 1, 0, 1, 0, 1]))
        loss.backward()
        return loss.detach(), w1.weight.grad, w2.bias.grad
    for a, b in zip(*_both(run)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def test_gradcheck_through_values():
    def f(v):
        s = ember.sparse_coo_tensor([[0, 1, 2, 0], [1, 2, 0, 1]], v, (3, 3))
        w = ember.arange(6.0, dtype=ember.float64).reshape(3, 2)
        return ember.sparse.mm(s, w) + ember.sparse.softmax(s, 1).to_dense()[:, :2]
    v = ember.tensor([1., 2., 3., -1.], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(f, (v,))


def test_namespace_and_copies():
    import copy
    assert set(ember.sparse.__all__) <= set(dir(ember.sparse))
    with ember.sparse.check_sparse_tensor_invariants():
        assert ember.sparse.check_sparse_tensor_invariants.is_enabled()
    assert hasattr(torch.Tensor, "nnz") == hasattr(ember.Tensor, "nnz")
    s = _coo(ember)
    c = copy.deepcopy(s)
    assert c.is_sparse and c is not s
    assert_same(c, _coo(torch))
    e, t = _both(lambda lib: lib.sparse.sum(_coo(lib), 1, dtype=lib.float64))
    assert_same(e, t)
    with ember.profiler.profile() as prof:
        ember.sparse.mm(s, ember.ones(3, 2))
    assert "aten::index_add" in {ev.name for ev in prof.events()}


def test_routing_composes_with_meta_device():
    s = _coo(ember)
    m = ember.ones(2, 3, device="meta")
    assert (m + m).is_meta and (m + m).shape == (2, 3)
    np.testing.assert_allclose(ember.sparse.mm(s, ember.ones(3, 1)).numpy(), [[2.], [9.]])
    with pytest.raises(NotImplementedError, match="sparse_coo"):
        s.exp()
