"""The fused GRU record (ember/_ops/nn_fused.py ``_gru_layer``, kernels in
ember/_kernels/rnn_fused.py) and the fused LSTM / GRU paths through ember.nn: values and
gradients vs torch with copied weights, both step-loop paths (NumPy and numba), float64
gradcheck / gradgradcheck, forward-mode AD, dropout between layers in eval mode."""
import warnings

import numpy as np
import pytest
import torch

import ember
from helpers import compiled_kernels
from ember.autograd import forward_ad as fwAD


@pytest.fixture(params=["numpy", "numba"])
def rnn_path(request):
    """The layer kernels' step loops on NumPy, or on the compiled numba kernels."""
    yield from compiled_kernels(request.param)


def _pair(mode, dtype, **kw):
    torch.manual_seed(0)
    t = getattr(torch.nn, mode)(5, 6, **kw).to(getattr(torch, dtype))
    e = getattr(ember.nn, mode)(5, 6, **kw).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return e, t


@pytest.mark.parametrize("kw", [dict(), dict(batch_first=True), dict(bidirectional=True),
                                dict(num_layers=2, batch_first=True, bidirectional=True),
                                dict(num_layers=2, dropout=0.5), dict(bias=False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_fused_vs_torch(mode, kw, dtype, rnn_path):
    e, t = _pair(mode, dtype, **kw)
    e.eval()
    t.eval()                        # dropout between layers: off in eval, like torch
    rng = np.random.default_rng(1)
    D, L = 2 if kw.get("bidirectional") else 1, kw.get("num_layers", 1)
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    hs = [rng.standard_normal((D * L, 3 if kw.get("batch_first") else 4, 6)).astype(dtype)
          for _ in range(2 if mode == "LSTM" else 1)]
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    he = [ember.tensor(h, requires_grad=True) for h in hs]
    ht = [torch.tensor(h, requires_grad=True) for h in hs]
    oe, ne = e(xe, tuple(he) if mode == "LSTM" else he[0])
    ot, nt = t(xt, tuple(ht) if mode == "LSTM" else ht[0])
    ne = ne if mode == "LSTM" else (ne,)
    nt = nt if mode == "LSTM" else (nt,)
    assert type(oe.grad_fn).__name__ == type(ot.grad_fn).__name__   # torch's CPU nodes
    w = rng.standard_normal(ot.shape)
    le = (oe * ember.tensor(w, dtype=oe.dtype)).sum()
    lt = (ot * torch.tensor(w, dtype=ot.dtype)).sum()
    for k, (a, b) in enumerate(zip(ne, nt)):
        le, lt = le + (a ** 2).sum() * (k + 1), lt + (b ** 2).sum() * (k + 1)
    le.backward()
    lt.backward()
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    for a, b in [(oe, ot)] + list(zip(ne, nt)) + [(xe.grad, xt.grad)] + \
            [(a.grad, b.grad) for a, b in zip(he, ht)]:
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), err_msg=n, **tol)


@pytest.mark.parametrize("kw", [dict(batch_first=True), dict(bidirectional=True)])
def test_gru_fused_gradgrad(kw):
    m = ember.nn.GRU(3, 4, **kw).double()
    x = ember.randn(2, 3, 3, dtype=ember.float64, requires_grad=True)
    B = 2 if kw.get("batch_first") else 3
    h = ember.randn(2 if kw.get("bidirectional") else 1, B, 4, dtype=ember.float64,
                    requires_grad=True)

    def f(x, h):
        o, hn = m(x, h)
        return (o ** 2).sum() + (hn * hn).sum()
    assert ember.autograd.gradcheck(f, (x, h))
    assert ember.autograd.gradgradcheck(f, (x, h))


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_fused_parameter_gradgrad(mode):
    """Gradients and second derivatives w.r.t. every weight and bias (float64)."""
    m = getattr(ember.nn, mode)(3, 4).double()
    names = [n for n, _ in m.named_parameters()]
    x = ember.randn(3, 2, 3, dtype=ember.float64)

    def f(*p):
        o, _ = ember.func.functional_call(m, dict(zip(names, p)), (x,))
        return (o ** 2).sum()
    ps = [p.detach().clone().requires_grad_() for p in m.parameters()]
    assert ember.autograd.gradcheck(f, ps)
    assert ember.autograd.gradgradcheck(f, ps)


def test_gru_fused_forward_ad():
    m = ember.nn.GRU(3, 4, batch_first=True).double()
    x = ember.randn(2, 5, 3, dtype=ember.float64)
    v = ember.randn(2, 5, 3, dtype=ember.float64)
    with fwAD.dual_level():
        o, _ = m(fwAD.make_dual(x, v))
        tan = fwAD.unpack_dual(o).tangent
    eps = 1e-6
    fd = (m(x + eps * v)[0] - m(x - eps * v)[0]) / (2 * eps)
    np.testing.assert_allclose(tan.detach().numpy(), fd.detach().numpy(), atol=1e-7)


@pytest.mark.parametrize("T,B,H", [(1, 1, 1), (4, 1, 1), (3, 2, 1), (5, 2, 3), (0, 2, 3)])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gru_kernels_edge_shapes_vs_torch(T, B, H, reverse, batch_first, dtype, rnn_path):
    """The kernels directly: tiny shapes, both directions and layouts, saturating gates
    without warnings, vs the GRU equations in torch float64."""
    from ember._kernels import rnn_fused as R
    rng = np.random.default_rng(T * 100 + B * 10 + H)
    E = 3
    x = rng.standard_normal((T, B, E)) * 3
    if T:
        x.reshape(-1)[::3] = -200.0
        x.reshape(-1)[1::5] = 150.0
    h0 = rng.standard_normal((B, H))
    w_ih, w_hh = rng.standard_normal((3 * H, E)), rng.standard_normal((3 * H, H)) * 0.5
    b_ih, b_hh = rng.standard_normal((2, 3 * H))
    g_out, g_h = rng.standard_normal((T, B, H)), rng.standard_normal((B, H))
    cast = (lambda a: np.ascontiguousarray(a.swapaxes(0, 1), dtype)) if batch_first else \
        (lambda a: a.astype(dtype))
    args = [a.astype(dtype) for a in (h0, w_ih, w_hh, b_ih, b_hh)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out, hn, ws = R.gru_layer(cast(x), *args, reverse, batch_first)
        grads = R.gru_layer_backward(cast(g_out), g_h.astype(dtype), cast(x), *args[:3], out,
                                     ws, reverse, batch_first)
    tx, th0, twi, twh, tbi, tbh = (torch.tensor(a, requires_grad=True)
                                   for a in (x, h0, w_ih, w_hh, b_ih, b_hh))
    h, outs = th0, [None] * T
    for t in (range(T - 1, -1, -1) if reverse else range(T)):
        xr, xz, xn = (tx[t] @ twi.T + tbi).chunk(3, 1)
        hr, hz, hn_ = (h @ twh.T + tbh).chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        n = torch.tanh(xn + r * hn_)
        h = (1 - z) * n + z * h
        outs[t] = h
    tout = torch.stack(outs) if T else torch.zeros(0, B, H, dtype=torch.float64)
    loss = (tout * torch.tensor(g_out)).sum() + (h * torch.tensor(g_h)).sum()
    ref = torch.autograd.grad(loss, (tx, th0, twi, twh, tbi, tbh), allow_unused=True)
    tol = dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    unswap = (lambda a: a.swapaxes(0, 1)) if batch_first else (lambda a: a)
    assert out.dtype == hn.dtype == np.dtype(dtype)
    np.testing.assert_allclose(unswap(out), tout.detach().numpy(), **tol)
    np.testing.assert_allclose(hn, h.detach().numpy(), **tol)
    for got, want in zip((unswap(grads[0]),) + tuple(grads[1:]), ref):
        want = np.zeros(got.shape) if want is None else want.numpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, **tol)


def test_gru_fused_seen_by_profiler():
    m = ember.nn.GRU(3, 4)
    x = ember.randn(5, 2, 3, requires_grad=True)
    with ember.profiler.profile() as prof:
        m(x)[0].sum().backward()
    names = {ev.key for ev in prof.key_averages()}
    assert {"aten::_gru_layer", "aten::_gru_layer_backward"} <= names


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
@pytest.mark.parametrize("kw", [dict(), dict(num_layers=2, bidirectional=True)])
def test_fused_packed_vs_torch(mode, kw, rnn_path):
    """Packed batches run the fused records (ended / not yet started sequences keep their
    state): outputs, final states and every gradient vs torch, float64."""
    from ember.nn.utils import rnn as eru
    from torch.nn.utils import rnn as tru
    e, t = _pair(mode, "float64", **kw)
    rng = np.random.default_rng(2)
    lengths = [3, 5, 1, 5]
    x = rng.standard_normal((5, 4, 5))
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with ember.profiler.profile() as prof:
        oe, ne = e(eru.pack_padded_sequence(xe, lengths, enforce_sorted=False))
    assert f"aten::_{mode.lower()}_layer" in {ev.key for ev in prof.key_averages()}
    ot, nt = t(tru.pack_padded_sequence(xt, lengths, enforce_sorted=False))
    ne = ne if mode == "LSTM" else (ne,)
    nt = nt if mode == "LSTM" else (nt,)
    w = rng.standard_normal(tuple(ot.data.shape))
    le = (oe.data * ember.tensor(w)).sum() + sum((a ** 2).sum() for a in ne)
    lt = (ot.data * torch.tensor(w)).sum() + sum((a ** 2).sum() for a in nt)
    le.backward()
    lt.backward()
    tol = dict(rtol=1e-10, atol=1e-10)
    for a, b in [(oe.data, ot.data), (xe.grad, xt.grad)] + list(zip(ne, nt)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), err_msg=n, **tol)


