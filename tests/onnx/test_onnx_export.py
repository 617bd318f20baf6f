"""ember.onnx.export: layers, activations, recurrent layers, transformers, scripted control
flow, options and errors, each run in onnxruntime against ember eager."""
from __future__ import annotations

import io
import sys

import numpy as np
import pytest

import ember
import ember.onnx
from ember import nn

from _onnx_run import check, export_bytes, onnx, op_types, session

BATCH = {"in0": [0], "out0": [0]}


def _eval(m):
    ember.manual_seed(0)
    return m.eval()


def test_mlp_matches_torch_structure_and_values(tmp_path):
    torch = pytest.importorskip("torch")
    ember.manual_seed(0)
    m = _eval(nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2), nn.Softmax(-1)))
    proto = check(m, ember.randn(2, 3), ember.randn(5, 3), dynamic=BATCH)
    tm = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2),
                             torch.nn.Softmax(-1))
    f = io.BytesIO()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(tm, (torch.randn(2, 3),), f, dynamo=False, opset_version=17)
    theirs = onnx.load_from_string(f.getvalue())
    assert op_types(proto) == op_types(theirs) == ["Gemm", "Relu", "Gemm", "Softmax"]
    assert [i.name for i in proto.graph.initializer] == [i.name for i in theirs.graph.initializer]
    assert proto.opset_import[0].version == 20      # torch 2.13's default
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "in0_dynamic_axes_1" and dims[1].dim_value == 3


def test_cnn_conv_bn_relu_pools():
    m = _eval(nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                            nn.MaxPool2d(2), nn.Conv2d(6, 4, 3, stride=2, groups=2),
                            nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                            nn.Linear(4, 3)))
    m[1].running_mean.uniform_(-1, 1)
    m[1].running_var.uniform_(0.5, 2)
    check(m, ember.randn(2, 3, 16, 16), ember.randn(3, 3, 16, 16), dynamic=BATCH)
    kept = check(m, ember.randn(2, 3, 16, 16), do_constant_folding=False)
    assert "BatchNormalization" in op_types(kept)


