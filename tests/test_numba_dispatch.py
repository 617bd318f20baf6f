"""Compiled kernels are called in a form numba's C dispatcher matches: a call that leaves a
default argument out (or passes keywords) goes through numba's Python fallback every time,
~30 us instead of 0.3 (a small LSTM's steps ran 3.5x slower). Warm layer calls must reach
no such fallback."""
import collections

import pytest

import ember

dispatcher = pytest.importorskip("numba.core.dispatcher")


@pytest.fixture
def fallback_calls(monkeypatch):
    counts = collections.Counter()
    orig = dispatcher._DispatcherBase._compile_for_args

    def counted(self, *args, **kwargs):
        counts[self.py_func.__qualname__] += 1
        return orig(self, *args, **kwargs)
    monkeypatch.setattr(dispatcher._DispatcherBase, "_compile_for_args", counted)
    return counts


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, {"proj_size": 8}, {"bidirectional": True}])
def test_warm_recurrent_layers_reach_no_python_dispatch(fallback_calls, cls, dtype, kw):
    if cls == "GRU" and "proj_size" in kw:
        pytest.skip("GRU has no projection")
    ember.manual_seed(0)
    m = getattr(ember.nn, cls)(12, 16, **kw).to(getattr(ember, dtype))
    x = ember.randn(5, 3, 12, dtype=getattr(ember, dtype), requires_grad=True)
    for call in range(2):
        out, _ = m(x)
        out.sum().backward()
        if call == 0:
            fallback_calls.clear()               # first calls compile (or load) each kernel
    assert dict(fallback_calls) == {}
