"""Dynamic quantized modules take float input that may require grad: their output says
``requires_grad`` as torch's does (no backward through the quantized kernels: torch's grad_fn
only warns, and so does ember's)."""
import pytest

import ember
import ember.ao.nn.quantized.dynamic as nnqd
from tests.quantization.conftest import torch


@pytest.mark.parametrize("cls", ["Linear", "LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_output_requires_grad_as_torch(cls, dtype):
    import torch.ao.nn.quantized.dynamic as tnnqd
    shape = (2, 1, 3) if cls in ("LSTM", "GRU") else (2, 3)
    tm = getattr(tnnqd, cls)(3, 2, dtype=getattr(torch, dtype))
    em = getattr(nnqd, cls)(3, 2, dtype=getattr(ember, dtype))
    for grad in (True, False):
        to = tm(torch.randn(*shape, requires_grad=grad))
        eo = em(ember.randn(*shape, requires_grad=grad))
        to, eo = (to[0], eo[0]) if isinstance(to, tuple) else (to, eo)
        assert eo.requires_grad == to.requires_grad == grad
