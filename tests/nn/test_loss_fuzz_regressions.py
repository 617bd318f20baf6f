"""Regressions found by differential fuzzing of the losses against torch 2.13: weighted
means, argument checks (exception classes), dtypes and shapes, gradients of edge cases."""
import warnings

import numpy as np
import pytest

import ember
from helpers import torch

rng = np.random.default_rng(7)
X, Y = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
P = rng.uniform(0.1, 0.9, (3, 4))
W = rng.uniform(0.2, 2.0, (3, 4))
LP = rng.standard_normal((5, 2, 4))
LP = LP - np.log(np.exp(LP).sum(-1, keepdims=True))


def _both(fn):
    """fn(lib) for ember and torch: (result or exception class) each, warnings muted."""
    out = []
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.append(fn(lib))
            except Exception as e:           # noqa: BLE001 - the class is what we compare
                out.append(type(e))
    return out


def _same_error(fn):
    e, t = _both(fn)
    assert isinstance(t, type) and issubclass(t, Exception), f"torch did not raise: {t}"
    assert e is t, f"ember gave {e}, torch raised {t.__name__}"


def _same_value(fn, rtol=1e-7, atol=1e-10):
    e, t = _both(fn)
    assert not isinstance(e, type), f"ember raised {e}"
    assert str(e.dtype) == str(t.dtype) and tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def _grads(lib, name, arrays, grad_idx, **kw):
    ts = [lib.tensor(a, requires_grad=(i in grad_idx)) for i, a in enumerate(arrays)]
    kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    out = getattr(lib.nn.functional, name)(*ts, **kw)
    gs = lib.autograd.grad(out, [ts[i] for i in grad_idx])
    return out.detach().numpy(), [g.numpy() for g in gs]


# ---------------------------------------------------------------- pointwise losses

@pytest.mark.parametrize("name", ["l1_loss", "mse_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_l1_mse_mean_divides_by_weight_sum(name, reduction):
    def f(lib):
        x, y, w = (lib.tensor(a, requires_grad=True) for a in (X, Y, W))
        out = getattr(lib.nn.functional, name)(x, y, reduction=reduction, weight=w)
        return out, lib.autograd.grad(out.sum(), (x, y, w))
    (eo, eg), (to, tg) = _both(f)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10)
    for a, b in zip(eg, tg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss", "huber_loss"])
def test_pointwise_weight_of_other_size_raises(name):
    _same_error(lambda L: getattr(L.nn.functional, name)(
        L.tensor(X), L.tensor(Y), weight=L.tensor(W[0])))


@pytest.mark.parametrize("delta", [0.0, -1.0])
def test_huber_nonpositive_delta_raises(delta):
    _same_error(lambda L: L.nn.functional.huber_loss(L.tensor(X), L.tensor(Y), delta=delta))
    _same_error(lambda L: L.nn.HuberLoss(delta=delta)(L.tensor(X), L.tensor(Y)))


def test_huber_result_takes_input_dtype():
    _same_value(lambda L: L.nn.functional.huber_loss(
        L.tensor(X, dtype=L.float32), L.tensor(Y), reduction="none"), rtol=1e-6)
    _same_value(lambda L: L.nn.functional.huber_loss(
        L.tensor(X), L.tensor(Y, dtype=L.float32)))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.mse_loss(L.tensor([1, 2]), L.tensor([1, 3])),
    lambda L: L.nn.functional.huber_loss(L.tensor([1, 2]), L.tensor([1, 3])),
    lambda L: L.nn.functional.smooth_l1_loss(L.tensor([True]), L.tensor([True])),
    lambda L: L.nn.functional.huber_loss(L.tensor([1, 2]), L.tensor([1.0, 3.0])),
    lambda L: L.nn.functional.soft_margin_loss(L.tensor([1, 2]), L.tensor([1.0, -1.0])),
    lambda L: L.nn.functional.kl_div(L.tensor([0.1, 0.2]), L.tensor([1, 2]), reduction="sum"),
    lambda L: L.nn.functional.kl_div(L.tensor([1, 2]), L.tensor([0.1, 0.2]), reduction="sum"),
])
def test_pointwise_integral_inputs_raise(case):
    _same_error(case)


def test_pointwise_integral_target_with_float_input_still_works():
    _same_value(lambda L: L.nn.functional.mse_loss(L.tensor(X[0]), L.tensor([1, 0, 2, 1])))
    _same_value(lambda L: L.nn.functional.huber_loss(L.tensor(X[0]), L.tensor([1, 0, 2, 1])))


