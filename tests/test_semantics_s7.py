"""torch semantics checked against torch itself: writes into expanded tensors, deepcopy of
views, kthvalue/mode ties, autograd node order, .grad strides, scalar conversions, reprs."""
import warnings

import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(L, fn):
    """(result or exception text, warning texts) of ``fn(L)`` for a library ``L``."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            res = ("ok", fn(L))
        except Exception as e:            # noqa: BLE001 - the class and text are compared
            res = ("error", type(e).__name__, str(e))
    return res, [str(x.message) for x in w if "expanded" in str(x.message)]


# ------------------------------------------------------------ 1. writes into expanded tensors

def _expanded(L):
    base = L.arange(3.).reshape(1, 3)
    return base, base.expand(4, 3)


def _write(op):
    def run(L):
        base, t = _expanded(L)
        op(L, t)
        return base.tolist(), t.stride()
    return run


_WRITES = {
    "fill_": lambda L, t: t.fill_(2),
    "fill_bool": lambda L, t: t.fill_(True),
    "fill_tensor": lambda L, t: t.fill_(L.tensor(3.)),
    "zero_": lambda L, t: t.zero_(),
    "add_": lambda L, t: t.add_(1),
    "mul_tensor": lambda L, t: t.mul_(L.ones(3)),
    "copy_": lambda L, t: t.copy_(L.ones(4, 3)),
    "copy_0d": lambda L, t: t.copy_(L.tensor(1.)),
    "copy_self": lambda L, t: t.copy_(t),
    "copy_empty": lambda L, t: t[:0].copy_(L.ones(0, 3)),
    "clamp_": lambda L, t: t.clamp_(min=1),
    "uniform_": lambda L, t: t.uniform_(),
    "relu_inplace": lambda L, t: L.nn.functional.relu(t, inplace=True),
    "init_constant": lambda L, t: L.nn.init.constant_(t, 3.),
    "init_normal": lambda L, t: L.nn.init.normal_(t),
    "index_put_": lambda L, t: t.index_put_((L.tensor([1]),), L.tensor([5., 6., 7.])),
    "index_put_acc": lambda L, t: t.index_put_((L.tensor([1]),), L.tensor(1.),
                                               accumulate=True),
    "masked_fill_": lambda L, t: t.masked_fill_(L.tensor([[True], [False], [False], [False]]),
                                                4.),
    "index_fill_": lambda L, t: t.index_fill_(1, L.tensor([2]), -1.),
    "index_copy_": lambda L, t: t.index_copy_(0, L.tensor([0]), L.ones(1, 3)),
    "scatter_": lambda L, t: t.scatter_(0, L.zeros(1, 3, dtype=L.long), 1.),
    "tril_": lambda L, t: t.tril_(),
    "triu_": lambda L, t: t.triu_(1),
    "fill_diagonal_": lambda L, t: t.fill_diagonal_(7.),
    "baddbmm_": lambda L, t: t.unsqueeze(0).baddbmm_(L.ones(1, 4, 2), L.ones(1, 2, 3)),
    "setitem_row": lambda L, t: t.__setitem__(0, 9.),
    "setitem_column": lambda L, t: t.__setitem__((slice(None), 0), 9.),
    "setitem_all": lambda L, t: t.__setitem__(slice(None), 9.),
    "setitem_index": lambda L, t: t.__setitem__(L.tensor([1]), L.tensor([5., 6., 7.])),
    "setitem_mask": lambda L, t: t.__setitem__(L.tensor([True, False, False, False]), 5.),
    "sum_out": lambda L, t: L.sum(L.ones(5, 4, 3), 0, out=t),
    "amax_out": lambda L, t: L.amax(L.ones(5, 4, 3), 0, out=t),
    "mean_out": lambda L, t: L.mean(L.ones(5, 4, 3), 0, out=t),
    "neg_out": lambda L, t: L.neg(L.ones(4, 3), out=t),
    "mm_out": lambda L, t: L.mm(L.ones(4, 2), L.ones(2, 3), out=t),
    "bmm_out": lambda L, t: L.bmm(L.ones(1, 4, 2), L.ones(1, 2, 3), out=t.unsqueeze(0)),
    "zeros_out": lambda L, t: L.zeros(4, 3, out=t),
    "full_out": lambda L, t: L.full((4, 3), 2., out=t),
    "eye_out": lambda L, t: L.eye(4, 3, out=t),
    "cat_out": lambda L, t: L.cat([L.ones(2, 3), L.ones(2, 3)], out=t),
}


@pytest.mark.parametrize("name", list(_WRITES))
def test_write_into_expanded_tensor(name):
    """torch refuses most writes into a tensor with a repeated element (stride 0), writes
    fill_/zero_/tril_... and some out= results, and warns for index_put_/masked_fill_."""
    if name in ("uniform_", "init_normal"):
        fn = _write(_WRITES[name])
        t_res, t_w = _outcome(torch, fn)
        e_res, e_w = _outcome(ember, fn)
        assert t_res[0] == "error" and e_res[:2] == t_res[:2] and e_res[2] == t_res[2]
        return
    t_res, t_w = _outcome(torch, _write(_WRITES[name]))
    e_res, e_w = _outcome(ember, _write(_WRITES[name]))
    assert e_res == t_res
    assert e_w == [w.split(" (Triggered internally")[0] for w in t_w]


@pytest.mark.parametrize("expr", [
    "L.zeros(1, 3).expand(1, 3).add_(1)", "L.zeros(3).expand(1, 3).mul_(2)",
    "L.zeros(1, 3).expand_as(L.zeros(1, 3)).add_(1)", "L.zeros(3, 1).expand(3, 1).copy_(L.ones(3, 1))",
    "L.broadcast_tensors(L.zeros(3), L.zeros(1, 3))[0].add_(1)",
])
def test_expand_without_repeats_is_writable(expr):
    """An expand that repeats no element is an ordinary view: every in-place op writes it."""
    e = eval(expr, {"L": ember})
    t = eval(expr, {"L": torch})
    assert e.tolist() == t.tolist() and e.stride() == t.stride()


@pytest.mark.parametrize("src,size", [((3,), (1, 3)), ((3,), (2, 1, 3)), ((1, 3), (4, 3)),
                                      ((3, 1), (2, 3, 1)), ((), (2, 3)), ((2, 1, 1), (2, 1, 5))])
def test_expand_strides(src, size):
    """torch's expand geometry: a grown size strides 0, a new size-1 dim spans the rest."""
    assert ember.zeros(src).expand(size).stride() == torch.zeros(src).expand(size).stride()
    e = ember.zeros(3, 4)[:, :1].expand(2, 3, 1)
    assert e.stride() == torch.zeros(3, 4)[:, :1].expand(2, 3, 1).stride()


