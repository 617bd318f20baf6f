"""The fused records behind nn layers (ember/_ops/nn_fused.py: the LSTM recurrence) and the
fused softmax / log_softmax backward kernels: values and gradients vs torch, the
differentiable (create_graph) path, forward-mode AD, vmap and the profiler."""
import numpy as np
import pytest
import torch

import ember
from helpers import compiled_kernels
from ember.autograd import forward_ad as fwAD


def _lstm_pair(dtype, **kw):
    torch.manual_seed(0)
    t = torch.nn.LSTM(5, 6, **kw).to(getattr(torch, dtype))
    e = ember.nn.LSTM(5, 6, **kw).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return e, t


@pytest.mark.parametrize("kw", [dict(batch_first=True), dict(bidirectional=True),
                                dict(num_layers=2, batch_first=True, bidirectional=True),
                                dict(bias=False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_fused_vs_torch(kw, dtype):
    e, t = _lstm_pair(dtype, **kw)
    rng = np.random.default_rng(0)
    D, L = 2 if kw.get("bidirectional") else 1, kw.get("num_layers", 1)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    h = rng.standard_normal((D * L, 3 if kw.get("batch_first") else 4, 6)).astype(dtype)
    c = rng.standard_normal(h.shape).astype(dtype)
    ins_e = [ember.tensor(a, requires_grad=True) for a in (x, h, c)]
    ins_t = [torch.tensor(a, requires_grad=True) for a in (x, h, c)]
    oe, (he, ce) = e(ins_e[0], tuple(ins_e[1:]))
    ot, (ht, ct) = t(ins_t[0], tuple(ins_t[1:]))
    assert type(oe.grad_fn).__name__ == type(ot.grad_fn).__name__   # torch's CPU nodes
    w = rng.standard_normal(ot.shape)
    (oe * ember.tensor(w, dtype=oe.dtype)).sum().add(he.sum() * 2 + (ce ** 2).sum()).backward()
    (ot * torch.tensor(w, dtype=ot.dtype)).sum().add(ht.sum() * 2 + (ct ** 2).sum()).backward()
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for a, b in ((oe, ot), (he, ht), (ce, ct)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for a, b in zip(ins_e, ins_t):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), err_msg=n, **tol)


@pytest.mark.parametrize("kw", [dict(batch_first=True), dict(bidirectional=True)])
def test_lstm_fused_gradgrad(kw):
    m = ember.nn.LSTM(3, 4, **kw).double()
    x = ember.randn(2, 3, 3, dtype=ember.float64, requires_grad=True)
    B = 2 if kw.get("batch_first") else 3
    h = ember.randn(2 if kw.get("bidirectional") else 1, B, 4, dtype=ember.float64,
                    requires_grad=True)

    def f(x, h):
        o, (hn, cn) = m(x, (h, h * 0.5))
        return (o ** 2).sum() + hn.sum() + (cn * cn).sum()
    assert ember.autograd.gradcheck(f, (x, h))
    assert ember.autograd.gradgradcheck(f, (x, h))


def test_lstm_fused_forward_ad_and_vmap():
    m = ember.nn.LSTM(3, 4, batch_first=True).double()
    x = ember.randn(2, 5, 3, dtype=ember.float64)
    v = ember.randn(2, 5, 3, dtype=ember.float64)
    with fwAD.dual_level():
        o, _ = m(fwAD.make_dual(x, v))
        tan = fwAD.unpack_dual(o).tangent
    eps = 1e-6
    fd = (m(x + eps * v)[0] - m(x - eps * v)[0]) / (2 * eps)
    np.testing.assert_allclose(tan.detach().numpy(), fd.detach().numpy(), atol=1e-7)
    xs = ember.randn(3, 2, 5, 3, dtype=ember.float64)
    got = ember.func.vmap(lambda a: m(a)[0])(xs)
    want = ember.stack([m(a)[0] for a in xs])
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)


@pytest.fixture(params=["numpy", "numba"])
def rnn_path(request):
    """The layer kernels' step loops on NumPy, or on the compiled numba kernels."""
    yield from compiled_kernels(request.param)


@pytest.mark.parametrize("T,B,H", [(1, 1, 1), (4, 1, 1), (3, 2, 1), (1, 3, 2), (5, 2, 3),
                                   (0, 2, 3)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_kernels_edge_shapes_vs_torch(T, B, H, reverse, batch_first, dtype, rnn_path):
    """The kernels directly: tiny shapes, both directions and layouts, saturating gate
    pre-activations (exp overflow / tanh at +-1) without warnings, vs torch's LSTM cell."""
    import warnings
    from ember._kernels import rnn_fused as R
    rng = np.random.default_rng(T * 100 + B * 10 + H)
    E = 3
    x = rng.standard_normal((T, B, E)) * 3
    if T:
        x.reshape(-1)[::3] = -200.0     # sigmoid -> 0, tanh -> -1
        x.reshape(-1)[1::5] = 150.0
    h0, c0 = rng.standard_normal((2, B, H))
    w_ih, w_hh = rng.standard_normal((4 * H, E)), rng.standard_normal((4 * H, H)) * 0.5
    b_ih, b_hh = rng.standard_normal((2, 4 * H))
    g_out, g_h, g_c = rng.standard_normal((T, B, H)), *rng.standard_normal((2, B, H))
    cast = (lambda a: np.ascontiguousarray(a.swapaxes(0, 1), dtype)) if batch_first else \
        (lambda a: a.astype(dtype))
    args = [a.astype(dtype) for a in (h0, c0, w_ih, w_hh, b_ih, b_hh)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, hn, cn, ws = R.lstm_layer(cast(x), *args, reverse, batch_first)
        grads = R.lstm_layer_backward(cast(g_out), g_h.astype(dtype), g_c.astype(dtype),
                                      cast(x), *args[:4], out, ws, reverse, batch_first)
    # reference: the LSTM equations in torch float64, autograd for the gradients
    tx, th0, tc0, twi, twh, tbi, tbh = (torch.tensor(a, requires_grad=True)
                                        for a in (x, h0, c0, w_ih, w_hh, b_ih, b_hh))
    h, c, outs = th0, tc0, [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        i, f, g, o = (tx[t] @ twi.T + tbi + h @ twh.T + tbh).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs[t] = h
    tout = torch.stack(outs) if T else torch.zeros(0, B, H, dtype=torch.float64)
    loss = (tout * torch.tensor(g_out)).sum() + (h * torch.tensor(g_h)).sum() + \
        (c * torch.tensor(g_c)).sum()
    ref = torch.autograd.grad(loss, (tx, th0, tc0, twi, twh, tbh), allow_unused=True)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    assert out.dtype == hn.dtype == cn.dtype == np.dtype(dtype)
    unswap = (lambda a: a.swapaxes(0, 1)) if batch_first else (lambda a: a)
    np.testing.assert_allclose(unswap(out), tout.detach().numpy(), **tol)
    np.testing.assert_allclose(hn, h.detach().numpy(), **tol)
    np.testing.assert_allclose(cn, c.detach().numpy(), **tol)
    for got, want in zip((unswap(grads[0]),) + tuple(grads[1:]), ref):
        want = np.zeros(got.shape) if want is None else want.numpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, **tol)


def test_lstm_fused_seen_by_profiler():
    m = ember.nn.LSTM(3, 4)
    x = ember.randn(5, 2, 3, requires_grad=True)
    with ember.profiler.profile() as prof:
        m(x)[0].sum().backward()
    names = {ev.key for ev in prof.key_averages()}
    assert {"aten::_lstm_layer", "aten::_lstm_layer_backward"} <= names


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((4, 7), 1), ((3, 4, 5), 0), ((3, 4, 5), -2),
                                       ((), 0), ((0, 3), 1)])
def test_softmax_fused_backward_vs_torch(name, shape, dim):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape) * 3
    w = rng.standard_normal(shape)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (getattr(ember, name)(e, dim) * ember.tensor(w)).sum().backward()
    (getattr(torch, name)(t, dim) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)
    # the differentiable path (create_graph) agrees with the fused one
    e2 = ember.tensor(x, requires_grad=True)
    (g,) = ember.autograd.grad((getattr(ember, name)(e2, dim) * ember.tensor(w)).sum(), e2,
                               create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), e.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_softmax_fused_backward_float32_with_dtype():
    x = np.random.default_rng(2).standard_normal((6, 9)).astype(np.float32)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ember.log_softmax(e, 1, dtype=ember.float64).sum().backward()
    torch.log_softmax(t, 1, dtype=torch.float64).sum().backward()
    assert e.grad.dtype == ember.float32
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("affine", [(True, True), (True, False), (False, True),
                                    (False, False)])
@pytest.mark.parametrize("shape,norm", [((4, 6, 8), (8,)), ((3, 5, 4), (5, 4)), ((7,), (7,))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_fused_backward_vs_torch(affine, shape, norm, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2 + 1).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    ws = [rng.standard_normal(norm).astype(dtype) if on else None for on in affine]
    e_in = [ember.tensor(a, requires_grad=True) if a is not None else None for a in [x] + ws]
    t_in = [torch.tensor(a, requires_grad=True) if a is not None else None for a in [x] + ws]
    ye = ember.nn.functional.layer_norm(e_in[0], norm, e_in[1], e_in[2])
    yt = torch.nn.functional.layer_norm(t_in[0], norm, t_in[1], t_in[2])
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), **tol)
    (ye * ember.tensor(g)).sum().backward()
    (yt * torch.tensor(g)).sum().backward()
    for a, b in zip(e_in, t_in):
        if a is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    # the differentiable path (create_graph) agrees with the fused kernel
    x2 = ember.tensor(x, requires_grad=True)
    (gx,) = ember.autograd.grad(
        (ember.nn.functional.layer_norm(x2, norm, e_in[1], e_in[2]) * ember.tensor(g)).sum(),
        x2, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), e_in[0].grad.numpy(), **tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_fused_vs_torch(reduction, ignore_index, dtype):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((9, 6)) * 3).astype(dtype)
    t = rng.integers(0, 6, 9)
    t[[1, 4]] = 2
    e, tt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    le = ember.nn.functional.cross_entropy(e, ember.tensor(t), reduction=reduction,
                                           ignore_index=ignore_index)
    lt = torch.nn.functional.cross_entropy(tt, torch.tensor(t), reduction=reduction,
                                           ignore_index=ignore_index)
    assert type(le.grad_fn).__name__ == "NllLossBackward0"
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), **tol)
    w = rng.standard_normal(tuple(lt.shape))
    (le * ember.tensor(w, dtype=le.dtype)).sum().backward()
    (lt * torch.tensor(w, dtype=lt.dtype)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), tt.grad.numpy(), **tol)


