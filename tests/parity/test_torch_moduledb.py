"""Parity with PyTorch's own module database: every ModuleInfo of
``torch.testing._internal.common_modules.module_db`` whose class ember has must match torch
(``tests/parity/torch_moduledb.py``): repr, state_dict keys and shapes, buffer names, forward
outputs (float32 and float64, training and eval), running statistics afterwards, and float64
gradients of inputs and parameters. ``KNOWN_FAILURES`` are strict xfails; the test runs the
first ``TEST_MAX_SAMPLES`` samples (``python -m tests.parity.torch_moduledb`` runs 8).
Below: direct regression tests of the ember bugs the harness found (their samples lie past
the first few) and the harness checking itself.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember  # noqa: E402

from . import torch_moduledb as M  # noqa: E402

TEST_MAX_SAMPLES = 2          # and the variants (non-contiguous, hooks...) in training mode only

# module name -> why it still fails (empty: every module of the database passes)
KNOWN_FAILURES: dict[str, str] = {}

try:
    MODULES = M.all_modules()
except Exception as e:  # torch without its test internals
    pytest.skip(f"torch's module database is unavailable: {e}", allow_module_level=True)


def _param(info):
    marks = ()
    if info.name in KNOWN_FAILURES:
        marks = (pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[info.name]),)
    return pytest.param(info, id=info.name, marks=marks)


@pytest.mark.parametrize("info", [_param(i) for i in MODULES])
def test_module(info):
    r = M.check_module(info, max_samples=TEST_MAX_SAMPLES, variant_modes=(True,))
    if r.status == "nosamples":
        pytest.skip(r.reason)
    assert r.status == "pass", f"{r.id}: {r.reason}"


def test_known_failures_name_modules():
    names = {i.name for i in MODULES}
    assert not sorted(set(KNOWN_FAILURES) - names)


def test_every_module_of_the_database_exists_in_ember():
    missing = [i.name for i in MODULES if M.ember_class(i) is None]
    assert not missing, missing


# ------------------------------------------------- regressions of bugs the harness found

def _close(e, t, **kw):
    torch.testing.assert_close(torch.from_numpy(e.detach().numpy().copy()), t.detach(), **kw)


def test_batch_norm_empty_batch_leaves_running_stats():
    for shape in [(0, 5, 9), (3, 5, 0), (0, 5)]:
        x = torch.randn(shape)
        t_rm, t_rv = torch.full((5,), 0.5), torch.full((5,), 2.0)
        e_rm, e_rv = ember.full((5,), 0.5), ember.full((5,), 2.0)
        t = torch.nn.functional.batch_norm(x, t_rm, t_rv, training=True, momentum=0.3)
        e = ember.nn.functional.batch_norm(ember.from_numpy(x.numpy()), e_rm, e_rv,
                                           training=True, momentum=0.3)
        assert tuple(e.shape) == tuple(t.shape)
        _close(e_rm, t_rm)
        _close(e_rv, t_rv)
    t_m, e_m = torch.nn.BatchNorm2d(5), ember.nn.BatchNorm2d(5)
    t_m(torch.randn(0, 5, 2, 2))
    e_m(ember.randn(0, 5, 2, 2))
    for k, v in t_m.state_dict().items():
        _close(e_m.state_dict()[k], v)


def test_lazy_module_to_dtype_before_materializing():
    for name in ["LazyConv1d", "LazyConvTranspose2d", "LazyLinear"]:
        e_m = getattr(ember.nn, name)(5, 3) if name != "LazyLinear" else ember.nn.LazyLinear(5)
        e_m = e_m.to(ember.float64)
        assert isinstance(e_m.weight, ember.nn.UninitializedParameter)
        assert e_m.weight.dtype == ember.float64
    p = ember.nn.UninitializedParameter()
    p.data = ember.ones(2, dtype=ember.float64)              # torch allows setting .data
    assert isinstance(p, ember.nn.UninitializedParameter) and p.dtype == ember.float64
    with pytest.raises(ValueError, match="uninitialized parameter"):
        p.add(1)


@pytest.mark.parametrize("var_shape", [(2, 4, 3), (2, 4), (1, 4, 3), (2, 1, 3), (2, 4, 1),
                                       (1, 1, 3), (3,), (), (1, 2, 4, 3)])
def test_gaussian_nll_loss_var_shapes(var_shape):
    x, t = torch.randn(2, 4, 3), torch.randn(2, 4, 3)
    v = torch.rand(var_shape) + 0.5
    conv = [ember.from_numpy(a.numpy()) for a in (x, t, v)]
    try:
        exp = torch.nn.functional.gaussian_nll_loss(x, t, v, reduction="none")
    except ValueError as err:
        with pytest.raises(ValueError, match="var is of incorrect size"):
            ember.nn.functional.gaussian_nll_loss(*conv, reduction="none")
        assert "incorrect size" in str(err)
        return
    _close(ember.nn.functional.gaussian_nll_loss(*conv, reduction="none"), exp)


@pytest.mark.parametrize("x_shape,s_shape,s_dtype", [
    ((4, 5, 5, 5), (2, 4, 3), "float32"),          # more sample rows than the batch: first
    ((2, 4, 5, 5, 5), (3, 4, 3), "float32"),
    ((2, 4, 5, 5, 5), (1, 4, 3), "float32"), ((2, 4, 5, 5, 5), (2, 5, 3), "float32"),
    ((2, 4, 5, 5, 5), (2, 4, 2), "float32"), ((4, 5, 5, 5), (4, 3), "float32"),
    ((2, 4, 5, 5, 5), (2, 4, 3), "float64")])
def test_fractional_max_pool3d_random_samples(x_shape, s_shape, s_dtype):
    x, s = torch.randn(x_shape), torch.rand(s_shape, dtype=getattr(torch, s_dtype))
    ex, es = ember.from_numpy(x.numpy()), ember.from_numpy(s.numpy())
    try:
        exp = torch.nn.functional.fractional_max_pool3d(x, 2, output_ratio=0.5,
                                                        _random_samples=s)
    except RuntimeError as err:
        with pytest.raises(RuntimeError) as got:
            ember.nn.functional.fractional_max_pool3d(ex, 2, output_ratio=0.5,
                                                      _random_samples=es)
        assert str(got.value) == str(err)
        return
    _close(ember.nn.functional.fractional_max_pool3d(ex, 2, output_ratio=0.5,
                                                     _random_samples=es), exp)


@pytest.mark.parametrize("fn,shape,args,kwargs", [
    ("max_pool2d", (1, 1, 20, 20), (3,), dict(padding=3, dilation=2)),
    ("max_pool2d", (1, 1, 20, 20), ((3, 5),), dict(padding=(1, 3))),
    ("max_pool2d", (1, 1, 20, 20), ((5, 3),), dict(padding=(2, 2), dilation=(1, 2))),
    ("max_pool2d", (1, 1, 20, 20), (4,), dict(padding=2)),
    ("max_pool2d", (1, 1, 20, 20), (4,), dict(padding=3, dilation=2)),
    ("max_pool1d", (1, 1, 20), (3,), dict(padding=2, dilation=2, return_indices=True)),
    ("max_pool1d", (1, 1, 20), (3,), dict(padding=5, return_indices=True)),
    ("max_pool1d", (1, 1, 20), (3,), dict(padding=2, dilation=2)),
    ("max_pool3d", (1, 1, 9, 9, 9), (3,), dict(padding=2, dilation=2)),
    ("max_pool3d", (1, 1, 9, 9, 9), ((3, 5, 3),), dict(padding=(1, 3, 1))),
    ("avg_pool1d", (1, 1, 20), (3,), dict(padding=2)),
    ("avg_pool2d", (1, 1, 20, 20), (4,), dict(padding=3)),
])
def test_pool_padding_bounds_as_torch(fn, shape, args, kwargs):
    x = torch.randn(shape)
    try:
        exp = getattr(torch.nn.functional, fn)(x, *args, **kwargs)
    except RuntimeError as err:
        with pytest.raises(RuntimeError) as got:
            getattr(ember.nn.functional, fn)(ember.from_numpy(x.numpy()), *args, **kwargs)
        assert str(got.value) == str(err)
        return
    got = getattr(ember.nn.functional, fn)(ember.from_numpy(x.numpy()), *args, **kwargs)
    _close(got[0] if isinstance(got, tuple) else got, exp[0] if isinstance(exp, tuple) else exp)


def test_full_backward_hook_gives_zeros_for_inputs_without_grad():
    got = {}
    for lib in (torch, ember):
        x = lib.ones(3, 4, dtype=lib.float64, requires_grad=True)
        seen = []
        for m, other in [(lib.nn.MSELoss(), lib.zeros(3, 4, dtype=lib.float64)),
                         (lib.nn.NLLLoss(), lib.tensor([0, 1, 2]))]:
            m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
            m(x, other).backward()
        got[lib] = [[None if g is None else (tuple(g.shape), str(g.dtype).split(".")[-1],
                                             g.detach().abs().sum().item()) for g in gi]
                    for gi in seen]
        assert x.grad is not None
    assert got[ember] == got[torch]
    assert got[torch][0][1] == ((3, 4), "float64", 0.0)      # zeros, not None


# ------------------------------------------------------------ the harness checks itself

SELF_TEST = ["nn.Linear", "nn.BatchNorm2d", "nn.GRUCell", "nn.MultiheadAttention",
             "nn.LazyConv2d", "nn.CTCLoss", "nn.MaxPool2d", "nn.GroupNorm"]


def _info(name):
    return next(i for i in MODULES if i.name == name)


def test_harness_passes_torch_against_itself(monkeypatch):
    monkeypatch.setattr(M, "ember", torch)
    monkeypatch.setattr(M.H, "ember", torch)
    monkeypatch.setattr(M.H, "_imported", [])
    bad = {}
    for name in SELF_TEST:
        r = M.check_module(_info(name), max_samples=1)
        if r.status != "pass":
            bad[name] = r.reason
    assert not bad, bad


class _OffLinear(ember.nn.Linear):
    def forward(self, input):
        return super().forward(input) * (1 + 1e-4)


class _NoBiasGradLinear(ember.nn.Linear):
    def forward(self, input):
        bias = None if self.bias is None else self.bias.detach()
        return ember.nn.functional.linear(input, self.weight, bias)


class _ReprLinear(ember.nn.Linear):
    def extra_repr(self):
        return super().extra_repr().replace("bias=True", "bias=1")


class _FrozenStatsBatchNorm(ember.nn.BatchNorm2d):
    def forward(self, x):
        return ember.nn.functional.batch_norm(x, self.running_mean.clone(),
                                              self.running_var.clone(), self.weight, self.bias,
                                              self.training, self.momentum, self.eps)


@pytest.mark.parametrize("name,fake,expect", [
    ("nn.Linear", _OffLinear, "values differ"),
    ("nn.Linear", _NoBiasGradLinear, "grad of parameter 'bias'"),
    ("nn.Linear", _ReprLinear, "repr"),
    ("nn.BatchNorm2d", _FrozenStatsBatchNorm, "after forward"),
])
def test_harness_catches_a_wrong_module(monkeypatch, name, fake, expect):
    fake.__name__ = name[3:]                       # the same repr head as torch's class
    monkeypatch.setattr(M, "ember_class", lambda info: fake)
    r = M.check_module(_info(name), max_samples=2)
    assert r.status == "fail" and expect in r.reason, r
