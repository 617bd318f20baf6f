"""ember.optim.lr_scheduler vs torch.optim.lr_scheduler (torch 2.13 is the oracle)."""
import importlib
import math
import warnings

import numpy as np
import pytest

import ember
import ember.optim as eoptim
from ember.optim import lr_scheduler as elrs

torch = pytest.importorskip("torch")
tlrs = torch.optim.lr_scheduler


def make(lib, opt_name="SGD", lr=(0.1, 0.05), **kw):
    optim = torch.optim if lib is torch else eoptim
    ps = [lib.zeros(2, requires_grad=True), lib.zeros(3, requires_grad=True)]
    groups = [{"params": [p], "lr": r} for p, r in zip(ps, lr)]
    return optim.__dict__[opt_name](groups, **kw)


def trace(build, steps=30, metrics=None, opt_name="SGD", opt_kw=None, epochs=None,
          keys=("lr",)):
    out = []
    for lib, mod in ((torch, tlrs), (ember, elrs)):
        opt = make(lib, opt_name, **(opt_kw or {}))
        sched = build(mod, opt)
        seq = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(steps):
                opt.step()
                if metrics is not None:
                    sched.step(metrics[i])
                elif epochs is not None:
                    sched.step(epochs[i])
                else:
                    sched.step()
                row = []
                for g in opt.param_groups:
                    for k in keys:
                        row += list(g[k]) if isinstance(g[k], tuple) else [g[k]]
                if not isinstance(sched, mod.ReduceLROnPlateau):
                    row += list(sched.get_last_lr())
                seq.append(row)
        out.append((seq, sched))
    (tseq, tsched), (eseq, esched) = out
    tflat = [float(x) for r in tseq for x in r]
    eflat = [float(x) for r in eseq for x in r]
    np.testing.assert_allclose(np.array(eflat, dtype=float), np.array(tflat, dtype=float),
                               rtol=1e-12, atol=1e-15)
    return tsched, esched


SCHEDS = {
    "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 0.95 ** e),
    "LambdaLR-list": lambda m, o: m.LambdaLR(o, [lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.97),
    "StepLR": lambda m, o: m.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda m, o: m.MultiStepLR(o, milestones=[3, 7, 7, 20], gamma=0.3),
    "ConstantLR": lambda m, o: m.ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda m, o: m.LinearLR(o, start_factor=0.2, end_factor=0.9,
                                        total_iters=11),
    "ExponentialLR": lambda m, o: m.ExponentialLR(o, gamma=0.93),
    "PolynomialLR": lambda m, o: m.PolynomialLR(o, total_iters=17, power=2.0),
    "PolynomialLR-default": lambda m, o: m.PolynomialLR(o),
    "CosineAnnealingLR": lambda m, o: m.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "CosineAnnealingLR-long": lambda m, o: m.CosineAnnealingLR(o, T_max=40),
    "CosineAnnealingWarmRestarts": lambda m, o: m.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2, eta_min=0.002),
    "CosineAnnealingWarmRestarts-1": lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=5),
    "SequentialLR": lambda m, o: m.SequentialLR(
        o, [m.LinearLR(o, start_factor=0.1, total_iters=5),
            m.ExponentialLR(o, gamma=0.9)], milestones=[5]),
    "SequentialLR-3": lambda m, o: m.SequentialLR(
        o, [m.ConstantLR(o, factor=0.5, total_iters=3), m.StepLR(o, 2, 0.5),
            m.CosineAnnealingLR(o, T_max=8)], milestones=[4, 12]),
    "ChainedScheduler": lambda m, o: m.ChainedScheduler(
        [m.ConstantLR(o, factor=0.1, total_iters=2), m.ExponentialLR(o, gamma=0.9)]),
    "ChainedScheduler-opt": lambda m, o: m.ChainedScheduler(
        [m.StepLR(o, 3, 0.5), m.LinearLR(o, 0.5, 1.0, 4)], optimizer=o),
    "OneCycleLR-cos": lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=31),
    "OneCycleLR-linear-3": lambda m, o: m.OneCycleLR(
        o, max_lr=0.8, epochs=3, steps_per_epoch=11, anneal_strategy="linear",
        three_phase=True, pct_start=0.4, div_factor=10, final_div_factor=100),
    "CyclicLR-triangular": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                   step_size_up=4),
    "CyclicLR-triangular2": lambda m, o: m.CyclicLR(o, base_lr=[0.01, 0.02],
                                                    max_lr=[0.1, 0.3], step_size_up=3,
                                                    step_size_down=5, mode="triangular2"),
    "CyclicLR-exp_range": lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1,
                                                  step_size_up=4, mode="exp_range",
                                                  gamma=0.95),
    "CyclicLR-scale_fn": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=2,
                                                 scale_fn=lambda x: 1 / (x + 1),
                                                 scale_mode="iterations"),
}