def test_cnn_structure_matches_torch():
    """Eval-mode Conv+BatchNorm fold into one Conv, as torch's exporter does."""
    torch = pytest.importorskip("torch")
    import warnings
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                             torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                             torch.nn.Linear(36, 5)).eval()
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(tm, (torch.randn(2, 3, 8, 8),), f, dynamo=False, opset_version=17)
    m = _eval(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                            nn.Flatten(), nn.Linear(36, 5)))
    m.load_state_dict({k: ember.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x = ember.randn(2, 3, 8, 8)
    proto = check(m, x)
    theirs = onnx.load_from_string(f.getvalue())
    assert op_types(proto) == op_types(theirs) == ["Conv", "Relu", "MaxPool", "Flatten", "Gemm"]
    got = session(proto.SerializeToString()).run(None, {"in0": x.numpy()})[0]
    ref = session(f.getvalue()).run(None, {theirs.graph.input[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


LAYERS = {
    "leaky_relu": nn.LeakyReLU(0.1), "elu": nn.ELU(), "gelu": nn.GELU(),
    "gelu_tanh": nn.GELU("tanh"), "hardsigmoid": nn.Hardsigmoid(), "hardswish": nn.Hardswish(),
    "silu": nn.SiLU(), "softplus": nn.Softplus(), "mish": nn.Mish(), "selu": nn.SELU(),
    "celu": nn.CELU(), "prelu": nn.PReLU(), "log_softmax": nn.LogSoftmax(1),
    "softmax": nn.Softmax(1), "softsign": nn.Softsign(), "logsigmoid": nn.LogSigmoid(),
    "hardtanh": nn.Hardtanh(), "relu6": nn.ReLU6(), "tanh": nn.Tanh(), "sigmoid": nn.Sigmoid(),
    "avg_pool_padded": nn.AvgPool2d(3, 2, 1), "adaptive_avg": nn.AdaptiveAvgPool2d((3, 2)),
    "adaptive_max": nn.AdaptiveMaxPool2d(1), "group_norm": nn.GroupNorm(2, 4),
    "instance_norm": nn.InstanceNorm2d(4), "conv_transpose": nn.ConvTranspose2d(4, 3, 3, 2, 1),
    "layer_norm": nn.LayerNorm([6]), "upsample": nn.Upsample(scale_factor=2),
    "upsample_bilinear": nn.Upsample(scale_factor=2, mode="bilinear"),
    "dropout": nn.Dropout(0.3), "max_pool_ceil": nn.MaxPool2d(3, 2, 1, ceil_mode=True),
    "pad": nn.ZeroPad2d((1, 2, 0, 1)),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layers_and_activations(name):
    m = _eval(LAYERS[name])
    check(m, ember.randn(2, 4, 6, 6) * 4, ember.randn(3, 4, 6, 6) * 4, dynamic=BATCH)


class _TensorOps(nn.Module):
    def forward(self, x):
        y = x.view(x.size(0), -1)[:, 1:5].mean(1, keepdim=True) * 2
        z = x.transpose(1, 2).contiguous().flatten(1).amax(1, keepdim=True)
        a, b = x.chunk(2, dim=2)
        c = ember.cat([a, b.exp() - 1], 1).permute(0, 2, 1).sum(-1)
        w = ember.where(x[:, 0] > 0, x[:, 1], x[:, 2].abs().sqrt()) ** 2 / (1 + x[:, 0] ** 2)
        s = ember.stack([w, w.clamp(-0.5, 0.5)], 1).reshape(x.size(0), -1)
        return y + z, c, s.to(ember.float64), x.argmax(1)


def test_tensor_ops_with_dynamic_batch():
    dyn = {"in0": [0], "out0": [0], "out1": [0], "out2": [0], "out3": [0]}
    check(_TensorOps(), ember.randn(2, 3, 4), ember.randn(5, 3, 4), dynamic=dyn)


@pytest.mark.parametrize("kind,kw", [("LSTM", dict(num_layers=2, batch_first=True)),
                                     ("LSTM", dict(bidirectional=True)),
                                     ("GRU", dict(num_layers=2, bidirectional=True)),
                                     ("GRU", dict(batch_first=True)),
                                     ("RNN", dict()),
                                     ("RNN", dict(nonlinearity="relu", batch_first=True))])
def test_recurrent(kind, kw):
    ember.manual_seed(0)
    m = getattr(nn, kind)(4, 5, **kw)
    bf = kw.get("batch_first", False)
    shape = (lambda b, t: (b, t, 4)) if bf else (lambda b, t: (t, b, 4))
    b_ax = 0 if bf else 1
    dyn = {"in0": [0, 1], "out0": [0, 1], "out1": [1]}
    if kind == "LSTM":
        dyn["out2"] = [1]
    check(m, ember.randn(*shape(2, 3)), ember.randn(*shape(4, 6)), dynamic=dyn)
    # with an initial state as a second input
    h = ember.randn(m.num_layers * (2 if m.bidirectional else 1), 2, 5)
    state = (h, ember.randn(*h.shape)) if kind == "LSTM" else h

    class WithState(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = m

        def forward(self, x, h0, c0=None):
            return self.rnn(x, (h0, c0) if kind == "LSTM" else h0)
    args = (ember.randn(*shape(2, 3)),) + (state if kind == "LSTM" else (state,))
    check(WithState(), args)
    assert b_ax in (0, 1)


def test_transformer_encoder_dynamic_batch_and_length():
    ember.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True)
    m = _eval(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    proto = check(m, ember.randn(2, 5, 8), ember.randn(3, 7, 8),
                  dynamic={"in0": [0, 1], "out0": [0, 1]})
    assert "LayerNormalization" in op_types(proto)


class _Attend(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, q, kv, pad):
        return self.mha(q, kv, kv, key_padding_mask=pad)


def test_attention_with_padding_mask_and_transformer():
    ember.manual_seed(0)
    pad = ember.tensor([[False] * 5 + [True], [False] * 6])
    pad2 = ember.tensor([[False, True, True], [False] * 3, [False, False, True]])
    dyn = {n: [0, 1] for n in ("in0", "in1", "in2", "out0")}
    check(_eval(_Attend()), (ember.randn(2, 5, 8), ember.randn(2, 6, 8), pad),
          (ember.randn(3, 4, 8), ember.randn(3, 3, 8), pad2), dynamic={**dyn, "out1": [0, 1, 2]})
    tr = _eval(nn.Transformer(8, 2, 1, 1, 16, batch_first=True))
    check(tr, (ember.randn(2, 5, 8), ember.randn(2, 6, 8)),
          (ember.randn(3, 4, 8), ember.randn(3, 9, 8)),
          dynamic={"in0": [0, 1], "in1": [0, 1], "out0": [0, 1]})
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True)
    check(_eval(nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)),
          ember.randn(5, 2, 8))


def test_embedding():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(8, 3))
    proto = check(m, ember.tensor([[1, 2], [3, 4]]), ember.tensor([[1, 2], [3, 4], [9, 0]]),
                  dynamic=BATCH)
    assert "Gather" in op_types(proto)


class _Control(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, n: int):
        if x.sum() > 0:
            y = self.lin(x)
        else:
            y = x * 2
        for i in range(n):
            y = y + i
        return y


def test_scripted_if_and_loop():
    m = ember.jit.script(_Control())
    x = ember.randn(2, 4).abs()
    proto = check(m, (x, 3), (-x, 5), (ember.randn(6, 4).abs(), 0), names=["x", "n"],
                  dynamic={"x": [0], "out0": [0]})
    assert {"If", "Loop"} <= set(op_types(proto))


def test_options(tmp_path, capsys):
    m = _eval(nn.Sequential(nn.Linear(3, 4), nn.Tanh()))
    x = ember.randn(2, 3)
    path = tmp_path / "m.onnx"
    ember.onnx.export(m, (x,), str(path), input_names=["x"], output_names=["y"], verbose=True)
    assert "Gemm" in capsys.readouterr().out
    proto = onnx.load(str(path))
    assert [i.name for i in proto.graph.input] == ["x"]
    ref = m(x).detach().numpy()
    np.testing.assert_allclose(session(str(path)).run(None, {"x": x.numpy()})[0], ref,
                               rtol=1e-5, atol=1e-6)
    kept = onnx.load_from_string(export_bytes(m, x, input_names=["x"],
                                              keep_initializers_as_inputs=True))
    assert [i.name for i in kept.graph.input] == ["x", "0.weight", "0.bias"]
    assert len(kept.graph.initializer) == 2
    bare = onnx.load_from_string(export_bytes(m, x, input_names=["x"], export_params=False))
    assert len(bare.graph.initializer) == 0 and len(bare.graph.input) == 3
    p13 = onnx.load_from_string(export_bytes(m, x, opset_version=13))
    assert p13.opset_import[0].version == 13
    assert ember.onnx.export(m, x) is not None      # f=None returns the ModelProto
    with pytest.raises(NotImplementedError, match="dynamo"):
        ember.onnx.export(m, (x,), io.BytesIO(), dynamo=True)
    assert m.training is False


def test_training_mode_eval_restores_train():
    m = nn.Sequential(nn.Linear(3, 4), nn.Dropout(0.5))
    x = ember.randn(4, 3)
    data = export_bytes(m, (x,), input_names=["x"])
    assert m.training
    np.testing.assert_allclose(session(data).run(None, {"x": x.numpy()})[0],
                               m.eval()(x).detach().numpy(), rtol=1e-5, atol=1e-6)


class _Det(nn.Module):
    def forward(self, x):
        return ember.linalg.det(x) + 1


def test_unsupported_op_names_op_and_opset():
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError,
                       match="'aten::linalg_det' to ONNX opset version 20 is not supported"):
        export_bytes(_Det(), ember.randn(2, 3, 3))
    assert issubclass(ember.onnx.errors.UnsupportedOperatorError, ember.onnx.OnnxExporterError)
    assert issubclass(ember.onnx.OnnxExporterError, RuntimeError)


def test_register_custom_op_symbolic():
    def det(g, x):      # a 3x3 determinant by the rule of Sarrus
        def e(i, j):
            return g.op("Gather", g.op("Gather", x, g.const(i), axis=-2), g.const(j), axis=-1)
        terms = []
        for s, perm in ((1, (0, 1, 2)), (1, (1, 2, 0)), (1, (2, 0, 1)),
                        (-1, (2, 1, 0)), (-1, (0, 2, 1)), (-1, (1, 0, 2))):
            t = g.op("Mul", g.op("Mul", e(0, perm[0]), e(1, perm[1])), e(2, perm[2]))
            terms.append(t if s > 0 else g.op("Neg", t))
        out = terms[0]
        for t in terms[1:]:
            out = g.op("Add", out, t)
        return out
    ember.onnx.register_custom_op_symbolic("aten::linalg_det", det, 9)
    try:
        check(_Det(), ember.randn(2, 3, 3), ember.randn(4, 3, 3), dynamic=BATCH, atol=1e-4)
    finally:
        ember.onnx.unregister_custom_op_symbolic("aten::linalg_det", 9)
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError):
        export_bytes(_Det(), ember.randn(2, 3, 3))
    with pytest.raises(ValueError, match="domain::name"):
        ember.onnx.register_custom_op_symbolic("det", det, 9)


class _Flagged(nn.Module):
    def forward(self, x):
        return x * 2 if ember.onnx.is_in_onnx_export() else x * 3


def test_is_in_onnx_export():
    assert not ember.onnx.is_in_onnx_export()
    x = ember.randn(2, 2)
    out = session(export_bytes(_Flagged(), x, input_names=["x"])).run(None, {"x": x.numpy()})
    np.testing.assert_allclose(out[0], x.numpy() * 2, rtol=1e-6)
    assert not ember.onnx.is_in_onnx_export()


def test_missing_onnx_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(ImportError, match=r"pip install ember\[onnx\]"):
        ember.onnx.export(nn.Linear(2, 2), ember.randn(1, 2), io.BytesIO())


def test_names_of_torch_enums():
    assert [m.name for m in ember.onnx.TrainingMode] == ["EVAL", "PRESERVE", "TRAINING"]
    assert [m.name for m in ember.onnx.OperatorExportTypes] == [
        "ONNX", "ONNX_ATEN", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH"]


def test_traced_module_and_script_function():
    ember.manual_seed(0)
    m = _eval(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(1),
                            nn.Linear(4 * 6 * 6, 2)))
    x = ember.randn(2, 3, 8, 8)
    proto = check(ember.jit.trace(m, x), x, ember.randn(4, 3, 8, 8), dynamic=BATCH)
    assert {i.name for i in proto.graph.initializer} >= {"4.weight", "4.bias"}
    unfused = check(ember.jit.trace(m, x), x, do_constant_folding=False)
    assert {i.name for i in unfused.graph.initializer} >= {"0.weight", "1.running_mean"}
    fn = ember.jit.script(_scripted_fn)
    y = ember.randn(3, 4)
    check(fn, (y, y), (-y.abs(), y), names=["x", "y"])


def _scripted_fn(x, y):
    z = x
    for i in range(3):
        z = z * y + i
    if bool(z.mean() > 0):
        return z.relu()
    return -z


def test_opset_too_old_names_the_version():
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError,
                       match="aten::_layer_norm_impl' to ONNX opset version 13 .* added in "
                             "version 17"):
        export_bytes(nn.LayerNorm(4), ember.randn(2, 4), opset_version=13)


def test_dynamic_axes_unknown_name_warns():
    with pytest.warns(UserWarning, match="dynamic axes is not a valid input/output name"):
        export_bytes(nn.Linear(2, 2), ember.randn(1, 2), input_names=["x"],
                     dynamic_axes={"z": [0]})


def test_training_mode_dropout_and_random_ops_stay_random():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(200, 200), nn.Dropout(0.5))
    x = ember.randn(4, 200)
    data = export_bytes(m, (x,), input_names=["x"], training=ember.onnx.TrainingMode.TRAINING)
    assert m.training
    out = session(data).run(None, {"x": x.numpy()})[0]
    with ember.no_grad():
        lin = m[0](x).numpy()
    dropped = out == 0
    assert 0.4 < dropped.mean() < 0.6
    np.testing.assert_allclose(out[~dropped], 2 * lin[~dropped], rtol=1e-5, atol=1e-5)
    sess = session(export_bytes(_Noisy(), ember.randn(3), input_names=["x"]))
    a, b = (sess.run(None, {"x": np.zeros(3, np.float32)})[0] for _ in range(2))
    assert not np.array_equal(a, b)                     # a new sample per run