# ------------------------------------------------------------ 2. deepcopy keeps aliasing

def _deepcopy_views(L):
    import copy
    out = []
    x = L.arange(6.).reshape(2, 3)
    d = copy.deepcopy({"x": x, "v": x[0], "w": x.t(), "r": x[1, 1:]})
    d["x"][0, 0] = 5
    out += [d["v"].tolist(), d["w"].tolist(), d["w"].stride(), d["r"].storage_offset(),
            d["v"]._base is None, d["x"]._version]
    rev = copy.deepcopy([x[0], x])                  # the view first
    rev[1][0, 1] = 7
    out += [rev[0].tolist()]
    lone = copy.deepcopy(x[1])
    out += [lone.tolist(), lone.storage_offset(), lone.untyped_storage().nbytes()]
    e = copy.deepcopy(L.zeros(1, 3).expand(4, 3))
    out += [e.stride(), e.is_contiguous()]
    iv = L.arange(4, dtype=L.int32)
    r = copy.deepcopy([iv, iv.view(L.float32)])
    r[0][0] = 1065353216
    out += [r[1][0].item()]
    cl = L.ones(1, 2, 3, 3).to(memory_format=L.channels_last)
    out += [copy.deepcopy(cl).stride(), copy.deepcopy(L.nn.Parameter(cl)).stride()]
    return out