@pytest.mark.parametrize("name", list(SCHEDS))
def test_schedule_matches_torch(name):
    keys = ("lr", "momentum") if name.startswith(("OneCycle", "CyclicLR")) else ("lr",)
    trace(SCHEDS[name], opt_kw={"momentum": 0.9}, keys=keys)


def test_onecycle_adam_betas():
    tsched, esched = trace(lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=30),
                           steps=29, opt_name="Adam", keys=("lr", "betas"))


def test_onecycle_no_momentum_cycle_and_errors():
    trace(lambda m, o: m.OneCycleLR(o, max_lr=0.3, total_steps=30, cycle_momentum=False),
          steps=29, opt_name="Adam", keys=("lr", "betas"))
    opt = make(ember)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        elrs.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError):
        elrs.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="bogus")
    sched = elrs.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    opt.step()
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        sched.step()
        sched.step()


def test_cyclic_momentum_requires_momentum():
    opt = make(ember, "Adagrad")
    with pytest.raises(ValueError, match="optimizer must support momentum"):
        elrs.CyclicLR(opt, 0.01, 0.1)
    topt = make(torch, "Adagrad")
    with pytest.raises(ValueError) as te:
        tlrs.CyclicLR(topt, 0.01, 0.1)
    with pytest.raises(ValueError) as ee:
        elrs.CyclicLR(opt, 0.01, 0.1)
    assert str(te.value) == str(ee.value)


def test_cyclic_adam_betas():
    trace(lambda m, o: m.CyclicLR(o, 0.001, 0.01, step_size_up=3), opt_name="Adam",
          keys=("lr", "betas"))


@pytest.mark.parametrize("kw", [
    {},
    {"mode": "max", "factor": 0.5, "patience": 2},
    {"threshold_mode": "abs", "threshold": 0.05, "cooldown": 2, "patience": 1},
    {"mode": "max", "threshold_mode": "abs", "min_lr": [0.01, 0.02], "patience": 0},
    {"factor": 0.2, "patience": 1, "eps": 0.05, "min_lr": 0.001},
])
def test_reduce_lr_on_plateau(kw):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.89, 0.89, 0.89, 0.89, 0.5, 0.6, 0.7, 0.7, 0.7,
               0.8, 0.9, 1.0, 1.1, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.3, 0.3, 0.3, 0.3]
    tsched, esched = trace(lambda m, o: m.ReduceLROnPlateau(o, **kw), metrics=metrics)
    assert esched.num_bad_epochs == tsched.num_bad_epochs
    assert esched.best == tsched.best
    assert esched.get_last_lr() == tsched.get_last_lr()


def test_reduce_lr_on_plateau_tensor_metric_and_errors():
    opt = make(ember)
    s = elrs.ReduceLROnPlateau(opt, patience=0)
    s.step(ember.tensor(1.0))
    s.step(ember.tensor(2.0))
    assert opt.param_groups[0]["lr"] == pytest.approx(0.01)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        elrs.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode bogus is unknown!"):
        elrs.ReduceLROnPlateau(opt, mode="bogus")
    with pytest.raises(ValueError, match="threshold mode bogus is unknown!"):
        elrs.ReduceLROnPlateau(opt, threshold_mode="bogus")


def test_warm_restarts_fractional_epochs():
    epochs = [0.1 * i * 1.7 for i in range(30)]
    trace(lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=3, eta_min=0.01),
          epochs=epochs)
    trace(lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3), epochs=epochs)


@pytest.mark.parametrize("T_0,T_mult", [(1, 2), (2, 3), (3, 2), (4, 1), (1, 3)])
def test_warm_restarts_explicit_epochs_across_restarts(T_0, T_mult):
    """step(epoch) locates the period holding `epoch` (restart boundaries, far epochs,
    jumps backwards) as torch does."""
    epochs = [0, 1, 2, 3, 4, 7, 8, 9, 12, 13, 40, 39.5, 121, 363, 364, 5, 1093.25, 0]
    trace(lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=T_0, T_mult=T_mult, eta_min=0.001),
          steps=len(epochs), epochs=epochs)


