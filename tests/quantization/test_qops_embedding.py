"""quantized::embedding* ops and ember.ao.nn.quantized Embedding/EmbeddingBag against torch:
packed tables byte for byte, looked-up and summed values bit for bit."""
import numpy as np
import pytest

from tests.quantization.conftest import to_ember, assert_same_q

torch = pytest.importorskip("torch")
import ember  # noqa: E402
import ember.ao.nn.quantized as enq  # noqa: E402
from ember.ao.quantization import qconfig as eqc  # noqa: E402
import torch.ao.nn.quantized as tnq  # noqa: E402
from torch.ao.quantization import qconfig as tqc  # noqa: E402

Q = ember.ops.quantized
TQ = torch.ops.quantized


def _table(rng, n, d):
    w = (rng.normal(size=(n, d)) * rng.uniform(0.2, 3)).astype(np.float32)
    w[0] = 0.75                     # a constant row: zero range
    return torch.from_numpy(w)


def _same(e, t):
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("bits", ["byte", "4bit"])
def test_prepack_unpack(bits):
    rng = np.random.default_rng(0)
    for n, d in ((7, 8), (30, 18 if bits == "4bit" else 17), (5, 64)):
        w = _table(rng, n, d)
        pt = getattr(TQ, f"embedding_bag_{bits}_prepack")(w)
        pe = getattr(Q, f"embedding_bag_{bits}_prepack")(to_ember(w))
        _same(pe, pt)
        _same(getattr(Q, f"embedding_bag_{bits}_unpack")(pe),
              getattr(TQ, f"embedding_bag_{bits}_unpack")(pt))


@pytest.mark.parametrize("bits", ["byte", "4bit"])
def test_rowwise_offsets(bits):
    rng = np.random.default_rng(1)
    w = _table(rng, 40, 16)
    pt = getattr(TQ, f"embedding_bag_{bits}_prepack")(w)
    pe = to_ember(pt)
    idx = torch.from_numpy(rng.integers(0, 40, 25))
    offs = torch.tensor([0, 3, 3, 10, 24])       # an empty bag, a bag of one
    psw = torch.from_numpy(rng.normal(size=25).astype(np.float32))
    name = f"embedding_bag_{bits}_rowwise_offsets"
    for mode, weights, last in ((0, None, False), (1, None, False), (0, psw, False),
                                (0, None, True)):
        if last:
            offs = torch.tensor([0, 3, 3, 10, 25])
        args = (False, mode, False, weights, None, last)
        _same(getattr(Q, name)(pe, to_ember(idx), to_ember(offs), *args[:3],
                               None if weights is None else to_ember(weights), *args[4:]),
              getattr(TQ, name)(pt, idx, offs, *args))
    idx2 = idx[:24].reshape(6, 4)
    _same(getattr(Q, name)(pe, to_ember(idx2)), getattr(TQ, name)(pt, idx2))


def _float_qparams_weight(rng, n, d, dtype):
    """The same table quantized with float zero points by torch and by ember."""
    w = _table(rng, n, d)
    obs = torch.ao.quantization.PerChannelMinMaxObserver(
        ch_axis=0, dtype=getattr(torch, dtype), qscheme=torch.per_channel_affine_float_qparams)
    obs(w)
    s, z = obs.calculate_qparams()
    return (torch.quantize_per_channel(w, s, z, 0, getattr(torch, dtype)),
            ember.quantize_per_channel(to_ember(w), to_ember(s), to_ember(z), 0,
                                       getattr(ember, dtype)))


@pytest.mark.parametrize("dtype", ["quint8", "quint4x2"])
def test_packed_params_ops(dtype):
    rng = np.random.default_rng(2)
    qw, eqw = _float_qparams_weight(rng, 20, 8, dtype)
    pt = TQ.embedding_bag_prepack(qw)
    pe = Q.embedding_bag_prepack(eqw)
    assert_same_q(Q.embedding_bag_unpack(pe), TQ.embedding_bag_unpack(pt))
    bits = "4bit" if dtype == "quint4x2" else "byte"
    idx = torch.from_numpy(rng.integers(0, 20, 12))
    _same(getattr(Q, f"embedding_{bits}")(pe, to_ember(idx)),
          getattr(TQ, f"embedding_{bits}")(pt, idx))
    offs = torch.tensor([0, 5, 9])
    _same(getattr(Q, f"embedding_bag_{bits}")(pe, to_ember(idx), to_ember(offs)),
          getattr(TQ, f"embedding_bag_{bits}")(pt, idx, offs))


