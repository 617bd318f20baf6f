"""The one-record cells (ember/_ops/rnn_cell.py, kernels in ember/_kernels/rnn_cell.py)
behind nn.LSTMCell / GRUCell / RNNCell: values and gradients vs torch with copied weights
(bias or not, hx given or not, batched or not, float32 / float64; gate passes on NumPy and
on numba), float64 gradcheck and
gradgradcheck, double backward and forward-mode AD vs torch, vmap and the profiler, and
the composite path where the record cannot run."""
import numpy as np
import pytest

import ember
from helpers import compiled_kernels
from ember.autograd import forward_ad as fwAD

torch = pytest.importorskip("torch")

CELLS = [("LSTMCell", {}), ("GRUCell", {}), ("RNNCell", {}),
         ("RNNCell", {"nonlinearity": "relu"})]
RECORDS = {"LSTMCell": "_lstm_cell", "GRUCell": "_gru_cell", "RNNCell": "_rnn_tanh_cell"}


@pytest.fixture(params=["numpy", "numba"])
def cell_path(request):
    """The kernels' gate passes on NumPy, or on the compiled numba kernels."""
    yield from compiled_kernels(request.param)


def _pair(name, kw, dtype, E=5, H=6):
    torch.manual_seed(0)
    t = getattr(torch.nn, name)(E, H, **kw).to(getattr(torch, dtype))
    e = getattr(ember.nn, name)(E, H, **kw).to(getattr(ember, dtype))
    e.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                       for k, v in t.state_dict().items()})
    return e, t


def _states(name, shape, dtype, rng):
    n = 2 if name == "LSTMCell" else 1
    return [rng.standard_normal(shape).astype(dtype) for _ in range(n)]


def _call(cell, x, hs):
    """The cell's outputs as a tuple (LSTM: (h, c))."""
    if hs is None:
        out = cell(x)
    else:
        out = cell(x, tuple(hs) if len(hs) == 2 else hs[0])
    return out if isinstance(out, tuple) else (out,)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("name,kw", CELLS)
def test_cell_vs_torch(name, kw, bias, with_hx, batched, dtype, cell_path):
    e, t = _pair(name, dict(kw, bias=bias), dtype)
    rng = np.random.default_rng(1)
    lead = (3,) if batched else ()
    x = rng.standard_normal(lead + (5,)).astype(dtype)
    hs = _states(name, lead + (6,), dtype, rng) if with_hx else None
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    he = None if hs is None else [ember.tensor(h, requires_grad=True) for h in hs]
    ht = None if hs is None else [torch.tensor(h, requires_grad=True) for h in hs]
    oe, ot = _call(e, xe, he), _call(t, xt, ht)
    record = RECORDS[name] if kw.get("nonlinearity") != "relu" else "_rnn_relu_cell"
    for a, b in zip(oe, ot):                 # torch's CPU node names (h, and LSTM's c)
        assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__
    if batched:                              # unbatched: a squeeze on top of the record
        assert oe[0].grad_fn.op.name == record
    ws = [rng.standard_normal(o.shape).astype(dtype) for o in ot]
    for a, b in zip(oe, ot):
        assert a.shape == tuple(b.shape) and a.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **_tol(dtype))
    sum((o * ember.from_numpy(w)).sum() for o, w in zip(oe, ws)).backward()
    sum((o * torch.from_numpy(w)).sum() for o, w in zip(ot, ws)).backward()
    pairs = [(xe, xt)] + ([] if hs is None else list(zip(he, ht)))
    pairs += [(getattr(e, k), getattr(t, k)) for k, _ in t.named_parameters()]
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("name,kw", CELLS)
def test_gradient_of_one_output_and_loop(name, kw, cell_path):
    """A step loop (the time_sequence_prediction shape) with only h used downstream:
    every gradient equals torch's; for LSTM c's gradient arrives as None at the last step."""
    e, t = _pair(name, kw, "float64", E=4, H=5)
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((6, 2, 4))

    def run(lib, cell):
        h = lib.zeros(2, 5, dtype=lib.float64)
        hs = [h, lib.zeros(2, 5, dtype=lib.float64)] if name == "LSTMCell" else [h]
        total = 0
        for x in lib.from_numpy(xs.copy()).split(1, 0):
            hs = list(_call(cell, x[0], hs))
            total = total + (hs[0] ** 2).sum()
        total.backward()
        return total.item(), [p.grad.numpy().copy() for p in cell.parameters()]

    le, ge = run(ember, e)
    lt, gt = run(torch, t)
    assert abs(le - lt) < 1e-12
    for a, b in zip(ge, gt):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name,kw", CELLS)