@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_fused_packed_gradgrad(mode):
    from ember.nn.utils import rnn as eru
    m = getattr(ember.nn, mode)(2, 3, bidirectional=True).double()
    x = ember.randn(4, 3, 2, dtype=ember.float64, requires_grad=True)

    def f(x):
        o, _ = m(eru.pack_padded_sequence(x, [4, 2, 1]))
        return (o.data ** 2).sum()
    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("kw", [dict(proj_size=3), dict(proj_size=2, num_layers=2,
                                                         bidirectional=True,
                                                         batch_first=True)])
@pytest.mark.parametrize("packed", [False, True])
def test_fused_lstm_projection_vs_torch(kw, packed, rnn_path):
    """LSTM with proj_size on the fused record (h = W_hr (o tanh c)), padded and packed:
    outputs, states and every gradient (weight_hr's too) vs torch, float64."""
    from ember.nn.utils import rnn as eru
    from torch.nn.utils import rnn as tru
    e, t = _pair("LSTM", "float64", **kw)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5, 5))
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    bf = kw.get("batch_first", False)
    with ember.profiler.profile() as prof:
        ie = eru.pack_padded_sequence(xe, [5, 3, 2, 2] if bf else [4, 4, 3, 1, 1],
                                      batch_first=bf) if packed else xe
        oe, ne = e(ie)
    assert "aten::_lstm_layer" in {ev.key for ev in prof.key_averages()}
    it = tru.pack_padded_sequence(xt, [5, 3, 2, 2] if bf else [4, 4, 3, 1, 1],
                                  batch_first=bf) if packed else xt
    ot, nt = t(it)
    oe, ot = (oe.data, ot.data) if packed else (oe, ot)
    w = rng.standard_normal(tuple(ot.shape))
    ((oe * ember.tensor(w)).sum() + (ne[0] ** 2).sum() + ne[1].sum()).backward()
    ((ot * torch.tensor(w)).sum() + (nt[0] ** 2).sum() + nt[1].sum()).backward()
    tol = dict(rtol=1e-10, atol=1e-10)
    for a, b in [(oe, ot), (xe.grad, xt.grad)] + list(zip(ne, nt)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for (n, pe), (_, pt) in zip(e.named_parameters(), t.named_parameters()):
        np.testing.assert_allclose(pe.grad.numpy(), pt.grad.numpy(), err_msg=n, **tol)


def test_fused_lstm_projection_gradgrad():
    m = ember.nn.LSTM(3, 4, proj_size=2).double()
    names = [n for n, _ in m.named_parameters()]
    x = ember.randn(3, 2, 3, dtype=ember.float64, requires_grad=True)

    def f(x, *p):
        o, (h, c) = ember.func.functional_call(m, dict(zip(names, p)), (x,))
        return (o ** 2).sum() + (c ** 2).sum()
    ps = [p.detach().clone().requires_grad_() for p in m.parameters()]
    assert ember.autograd.gradcheck(f, (x, *ps))
    assert ember.autograd.gradgradcheck(f, (x, *ps))


@pytest.mark.parametrize("kw, packed", [(dict(), False), (dict(batch_first=True), False),
                                        (dict(num_layers=2, bidirectional=True), False),
                                        (dict(batch_first=True), True)])
def test_lstm_steps_on_pool_bits(kw, packed, monkeypatch):
    """Note [LSTM steps on the pool]: float32 steps of (H, B) = (128, 32) split over
    OpenBLAS's threads give the caller-thread kernel's bits, and torch's values, forward and
    backward (packed batches too)."""
    from ember._kernels import blas_pool, rnn_fused
    from ember.nn.utils import rnn as eru
    from torch.nn.utils import rnn as tru
    if rnn_fused._compiled() is None or blas_pool.kernels() is None:
        pytest.skip("needs numba and OpenBLAS's pool")
    torch.manual_seed(0)
    t = torch.nn.LSTM(16, 128, **kw)
    e = ember.nn.LSTM(16, 128, **kw)
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    rng = np.random.default_rng(3)
    shape = (32, 7, 16) if kw.get("batch_first") else (7, 32, 16)
    x = rng.standard_normal(shape).astype(np.float32)
    lengths = sorted(rng.integers(1, 8, 32).tolist(), reverse=True)

    def run(lib, mod):
        xi = lib.tensor(x, requires_grad=True)
        inp = xi
        if packed:
            ru = eru if lib is ember else tru
            inp = ru.pack_padded_sequence(xi, lengths, batch_first=True)
        out, (hn, cn) = mod(inp)
        o = out.data if packed else out
        w = lib.tensor(np.cos(np.arange(o.numel(), dtype=np.float32)).reshape(o.shape))
        ((o * w).sum() + (hn ** 2).sum() + cn.sum() * 0.5).backward()
        return [o, hn, cn, xi.grad] + [p.grad for p in mod.parameters()]

    calls = []
    real = rnn_fused._run_step
    monkeypatch.setattr(rnn_fused, "_run_step", lambda *a: (calls.append(1), real(*a)))
    pooled = [a.detach().numpy().copy() for a in run(ember, e)]
    assert calls                                   # the pool ran the steps
    e.zero_grad()
    monkeypatch.setattr(rnn_fused, "_step_pool", lambda *a: None)
    alone = [a.detach().numpy() for a in run(ember, e)]
    for a, b in zip(pooled, alone):
        np.testing.assert_array_equal(a, b)
    for k, (a, b) in enumerate(zip(pooled, run(torch, t))):
        np.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-4, atol=1e-4, err_msg=k)
