"""ember.jit.script of each converted quantized module (ao.nn.quantized, .dynamic,
.intrinsic.quantized): the scripted module equals the eager one, jit.save/jit.load round
trips it in ember, and torch loads ember's archive and runs it with its own kernels to the
same values."""
import io

import numpy as np
import pytest

import ember
import ember.ao.nn.intrinsic.quantized as nniq
import ember.ao.nn.intrinsic.quantized.dynamic as nniqd
import ember.ao.nn.quantized as nnq
import ember.ao.nn.quantized.dynamic as nnqd
from tests.quantization.conftest import torch, to_torch
from tests.quantization.test_dynamic_rnn import torch_activations  # noqa: F401 (fixture)


def _qx(rng, shape):
    x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return ember.quantize_per_tensor(x, 0.1, 2, ember.quint8)


def _fx(rng, shape):
    return ember.from_numpy(rng.standard_normal(shape).astype(np.float32))


def _randomized(m):
    """``m`` with random weights (through its own set_weight_bias / set_weight)."""
    g = ember.Generator().manual_seed(5)
    if isinstance(m, nnq.Embedding):
        n, d = m.num_embeddings, m.embedding_dim
        w = ember.quantize_per_channel(ember.randn(n, d, generator=g),
                                       ember.linspace(0.02, 0.05, n),
                                       ember.linspace(-3.0, 3.0, n).round(), 0,
                                       m._packed_params.dtype)
        m.set_weight(w)
        return m
    w, b = m._weight_bias()
    if w.dtype is ember.qint8:
        w = ember.quantize_per_tensor(ember.randn(*w.shape, generator=g), 0.05, 0,
                                      ember.qint8)
    else:
        w = ember.randn(*w.shape, generator=g)
    m.set_weight_bias(w, None if b is None else ember.randn(*b.shape, generator=g))
    if hasattr(m, "scale") and not isinstance(m.scale, ember.Tensor):
        m.scale, m.zero_point = 0.2, 3
    return m


CASES = {
    "Conv1d": (lambda: nnq.Conv1d(2, 3, 3, stride=2), lambda r: (_qx(r, (2, 2, 7)),)),
    "Conv2d": (lambda: nnq.Conv2d(2, 4, 3, padding=1, groups=2),
               lambda r: (_qx(r, (1, 2, 5, 6)),)),
    "Conv2d_reflect": (lambda: nnq.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"),
                       lambda r: (_qx(r, (1, 2, 5, 5)),)),
    "Conv3d": (lambda: nnq.Conv3d(2, 3, 2), lambda r: (_qx(r, (1, 2, 3, 4, 3)),)),
    "ConvTranspose1d": (lambda: nnq.ConvTranspose1d(2, 3, 2, stride=2),
                        lambda r: (_qx(r, (1, 2, 4)),)),
    "ConvTranspose2d": (lambda: nnq.ConvTranspose2d(2, 3, 2), lambda r: (_qx(r, (1, 2, 3, 3)),)),
    "ConvReLU1d": (lambda: nniq.ConvReLU1d(2, 3, 3), lambda r: (_qx(r, (1, 2, 6)),)),
    "ConvReLU2d": (lambda: nniq.ConvReLU2d(2, 3, 3, padding=1),
                   lambda r: (_qx(r, (1, 2, 5, 5)),)),
    "ConvReLU3d": (lambda: nniq.ConvReLU3d(2, 3, 2), lambda r: (_qx(r, (1, 2, 3, 3, 3)),)),
    "Linear": (lambda: nnq.Linear(6, 4), lambda r: (_qx(r, (3, 6)),)),
    "LinearReLU": (lambda: nniq.LinearReLU(6, 4), lambda r: (_qx(r, (3, 6)),)),
    "BNReLU2d": (lambda: nniq.BNReLU2d(2), lambda r: (_qx(r, (1, 2, 3, 3)),)),
    "DynamicLinear": (lambda: nnqd.Linear(6, 4), lambda r: (_fx(r, (3, 6)),)),
    "DynamicLinear_fp16": (lambda: nnqd.Linear(6, 4, dtype=ember.float16),
                           lambda r: (_fx(r, (3, 6)),)),
    "DynamicLinearReLU": (lambda: nniqd.LinearReLU(6, 4), lambda r: (_fx(r, (3, 6)),)),
    "Embedding": (lambda: nnq.Embedding(10, 4), lambda r: (ember.tensor([[1, 2], [5, 9]]),)),
    "EmbeddingBag": (lambda: nnq.EmbeddingBag(10, 4, mode="sum"),
                     lambda r: (ember.tensor([1, 2, 5, 7, 0]), ember.tensor([0, 2]))),
    "EmbeddingBag_4bit": (lambda: nnq.EmbeddingBag(10, 4, mode="sum", dtype=ember.quint4x2),
                          lambda r: (ember.tensor([1, 2, 5, 7, 0]), ember.tensor([0, 3]))),
    "Quantize": (lambda: nnq.Quantize(0.1, 2, ember.quint8), lambda r: (_fx(r, (2, 3)),)),
    "DeQuantize": (lambda: nnq.DeQuantize(), lambda r: (_qx(r, (2, 3)),)),
}
_PLAIN = ("BNReLU2d", "Quantize", "DeQuantize")


