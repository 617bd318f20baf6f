"""Adam/AdamW's in-place array path (ember/optim/adam.py ``_adam_arrays``): the same values
as torch and, bit for bit, as the op-by-op path that dispatch modes see."""
import numpy as np
import pytest

import ember
from ember._dispatch import Mode

torch = pytest.importorskip("torch")

CASES = [("Adam", dict(lr=1e-2)), ("Adam", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
         ("Adam", dict(lr=1e-2, maximize=True)), ("AdamW", dict(lr=3e-3, weight_decay=0.1)),
         ("AdamW", dict(lr=3e-3, betas=(0.3, 0.9), amsgrad=True))]


class _Pass(Mode):
    """A mode that only passes ops on: the optimizer then runs op by op."""
    def __ember_dispatch__(self, op, args, kwargs):
        return op(*args, **kwargs)


def _run(lib, name, kwargs, dtype, steps=4, mode=None):
    rng = np.random.default_rng(0)
    shapes = [(5, 3), (3,), ()]
    params = [lib.tensor(rng.standard_normal(s), dtype=dtype).requires_grad_()
              for s in shapes]
    params[0] = lib.nn.Parameter(params[0].detach())      # modules hand Parameters
    opt = getattr(lib.optim, name)(params, **kwargs)
    for _ in range(steps):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(p.shape), dtype=dtype)
        if mode is None:
            opt.step()
        else:
            with mode():
                opt.step()
    state = [opt.state[p] for p in params]
    return ([p.detach().numpy().copy() for p in params],
            [s["exp_avg_sq"].numpy().copy() for s in state], [float(s["step"]) for s in state])


@pytest.mark.parametrize("name,kwargs", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_array_path_matches_torch_and_the_op_path(name, kwargs, dtype):
    ours, v_ours, steps = _run(ember, name, kwargs, getattr(ember, dtype))
    theirs, v_theirs, _ = _run(torch, name, kwargs, getattr(torch, dtype))
    op_path, v_op, _ = _run(ember, name, kwargs, getattr(ember, dtype), mode=_Pass)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for a, b, c in zip(ours + v_ours, theirs + v_theirs, op_path + v_op):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, **tol)
        np.testing.assert_array_equal(a, c)
    assert steps == [4.0] * 3


def test_adam_array_path_takes_parameters():
    """A module's Parameters take the array path: no in-place op is dispatched."""
    import ember._dispatch as D
    p = ember.nn.Parameter(ember.ones(4))
    p.grad = ember.ones(4)
    opt = ember.optim.AdamW([p], lr=0.1)
    calls = []
    real = D._call_inplace
    D._call_inplace = lambda *a: calls.append(a[0]) or real(*a)
    try:
        opt.step()
    finally:
        D._call_inplace = real
    assert calls == [] and float(opt.state[p]["step"]) == 1.0


def test_adam_array_path_bumps_versions():
    p = ember.ones(3, requires_grad=True)
    opt = ember.optim.AdamW([p], lr=0.1)
    p.grad = ember.ones(3)
    before = p._version
    opt.step()
    m = opt.state[p]["exp_avg"]
    assert p._version > before and m._version > 0
    np.testing.assert_allclose(p.detach().numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-6)