def _deepcopy_autograd(L):
    import copy
    out = []
    p = L.ones(2, 3, requires_grad=True)
    p.grad = L.ones(3, 2).t()
    p.tag = [1]
    c = copy.deepcopy(p)
    out += [c.requires_grad, c.is_leaf, c.grad.stride(), c.grad is not p.grad, c.tag,
            c.tag is not p.tag]
    for bad in (lambda: p * 2, lambda: p[0]):
        try:
            copy.deepcopy(bad())
        except RuntimeError as e:
            out.append(str(e))
    m = L.nn.Linear(3, 2)
    m.register_buffer("row", m.weight.detach()[0])
    m.weight.grad = L.ones(2, 3)
    m2 = copy.deepcopy(m)
    with L.no_grad():
        m2.weight[0, 0] = 100.
    out += [m2.row[0].item() == 100., m2.weight.grad, type(m2.weight).__name__]
    m.register_buffer("a", L.zeros(4))
    m.register_buffer("b", m.a[1:])
    m3 = copy.deepcopy(m)
    m3.a[1] = 3
    out += [m3.b.tolist()]
    return out


@pytest.mark.parametrize("case", [_deepcopy_views, _deepcopy_autograd])
def test_deepcopy_keeps_views(case):
    """deepcopy copies each storage once: views copied with their base still alias it."""
    assert case(ember) == case(torch)


# ------------------------------------------------------------ 3. kthvalue / mode ties

def _tie_cases():
    import numpy as np
    rng = np.random.default_rng(7)
    cases = []
    for t in range(40):
        shape = [(7,), (5, 6), (3, 4, 5), (2, 40), (33,), (1,)][t % 6]
        a = rng.integers(0, 1 + t % 4, shape).astype(float)
        if t % 3 == 0:
            a[rng.random(shape) < 0.25] = np.nan
        dtype = ["float32", "float64", "int64", "bfloat16", "int16", "float16"][t % 6]
        if dtype[0] == "i":
            a = np.nan_to_num(a)
        cases.append((a.tolist(), dtype, int(rng.integers(0, len(shape))),
                      float(rng.random())))
    cases.append(([0., -0., 0.], "float32", 0, 0.1))
    cases.append(([float("nan")] * 3, "float64", 0, 0.9))
    return cases


@pytest.mark.parametrize("values,dtype,dim,q", _tie_cases())
def test_kthvalue_mode_ties(values, dtype, dim, q):
    """Which of several equal values kthvalue/mode return: torch's quickselect and
    (unstable) std::sort orders, NaN included."""
    import math
    res = {}
    for L in (torch, ember):
        x = L.tensor(values, dtype=getattr(L, dtype))
        k = 1 + int(q * x.shape[dim])
        kv = L.kthvalue(x, k, dim)
        mv = L.mode(x, dim)
        tx = L.tensor(values, dtype=getattr(L, dtype)).movedim(dim, 0).contiguous().movedim(0, dim)
        res[L] = [kv.indices.tolist(), str(kv.values.float().tolist()),
                  L.kthvalue(tx, k, dim, keepdim=True).indices.tolist(),
                  mv.indices.tolist(), str(mv.values.float().tolist())]
    assert res[ember] == res[torch]


# ------------------------------------------------------------ 4. linear's grad_fn chain

def _chain(fn, depth=4):
    if fn is None:
        return None
    if depth == 0:
        return fn.name()
    return (fn.name(), [(_chain(f, depth - 1), k) for f, k in fn.next_functions])


def _leaf(L, t):
    return t.detach().requires_grad_()