def test_epoch_argument_closed_form():
    epochs = [0, 2, 5, 5, 9, 12, 3, 20, 21, 22]
    for build in (lambda m, o: m.StepLR(o, 3, 0.5),
                  lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
                  lambda m, o: m.ExponentialLR(o, 0.9),
                  lambda m, o: m.PolynomialLR(o, total_iters=15),
                  lambda m, o: m.MultiStepLR(o, [2, 6], 0.1)):
        trace(build, steps=len(epochs), epochs=epochs)


def test_chaining_two_schedulers_release_example():
    """torch 1.4 release notes: ExponentialLR(0.9) and StepLR(3, 0.1) stepped together."""
    for lr, expected in ((1.0, [1.0, 0.9, 0.81, 0.0729, 0.06561]),
                         (0.1, [0.1, 0.09, 0.081, 0.00729, 0.006561])):
        p = ember.zeros(2, requires_grad=True)
        opt = eoptim.SGD([p], lr=lr)
        s1 = elrs.ExponentialLR(opt, gamma=0.9)
        s2 = elrs.StepLR(opt, step_size=3, gamma=0.1)
        got = []
        for _ in range(5):
            got.append(opt.param_groups[0]["lr"])
            opt.step()
            s1.step()
            s2.step()
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        # and the same in torch
        tp = torch.zeros(2, requires_grad=True)
        topt = torch.optim.SGD([tp], lr=lr)
        t1 = tlrs.ExponentialLR(topt, gamma=0.9)
        t2 = tlrs.StepLR(topt, step_size=3, gamma=0.1)
        tgot = []
        for _ in range(5):
            tgot.append(topt.param_groups[0]["lr"])
            topt.step()
            t1.step()
            t2.step()
        np.testing.assert_allclose(got, tgot, rtol=1e-12)


def test_initial_lr_and_last_epoch():
    opt = make(ember)
    s = elrs.StepLR(opt, 2)
    assert s.last_epoch == 0 and s._step_count == 1
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05]
    assert s.base_lrs == [0.1, 0.05]
    assert s.get_last_lr() == [0.1, 0.05]
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified"):
        elrs.StepLR(make(ember), 2, last_epoch=3)


def test_state_dict_roundtrip():
    tsched, esched = trace(SCHEDS["CosineAnnealingLR"], steps=5)
    esd = esched.state_dict()
    tsd = tsched.state_dict()
    assert sorted(esd) == sorted(tsd)
    for k in tsd:
        if k not in ("optimizer",):
            assert esd[k] == tsd[k], k
    opt = make(ember)
    s2 = elrs.CosineAnnealingLR(opt, T_max=7, eta_min=0.001)
    s2.load_state_dict(esd)
    assert s2.last_epoch == esched.last_epoch
    assert s2.get_last_lr() == esched.get_last_lr()


def test_lambda_state_dict_matches_torch():
    tsched, esched = trace(SCHEDS["LambdaLR"], steps=3)
    esd, tsd = esched.state_dict(), tsched.state_dict()
    assert sorted(esd) == sorted(tsd)
    assert esd["lr_lambdas"] == tsd["lr_lambdas"] == [None, None]


def test_sequential_and_chained_state_dict_keys():
    for name in ("SequentialLR", "ChainedScheduler", "OneCycleLR-cos", "CyclicLR-triangular",
                 "CosineAnnealingWarmRestarts"):
        tsched, esched = trace(SCHEDS[name], steps=4,
                               keys=("lr", "momentum") if "C" in name[:2] else ("lr",),
                               opt_kw={"momentum": 0.9})
        assert sorted(esched.state_dict()) == sorted(tsched.state_dict()), name


def test_reduce_lr_state_dict_roundtrip():
    opt = make(ember)
    s = elrs.ReduceLROnPlateau(opt, patience=1)
    for m in [1, 2, 3]:
        s.step(m)
    sd = s.state_dict()
    topt = make(torch)
    ts = tlrs.ReduceLROnPlateau(topt, patience=1)
    for m in [1, 2, 3]:
        ts.step(m)
    assert sorted(sd) == sorted(ts.state_dict())
    s2 = elrs.ReduceLROnPlateau(make(ember), patience=1)
    s2.load_state_dict(sd)
    assert s2.num_bad_epochs == s.num_bad_epochs and s2.best == s.best


def test_warning_scheduler_before_optimizer_step():
    opt = make(ember)
    s = elrs.StepLR(opt, 2)
    with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer.step\(\)"):
        s.step()


