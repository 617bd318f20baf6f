"""Adam/AdamW's fused records (``_fused_adam_`` / ``_fused_adamw_``, ember/_ops/fused_optim.py):
the same values as torch and, bit for bit, as the op-by-op update (``foreach=False``), with
the numba kernel and with NumPy passes; dispatch modes and the profiler see the record."""
import numpy as np
import pytest

import ember
from ember._dispatch import Mode
from ember._kernels import compiled

torch = pytest.importorskip("torch")

CASES = [("Adam", dict(lr=1e-2)), ("Adam", dict(lr=1e-2, weight_decay=0.1, amsgrad=True)),
         ("Adam", dict(lr=1e-2, maximize=True)), ("AdamW", dict(lr=3e-3, weight_decay=0.1)),
         ("AdamW", dict(lr=3e-3, betas=(0.3, 0.9), amsgrad=True))]


class _Seen(Mode):
    """A mode that passes ops on and keeps their names."""
    def __init__(self):
        self.names = []

    def __ember_dispatch__(self, op, args, kwargs):
        self.names.append(op.name)
        return op(*args, **kwargs)


def _run(lib, name, kwargs, dtype, steps=4, mode=None):
    rng = np.random.default_rng(0)
    shapes = [(5, 3), (3,), (), (40, 30)]   # (enough elements to show a rounding apart)
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
            with mode:
                opt.step()
    state = [opt.state[p] for p in params]
    return ([p.detach().numpy().copy() for p in params],
            [s["exp_avg_sq"].numpy().copy() for s in state], [float(s["step"]) for s in state])


@pytest.mark.parametrize("numba", [True, False], ids=["compiled", "numpy"])
@pytest.mark.parametrize("name,kwargs", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_adam_matches_torch_and_the_op_path(name, kwargs, dtype, numba):
    if not numba:
        compiled.disable()
    try:
        seen = _Seen()
        ours, v_ours, steps = _run(ember, name, kwargs, getattr(ember, dtype), mode=seen)
    finally:
        compiled.enable()
    theirs, v_theirs, _ = _run(torch, name, kwargs, getattr(torch, dtype))
    op_path, v_op, _ = _run(ember, name, dict(kwargs, foreach=False), getattr(ember, dtype))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-13)
    for a, b, c in zip(ours + v_ours, theirs + v_theirs, op_path + v_op):
        assert a.dtype == np.dtype(dtype)
        np.testing.assert_allclose(a, b, **tol)
        # (coupled weight decay: grad + wd * param rounds once in both, as torch's)
        np.testing.assert_array_equal(a, c)
    assert steps == [4.0] * 4
    fused = "_fused_adamw_" if name == "AdamW" else "_fused_adam_"
    assert seen.names.count(fused) == 4 and "lerp_.Scalar" not in seen.names


def test_the_profiler_shows_the_fused_record():
    p = ember.nn.Parameter(ember.ones(4))
    p.grad = ember.ones(4)
    opt = ember.optim.AdamW([p], lr=0.1)
    with ember.profiler.profile() as prof:
        opt.step()
    names = [e.name for e in prof.events()]
    assert "aten::_fused_adamw_" in names and "aten::addcdiv_" not in names


def test_the_fused_record_takes_parameters_and_no_in_place_op():
    """A module's Parameters take the record: no in-place variant is dispatched but the
    steps' increments."""
    import ember._dispatch as D
    p = ember.nn.Parameter(ember.ones(4))
    p.grad = ember.ones(4)
    opt = ember.optim.AdamW([p], lr=0.1)
    calls = []
    real = D._call_inplace
    D._call_inplace = lambda *a: calls.append(a[0].name) or real(*a)
    try:
        opt.step()
    finally:
        D._call_inplace = real
    assert set(calls) <= {"add_.Tensor"} and float(opt.state[p]["step"]) == 1.0


def test_the_fused_record_bumps_versions_and_refuses_leaves_under_grad_mode():
    p = ember.ones(3, requires_grad=True)
    opt = ember.optim.AdamW([p], lr=0.1)
    p.grad = ember.ones(3)
    before = p._version
    opt.step()
    m = opt.state[p]["exp_avg"]
    assert p._version > before and m._version > 0
    np.testing.assert_allclose(p.detach().numpy(), 1 - 0.1 * 0.01 - 0.1, rtol=1e-6)
    g, v, s = ember.ones(3), ember.zeros(3), ember.ones(())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ember._fused_adam_([p], [g], [ember.zeros(3)], [v], [], [s], lr=0.1, beta1=0.9,
                           beta2=0.999, weight_decay=0.0, eps=1e-8, amsgrad=False,
                           maximize=False)


def test_the_fused_record_called_as_torch_calls_it():
    """``torch._fused_adam_`` with the same lists and keywords: the same values (steps
    incremented by the caller)."""
    rng = np.random.default_rng(1)
    vals = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    out = []
    for lib in (ember, torch):
        p, g, m, v = (lib.tensor(x.copy()) for x in vals)
        v = v.abs()
        vmax = v.clone()
        s = lib.tensor(3.0)
        lib._fused_adamw_([p], [g], [m], [v], [vmax], [s], lr=0.01, beta1=0.9, beta2=0.99,
                          weight_decay=0.1, eps=1e-8, amsgrad=True, maximize=True)
        out.append([x.numpy() for x in (p, m, v, vmax)] + [float(s)])
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