_LINEAR_CASES = {
    "2d_bias": lambda L, x, w, b: L.nn.functional.linear(x[0], w, b),
    "2d_leaf": lambda L, x, w, b: L.nn.functional.linear(_leaf(L, x[0]), w, b),
    "2d": lambda L, x, w, b: L.nn.functional.linear(x[0], w),
    "3d_bias": lambda L, x, w, b: L.nn.functional.linear(x, w, b),
    "3d": lambda L, x, w, b: L.nn.functional.linear(x, w),
    "1d_bias": lambda L, x, w, b: L.nn.functional.linear(_leaf(L, x[0, 0]), w, b),
    "1d": lambda L, x, w, b: L.nn.functional.linear(_leaf(L, x[0, 0]), w),
    "strided_bias": lambda L, x, w, b: L.nn.functional.linear(x.transpose(0, 1), w, b),
    "strided": lambda L, x, w, b: L.nn.functional.linear(x.transpose(0, 1), w),
    "sliced_bias": lambda L, x, w, b: L.nn.functional.linear(x[:, :, :2], w[:, :2], b),
    "no_grad_input": lambda L, x, w, b: L.nn.functional.linear(x.detach(), w, b),
    "no_grad_weight": lambda L, x, w, b: L.nn.functional.linear(x[0], w.detach(), b),
    "module": lambda L, x, w, b: L.nn.Linear(3, 2)(x),
    "addmm": lambda L, x, w, b: L.addmm(b, x[0], w.t(), beta=2),
}


@pytest.mark.parametrize("name", list(_LINEAR_CASES))
def test_linear_next_functions(name):
    """F.linear's grad_fn chain as torch builds it (AddmmBackward0: bias, input,
    TBackward0 -> weight; view nodes around an N-d input), and the same gradients."""
    import numpy as np
    res = {}
    for L in (torch, ember):
        rng = np.random.default_rng(0)
        x = L.tensor(rng.standard_normal((2, 4, 3)), dtype=L.float32, requires_grad=True)
        w = L.tensor(rng.standard_normal((2, 3)), dtype=L.float32, requires_grad=True)
        b = L.tensor(rng.standard_normal(2), dtype=L.float32, requires_grad=True)
        out = _LINEAR_CASES[name](L, x, w, b)
        (out * L.arange(out.numel()).reshape(out.shape)).sum().backward()
        grads = [None if p.grad is None else (p.grad.numpy().astype(np.float64),
                                              p.grad.stride()) for p in (x, w, b)]
        res[L] = (_chain(out.grad_fn), grads if name != "module" else [])
    assert res[ember][0] == res[torch][0]
    for ge, gt in zip(res[ember][1], res[torch][1]):
        assert (ge is None) == (gt is None)
        if ge is not None:
            np.testing.assert_allclose(ge[0], gt[0], rtol=1e-5, atol=1e-5)
            assert ge[1] == gt[1]


# ------------------------------------------------------------ 5. .grad strides of leaves

_LEAVES = {
    "transposed": lambda L: L.ones(4, 3).t(),
    "channels_last": lambda L: L.ones(2, 3, 4, 5).to(memory_format=L.channels_last),
    "channels_last_3d": lambda L: L.ones(2, 3, 2, 4, 5).to(memory_format=L.channels_last_3d),
    "permuted": lambda L: L.ones(2, 3, 4).permute(2, 0, 1),
    "sliced_rows": lambda L: L.ones(6, 3)[::2],
    "sliced_cols": lambda L: L.ones(3, 6)[:, 1:4],
    "expanded": lambda L: L.ones(1, 3).expand(4, 3),
    "as_strided": lambda L: L.ones(20).as_strided((3, 3), (1, 3)),
}
_LOSSES = {
    "sum": lambda L, p: p.sum(),
    "times_contiguous": lambda L, p: (p * L.ones(p.shape)).sum(),
    "exp": lambda L, p: p.exp().sum(),
    "contiguous": lambda L, p: (p.contiguous() * 2).sum(),
    "twice": lambda L, p: p.exp().sum() + (p * 2).sum(),
}


@pytest.mark.parametrize("leaf", list(_LEAVES))
def test_grad_strides_follow_leaf(leaf):
    """torch's layout contract: a non-overlapping and dense leaf gets a .grad with its own
    strides (else a contiguous one), stolen when the gradient already has them."""
    res = {}
    for L in (torch, ember):
        row = []
        for loss in _LOSSES.values():
            p = _LEAVES[leaf](L).detach().requires_grad_()
            loss(L, p).backward()
            row.append((p.grad.stride(), round(p.grad.double().sum().item(), 3)))
        p = _LEAVES[leaf](L).detach().requires_grad_()
        (p * p).sum().backward(create_graph=True)
        row.append((p.grad.stride(), p.grad.grad_fn.name()))
        res[L] = row
    assert res[ember] == res[torch]


