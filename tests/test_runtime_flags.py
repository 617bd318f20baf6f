"""Top-level torch functions and flags ember lacked: values and errors against torch."""
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(fn):
    try:
        r = fn()
        return ("ok", r if not hasattr(r, "tolist") else r.tolist())
    except Exception as e:                          # noqa: BLE001 - compared below
        return (type(e).__name__, str(e)[:60])


@pytest.mark.parametrize("mode", ["default", "warn", "error", 0, 1, 2, 3, "bad", 1.5, None])
def test_deterministic_debug_mode(mode):
    got = []
    for lib in (ember, torch):
        try:
            got.append((_outcome(lambda: lib.set_deterministic_debug_mode(mode)),
                        lib.get_deterministic_debug_mode(),
                        lib.are_deterministic_algorithms_enabled(),
                        lib.is_deterministic_algorithms_warn_only_enabled()))
        finally:
            lib.set_deterministic_debug_mode(0)
    assert got[0] == got[1]


CALLS = {
    "sym": lambda lib: [lib.sym_int(-3.7), lib.sym_float(3), lib.sym_max(2.0, 5),
                        lib.sym_min(2, 5.0), lib.sym_max(2, 5), lib.sym_not(0),
                        lib.sym_sqrt(4), lib.sym_ite(False, 1, 2), lib.sym_sum([1, 2, 3])],
    "flags": lambda lib: [lib.has_lapack, lib.has_spectral, lib.newaxis,
                          repr(lib.legacy_contiguous_format), lib.is_distributed(lib.ones(1))],
    "warn always": lambda lib: (lib.set_warn_always(True), lib.is_warn_always_enabled(),
                                lib.set_warn_always(False), lib.is_warn_always_enabled()),
    "warn always int": lambda lib: lib.set_warn_always(1),
    "flush denormal": lambda lib: lib.set_flush_denormal(False),
    "flush denormal str": lambda lib: lib.set_flush_denormal("yes"),
    "anomaly": lambda lib: (lib.set_anomaly_enabled(True, False), lib.is_anomaly_enabled(),
                            lib.is_anomaly_check_nan_enabled(), lib.set_anomaly_enabled(False),
                            lib.is_anomaly_enabled()),
    "lstsq": lambda lib: lib.lstsq(lib.ones(2, 2), lib.ones(2, 2)),
    "solve": lambda lib: lib.solve(lib.ones(2, 2), lib.ones(2, 2)),
    "eig": lambda lib: lib.eig(lib.ones(2, 2)),
    "symeig": lambda lib: lib.symeig(lib.ones(2, 2)),
    "matrix_rank": lambda lib: lib.matrix_rank(lib.ones(2, 2)),
    "oom": lambda lib: issubclass(lib.OutOfMemoryError, RuntimeError),
    "grad scaler": lambda lib: lib.GradScaler is lib.amp.GradScaler,
}


@pytest.mark.parametrize("name", list(CALLS))
def test_call_as_torch(name):
    assert _outcome(lambda: CALLS[name](ember)) == _outcome(lambda: CALLS[name](torch))


def test_to_dlpack_round_trip():
    t = torch.utils.dlpack.from_dlpack(ember.to_dlpack(ember.arange(4.)))
    assert t.tolist() == [0, 1, 2, 3]


DEPRECATED = {
    "lu": lambda lib: lib.lu(lib.eye(3)),
    "cholesky": lambda lib: lib.cholesky(lib.eye(3)),
    "cholesky method": lambda lib: lib.eye(3).cholesky(),
    "qr": lambda lib: lib.qr(lib.eye(3)),
    "lu_solve": lambda lib: lib.lu_solve(lib.ones(3, 1), *lib.linalg.lu_factor(lib.eye(3))),
    "triangular_solve": lambda lib: lib.triangular_solve(lib.ones(3, 1), lib.eye(3)),
    "meshgrid": lambda lib: lib.meshgrid(lib.arange(2), lib.arange(3)),
}


@pytest.mark.parametrize("name", list(DEPRECATED))
def test_once_a_process_warnings_as_torch(name):
    """With set_warn_always(True) torch's once-a-process warnings come on every call: the
    messages must match (torch appends its C++ source location, dropped here)."""
    import warnings
    got = []
    for lib in (ember, torch):
        lib.set_warn_always(True)
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                DEPRECATED[name](lib)
                DEPRECATED[name](lib)
        finally:
            lib.set_warn_always(False)
        got.append([str(m.message).split(" (Triggered internally")[0] for m in w])
    assert len(got[0]) == 2 and got[0] == got[1]


