"""nn.utils vs torch 2.13: clipping, vector conversion, weight/spectral norm, parametrize,
prune, functional_call."""
import math

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401 (torch does not import it by itself)

import ember
from ember import nn
import ember.nn.utils as U
from ember.nn.utils import parametrize, prune

RS = np.random.RandomState(0)


def _np(t):
    return t.detach().numpy()


def _pair_with_grads():
    e, t = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            pt.copy_(torch.from_numpy(_np(pe).copy()))
    x = RS.randn(5, 4).astype(np.float32)
    (e(ember.from_numpy(x)) ** 2).sum().backward()
    (t(torch.from_numpy(x)) ** 2).sum().backward()
    return e, t


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0])
def test_clip_grad_norm(norm_type):
    e, t = _pair_with_grads()
    ne = U.clip_grad_norm_(e.parameters(), 0.5, norm_type=norm_type)
    nt = torch.nn.utils.clip_grad_norm_(t.parameters(), 0.5, norm_type=norm_type)
    np.testing.assert_allclose(ne.item(), nt.item(), rtol=1e-5)
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_clip_grad_norm_nonfinite_and_foreach():
    e, _ = _pair_with_grads()
    e.weight.grad[0, 0] = float("inf")
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        U.clip_grad_norm_(e.parameters(), 1.0, error_if_nonfinite=True)
    e2, _ = _pair_with_grads()
    U.clip_grad_norm_(e2.parameters(), 1.0, foreach=True)
    assert U.clip_grad_norm_([], 1.0).item() == 0.0


def test_clip_grad_value():
    e, t = _pair_with_grads()
    U.clip_grad_value_(e.parameters(), 0.1)
    torch.nn.utils.clip_grad_value_(t.parameters(), 0.1)
    for pe, pt in zip(e.parameters(), t.parameters()):
        np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_parameters_vector_roundtrip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2))
    v = U.parameters_to_vector(m.parameters())
    assert v.shape == (sum(p.numel() for p in m.parameters()),)
    U.vector_to_parameters(ember.arange(float(v.numel())), m.parameters())
    np.testing.assert_array_equal(_np(m[0].weight).ravel(), np.arange(6))
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        U.vector_to_parameters([1.0], m.parameters())


def test_weight_norm_matches_torch():
    e, t = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            pt.copy_(torch.from_numpy(_np(pe).copy()))
    U.weight_norm(e)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(t)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    np.testing.assert_allclose(_np(e.weight_g), t.weight_g.detach().numpy(), rtol=1e-6)
    x = RS.randn(2, 4).astype(np.float32)
    e(ember.from_numpy(x)).sum().backward()
    t(torch.from_numpy(x)).sum().backward()
    np.testing.assert_allclose(_np(e.weight_g.grad), t.weight_g.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(e.weight_v.grad), t.weight_v.grad.numpy(), rtol=1e-5, atol=1e-6)
    U.remove_weight_norm(e)
    assert [n for n, _ in e.named_parameters()] == ["bias", "weight"]


def test_spectral_norm():
    ember.manual_seed(0)
    m = U.spectral_norm(nn.Linear(6, 5), n_power_iterations=30)
    assert list(m.state_dict().keys()) == list(
        torch.nn.utils.spectral_norm(torch.nn.Linear(6, 5)).state_dict().keys())
    m(ember.randn(2, 6))
    s = np.linalg.svd(_np(m.weight), compute_uv=False)
    assert abs(s[0] - 1) < 1e-3
    U.remove_spectral_norm(m)
    assert "weight" in m._parameters


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(0, 1)

    def right_inverse(self, A):
        return A.triu()


def test_parametrize_register_remove_cached():
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    tm = torch.nn.Linear(3, 3)

    class TSym(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(0, 1)
    torch.nn.utils.parametrize.register_parametrization(tm, "weight", TSym())
    assert repr(m).replace("Symmetric", "TSym") == repr(tm)
    assert list(m.state_dict()) == list(tm.state_dict())
    w = _np(m.weight)
    np.testing.assert_allclose(w, w.T)
    m.weight = ember.ones(3, 3) * 2           # through right_inverse
    np.testing.assert_allclose(_np(m.weight), 2 * np.ones((3, 3)))
    with parametrize.cached():
        assert m.weight is m.weight
    m(ember.ones(1, 3)).sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    parametrize.remove_parametrizations(m, "weight")
    assert not parametrize.is_parametrized(m)
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), 2 * np.ones((3, 3)))