class _Noisy(nn.Module):
    def forward(self, x):
        return x + ember.randn(3)


class _Reductions(nn.Module):
    def forward(self, x, y):
        return (x.max(), ember.max(x, y), x.max(1), x.min(0, keepdim=True)[1], x % 0.7,
                (x * 10).long() % 3, ember.remainder(x, -0.6), x.sum(), x.mean(-1), x.argmin())


def test_reductions_and_remainder():
    check(_Reductions(), (ember.randn(3, 4), ember.randn(3, 4)))


class _Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _x1():
    return ember.randn(2, 4, 10)


def _x1s():
    return ember.randn(2, 10)


def _x2():
    return ember.randn(2, 4, 8, 8)


def _x3():
    return ember.randn(2, 4, 4, 4, 4)


MORE = {
    "conv1d": (lambda: nn.Conv1d(4, 3, 3, padding=2, dilation=2), _x1),
    "conv3d": (lambda: nn.Conv3d(4, 3, 3, padding=1), _x3),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, output_padding=1), _x1),
    "batch_norm1d": (lambda: nn.BatchNorm1d(4), _x1),
    "batch_norm3d": (lambda: nn.BatchNorm3d(4), _x3),
    "max_pool1d": (lambda: nn.MaxPool1d(2), _x1),
    "avg_pool1d": (lambda: nn.AvgPool1d(3, 2, 1), _x1),
    "max_pool3d": (lambda: nn.MaxPool3d(2), _x3),
    "adaptive_avg1d": (lambda: nn.AdaptiveAvgPool1d(5), _x1),
    "pixel_shuffle": (lambda: nn.PixelShuffle(2), _x2),
    "pixel_unshuffle": (lambda: nn.PixelUnshuffle(2), _x2),
    "unflatten": (lambda: nn.Unflatten(1, (2, 2)), _x2),
    "threshold": (lambda: nn.Threshold(0.1, 20.0), _x2),
    "shrinks": (lambda: nn.Sequential(nn.Hardshrink(), nn.Softshrink(0.2), nn.Tanhshrink()), _x2),
    "glu": (lambda: nn.GLU(1), _x2),
    "softmin": (lambda: nn.Softmin(1), _x2),
    "local_response_norm": (lambda: nn.LocalResponseNorm(2), _x2),
    "reflection_pad": (lambda: nn.ReflectionPad2d(2), _x2),
    "replication_pad": (lambda: nn.ReplicationPad2d(1), _x2),
    "upsample_bicubic": (lambda: nn.Upsample(size=(12, 12), mode="bicubic"), _x2),
    "upsample_align_corners": (lambda: nn.Upsample(scale_factor=2, mode="bilinear",
                                                   align_corners=True), _x2),
    "channel_shuffle": (lambda: nn.ChannelShuffle(2), _x2),
    "embedding_bag": (lambda: nn.EmbeddingBag(10, 3, mode="mean"),
                      lambda: ember.tensor([[1, 2, 4], [4, 3, 2]])),
    "unfold": (lambda: nn.Unfold(2), _x2),
    "fold": (lambda: nn.Fold((4, 4), 2), lambda: ember.randn(2, 8, 9)),
    "lp_pool": (lambda: nn.LPPool2d(2, 2), _x2),
    "rms_norm": (lambda: nn.RMSNorm(8), _x2),
    "lstm_cell": (lambda: nn.LSTMCell(4, 5), lambda: ember.randn(3, 4)),
    "gru_cell": (lambda: nn.GRUCell(4, 5), lambda: ember.randn(3, 4)),
    "inplace_acts": (lambda: nn.Sequential(nn.Conv2d(4, 4, 1), nn.Hardswish(inplace=True),
                                           nn.ReLU(inplace=True)), _x2),
    "sdpa_causal": (lambda: _Fn(lambda q: nn.functional.scaled_dot_product_attention(
        q, q, q, is_causal=True)), lambda: ember.randn(2, 2, 5, 4)),
    "normalize": (lambda: _Fn(lambda q: nn.functional.normalize(q, dim=1)), _x2),
    "cumsum_flip": (lambda: _Fn(lambda q: q.cumsum(1).flip(1, 2)), _x2),
    "topk_sort": (lambda: _Fn(lambda q: (q.topk(3, 1), q.sort(1, descending=True))), _x1),
    "gather_argsort": (lambda: _Fn(lambda q: q.gather(1, q.argsort(1))), _x1),
    "masked_fill_tril": (lambda: _Fn(lambda q: q.masked_fill(q > 0, 0.5).tril(1)), _x2),
    "einsum": (lambda: _Fn(lambda q: ember.einsum("bij,bjk->bik", q, q)),
               lambda: ember.randn(2, 3, 3)),
    "moments": (lambda: _Fn(lambda q: (q.std(1), q.var(1, unbiased=False),
                                       ember.var_mean(q, (1, 2), keepdim=True))), _x2),
    "norms": (lambda: _Fn(lambda q: (q.norm(p=3, dim=1), q.norm(p=1, dim=1),
                                     q.norm(float("inf"), dim=1), q.norm(), q.logsumexp(1))),
              _x2),
    "repeat_all_any": (lambda: _Fn(lambda q: (q.repeat(1, 2, 1, 1), (q > 0).all(1),
                                              (q > 2).any(1))), _x2),
    "scatter": (lambda: _Fn(lambda q: (
        ember.zeros(3, 10).index_add(0, ember.tensor([2, 0]), q[:2], alpha=2),
        q.scatter(1, q.argsort(1), q * 2), q.scatter_add(1, ember.tensor([[1, 1, 0]]).expand(
            q.shape[0], 3), q[:, :3]), q.index_copy(1, ember.tensor([3, 0]), q[:, :2]))), _x1s),
    "unary_math": (lambda: _Fn(lambda q: q.square() + q.abs().log2() + q.exp2() + q.trunc()
                               + q.abs().log10()), _x2),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_layers_and_tensor_functions(name):
    ember.manual_seed(0)
    make, inp = MORE[name]
    x, x2 = inp(), inp()
    x2 = ember.cat([x2, x2[:1]]) if x2.dim() > 1 else x2
    outs = _flat_outputs(make().eval()(x))
    dyn = {"in0": [0], **{f"out{k}": [0] for k, o in enumerate(outs) if o.dim()}}
    check(_eval(make()), x, x2, dynamic=dyn, atol=2e-4)