def test_cross_entropy_fused_gradgrad_and_forward_ad():
    x = ember.randn(6, 4, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([0, 3, 1, 1, 2, -100])
    for red in ("mean", "sum", "none"):
        def f(x):
            return ember.nn.functional.cross_entropy(x, t, reduction=red)
        assert ember.autograd.gradcheck(f, (x,))
        assert ember.autograd.gradgradcheck(f, (x,))
    v = ember.randn(6, 4, dtype=ember.float64)
    with fwAD.dual_level():
        tan = fwAD.unpack_dual(ember.nn.functional.cross_entropy(
            fwAD.make_dual(x.detach(), v), t)).tangent
    eps = 1e-6
    fd = (ember.nn.functional.cross_entropy(x.detach() + eps * v, t)
          - ember.nn.functional.cross_entropy(x.detach() - eps * v, t)) / (2 * eps)
    assert abs(float(tan) - float(fd)) < 1e-7


def test_cross_entropy_all_ignored_is_nan_like_torch():
    x = np.random.default_rng(5).standard_normal((3, 4))
    t = np.array([-100] * 3)
    got = ember.nn.functional.cross_entropy(ember.tensor(x), ember.tensor(t))
    want = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(t))
    assert np.isnan(float(got)) and np.isnan(float(want))


