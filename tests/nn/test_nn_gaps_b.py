"""torch.nn gaps (part B): nn.grad, nn.attention, AdaptiveLogSoftmaxWithLoss,
LinearCrossEntropyLoss — checked against torch."""
import numpy as np
import pytest

import ember
import ember.nn.attention
import ember.nn.grad

torch = pytest.importorskip("torch")
import torch.nn.attention  # noqa: E402


def _pair(*shape, grad=False):
    a = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=grad), ember.tensor(a, requires_grad=grad))


def _close(e, t, tol=1e-4):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("nd,kw", [(1, dict(stride=2, padding=1)),
                                   (2, dict(stride=(2, 1), padding=1, dilation=2)),
                                   (2, dict(groups=2, stride=3)), (3, dict(padding=1))])
def test_nn_grad_conv_matches_torch(nd, kw):
    spatial = (9,) * nd
    tx, ex = _pair(2, 4, *spatial)
    groups = kw.get("groups", 1)
    tw, ew = _pair(6, 4 // groups, *(3,) * nd)
    tconv = getattr(torch.nn.functional, f"conv{nd}d")
    tout = tconv(tx, tw, **kw)
    tg, eg = _pair(*tout.shape)
    t_in = getattr(torch.nn.grad, f"conv{nd}d_input")(tx.shape, tw, tg, **kw)
    e_in = getattr(ember.nn.grad, f"conv{nd}d_input")(ex.shape, ew, eg, **kw)
    _close(e_in, t_in)
    t_w = getattr(torch.nn.grad, f"conv{nd}d_weight")(tx, tw.shape, tg, **kw)
    e_w = getattr(ember.nn.grad, f"conv{nd}d_weight")(ex, ew.shape, eg, **kw)
    _close(e_w, t_w)


def test_nn_grad_conv_input_bad_size_raises():
    _, ew = _pair(4, 3, 3, 3)
    _, eg = _pair(2, 4, 4, 4)
    with pytest.raises(RuntimeError):
        ember.nn.grad.conv2d_input((2, 3, 9), ew, eg)
    with pytest.raises(RuntimeError):
        ember.nn.grad.conv2d_input((2, 3, 20, 20), ew, eg)


def test_sdp_backend_enum_matches_torch():
    TB, EB = torch.nn.attention.SDPBackend, ember.nn.attention.SDPBackend
    for name, member in TB.__members__.items():
        assert int(getattr(EB, name)) == int(member)
    assert EB is ember.backends.cuda.SDPBackend


@pytest.mark.parametrize("names,ok", [(["MATH"], True), (["FLASH_ATTENTION"], True),
                                      (["EFFICIENT_ATTENTION", "FLASH_ATTENTION"], True),
                                      (["CUDNN_ATTENTION"], False),
                                      (["EFFICIENT_ATTENTION"], False), ([], False)])
def test_sdpa_kernel_cpu_viability_matches_torch(names, ok):
    tq, eq = _pair(1, 2, 3, 4)
    for mod, lib, q in ((torch, torch.nn.attention, tq), (ember, ember.nn.attention, eq)):
        backends = [getattr(lib.SDPBackend, n) for n in names]
        with lib.sdpa_kernel(backends):
            if ok:
                mod.nn.functional.scaled_dot_product_attention(q, q, q)
            else:
                with pytest.raises(RuntimeError, match="No viable backend"):
                    mod.nn.functional.scaled_dot_product_attention(q, q, q)
    # flags are restored on exit
    assert ember.backends.cuda.math_sdp_enabled() and ember.backends.cuda.cudnn_sdp_enabled()
    ember.nn.functional.scaled_dot_product_attention(eq, eq, eq)


def test_sdpa_kernel_single_backend_and_bad_argument():
    with ember.nn.attention.sdpa_kernel(ember.nn.attention.SDPBackend.CUDNN_ATTENTION):
        assert not ember.backends.cuda.math_sdp_enabled()
        assert ember.backends.cuda.cudnn_sdp_enabled()
    assert ember.backends.cuda.math_sdp_enabled()
    for bad in ("x", None):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend"):
            with ember.nn.attention.sdpa_kernel(bad):
                pass