def _flat_outputs(o):
    return [e for i in o for e in _flat_outputs(i)] if isinstance(o, (tuple, list)) else [o]


def test_two_input_layers():
    ember.manual_seed(0)
    a, b = ember.randn(3, 5), ember.randn(3, 5)
    check(_eval(nn.CosineSimilarity()), (a, b))
    check(_eval(nn.PairwiseDistance()), (a, b))
    check(_eval(nn.Bilinear(5, 5, 2)), (a, b))
    q = ember.randn(2, 5, 8)
    check(_eval(nn.MultiheadAttention(8, 2, batch_first=True)), (q, q, q))


SCRIPTED = {
    "mlp": (lambda: nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Dropout(0.2), nn.LayerNorm(4),
                                  nn.Softmax(-1)), lambda b: ember.randn(b, 3)),
    "lstm": (lambda: nn.LSTM(3, 4, 2, batch_first=True), lambda b: ember.randn(b, 5, 3)),
    "gru": (lambda: nn.GRU(3, 4, bidirectional=True), lambda b: ember.randn(5, b, 3)),
    "embedding": (lambda: nn.Embedding(5, 3), lambda b: ember.arange(b) % 5),
    "encoder_layer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, batch_first=True),
                      lambda b: ember.randn(b, 5, 8)),
    "conv1d_same": (lambda: nn.Sequential(nn.Conv1d(3, 4, 4, padding="same"), nn.BatchNorm1d(4),
                                          nn.ReLU6(), nn.AvgPool1d(2), nn.AdaptiveMaxPool1d(1)),
                    lambda b: ember.randn(b, 3, 8)),
}