# ---------------------------------------------------------------- binary cross entropy

@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.binary_cross_entropy(L.tensor(P), L.tensor(P, dtype=L.float32)),
    lambda L: L.nn.functional.binary_cross_entropy(L.tensor(P), L.tensor((P > .5) * 1)),
    lambda L: L.nn.functional.binary_cross_entropy(L.tensor(P[0]), L.tensor(P[0]),
                                                   weight=L.tensor(P)),
    lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.tensor(X),
                                                               L.tensor((P > .5) * 1)),
    lambda L: L.nn.functional.binary_cross_entropy_with_logits(L.tensor(X), L.tensor(P > .5)),
])
def test_bce_dtype_and_weight_checks(case):
    _same_error(case)


@pytest.mark.parametrize("reduction", ["none", "mean"])
def test_bce_with_logits_result_takes_target_dtype(reduction):
    _same_value(lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        L.tensor(X), L.tensor(P, dtype=L.float32), reduction=reduction), rtol=1e-6)
    _same_value(lambda L: L.nn.functional.binary_cross_entropy_with_logits(
        L.tensor(X, dtype=L.float32), L.tensor(P), reduction=reduction), rtol=1e-6)


# ---------------------------------------------------------------- non-differentiable args

NODIFF = [
    lambda L, r: L.nn.functional.nll_loss(L.tensor(X), L.tensor([0, 1, 2]),
                                          weight=r(L, P[0])),
    lambda L, r: L.nn.functional.cross_entropy(L.tensor(X), L.tensor([0, 1, 2]),
                                               weight=r(L, P[0])),
    lambda L, r: L.nn.functional.binary_cross_entropy(L.tensor(P), L.tensor(P),
                                                      weight=r(L, P)),
    lambda L, r: L.nn.functional.multi_margin_loss(L.tensor(X), L.tensor([0, 1, 2]),
                                                   weight=r(L, P[0])),
    lambda L, r: L.nn.functional.soft_margin_loss(L.tensor(X), r(L, np.sign(Y))),
    lambda L, r: L.nn.functional.binary_cross_entropy_with_logits(L.tensor(X), L.tensor(P),
                                                                  weight=r(L, P)),
    lambda L, r: L.nn.functional.binary_cross_entropy_with_logits(L.tensor(X), L.tensor(P),
                                                                  pos_weight=r(L, P[0])),
]


@pytest.mark.parametrize("case", NODIFF)
def test_nondifferentiable_argument_requiring_grad_raises(case):
    _same_error(lambda L: case(L, lambda L, a: L.tensor(a, requires_grad=True)))

    def no_grad(L):
        with L.no_grad():
            return case(L, lambda L, a: L.tensor(a, requires_grad=True))
    _same_value(no_grad)


# ---------------------------------------------------------------- nll / cross entropy

def test_cross_entropy_probabilities_reject_nonnegative_ignore_index():
    for ii in (0, 2):
        _same_error(lambda L: L.nn.functional.cross_entropy(
            L.tensor(X), L.tensor(P), ignore_index=ii))
        _same_error(lambda L: L.nn.CrossEntropyLoss(ignore_index=ii)(L.tensor(X), L.tensor(P)))
    _same_value(lambda L: L.nn.functional.cross_entropy(L.tensor(X), L.tensor(P),
                                                        ignore_index=-1))


@pytest.mark.parametrize("kw", [{}])
def test_cross_entropy_all_ignored_mean_gradient_is_zero(kw):
    t = np.array([1, 1, 1])
    eo, eg = _grads(ember, "cross_entropy", [X, t], [0], ignore_index=1, **kw)
    to, tg = _grads(torch, "cross_entropy", [X, t], [0], ignore_index=1, **kw)
    assert np.isnan(eo) and np.isnan(to)
    np.testing.assert_array_equal(eg[0], tg[0])


def test_cross_entropy_all_ignored_double_backward_is_finite():
    x = ember.tensor(X, requires_grad=True)
    out = ember.nn.functional.cross_entropy(x, ember.tensor([1, 1, 1]), ignore_index=1)
    g, = ember.autograd.grad(out, x, create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy(), np.zeros_like(X))


@pytest.mark.parametrize("dt", ["int32", "int16", "int8", "bool"])
def test_nll_and_cross_entropy_reject_non_long_targets(dt):
    for name in ("nll_loss", "cross_entropy"):
        _same_error(lambda L: getattr(L.nn.functional, name)(
            L.tensor(X), L.zeros(3, dtype=getattr(L, dt))))


