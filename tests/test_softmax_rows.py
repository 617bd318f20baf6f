"""Small float32 softmax / log_softmax rows summed in torch's lane order (Note [float32
softmax rows] in ember/_kernels/reduction.py), by the compiled kernel and by NumPy alike."""
import numpy as np
import pytest

import ember
from ember._kernels import reduction

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("C", [3, 8, 9, 15, 16, 17, 33, 100, 1000])
def test_row_sums_and_softmax_bits(C, kernel_path):
    rng = np.random.default_rng(C)
    x = (rng.standard_normal((64, C)) * 3).astype(np.float32)
    e = np.exp(x - x.max(-1, keepdims=True)).astype(np.float32)
    sums = reduction._row_sums(e)
    # the order written out: 8 lanes, tail into the first lanes, halved pairwise
    if C >= 8:
        whole = C // 8 * 8
        acc = e[:, :8].copy()
        for j in range(8, whole, 8):
            acc += e[:, j:j + 8]
        acc[:, :C - whole] += e[:, whole:]
        acc = acc[:, :4] + acc[:, 4:]
        acc = acc[:, :2] + acc[:, 2:]
        np.testing.assert_array_equal(sums[:, 0], acc[:, 0] + acc[:, 1])
    got = ember.from_numpy(x).log_softmax(-1).numpy()
    want = torch.from_numpy(x).log_softmax(-1).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6)
    assert (got == want).mean() > 0.8          # most rows bit for bit torch's