@pytest.mark.parametrize("name", sorted(SCRIPTED))
def test_scripted_layers(name):
    ember.manual_seed(0)
    make, inp = SCRIPTED[name]
    m = _eval(make())
    axis = 1 if name == "gru" else 0
    dyn = {"in0": [axis], "out0": [axis]}
    check(ember.jit.script(m), inp(2), inp(3), dynamic=dyn)


class _TensorIndexing(nn.Module):
    def forward(self, x, i):
        return x[i], x[:, ember.tensor([2, 0])], x[x > 0], x[1:, i.clamp(max=2)], \
            ember.nonzero(x > 0.5), x[..., 1][x[:, 0] > 0]


def test_indexing_with_tensors_is_not_baked_in():
    """The index tensors are inputs of the exported graph (a second run with other indices
    and other signs gives other results)."""
    x, i = ember.randn(5, 3), ember.tensor([4, 0, 2])
    x2, i2 = ember.randn(5, 3), ember.tensor([1, 1, 3])
    dyn = {"in1": [0], "out0": [0], "out2": [0], "out3": [1], "out4": [0], "out5": [0]}
    proto = check(_TensorIndexing(), (x, i), (x2, i2), dynamic=dyn)
    assert {"Gather", "GatherND", "Compress", "NonZero"} <= set(op_types(proto))


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(9, 4)),
                                dict(scale_factor=2, mode="bilinear"),
                                dict(size=(9, 4), mode="bilinear", align_corners=True),
                                dict(scale_factor=1.5, mode="bicubic"),
                                dict(size=(3, 8), mode="bicubic", align_corners=True)])
