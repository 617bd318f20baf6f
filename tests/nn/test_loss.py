"""Losses (functional and modules) against torch 2.13."""
import warnings
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from helpers import torch
from nla_compare import compare, gradcheck

TF = torch.nn.functional
rng = np.random.default_rng(2)
X, Y = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
P, Q = rng.uniform(0.05, 0.95, (4, 5)), rng.uniform(0, 1, (4, 5))
T = np.array([1, -100, 4, 0])
S = np.sign(rng.standard_normal(4))
W = rng.uniform(0.2, 1, 5)
MT = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [4, 4, -1, 0, 0]])
LP = np.log(np.exp(r := rng.standard_normal((8, 3, 5))) / np.exp(r).sum(2, keepdims=True))

# (name, inputs, kwargs, which inputs are differentiable in torch)
CASES = [
    ("l1_loss", [X, Y], {}), ("mse_loss", [X, Y], {}), ("huber_loss", [X, Y], {"delta": 0.5}),
    ("smooth_l1_loss", [X, Y], {"beta": 0.5}), ("smooth_l1_loss", [X, Y], {"beta": 0.0}),
    ("soft_margin_loss", [X, np.sign(Y)], {}),
    ("cross_entropy", [X, T], {}), ("cross_entropy", [X, T], {"weight": W}),
    ("cross_entropy", [X, T], {"label_smoothing": 0.2, "weight": W}),
    ("cross_entropy", [X, T], {"label_smoothing": 0.2}),
    ("cross_entropy", [X, Q / Q.sum(1, keepdims=True)], {"label_smoothing": 0.1, "weight": W}),
    ("cross_entropy", [rng.standard_normal((2, 5, 3, 2)), rng.integers(0, 5, (2, 3, 2))],
     {"weight": W}),
    ("cross_entropy", [X[0], np.array(3)], {}),
    ("nll_loss", [X, T], {"weight": W}), ("nll_loss", [X, np.array([1, 2, 4, 0])],
                                          {"ignore_index": 2}),
    ("binary_cross_entropy", [P, Q], {"weight": W}),
    ("binary_cross_entropy_with_logits", [X, Q], {"pos_weight": W, "weight": W}),
    ("binary_cross_entropy_with_logits", [X, Q], {}),
    ("kl_div", [X, Q], {}), ("kl_div", [X, Y], {"log_target": True}),
    ("multilabel_soft_margin_loss", [X, (Q > 0.5) * 1.0], {"weight": W}),
    ("multilabel_margin_loss", [X, MT], {}),
    ("multi_margin_loss", [X, np.array([0, 3, 4, 1])], {"p": 2, "margin": 0.7, "weight": W}),
    ("multi_margin_loss", [X, np.array([0, 3, 4, 1])], {}),
    ("hinge_embedding_loss", [X, np.sign(Y)], {"margin": 0.5}),
    ("cosine_embedding_loss", [X, Y, S], {"margin": 0.2}),
    ("margin_ranking_loss", [X[:, 0], Y[:, 0], S], {"margin": 0.2}),
    ("triplet_margin_loss", [X, Y, rng.standard_normal((4, 5))], {"margin": 0.5, "swap": True}),
    ("triplet_margin_loss", [X, Y, rng.standard_normal((4, 5))], {"p": 1}),
    ("triplet_margin_with_distance_loss", [X, Y, rng.standard_normal((4, 5))], {}),
    ("poisson_nll_loss", [X, P * 3], {}),
    ("poisson_nll_loss", [P + 0.1, P * 3], {"log_input": False, "full": True}),
    ("gaussian_nll_loss", [X, Y, P + 0.1], {"full": True}),
    ("gaussian_nll_loss", [X, Y, P[:, :1]], {}),
    ("ctc_loss", [LP, rng.integers(1, 5, (3, 4)), np.array([8, 6, 7]), np.array([4, 2, 3])], {}),
    ("ctc_loss", [LP, rng.integers(1, 5, (3, 4)), np.array([8, 6, 7]), np.array([4, 4, 0])],
     {"zero_infinity": True}),
    ("ctc_loss", [LP, rng.integers(1, 5, (9,)), np.array([8, 6, 7]), np.array([4, 2, 3])], {}),
]
NODIFF_TARGET = {"soft_margin_loss", "multilabel_soft_margin_loss", "binary_cross_entropy",
                 "hinge_embedding_loss", "cosine_embedding_loss", "margin_ranking_loss",
                 "ctc_loss", "multilabel_margin_loss", "multi_margin_loss"}


