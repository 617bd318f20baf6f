"""Features announced in PyTorch's 1.4-1.11 release posts (the seed documents), run the way
the posts and docs show them, values against torch (or NumPy where torch cannot run it)."""
import io

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _fork_builtins(lib):
    class M(lib.nn.Module):
        def forward(self, x):
            f = lib.jit.fork(lib.mm, x, x)
            g = lib.jit.fork(lib.sum, x, dim=0)
            return lib.jit.wait(f) + lib.jit.wait(g)
    return lib.jit.script(M())


def test_jit_fork_of_a_builtin_op():
    """1.6 fork/join: ``fork(torch.mm, x, x)`` in a scripted module (a builtin, not a
    scripted function) runs, saves and prints as torch's ``__forked_function`` closures."""
    x = np.arange(4.0, dtype=np.float32).reshape(2, 2)
    m, tm = _fork_builtins(ember), _fork_builtins(torch)
    np.testing.assert_allclose(m(ember.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())
    assert m.code == tm.code
    buf = io.BytesIO()
    ember.jit.save(m, buf)
    buf.seek(0)
    loaded = ember.jit.load(buf)
    np.testing.assert_allclose(loaded(ember.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())