def test_interpolate_is_resize_with_dynamic_spatial_size(kw):
    proto = check(nn.Upsample(**kw), ember.randn(1, 2, 5, 6), ember.randn(2, 2, 7, 3),
                  dynamic={"in0": [0, 2, 3], "out0": [0, 2, 3]})
    assert "Resize" in op_types(proto)


def test_training_mode_batch_norm_uses_batch_statistics():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
    x = ember.randn(4, 3, 8, 8)
    data = export_bytes(m, (x,), input_names=["x"], training=ember.onnx.TrainingMode.TRAINING)
    with ember.no_grad():
        ref = m(x).numpy()          # train mode: batch statistics
    np.testing.assert_allclose(session(data).run(None, {"x": x.numpy()})[0], ref,
                               rtol=1e-4, atol=1e-5)


class _Assign(nn.Module):
    def forward(self, x, i, y):
        x = x.clone()
        x[x > 0.5] = 0.0
        x[i] = -1.0
        z = y.clone()
        z[y < 0] = 7.0
        z[i[:1]] = y[:1] * 2
        return x, z


def test_assignment_through_tensor_indices():
    args = (ember.randn(5, 3), ember.tensor([4, 1]), ember.randn(5, 3))
    args2 = (ember.randn(5, 3), ember.tensor([0, 2, 3]), ember.randn(5, 3))
    proto = check(_Assign(), args, args2, dynamic={"in1": [0]})
    assert "ScatterND" in op_types(proto)


class _LSTMWithState(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = ember.nn.LSTM(4, 5, 2)

    def forward(self, x, hidden):
        out, (h, c) = self.lstm(x, hidden)
        return out, h, c


def test_tuple_inputs_are_flattened_into_graph_inputs():
    """(input, (h0, c0)) as word_language_model exports it: one ONNX input per tensor."""
    import io
    ort = pytest.importorskip("onnxruntime")
    m = _LSTMWithState().eval()
    x, h = ember.randn(3, 2, 4), (ember.randn(2, 2, 5), ember.randn(2, 2, 5))
    buf = io.BytesIO()
    ember.onnx.export(m, (x, h), buf, input_names=["x", "h0", "c0"])
    sess = ort.InferenceSession(buf.getvalue())
    assert [i.name for i in sess.get_inputs()] == ["x", "h0", "c0"]
    got = sess.run(None, {"x": x.numpy(), "h0": h[0].numpy(), "c0": h[1].numpy()})
    for a, b in zip(got, m(x, h)):
        np.testing.assert_allclose(a, b.detach().numpy(), atol=1e-5)
