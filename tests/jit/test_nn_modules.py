"""Every ``ember.nn`` module type that torch can script: ``jit.script`` of it gives eager's
result on random input (a table of constructors and inputs; checked against torch that the
same constructor scripts there)."""
from __future__ import annotations

import numpy as np
import pytest

import ember as torch
import ember.nn as nn


def _r(*shape):
    return lambda: (torch.randn(*shape),)


def _pos(*shape):
    return lambda: (torch.rand(*shape) + 0.1,)


def _two(*shape):
    return lambda: (torch.randn(*shape), torch.randn(*shape))


def _prob_target(*shape):
    return lambda: (torch.rand(*shape) * 0.8 + 0.1, torch.rand(*shape))


def _class_target(n, c):
    return lambda: (torch.randn(n, c), torch.randint(0, c, (n,)))


# (name, constructor args, kwargs, input maker)
TABLE = [
    ("AdaptiveAvgPool1d", (2,), {}, _r(1, 3, 8)),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, _r(1, 3, 8, 8)),
    ("AdaptiveAvgPool3d", (2,), {}, _r(1, 2, 4, 4, 4)),
    ("AdaptiveMaxPool1d", (2,), {}, _r(1, 3, 8)),
    ("AdaptiveMaxPool2d", (2,), {}, _r(1, 3, 8, 8)),
    ("AdaptiveMaxPool3d", (2,), {}, _r(1, 2, 4, 4, 4)),
    ("AlphaDropout", (0.5,), {}, _r(2, 4)),
    ("AvgPool1d", (2,), {}, _r(1, 3, 8)),
    ("AvgPool2d", (2,), {}, _r(1, 3, 8, 8)),
    ("AvgPool3d", (2,), {}, _r(1, 2, 4, 4, 4)),
    ("BCELoss", (), {}, _prob_target(3, 4)),
    ("BCEWithLogitsLoss", (), {}, _two(3, 4)),
    ("BatchNorm1d", (4,), {}, _r(3, 4)),
    ("BatchNorm2d", (3,), {}, _r(2, 3, 4, 4)),
    ("BatchNorm3d", (2,), {}, _r(2, 2, 3, 3, 3)),
    ("Bilinear", (3, 4, 5), {}, lambda: (torch.randn(2, 3), torch.randn(2, 4))),
    ("CELU", (), {}, _r(2, 4)),
    ("ChannelShuffle", (2,), {}, _r(1, 4, 2, 2)),
    ("CircularPad1d", (1,), {}, _r(1, 2, 4)),
    ("CircularPad2d", (1,), {}, _r(1, 2, 4, 4)),
    ("CircularPad3d", (1,), {}, _r(1, 2, 3, 3, 3)),
    ("ConstantPad1d", (2, 1.5), {}, _r(1, 2, 4)),
    ("ConstantPad2d", (1, 0.5), {}, _r(1, 2, 4, 4)),
    ("ConstantPad3d", (1, 0.5), {}, _r(1, 2, 3, 3, 3)),
    ("Conv1d", (3, 4, 3), {}, _r(1, 3, 8)),
    ("Conv2d", (3, 4, 3), {"padding": 1}, _r(1, 3, 6, 6)),
    ("Conv3d", (2, 3, 2), {}, _r(1, 2, 4, 4, 4)),
    ("Conv2d", (3, 4, 3), {"bias": False, "padding": 1, "padding_mode": "reflect"},
     _r(1, 3, 5, 5)),
    ("ConvTranspose1d", (3, 4, 3), {}, _r(1, 3, 5)),
    ("ConvTranspose2d", (3, 4, 3), {"stride": 2}, _r(1, 3, 4, 4)),
    ("ConvTranspose3d", (2, 3, 2), {}, _r(1, 2, 3, 3, 3)),
    ("CosineEmbeddingLoss", (), {}, lambda: (torch.randn(3, 4), torch.randn(3, 4),
                                              torch.tensor([1., -1., 1.]))),
    ("CosineSimilarity", (), {}, _two(3, 4)),
    ("CrossEntropyLoss", (), {}, _class_target(4, 5)),
    ("CrossMapLRN2d", (3,), {}, _r(1, 4, 3, 3)),
    ("Dropout", (), {}, _r(2, 4)),
    ("Dropout1d", (), {}, _r(2, 3, 4)),
    ("Dropout2d", (), {}, _r(2, 3, 4, 4)),
    ("Dropout3d", (), {}, _r(2, 3, 2, 2, 2)),
    ("ELU", (), {}, _r(2, 4)),
    ("Embedding", (10, 3), {}, lambda: (torch.tensor([[1, 2], [4, 9]]),)),
    ("EmbeddingBag", (10, 3), {}, lambda: (torch.tensor([[1, 2], [4, 9]]),)),
    ("FeatureAlphaDropout", (), {}, _r(2, 3, 4)),
    ("Flatten", (), {}, _r(2, 3, 4)),
    ("Fold", ((4, 5), (2, 2)), {}, _r(1, 12, 12)),
    ("FractionalMaxPool2d", (2,), {"output_size": 3}, _r(1, 2, 6, 6)),
    ("FractionalMaxPool3d", (2,), {"output_size": 2}, _r(1, 2, 4, 4, 4)),
    ("GELU", (), {}, _r(2, 4)),
    ("GLU", (), {}, _r(2, 4)),
    ("GRU", (3, 4), {}, _r(5, 2, 3)),
    ("GRUCell", (3, 4), {}, _r(2, 3)),
    ("GaussianNLLLoss", (), {}, lambda: (torch.randn(3, 4), torch.randn(3, 4),
                                         torch.rand(3, 4) + 0.1)),
    ("GroupNorm", (2, 4), {}, _r(2, 4, 3)),
    ("Hardshrink", (), {}, _r(2, 4)),
    ("Hardsigmoid", (), {}, _r(2, 4)),
    ("Hardswish", (), {}, _r(2, 4)),
    ("Hardtanh", (), {}, _r(2, 4)),
    ("HingeEmbeddingLoss", (), {}, lambda: (torch.randn(3, 4), torch.tensor([1., -1., 1., 1.]))),
    ("HuberLoss", (), {}, _two(3, 4)),
    ("Identity", (), {}, _r(2, 4)),
    ("InstanceNorm1d", (3,), {}, _r(2, 3, 5)),
    ("InstanceNorm2d", (3,), {"affine": True}, _r(2, 3, 4, 4)),
    ("InstanceNorm3d", (2,), {}, _r(2, 2, 3, 3, 3)),
    ("KLDivLoss", (), {"reduction": "batchmean"}, _two(3, 4)),
    ("L1Loss", (), {}, _two(3, 4)),
    ("LPPool1d", (2, 2), {}, _pos(1, 3, 8)),
    ("LPPool2d", (2, 2), {}, _pos(1, 3, 4, 4)),
    ("LPPool3d", (2, 2), {}, _pos(1, 2, 4, 4, 4)),
    ("LSTM", (3, 4), {}, _r(5, 2, 3)),
    ("LSTMCell", (3, 4), {}, _r(2, 3)),
    ("LayerNorm", (4,), {}, _r(2, 3, 4)),
    ("LeakyReLU", (), {}, _r(2, 4)),
    ("Linear", (4, 3), {}, _r(2, 4)),
    ("LocalResponseNorm", (2,), {}, _r(1, 4, 3, 3)),
    ("LogSigmoid", (), {}, _r(2, 4)),
    ("LogSoftmax", (1,), {}, _r(2, 4)),
    ("MSELoss", (), {}, _two(3, 4)),
    ("MarginRankingLoss", (), {}, lambda: (torch.randn(4), torch.randn(4),
                                           torch.tensor([1., -1., 1., -1.]))),
    ("MaxPool1d", (2,), {}, _r(1, 3, 8)),
    ("MaxPool2d", (2,), {}, _r(1, 3, 8, 8)),
    ("MaxPool3d", (2,), {}, _r(1, 2, 4, 4, 4)),
    ("MaxUnpool1d", (2,), {}, lambda: nn.functional.max_pool1d(
        torch.randn(1, 2, 8), 2, return_indices=True)),
    ("MaxUnpool2d", (2,), {}, lambda: nn.functional.max_pool2d(
        torch.randn(1, 2, 4, 4), 2, return_indices=True)),
    ("Mish", (), {}, _r(2, 4)),
    ("MultiLabelMarginLoss", (), {}, lambda: (torch.randn(2, 4),
                                              torch.tensor([[3, 0, -1, 1], [1, 2, 3, -1]]))),
    ("MultiLabelSoftMarginLoss", (), {}, lambda: (torch.randn(3, 4),
                                                  torch.randint(0, 2, (3, 4)).float())),
    ("MultiMarginLoss", (), {}, _class_target(4, 5)),
    ("MultiheadAttention", (8, 2), {}, lambda: (torch.randn(3, 2, 8),) * 3),
    ("NLLLoss", (), {}, lambda: (torch.randn(4, 5).log_softmax(1), torch.tensor([0, 4, 2, 1]))),
    ("PReLU", (), {}, _r(2, 4)),
    ("PairwiseDistance", (), {}, _two(3, 4)),
    ("PixelShuffle", (2,), {}, _r(1, 8, 2, 2)),
    ("PixelUnshuffle", (2,), {}, _r(1, 2, 4, 4)),
    ("PoissonNLLLoss", (), {}, _two(3, 4)),
    ("RMSNorm", (4,), {}, _r(2, 4)),
    ("RNN", (3, 4), {}, _r(5, 2, 3)),
    ("RNNCell", (3, 4), {}, _r(2, 3)),
    ("RReLU", (), {}, _r(2, 4)),
    ("ReLU", (), {}, _r(2, 4)),
    ("ReLU6", (), {}, _r(2, 4)),
    ("ReflectionPad1d", (1,), {}, _r(1, 2, 4)),
    ("ReflectionPad2d", (1,), {}, _r(1, 2, 4, 4)),
    ("ReflectionPad3d", (1,), {}, _r(1, 2, 3, 3, 3)),
    ("ReplicationPad1d", (1,), {}, _r(1, 2, 4)),
    ("ReplicationPad2d", (1,), {}, _r(1, 2, 4, 4)),
    ("ReplicationPad3d", (1,), {}, _r(1, 2, 3, 3, 3)),
    ("SELU", (), {}, _r(2, 4)),
    ("SiLU", (), {}, _r(2, 4)),
    ("Sigmoid", (), {}, _r(2, 4)),
    ("SmoothL1Loss", (), {}, _two(3, 4)),
    ("SoftMarginLoss", (), {}, lambda: (torch.randn(3, 4), torch.randint(0, 2, (3, 4)).float() * 2 - 1)),
    ("Softmax", (1,), {}, _r(2, 4)),
    ("Softmax2d", (), {}, _r(1, 3, 2, 2)),
    ("Softmin", (1,), {}, _r(2, 4)),
    ("Softplus", (), {}, _r(2, 4)),
    ("Softshrink", (), {}, _r(2, 4)),
    ("Softsign", (), {}, _r(2, 4)),
    ("Tanh", (), {}, _r(2, 4)),
    ("Tanhshrink", (), {}, _r(2, 4)),
    ("Threshold", (0.1, 20.), {}, _r(2, 4)),
    ("Transformer", (8, 2, 1, 1, 16), {"dropout": 0.0}, lambda: (torch.randn(3, 2, 8), torch.randn(4, 2, 8))),
    ("TransformerDecoderLayer", (8, 2, 16), {"dropout": 0.0}, lambda: (torch.randn(3, 2, 8), torch.randn(4, 2, 8))),
    ("TransformerEncoderLayer", (8, 2, 16), {"dropout": 0.0}, _r(3, 2, 8)),
    ("TripletMarginLoss", (), {}, lambda: (torch.randn(3, 4),) * 3),
    ("Unflatten", (1, (2, 2)), {}, _r(2, 4)),
    ("Unfold", ((2, 2),), {}, _r(1, 2, 4, 4)),
    ("Upsample", (), {"scale_factor": 2.0}, _r(1, 2, 3, 3)),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2.0}, _r(1, 2, 3, 3)),
    ("UpsamplingNearest2d", (), {"scale_factor": 2.0}, _r(1, 2, 3, 3)),
    ("ZeroPad1d", (1,), {}, _r(1, 2, 4)),
    ("ZeroPad2d", (1,), {}, _r(1, 2, 4, 4)),
    ("ZeroPad3d", (1,), {}, _r(1, 2, 3, 3, 3)),
    ("CTCLoss", (), {}, lambda: (torch.randn(6, 2, 5).log_softmax(2), torch.tensor([[1, 2], [3, 3]]),
                                 torch.tensor([6, 5]), torch.tensor([2, 1]))),
    ("NLLLoss2d", (), {}, lambda: (torch.randn(2, 3, 2, 2).log_softmax(1),
                                   torch.randint(0, 3, (2, 2, 2)))),
]