def test_nll_uint8_target_only_without_extra_dims():
    _same_value(lambda L: L.nn.functional.nll_loss(L.tensor(X), L.tensor([0, 3, 1],
                                                                         dtype=L.uint8)))
    _same_error(lambda L: L.nn.functional.nll_loss(L.tensor(X[..., None]),
                                                   L.zeros((3, 1), dtype=L.uint8)))


def test_nll_unbatched_input_with_one_element_target():
    _same_value(lambda L: L.nn.functional.nll_loss(L.tensor(X[0]), L.tensor([2]),
                                                   reduction="none"))
    _same_value(lambda L: L.nn.functional.cross_entropy(L.tensor(X[0]), L.tensor([2])))
    _same_error(lambda L: L.nn.functional.nll_loss(L.tensor(X[0]), L.tensor([1, 2])))
    _same_error(lambda L: L.nn.functional.nll_loss(L.tensor(X), L.tensor(1)))


def test_nll_weight_checks():
    w22 = np.ones((2, 2))
    _same_error(lambda L: L.nn.functional.nll_loss(L.tensor(X), L.tensor([0, 1, 2]),
                                                   weight=L.tensor(w22)))
    # K-d input: any weight holding C elements is taken
    _same_value(lambda L: L.nn.functional.nll_loss(L.tensor(X[..., None]),
                                                   L.tensor([[0], [1], [3]]),
                                                   weight=L.tensor(W[:2, :2])))
    _same_error(lambda L: L.nn.functional.nll_loss(L.tensor(X), L.tensor([0, 1, 2]),
                                                   weight=L.tensor(P[0], dtype=L.float32)))
    _same_error(lambda L: L.nn.functional.cross_entropy(L.tensor(X), L.tensor([0, 1, 2]),
                                                        weight=L.tensor(P[0],
                                                                        dtype=L.float32)))


def test_cross_entropy_0d_input_and_zero_classes():
    _same_error(lambda L: L.nn.functional.cross_entropy(L.tensor(0.5), L.tensor(0)))
    _same_error(lambda L: L.nn.functional.cross_entropy(L.tensor(0.5), L.tensor(1.0)))
    _same_error(lambda L: L.nn.functional.cross_entropy(L.zeros((2, 0)),
                                                        L.zeros(2, dtype=L.int64)))


# ---------------------------------------------------------------- margin losses

def test_multilabel_soft_margin_0d_raises():
    _same_error(lambda L: L.nn.functional.multilabel_soft_margin_loss(L.tensor(0.5),
                                                                      L.tensor(1.0)))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(X), L.zeros((3, 4))),
    lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(X),
                                                     L.zeros((3, 4), dtype=L.int32)),
    lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(X[None]),
                                                     L.zeros((1, 3, 4), dtype=L.int64)),
    lambda L: L.nn.functional.multilabel_margin_loss(L.zeros((3, 0)),
                                                     L.zeros((3, 0), dtype=L.int64)),
    lambda L: L.nn.functional.multilabel_margin_loss(L.tensor(X[0]),
                                                     L.zeros((1, 4), dtype=L.int64)),
])
def test_multilabel_margin_checks(case):
    _same_error(case)


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X), L.tensor([[0], [1], [2]])),
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X), L.tensor([0, 1, 2],
                                                                      dtype=L.int32)),
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X), L.tensor([0., 1., 2.])),
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X[0]), L.tensor([1, 2])),
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X), L.tensor([0, 1, 2]),
                                                weight=L.tensor(P[0], dtype=L.float32)),
    lambda L: L.nn.functional.multi_margin_loss(L.tensor(X[None]), L.tensor([[0, 1, 2]])),
])
def test_multi_margin_checks(case):
    _same_error(case)


def test_multi_margin_none_takes_target_shape():
    _same_value(lambda L: L.nn.functional.multi_margin_loss(L.tensor(X[0]), L.tensor([2]),
                                                            reduction="none"))
    _same_value(lambda L: L.nn.functional.multi_margin_loss(L.tensor(X[:1]), L.tensor(2),
                                                            reduction="none"))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.functional.cosine_embedding_loss(L.tensor(X[0]), L.tensor(Y[0]),
                                                    L.tensor([1.0])),
    lambda L: L.nn.functional.cosine_embedding_loss(L.tensor(X), L.tensor(Y), L.tensor(1.0)),
    lambda L: L.nn.functional.cosine_embedding_loss(L.tensor(X), L.tensor(Y),
                                                    L.ones((3, 1))),
    lambda L: L.nn.functional.cosine_embedding_loss(L.tensor(X[None]), L.tensor(Y[None]),
                                                    L.ones((1, 3))),
    lambda L: L.nn.CosineEmbeddingLoss()(L.tensor(X[0]), L.tensor(Y[0]), L.ones(4)),
])
def test_cosine_embedding_target_dims(case):
    _same_error(case)