# ------------------------------------------------------------ 6. float()/int() of grad tensors

_CONVERSIONS = ["int(x)", "x.item()", "bool(x)", "int(x * 2)", "x.tolist()",
                "float(x.detach())", "np.asarray(x * 2)", "x.__array__()",
                "with torch.no_grad(): float(x)", "float(x)", "complex(x)", "float(x * 2)",
                "math.floor(x)", "float(torch.ones(2, requires_grad=True))"]


def test_scalar_conversion_of_grad_tensor():
    """float()/complex() of a tensor that requires grad warn once a process, not under
    no_grad (int(), item() never); NumPy conversion refuses it, as numpy() does. The
    expressions run in this order in one fresh process per library."""
    import subprocess
    import sys
    code = ("import math, warnings, numpy as np\nimport {L} as torch\n"
            "warnings.simplefilter('always')\n"
            "x = torch.tensor(2.5, requires_grad=True)\n"
            "for expr in {exprs!r}:\n"
            "    with warnings.catch_warnings(record=True) as w:\n"
            "        warnings.simplefilter('always')\n"
            "        try:\n            exec(expr); r = 'ok'\n"
            "        except Exception as e:\n            r = type(e).__name__ + str(e)\n"
            "    print(expr, r, [str(m.message).split(' (Triggered')[0] for m in w])\n")
    out = {L: subprocess.run([sys.executable, "-c", code.format(L=L, exprs=_CONVERSIONS)],
                             capture_output=True, text=True).stdout for L in ("torch", "ember")}
    assert out["ember"] == out["torch"] and out["torch"].count("\n") == len(_CONVERSIONS)


# ------------------------------------------------------------ 7. reprs of constants

@pytest.mark.parametrize("name", ["contiguous_format", "channels_last", "channels_last_3d",
                                  "preserve_format", "strided", "sparse_coo", "sparse_csr",
                                  "jagged", "_mkldnn", "float32", "bfloat16", "complex32",
                                  "quint8"])
def test_constant_str_repr_and_identity(name):
    """str/repr/format as torch prints them; copies and pickles are the same object."""
    import copy
    import pickle
    res = {}
    for L in (torch, ember):
        o = getattr(L, name)
        res[L] = [str(o), repr(o), f"{o}", "%s" % (o,), str([o]), copy.copy(o) is o,
                  copy.deepcopy(o) is o, pickle.loads(pickle.dumps(o)) is o]
    assert res[ember] == res[torch]


def test_device_str_repr():
    for spec in ("cpu", "cpu:0", "cuda", "cuda:1", "meta", "mps"):
        e, t = ember.device(spec), torch.device(spec)
        assert (str(e), repr(e), e.type, e.index) == (str(t), repr(t), t.type, t.index)


# ------------------------------------------------------------ 8. views, in-place, metadata

_VIEW_EXPRS = [
    "y.view(12)", "y.reshape(2, 6)", "y.t().reshape(12)", "y.unflatten(1, (2, 2))",
    "y.unsqueeze(0).squeeze()", "y.T", "y.mT", "y.narrow(1, 1, 2)", "y.unbind(0)[1]",
    "y.split(2, 1)[1]", "y.diagonal()", "y[:1].expand(3, 4)", "y.as_strided((2, 2), (1, 2))",
    "y.unfold(1, 2, 1)", "y.detach()", "y.data", "y[...]", "y[:]", "y[None]", "y[1]",
    "y[:, 1:3]", "y.contiguous()", "y.t().contiguous()", "y.to(torch.float64)",
    "y.view(torch.int32)", "y[0, 0]", "y[0, :2]", "y[..., 0]", "y[None, 0]", "y[0:1, 0]",
    "y[0, None, 1:2]", "y.add_(1)", "y[0].add_(1)", "y.mul_(2)[0]", "x[0]", "x.t()",
    "x.detach()[0]", "(y * 1).unsqueeze_(0)", "(y * 1).t_()",
    "(y * 1).detach().resize_(3, 4)", "y.detach().t().resize_(4, 3)",
    "(lambda v: (v.add_(1), v)[1])((y * 1).view(12)[2:])",
    "(lambda z: (z.add_(1), z.view(2, 6))[1])(y * 1)",
]


