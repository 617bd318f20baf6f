"""In-place add_/sub_ of integer tensors with an ``alpha`` outside the dtype's range wrap
as torch's integer arithmetic does (strict parity: uint8 ``alpha=-3``)."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("method", ["add_", "sub_"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
@pytest.mark.parametrize("other", ["tensor", 4])
@pytest.mark.parametrize("alpha", [-3, 127, 128, -128, -129, 255, -255, -256, 300, 40000])
def test_integer_inplace_alpha_wraps(method, dtype, other, alpha):
    values, others = [5, 7, 100], [50, 2, 3]
    results = []
    for lib in (ember, torch):
        x = lib.tensor(values, dtype=getattr(lib, dtype))
        y = lib.tensor(others, dtype=getattr(lib, dtype)) if other == "tensor" else other
        try:
            results.append(getattr(x, method)(y, alpha=alpha).tolist())
        except RuntimeError as e:                 # alpha out of range: both refuse
            results.append(str(e))
    assert results[0] == results[1]