def test_no_warning_in_normal_order():
    opt = make(ember)
    s = elrs.StepLR(opt, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.step()
        s.step()


def test_warning_epoch_deprecated_and_get_lr():
    opt = make(ember)
    s = elrs.StepLR(opt, 2)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter"):
        s.step(3)
    with pytest.warns(UserWarning, match="get_last_lr"):
        s.get_lr()


def test_scheduler_with_adam_and_zero_grad_no_warning():
    p = ember.zeros(2, requires_grad=True)
    opt = eoptim.Adam([p], lr=0.1)
    s = elrs.ExponentialLR(opt, 0.5)
    for _ in range(3):
        p.grad = ember.ones(2)
        opt.step()
        s.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 3)


def test_swalr_matches_torch():
    from ember.optim.swa_utils import SWALR
    from torch.optim.swa_utils import SWALR as TSWALR
    for kw in ({"swa_lr": 0.05, "anneal_epochs": 5},
               {"swa_lr": [0.01, 0.02], "anneal_epochs": 3, "anneal_strategy": "linear"},
               {"swa_lr": 0.3, "anneal_epochs": 0}):
        trace(lambda m, o: (TSWALR if m is tlrs else SWALR)(o, **kw), steps=10)


def test_swa_averaged_model():
    swa = importlib.import_module("ember.optim.swa_utils")
    nn = importlib.import_module("ember.nn")
    m = nn.Linear(3, 2)
    avg = swa.AveragedModel(m)
    ws = []
    for k in range(3):
        with ember.no_grad():
            m.weight.add_(1.0)
        ws.append(m.weight.detach().numpy().copy())
        avg.update_parameters(m)
    np.testing.assert_allclose(avg.module.weight.detach().numpy(), np.mean(ws, 0), rtol=1e-6)
    assert int(avg.n_averaged) == 3
    ema = swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(0.5))
    ema.update_parameters(m)
    w0 = m.weight.detach().numpy().copy()
    with ember.no_grad():
        m.weight.add_(2.0)
    ema.update_parameters(m)
    np.testing.assert_allclose(ema.module.weight.detach().numpy(), w0 + 1.0, rtol=1e-6)


def test_exports():
    for name in ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
                 "LinearLR", "ExponentialLR", "SequentialLR", "CosineAnnealingLR",
                 "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR",
                 "CosineAnnealingWarmRestarts", "OneCycleLR", "PolynomialLR", "LRScheduler"]:
        assert hasattr(elrs, name)
    assert issubclass(elrs.StepLR, elrs.LRScheduler)
    assert issubclass(elrs.ReduceLROnPlateau, elrs.LRScheduler)
    assert elrs._LRScheduler is not None


# ---- behaviour pinned down while rewriting the schedulers (compared against torch) ----

def _make_resumed(lib):
    opt = make(lib)
    for g, init in zip(opt.param_groups, (0.2, 0.07)):
        g["initial_lr"] = init
    return opt


RESUMABLE = {
    "StepLR": lambda m, o, le: m.StepLR(o, 3, 0.5, last_epoch=le),
    "MultiStepLR": lambda m, o, le: m.MultiStepLR(o, [3, 5], 0.5, last_epoch=le),
    "ConstantLR": lambda m, o, le: m.ConstantLR(o, 0.5, 4, last_epoch=le),
    "LinearLR": lambda m, o, le: m.LinearLR(o, 0.5, 1.0, 4, last_epoch=le),
    "ExponentialLR": lambda m, o, le: m.ExponentialLR(o, 0.5, last_epoch=le),
    "PolynomialLR": lambda m, o, le: m.PolynomialLR(o, 6, last_epoch=le),
    "CosineAnnealingLR": lambda m, o, le: m.CosineAnnealingLR(o, 5, last_epoch=le),
    "LambdaLR": lambda m, o, le: m.LambdaLR(o, lambda e: 0.5 ** e, last_epoch=le),
    "MultiplicativeLR": lambda m, o, le: m.MultiplicativeLR(o, lambda e: 0.5, last_epoch=le),
    "CosineAnnealingWarmRestarts": lambda m, o, le: m.CosineAnnealingWarmRestarts(
        o, 3, 2, last_epoch=le),
}