def _view_rows(L):
    def chain(fn, depth=4):
        if fn is None or depth == 0:
            return fn and fn.name()
        return (fn.name(), [chain(f, depth - 1) for f, _ in fn.next_functions])
    rows = []
    x = L.ones(3, 4, requires_grad=True)
    for expr in _VIEW_EXPRS:
        y = x * 1
        t = eval(expr, {"x": x, "y": y, "torch": L})
        rows.append((expr, tuple(t.shape), t.stride(), t._version, t.is_leaf, t.requires_grad,
                     chain(t.grad_fn), t._base is not None))
    for bad in (lambda: x[0].detach_(), lambda: (x * 1)[0].detach_()):
        try:
            bad()
        except RuntimeError as e:
            rows.append(str(e))
    return rows


def test_view_metadata_as_torch():
    """shape, strides, _version, is_leaf, grad_fn chains (AsStridedBackward0 after an
    in-place write through a view, one node per index step) and _base as torch's."""
    for e, t in zip(_view_rows(ember), _view_rows(torch)):
        assert e == t


_NODE_NAMES = {
    "group_norm": lambda L, x, x4, x5: L.nn.functional.group_norm(x, 2),
    "instance_norm": lambda L, x, x4, x5: L.nn.functional.instance_norm(x),
    "interp_nearest": lambda L, x, x4, x5: L.nn.functional.interpolate(x, scale_factor=2),
    "interp_linear": lambda L, x, x4, x5: L.nn.functional.interpolate(x, scale_factor=2,
                                                                      mode="linear"),
    "interp_bilinear": lambda L, x, x4, x5: L.nn.functional.interpolate(x4, size=(3, 3),
                                                                        mode="bilinear"),
    "interp_trilinear": lambda L, x, x4, x5: L.nn.functional.interpolate(
        x5, scale_factor=2, mode="trilinear"),
    "adaptive_avg_1": lambda L, x, x4, x5: L.nn.functional.adaptive_avg_pool2d(x4, 1),
    "adaptive_avg_3": lambda L, x, x4, x5: L.nn.functional.adaptive_avg_pool2d(x4, 3),
    "adaptive_avg_1d": lambda L, x, x4, x5: L.nn.functional.adaptive_avg_pool1d(x, 2),
    "adaptive_max": lambda L, x, x4, x5: L.nn.functional.adaptive_max_pool2d(x4, 2),
    "avg_pool1d": lambda L, x, x4, x5: L.nn.functional.avg_pool1d(x, 2),
    "max_pool1d": lambda L, x, x4, x5: L.nn.functional.max_pool1d(x, 2),
    "avg_pool3d": lambda L, x, x4, x5: L.nn.functional.avg_pool3d(x5, 2),
    "max_pool3d": lambda L, x, x4, x5: L.nn.functional.max_pool3d(x5, 2),
    "pad_reflect": lambda L, x, x4, x5: L.nn.functional.pad(x4, (1, 1, 1, 1), mode="reflect"),
    "pad_replicate": lambda L, x, x4, x5: L.nn.functional.pad(x, (1, 1), mode="replicate"),
    "unfold": lambda L, x, x4, x5: L.nn.functional.unfold(x4, 2),
    "pixel_shuffle": lambda L, x, x4, x5: L.nn.functional.pixel_shuffle(x4, 2),
    "grid_sample": lambda L, x, x4, x5: L.nn.functional.grid_sample(
        x4, L.zeros(2, 3, 3, 2), align_corners=False),
    "embedding_bag": lambda L, x, x4, x5: L.nn.functional.embedding_bag(
        L.tensor([0, 1]), x[0], L.tensor([0])),
    "pairwise_distance": lambda L, x, x4, x5: L.nn.functional.pairwise_distance(x[0], x[1]),
    "matmul_3d": lambda L, x, x4, x5: x @ L.ones(6, 2),
    "matmul_vec": lambda L, x, x4, x5: x @ L.ones(6),
    "matmul_1d_2d": lambda L, x, x4, x5: x[0, 0] @ L.ones(6, 2),
    "sdpa_4d": lambda L, x, x4, x5: L.nn.functional.scaled_dot_product_attention(x4, x4, x4),
    "sdpa_3d": lambda L, x, x4, x5: L.nn.functional.scaled_dot_product_attention(x, x, x),
    "repeat_interleave": lambda L, x, x4, x5: x.repeat_interleave(2, 1),
    "repeat_interleave_t": lambda L, x, x4, x5: x.repeat_interleave(L.tensor([1, 2]), 0),
}


