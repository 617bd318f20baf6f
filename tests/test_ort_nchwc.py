"""2-d float32 convolutions on MLAS's NCHWc kernels (ember/_kernels/ort_nchwc.py): forward and
the stride-1 input gradient against torch and against the other paths, every channel layout
(first-layer NCHW input, blocked input, channel counts padded to the block)."""
import numpy as np
import pytest

import ember
from ember._kernels import ort_conv

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
from ember._kernels import ort_nchwc  # noqa: E402

pytestmark = pytest.mark.skipif(ort_nchwc.block_size() == 1,
                                reason="onnxruntime has no NCHWc kernels on this CPU")

# (N, C, O, H, W, k, stride, padding, dilation, bias)
CASES = [
    (2, 3, 20, 17, 19, 7, 2, 3, 1, True),       # first layer: NCHW input, O padded
    (2, 16, 32, 12, 12, 3, 1, 1, 1, False),     # blocked input, whole blocks
    (2, 24, 40, 10, 13, 3, 1, 1, 1, True),      # channels padded to the block
    (3, 8, 5, 9, 9, 3, 1, 2, 2, False),         # dilated
    (2, 32, 16, 11, 11, 5, 2, 2, 1, True),      # stride 2: input gradient on ConvTranspose
    (1, 4, 36, 10, 10, 3, 1, 0, 1, True),       # no padding
    (2, 8, 33, 9, 9, 3, 1, 1, 1, True),         # 33 channels: input gradient not blocked
]


def _grads(lib, x, w, b, stride, padding, dilation):
    xt = lib.tensor(x, requires_grad=True)
    wt = lib.tensor(w, requires_grad=True)
    bt = None if b is None else lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.conv2d(xt, wt, bt, stride=stride, padding=padding, dilation=dilation)
    gy = np.cos(np.arange(y.numel(), dtype=np.float64)).reshape(tuple(y.shape))
    y.backward(lib.tensor(gy.astype(np.float32)))
    out = [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()]
    return out + ([bt.grad.numpy()] if b is not None else [])


@pytest.fixture
def nchwc_calls(monkeypatch):
    monkeypatch.setitem(ort_conv._state, "enabled", True)
    monkeypatch.setitem(ort_conv._state, "nchwc", True)
    seen = []
    real = ort_nchwc.forward
    monkeypatch.setattr(ort_nchwc, "forward",
                        lambda *a, **k: seen.append(a[1].shape) or real(*a, **k))
    return seen


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"C{c[1]}-O{c[2]}-k{c[5]}-s{c[6]}")
def test_nchwc_matches_torch_and_the_other_paths(case, nchwc_calls, monkeypatch):
    N, C, O, H, W, k, stride, padding, dilation, bias = case
    rng = np.random.default_rng(C * 100 + O)
    x = rng.standard_normal((N, C, H, W)).astype(np.float32)
    w = rng.standard_normal((O, C, k, k)).astype(np.float32)
    b = rng.standard_normal(O).astype(np.float32) if bias else None
    want = _grads(torch, x, w, b, stride, padding, dilation)
    got = _grads(ember, x, w, b, stride, padding, dilation)
    # the forward, and the input gradient where the stride is 1 (a turned filter (C, O))
    # (ReorderInput takes channel counts that are multiples of 4, or under one block)
    blocked_grad = stride == 1 and (O < ort_nchwc.block_size() or O % 4 == 0)
    assert nchwc_calls[0] == (O, C, k, k)
    assert len(nchwc_calls) == 1 + blocked_grad
    if blocked_grad:
        assert nchwc_calls[1] == (C, O, k, k)
    monkeypatch.setitem(ort_conv._state, "nchwc", False)
    other = _grads(ember, x, w, b, stride, padding, dilation)
    assert len(nchwc_calls) == 1 + blocked_grad
    for g, o, t in zip(got, other, want):
        scale = max(np.abs(t).max(), 1.0)
        np.testing.assert_allclose(g, t, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(o, t, rtol=1e-5, atol=1e-5 * scale)


def test_blocked_filter_layout():
    """(O, C, kh, kw) -> (O/B, C/B, kh, kw, B_in, B_out) blocks, zero padded."""
    B = ort_nchwc.block_size()
    w = np.arange(3 * (B + 4) * 2 * 2, dtype=np.float32).reshape(3, B + 4, 2, 2)
    blocked = ort_nchwc.blocked_filter(w, B).reshape(1, 2, 2, 2, B, B)
    for o in range(B):
        for c in range(2 * B):
            want = w[o, c] if o < 3 and c < B + 4 else np.zeros((2, 2), np.float32)
            np.testing.assert_array_equal(blocked[0, c // B, :, :, c % B, o], want)
    small = ort_nchwc.blocked_filter(w[:, :2], B).reshape(1, 2, 2, 2, B)   # NCHW input
    np.testing.assert_array_equal(small[0, 1, :, :, 2], w[2, 1])
    assert not small[0, :, :, :, 3:].any()


def test_repeatable_bit_for_bit(nchwc_calls):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 32, 20, 20)).astype(np.float32)
    w = rng.standard_normal((48, 32, 3, 3)).astype(np.float32)
    first = _grads(ember, x, w, None, 1, 1, 1)
    again = _grads(ember, x, w, None, 1, 1, 1)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
