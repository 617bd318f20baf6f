"""scaled_dot_product_attention, MultiheadAttention and the Transformer modules vs torch 2.13
(identical weights, eval mode / dropout 0)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember import nn
import ember.nn.functional as F

RS = np.random.RandomState(0)
TOL = dict(rtol=1e-4, atol=2e-5)


def _np(t):
    return t.detach().numpy()


def _sync(e, t):
    assert list(e.state_dict().keys()) == list(t.state_dict().keys())
    t.load_state_dict({k: torch.from_numpy(_np(v).copy()) for k, v in e.state_dict().items()})


def _leaves(*arrays):
    es = [ember.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    return es, ts


def _cmp_backward(oe, ot, es, ts, e_mod=None, t_mod=None, tol=TOL):
    oe = [o for o in (oe if isinstance(oe, (tuple, list)) else [oe])]
    ot = [o for o in (ot if isinstance(ot, (tuple, list)) else [ot])]
    assert len(oe) == len(ot)
    pairs = []
    for a, b in zip(oe, ot):
        if b is None:
            assert a is None
            continue
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), b.detach().numpy(), **tol)
        pairs.append((a, b))
    gs = [RS.randn(*b.shape).astype(np.float32) for _, b in pairs]
    sum((a * ember.from_numpy(g)).sum() for (a, _), g in zip(pairs, gs)).backward()
    sum((b * torch.from_numpy(g)).sum() for (_, b), g in zip(pairs, gs)).backward()
    for a, b in zip(es, ts):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), **tol)
    if e_mod is not None:
        for (n, pe), (_, pt) in zip(e_mod.named_parameters(), t_mod.named_parameters()):
            if pt.grad is None:
                assert pe.grad is None or np.all(_np(pe.grad) == 0), n
            else:
                np.testing.assert_allclose(_np(pe.grad), pt.grad.numpy(), err_msg=n, **tol)


# ------------------------------------------------------------------------------ SDPA
def _bool_mask(shape):
    m = RS.rand(*shape) > 0.3
    m[..., 0] = True
    return m


@pytest.mark.parametrize("mask", ["none", "bool", "float", "bool_bcast", "causal"])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_sdpa(mask, scale):
    q, k, v = (RS.randn(2, 3, 5, 4).astype(np.float32), RS.randn(2, 3, 6, 4).astype(np.float32),
               RS.randn(2, 3, 6, 7).astype(np.float32))
    es, ts = _leaves(q, k, v)
    kw = dict(scale=scale)
    me = mt = None
    if mask == "bool":
        m = _bool_mask((2, 3, 5, 6))
        me, mt = ember.from_numpy(m), torch.from_numpy(m)
    elif mask == "bool_bcast":
        m = _bool_mask((5, 6))
        me, mt = ember.from_numpy(m), torch.from_numpy(m)
    elif mask == "float":
        m = RS.randn(1, 3, 5, 6).astype(np.float32)
        me, mt = ember.from_numpy(m), torch.from_numpy(m)
    elif mask == "causal":
        kw["is_causal"] = True
    oe = F.scaled_dot_product_attention(*es, attn_mask=me, **kw)
    ot = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=mt, **kw)
    _cmp_backward(oe, ot, es, ts)


def test_sdpa_fully_masked_rows_are_zero():
    q, k, v = (RS.randn(1, 2, 3, 4).astype(np.float32) for _ in range(3))
    m = np.ones((3, 3), bool)
    m[1] = False
    es, ts = _leaves(q, k, v)
    oe = F.scaled_dot_product_attention(*es, attn_mask=ember.from_numpy(m))
    ot = torch.nn.functional.scaled_dot_product_attention(*ts, attn_mask=torch.from_numpy(m))
    _cmp_backward(oe, ot, es, ts)
    assert np.all(_np(oe)[:, :, 1] == 0)


def test_sdpa_gqa_and_3d():
    q, k, v = (RS.randn(2, 4, 5, 8).astype(np.float32), RS.randn(2, 2, 6, 8).astype(np.float32),
               RS.randn(2, 2, 6, 8).astype(np.float32))
    es, ts = _leaves(q, k, v)
    oe = F.scaled_dot_product_attention(*es, enable_gqa=True)
    ot = torch.nn.functional.scaled_dot_product_attention(*ts, enable_gqa=True)
    _cmp_backward(oe, ot, es, ts)
    q3 = RS.randn(3, 5, 4).astype(np.float32)
    es, ts = _leaves(q3, q3 * 0.5, q3 + 1)
    _cmp_backward(F.scaled_dot_product_attention(*es, is_causal=True),
                  torch.nn.functional.scaled_dot_product_attention(*ts, is_causal=True), es, ts)


def test_sdpa_dropout_train():
    ember.manual_seed(0)
    q = ember.randn(2, 8, 16)
    y0 = F.scaled_dot_product_attention(q, q, q)
    y1 = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
    assert not np.allclose(_np(y0), _np(y1))


# ------------------------------------------------------------------------- MHA
MHA_CFGS = [
    dict(),
    dict(bias=False),
    dict(add_bias_kv=True),
    dict(add_zero_attn=True),
    dict(kdim=5, vdim=3),
    dict(batch_first=True),
    dict(add_bias_kv=True, add_zero_attn=True, batch_first=True),
]


def _mha_pair(**kw):
    ember.manual_seed(0)
    e = nn.MultiheadAttention(8, 2, **kw)
    t = torch.nn.MultiheadAttention(8, 2, **kw)
    _sync(e, t)
    return e, t


@pytest.mark.parametrize("cfg", MHA_CFGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("masks", ["none", "attn_bool", "attn_float", "kpm", "both", "attn3d"])
def test_mha(cfg, need_weights, average, masks):
    e, t = _mha_pair(**cfg)
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    bf = cfg.get("batch_first", False)
    L, S, B = 4, 5, 3
    kd, vd = cfg.get("kdim", 8), cfg.get("vdim", 8)
    shp = (lambda n, d: (B, n, d)) if bf else (lambda n, d: (n, B, d))
    q, k, v = (RS.randn(*shp(L, 8)).astype(np.float32), RS.randn(*shp(S, kd)).astype(np.float32),
               RS.randn(*shp(S, vd)).astype(np.float32))
    es, ts = _leaves(q, k, v)
    am = kpm = None
    if masks in ("attn_bool", "both"):
        am = RS.rand(L, S) > 0.7
        am[:, 0] = False          # True = masked out in MHA
    elif masks == "attn_float":
        am = RS.randn(L, S).astype(np.float32)
    elif masks == "attn3d":
        am = RS.randn(B * 2, L, S).astype(np.float32)
    if masks in ("kpm", "both"):
        kpm = np.zeros((B, S), bool)
        kpm[1, 3:] = True
    cv = lambda m, lib: None if m is None else lib.from_numpy(m)
    kw = dict(need_weights=need_weights, average_attn_weights=average)
    oe = e(*es, key_padding_mask=cv(kpm, ember), attn_mask=cv(am, ember), **kw)
    ot = t(*ts, key_padding_mask=cv(kpm, torch), attn_mask=cv(am, torch), **kw)
    _cmp_backward(oe, ot, es, ts, e, t)


def test_mha_self_attention_unbatched_and_causal():
    e, t = _mha_pair()
    x = RS.randn(4, 8).astype(np.float32)
    es, ts = _leaves(x)
    _cmp_backward(e(es[0], es[0], es[0]), t(ts[0], ts[0], ts[0]), es, ts, e, t)
    x = RS.randn(5, 2, 8).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(5)
    es, ts = _leaves(x)
    for nw in (True, False):
        oe = e(es[0], es[0], es[0], attn_mask=mask, is_causal=True, need_weights=nw)
        ot = t(ts[0], ts[0], ts[0], attn_mask=tmask, is_causal=True, need_weights=nw)
        for a, b in zip(oe, ot):
            if b is not None:
                np.testing.assert_allclose(_np(a), b.detach().numpy(), **TOL)


def test_mha_functional_and_errors():
    e, t = _mha_pair()
    assert repr(e) == repr(t)
    assert type(e.out_proj).__name__ == "NonDynamicallyQuantizableLinear"
    assert isinstance(e.out_proj, nn.Linear)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(10, 3)
    x = ember.randn(3, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        e(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is"):
        e(x, x, x, attn_mask=ember.zeros(2, 2))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        e(x, x, x, attn_mask=ember.zeros(3, 3, dtype=ember.int64))
    x = RS.randn(3, 2, 8).astype(np.float32)
    ye, we = F.multi_head_attention_forward(
        ember.from_numpy(x), ember.from_numpy(x), ember.from_numpy(x), 8, 2, e.in_proj_weight,
        e.in_proj_bias, None, None, False, 0.0, e.out_proj.weight, e.out_proj.bias,
        training=False)
    yt, wt = torch.nn.functional.multi_head_attention_forward(
        torch.from_numpy(x), torch.from_numpy(x), torch.from_numpy(x), 8, 2, t.in_proj_weight,
        t.in_proj_bias, None, None, False, 0.0, t.out_proj.weight, t.out_proj.bias,
        training=False)
    np.testing.assert_allclose(_np(ye), yt.detach().numpy(), **TOL)
    np.testing.assert_allclose(_np(we), wt.detach().numpy(), **TOL)


# ---------------------------------------------------------------------- transformer
def _layer_pair(cls, *args, **kw):
    ember.manual_seed(0)
    e = getattr(nn, cls)(*args, **kw)
    t = getattr(torch.nn, cls)(*args, **kw)
    _sync(e, t)
    e.eval()
    t.eval()
    return e, t


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("masks", ["none", "causal", "kpm_bool", "both_float"])
def test_encoder_layer(norm_first, batch_first, activation, masks):
    act_e = ember.tanh if activation == "callable" else activation
    act_t = torch.tanh if activation == "callable" else activation
    ember.manual_seed(0)
    e = nn.TransformerEncoderLayer(8, 2, 16, 0.0, act_e, batch_first=batch_first, norm_first=norm_first)
    t = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, act_t, batch_first=batch_first, norm_first=norm_first)
    _sync(e, t)
    x = RS.randn(*((3, 5, 8) if batch_first else (5, 3, 8))).astype(np.float32)
    es, ts = _leaves(x)
    ke, kt = {}, {}
    if masks == "causal":
        ke = dict(src_mask=nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
        kt = dict(src_mask=torch.nn.Transformer.generate_square_subsequent_mask(5), is_causal=True)
    elif masks == "kpm_bool":
        k = np.zeros((3, 5), bool)
        k[0, 3:] = True
        ke = dict(src_key_padding_mask=ember.from_numpy(k))
        kt = dict(src_key_padding_mask=torch.from_numpy(k))
    elif masks == "both_float":
        m = RS.randn(5, 5).astype(np.float32)
        k = np.where(RS.rand(3, 5) > 0.7, -np.inf, 0).astype(np.float32)
        k[:, 0] = 0
        ke = dict(src_mask=ember.from_numpy(m), src_key_padding_mask=ember.from_numpy(k))
        kt = dict(src_mask=torch.from_numpy(m), src_key_padding_mask=torch.from_numpy(k))
    _cmp_backward(e(es[0], **ke), t(ts[0], **kt), es, ts, e, t)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.filterwarnings("ignore:Support for mismatched")
def test_decoder_layer(norm_first, batch_first):
    e, t = _layer_pair("TransformerDecoderLayer", 8, 2, 16, 0.0, "gelu",
                       batch_first=batch_first, norm_first=norm_first)
    tgt = RS.randn(*((3, 4, 8) if batch_first else (4, 3, 8))).astype(np.float32)
    mem = RS.randn(*((3, 6, 8) if batch_first else (6, 3, 8))).astype(np.float32)
    es, ts = _leaves(tgt, mem)
    mm = RS.randn(4, 6).astype(np.float32)
    mk = np.zeros((3, 6), bool)
    mk[2, 4:] = True
    tk = np.zeros((3, 4), bool)
    tk[1, 3] = True
    oe = e(*es, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4),
           memory_mask=ember.from_numpy(mm), memory_key_padding_mask=ember.from_numpy(mk),
           tgt_key_padding_mask=ember.from_numpy(tk), tgt_is_causal=True)
    ot = t(*ts, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4),
           memory_mask=torch.from_numpy(mm), memory_key_padding_mask=torch.from_numpy(mk),
           tgt_key_padding_mask=torch.from_numpy(tk), tgt_is_causal=True)
    _cmp_backward(oe, ot, es, ts, e, t)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_decoder_stacks(norm_first):
    ember.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        el = nn.TransformerEncoderLayer(8, 2, 16, 0.0, norm_first=norm_first)
        e = nn.TransformerEncoder(el, 2, norm=nn.LayerNorm(8))
        tl = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, norm_first=norm_first)
        t = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8))
    _sync(e, t)
    x = RS.randn(5, 2, 8).astype(np.float32)
    es, ts = _leaves(x)
    _cmp_backward(e(es[0], mask=nn.Transformer.generate_square_subsequent_mask(5)),
                  t(ts[0], mask=torch.nn.Transformer.generate_square_subsequent_mask(5)),
                  es, ts, e, t)
    dl = nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=norm_first)
    d = nn.TransformerDecoder(dl, 2)
    tdl = torch.nn.TransformerDecoderLayer(8, 2, 16, 0.0, norm_first=norm_first)
    td = torch.nn.TransformerDecoder(tdl, 2)
    _sync(d, td)
    es, ts = _leaves(RS.randn(4, 2, 8).astype(np.float32), x)
    _cmp_backward(d(*es, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4)),
                  td(*ts, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(4)),
                  es, ts, d, td)


@pytest.mark.parametrize("batch_first", [False, True])
def test_full_transformer(batch_first):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e, t = _layer_pair("Transformer", 8, 2, 2, 1, 16, 0.0, batch_first=batch_first)
    assert repr(e) == repr(t)
    src = RS.randn(*((2, 5, 8) if batch_first else (5, 2, 8))).astype(np.float32)
    tgt = RS.randn(*((2, 4, 8) if batch_first else (4, 2, 8))).astype(np.float32)
    es, ts = _leaves(src, tgt)
    kpm = np.zeros((2, 5), bool)
    kpm[1, 4] = True
    oe = e(*es, tgt_mask=e.generate_square_subsequent_mask(4),
           src_key_padding_mask=ember.from_numpy(kpm), memory_key_padding_mask=ember.from_numpy(kpm))
    ot = t(*ts, tgt_mask=t.generate_square_subsequent_mask(4),
           src_key_padding_mask=torch.from_numpy(kpm), memory_key_padding_mask=torch.from_numpy(kpm))
    _cmp_backward(oe, ot, es, ts, e, t)


def test_transformer_misc():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(_np(m), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    assert m.dtype == ember.float32
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = ember.randn(3, 2, 8)
    layer.train()
    assert not np.allclose(_np(layer(x)), _np(layer(x)))
    layer.eval()
    np.testing.assert_allclose(_np(layer(x)), _np(layer(x)))
    # Transformer default init: xavier on every >1-D parameter
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = nn.Transformer(16, 2, 1, 1, 32)
    w = _np(tr.encoder.layers[0].linear1.weight)
    assert np.abs(w).max() <= np.sqrt(6 / (16 + 32)) + 1e-6