def test_warn_once_without_warn_always():
    import warnings
    from ember._runtime_flags import warn_once
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            warn_once("test-key-s7", "only once")
    assert [str(m.message) for m in w] == ["only once"]


@pytest.mark.parametrize("name", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [False, True])
def test_top_level_cell_functions(name, bias):
    import numpy as np
    rng = np.random.default_rng(7)
    G = {"lstm_cell": 4, "gru_cell": 3}.get(name, 1)
    arrays = [rng.standard_normal(s) for s in [(3, 4), (3, 5), (3, 5), (G * 5, 4), (G * 5, 5),
                                               (G * 5,), (G * 5,)]]
    outs = []
    for lib in (ember, torch):
        x, h, c, w_ih, w_hh, b_ih, b_hh = (lib.tensor(a, requires_grad=True) for a in arrays)
        hx = (h, c) if name == "lstm_cell" else h
        out = getattr(lib, name)(x, hx, w_ih, w_hh, *((b_ih, b_hh) if bias else ()))
        first = out[0] if name == "lstm_cell" else out
        (first.sum() + (out[1].sum() if name == "lstm_cell" else 0)).backward()
        outs.append([first.detach().numpy(), x.grad.numpy(), w_hh.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_kernels_stay_quiet_on_overflow_as_torch():
    """Note [floating-point warnings]: inf/nan results print no NumPy RuntimeWarning (torch
    prints nothing); the user's own NumPy arithmetic still warns."""
    import subprocess
    import sys
    code = ("import ember as torch, numpy as np\n"
            "big = torch.tensor([3e38, 1.0])\n"
            "r = [big * 10, torch.exp(torch.tensor([100.0])), torch.tensor([1e6]).half(),\n"
            "     torch.full((2, 2), 3e38) @ torch.full((2, 2), 3e38), big.mean() * 1e30,\n"
            "     torch.tensor([3e38, 3e38]).mean(), torch.tensor([3e38, 3e38]).cumsum(0),\n"
            "     torch.nn.functional.mse_loss(big, -big), torch.log(torch.zeros(1))]\n"
            "print(all(bool(torch.isinf(t).any()) for t in r))\n"
            "np.array([3e38], np.float32) * 10\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "True"
    assert p.stderr.count("RuntimeWarning") == 1 and "<string>:8" in p.stderr


def test_backward_inputs_on_a_retaining_tensor_accumulates_once():
    got = []
    for lib in (ember, torch):
        a = lib.ones(2, requires_grad=True)
        b = a * 3
        b.retain_grad()
        y = (b ** 2).sum()
        y.backward(inputs=[b], retain_graph=True)
        y.backward(inputs=[b])                       # a second pass adds once more
        got.append((b.grad.tolist(), a.grad))
    assert got[0] == got[1] == ([12.0, 12.0], None)


def test_compile_configs_as_torch():
    """torch._dynamo / torch._inductor configs: flags scripts set before torch.compile are
    accepted, unknown ones raise AttributeError naming them, as torch's."""
    import importlib
    outs = []
    for name in ("ember", "torch"):
        lib = importlib.import_module(name)
        dyn = importlib.import_module(f"{name}._dynamo.config")
        ind = importlib.import_module(f"{name}._inductor.config")
        got = [dyn.suppress_errors, dyn.cache_size_limit, ind.max_autotune,
               ind.coordinate_descent_tuning, ind.triton.cudagraphs, ind.cpp.threads]
        for target, key in ((dyn, "no_such_flag"), (ind, "no_such_flag"),
                            (ind.triton, "no_such_flag")):
            try:
                setattr(target, key, 1)
                got.append("set")
            except AttributeError as e:
                got.append(str(e).replace(name, "torch", 1))
        saved = dyn.suppress_errors
        dyn.suppress_errors = True
        got.append(lib._dynamo.config.suppress_errors)
        dyn.suppress_errors = saved
        lib._dynamo.mark_dynamic(lib.ones(2, 3), 0)
        lib._dynamo.reset()
        outs.append(got)
    assert outs[0] == outs[1]