@pytest.mark.parametrize("name", list(_NODE_NAMES))
def test_output_node_named_as_torch(name):
    """The grad_fn a functional's output prints with is torch's kernel's node."""
    out = {}
    for L in (torch, ember):
        L.manual_seed(0)
        x = L.ones(2, 4, 6, requires_grad=True)
        x4 = L.ones(2, 4, 6, 6, requires_grad=True)
        x5 = L.ones(1, 2, 4, 4, 4, requires_grad=True)
        out[L] = _NODE_NAMES[name](L, x, x4, x5).grad_fn.name()
    assert out[ember] == out[torch]


def _set_cases(L):
    a = L.arange(6.)
    out = []
    t = L.zeros(2)
    v0 = t._version
    t.set_(a.untyped_storage(), 1, (2, 2), (2, 1))
    out += [t.tolist(), t.storage_offset(), t.stride(), t._version - v0, t._base is None,
            t.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()]
    t[0, 0] = 100
    out += [a.tolist(), a._version]
    u = L.zeros(1).set_(a[2:])
    out += [u.tolist(), u.storage_offset(), u.is_set_to(a[2:])]
    w = L.ones(3).set_()
    out += [tuple(w.shape), w.untyped_storage().nbytes()]
    out += [tuple(L.zeros(2).set_(a.untyped_storage()).shape)]
    for bad in (lambda: L.zeros(2, dtype=L.int64).set_(a),
                lambda: L.zeros(2, requires_grad=True).set_(a)):
        try:
            bad()
        except RuntimeError as e:
            out.append(str(e))
    return out


def test_set_as_torch():
    """Tensor.set_: a window on another storage (offset, strides, shared memory, own
    version counter), another tensor's view, or nothing; torch's errors."""
    assert _set_cases(ember) == _set_cases(torch)


@pytest.mark.parametrize("expr", [
    "L.zeros(3).as_strided((2, 2), (0, 1)).add_(1)", "L.zeros(3).as_strided((2, 2), (0, 1)).fill_(1)",
    "L.zeros(3).as_strided((2,), (0,)).zero_()", "L.zeros(4, 4).fill_diagonal_(3)",
])
def test_as_strided_repeats_follow_expand_rules(expr):
    """An as_strided window with stride 0 is written as an expanded tensor is."""
    res = {}
    for L in (torch, ember):
        try:
            res[L] = eval(expr, {"L": L}).tolist()
        except RuntimeError as e:
            res[L] = str(e)
    assert res[ember] == res[torch]


def _versions(L):
    rows = []
    ops = [lambda x, v: x.add_(1), lambda x, v: v.add_(1), lambda x, v: x.__setitem__(0, 1.),
           lambda x, v: x.__setitem__(x > 0, 1.), lambda x, v: L.add(x, 1, out=x),
           lambda x, v: x.copy_(x), lambda x, v: x.detach().add_(1),
           lambda x, v: x.data.add_(1), lambda x, v: x.resize_(3, 4),
           lambda x, v: x.unsqueeze_(0), lambda x, v: x.fill_(1).fill_(2),
           lambda x, v: L.sort(L.ones(3, 4), out=(x, L.zeros(3, 4, dtype=L.long))),
           lambda x, v: x.set_(L.ones(5))]
    for op in ops:
        x = L.zeros(3, 4)
        v = x[0]
        op(x, v)
        rows.append((x._version, v._version))
    return rows