@pytest.mark.parametrize("name", list(RESUMABLE))
@pytest.mark.parametrize("le", [0, 2, 3, 7])
def test_resume_from_last_epoch(name, le):
    rows = []
    for lib, mod in ((torch, tlrs), (ember, elrs)):
        opt = _make_resumed(lib)
        s = RESUMABLE[name](mod, opt, le)
        row = [s.last_epoch, s._step_count] + [float(g["lr"]) for g in opt.param_groups]
        for _ in range(6):
            opt.step()
            s.step()
            row += [float(g["lr"]) for g in opt.param_groups]
        rows.append(row)
    np.testing.assert_allclose(rows[1], rows[0], rtol=1e-12)


@pytest.mark.parametrize("second", ["MultiplicativeLR", "LambdaLR", "CAWR", "CyclicLR",
                                    "PolynomialLR", "LinearLR"])
def test_sequential_restarts_child_with_step0(second):
    child = {
        "MultiplicativeLR": lambda m, o: m.MultiplicativeLR(o, lambda e: 0.8),
        "LambdaLR": lambda m, o: m.LambdaLR(o, lambda e: 1 / (e + 1)),
        "CAWR": lambda m, o: m.CosineAnnealingWarmRestarts(o, 3),
        "CyclicLR": lambda m, o: m.CyclicLR(o, 0.01, 0.1, step_size_up=3),
        "PolynomialLR": lambda m, o: m.PolynomialLR(o, 4),
        "LinearLR": lambda m, o: m.LinearLR(o, 0.25, total_iters=3),
    }[second]
    trace(lambda m, o: m.SequentialLR(o, [m.ExponentialLR(o, 0.9), child(m, o)], [4]),
          steps=15, opt_kw={"momentum": 0.9})


def _all_state_builders():
    b = dict(SCHEDS)
    b["ReduceLROnPlateau"] = lambda m, o: m.ReduceLROnPlateau(o)
    return b


@pytest.mark.parametrize("name", list(_all_state_builders()))
def test_state_dict_matches_torch(name):
    build = _all_state_builders()[name]
    dicts = []
    for lib, mod in ((torch, tlrs), (ember, elrs)):
        opt = make(lib, momentum=0.9)
        s = build(mod, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(3):
                opt.step()
                s.step(1.0) if name == "ReduceLROnPlateau" else s.step()
        dicts.append(s.state_dict())
    tsd, esd = dicts
    assert list(esd) == list(tsd)
    for k in tsd:
        if k != "_schedulers":
            assert esd[k] == tsd[k], k
    if "_schedulers" in tsd:
        for t, e in zip(tsd["_schedulers"], esd["_schedulers"]):
            assert sorted(e) == sorted(t)


@pytest.mark.parametrize("name", [n for n in SCHEDS if "Sequential" not in n
                                  and "Chained" not in n])
def test_get_lr_outside_step_warns_like_torch(name):
    seen = []
    for lib, mod in ((torch, tlrs), (ember, elrs)):
        opt = make(lib, momentum=0.9)
        s = SCHEDS[name](mod, opt)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.get_lr()
        seen.append(sorted(str(x.message) for x in w))
    assert seen[0] == seen[1]


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


ERRORS = [
    lambda m, o: m.StepLR("not an optimizer", 3),
    lambda m, o: m.LambdaLR(o, [lambda e: 1.0]),
    lambda m, o: m.MultiplicativeLR(o, [lambda e: 1.0] * 3),
    lambda m, o: m.ConstantLR(o, factor=1.5),
    lambda m, o: m.LinearLR(o, start_factor=0),
    lambda m, o: m.LinearLR(o, end_factor=2),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, 0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, 2, T_mult=0),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, 2, eta_min="x"),
    lambda m, o: m.CosineAnnealingWarmRestarts(o, 2).step(-1),
    lambda m, o: m.SequentialLR(o, [], []),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2)], [3]),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.ReduceLROnPlateau(o)], [3]),
    lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), object()], [3]),
    lambda m, o: m.ChainedScheduler([]),
    lambda m, o: m.ChainedScheduler([m.StepLR(o, 2), m.ReduceLROnPlateau(o)]),
    lambda m, o: m.ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="bogus"),
    lambda m, o: m.CyclicLR(o, [0.01], 0.1),
    lambda m, o: m.OneCycleLR(o, 0.1, total_steps=0),
    lambda m, o: m.OneCycleLR(o, 0.1, epochs=0, steps_per_epoch=3),
    lambda m, o: m.OneCycleLR(o, 0.1, epochs=2, steps_per_epoch=1.5),
    lambda m, o: m.OneCycleLR(o, 0.1, total_steps=10, pct_start=2.0),
    lambda m, o: m.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="bogus"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    got = [_error(lambda: ERRORS[i](mod, make(lib, momentum=0.9)))
           for lib, mod in ((torch, tlrs), (ember, elrs))]
    assert got[0] is not None
    assert got[0][0] == got[1][0]
    # messages quote the optimizer's repr in one case; compare the stable prefix
    assert got[0][1].split(" has ")[0] == got[1][1].split(" has ")[0]


