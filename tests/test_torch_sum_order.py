"""float32/float64 sum and mean in torch's CPU summation order, bit for bit (Note [torch's
summation order] in ember/_kernels/torch_sum.py), with the compiled kernels and without."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F

torch = pytest.importorskip("torch")

# the order was read on torch's AVX2 kernels (8 float32 lanes); elsewhere it may differ
pytestmark = pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() != "AVX2",
                                reason="torch's summation order was found on its AVX2 kernels")

LENGTHS = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 100, 127, 128, 129, 255,
           256, 257, 511, 512, 513, 1000, 2047, 4096, 4097, 10000, 32767, 32768, 32769,
           40000, 65537, 100003, 262145, (1 << 20) + 37, 3000001]
SHAPES = [(3, 5), (64, 1000), (1000, 64), (17, 33), (100, 7), (31, 31), (200, 40), (4096, 3),
          (3, 70000), (70000, 3), (300, 300), (1, 50), (50, 1), (7, 1, 9), (200, 75),
          (4, 4), (9, 6), (2, 8), (6, 2)]


@pytest.fixture(autouse=True)
def same_threads():
    """ember's thread count as torch's (the chunks of a full sum follow it)."""
    ember.set_num_threads(torch.get_num_threads())
    yield


def same(e, t):
    e, t = e.numpy(), t.numpy()
    return e.shape == t.shape and e.dtype == t.dtype and e.tobytes() == t.tobytes()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_full_sum_and_mean(kernel_path, dtype):
    rng = np.random.default_rng(0)
    for n in LENGTHS:
        a = rng.standard_normal(n).astype(dtype)
        e, t = ember.from_numpy(a), torch.from_numpy(a)
        assert same(e.sum(), t.sum()), n
        assert same(e.mean(), t.mean()), n
        assert e.sum().item() == t.sum().item()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sum_and_mean_along_dims(kernel_path, dtype):
    rng = np.random.default_rng(1)
    for shape in SHAPES:
        a = rng.standard_normal(shape).astype(dtype)
        e, t = ember.from_numpy(a), torch.from_numpy(a)
        for d in list(range(a.ndim)) + [-1, None]:
            for keepdim in (False, True):
                if d is None:
                    assert same(e.sum(), t.sum())
                    continue
                assert same(e.sum(d, keepdim=keepdim), t.sum(d, keepdim=keepdim)), (shape, d)
                assert same(e.mean(d, keepdim=keepdim), t.mean(d, keepdim=keepdim)), (shape, d)
        if a.ndim == 2:         # transposed views: torch reads them in memory order
            for d in (0, 1, None):
                assert same(e.T.sum(d) if d is not None else e.T.sum(),
                            t.T.sum(d) if d is not None else t.T.sum()), (shape, d)
                if d is not None:
                    assert same(e.T.mean(d), t.T.mean(d))


def test_three_dims(kernel_path):
    rng = np.random.default_rng(2)
    for shape in [(4, 5, 6), (3, 100, 40), (2, 33, 70), (10, 10, 300), (5, 17, 3)]:
        a = rng.standard_normal(shape).astype(np.float32)
        e, t = ember.from_numpy(a), torch.from_numpy(a)
        for d in [0, 1, 2, (0, 1), (1, 2), (0, 1, 2)]:
            assert same(e.sum(d), t.sum(d)), (shape, d)
            assert same(e.mean(d, keepdim=True), t.mean(d, keepdim=True)), (shape, d)


def test_float32_summed_as_float64(kernel_path):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((64, 1000)) * 2.0 ** rng.integers(-40, 40, (64, 1000)))
    a = a.astype(np.float32)                # (wide exponents: the float64 sums round)
    e, t = ember.from_numpy(a), torch.from_numpy(a)
    assert same(e.sum(dtype=ember.float64), t.sum(dtype=torch.float64))
    assert same(e.mean(1, dtype=ember.float64), t.mean(1, dtype=torch.float64))


def test_mse_loss_mean(kernel_path):
    rng = np.random.default_rng(4)
    for shape in [(100,), (64, 10), (64, 1000), (256, 3, 32, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = rng.standard_normal(shape).astype(np.float32)
        got = F.mse_loss(ember.from_numpy(x), ember.from_numpy(y))
        want = torch.nn.functional.mse_loss(torch.from_numpy(x), torch.from_numpy(y))
        assert got.item() == want.item(), shape


def test_thread_count_decides_the_chunks():
    a = np.random.default_rng(5).standard_normal(300001).astype(np.float32)
    before = torch.get_num_threads()
    try:
        for n in (1, 2, 3, 4):
            torch.set_num_threads(n)
            ember.set_num_threads(n)
            assert same(ember.from_numpy(a).sum(), torch.from_numpy(a).sum()), n
    finally:
        torch.set_num_threads(before)


def test_the_brief_example_and_zeros():
    a = np.random.default_rng(0).standard_normal(100).astype(np.float32)
    assert torch.from_numpy(a).sum().item() == ember.from_numpy(a).sum().item()
    z = -np.zeros(37, np.float32)
    assert same(ember.from_numpy(z).sum(), torch.from_numpy(z).sum())     # +0.0, as torch
