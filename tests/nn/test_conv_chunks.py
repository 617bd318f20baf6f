"""Convolutions by image chunks (Note [conv by image chunks] in ember/_kernels/nn_conv.py):
forward, input and weight gradients against torch, the route really taken, and the same
bits at any thread count."""
import numpy as np
import pytest

import ember
from ember._kernels import nn_conv, own_gemm

torch = pytest.importorskip("torch")

CASES = [  # x shape, w shape, stride, padding, bias
    ((9, 6, 12, 13), (5, 6, 3, 3), 1, 1, True),            # uneven last chunk
    ((4, 40, 16, 16), (24, 40, 3, 3), 1, 1, False),        # depth 360
    ((3, 80, 12, 12), (16, 80, 3, 3), 1, (1, 0), True),    # depth 720: summed in blocks
    ((4, 8, 33, 31), (12, 8, 5, 3), 2, 2, False),          # stride 2
    ((2, 3, 40, 40), (8, 3, 7, 7), 2, 3, True),            # a 7x7 stem
    ((2, 5, 130, 47), (6, 5, 3, 3), 1, 1, False),          # chunks of output rows
]


@pytest.fixture
def chunked(monkeypatch):
    """Every dense float32 convolution of these sizes through the chunks, counted."""
    monkeypatch.setattr(nn_conv, "_CHUNK_MIN_MACS", 1)
    monkeypatch.setattr(nn_conv, "_CHUNK_MIN_PIXELS", 1)
    monkeypatch.setattr(nn_conv, "_CHUNK_MIN_DEPTH", 1)
    monkeypatch.setattr(nn_conv, "_CHUNK_FLOATS", 4096)        # several chunks per batch
    monkeypatch.setattr(own_gemm, "kernels", lambda: None)
    from ember._kernels import ort_conv
    monkeypatch.setitem(ort_conv._state, "enabled", False)
    calls = []
    for name in ("_conv_chunks", "_weight_grad_chunks", "_transpose_chunks"):
        fn = getattr(nn_conv, name)
        monkeypatch.setattr(nn_conv, name, lambda *a, _fn=fn, _n=name: (calls.append(_n),
                                                                         _fn(*a))[1])
    return calls


def _conv(lib, x, w, b, stride, padding, g):
    xx, ww = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
    bb = lib.tensor(b, requires_grad=True) if b is not None else None
    y = lib.nn.functional.conv2d(xx, ww, bb, stride, padding)
    y.backward(lib.tensor(g))
    out = [y.detach().numpy(), xx.grad.numpy(), ww.grad.numpy()]
    return out + ([bb.grad.numpy()] if bb is not None else [])


@pytest.mark.parametrize("xs,ws,stride,padding,bias", CASES)
def test_chunked_conv_against_torch(chunked, xs, ws, stride, padding, bias):
    rng = np.random.default_rng(sum(xs))
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    ty = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, stride, padding)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    want = _conv(torch, x, w, b, stride, padding, g)
    got = _conv(ember, x, w, b, stride, padding, g)
    for a, t in zip(got, want):
        assert a.dtype == np.float32 and a.shape == t.shape
        np.testing.assert_allclose(a, t, rtol=1e-4, atol=1e-4 * max(1, np.abs(t).max()))
    assert "_conv_chunks" in chunked and "_weight_grad_chunks" in chunked
    assert ("_transpose_chunks" in chunked) == (stride != 1)   # the strided input gradient


def test_chunked_conv_same_bits_at_any_thread_count(chunked):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((7, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((24, 16, 3, 3)).astype(np.float32)
    g = rng.standard_normal((7, 24, 14, 14)).astype(np.float32)
    old = ember.get_num_threads()
    runs = []
    try:
        for n in (1, 2, 3):
            ember.set_num_threads(n)
            runs.append(_conv(ember, x, w, None, 1, 1, g))
    finally:
        ember.set_num_threads(old)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)
    assert chunked.count("_conv_chunks") >= 6            # forward and input gradient, 3 runs


def test_small_images_and_other_dtypes_keep_one_gemm():
    """7x7 images (ResNet's last layers) and float64 are not chunked."""
    f32 = np.zeros((8, 512, 7, 7), np.float32)
    assert not nn_conv._chunked(f32, 512, 4608, 49)
    assert not nn_conv._chunked(np.zeros((8, 64, 56, 56)), 64, 576, 3136)
    assert not nn_conv._chunked(np.zeros((64, 1, 28, 28), np.float32), 32, 9, 784)
    assert nn_conv._chunked(np.zeros((1, 64, 56, 56), np.float32), 64, 576, 3136)


def test_row_chunks_of_one_image(chunked):
    """An image whose columns exceed a chunk goes by blocks of output rows: the tasks
    cover every row once, and the 1-D and 3-D convolutions take the same route."""
    tasks = nn_conv._chunk_tasks(3, 100, (250, 7))   # 4096 // 700: 5 rows, 256 columns: 37
    assert [(i, m) for i, m, _, _ in tasks] == [(i, 1) for i in range(3) for _ in range(7)]
    assert [r for _, _, r, _ in tasks[:7]] == list(range(0, 250, 37))
    assert tasks[6][3] == 250
    assert nn_conv._chunk_tasks(3, 100, (20, 8)) == [(0, 1, 0, 20), (1, 1, 0, 20),
                                                     (2, 1, 0, 20)]    # 4 chunks: whole
    rng = np.random.default_rng(11)
    for xs, ws in [((2, 4, 300), (6, 4, 5)), ((2, 3, 9, 10, 11), (4, 3, 3, 3, 3))]:
        x = rng.standard_normal(xs).astype(np.float32)
        w = rng.standard_normal(ws).astype(np.float32)
        conv = {3: "conv1d", 5: "conv3d"}[len(xs)]
        want = getattr(torch.nn.functional, conv)(torch.tensor(x), torch.tensor(w),
                                                    stride=2, padding=1)
        got = getattr(ember.nn.functional, conv)(ember.tensor(x), ember.tensor(w),
                                                   stride=2, padding=1)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4)
