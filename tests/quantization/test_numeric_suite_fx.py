"""FX Numeric Suite: comparison utilities and logger passes against torch's."""
import numpy as np
import pytest
import torch

import ember
from ember.ao.ns.fx import utils as eu
from torch.ao.ns.fx import utils as tu

from tests.quantization.conftest import to_ember


def _pair(seed, shape=(3, 4), noise=0.1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x, x + noise * torch.randn(*shape, generator=g)


@pytest.mark.parametrize("name", ["compute_sqnr", "compute_normalized_l2_error",
                                  "compute_cosine_similarity"])
@pytest.mark.parametrize("seed,shape", [(0, (3, 4)), (1, (2, 3, 5)), (2, (100,))])
def test_comparisons_match_torch(name, seed, shape):
    x, y = _pair(seed, shape)
    got = getattr(eu, name)(to_ember(x), to_ember(y))
    want = getattr(tu, name)(x, y)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_comparisons_dequantize_lists_and_refuse_non_float():
    x, y = _pair(3)
    qx = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
    got = eu.compute_sqnr(to_ember(qx), to_ember(y))
    np.testing.assert_allclose(got.numpy(), tu.compute_sqnr(qx, y).numpy(), rtol=1e-6)
    pairs = eu.compute_sqnr([to_ember(x), to_ember(x)], (to_ember(y), to_ember(y)))
    assert isinstance(pairs, list) and len(pairs) == 2
    assert tu.compute_sqnr(x.double(), y) is None
    assert eu.compute_sqnr(to_ember(x).double(), to_ember(y)) is None