def _assert_same(got, want):
    if want.is_quantized:
        assert got.is_quantized and got.q_scale() == want.q_scale()
        np.testing.assert_array_equal(got.int_repr().numpy(), want.int_repr().numpy())
    else:
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("name", list(CASES))
def test_scripted_module_equals_eager_and_roundtrips(name):
    make, inputs = CASES[name]
    m = make() if name in _PLAIN else _randomized(make())
    args = inputs(np.random.default_rng(0))
    want = m(*args)
    s = ember.jit.script(m)
    _assert_same(s(*args), want)
    buf = io.BytesIO()
    ember.jit.save(s, buf)
    _assert_same(ember.jit.load(io.BytesIO(buf.getvalue()))(*args), want)
    if name.endswith("_4bit"):
        return      # torch 2.13 cannot load an archive holding a quint4x2 table, its own too
    got = torch.jit.load(io.BytesIO(buf.getvalue()))(*[to_torch(a) for a in args])
    _assert_same(got, want)


def test_torch_scripted_embeddings_load_in_ember():
    import torch.ao.nn.quantized as tnnq
    torch.manual_seed(0)
    bag = (torch.tensor([3, 1, 4, 1, 5]), torch.tensor([0, 2, 5]))
    for m, args in [(tnnq.Embedding(10, 4), (torch.tensor([3, 1, 4]),)),
                    (tnnq.EmbeddingBag(10, 4, mode="sum", include_last_offset=True), bag),
                    (tnnq.EmbeddingBag(10, 4, mode="sum", include_last_offset=True,
                                       dtype=torch.quint4x2), bag)]:
        w = torch.quantize_per_channel(torch.randn(10, 4), torch.linspace(0.02, 0.05, 10),
                                       torch.linspace(-2, 2, 10), 0, m.dtype)
        m.set_weight(w)
        buf = io.BytesIO()
        torch.jit.save(torch.jit.script(m), buf)
        e = ember.jit.load(io.BytesIO(buf.getvalue()))
        got = e(*[ember.from_numpy(a.numpy()) for a in args])
        np.testing.assert_array_equal(got.numpy(), m(*args).numpy())


