"""Random quantized inputs for the quantized-op tests: the same integers and parameters in
torch and ember, scales chosen so that half-way ties happen (output scale a simple multiple
of the input's)."""
import numpy as np
import torch

import ember

from tests.quantization.conftest import to_ember

QTYPES = {"quint8": (torch.quint8, 0, 255, np.uint8), "qint8": (torch.qint8, -128, 127, np.int8),
          "qint32": (torch.qint32, -2 ** 31, 2 ** 31 - 1, np.int32)}
SIZES = (7, 1000, 4099)          # scalar tail only, vector body + tail, long body


def random_q(rng, shape, qtype="quint8", scale=None, zero_point=None):
    """(torch tensor, ember tensor) with random integers, scale and zero point."""
    tdt, lo, hi, st = QTYPES[qtype]
    if scale is None:
        scale = float(rng.uniform(0.005, 0.2))
    if zero_point is None:
        zero_point = int(rng.integers(lo, hi + 1)) if qtype == "quint8" else \
            int(rng.integers(-20, 21))
    if qtype == "qint32":         # values of a moderate range (as a bias or accumulator)
        lo, hi = -3000, 3000
    ints = rng.integers(lo, hi + 1, size=shape).astype(st)
    t = torch._make_per_tensor_quantized_tensor(torch.from_numpy(ints), scale, zero_point)
    return t, to_ember(t)


def tie_qparams(rng, scale, qtype="quint8"):
    """An output (scale, zero_point) whose scale is a small multiple of ``scale``: half-way
    cases occur, so a wrong rounding rule shows."""
    _, lo, hi, _ = QTYPES[qtype]
    return float(scale * rng.choice([0.5, 2.0, 1.5, 4.0, 0.25, 2.5])), int(rng.integers(lo, hi))


__all__ = ["QTYPES", "SIZES", "random_q", "tie_qparams", "ember"]