def test_plateau_new_param_group_errors_like_torch():
    got = []
    for lib, mod in ((torch, tlrs), (ember, elrs)):
        opt = make(lib)
        s = mod.ReduceLROnPlateau(opt, patience=0, min_lr=[0.0, 0.0])
        opt.add_param_group({"params": [lib.zeros(1, requires_grad=True)], "lr": 0.1})
        s.step(1.0)
        got.append(_error(lambda: s.step(2.0)))
    assert got[0] == got[1]


def test_swalr_errors_and_state_dict():
    from ember.optim.swa_utils import SWALR
    from torch.optim.swa_utils import SWALR as TSWALR
    for kw in ({"swa_lr": 0.1, "anneal_strategy": "bogus"}, {"swa_lr": 0.1, "anneal_epochs": -1},
               {"swa_lr": [0.1]}):
        assert _error(lambda: SWALR(make(ember), **kw)) == _error(lambda: TSWALR(make(torch), **kw))
    tsched, esched = trace(lambda m, o: (TSWALR if m is tlrs else SWALR)(
        o, 0.05, anneal_epochs=4, anneal_strategy="linear"), steps=3)
    assert esched.state_dict() == tsched.state_dict()
    s2 = SWALR(make(ember), 0.05)
    s2.load_state_dict(esched.state_dict())
    assert s2.anneal_func(0.5) == 0.5  # linear restored from the saved strategy


def test_swa_avg_fns_and_buffers_match_torch():
    swa = importlib.import_module("ember.optim.swa_utils")
    tswa = torch.optim.swa_utils
    nn = ember.nn
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa.get_ema_avg_fn(1.5)
    with pytest.raises(ValueError, match="Invalid decay value"):
        swa.get_ema_multi_avg_fn(-0.1)
    rng = np.random.default_rng(0)
    snaps = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    for kind in ("swa", "ema", "swa_multi", "ema_multi"):
        for use_buffers in (False, True):
            if kind == "swa_multi" and use_buffers:
                continue  # torch's foreach SWA rejects the integer num_batches_tracked buffer
            results = []
            for lib, mod in ((torch, tswa), (ember, swa)):
                kw = {"avg_fn": mod.get_swa_avg_fn()} if kind == "swa" else \
                    {"avg_fn": mod.get_ema_avg_fn(0.7)} if kind == "ema" else \
                    {"multi_avg_fn": mod.get_swa_multi_avg_fn()} if kind == "swa_multi" else \
                    {"multi_avg_fn": mod.get_ema_multi_avg_fn(0.7)}
                net = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
                with lib.no_grad():
                    net[0].bias.zero_()
                avg = mod.AveragedModel(net, use_buffers=use_buffers, **kw)
                for w in snaps:
                    with lib.no_grad():
                        net[0].weight.copy_(lib.tensor(w))
                        net[1].running_mean.copy_(lib.tensor(w[:, 0]))
                    avg.update_parameters(net)
                results.append([avg.module[0].weight.detach().numpy().copy(),
                                avg.module[1].running_mean.detach().numpy().copy(),
                                int(avg.n_averaged)])
            for t, e in zip(*results):
                np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


def test_update_bn_matches_torch():
    swa = importlib.import_module("ember.optim.swa_utils")
    rng = np.random.default_rng(1)
    batches = [rng.standard_normal((5, 3)).astype(np.float32) for _ in range(3)]
    out = []
    for lib, mod in ((torch, torch.optim.swa_utils), (ember, swa)):
        net = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4, momentum=0.3))
        with lib.no_grad():
            net[0].weight.copy_(lib.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10))
            net[0].bias.copy_(lib.tensor(np.array([0.1, -0.2, 0.3, 0.0], dtype=np.float32)))
        net.eval()
        mod.update_bn([(lib.tensor(b), 0) for b in batches], net)
        out.append((net[1].running_mean.detach().numpy().copy(),
                    net[1].running_var.detach().numpy().copy(), net[1].momentum, net.training))
    for t, e in zip(*out):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)