def test_embedding_fused_backward_vs_torch():
    rng = np.random.default_rng(6)
    w = rng.standard_normal((10, 4))
    idx = np.array([[1, 2, 1], [9, 0, 1]])
    e, t = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    oe = ember.nn.functional.embedding(ember.tensor(idx), e)
    ot = torch.nn.functional.embedding(torch.tensor(idx), t)
    assert type(oe.grad_fn).__name__ == type(ot.grad_fn).__name__ == "EmbeddingBackward0"
    g = rng.standard_normal((2, 3, 4))
    (oe * ember.tensor(g)).sum().backward()
    (ot * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)

    def f(w):
        return (ember.nn.functional.embedding(ember.tensor(idx), w) ** 2).sum()
    w2 = ember.tensor(w, requires_grad=True)
    assert ember.autograd.gradcheck(f, (w2,))
    assert ember.autograd.gradgradcheck(f, (w2,))


@pytest.mark.parametrize("kind", ["few repeats", "many repeats"])
def test_embedding_backward_kernel_vs_sequential_sums(kind):
    """Both strategies of the kernel (a scatter per k-th repeat, runs reduced at once) give
    each index's row sum, float32 and float64, against sequential float64 sums."""
    from ember._kernels import nn_fused as K
    rng = np.random.default_rng(7)
    V = 50
    idx = rng.integers(0, V, (6, 7)) if kind == "few repeats" else \
        np.minimum(rng.zipf(1.5, (6, 7)), V) - 1
    g = rng.standard_normal((6, 7, 3))
    want = np.zeros((V, 3))
    for i, row in zip(idx.reshape(-1), g.reshape(-1, 3)):
        want[i] += row
    for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        got = K.embedding_backward(g.astype(dt), idx, V)
        assert got.dtype == dt
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_non_finite_and_ignored_rows_match_torch(reduction):
    x = np.random.default_rng(7).standard_normal((7, 5)).astype(np.float32)
    x[1, 2] = np.inf                 # a +inf logit: the row's log_softmax is NaN
    x[2, :] = -np.inf                # a row of -inf
    x[3, 0] = np.nan                 # NaN in an ignored row: its loss is still 0
    t = np.array([0, 2, 1, -100, 4, 3, -100])
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    le = ember.nn.functional.cross_entropy(ex, ember.tensor(t), reduction=reduction)
    lt = torch.nn.functional.cross_entropy(tx, torch.tensor(t), reduction=reduction)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-6,
                               equal_nan=True)
    le.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7,
                               equal_nan=True)