@pytest.mark.parametrize("cls", ["LSTMCell", "GRUCell", "RNNCell", "RNNCell_relu"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_scripted_dynamic_cells(cls, dtype, torch_activations):  # noqa: F811
    """Dynamic cells script (zero state when hx is None, torch's checks); compared with
    torch's sigmoid/tanh in place of ember's (they differ in the last bit now and then)."""
    name, _, act = cls.partition("_")
    kw = {"nonlinearity": act} if act else {}
    ember.manual_seed(0)
    m = getattr(nnqd, name)(3, 4, dtype=getattr(ember, dtype), **kw)
    x = _fx(np.random.default_rng(1), (2, 3))
    s = ember.jit.script(m)
    for hx in (None, m(x)):
        if hx is None:
            want, got = m(x), s(x)
        else:
            want, got = m(x, hx), s(x, hx)
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _assert_same(g, w)
    buf = io.BytesIO()
    ember.jit.save(s, buf)
    want = m(x)
    for loaded in (ember.jit.load(io.BytesIO(buf.getvalue())),
                   torch.jit.load(io.BytesIO(buf.getvalue()))):
        got = loaded(x if isinstance(loaded, ember.nn.Module) else to_torch(x))
        for g, w in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _assert_same(g, w)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2, "
                                           "expected 3"):
        s(x[:, :2])


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["qint8", "float16"])
def test_scripted_dynamic_rnn(cls, dtype, torch_activations):  # noqa: F811
    """Dynamic LSTM/GRU script (forward and forward_tensor: ``aten::quantized_lstm`` /
    ``quantized_gru`` over the layers' CellParamsBase objects); the archive round trips in
    ember and torch runs it."""
    ember.manual_seed(0)
    m = getattr(nnqd, cls)(3, 4, num_layers=2, bidirectional=True,
                           dtype=getattr(ember, dtype))
    x = _fx(np.random.default_rng(2), (5, 2, 3))
    want = m(x)
    s = ember.jit.script(m)
    assert f"aten::quantized_{cls.lower()}" in str(s.inlined_graph)

    def check(got):
        _assert_same(got[0], want[0])
        for g, w in zip(got[1] if cls == "LSTM" else (got[1],),
                        want[1] if cls == "LSTM" else (want[1],)):
            _assert_same(g, w)
    check(s(x))
    check(s.forward_tensor(x))
    buf = io.BytesIO()
    ember.jit.save(s, buf)
    check(ember.jit.load(io.BytesIO(buf.getvalue()))(x))
    check(torch.jit.load(io.BytesIO(buf.getvalue())).forward_tensor(to_torch(x)))
    with pytest.raises(RuntimeError, match=r"input.size\(-1\) must be equal to input_size"):
        s(x[..., :2])


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_torch_scripted_dynamic_rnn_loads_in_ember(cls, torch_activations):  # noqa: F811
    import torch.ao.nn.quantized.dynamic as tnnqd
    torch.manual_seed(0)
    m = getattr(tnnqd, cls)(3, 4, num_layers=2)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(m), buf)
    e = ember.jit.load(io.BytesIO(buf.getvalue()))
    x = torch.randn(5, 2, 3)
    got, want = e.forward_tensor(ember.from_numpy(x.numpy())), m(x)
    np.testing.assert_array_equal(got[0].numpy(), want[0].detach().numpy())


@pytest.mark.parametrize("cls", ["ConvAdd2d", "ConvAddReLU2d"])
def test_scripted_conv_add_under_onednn(cls, monkeypatch):
    """The onednn-only fused conv + add modules script, save and load; torch runs the archive
    under its onednn engine to the same integers."""
    monkeypatch.setattr(ember.backends.quantized, "engine", "onednn")
    old = torch.backends.quantized.engine
    torch.backends.quantized.engine = "onednn"
    try:
        ember.manual_seed(0)
        m = getattr(nniq, cls)(2, 3, 3, padding=1)
        m.set_weight_bias(ember.quantize_per_tensor(ember.randn(3, 2, 3, 3), 0.05, 0,
                                                    ember.qint8), ember.randn(3))
        m.scale, m.zero_point = 0.2, 3
        rng = np.random.default_rng(3)
        x, y = _qx(rng, (1, 2, 4, 4)), _qx(rng, (1, 3, 4, 4))
        want = m(x, y)
        s = ember.jit.script(m)
        _assert_same(s(x, y), want)
        buf = io.BytesIO()
        ember.jit.save(s, buf)
        _assert_same(ember.jit.load(io.BytesIO(buf.getvalue()))(x, y), want)
        _assert_same(torch.jit.load(io.BytesIO(buf.getvalue()))(to_torch(x), to_torch(y)),
                     want)
    finally:
        torch.backends.quantized.engine = old


class _UsesQFunctional(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.f = ember.ao.nn.quantized.QFunctional()
        self.f.scale, self.f.zero_point = 0.2, 3

    def forward(self, a, b):
        return self.f.cat([self.f.add(a, b), self.f.mul_scalar(a, 2.0),
                           self.f.add_relu(a, b)], 0)


def test_qfunctional_scripts_and_round_trips():
    import io
    m = _UsesQFunctional()
    a = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 2, ember.quint8)
    b = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 2, ember.quint8)
    s = ember.jit.script(m)
    expected = m(a, b)
    assert ember.equal(s(a, b), expected)
    buf = io.BytesIO()
    ember.jit.save(s, buf)
    buf.seek(0)
    assert ember.equal(ember.jit.load(buf)(a, b), expected)


def test_dtype_is_comparison_compiles_by_value():
    """``self.dtype is torch.qint8`` compares TorchScript ints: by value, no SyntaxWarning."""
    import warnings
    from ember.ao.nn.quantized.dynamic import Linear
    x = ember.randn(2, 4)
    for dtype in (ember.qint8, ember.float16):
        m = Linear(4, 3, dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)
            s = ember.jit.script(m)
        assert ember.equal(s(x), m(x))