def _fns(name, inputs, kw, red):
    nd = name in NODIFF_TARGET or name in ("cross_entropy", "nll_loss")

    def wrap(lib_f, conv):
        def f(*args):
            args = list(args)
            if name == "margin_ranking_loss" or name == "cosine_embedding_loss":
                args[2] = args[2].detach()
            elif nd and len(args) >= 2 and hasattr(args[1], "detach"):
                args[1] = args[1].detach()
            if name == "ctc_loss":
                args[2], args[3] = args[2].detach(), args[3].detach()
            kws = {k: (conv(v.copy()) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
            return lib_f(*args, reduction=red, **kws)
        return f
    return wrap(getattr(F, name), ember.tensor), wrap(getattr(TF, name), torch.tensor)


IDS = [f"{c[0]}-{i}" for i, c in enumerate(CASES)]


@pytest.mark.parametrize("red", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_functional_matches_torch(case, red):
    name, inputs, kw = case
    ef, tf = _fns(name, inputs, kw, red)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare(ef, tf, inputs, atol=1e-9)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] != "ctc_loss"],
                         ids=[i for c, i in zip(CASES, IDS) if c[0] != "ctc_loss"])
def test_gradcheck(case):
    name, inputs, kw = case
    ef, _ = _fns(name, inputs, kw, "mean")
    inputs = list(inputs)
    const = [2] if name in ("margin_ranking_loss", "cosine_embedding_loss") else \
        [1] if name in NODIFF_TARGET or name in ("cross_entropy", "nll_loss") else []
    for i in const:
        inputs[i] = ember.tensor(inputs[i])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradcheck(ef, inputs, gradgrad=name not in ("multilabel_margin_loss",))


def test_ctc_gradcheck_through_log_softmax():
    logits = rng.standard_normal((5, 2, 4))
    tg = np.array([[1, 2], [3, 3]])
    gradcheck(lambda x: F.ctc_loss(x.log_softmax(2), ember.tensor(tg), [5, 4], [2, 2]),
              [logits], gradgrad=False)


def test_errors():
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(ember.randn(3, 5), ember.tensor([0, 7, 1]))
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.nll_loss(ember.randn(3, 5), ember.tensor([0, 1]))
    with pytest.raises(ValueError, match="that is different to the input size"):
        F.binary_cross_entropy(ember.rand(3), ember.rand(4))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(ember.rand(3), ember.rand(4))
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(ember.rand(3), ember.rand(3), reduction="bad")
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(ember.tensor([1.5]), ember.tensor([1.0]))


MODULES = [("L1Loss", ()), ("MSELoss", ()), ("CrossEntropyLoss", ()), ("NLLLoss", ()),
           ("BCELoss", ()), ("BCEWithLogitsLoss", ()), ("KLDivLoss", ()), ("HuberLoss", ()),
           ("SmoothL1Loss", ()), ("SoftMarginLoss", ()), ("MultiLabelSoftMarginLoss", ()),
           ("MultiLabelMarginLoss", ()), ("MultiMarginLoss", ()), ("HingeEmbeddingLoss", ()),
           ("CosineEmbeddingLoss", ()), ("MarginRankingLoss", ()), ("TripletMarginLoss", ()),
           ("TripletMarginWithDistanceLoss", ()), ("PoissonNLLLoss", ()),
           ("GaussianNLLLoss", ()), ("CTCLoss", ())]


