"""Differences found by running everyday PyTorch snippets (DataLoader loops, schedulers,
printing, dtype corners, ...) under ember and torch and diffing their output; each test
pins one against torch 2.13."""
import warnings

import pytest

import ember
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")


def _sequential_lr_run(lib):
    """lrs of LinearLR warmup -> CosineAnnealingLR, and the warnings the run raised."""
    p = lib.nn.Parameter(lib.zeros(2))
    opt = lib.optim.SGD([p], lr=0.1)
    S = lib.optim.lr_scheduler
    sched = S.SequentialLR(opt, [S.LinearLR(opt, start_factor=0.1, total_iters=2),
                                 S.CosineAnnealingLR(opt, T_max=8)], milestones=[2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lrs = []
        for _ in range(5):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
    return lrs, [str(w.message)[:40] for w in caught]


def test_sequential_lr_milestone_restart_warns_nothing():
    t_lrs, t_warn = _sequential_lr_run(torch)
    e_lrs, e_warn = _sequential_lr_run(ember)
    assert e_lrs == pytest.approx(t_lrs, rel=1e-12)
    assert e_warn == t_warn == []


def test_cross_entropy_probability_targets_mean_node_and_grad():
    x = torch.randn(3, 4, dtype=torch.float64)
    p = torch.softmax(torch.randn(3, 4, dtype=torch.float64), 1)
    names, grads, losses = [], [], []
    for lib in (torch, ember):
        xi = lib.tensor(x.numpy(), requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xi, lib.tensor(p.numpy()), label_smoothing=0.1)
        loss.backward()
        names.append((loss.grad_fn.name(), loss.grad_fn.next_functions[0][0].name()))
        grads.append(xi.grad.numpy())
        losses.append(loss.item())
    assert names[1] == names[0] == ("DivBackward1", "NegBackward0")
    assert losses[1] == pytest.approx(losses[0], rel=1e-12)
    assert grads[1] == pytest.approx(grads[0], rel=1e-12)


def test_det_of_integer_valued_matrix_is_exact_like_torch():
    """NumPy's det goes through exp(log|det|) (43.99999999...); torch multiplies LU pivots."""
    rows = [[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]]
    for dt in ("float64", "float32"):
        t = torch.linalg.det(torch.tensor(rows, dtype=getattr(torch, dt)))
        e = ember.linalg.det(ember.tensor(rows, dtype=getattr(ember, dt)))
        assert e.item() == t.item() == 44.0
        assert str(e) == str(t)
    batch = [rows, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]]]
    assert ember.det(ember.tensor(batch)).tolist() == torch.det(torch.tensor(batch)).tolist()


def test_linalg_error_class_name_matches_torch():
    for lib in (torch, ember):
        with pytest.raises(lib.linalg.LinAlgError) as info:
            lib.linalg.inv(lib.zeros(2, 2))
        assert type(info.value).__name__ == "_LinAlgError"
        assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window"])
def test_cosine_windows_round_in_their_dtype(name):
    """torch computes the window in its dtype: blackman(3)[0] is -2.98e-08 in float32."""
    for n, periodic in [(3, False), (5, True), (8, False), (16, True)]:
        t = getattr(torch, name)(n, periodic).numpy()
        e = getattr(ember, name)(n, periodic).numpy()
        assert abs(e - t).max() <= 1.2e-7 and e[0] == t[0]
        t64 = getattr(torch, name)(n, periodic, dtype=torch.float64).numpy()
        e64 = getattr(ember, name)(n, periodic, dtype=ember.float64).numpy()
        assert (e64 == t64).all()
    assert str(ember.blackman_window(3)) == str(torch.blackman_window(3))


def _compiled_module_facts(lib):
    m = lib.nn.Sequential(lib.nn.Linear(2, 2))
    m.eval()
    c = lib.compile(m)
    facts = [type(c).__name__, c._orig_mod is m, c.training, list(c.state_dict()), repr(c),
             [n for n, _ in c.named_modules()], isinstance(c, lib.nn.Sequential)]
    c.train()
    c.note = 3
    facts += [m.training, getattr(m, "note", None), lib.compile(m, disable=True) is m,
              tuple(c(lib.ones(1, 2)).shape)]
    try:
        m.load_state_dict(c.state_dict())
    except RuntimeError as e:
        facts.append(str(e))
    return facts