def test_bag_errors():
    pe = Q.embedding_bag_byte_prepack(ember.randn(5, 4))
    with pytest.raises(RuntimeError, match="out of bounds"):
        Q.embedding_bag_byte_rowwise_offsets(pe, ember.tensor([1, 7]), ember.tensor([0]))
    with pytest.raises(NotImplementedError, match="optimized_qparams"):
        Q.embedding_bag_4bit_prepack(ember.randn(5, 4), True)
    with pytest.raises(RuntimeError, match="a multiple of 2"):
        Q.embedding_bag_4bit_prepack(ember.randn(5, 3))


@pytest.mark.parametrize("bits", ["", "_4bit"])
def test_embedding_modules_from_float(bits):
    qconfig = f"float_qparams_weight_only_qconfig{bits}"
    torch.manual_seed(3)
    for tf, ef in ((torch.nn.Embedding(12, 6), ember.nn.Embedding(12, 6)),
                   (torch.nn.EmbeddingBag(12, 6, mode="sum", include_last_offset=True),
                    ember.nn.EmbeddingBag(12, 6, mode="sum", include_last_offset=True))):
        ef.load_state_dict({k: to_ember(v) for k, v in tf.state_dict().items()})
        tf.qconfig, ef.qconfig = getattr(tqc, qconfig), getattr(eqc, qconfig)
        name = type(tf).__name__
        tq, eq = getattr(tnq, name).from_float(tf), getattr(enq, name).from_float(ef)
        assert repr(eq) == repr(tq)
        assert list(eq.state_dict().keys()) == list(tq.state_dict().keys())
        assert_same_q(eq.weight(), tq.weight())
        idx = torch.tensor([1, 4, 4, 11, 0, 7])
        if name == "Embedding" and bits:
            # torch's Embedding.from_float leaves the module's dtype quint8 over a quint4x2
            # table and its forward then fails; ember's follows the table
            with pytest.raises(RuntimeError):
                tq(idx)
            np.testing.assert_allclose(eq(to_ember(idx)).numpy(),
                                       tq.weight().dequantize()[idx].numpy(), atol=2e-3)  # float16 scale, bias
        elif name == "Embedding":
            _same(eq(to_ember(idx)), tq(idx))
        else:
            offs = torch.tensor([0, 2, 6])
            _same(eq(to_ember(idx), to_ember(offs)), tq(idx, offs))
        dst = getattr(enq, name)(12, 6, dtype=eq._packed_params.dtype)
        dst.load_state_dict(eq.state_dict())
        assert_same_q(dst.weight(), tq.weight())


def test_embedding_module_errors():
    with pytest.raises(NotImplementedError, match="Unsupported dtype on quantized embedding"):
        enq.Embedding(5, 4, dtype=ember.qint8)
    f = ember.nn.Embedding(5, 4)
    f.qconfig = eqc.default_qconfig
    with pytest.raises(AssertionError, match="only supported with float_qparams_weight_only"):
        enq.Embedding.from_float(f)
    with pytest.raises(AssertionError, match="nnq.Embedding.from_float only works for "
                                             "Embedding"):
        enq.Embedding.from_float(ember.nn.Linear(2, 2))
    assert repr(enq.EmbeddingBag(5, 4)) == repr(tnq.EmbeddingBag(5, 4))


def test_embedding_from_qat_and_without_qconfig():
    import torch.ao.nn.qat as tnqat
    import ember.ao.nn.qat as enqat
    torch.manual_seed(4)
    tq = tnqat.Embedding(6, 4, qconfig=tqc.float_qparams_weight_only_qconfig)
    eqat = enqat.Embedding(6, 4, qconfig=eqc.float_qparams_weight_only_qconfig)
    with ember.no_grad():       # the weight only (torch's observers must stay resizable)
        eqat.weight.copy_(to_ember(tq.weight.detach().clone()))
    idx = torch.tensor([1, 2, 5])
    tq(idx)
    eqat(to_ember(idx))
    t, e = tnq.Embedding.from_float(tq), enq.Embedding.from_float(eqat)
    assert repr(e) == repr(t)
    assert_same_q(e.weight(), t.weight())
    f = ember.nn.Embedding(6, 4)
    f.qconfig = None            # the float-qparams weight-only qconfig is taken
    assert enq.Embedding.from_float(f).weight().qscheme() is ember.per_channel_affine_float_qparams
    with pytest.raises(AssertionError, match="Embedding input float module must have qconfig"):
        enq.Embedding.from_float(ember.nn.Embedding(6, 4))