def test_prune_l1_random_remove():
    m = nn.Linear(5, 4)
    prune.l1_unstructured(m, "weight", amount=0.25)
    assert prune.is_pruned(m)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    w = _np(m.weight_orig)
    mask = _np(m.weight_mask)
    assert mask.sum() == 15
    assert np.abs(w[mask == 0]).max() <= np.abs(w[mask == 1]).min()
    np.testing.assert_array_equal(_np(m.weight), w * mask)
    prune.random_unstructured(m, "bias", amount=2)
    assert _np(m.bias_mask).sum() == 2
    prune.remove(m, "weight")
    prune.remove(m, "bias")
    assert not prune.is_pruned(m)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    prune.identity(m, "weight")
    assert (_np(m.weight_mask) == 1).all()


def test_functional_call():
    m = nn.Linear(3, 2)
    x = ember.randn(4, 3)
    w = ember.zeros(2, 3)
    y = U.stateless.functional_call(m, {"weight": w}, (x,))
    np.testing.assert_allclose(_np(y), np.broadcast_to(_np(m.bias), (4, 2)))
    assert isinstance(m.weight, nn.Parameter) and "weight" in m._parameters
    y2 = U.stateless.functional_call(m, ({"weight": w}, {"bias": ember.ones(2)}), x)
    np.testing.assert_allclose(_np(y2), np.ones((4, 2)))
    with pytest.raises(RuntimeError, match="Missing key"):
        U.stateless.functional_call(m, {"weight": w}, (x,), strict=True)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_dims_match_torch(dim):
    e, t = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    with torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            pt.copy_(torch.from_numpy(_np(pe).copy()))
    U.weight_norm(e, dim=dim)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(t, dim=dim)
    assert e.weight_g.shape == tuple(t.weight_g.shape)
    np.testing.assert_allclose(_np(e.weight_g), t.weight_g.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_np(e.weight), t.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        U.weight_norm(e, dim=dim)
    U.remove_weight_norm(e)
    np.testing.assert_allclose(_np(e.weight), t.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        U.remove_weight_norm(e)


def _conv_pair():
    e, t = nn.Conv2d(3, 6, 3), torch.nn.Conv2d(3, 6, 3)
    with torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            pt.copy_(torch.from_numpy(_np(pe).copy()))
    return e, t


# successive prunings of one conv weight, each with the same seed in ember and torch
PRUNE_STEPS = [
    [("random_unstructured", dict(amount=0.3))],
    [("l1_unstructured", dict(amount=10)), ("random_structured", dict(amount=2, dim=0))],
    [("ln_structured", dict(amount=0.5, n=2, dim=0)), ("l1_unstructured", dict(amount=0.2))],
    [("random_structured", dict(amount=1, dim=1)), ("ln_structured", dict(amount=1, n=1, dim=-1)),
     ("random_unstructured", dict(amount=5))],
    [("identity", {}), ("ln_structured", dict(amount=0, n=float("inf"), dim=0))],
]


@pytest.mark.parametrize("steps", PRUNE_STEPS)
def test_prune_sequences_match_torch(steps):
    e, t = _conv_pair()
    for i, (fn, kw) in enumerate(steps):
        ember.manual_seed(i)
        torch.manual_seed(i)
        getattr(prune, fn)(e, "weight", **kw)
        getattr(torch.nn.utils.prune, fn)(t, "weight", **kw)
        np.testing.assert_array_equal(_np(e.weight_mask), t.weight_mask.numpy())
        np.testing.assert_array_equal(_np(e.weight), t.weight.detach().numpy())
    (ek,), (tk,) = e._forward_pre_hooks.values(), t._forward_pre_hooks.values()
    assert type(ek).__name__ == type(tk).__name__
    if len(steps) > 1:
        assert [type(m).__name__ for m in ek] == [type(m).__name__ for m in tk] and len(ek) == len(tk)
    assert list(e.state_dict()) == list(t.state_dict())
    prune.remove(e, "weight")
    torch.nn.utils.prune.remove(t, "weight")
    assert list(e.state_dict()) == list(t.state_dict())
    np.testing.assert_array_equal(_np(e.weight), t.weight.detach().numpy())


def test_prune_global_custom_scores_and_errors():
    (e1, t1), (e2, t2) = _conv_pair(), _pair_with_grads()
    prune.l1_unstructured(e1, "weight", amount=20)
    torch.nn.utils.prune.l1_unstructured(t1, "weight", amount=20)
    scores = RS.rand(3, 4).astype(np.float32)
    for mod, P, wrap in [((e1, e2), prune, ember.from_numpy), ((t1, t2), torch.nn.utils.prune,
                                                                 torch.from_numpy)]:
        P.global_unstructured([(mod[0], "weight"), (mod[1], "weight"), (mod[1], "bias")],
                              P.L1Unstructured, importance_scores={(mod[1], "weight"): wrap(scores)},
                              amount=0.4)
    for a, b in [(e1, t1), (e2, t2)]:
        np.testing.assert_array_equal(_np(a.weight_mask), b.weight_mask.numpy())
    np.testing.assert_array_equal(_np(e2.bias_mask), t2.bias_mask.numpy())
    mask = (RS.rand(3) > 0.5).astype(np.float32)
    prune.custom_from_mask(e2, "bias", ember.from_numpy(mask))
    torch.nn.utils.prune.custom_from_mask(t2, "bias", torch.from_numpy(mask))
    np.testing.assert_array_equal(_np(e2.bias), t2.bias.detach().numpy())
    # prune() without a module, with importance scores
    w = RS.randn(4, 5).astype(np.float32)
    s = RS.rand(4, 5).astype(np.float32)
    got = prune.L1Unstructured(amount=7).prune(ember.from_numpy(w),
                                               importance_scores=ember.from_numpy(s))
    want = torch.nn.utils.prune.L1Unstructured(amount=7).prune(torch.from_numpy(w),
                                                               importance_scores=torch.from_numpy(s))
    np.testing.assert_array_equal(_np(got), want.numpy())
    # errors: the same classes as torch's
    orders = []
    for P, mod in [(prune, nn.Linear(3, 2)), (torch.nn.utils.prune, torch.nn.Linear(3, 2))]:
        for call, err in [(lambda: P.l1_unstructured(mod, "weight", amount=-1), ValueError),
                          (lambda: P.l1_unstructured(mod, "weight", amount=1.5), ValueError),
                          (lambda: P.l1_unstructured(mod, "weight", amount="a"), TypeError),
                          (lambda: P.l1_unstructured(mod, "weight", amount=7), ValueError),
                          (lambda: P.random_structured(mod, "bias", amount=1, dim=0), ValueError),
                          (lambda: P.ln_structured(mod, "weight", 1, 2, dim=2), IndexError),
                          (lambda: P.remove(mod, "weight"), ValueError),
                          (lambda: P.global_unstructured([(mod, "weight")], P.RandomStructured,
                                                         amount=1, dim=0), TypeError),
                          (lambda: P.Identity().apply_mask(mod), AttributeError)]:
            with pytest.raises(err):
                call()
        orders.append([n for n, _ in mod.named_parameters()])
        assert not P.is_pruned(mod)
    assert orders[0] == orders[1]


def _param_classes(lib):
    class Scale(lib.nn.Module):
        def forward(self, x):
            return 2 * x

        def right_inverse(self, x):
            return x / 2

    class Split(lib.nn.Module):         # the original is stored as two tensors
        def forward(self, a, b):
            return a + b

        def right_inverse(self, x):
            return [x * 0.25, x * 0.75]

    class Shrink(lib.nn.Module):
        def forward(self, x):
            return x[:1]

    class NoInverse(lib.nn.Module):
        def forward(self, x):
            return x + 1

    return Scale, Split, Shrink, NoInverse


def _param_story(lib, P):
    """A sequence of parametrize operations; returns what was observed at each step."""
    Scale, Split, Shrink, NoInverse = _param_classes(lib)
    seen = []
    lib.manual_seed(0)
    m = lib.nn.Linear(3, 3)
    with lib.no_grad():
        m.weight.copy_(lib.arange(9.0).reshape(3, 3))
    P.register_parametrization(m, "weight", Split())
    P.register_parametrization(m, "weight", Scale())
    chain = m.parametrizations.weight
    seen += [type(m).__name__, P.type_before_parametrizations(m).__name__, chain.is_tensor,
             chain.ntensors, sorted(k for k, _ in m.named_parameters()),
             m.weight.detach().numpy().tolist(), chain.original1.detach().numpy().tolist()]
    m.weight = lib.ones(3, 3)
    seen.append(chain.original0.detach().numpy().tolist())
    with P.cached():
        seen.append(m.weight is m.weight)
    seen.append(m.weight is m.weight)
    for bad in [lambda: P.register_parametrization(m, "weight", Shrink()),
                lambda: P.register_parametrization(m, "bias", Shrink()),
                lambda: P.register_parametrization(m, "nothing", Scale()),
                lambda: P.remove_parametrizations(m, "weight", leave_parametrized=False),
                lambda: P.remove_parametrizations(m, "bias"),
                lambda: P.ParametrizationList([], m.bias)]:
        try:
            bad()
        except Exception as e:  # noqa: BLE001 (the class and text are what is compared)
            seen.append((type(e).__name__, str(e).replace("torch.", "").replace("ember.", "")))
    other = lib.nn.Linear(3, 3)
    P.transfer_parametrizations_and_params(m, other)
    seen += [P.is_parametrized(other, "weight"), other.weight.detach().numpy().tolist()]
    P.register_parametrization(m, "bias", NoInverse())
    try:
        m.bias = lib.zeros(3)
    except RuntimeError as e:
        seen.append(str(e))
    P.remove_parametrizations(m, "weight")
    seen += [type(m).__name__, m.weight.detach().numpy().tolist(),
             sorted(k for k, _ in m.named_parameters())]
    P.remove_parametrizations(m, "bias", leave_parametrized=False)
    seen += [type(m).__name__, P.is_parametrized(m), m.bias.detach().numpy().tolist()]
    return seen


def test_parametrize_story_matches_torch():
    import torch.nn.utils.parametrize as TP
    assert _param_story(ember, parametrize) == _param_story(torch, TP)


def test_parametrize_copy_and_pickle():
    import copy
    import pickle
    Scale = _param_classes(ember)[0]
    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Scale())
    twin = copy.deepcopy(m)
    assert type(twin).__name__ == "ParametrizedLinear" and twin is not m
    np.testing.assert_array_equal(_np(twin.weight), _np(m.weight))
    assert twin.parametrizations.weight.original is not m.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(m)


@pytest.mark.parametrize("make", [lambda L: L.nn.Linear(5, 4), lambda L: L.nn.ConvTranspose2d(3, 4, 2),
                                  lambda L: L.nn.Conv1d(2, 3, 3)])
def test_spectral_norm_parametrization_seeded_like_torch(make):
    import torch.nn.utils.parametrizations as TP
    from ember.nn.utils import parametrizations as EP
    e, t = make(ember), make(torch)
    with torch.no_grad():
        for pe, pt in zip(e.parameters(), t.parameters()):
            pt.copy_(torch.from_numpy(_np(pe).copy()))
    ember.manual_seed(4)
    torch.manual_seed(4)
    EP.spectral_norm(e)
    TP.spectral_norm(t)
    for _ in range(2):          # training-mode forwards advance the power iteration
        np.testing.assert_allclose(_np(e.weight), t.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    sn_e, sn_t = e.parametrizations.weight[0], t.parametrizations.weight[0]
    assert sn_e.dim == sn_t.dim
    np.testing.assert_allclose(_np(sn_e._v), sn_t._v.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(IndexError):
        EP.spectral_norm(nn.Linear(2, 2), dim=2)
    with pytest.raises(ValueError):
        EP.spectral_norm(nn.Linear(2, 2), name="nothing")


def test_spectral_norm_hook_seeded_like_torch():
    e, t = _conv_pair()
    ember.manual_seed(7)
    torch.manual_seed(7)
    U.spectral_norm(e, n_power_iterations=2)
    torch.nn.utils.spectral_norm(t, n_power_iterations=2)
    x = RS.randn(2, 3, 5, 5).astype(np.float32)
    for _ in range(2):
        np.testing.assert_allclose(_np(e(ember.from_numpy(x))), t(torch.from_numpy(x)).detach().numpy(),
                                   rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_np(e.weight_u), t.weight_u.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        U.spectral_norm(e)
    e2, t2 = nn.Linear(3, 3), torch.nn.Linear(3, 3)
    e2.load_state_dict(U.spectral_norm(nn.Linear(3, 3)).state_dict(), strict=False)
    assert list(U.spectral_norm(e2).state_dict()) == list(torch.nn.utils.spectral_norm(t2).state_dict())
