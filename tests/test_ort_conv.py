"""float32 convolutions on onnxruntime (ember/_kernels/ort_conv.py) against the NumPy path
and torch: forward, input and weight gradients, strides/padding/dilation/groups, 1-3 d."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember._kernels import ort_conv

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

F = ember.nn.functional

# (x shape, w shape, stride, padding, dilation, groups)
CASES = [
    ((3, 4, 71), (6, 4, 3), 1, 1, 1, 1),
    ((2, 6, 67), (4, 3, 5), 3, 2, 1, 2),
    ((2, 3, 9, 10), (5, 3, 3, 3), 1, 1, 1, 1),
    ((2, 6, 13, 12), (9, 2, 3, 2), 2, (1, 0), (2, 1), 3),
    ((1, 4, 8, 9), (4, 1, 3, 3), (2, 1), 2, 1, 4),          # depthwise
    ((1, 2, 5, 6, 7), (3, 2, 2, 3, 2), (1, 2, 1), 1, (2, 1, 1), 1),
    ((2, 5, 7, 8), (3, 5, 1, 1), 1, 0, 1, 1),                # 1x1: NumPy's
    ((2, 8, 7, 7), (4, 8, 3, 3), 1, 1, 1, 1),                # under 64 pixels: NumPy's
]


def _close(got, ref):
    """Within float32 rounding, scaled by the result's magnitude."""
    ref = np.asarray(ref, np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * max(np.abs(ref).max(), 1))


def _run(x, w, b, stride, padding, dilation, groups, gy):
    fn = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.ndim]
    ex, ew, eb = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    y = fn(ex, ew, eb, stride, padding, dilation, groups)
    y.backward(ember.tensor(gy))
    return y.detach().numpy(), ex.grad.numpy(), ew.grad.numpy(), eb.grad.numpy()


def _torch(x, w, b, stride, padding, dilation, groups, gy=None):
    fn = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d,
          5: torch.nn.functional.conv3d}[x.ndim]
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    y = fn(tx, tw, tb, stride, padding, dilation, groups)
    if gy is None:
        return y.detach().numpy()
    y.backward(torch.tensor(gy))
    return y.detach().numpy(), tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()


@pytest.fixture
def calls(monkeypatch):
    """Counts the onnxruntime kernels run (the ORT path switched on)."""
    monkeypatch.setitem(ort_conv._state, "enabled", True)
    seen = []
    for name in ("forward", "transpose", "weight_grad", "gemm_nt"):
        real = getattr(ort_conv, name)
        monkeypatch.setattr(ort_conv, name,
                            lambda *a, _r=real, _n=name, **k: seen.append(_n) or _r(*a, **k))
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[1])))
def test_conv_ort_vs_numpy_vs_torch(case, calls, monkeypatch):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(len(xs) + ws[0])
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    gy = rng.standard_normal(_torch(x, w, b, stride, padding, dilation, groups).shape)
    gy = gy.astype(np.float32)
    ref = _torch(x, w, b, stride, padding, dilation, groups, gy)
    ort = _run(x, w, b, stride, padding, dilation, groups, gy)
    on_ort = ws[2:] != (1, 1) and np.prod(xs[2:]) >= 64
    route = ["forward", "transpose"] if on_ort else []
    # the weight gradient's GEMM: beside the input gradient (2+ threads), or deep columns
    # of an image large enough for the other convolutions to run there too
    from ember._kernels import nn_conv
    concurrent = ember.get_num_threads() >= 2 and \
        nn_conv._concurrent(x, gy, w, np.dtype(np.float32), groups)
    deep = np.prod(ws[1:]) >= 64 and np.prod(xs[2:]) >= 64
    route += ["gemm_nt"] if groups == 1 and (concurrent or deep) else []
    assert sorted(calls) == sorted(route)           # input/weight gradients may overlap
    monkeypatch.setitem(ort_conv._state, "enabled", False)
    numpy_path = _run(x, w, b, stride, padding, dilation, groups, gy)
    assert sorted(calls) == sorted(route)
    for got_ort, got_np, want in zip(ort, numpy_path, ref):
        assert got_ort.dtype == np.float32
        _close(got_ort, want)
        _close(got_np, want)


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[1])))
def test_weight_grad_kernel_vs_torch(case):
    """The swapped-axes Conv weight gradient (kept, not dispatched: slower where measured)."""
    xs, ws, stride, padding, dilation, groups = case
    n = len(xs) - 2
    st, pd, dl = (list(v) if isinstance(v, tuple) else [v] * n
                  for v in (stride, padding, dilation))
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = np.zeros(ws[0], np.float32)
    gy = rng.standard_normal(_torch(x, w, b, stride, padding, dilation, groups).shape)
    gy = gy.astype(np.float32)
    want = _torch(x, w, b, stride, padding, dilation, groups, gy)[2]
    _close(ort_conv.weight_grad(x, gy, list(ws), st, pd, dl, groups), want)