NOT_YET = set()        # torch scripts these too, ember's versions not yet
# random in eval mode as well (compared by shape only)
RANDOM = {"FractionalMaxPool2d", "FractionalMaxPool3d", "RReLU"}


def _layer(kind):
    return getattr(nn, kind)(8, 2, 16, dropout=0.0)


# containers and stacks built from other modules: (name, builder, input maker)
BUILT = [
    ("Sequential", lambda: nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)),
     _r(3, 4)),
    ("TransformerEncoder", lambda: nn.TransformerEncoder(_layer("TransformerEncoderLayer"), 2,
                                                         enable_nested_tensor=False),
     _r(3, 2, 8)),
    ("TransformerDecoder", lambda: nn.TransformerDecoder(_layer("TransformerDecoderLayer"), 2),
     lambda: (torch.randn(3, 2, 8), torch.randn(4, 2, 8))),
    ("LazyLinear", lambda: _run_once(nn.LazyLinear(3), torch.ones(1, 4)), _r(2, 4)),
]


def _run_once(module, x):
    module(x)
    return module


@pytest.mark.parametrize("name,build,make", BUILT, ids=[row[0] for row in BUILT])
def test_built_modules_match_eager(name, build, make):
    torch.manual_seed(0)
    module = build().eval()
    scripted = torch.jit.script(module)
    inputs = make()
    for x, y in zip(_values(module(*inputs)), _values(scripted(*inputs))):
        np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


