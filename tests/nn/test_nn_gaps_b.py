"""torch.nn gaps (part B): nn.grad, nn.attention, AdaptiveLogSoftmaxWithLoss,
LinearCrossEntropyLoss — checked against torch."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn.attention
import ember.nn.grad

torch = pytest.importorskip("torch")
import torch.nn.attention  # noqa: E402

# div_value=4 on 8 features gives a 0-wide tail layer, as in torch
pytestmark = pytest.mark.filterwarnings("ignore:Initializing zero-element tensors")


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


def _asm_pair(**kw):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kw)
    em = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kw)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("kw", [dict(div_value=2.0), dict(head_bias=True), {}])
def test_adaptive_log_softmax_structure_and_repr(kw):
    tm, em = _asm_pair(**kw)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    assert [tuple(v.shape) for v in em.state_dict().values()] == \
        [tuple(v.shape) for v in tm.state_dict().values()]
    for name in ("cutoffs", "shortlist_size", "n_clusters", "head_size", "in_features",
                 "n_classes", "div_value", "head_bias"):
        assert getattr(em, name) == getattr(tm, name)


def test_adaptive_log_softmax_forward_values_and_grads():
    tm, em = _asm_pair(div_value=2.0, head_bias=True)
    tx, ex = _pair(6, 8, grad=True)
    target = [0, 4, 7, 9, 2, 5]
    tout = tm(tx, torch.tensor(target))
    eout = em(ex, ember.tensor(target))
    assert type(eout).__name__ == "_ASMoutput" and eout._fields == ("output", "loss")
    _close(eout.output, tout.output)
    _close(eout.loss, tout.loss)
    tout.loss.backward()
    eout.loss.backward()
    _close(ex.grad, tx.grad)
    tp, ep = dict(tm.named_parameters()), dict(em.named_parameters())
    for name in tp:
        _close(ep[name].grad, tp[name].grad)
    # unbatched
    t1, e1 = tm(tx[1], torch.tensor(4)), em(ex[1], ember.tensor(4))
    assert tuple(e1.output.shape) == () and tuple(t1.output.shape) == ()
    _close(e1.output, t1.output)


def test_adaptive_log_softmax_log_prob_and_predict():
    tm, em = _asm_pair(div_value=2.0)
    tx, ex = _pair(16, 8)
    _close(em.log_prob(ex), tm.log_prob(tx))
    np.testing.assert_allclose(em.log_prob(ex).exp().sum(1).detach().numpy(), 1.0, rtol=1e-5)
    # push rows into every cluster: scale the head so cluster logits win sometimes
    with torch.no_grad():
        tm.head.weight[3:] *= 5
    em.head.weight.data = ember.tensor(tm.head.weight.detach().numpy())
    tpred, epred = tm.predict(tx), em.predict(ex)
    assert (tpred >= 3).any()
    np.testing.assert_array_equal(epred.numpy(), tpred.numpy())


@pytest.mark.parametrize("cutoffs", [[6, 3], [3, 3], [0, 3], [3, 10], [3, 11], [3.5], []])
def test_adaptive_log_softmax_bad_cutoffs(cutoffs):
    with pytest.raises(ValueError) as te:
        torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    with pytest.raises(ValueError) as ee:
        ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("xs,target", [((4, 8), [0, 1, 2, 10]), ((4, 8), [0, 1, 2, -1]),
                                       ((4, 8), [0, 1, 2]), ((2, 4, 8), [0, 1]),
                                       ((2, 8), [[0], [1]]), ((2, 8), 0), ((8,), [1])])
def test_adaptive_log_softmax_bad_targets(xs, target):
    tm, em = _asm_pair()
    tx, ex = _pair(*xs)
    with pytest.raises(RuntimeError) as te:
        tm(tx, torch.tensor(target))
    with pytest.raises(RuntimeError) as ee:
        em(ex, ember.tensor(target))
    assert str(ee.value) == str(te.value)


def _lce_pair(**kw):
    tkw = dict(kw)
    ekw = dict(kw)
    if "weight" in kw:
        tkw["weight"] = torch.tensor(kw["weight"])
        ekw["weight"] = ember.tensor(kw["weight"])
    tm = torch.nn.LinearCrossEntropyLoss(8, 10, **tkw)
    em = ember.nn.LinearCrossEntropyLoss(8, 10, **ekw)
    em.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})
    return tm, em


@pytest.mark.parametrize("kw,tshape", [
    ({}, (5,)),
    (dict(out_features=(2,), bias=True, weight=np.linspace(0.1, 1, 10, dtype=np.float32),
          ignore_index=3, label_smoothing=0.1, reduction="sum"), (5, 2)),
    (dict(bias=True, reduction="none"), (5,))])
def test_linear_cross_entropy_loss_module_matches_torch(kw, tshape):
    tm, em = _lce_pair(**kw)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    tx, ex = _pair(5, 8, grad=True)
    target = np.random.default_rng(0).integers(0, 10, tshape)
    tl, el = tm(tx, torch.tensor(target)), em(ex, ember.tensor(target))
    _close(el, tl)
    tl.sum().backward()
    el.sum().backward()
    _close(ex.grad, tx.grad)
    _close(em.linear.weight.grad, tm.linear.weight.grad)


def test_linear_cross_entropy_loss_module_errors():
    for kw, match in ((dict(label_smoothing=2.0), "label_smoothing"),
                      (dict(weight=np.ones(3, np.float32)), "weight shape")):
        with pytest.raises(RuntimeError, match=match) as te:
            _lce_pair(**kw)
        kw = dict(kw)
        if "weight" in kw:
            kw["weight"] = ember.tensor(kw["weight"])
        with pytest.raises(RuntimeError) as ee:
            ember.nn.LinearCrossEntropyLoss(8, 10, **kw)
        assert str(ee.value) == str(te.value)
    em = ember.nn.LinearCrossEntropyLoss(8, 10, reduction="bad")
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        em(ember.randn(4, 8), ember.zeros(4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="got 7 and 8"):
        ember.nn.LinearCrossEntropyLoss(8, 10)(ember.randn(4, 7),
                                               ember.zeros(4, dtype=ember.int64))


@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
@pytest.mark.parametrize("L,S", [(3, 5), (4, 4), (5, 3)])
def test_attention_bias_causal_matches_torch(variant, L, S):
    import torch.nn.attention.bias as tb
    import ember.nn.attention.bias as eb
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tbias = getattr(tb, variant)(L, S)
    with warnings.catch_warnings(record=True) as ew:
        warnings.simplefilter("always")
        ebias = getattr(eb, variant)(L, S)
    assert [str(w.message) for w in ew] == [str(w.message) for w in tw]
    np.testing.assert_array_equal(ebias._materialize().numpy(), tbias._materialize().numpy())
    assert repr(ebias) == repr(tbias)
    tq, eq = _pair(1, 2, L, 4, grad=True)
    tk, ek = _pair(1, 2, S, 4, grad=True)
    tout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tk, attn_mask=tbias)
    eout = ember.nn.functional.scaled_dot_product_attention(eq, ek, ek, attn_mask=ebias)
    # rows with no key to attend (lower-right, L > S) come out 0 in both
    _close(eout, tout)
    tout.square().sum().backward()
    eout.square().sum().backward()
    _close(eq.grad, tq.grad)
    _close(ek.grad, tk.grad)
    with pytest.raises(ValueError, match="should not be used with causal=True"):
        ember.nn.functional.scaled_dot_product_attention(eq, ek, ek, attn_mask=ebias,
                                                         is_causal=True)
    with pytest.raises(AssertionError, match="only supports 2D tensors"):
        getattr(eb, variant)(L)


def test_sdp_backend_prints_and_compares_as_torchs():
    for name in ("MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "ERROR"):
        e, t = getattr(ember.nn.attention.SDPBackend, name), getattr(torch.nn.attention.SDPBackend, name)
        assert (str(e), e.name, e.value, e == e.value) == (str(t), t.name, t.value, t == t.value)