@pytest.mark.parametrize("stride,padding,output_padding,dilation,groups",
                         [(2, 1, 1, 1, 1), (3, 0, 2, 1, 2), (1, 2, 0, 2, 1),
                          (1, 1, 1, 2, 1)])      # output_padding >= stride: NumPy's
def test_conv_transpose2d(stride, padding, output_padding, dilation, groups, calls):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 10, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    b = rng.standard_normal(3 * groups).astype(np.float32)
    got = F.conv_transpose2d(ember.tensor(x), ember.tensor(w), ember.tensor(b), stride,
                             padding, output_padding, groups, dilation).numpy()
    want = torch.nn.functional.conv_transpose2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), stride, padding, output_padding,
        groups, dilation).numpy()
    assert calls == (["transpose"] if output_padding < stride else [])
    _close(got, want)


def test_float64_stays_numpy_and_gradchecks(calls):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 4, 6, 5)), requires_grad=True)
    w = ember.tensor(rng.standard_normal((6, 2, 3, 2)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: F.conv2d(a, b, None, 2, 1, (1, 2), 2),
                                    (x, w))
    assert calls == []


def test_repeatable_bit_for_bit(calls):
    """Same threads, same split: identical bits run to run (deterministic mode allowed)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 16, 20, 20)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    old = ember.get_num_threads()
    ember.set_num_threads(2)
    try:
        ember.use_deterministic_algorithms(True)
        outs = [F.conv2d(ember.tensor(x), ember.tensor(w), padding=1).numpy()
                for _ in range(3)]
    finally:
        ember.use_deterministic_algorithms(False)
        ember.set_num_threads(old)
    assert calls == ["forward"] * 3
    assert all(np.array_equal(outs[0], o) for o in outs[1:])


def test_environment_switch_keeps_numpy():
    code = "from ember._kernels import ort_conv; print(ort_conv._state['enabled'])"
    env = dict(os.environ, EMBER_NO_ORT_CONV="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"


def test_one_session_serves_every_batch_and_image_size(calls):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    ort_conv._sessions.clear()
    for shape in ((1, 3, 9, 9), (4, 3, 12, 8), (2, 3, 8, 10)):
        x = rng.standard_normal(shape).astype(np.float32)
        got = F.conv2d(ember.tensor(x), ember.tensor(w), None, 2, 1).numpy()
        _close(got, torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, 2,
                                               1).numpy())
    assert calls == ["forward"] * 3 and len(ort_conv._sessions) == 1


@pytest.mark.parametrize("shape,side_by_side", [
    (((8, 16, 24, 24), (32, 16, 3, 3), 1, 1), False),       # onnxruntime's: in turn
    (((6, 12, 34, 30), (24, 12, 5, 3), 2, 2), False),
    (((8, 64, 7, 7), (64, 64, 3, 3), 1, 1), True),          # under 64 pixels: NumPy's, halves
])
def test_concurrent_backward_bit_for_bit(shape, side_by_side, calls):
    """Note [concurrent conv backward]: with 2 threads the input gradient of a layer NumPy
    serves runs on a helper thread beside the weight gradient, onnxruntime's layers run
    both in turn on all threads; the bits equal the one-thread run's, and match torch."""
    import threading
    xs, ws, stride, padding = shape
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal(xs).astype(np.float32), rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    gy = rng.standard_normal(_torch(x, w, b, stride, padding, 1, 1).shape).astype(np.float32)
    where = []
    real = ort_conv.transpose
    ort_conv.transpose = lambda *a, **k: where.append(threading.current_thread().name) or \
        real(*a, **k)
    old = ember.get_num_threads()
    try:
        got = {}
        for n in (1, 2, 2):
            ember.set_num_threads(n)
            got.setdefault(n, []).append(_run(x, w, b, stride, padding, 1, 1, gy))
    finally:
        ember.set_num_threads(old)
        ort_conv.transpose = real
    if side_by_side:                # (NumPy's input gradient: record it on the kernel)
        return _check_side_by_side(x, w, b, gy, stride, padding, got)
    assert where[0] == threading.current_thread().name          # one thread: sequential
    assert all(name == threading.current_thread().name for name in where[1:])
    # the same bits run to run at a thread count (MLAS's split of the weight gradient's
    # GEMM depends on the count, so 1 and 2 threads agree to rounding)
    for a, b2, c in zip(got[1][0], got[2][0], got[2][1]):
        assert np.array_equal(b2, c)
        _close(a, b2)
    for g, want in zip(got[2][0], _torch(x, w, b, stride, padding, 1, 1, gy)):
        _close(g, want)


def _check_side_by_side(x, w, b, gy, stride, padding, got):
    from ember._kernels import nn_conv
    assert nn_conv._concurrent(x, gy, w, np.dtype(np.float32), 1) or \
        not nn_conv.split._own_pools_ran[0]
    for a, b2, c in zip(got[1][0], got[2][0], got[2][1]):
        assert np.array_equal(b2, c)        # (the halves' weight gradient is MLAS's GEMM)
        _close(a, b2)
    for g, want in zip(got[2][0], _torch(x, w, b, stride, padding, 1, 1, gy)):
        _close(g, want)


def test_create_graph_keeps_the_composite_backward(calls):
    """With create_graph the gradients stay differentiable (double backward) and equal the
    fused record's."""
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((2, 3, 9, 9)).astype(np.float32), requires_grad=True)
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    gx, gw = ember.autograd.grad(y.square().sum(), (x, w), create_graph=True)
    assert gx.grad_fn is not None and gw.grad_fn is not None
    gx2, gw2 = ember.autograd.grad(F.conv2d(x, w, padding=1).square().sum(), (x, w))
    _close(gx.detach().numpy(), gx2.numpy())
    _close(gw.detach().numpy(), gw2.numpy())


