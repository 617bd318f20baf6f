"""Views share memory exactly like torch's: metadata (data_ptr, strides, storage offset),
writes in both directions, version counters, storages, as_strided bounds, and autograd
through in-place writes on views (setitem, views of views, multi-output views).
Every check runs the same code on ember and on torch and compares."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="torch is the oracle")


def both(shape=(3, 4), dtype="float32", seed=0):
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    if seed:
        a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def npy(t):
    if isinstance(t, ember.Tensor):
        return t.detach()._data
    return t.detach().numpy()


def assert_same(e, t, msg=""):
    assert tuple(e.shape) == tuple(t.shape), msg
    assert str(e.dtype) == str(t.dtype), msg
    np.testing.assert_allclose(npy(e).astype(np.complex128), npy(t).astype(np.complex128),
                               rtol=1e-6, atol=1e-6, err_msg=msg)


def _first(r):
    return r[1] if isinstance(r, (tuple, list)) else r


# views that must share memory, written once for both libraries
VIEWS = {
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(1, 2),
    "select_neg": lambda x: x.select(0, -1),
    "int_index": lambda x: x[1],
    "scalar_index": lambda x: x[1, 2],
    "slice": lambda x: x[1:, ::2],
    "none_ellipsis": lambda x: x[None, ..., 1],
    "unfold": lambda x: x.unfold(1, 2, 1),
    "unfold_step": lambda x: x.unfold(0, 2, 2),
    "diagonal": lambda x: x.diagonal(),
    "diagonal_off": lambda x: x.diagonal(1),
    "diagonal_neg": lambda x: x.diagonal(-1),
    "diagonal_empty": lambda x: x.diagonal(7),
    "unbind": lambda x: x.unbind(1),
    "split": lambda x: x.split(2, 1),
    "split_sizes": lambda x: x.split([1, 2], 0),
    "chunk": lambda x: x.chunk(2, 1),
    "tensor_split": lambda x: x.tensor_split([1, 3], 1),
    "movedim": lambda x: x.movedim(0, 1),
    "moveaxis": lambda x: x.moveaxis(1, 0),
    "swapaxes": lambda x: x.swapaxes(0, 1),
    "swapdims": lambda x: x.swapdims(1, 0),
    "t": lambda x: x.t(),
    "flatten": lambda x: x.flatten(),
    "unflatten": lambda x: x.unflatten(1, (2, 2)),
    "ravel": lambda x: x.ravel(),
    "view_as": lambda x: x.view_as(x.reshape(2, 6)),
    "reshape_as": lambda x: x.reshape_as(x.reshape(6, 2)),
    "as_strided": lambda x: x.as_strided((2, 2), (1, 2), 1),
    "as_strided_overlap": lambda x: x.as_strided((3, 3), (1, 1)),
    "view_dtype": lambda x: x.view(x.dtype),
    "squeeze_tuple": lambda x: x.unsqueeze(0).unsqueeze(2).squeeze((0, 2)),
    "atleast_3d": lambda x: _atleast(x),
    "meshgrid": lambda x: _meshgrid(x),
    "nested": lambda x: x[1:].narrow(1, 1, 3).t()[1:],
    "transpose_narrow": lambda x: x.t().narrow(0, 1, 2),
    "split_of_t": lambda x: x.t().split(1, 1),
}


def _atleast(x):
    lib = ember if isinstance(x, ember.Tensor) else torch
    return lib.atleast_3d(x)


def _meshgrid(x):
    lib = ember if isinstance(x, ember.Tensor) else torch
    return lib.meshgrid(x[0], x[1], indexing="ij")


def _storage_offset(v):
    return v.storage_offset()


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_metadata_matches_torch(name):
    xe, xt = both()
    fn = VIEWS[name]
    ve, vt = _first(fn(xe)), _first(fn(xt))
    assert_same(ve, vt, name)
    if vt.numel():                             # core reports contiguous strides when empty
        assert ve.stride() == vt.stride(), name
    assert ve.storage_offset() == vt.storage_offset(), name
    if vt.numel():                             # torch's data_ptr() of an empty tensor is 0
        assert ve.data_ptr() - xe.data_ptr() == vt.data_ptr() - xt.data_ptr(), name
    assert ve.is_contiguous() == vt.is_contiguous(), name
    if name != "view_dtype":                   # torch drops view tracking for view(dtype)
        assert (ve._base is xe) == (vt._base is xt), name
    assert ve.untyped_storage().data_ptr() == xe.untyped_storage().data_ptr()


WRITABLE = [n for n in VIEWS if n not in ("diagonal_empty", "as_strided_overlap", "meshgrid",
                                          "unfold")]        # (overlapping windows)


@pytest.mark.parametrize("name", WRITABLE)
def test_write_through_view_and_base(name):
    xe, xt = both()
    fn = VIEWS[name]
    ve, vt = _first(fn(xe)), _first(fn(xt))
    ve.mul_(-2)
    vt.mul_(-2)
    assert_same(xe, xt, name)                  # view -> base
    xe.add_(100)
    xt.add_(100)
    assert_same(ve, vt, name)                  # base -> view
    assert xe._version == xt._version == ve._version == vt._version


def test_noncontiguous_base_views():
    a = np.arange(24.).reshape(4, 6)
    xe, xt = ember.from_numpy(a[:, ::2]), torch.from_numpy(a[:, ::2])
    for name in ("narrow", "select", "diagonal", "unfold", "t", "movedim", "as_strided"):
        ve, vt = _first(VIEWS[name](xe)), _first(VIEWS[name](xt))
        assert_same(ve, vt, name)
        assert ve.stride() == vt.stride(), name
        assert ve.storage_offset() == vt.storage_offset(), name
    assert xe.untyped_storage().nbytes() == xt.untyped_storage().nbytes()


def test_versions_shared_between_base_and_views():
    for lib in (ember, torch):
        x = lib.zeros(3, 4)
        v = x[1]
        w = v.narrow(0, 1, 2)
        assert x._version == v._version == w._version == 0
        w.add_(1)
        assert x._version == v._version == w._version == 1
        x.mul_(2)
        assert w._version == 2
        parts = x.unbind(0)
        parts[0].fill_(3)
        assert x._version == 3
    xe, xt = both()
    xe[0, 1] = 5.
    xt[0, 1] = 5.
    xe[[0, 1]] = 1.
    xt[[0, 1]] = 1.
    assert xe._version == xt._version


def test_reshape_view_or_copy_like_torch():
    xe, xt = both((4, 6))
    for f in (lambda x: x.t().flatten(), lambda x: x[:, ::2].ravel(),
              lambda x: x.t().reshape(24), lambda x: x[:, 1:].flatten(0, 1),
              lambda x: x.unflatten(0, (2, 2))):
        ve, vt = f(xe), f(xt)
        assert_same(ve, vt)
        assert (ve._base is xe) == (vt._base is xt)
    assert xe.flatten(1, 1) is xe and xt.flatten(1, 1) is xt


def test_contiguous_and_is_contiguous():
    xe, xt = both((3, 4))
    assert xe.contiguous() is xe and xt.contiguous() is xt
    for f in (lambda x: x.t(), lambda x: x[:, 1], lambda x: x[:, :1], lambda x: x[1:],
              lambda x: x.t()[:1], lambda x: x[:1].t(), lambda x: x.unsqueeze(1),
              lambda x: x[:0].t(), lambda x: x.diagonal(), lambda x: x.expand(2, 3, 4),
              lambda x: x.unfold(1, 2, 2)):
        ve, vt = f(xe), f(xt)
        assert ve.is_contiguous() == vt.is_contiguous()
        ce, ct = ve.contiguous(), vt.contiguous()
        assert (ce is ve) == (ct is vt)
        assert ce.is_contiguous() and (ce.stride() == ct.stride() or not ct.numel())
        assert_same(ce, ct)


def test_expand_family_read_only_views():
    xe, xt = both((3, 1))
    for f in (lambda x: x.expand(2, 3, 4), lambda x: x.expand_as(x.new_zeros(3, 5))):
        ve, vt = f(xe), f(xt)
        assert_same(ve, vt)
        assert ve.stride() == vt.stride()
        assert ve.data_ptr() == xe.data_ptr()
    be = ember.broadcast_to(xe, (2, 3, 4))
    bt = torch.broadcast_to(xt, (2, 3, 4))
    assert be.stride() == bt.stride() and be._base is xe
    te = ember.broadcast_tensors(xe, ember.zeros(4))
    tt = torch.broadcast_tensors(xt, torch.zeros(4))
    for a, b in zip(te, tt):
        assert_same(a, b)
        assert a.stride() == b.stride()


def test_view_dtype_shares_bytes():
    xe, xt = both((2, 4))
    for d in ("int32", "int16", "float64", "uint8", "complex64"):
        ve, vt = xe.view(getattr(ember, d)), xt.view(getattr(torch, d))
        assert tuple(ve.shape) == tuple(vt.shape) and ve.stride() == vt.stride()
        assert np.array_equal(npy(ve), npy(vt)) or np.allclose(npy(ve), npy(vt), equal_nan=True)
        assert ve.data_ptr() == xe.data_ptr()
    ve = xe.view(ember.int32)
    ve[0, 0] = 0
    assert npy(xe)[0, 0] == 0


def test_getitem_int_returns_zero_dim_view():
    for lib in (ember, torch):
        x = lib.zeros(3)
        y = x[1]
        y.add_(5)
        assert x[1].item() == 5.0 and y._base is x


# ------------------------------------------------------------------ as_strided

def test_as_strided_offset_is_relative_to_storage():
    xe, xt = both((3, 4))
    for f in (lambda x: x[1:].as_strided((2,), (1,)),                 # keeps the view's offset
              lambda x: x[1:].as_strided((2,), (1,), 0),              # reaches before the view
              lambda x: x[2:, 1:].as_strided((2, 2), (4, 1), 1),
              lambda x: x.t().as_strided((3, 2), (1, 3)),
              lambda x: x.as_strided((2, 3), (0, 1), 9)):
        ve, vt = f(xe), f(xt)
        assert_same(ve, vt)
        assert ve.storage_offset() == vt.storage_offset() and ve.stride() == vt.stride()
    ve = xe[1:].as_strided((2,), (1,), 0)
    ve.fill_(-1)
    assert npy(xe)[0, :2].tolist() == [-1, -1]


@pytest.mark.parametrize("args", [((2, 2), (1, 1), 11), ((4, 4), (4, 1)), ((13,), (1,)),
                                  ((2, 2), (11, 1), 0), ((1,), (1,), 12)])
def test_as_strided_bounds_checked(args):
    xe, xt = both((3, 4))
    with pytest.raises(RuntimeError) as te:
        xt.as_strided(*args)
    with pytest.raises(RuntimeError, match=r"out of bounds for storage of size 48") as ee:
        xe.as_strided(*args)
    assert str(ee.value) == str(te.value).split("\n")[0]
    with pytest.raises(RuntimeError):
        xe[1:].as_strided((2, 2), (4, 1), 8)   # a view may not reach past the root's storage


def test_as_strided_within_storage_of_view():
    xe, xt = both((3, 4))
    ve, vt = xe[2:].as_strided((3, 4), (4, 1), 0), xt[2:].as_strided((3, 4), (4, 1), 0)
    assert_same(ve, vt)


# ------------------------------------------------------------------ storages

def test_untyped_storage_shared_by_views():
    xe, xt = both((3, 4))
    se, st = xe.untyped_storage(), xt.untyped_storage()
    assert se.nbytes() == st.nbytes() == 48 and len(se) == 48 and se.element_size() == 1
    assert xe[1:].untyped_storage().data_ptr() == se.data_ptr() == xe.data_ptr()
    assert xe.t().untyped_storage() is se
    assert se.tolist() == st.tolist()
    assert se[4] == st[4]
    se[0:8].fill_(0)
    st[0:8].fill_(0)
    assert_same(xe, xt)
    c = se.clone()
    c.fill_(1)
    assert npy(xe)[0, 2] == 2


def test_typed_storage_elements():
    xe, xt = both((3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        se, st = xe[1:].storage(), xt[1:].storage()
        assert se.size() == st.size() == 12 and len(se) == 12
        assert str(se.dtype) == str(st.dtype)
        assert se[5] == st[5] and se.tolist() == st.tolist()
        assert se.data_ptr() == xe.data_ptr() and se.nbytes() == 48 and se.element_size() == 4
        se[0] = 42
        st[0] = 42
        assert_same(xe, xt)
        ie = xe.view(ember.int16).storage()
        it = xt.view(torch.int16).storage()
        assert ie.size() == it.size() and ie.tolist() == it.tolist()
        with pytest.raises(RuntimeError, match="slices are only supported"):
            se[1:3]


# ------------------------------------------------------------------ joining helpers

@pytest.mark.parametrize("dts", [("float32", "float64"), ("int64", "float32"), ("bool", "uint8"),
                                 ("int8", "uint8"), ("int32", "complex64"), ("bool", "int16")])
def test_cat_stack_promotion(dts):
    a = [np.ones((2, 2), d) for d in dts]
    for fn in ("cat", "stack", "hstack", "vstack", "block_diag"):
        if fn == "block_diag":
            re_, rt = ember.block_diag(*map(ember.from_numpy, a)), \
                torch.block_diag(*map(torch.from_numpy, a))
        else:
            re_ = getattr(ember, fn)([ember.from_numpy(x) for x in a])
            rt = getattr(torch, fn)([torch.from_numpy(x) for x in a])
        assert_same(re_, rt, fn)
    legacy = [np.zeros((0,), "float64"), np.ones((2, 3), "float32")]
    assert_same(ember.cat([ember.from_numpy(x) for x in legacy]),
                torch.cat([torch.from_numpy(x) for x in legacy]))


def test_cat_out_and_backward():
    ae, at = both((2, 3), "float64", seed=1)
    be, bt = both((4, 3), "float64", seed=2)
    for x in (ae, at, be, bt):
        x.requires_grad_(True)
    ge = ember.from_numpy(np.arange(18.).reshape(6, 3))
    gt = torch.from_numpy(np.arange(18.).reshape(6, 3))
    ember.cat([ae, be]).backward(ge)
    torch.cat([at, bt]).backward(gt)
    assert_same(ae.grad, at.grad)
    assert_same(be.grad, bt.grad)
    out = ember.empty(0)
    ember.cat([ember.ones(2), ember.zeros(3)], out=out)
    assert out.tolist() == [1, 1, 0, 0, 0]


def test_broadcast_shapes():
    for shapes in [((2, 3), (3,)), ((1,), (4, 1)), (2, (3, 1)), ((),), ((5, 1, 3), (4, 1))]:
        assert tuple(ember.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(RuntimeError, match="Attempting to broadcast a dimension of length 4"):
        ember.broadcast_shapes((2, 3), (4,))


def test_meshgrid_views_and_warning():
    ae, at = both((3,))
    be, bt = both((2,))
    ember.set_warn_always(True)        # torch warns once a process; every call while set
    try:
        with pytest.warns(UserWarning, match="indexing argument"):
            ember.meshgrid(ae, be)
    finally:
        ember.set_warn_always(False)
    for ind in ("ij", "xy"):
        ge, gt = ember.meshgrid(ae, be, indexing=ind), torch.meshgrid(at, bt, indexing=ind)
        for a, b in zip(ge, gt):
            assert_same(a, b)
            assert a.stride() == b.stride()


def test_nonzero_as_tuple_and_zero_dim():
    for arr in (np.array([[0, 1], [2, 0]]), np.array(3), np.array(0), np.zeros((0, 2))):
        re_ = ember.nonzero(ember.from_numpy(arr), as_tuple=True)
        rt = torch.nonzero(torch.from_numpy(arr), as_tuple=True)
        assert len(re_) == len(rt)
        for a, b in zip(re_, rt):
            assert_same(a, b)
        assert_same(ember.from_numpy(arr).nonzero(), torch.from_numpy(arr).nonzero())


# ------------------------------------------------------------------ indexing

INDEXES = [
    lambda lib: ([0, 2],), lambda lib: (lib.tensor([[0, 1], [2, 2]]),),
    lambda lib: (slice(None), lib.tensor([3, 0])), lambda lib: (0, slice(None), [1, 2]),
    lambda lib: ([0, 1], slice(None), [1, 2]), lambda lib: (Ellipsis, [0, 3]),
    lambda lib: (None, [1], slice(1, None)), lambda lib: (lib.tensor([True, False, True]),),
    lambda lib: (lib.tensor([[True, False, True, False], [False, False, True, True],
                             [True, True, True, False]]),),
    lambda lib: (True,), lambda lib: (False, 0), lambda lib: (lib.tensor(1), [0, 2]),
    lambda lib: ([[0], [1]], [0, 2]), lambda lib: (1, [2, 0], 3),
    lambda lib: ([0, 1], 2), lambda lib: ([-1, -2],),
]


@pytest.mark.parametrize("k", range(len(INDEXES)))
def test_advanced_getitem_matches_torch(k):
    xe, xt = both((3, 4, 5), "float64", seed=3)
    ie, it = INDEXES[k](ember), INDEXES[k](torch)
    re_, rt = xe[ie], xt[it]
    assert_same(re_, rt)
    assert re_._base is None                   # advanced indexing copies
    xe.requires_grad_(True)
    xt.requires_grad_(True)
    g = np.random.default_rng(k).standard_normal(tuple(rt.shape))
    xe[ie].backward(ember.from_numpy(g))
    xt[it].backward(torch.from_numpy(g))
    assert_same(xe.grad, xt.grad)


@pytest.mark.parametrize("k", range(len(INDEXES)))
def test_advanced_setitem_matches_torch(k):
    xe, xt = both((3, 4, 5), "float64", seed=4)
    ie, it = INDEXES[k](ember), INDEXES[k](torch)
    shape = tuple(xt[it].shape)
    v = np.random.default_rng(k).standard_normal(shape[-1:] if shape else ())
    xe[ie] = ember.from_numpy(v)
    xt[it] = torch.from_numpy(v)
    assert_same(xe, xt)
    xe[ie] = 7
    xt[it] = 7
    assert_same(xe, xt)


def test_setitem_value_conversions():
    xe, xt = both((3, 4))
    for idx, val in [((slice(None), 1), 2.5), ((1,), np.float64(-3)), ((0, 0), True),
                     ((2,), "ones114"), (([0, 2],), "ones14")]:
        if val == "ones114":
            xe[idx], xt[idx] = ember.ones(1, 1, 4), torch.ones(1, 1, 4)
        elif val == "ones14":
            xe[idx], xt[idx] = ember.ones(1, 4) * 5, torch.ones(1, 4) * 5
        else:
            xe[idx] = val
            xt[idx] = val
        assert_same(xe, xt)
    for bad in ([1, 2, 3, 4], np.ones(4), (1., 2.), "a"):
        with pytest.raises(TypeError) as te:
            xt[0] = bad
        with pytest.raises(TypeError, match=re.escape(str(te.value))):
            xe[0] = bad
    ie, it = both((3,), "int64")
    ie[[0, 1]] = 1.7                           # numbers are cast to the tensor's dtype
    it[[0, 1]] = 1.7
    ie[2] = ember.tensor(-2.2)                 # basic index: copy_ casts
    it[2] = torch.tensor(-2.2)
    assert_same(ie, it)
    with pytest.raises(RuntimeError) as te:    # advanced index: index_put_ wants equal dtypes
        it[[0, 1]] = torch.tensor([1.7, -2.2])
    with pytest.raises(RuntimeError, match=re.escape(str(te.value))):
        ie[[0, 1]] = ember.tensor([1.7, -2.2])


def test_index_errors_like_torch():
    xe, xt = both((3, 4))
    cases = [lambda lib: (5,), lambda lib: ([5],), lambda lib: ([0, 1], [0, 1, 2]),
             lambda lib: (lib.tensor([True, False]),), lambda lib: (0, 0, 0),
             lambda lib: (lib.tensor([0.5]),), lambda lib: ("a",)]
    for c in cases:
        with pytest.raises(Exception) as te:
            xt[c(torch)]
        with pytest.raises(type(te.value), match=re.escape(str(te.value).split("\n")[0])):
            xe[c(ember)]
    assert_same(xe[..., 1, ...], xt[..., 1, ...])      # torch tolerates repeated ellipses


# ------------------------------------------------------------------ autograd through views

def _pair(shape, seed=0, requires_grad=True):
    a = np.random.default_rng(seed).standard_normal(shape)
    e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
    e.requires_grad_(requires_grad)
    t.requires_grad_(requires_grad)
    return e, t


def _run(fn, *pairs):
    le = [p[0] for p in pairs]
    lt = [p[1] for p in pairs]
    fn(ember, *le).backward()
    fn(torch, *lt).backward()
    for a, b in zip(le, lt):
        if b.grad is None:
            assert a.grad is None
        else:
            assert_same(a.grad, b.grad)


def test_setitem_scalar_on_intermediate():
    def f(lib, x):
        y = x * 1
        y[0] = 0
        return (y * y).sum()
    _run(f, _pair((3, 4)))


def test_setitem_tensor_requiring_grad():
    def f(lib, x, w):
        y = x * 1
        y[:, 1] = w
        return (y * y).sum()
    _run(f, _pair((3, 4)), _pair((3,), 1))


def test_setitem_advanced_with_grad():
    def f(lib, x, w):
        y = x * 2
        y[[0, 2]] = w
        y[y.detach() > 0.5] = 0
        return (y * y).sum()
    _run(f, _pair((3, 4)), _pair((4,), 1))

    def g(lib, x, w):
        y = x * 3
        y[1:, [0, 3]] = w
        y[0, [1, 1]] = w[0]
        return (y * y).sum()
    _run(g, _pair((3, 4)), _pair((2, 2), 2))


def test_setitem_on_non_grad_base_with_grad_value():
    def f(lib, w):
        y = lib.zeros(3, 4, dtype=lib.float64)
        y[1] = w
        y[[0, 2], 1:3] = w[:2] * 3
        return (y * y).sum()
    _run(f, _pair((4,), 5))


def test_inplace_on_view_of_view():
    def f(lib, x, w):
        y = x * 1
        v = y[1:]
        vv = v.narrow(1, 1, 2).t()
        vv.mul_(w)
        vv[0].add_(w[:, 0])
        return (y * y).sum() + (v * 3).sum()
    _run(f, _pair((3, 4)), _pair((2, 2), 1))


def test_view_grad_fns_regenerated():
    for lib in (ember, torch):
        x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
        y = x * 1
        v = y.narrow(0, 0, 2)
        w = y.diagonal()
        v.mul_(2)
        assert v.grad_fn is not None and w.grad_fn is not None
        (w.sum() + v.sum()).backward()
    _run(lambda lib, x: _regen(lib, x), _pair((3, 4)))


def _regen(lib, x):
    y = x * 1
    v = y.narrow(0, 0, 2)
    w = y.diagonal()
    v.mul_(2)
    return (w * w).sum() + v.sum()


@pytest.mark.parametrize("view", ["unfold", "diagonal", "as_strided", "movedim", "select",
                                  "unflatten", "split", "unbind", "tensor_split", "chunk"])
def test_view_backward_matches_torch(view):
    fns = {"unfold": lambda x: x.unfold(1, 2, 1), "diagonal": lambda x: x.diagonal(1),
           "as_strided": lambda x: x.as_strided((3, 3), (1, 1), 1),
           "movedim": lambda x: x.movedim(0, 1), "select": lambda x: x.select(1, -1),
           "unflatten": lambda x: x.unflatten(1, (2, 2)),
           "split": lambda x: x.split([1, 3], 1)[1], "unbind": lambda x: x.unbind(1)[2],
           "tensor_split": lambda x: x.tensor_split([3, 1], 1)[2],
           "chunk": lambda x: x.chunk(3, 1)[0]}

    def f(lib, x):
        v = fns[view](x * 1)
        return (v * v).sum()
    _run(f, _pair((3, 4), 7))


def test_multi_output_views_inplace():
    xe, xt = both((2, 3))
    for x in (xe, xt):
        a, b = x.unbind(0)
        a.mul_(10)
        s0, s1 = x.split(2, 1)
        s1.add_(1)
    assert_same(xe, xt)
    for lib, x in ((ember, _pair((2, 3))[0]), (torch, _pair((2, 3))[1])):
        y = x * 1
        with lib.no_grad():
            y.unbind(0)[0].mul_(2)             # allowed without grad mode


def test_multi_output_view_inplace_with_grad_errors():
    e, t = _pair((2, 3))
    with pytest.raises(RuntimeError, match="returns multiple views"):
        (t * 1).unbind(0)[0].mul_(2)
    with pytest.raises(RuntimeError, match="returns multiple views"):
        (e * 1).unbind(0)[0].mul_(2)


def test_scatter_reduce_backward_prod_with_zeros():
    a = np.array([[1., 0., 2., 3.], [2., 5., 0., 1.]])
    src = np.array([[0., 2., 1., 4.], [3., 0., 0., 2.]])
    idx = np.array([[0, 1, 1, 0], [1, 0, 1, 1]])
    for inc in (True, False):
        pe, pt = (ember.from_numpy(a.copy()).requires_grad_(), torch.from_numpy(a.copy())
                  .requires_grad_())
        se, st = (ember.from_numpy(src.copy()).requires_grad_(),
                  torch.from_numpy(src.copy()).requires_grad_())
        pe.scatter_reduce(0, ember.from_numpy(idx), se, "prod", include_self=inc).sum().backward()
        pt.scatter_reduce(0, torch.from_numpy(idx), st, "prod", include_self=inc).sum().backward()
        assert_same(pe.grad, pt.grad)
        assert_same(se.grad, st.grad)


def test_amax_ties_split_gradient():
    a = np.array([1., 3., 3.])
    src = np.array([3., 2.])
    idx = np.array([1, 2])
    pe = ember.from_numpy(a.copy()).requires_grad_()
    pt = torch.from_numpy(a.copy()).requires_grad_()
    se, st = ember.from_numpy(src.copy()).requires_grad_(), \
        torch.from_numpy(src.copy()).requires_grad_()
    pe.scatter_reduce(0, ember.from_numpy(idx), se, "amax").sum().backward()
    pt.scatter_reduce(0, torch.from_numpy(idx), st, "amax").sum().backward()
    assert_same(pe.grad, pt.grad)
    assert_same(se.grad, st.grad)


def test_nondeterministic_flags():
    from ember._ops.registry import OPS
    for name in ("put", "put_"):                   # torch alerts on the CPU without accumulate
        assert OPS[name].nondeterministic, name
    for name in ("gather", "index_select", "index.Tensor", "_index_backward", "take",
                 "scatter_add", "index_add", "index_put", "index_add_", "index_put_",
                 "scatter_add_"):                  # deterministic on torch's CPU
        assert not OPS[name].nondeterministic, name


def test_iteration_and_len_use_unbind():
    xe, xt = both((3, 2))
    for a, b in zip(xe, xt):
        assert_same(a, b)
        assert a._base is xe


INPLACE_INDEX_OPS = {
    "scatter_": lambda lib, y, w: y.scatter_(0, lib.tensor([[2, 0, 1, 0]]), w[:1]),
    "scatter_value": lambda lib, y, w: y.scatter_(1, lib.tensor([[0], [3], [1]]), 2.0),
    "scatter_add_": lambda lib, y, w: y.scatter_add_(0, lib.tensor([[0, 0, 1, 0], [0, 2, 2, 2]]),
                                                     w[:2]),
    "scatter_reduce_prod": lambda lib, y, w: y.scatter_reduce_(
        0, lib.tensor([[0, 0, 1, 0], [0, 2, 2, 2]]), w[:2], "prod", include_self=False),
    "scatter_reduce_amax": lambda lib, y, w: y.scatter_reduce_(
        1, lib.tensor([[0, 0], [3, 1], [2, 2]]), w[:, :2], "amax"),
    "index_add_": lambda lib, y, w: y.index_add_(1, lib.tensor([0, 0, 3]), w[:, :3], alpha=2),
    "index_copy_": lambda lib, y, w: y.index_copy_(0, lib.tensor([2, 0]), w[:2]),
    "index_fill_": lambda lib, y, w: y.index_fill_(1, lib.tensor([1, 3]), w[0, 0]),
    "index_put_": lambda lib, y, w: y.index_put_((lib.tensor([0, 0]), lib.tensor([1, 1])),
                                                 w[0, :2], accumulate=True),
    "index_reduce_": lambda lib, y, w: y.index_reduce_(0, lib.tensor([1, 1]), w[:2], "mean"),
    "masked_fill_": lambda lib, y, w: y.masked_fill_(lib.tensor([True, False, False, True]),
                                                     w[1, 1]),
    "masked_scatter_": lambda lib, y, w: y.masked_scatter_(lib.tensor([True, False, False, True]),
                                                           w),
    "put_": lambda lib, y, w: y.put_(lib.tensor([0, 5, 5]), w[0, :3], accumulate=True),
    "tril_": lambda lib, y, w: y.tril_(1),
    "setitem_view": lambda lib, y, w: y[1:].index_put_((lib.tensor([1, 0]),), w[0]),
}


@pytest.mark.parametrize("name", list(INPLACE_INDEX_OPS))
def test_inplace_index_ops_autograd(name):
    def f(lib, x, w):
        y = x * 1.5
        INPLACE_INDEX_OPS[name](lib, y, w)
        return (y * y).sum()
    _run(f, _pair((3, 4), 11), _pair((3, 4), 12))
