import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _protocol_wrappers_undone():
    """A test whose Tensor subclass overrides ``__torch_function__`` makes ember wrap
    nn.functional's and the top-level Python functions for the rest of the process
    (ember/overrides.py); put the plain functions back after it, so later tests (FX and JIT
    pattern tables compare functions) see the program they were written for."""
    yield
    from ember import overrides
    if overrides._FUNCTIONAL_WRAPPED:
        overrides._unwrap_functional()