def test_graphs_carry_the_oldest_ir_version_of_their_opset():
    """onnx stamps its newest IR version by default, which an older onnxruntime refuses
    ("Unsupported model IR version: 14, max supported IR version: 13"): ember's graphs
    carry the oldest one their opset needs."""
    from onnx import helper
    model = ort_conv._model([helper.make_node("Identity", ["x"], ["y"])], [("x", [1])],
                            [("y", [1])])
    assert model.ir_version == helper.find_min_ir_version_for(list(model.opset_import)) == 7


def test_an_onnxruntime_refusing_the_graphs_leaves_the_numpy_path(monkeypatch):
    import onnxruntime
    from ember._kernels import integer_gemm

    def refuse(*a, **k):
        raise RuntimeError("Unsupported model IR version: 14, max supported IR version: 13")
    monkeypatch.setattr(onnxruntime, "InferenceSession", refuse)
    monkeypatch.setattr(integer_gemm, "_runtime", [])
    monkeypatch.setattr(ort_conv, "_sessions", {})
    with pytest.warns(RuntimeWarning, match="NumPy paths"):
        assert integer_gemm._onnxruntime() is None
    x = np.random.default_rng(0).standard_normal((2, 3, 10, 10)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 3, 3, 3)).astype(np.float32)
    assert not ort_conv.available(x, w, 1)
    got = F.conv2d(ember.tensor(x), ember.tensor(w), padding=1)
    ref = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding=1)
    _close(got.numpy(), ref.numpy())