def test_compile_wraps_a_module_as_optimized_module():
    """Scripts see torch's wrapper: the ``_orig_mod.`` key prefix, its repr, delegation."""
    assert _compiled_module_facts(ember) == _compiled_module_facts(torch)


def test_batch_norm_size_checks_name_running_stats_first():
    for kw in (dict(running_mean=0, running_var=0, weight=0, bias=0),
               dict(running_mean=None, running_var=None, weight=0, bias=0, training=True),
               dict(running_mean=1, running_var=0, weight=0, bias=0),
               dict(running_mean=1, running_var=1, weight=1, bias=0)):
        msgs = []
        for lib in (torch, ember):
            args = {k: (v if not isinstance(v, int) or isinstance(v, bool) else
                        lib.ones(5 if v else 3)) for k, v in kw.items()}
            with pytest.raises(RuntimeError) as info:
                lib.nn.functional.batch_norm(lib.ones(4, 5), **args)
            msgs.append(str(info.value))
        assert msgs[1] == msgs[0]


def test_optimizer_repr_separates_param_groups_with_a_blank_line():
    reprs = []
    for lib in (torch, ember):
        ps = [lib.nn.Parameter(lib.ones(1)) for _ in range(3)]
        reprs.append(repr(lib.optim.SGD([{"params": ps[:1]}, {"params": ps[1:2], "lr": 0.5},
                                         {"params": ps[2:]}], lr=0.1)))
    assert reprs[1] == reprs[0]


def test_module_constants_version_and_is_nonzero():
    import ember.version
    for name in ("pi", "e", "inf"):
        assert getattr(ember, name) == getattr(torch, name)
    assert ember.nan != ember.nan and isinstance(ember.nan, float)
    assert (ember.version.cuda, ember.version.hip, ember.version.debug) == \
        (torch.version.cuda, torch.version.hip, torch.version.debug) == (None, None, False)
    for vals in ([1], 0.0, [[2.5]], [], [1, 2], [False]):
        outs = []
        for lib in (torch, ember):
            try:
                outs.append(lib.is_nonzero(lib.tensor(vals)))
            except RuntimeError as err:
                outs.append(str(err))
        assert outs[1] == outs[0]
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.is_nonzero(1)


def _apply_map_outcomes(lib):
    cases = [
        lambda: lib.tensor([1.0, 2.0]).apply_(lambda v: v * 10),
        lambda: lib.tensor([1, 2]).apply_(lambda v: v / 3),
        lambda: lib.tensor([True, False]).apply_(lambda v: not v),
        lambda: lib.arange(6.).reshape(2, 3).t().apply_(lambda v: v + 1),
        lambda: lib.tensor([1.0]).apply_(lambda v: "x"),
        lambda: lib.ones(2, requires_grad=True).apply_(lambda v: v),
        lambda: lib.zeros(2, 2).map_(lib.tensor([1.0, 2.0]), lambda u, v: u + v),
        lambda: lib.zeros(2).map_(lib.tensor([1, 2]), lambda u, v: u + v),
        lambda: lib.ones(2).map_(lib.ones(2, requires_grad=True), lambda u, v: u),
    ]
    out = []
    for case in cases:
        try:
            out.append(case().tolist())
        except (RuntimeError, TypeError) as e:
            out.append((type(e).__name__, str(e)))
    base = lib.ones(3)
    base[1:].apply_(lambda v: 5)
    out.append((base.tolist(), base._version))
    return out


def test_apply_and_map_run_python_callables_in_place():
    assert _apply_map_outcomes(ember) == _apply_map_outcomes(torch)


