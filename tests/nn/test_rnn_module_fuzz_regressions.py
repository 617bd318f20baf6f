"""Regressions found by differential fuzzing of RNNs, the Module API, nn.init and nn.utils
against torch 2.13 (identical weights; values, key lists, reprs, warnings, exception classes)."""
import warnings

import numpy as np
import pytest

from helpers import torch

import ember
from ember import nn

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the oracle")

TOL = dict(rtol=1e-4, atol=1e-5)


def _np(t):
    return t.detach().numpy()


def _det(lib, m, seed=0):
    g = np.random.RandomState(seed)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.from_numpy(g.randn(*p.shape).astype(np.float32)))
    return m


def _raises_like(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(type(te.value)):
        fe()


# ------------------------------------------------------------------ nn.utils.weight_norm
def test_weight_norm_warns_future_warning_like_torch():
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            lib.nn.utils.weight_norm(lib.nn.Linear(2, 2))


@pytest.mark.parametrize("make,dim", [("bias", 1), ("bias", 2), ("lin", 3), ("lin", -3)])
def test_weight_norm_dim_out_of_range_raises_index_error(make, dim):
    def f(lib):
        m = lib.nn.Linear(2, 2)
        return lambda: lib.nn.utils.weight_norm(m, "bias" if make == "bias" else "weight",
                                                dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _raises_like(f(ember), f(torch))


def test_weight_norm_negative_dim_wraps():
    out = {}
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = lib.nn.utils.weight_norm(_det(lib, lib.nn.Linear(3, 2)), dim=-2)
        out[lib.__name__] = (tuple(m.weight_g.shape), _np(m.weight_g), _np(m(lib.ones(1, 3))))
    e, t = out["ember"], out["torch"]
    assert e[0] == t[0] == (2, 1)
    np.testing.assert_allclose(e[1], t[1], **TOL)
    np.testing.assert_allclose(e[2], t[2], **TOL)


# ------------------------------------------------------------- nn.utils.parametrizations
@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_parametrizations_weight_norm_matches_torch(dim):
    res = {}
    for lib in (ember, torch):
        m = _det(lib, lib.nn.Conv1d(2, 3, 2))
        lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
        o = m(lib.ones(1, 2, 4))
        o.sum().backward()
        res[lib.__name__] = (list(m.state_dict()), [n for n, _ in m.named_parameters()],
                             _np(o), [_np(p.grad) for p in m.parameters()],
                             _np(m.parametrizations.weight.original0), repr(m))
    e, t = res["ember"], res["torch"]
    assert e[0] == t[0] and e[1] == t[1] and e[5] == t[5]
    np.testing.assert_allclose(e[2], t[2], **TOL)
    np.testing.assert_allclose(e[4], t[4], **TOL)
    for a, b in zip(e[3], t[3]):
        np.testing.assert_allclose(a, b, **TOL)


def test_parametrizations_weight_norm_loads_old_g_v_checkpoint():
    res = {}
    for lib in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = lib.nn.utils.weight_norm(_det(lib, lib.nn.Linear(3, 2)))
        m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(3, 2))
        r = m.load_state_dict(old.state_dict())
        res[lib.__name__] = (r.missing_keys, r.unexpected_keys, _np(m.weight), _np(old.weight))
    e, t = res["ember"], res["torch"]
    assert e[:2] == t[:2] == ([], [])
    np.testing.assert_allclose(e[2], t[2], **TOL)
    np.testing.assert_allclose(e[2], e[3], **TOL)


@pytest.mark.parametrize("make", ["lin", "conv_t"])
def test_parametrizations_spectral_norm_matches_torch(make):
    res = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        base = lib.nn.Linear(4, 3) if make == "lin" else lib.nn.ConvTranspose1d(2, 3, 2)
        m = _det(lib, base)
        lib.nn.utils.parametrizations.spectral_norm(m, n_power_iterations=40)
        keys = list(m.state_dict())
        shapes = [tuple(b.shape) for b in m.buffers()]
        x = lib.ones(1, 4) if make == "lin" else lib.ones(1, 2, 4)
        m(x)
        m.eval()
        w = _np(m.weight).reshape(_np(m.weight).shape[0], -1) if make == "lin" else \
            np.moveaxis(_np(m.weight), 1, 0).reshape(3, -1)
        res[lib.__name__] = (keys, shapes, np.linalg.svd(w, compute_uv=False)[0], repr(m))
    e, t = res["ember"], res["torch"]
    assert e[0] == t[0] and e[1] == t[1] and e[3] == t[3]
    np.testing.assert_allclose(e[2], t[2], rtol=1e-3)
    np.testing.assert_allclose(e[2], 1.0, rtol=1e-3)


def test_parametrizations_spectral_norm_errors():
    for name, kw in (("foo", {}), ("weight", dict(n_power_iterations=0)),
                     ("weight", dict(dim=2))):
        _raises_like(
            lambda: ember.nn.utils.parametrizations.spectral_norm(nn.Linear(2, 3), name, **kw),
            lambda: torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(2, 3), name,
                                                                  **kw))