@pytest.mark.parametrize("name,args", MODULES, ids=[m[0] for m in MODULES])
def test_module_repr(name, args):
    assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_modules_forward():
    x, t = ember.tensor(X, requires_grad=True), ember.tensor(np.array([1, 2, 4, 0]))
    tx, tt = torch.tensor(X, requires_grad=True), torch.tensor(np.array([1, 2, 4, 0]))
    em = nn.CrossEntropyLoss(weight=ember.tensor(W), label_smoothing=0.1, reduction="sum")
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(W), label_smoothing=0.1, reduction="sum")
    le, lt = em(x, t), tm(tx, tt)
    np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-12)
    le.backward(); lt.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)
    assert repr(le.grad_fn) is not None
    em, tm = nn.BCEWithLogitsLoss(pos_weight=ember.tensor(W)), \
        torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(W))
    np.testing.assert_allclose(em(ember.tensor(X), ember.tensor(Q)).item(),
                               tm(torch.tensor(X), torch.tensor(Q)).item(), rtol=1e-12)
    assert "pos_weight" in dict(em.named_buffers())


def test_torch_toplevel_losses():
    e, t = ember.tensor(X), torch.tensor(X)
    eq, tq = ember.tensor(Q), torch.tensor(Q)
    for name, pre in (("binary_cross_entropy_with_logits", (None, None)), ("kl_div", ())):
        for extra in ((), pre + (1,), pre + (2,)):
            np.testing.assert_allclose(getattr(ember, name)(e, eq, *extra).numpy(),
                                       getattr(torch, name)(t, tq, *extra).numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.poisson_nll_loss(e, eq, True, False, 1e-8, 1).item(),
                               torch.poisson_nll_loss(t, tq, True, False, 1e-8, 1).item())
    y, ty = ember.tensor(S), torch.tensor(S)
    np.testing.assert_allclose(ember.cosine_embedding_loss(e, eq, y).numpy(),
                               torch.cosine_embedding_loss(t, tq, ty).numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.hinge_embedding_loss(e, eq).numpy(),
                               torch.hinge_embedding_loss(t, tq).numpy(), atol=1e-12)
    np.testing.assert_allclose(ember.triplet_margin_loss(e, eq, e).numpy(),
                               torch.triplet_margin_loss(t, tq, t).numpy(), atol=1e-12)


# every loss module, built from the same options in ember and torch, gives torch's value
MODULE_CASES = [
    ("L1Loss", [X, Y], {}), ("MSELoss", [X, Y], {"reduction": "sum"}),
    ("NLLLoss", [X, np.abs(T) % 5], {"ignore_index": 1}), ("CrossEntropyLoss", [X, T], {}),
    ("PoissonNLLLoss", [X, Q], {"full": True}), ("PoissonNLLLoss", [P, Q], {"log_input": False}),
    ("GaussianNLLLoss", [X, Y, P], {"full": True}), ("KLDivLoss", [X, P], {"log_target": False}),
    ("BCELoss", [P, Q], {}), ("BCEWithLogitsLoss", [X, Q], {}),
    ("HingeEmbeddingLoss", [X, np.sign(Y)], {"margin": 0.5}),
    ("MultiLabelMarginLoss", [X, MT], {}), ("SmoothL1Loss", [X, Y], {"beta": 0.3}),
    ("HuberLoss", [X, Y], {"delta": 2}), ("SoftMarginLoss", [X, np.sign(Y)], {}),
    ("MultiLabelSoftMarginLoss", [X, (Q > 0.5) * 1.0], {}),
    ("CosineEmbeddingLoss", [X, Y, S], {"margin": 0.1}),
    ("MarginRankingLoss", [X[:, 0], Y[:, 0], S], {"margin": 0.2}),
    ("MultiMarginLoss", [X, np.abs(T) % 5], {"p": 2, "margin": 0.5}),
    ("TripletMarginLoss", [X, Y, P], {"swap": True, "p": 1.0}),
    ("TripletMarginWithDistanceLoss", [X, Y, P], {"margin": 0.3}),
]