def test_gradcheck_and_gradgradcheck(name, kw, cell_path):
    e, _ = _pair(name, dict(kw), "float64", E=3, H=2)
    rng = np.random.default_rng(3)
    x = ember.tensor(rng.standard_normal((2, 3)) + 0.3, requires_grad=True)
    hs = [ember.tensor(h, requires_grad=True) for h in _states(name, (2, 2), "float64", rng)]
    params = [e.weight_ih, e.weight_hh, e.bias_ih, e.bias_hh]

    def f(x, *rest):
        hs, (wi, wh, bi, bh) = rest[:-4], rest[-4:]
        mod = e.__class__.__name__
        from ember.nn.modules import rnn
        if mod == "LSTMCell":
            return rnn._cell("LSTM", x, hs[0], hs[1], wi, wh, bi, bh)
        mode = "GRU" if mod == "GRUCell" else "RNN_" + e.nonlinearity.upper()
        return rnn._cell(mode, x, hs[0], None, wi, wh, bi, bh)[0]

    inputs = (x, *hs, *[p.detach().double().requires_grad_() for p in params])
    assert ember.autograd.gradcheck(f, inputs)
    assert ember.autograd.gradgradcheck(f, inputs)


@pytest.mark.parametrize("name,kw", CELLS)
def test_double_backward_vs_torch(name, kw):
    """create_graph through the record: the gradient's own gradient equals torch's."""
    e, t = _pair(name, kw, "float64")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 5))
    hs = _states(name, (3, 6), "float64", rng)

    def second(lib, cell):
        xl = lib.tensor(x, requires_grad=True)
        hl = [lib.tensor(h, requires_grad=True) for h in hs]
        out = _call(cell, xl, hl)
        loss = sum((o ** 3).sum() for o in out)
        wanted = [xl, *hl, cell.weight_hh, cell.bias_ih]
        g = lib.autograd.grad(loss, wanted, create_graph=True)
        gg = lib.autograd.grad(sum((v * v).sum() for v in g), [xl, cell.weight_ih])
        return [v.detach().numpy() for v in g + gg]

    for a, b in zip(second(ember, e), second(torch, t)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("name,kw", CELLS)
def test_forward_mode_ad_vs_torch(name, kw):
    """Forward-mode AD (a dispatch mode: the composite runs) gives torch's tangents."""
    e, t = _pair(name, kw, "float64")
    rng = np.random.default_rng(5)
    x, tx = rng.standard_normal((3, 5)), rng.standard_normal((3, 5))
    hs = _states(name, (3, 6), "float64", rng)
    ths = _states(name, (3, 6), "float64", rng)

    def tangents(lib, fw, cell):
        with fw.dual_level():
            xd = fw.make_dual(lib.tensor(x), lib.tensor(tx))
            hd = [fw.make_dual(lib.tensor(h), lib.tensor(th)) for h, th in zip(hs, ths)]
            return [fw.unpack_dual(o).tangent.detach().numpy().copy()
                    for o in _call(cell, xd, hd)]

    for a, b in zip(tangents(ember, fwAD, e), tangents(torch, torch.autograd.forward_ad, t)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name,kw", CELLS)
def test_vmap_matches_per_sample(name, kw):
    e, _ = _pair(name, kw, "float64")
    rng = np.random.default_rng(6)
    xs = ember.tensor(rng.standard_normal((4, 3, 5)))
    hs = [ember.tensor(h) for h in _states(name, (3, 6), "float64", rng)]
    batched = ember.func.vmap(lambda x: _call(e, x, hs)[0])(xs)
    for k in range(4):
        np.testing.assert_allclose(batched[k].detach().numpy(),
                                   _call(e, xs[k], hs)[0].detach().numpy(), rtol=1e-12)


def test_profiler_sees_one_record_per_step():
    cell = ember.nn.LSTMCell(3, 4)
    x = ember.randn(2, 3)
    from ember.profiler import profile
    with profile() as prof:
        h, c = cell(x)
        h, c = cell(x, (h, c))
        (h.sum() + c.sum()).backward()
    counts = {ev.key: ev.count for ev in prof.key_averages()}
    assert counts["aten::_lstm_cell"] == 2 and counts["aten::_lstm_cell_backward"] == 2
    assert "aten::sigmoid" not in counts


def test_outputs_writable_after_forward(cell_path):
    """The workspace, not h' or c', serves the backward: changing an output in place
    leaves the gradient of the other as torch's."""
    e, t = _pair("LSTMCell", {}, "float64")
    x = np.random.default_rng(7).standard_normal((3, 5))
    grads = []
    for lib, cell in ((ember, e), (torch, t)):
        xl = lib.tensor(x, requires_grad=True)
        h, c = cell(xl)
        h.mul_(2)
        (h.sum() + (c * c).sum()).backward()
        grads.append(xl.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12)


def test_composite_where_the_record_cannot_run():
    """Half precision and mixed dtypes take the composite (many records), with equal values
    where both run."""
    cell = ember.nn.GRUCell(3, 4).double()
    x, h = ember.randn(2, 3, dtype=ember.float64), ember.randn(2, 4, dtype=ember.float64)
    fused = cell(x, h)
    from ember._ops import rnn_cell
    assert not rnn_cell.fusable(x.half(), h.half(), None, cell.weight_ih, cell.weight_hh,
                                None, None)
    assert not rnn_cell.fusable(x.float(), h, None, cell.weight_ih, cell.weight_hh, None, None)
    from ember.nn.modules.rnn import _input_proj, _step
    xw = _input_proj("GRU", x, cell.weight_ih, cell.bias_ih, cell.bias_hh)
    composite, _ = _step("GRU", xw, h, None, cell.weight_hh.t(), cell.bias_hh, None)
    np.testing.assert_allclose(fused.detach().numpy(), composite.detach().numpy(), rtol=1e-13)
    half = ember.nn.GRUCell(3, 4).half()
    out = half(x.half(), h.half())
    assert out.dtype == ember.float16 and out.grad_fn.op.name != RECORDS["GRUCell"]


@pytest.mark.parametrize("name", ["LSTMCell", "GRUCell", "RNNCell"])
def test_shape_errors_as_torch(name):
    e, t = _pair(name, {}, "float32")
    for lib, cell in ((ember, e), (torch, t)):
        with pytest.raises(RuntimeError, match="input has inconsistent input_size"):
            cell(lib.zeros(2, 4))
        with pytest.raises(RuntimeError, match="batch size"):
            hx = lib.zeros(3, 6)
            cell(lib.zeros(2, 5), (hx, hx) if name == "LSTMCell" else hx)


def test_blas_threads_restored_around_held_gemms():
    """Mid-sized cells hold NumPy's OpenBLAS at one thread for their GEMMs (Note [cell
    GEMMs at one thread]) and give the caller's count back, with the same values."""
    from ember._kernels import numpy_blas
    before = numpy_blas.get_blas_threads()
    if before is None:
        pytest.skip("NumPy's OpenBLAS thread count is not reachable")
    cell = ember.nn.LSTMCell(51, 51).double()
    x = ember.randn(97, 51, dtype=ember.float64, requires_grad=True)
    try:
        numpy_blas.set_blas_threads(2)
        h, c = cell(x)
        (h.sum() + c.sum()).backward()
        assert numpy_blas.get_blas_threads() == 2
        numpy_blas.set_blas_threads(1)
        h1, c1 = cell(x)
    finally:
        numpy_blas.set_blas_threads(before)
    assert np.array_equal(h.detach().numpy(), h1.detach().numpy())


@pytest.mark.parametrize("frozen", ["weights", "bias", "input"])
@pytest.mark.parametrize("name,kw", CELLS)
def test_partial_requires_grad(name, kw, frozen, cell_path):
    """Gradients only where asked (frozen weights, biases or input), equal to torch's."""
    e, t = _pair(name, kw, "float64")
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5))
    hs = _states(name, (3, 6), "float64", rng)
    grads = []
    for lib, cell in ((ember, e), (torch, t)):
        for k, p in cell.named_parameters():
            p.requires_grad_(not (frozen == "weights" and k.startswith("weight")
                                  or frozen == "bias" and k.startswith("bias")))
        xl = lib.tensor(x, requires_grad=frozen != "input")
        hl = [lib.tensor(h, requires_grad=True) for h in hs]
        (sum((o * o).sum() for o in _call(cell, xl, hl))).backward()
        grads.append([None if v.grad is None else v.grad.numpy()
                      for v in [xl, *hl, *cell.parameters()]])
    for a, b in zip(*grads):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_records_reject_bad_operands():
    """The records called directly name themselves, the shapes and the dtypes."""
    from ember._ops import rnn_cell
    x, h = ember.zeros(2, 3), ember.zeros(2, 4)
    w_ih, w_hh, b = ember.zeros(16, 3), ember.zeros(16, 4), ember.zeros(16)
    with pytest.raises(RuntimeError, match=r"_lstm_cell\(\): inconsistent shapes.*bias_ih \[5\]"):
        rnn_cell.lstm_cell(x, h, h, w_ih, w_hh, ember.zeros(5), b)
    with pytest.raises(RuntimeError, match=r"_gru_cell\(\): inconsistent shapes"):
        rnn_cell.gru_cell(x, h, w_ih, w_hh, b, b)
    with pytest.raises(RuntimeError, match=r"_rnn_tanh_cell\(\): expected floating tensors "
                                           r"of one dtype, got float32, float64"):
        rnn_cell.rnn_tanh_cell(x, h.double(), ember.zeros(4, 3), ember.zeros(4, 4))