def test_version_counters_as_torch():
    """_version after in-place ops, out=, writes through detach()/.data, shape-only
    in-place ops and set_, for the tensor and a view taken before."""
    assert _versions(ember) == _versions(torch)


@pytest.mark.parametrize("grad", ["L.ones(3)", "L.ones(1, 2)", "L.ones(2, dtype=L.float64)",
                                  "L.ones(2, dtype=L.long)", "L.ones(2).t()"])
def test_grad_assignment_errors(grad):
    """Assigning a .grad of another size or dtype: torch's messages."""
    res = {}
    for L in (torch, ember):
        x = L.ones(2, requires_grad=True)
        try:
            x.grad = eval(grad, {"L": L})
            res[L] = x.grad.tolist()
        except RuntimeError as e:
            res[L] = str(e)
    assert res[ember] == res[torch]


@pytest.mark.parametrize("values,dtype,dim,descending,stable", [
    (v, dt, d, desc, st)
    for v, dt, d in [(("ties", 40), "float32", 0), (("ties", 3, 30), "int64", 1),
                     (("nan", 5, 25), "float64", 1), (("ties", 20, 3), "bfloat16", 0),
                     (("ties", 12), "int32", 0), (("ties", 2, 300), "uint8", 1)]
    for desc in (False, True) for st in (False, True)])
def test_sort_tie_order(values, dtype, dim, descending, stable):
    """sort/argsort among equal values: stable=True keeps input order; the default is
    torch's std::sort order (NaN above every number), stable up to 16 elements."""
    import numpy as np
    rng = np.random.default_rng(len(values) + dim)
    a = rng.integers(0, 3, values[1:]).astype(float)
    if values[0] == "nan":
        a[rng.random(a.shape) < 0.3] = np.nan
    res = {}
    for L in (torch, ember):
        t = L.tensor(a.tolist(), dtype=getattr(L, dtype))
        res[L] = (L.sort(t, stable=stable, dim=dim, descending=descending).indices.tolist(),
                  L.argsort(t, stable=stable, dim=dim, descending=descending).tolist(),
                  L.sort(t, dim, descending).indices.tolist())
    assert res[ember] == res[torch]


@pytest.mark.parametrize("index", ["...", "slice(None)", "(slice(None), slice(None))",
                                   "(slice(0, 2),)", "0", "(0, 0)"])
@pytest.mark.parametrize("value", ["1.", "x[0, 0] * 2", "L.tensor(5.)", "L.ones(4) * x[0]"])
def test_setitem_nodes(index, value):
    """x[index] = value as torch records it: a whole index writes into x itself, a 0-d or
    number value is filled (FillBackward3, value edge None for a number), a view write is
    a CopySlices around it."""
    res = {}
    for L in (torch, ember):
        x = L.ones(3, 4, requires_grad=True)
        h = x * 1
        idx = eval(index)
        try:
            h[idx] = eval(value, {"x": x, "L": L})
            res[L] = (_chain(h.grad_fn, 3), h._version, h.sum().item())
        except RuntimeError as e:
            res[L] = str(e)
    assert res[ember] == res[torch]


@pytest.mark.parametrize("dtype,value", [("uint8", 300), ("int32", 1e40), ("int8", -200)])
def test_scalar_range_errors_name_c_types(dtype, value):
    res = {}
    for L in (torch, ember):
        out = []
        for f in (lambda t: t.__setitem__(0, value), lambda t: t.fill_(value),
                  lambda t: L.full((2,), value, dtype=t.dtype), lambda t: L.tensor(value, dtype=t.dtype)):
            try:
                f(L.zeros(3, dtype=getattr(L, dtype)))
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e))
        res[L] = out
    assert res[ember] == res[torch]


def test_deepcopy_of_set_tensor_aliases():
    """Tensors set_ onto one storage are deep-copied onto one copy of it."""
    import copy
    res = {}
    for L in (torch, ember):
        s = L.arange(4.)
        s2 = L.tensor([]).set_(s.untyped_storage(), 1, (2,), (1,))
        r = copy.deepcopy([s, s2])
        r[0][1] = 9
        res[L] = (r[1].tolist(), r[1].storage_offset(), s.tolist())
    assert res[ember] == res[torch]