def test_adjoint_is_the_conjugate_transpose_of_matrices():
    z = [[1 + 2j, 3j], [2.0, -1j]]
    assert ember.adjoint(ember.tensor(z)).tolist() == torch.adjoint(torch.tensor(z)).tolist()
    assert ember.ones(4, 2, 3).adjoint().shape == (4, 3, 2)
    with pytest.raises(RuntimeError, match="only supported on matrices or batches of matrices"):
        ember.ones(3).adjoint()


def test_topk_returns_tied_elements_in_torchs_order():
    """torch's CPU topk selects with libstdc++'s unstable nth_element / partial_sort; the
    order among ties (and all of sorted=False's order) is what that leaves."""
    import numpy as np
    rng = np.random.default_rng(0)
    cases = [(np.zeros(n, np.float32), k, True, True) for n, k in [(5, 3), (8, 3), (100, 3),
                                                                   (1000, 3), (40, 39)]]
    cases += [(np.array([3, 1, 2, 3, 1, 5, 2, 2]), 3, True, True),
              (np.array([5., 1, 4, 2, 3, 9, 0, 7]), 3, False, False),
              (np.array([1., np.nan, 1, np.nan, 0]), 3, True, True)]
    cases += [(rng.integers(0, 3, (4, 30)).astype(np.float64), 7, bool(i % 2), bool(i // 2))
              for i in range(4)]
    for x, k, largest, srt in cases:
        t = torch.from_numpy(x).topk(k, largest=largest, sorted=srt)
        e = ember.from_numpy(x).topk(k, largest=largest, sorted=srt)
        assert e.indices.tolist() == t.indices.tolist()
        np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())


def test_l1_unstructured_pruning_breaks_ties_as_torch():
    import ember.nn.utils.prune  # noqa: F401
    import torch.nn.utils.prune  # noqa: F401
    masks = []
    for lib in (torch, ember):
        lin = lib.nn.Linear(4, 3)
        with lib.no_grad():
            lin.weight.copy_(lib.arange(12.).reshape(3, 4) - 6)
        lib.nn.utils.prune.l1_unstructured(lin, name="weight", amount=0.5)
        masks.append(lin.weight_mask.tolist())
    assert masks[1] == masks[0]


def test_return_types_module_names_each_ops_result_type():
    r = ember.max(ember.ones(2, 2), 0)
    assert type(r) is ember.return_types.max
    assert isinstance(ember.ones(3).sort(), ember.return_types.sort)
    assert repr(ember.return_types.topk) == repr(torch.return_types.topk)
    with pytest.raises(AttributeError):
        ember.return_types.not_an_op


def test_lstm_output_prints_torchs_cpu_node_name():
    for lib in (torch, ember):
        out, (h, c) = lib.nn.LSTM(4, 3)(lib.ones(3, 2, 4))
        assert out.grad_fn.name() == "MkldnnRnnLayerBackward0"
        assert h.grad_fn.name() == "StackBackward0"


def test_version_compares_as_torchs_and_names_the_torch_api():
    import torch
    for v in (ember.__version__, torch.__version__):
        assert v > "2.1" and v >= (2, 13) and v >= "2.13" and v < "2.13.1"
        assert v > "2.13.0" and v >= "1.10.0a0" and v != (2, 13, 0)
        with pytest.raises(TypeError):
            v < 2
    assert ember.__version__.startswith("2.13.0+") and ember.version.__version__ is \
        ember.__version__
    from ember.torch_version import Version
    assert Version("1.0.dev1") < Version("1.0a1") < Version("1.0rc2") < Version("1.0") < \
        Version("1.0.post1") and Version("2.0") == Version("2.0.0")


def test_devices_this_build_lacks_raise_torchs_classes():
    import torch
    for lib in (ember, torch):
        for call in (lambda: lib.ones(1, device="cuda"), lambda: lib.ones(1).cuda(),
                     lambda: lib.nn.Linear(1, 1).cuda(), lambda: lib.cuda.current_device(),
                     lambda: lib.ones(1, device="xpu")):
            with pytest.raises(AssertionError, match="Torch not compiled with (CUDA|XPU)"):
                call()
        with pytest.raises(NotImplementedError):
            lib.ones(1, device="mps")
    with pytest.raises(RuntimeError, match="no backend for device 'cuda'"):
        ember.zeros(1, device="cuda")           # ember's is a RuntimeError as well


def test_mse_loss_of_0d_tensors():
    import torch
    for r in ("mean", "sum", "none"):
        a = ember.tensor(-8.4784, requires_grad=True)
        out = ember.nn.functional.mse_loss(a, ember.tensor(-1.7658), reduction=r)
        out.backward()
        ta = torch.tensor(-8.4784, requires_grad=True)
        tout = torch.nn.functional.mse_loss(ta, torch.tensor(-1.7658), reduction=r)
        tout.backward()
        assert out.shape == tout.shape
        assert abs(out.item() - tout.item()) < 1e-4 and abs(a.grad.item() - ta.grad.item()) < 1e-4


def test_plain_indexing_fast_path_as_torch():
    # x[i], x[i, j], x[:, a:b], x[a:b] take a short path (ember/_ops/indexing.py
    # _plain_index): values, strides, offsets, view-ness, grad_fn and gradients as torch's
    import numpy as np
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for idx in [0, -1, (1, 2), (0, -1, 3), (slice(None), 1), (slice(1, 3), slice(None, None, 2)),
                slice(1, None), slice(0, 100), (0, slice(1, 2), -1), (1, 1, 1), 2, (5,),
                (slice(None), 7), (0, 0, 0, 0)]:
        got = want = None
        te, tt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        try:
            want = tt[idx]
        except IndexError as e:
            with pytest.raises(IndexError, match=str(e).split(" ")[0]):
                te[idx]
            continue
        got = te[idx]
        assert got.shape == tuple(want.shape) and got.stride() == want.stride()
        assert got.storage_offset() == want.storage_offset()
        assert type(got.grad_fn).__name__ == type(want.grad_fn).__name__
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_array_equal(te.grad.numpy(), tt.grad.numpy())


def test_boolean_mask_indexing_fast_path_as_torch():
    import numpy as np
    rng = np.random.default_rng(0)
    for shape, mshape in [((8, 16), (8, 16)), ((8, 16), (8,)), ((2, 3, 4), (2, 3)),
                          ((0, 3), (0,))]:
        x = rng.standard_normal(shape).astype(np.float32)
        m = rng.random(mshape) > 0.5
        te, tt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        got, want = te[ember.tensor(m)], tt[torch.tensor(m)]
        assert got.shape == tuple(want.shape) and got.stride() == want.stride()
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        (got * 2).sum().backward()
        (want * 2).sum().backward()
        np.testing.assert_array_equal(te.grad.numpy(), tt.grad.numpy())


def test_anomaly_forward_trace_under_the_launcher_starts_at_the_script(tmp_path):
    # python -m ember.run: the forward traceback of anomaly mode shows the script's frames
    # only, as a plain `python script.py` under torch does (no runpy, launcher, recorder)
    import subprocess
    import sys
    script = tmp_path / "anomaly_script.py"
    script.write_text("import torch\n"
                      "def f(x):\n"
                      "    return (x * 0).sqrt()\n"
                      "x = torch.zeros(3, requires_grad=True)\n"
                      "with torch.autograd.detect_anomaly():\n"
                      "    y = f(x).sum()\n"
                      "    try:\n"
                      "        y.backward()\n"
                      "    except RuntimeError:\n"
                      "        print('raised')\n")
    r = subprocess.run([sys.executable, "-m", "ember.run", str(script)], capture_output=True,
                       text=True, timeout=120)
    assert r.stdout.strip() == "raised"
    trace = r.stderr.split("Traceback of forward call that caused the error:\n", 1)[1]
    lines = trace.splitlines()
    assert lines[0] == f'  File "{script}", line 6, in <module>'
    assert lines[2] == f'  File "{script}", line 3, in f'
    assert "runpy" not in trace.split("\n\n")[0] and "<ember" not in trace