# ---------------------------------------------------------------- functional_call
def _tied(lib):
    class T(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lib.nn.Linear(2, 2, bias=False)
            self.b = lib.nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))
    return _det(lib, T())


def test_functional_call_unexpected_key_is_ignored_when_not_strict():
    res = {}
    for lib in (ember, torch):
        m = _tied(lib)
        out = lib.func.functional_call(m, {"a.weight": 2 * lib.eye(2), "zz": lib.ones(1)},
                                       (lib.ones(1, 2),))
        res[lib.__name__] = (_np(out), hasattr(m, "zz"))
    assert res["ember"][1] is res["torch"][1] is False
    np.testing.assert_allclose(res["ember"][0], res["torch"][0], **TOL)


def test_functional_call_non_tensor_attribute_raises_type_error():
    _raises_like(lambda: ember.func.functional_call(_tied(ember), {"forward": ember.ones(1)},
                                                    (ember.ones(1, 2),)),
                 lambda: torch.func.functional_call(_tied(torch), {"forward": torch.ones(1)},
                                                    (torch.ones(1, 2),)))


def test_functional_call_conflicting_tied_values_raise():
    _raises_like(
        lambda: ember.func.functional_call(
            _tied(ember), {"a.weight": ember.eye(2), "b.weight": 2 * ember.eye(2)},
            (ember.ones(1, 2),)),
        lambda: torch.func.functional_call(
            _tied(torch), {"a.weight": torch.eye(2), "b.weight": 2 * torch.eye(2)},
            (torch.ones(1, 2),)))
    # the same tensor for both tied names is fine
    w = 2 * ember.eye(2)
    out = ember.func.functional_call(_tied(ember), {"a.weight": w, "b.weight": w},
                                     (ember.ones(1, 2),))
    np.testing.assert_allclose(_np(out), [[4.0, 4.0]])


# ------------------------------------------------------------------- nn.utils.rnn
def test_pad_sequence_of_0d_tensors_raises_runtime_error():
    _raises_like(lambda: nn.utils.rnn.pad_sequence([ember.tensor(1.), ember.tensor(2.)]),
                 lambda: torch.nn.utils.rnn.pad_sequence([torch.tensor(1.), torch.tensor(2.)]))


# ------------------------------------------------------------------------ Module
def test_module_share_memory_returns_self():
    m = nn.Linear(2, 2)
    w = m.weight
    assert m.share_memory() is m and m.weight is w
    assert torch.nn.Linear(2, 2).share_memory() is not None


def test_lazy_linear_matches_torch():
    res = {}
    for lib in (ember, torch):
        m = lib.nn.LazyLinear(3)
        before = (repr(m), m.has_uninitialized_params())
        o = m(lib.ones(2, 5))
        res[lib.__name__] = (before, repr(m), type(m).__name__, tuple(m.weight.shape),
                             tuple(m.bias.shape), tuple(o.shape),
                             float(m.weight.detach().abs().max()) <= 1 / 5 ** 0.5)
        m2 = lib.nn.LazyLinear(2, bias=False, dtype=lib.float64)
        o2 = m2(lib.ones(1, 4, dtype=lib.float64))
        res[lib.__name__] += (repr(m2), str(o2.dtype), [n for n, _ in m2.named_parameters()])
    assert res["ember"] == res["torch"]


def test_lazy_linear_load_state_dict_materializes():
    res = {}
    for lib in (ember, torch):
        src = _det(lib, lib.nn.Linear(4, 2))
        m = lib.nn.LazyLinear(2)
        r = m.load_state_dict(src.state_dict())
        res[lib.__name__] = (r.missing_keys, r.unexpected_keys, type(m).__name__,
                             type(m.weight).__name__, tuple(m.weight.shape),
                             _np(m(lib.ones(1, 4))), type(m).__name__)
    e, t = res["ember"], res["torch"]
    assert e[:5] == t[:5] and e[6] == t[6]
    np.testing.assert_allclose(e[5], t[5], **TOL)


def test_linear_with_zero_in_features_matches_torch():
    """x (..., 0) @ W (out, 0)^T is zeros (+ bias); the weight gradient is (out, 0)."""
    x = np.ones((4, 2, 0), np.float32)
    w = np.ones((5, 0), np.float32)
    b = np.arange(5, dtype=np.float32)
    xe, we, be = (ember.tensor(a, requires_grad=True) for a in (x, w, b))
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ye, yt = ember.nn.functional.linear(xe, we, be), torch.nn.functional.linear(xt, wt, bt)
    np.testing.assert_array_equal(ye.detach().numpy(), yt.detach().numpy())
    ye.sum().backward()
    yt.sum().backward()
    for e, t in ((xe, xt), (we, wt), (be, bt)):
        assert tuple(e.grad.shape) == tuple(t.grad.shape)
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
