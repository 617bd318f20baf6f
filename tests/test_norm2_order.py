"""float32 2-norms in torch's order (Note [float32 2-norm order] in ember/_kernels/
reduction.py) on the compiled kernel (compiled/norm.py) and on the NumPy path alike."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.backends.cpu.get_cpu_capability() != "AVX2",
                                reason="torch's order was read on its AVX2 kernels")


@pytest.mark.parametrize("n", [1, 3, 4, 5, 7, 8, 9, 12, 13, 15, 16, 63, 100, 1001, 70003])
def test_float32_norms_are_torchs_bits(kernel_path, n):
    rng = np.random.default_rng(n)
    for shape in ((n,), (3, n), (2, 2, n)):
        a = (rng.standard_normal(shape) * 10).astype(np.float32)
        e, t = ember.from_numpy(a), torch.from_numpy(a)
        np.testing.assert_array_equal(ember.linalg.vector_norm(e, dim=-1).numpy().view(np.uint32),
                                      torch.linalg.vector_norm(t, dim=-1).numpy().view(np.uint32))
        assert e.norm().item() == t.norm().item()
        np.testing.assert_array_equal(
            ember.nn.functional.normalize(e, dim=-1).numpy().view(np.uint32),
            torch.nn.functional.normalize(t, dim=-1).numpy().view(np.uint32))