def test_triplet_margin_checks():
    for m in (0.0, -1.0):
        _same_error(lambda L: L.nn.functional.triplet_margin_loss(
            L.tensor(X), L.tensor(Y), L.tensor(P), margin=m))
    _same_error(lambda L: L.nn.functional.triplet_margin_with_distance_loss(
        L.tensor(X), L.tensor(Y), L.tensor(P[0])))
    _same_error(lambda L: L.nn.TripletMarginWithDistanceLoss()(
        L.tensor(X), L.tensor(Y[0]), L.tensor(P)))


# ---------------------------------------------------------------- ctc

def _ctc(L, lp=LP, targets=((1, 2), (1, 1)), il=(5, 5), tl=(2, 2), **kw):
    def t(v):
        return v if isinstance(v, list) else L.tensor(np.asarray(v))
    return L.nn.functional.ctc_loss(L.tensor(lp), L.tensor(np.asarray(targets)), t(il), t(tl),
                                    **kw)


@pytest.mark.parametrize("case", [
    lambda L: _ctc(L, tl=(3, 2)),                        # targets too short for the length
    lambda L: _ctc(L, tl=(-1, 2)),
    lambda L: _ctc(L, il=(-1, 5), tl=(1, 2)),
    lambda L: _ctc(L, il=(5,)),
    lambda L: _ctc(L, tl=(2,)),
    lambda L: _ctc(L, targets=((1, 2),)),                # batch mismatch
    lambda L: _ctc(L, il=(5., 5.), tl=(2., 2.)),
    lambda L: _ctc(L, targets=(1, 2, 1)),                # concatenated: 3 != 4
    lambda L: _ctc(L, targets=(1, 2, 1, 1, 2)),          # concatenated: 5 != 4
    lambda L: _ctc(L, lp=LP[None]),
    lambda L: _ctc(L, lp=np.zeros((0, 2, 4))),
    lambda L: _ctc(L, lp=np.zeros((1, 1, 2), dtype=np.int64), targets=((1,),), il=(1,),
                   tl=(1,)),
    lambda L: _ctc(L, lp=LP[:, 0], targets=1, il=(5,), tl=(1,)),      # 0-d targets
])
def test_ctc_argument_checks(case):
    _same_error(case)


def test_ctc_unbatched_padded_targets_still_work():
    _same_value(lambda L: _ctc(L, lp=LP[:, 0], targets=((1, 2, 3),), il=(5,), tl=(2,)))
    _same_value(lambda L: _ctc(L, lp=LP[:, 0], targets=(1, 2), il=(5,), tl=(2,)))
    _same_value(lambda L: _ctc(L, targets=(1, 2, 1, 1), il=[5, 4], tl=[2, 2],
                               reduction="sum"))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_every_target_empty_matches_torch(reduction):
    rng = np.random.default_rng(0)
    T, N, C = 6, 3, 5
    lp = np.log(rng.dirichlet(np.ones(C), (T, N)))
    il = [6, 4, 5]
    a, b = ember.tensor(lp, requires_grad=True), torch.tensor(lp, requires_grad=True)
    le = ember.nn.functional.ctc_loss(a, ember.zeros((N, 0), dtype=ember.long),
                                      ember.tensor(il), ember.tensor([0] * N), reduction=reduction)
    lt = torch.nn.functional.ctc_loss(b, torch.zeros((N, 0), dtype=torch.long),
                                      torch.tensor(il), torch.tensor([0] * N), reduction=reduction)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-10)
    le.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_nll_every_target_ignored_mean_gradient_is_zero(weighted):
    x = np.random.default_rng(1).standard_normal((2, 3))
    w = np.array([0.5, 0.7, 0.9]) if weighted else None
    xe, xt = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ember.nn.functional.nll_loss(xe, ember.tensor([1, 1]), ignore_index=1,
                                 weight=None if w is None else ember.tensor(w)).backward()
    torch.nn.functional.nll_loss(xt, torch.tensor([1, 1]), ignore_index=1,
                                 weight=None if w is None else torch.tensor(w)).backward()
    np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())