def test_fused_cross_entropy_traced_saves_for_torch(tmp_path):
    """The record's third output (the softmax workspace) does not break jit.save: torch
    loads the traced loss and gives ember's value."""
    class Loss(ember.nn.Module):
        def forward(self, x, t):
            return ember.nn.functional.cross_entropy(x, t)
    x, t = ember.randn(4, 5), ember.tensor([0, 1, 2, 3])
    path = str(tmp_path / "ce.pt")
    ember.jit.save(ember.jit.trace(Loss(), (x, t)), path)
    got = torch.jit.load(path)(torch.from_numpy(x.numpy()), torch.from_numpy(t.numpy()))
    np.testing.assert_allclose(got.numpy(), Loss()(x, t).numpy(), rtol=1e-6)


@pytest.mark.parametrize("offset,spread", [(1e5, 1e-2), (-3e7, 30.0), (1e3, 1.0), (0.0, 1e-2)])
@pytest.mark.parametrize("rows", [3, 1024])
def test_layer_norm_rows_far_from_zero_keep_their_variance(offset, spread, rows):
    """The compiled kernel's one-pass statistics (shifted by the row's first element) keep
    the variance of rows whose mean dwarfs their spread; the reference rounds the float64
    statistics to float32 and normalises in float32, as the kernel does."""
    pytest.importorskip("numba")
    for _ in compiled_kernels("numba"):
        rng = np.random.default_rng(7)
        x = (offset + spread * rng.standard_normal((rows, 128))).astype(np.float32)
        eps = 1e-12
        x64 = x.astype(np.float64)
        mean = x64.mean(1, keepdims=True)
        rstd = 1.0 / np.sqrt(((x64 - mean) ** 2).mean(1, keepdims=True) + eps)
        want = (x - mean.astype(np.float32)) * rstd.astype(np.float32)
        got = ember.nn.functional.layer_norm(ember.tensor(x), (128,), eps=eps).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got.std(1), 1.0, rtol=1e-3)