def test_uninitialized_lazy_module_is_refused():
    with pytest.raises(RuntimeError, match="'torch.nn.modules.linear.LazyLinear' has "
                                           "uninitialized parameters weight. Did you forget "
                                           "to run a forward pass?"):
        torch.jit.script(nn.LazyLinear(3))


def test_conv_transpose_output_size():
    torch.manual_seed(0)
    module = nn.ConvTranspose2d(3, 4, 3, stride=2)
    scripted = torch.jit.script(module)
    x = torch.randn(1, 3, 4, 4)
    for size in ([9, 9], [10, 10], [1, 4, 10, 9]):
        np.testing.assert_allclose(scripted(x, size).detach().numpy(),
                                   module(x, size).detach().numpy(), rtol=1e-6)


def _values(x):
    if isinstance(x, torch.Tensor):
        return [x.detach().numpy()]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _values(item)]
    return [] if x is None else [np.asarray(x)]


@pytest.mark.parametrize("name,args,kwargs,make", TABLE, ids=[row[0] for row in TABLE])
def test_scripted_module_matches_eager(name, args, kwargs, make):
    if name in NOT_YET:
        pytest.xfail(f"{name}: the recurrent modules' forward is not scriptable yet")
    torch.manual_seed(0)
    module = getattr(nn, name)(*args, **kwargs).eval()
    scripted = torch.jit.script(module)
    inputs = make()
    want, got = module(*inputs), scripted(*inputs)
    a, b = _values(want), _values(got)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape and x.dtype == y.dtype
        if name not in RANDOM:
            np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["Dropout", "BatchNorm1d", "AlphaDropout"])
def test_training_mode_follows_the_module(name):
    torch.manual_seed(0)
    module = getattr(nn, name)(4) if name == "BatchNorm1d" else getattr(nn, name)(0.5)
    scripted = torch.jit.script(module)
    x = torch.randn(8, 4)
    torch.manual_seed(1)
    want = module(x)
    torch.manual_seed(1)
    got = scripted(x)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)


def test_table_covers_what_torch_scripts():
    """Every row scripts in torch as well (the table is the set torch can script), except
    where torch 2.13 itself fails: its F.gaussian_nll_loss has a comprehension `if` its
    compiler refuses, and MaxUnpool trips an internal assert. ember scripts those too."""
    real = pytest.importorskip("torch")
    for name, args, kwargs, _ in TABLE:
        module = getattr(real.nn, name)(*args, **kwargs)
        if name in TORCH_FAILS:
            with pytest.raises(Exception):     # noqa: B017 - torch's own failure
                real.jit.script(module)
        else:
            real.jit.script(module)


TORCH_FAILS = {"GaussianNLLLoss", "MaxUnpool1d", "MaxUnpool2d"}