@pytest.mark.parametrize("name,inputs,kwargs", MODULE_CASES)
def test_loss_modules_match_torch(name, inputs, kwargs):
    em, tm = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert getattr(em, "__constants__", None) == getattr(tm, "__constants__", None)
    assert list(em.state_dict()) == list(tm.state_dict())
    for attr, value in vars(tm).items():
        if not attr.startswith("_") and attr != "training":
            assert getattr(em, attr) == value or attr == "distance_function", attr
    ints = name in ("NLLLoss", "CrossEntropyLoss", "MultiLabelMarginLoss", "MultiMarginLoss")
    conv = [(ember.tensor(a), torch.tensor(a)) for a in inputs]
    got, want = em(*[e for e, _ in conv]), tm(*[t for _, t in conv])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-8)
    assert ints or got.shape == tuple(want.shape)


def test_loss_modules_options_by_keyword_and_legacy_flags():
    em = nn.MSELoss(reduction="none")
    x, y = ember.tensor(X), ember.tensor(Y)
    np.testing.assert_allclose(em(input=x, target=y).numpy(), (X - Y) ** 2)
    np.testing.assert_allclose(em(x, target=y).numpy(), (X - Y) ** 2)
    with pytest.raises(TypeError):
        em(x)
    with pytest.raises(TypeError):
        nn.L1Loss(bogus=1)
    for sa, rd in [(None, False), (False, None), (True, True), (False, True), (None, True)]:
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            em_red = nn.NLLLoss(None, sa, -100, rd).reduction
        assert em_red == torch.nn.NLLLoss(None, sa, -100, rd).reduction
        assert "deprecated" in str(got[0].message)
    assert nn.CTCLoss(3, "sum", True).blank == 3
    assert isinstance(nn.BCELoss(), nn.modules.loss._WeightedLoss)
    assert not isinstance(nn.BCEWithLogitsLoss(), nn.modules.loss._WeightedLoss)
    with pytest.warns(FutureWarning):
        assert nn.NLLLoss2d(ignore_index=3).ignore_index == 3
    for bad, err in [(lambda: nn.MultiMarginLoss(p=3), ValueError),
                     (lambda: nn.HuberLoss(delta="a"), TypeError),
                     (lambda: nn.TripletMarginLoss(margin=0), ValueError),
                     (lambda: nn.TripletMarginWithDistanceLoss(margin=-1), ValueError)]:
        with pytest.raises(err):
            bad()

    class Mine(nn.modules.loss._Loss):
        def forward(self, a, b):
            return (a - b).sum()
    assert Mine(reduction="sum").reduction == "sum"


def test_mse_loss_record_agrees_with_its_composite_under_modes():
    """F.mse_loss is one record (MseLossBackward0) without modes; under a mode the same
    ember ops as before run: values and gradients agree, broadcasting warns as torch."""
    from ember._dispatch import Mode
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((1, 4)).astype(np.float32)
    got = []
    for mode in (None, Mode()):
        x, y = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        with pytest.warns(UserWarning, match="target size"):
            if mode is None:
                loss = F.mse_loss(x, y)
            else:
                with mode:
                    loss = F.mse_loss(x, y)
        if mode is None:                            # (under modes: the ops' own nodes)
            assert type(loss.grad_fn).__name__ == "MseLossBackward0"
        loss.backward()
        got.append([loss.item(), x.grad.numpy(), y.grad.numpy()])
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl = TF.mse_loss(tx, ty)
    tl.backward()
    for res in got:
        np.testing.assert_allclose(res[0], tl.item(), rtol=1e-6)
        np.testing.assert_allclose(res[1], tx.grad.numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(res[2], ty.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_kl_div_mean_warning_points_at_the_caller():
    x = ember.randn(3, 4).log_softmax(1)
    y = ember.randn(3, 4).softmax(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.nn.functional.kl_div(x, y); line = sys._getframe().f_lineno
        ember.nn.KLDivLoss()(x, y)
    assert [(w.filename, w.lineno) for w in caught][0] == (__file__, line)
    assert caught[1].filename.endswith("loss.py") and "functional" not in caught[1].filename
