"""TorchScript archives cross both ways with REAL torch, for every module type of
``test_nn_modules``' table and every ``ember.vision.models`` model:

- torch scripts and saves the module -> ``ember.jit.load`` gives torch's outputs, and the
  loaded module saved again by ember loads back in torch with the same outputs;
- ember scripts and saves it -> ``torch.jit.load`` gives ember eager's outputs, and so does
  ``ember.jit.load`` of the same archive (round trip).
"""
from __future__ import annotations

import io
import os

import numpy as np
import pytest

import ember
from ember import nn
from ember.vision import models

from .test_nn_modules import BUILT, RANDOM, TABLE, TORCH_FAILS, _values

torch = pytest.importorskip("torch")

# torch scripts CrossMapLRN2d but cannot save it (its forward calls a Python autograd Function)
TORCH_CANNOT_SAVE = {"CrossMapLRN2d"}
# torch's scripted recurrent layers have only the overloads forward__0 / forward__1
OVERLOADED = {"RNN", "LSTM", "GRU"}


def _samples(*shape):
    return ember.rand(*shape)


# extra rows: forms the table leaves out (fixed random samples compare values)
EXTRA = [
    ("FractionalMaxPool2d", (2,), {"output_size": 3, "_random_samples": "2d"},
     lambda: (ember.randn(2, 3, 6, 6),)),
    ("FractionalMaxPool2d", (2,), {"output_ratio": 0.5, "return_indices": True,
                                   "_random_samples": "2d"}, lambda: (ember.randn(2, 3, 8, 8),)),
    ("FractionalMaxPool3d", (2,), {"output_size": 2, "_random_samples": "3d"},
     lambda: (ember.randn(2, 3, 4, 4, 4),)),
    ("MaxPool2d", (2,), {"return_indices": True}, lambda: (ember.randn(1, 2, 4, 4),)),
    ("GaussianNLLLoss", (), {"full": True, "reduction": "sum"},
     lambda: (ember.randn(3, 4), ember.randn(3, 4), ember.rand(3) + 0.1)),
    ("GaussianNLLLoss", (), {"reduction": "none"},
     lambda: (ember.randn(3, 4), ember.randn(3, 4), ember.rand(3, 1) + 0.1)),
]
_SAMPLE_SHAPES = {"2d": (2, 3, 2), "3d": (2, 3, 3)}


def _r(*shape):
    return lambda: (ember.randn(*shape),)


def _two(*shape):
    return lambda: (ember.randn(*shape), ember.randn(*shape))


# options other than the constructors' defaults ("w<n>": a weight of n values)
EXTRA += [
    ("CrossEntropyLoss", (), {"label_smoothing": 0.1, "weight": "w5"},
     lambda: (ember.randn(4, 5), ember.randint(0, 5, (4,)))),
    ("CrossEntropyLoss", (), {"reduction": "sum", "ignore_index": 1},
     lambda: (ember.randn(4, 5), ember.randint(0, 5, (4,)))),
    ("CrossEntropyLoss", (), {}, lambda: (ember.randn(4, 5), ember.rand(4, 5).softmax(1))),
    ("EmbeddingBag", (10, 3), {"mode": "max"},
     lambda: (ember.tensor([1, 2, 4, 5, 4, 3]), ember.tensor([0, 2]))),
    ("EmbeddingBag", (10, 3), {"mode": "sum", "padding_idx": 2},
     lambda: (ember.tensor([1, 2, 4, 5, 4, 3]), ember.tensor([0, 2]))),
    ("Upsample", (), {"scale_factor": 2.0, "mode": "bilinear", "align_corners": True},
     _r(1, 2, 3, 3)),
    ("Upsample", (), {"size": (5, 7), "mode": "bicubic"}, _r(1, 2, 3, 3)),
    ("Upsample", (), {"scale_factor": 2.0, "mode": "nearest-exact"}, _r(1, 2, 3, 3)),
    ("Upsample", (), {"scale_factor": 2.0, "mode": "trilinear"}, _r(1, 2, 2, 3, 3)),
    ("Conv2d", (3, 4, 3), {"padding": "same", "padding_mode": "circular"}, _r(1, 3, 5, 5)),
    ("Conv1d", (4, 4, 3), {"padding": "same", "groups": 2, "dilation": 2}, _r(1, 4, 9)),
    ("MaxPool2d", (3,), {"stride": 2, "ceil_mode": True, "padding": 1}, _r(1, 2, 7, 7)),
    ("AvgPool2d", (3,), {"stride": 2, "count_include_pad": False, "padding": 1,
                         "divisor_override": 2}, _r(1, 2, 7, 7)),
    ("LPPool2d", (1.5, 2), {}, lambda: (ember.rand(1, 2, 4, 4) + 0.1,)),
    ("InstanceNorm2d", (3,), {"track_running_stats": True}, _r(2, 3, 4, 4)),
    ("MultiheadAttention", (8, 2), {"kdim": 6, "vdim": 5, "batch_first": True},
     lambda: (ember.randn(2, 3, 8), ember.randn(2, 4, 6), ember.randn(2, 4, 5))),
    ("TransformerEncoderLayer", (8, 2, 16), {"dropout": 0.0, "norm_first": True,
                                             "activation": "gelu", "batch_first": True},
     _r(2, 3, 8)),
    ("LSTM", (3, 4), {"num_layers": 2, "bidirectional": True, "batch_first": True,
                      "proj_size": 2}, _r(2, 5, 3)),
    ("GRU", (3, 4), {"num_layers": 2, "bias": False}, _r(5, 2, 3)),
    ("RNN", (3, 4), {"nonlinearity": "relu"}, _r(5, 2, 3)),
    ("Softmax", (), {}, _r(2, 3, 4)),
    ("NLLLoss", (), {"weight": "w5", "ignore_index": 2},
     lambda: (ember.randn(4, 5).log_softmax(1), ember.tensor([0, 4, 2, 1]))),
    ("KLDivLoss", (), {"log_target": True, "reduction": "sum"}, _two(3, 4)),
    ("BCEWithLogitsLoss", (), {"pos_weight": "w4"}, lambda: (ember.randn(3, 4), ember.rand(3, 4))),
    ("MultiMarginLoss", (), {"p": 2, "margin": 0.5, "weight": "w5"},
     lambda: (ember.randn(4, 5), ember.randint(0, 5, (4,)))),
    ("TripletMarginLoss", (), {"p": 1.0, "swap": True}, lambda: (ember.randn(3, 4),) * 3),
    ("HuberLoss", (), {"delta": 0.5, "reduction": "none"}, _two(3, 4)),
    ("CTCLoss", (), {"zero_infinity": True, "reduction": "sum"},
     lambda: (ember.randn(6, 2, 5).log_softmax(2), ember.tensor([[1, 2], [3, 3]]),
              ember.tensor([6, 5]), ember.tensor([2, 1]))),
    ("ReflectionPad2d", ((1, 0, 2, 1),), {}, _r(1, 2, 4, 4)),
    ("ConvTranspose2d", (3, 4, 3), {"stride": 2, "output_padding": 1, "dilation": 2},
     _r(1, 3, 4, 4)),
    ("LayerNorm", (4,), {"bias": False}, _r(2, 3, 4)),
    ("LocalResponseNorm", (3,), {"alpha": 1e-3, "beta": 0.5, "k": 2.0}, _r(1, 4, 3, 3)),
    ("Bilinear", (3, 4, 5), {"bias": False}, lambda: (ember.randn(2, 3), ember.randn(2, 4))),
]


def _kwargs(kwargs, lib):
    """The constructor's kwargs for ``lib`` (ember or torch): fixed samples made there."""
    out = dict(kwargs)
    for k, v in kwargs.items():
        if isinstance(v, str) and v[:1] == "w" and v[1:].isdigit():
            out[k] = lib.from_numpy(np.linspace(0.5, 1.5, int(v[1:])).astype(np.float32))
    key = out.get("_random_samples")
    if key is not None:
        data = np.random.default_rng(1).random(_SAMPLE_SHAPES[key]).astype(np.float32)
        out["_random_samples"] = lib.from_numpy(data)
    return out


def _to_torch(x):
    return torch.from_numpy(x.detach().numpy().copy()) if isinstance(x, ember.Tensor) else x


def _tvalues(x):
    if isinstance(x, torch.Tensor):
        return [x.detach().numpy()]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _tvalues(item)]
    return [] if x is None else [np.asarray(x)]


def _same(got, want, name, kwargs=None, atol=1e-5):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        if name not in RANDOM or (kwargs or {}).get("_random_samples") is not None:
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


def _buffer(save, module):
    buf = io.BytesIO()
    save(module, buf)
    return buf.getvalue()


def _ids(rows):
    seen = {}
    out = []
    for row in rows:
        k = seen[row[0]] = seen.get(row[0], -1) + 1
        out.append(row[0] if k == 0 else f"{row[0]}-{k}")
    return out


TORCH_ROWS = [r for r in TABLE + EXTRA if r[0] not in TORCH_FAILS | TORCH_CANNOT_SAVE]


@pytest.mark.parametrize("name,args,kwargs,make", TORCH_ROWS, ids=_ids(TORCH_ROWS))
def test_torch_archive_loads_in_ember_and_saves_back(name, args, kwargs, make):
    ember.manual_seed(0)
    inputs = make()
    tin = [_to_torch(x) for x in inputs]
    scripted = torch.jit.script(getattr(torch.nn, name)(*args, **_kwargs(kwargs, torch)).eval())
    data = _buffer(torch.jit.save, scripted)
    method = "forward__0" if name in OVERLOADED else "forward"
    torch.manual_seed(0)
    want = _tvalues(getattr(scripted, method)(*tin))
    loaded = ember.jit.load(io.BytesIO(data))
    _same(_values(getattr(loaded, method)(*inputs)), want, name, kwargs)
    again = torch.jit.load(io.BytesIO(_buffer(ember.jit.save, loaded)))
    torch.manual_seed(0)
    _same(_tvalues(getattr(again, method)(*tin)), want, name, kwargs)


def test_torch_cannot_save_what_the_table_leaves_out():
    for name in TORCH_CANNOT_SAVE:
        row = next(r for r in TABLE if r[0] == name)
        scripted = torch.jit.script(getattr(torch.nn, name)(*row[1], **row[2]))
        with pytest.raises(RuntimeError, match="Could not export Python function"):
            _buffer(torch.jit.save, scripted)


EMBER_ROWS = [(name, args, kwargs, make, None) for name, args, kwargs, make in TABLE + EXTRA] \
    + [(name, (), {}, make, build) for name, build, make in BUILT]


def _ember_params():
    return [pytest.param(*row, id=rid) for row, rid in zip(EMBER_ROWS, _ids(EMBER_ROWS))]


@pytest.mark.parametrize("name,args,kwargs,make,build", _ember_params())
def test_ember_archive_loads_in_torch_and_ember(name, args, kwargs, make, build):
    ember.manual_seed(0)
    module = (build() if build else getattr(nn, name)(*args, **_kwargs(kwargs, ember))).eval()
    inputs = make()
    want = _values(module(*inputs))
    data = _buffer(ember.jit.save, ember.jit.script(module))
    in_torch = torch.jit.load(io.BytesIO(data))
    _same(_tvalues(in_torch(*[_to_torch(x) for x in inputs])), want, name, kwargs)
    in_ember = ember.jit.load(io.BytesIO(data))
    _same(_values(in_ember(*inputs)), want, name, kwargs)


# every model of ember.vision.models, both ways, at 1x3x64x64. Their cost is building,
# saving and loading their weights (100-500 MB for VGG and the deep ResNets), not the input:
# the default run takes one model of each architecture (the slowest three at 32x32); the deeper and wider variants of
# the same code (with a lighter 32x32 input) run with EMBER_TEST_ALL_MODELS=1 (all 28 pass,
# about 4 minutes on two shared cores).
ARCHITECTURES = ["resnet18", "resnet50", "alexnet", "vgg11", "densenet121", "squeezenet1_0",
                 "squeezenet1_1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"]
VARIANTS = [n for n in models.list_models(module=models) if n not in ARCHITECTURES]
LIGHTER = {"vgg11": 32, "densenet121": 32, "resnet50": 32}     # the slowest by default
ALL_MODELS = os.environ.get("EMBER_TEST_ALL_MODELS") == "1"


def _vision_params():
    heavy = pytest.mark.skipif(not ALL_MODELS, reason="a deeper/wider variant of an "
                               "architecture tested by default; EMBER_TEST_ALL_MODELS=1")
    return [pytest.param(n, LIGHTER.get(n, 64), id=n) for n in ARCHITECTURES] + \
        [pytest.param(n, 32, id=n, marks=heavy) for n in VARIANTS]


def test_the_tables_cover_every_vision_model():
    assert sorted(ARCHITECTURES + VARIANTS) == sorted(models.list_models(module=models))
    assert set(ARCHITECTURES) <= set(models.list_models(module=models))


@pytest.mark.parametrize("name,side", _vision_params())
def test_vision_model_crosses_both_ways(name, side):
    ember.manual_seed(0)
    options = {"init_weights": False} if name.startswith("vgg") else {}
    model = getattr(models, name)(num_classes=10, **options).eval()
    x = np.random.default_rng(0).standard_normal((1, 3, side, side)).astype(np.float32)
    with ember.no_grad():
        want = model(ember.from_numpy(x)).numpy()
    data = _buffer(ember.jit.save, ember.jit.script(model))
    got = torch.jit.load(io.BytesIO(data))(torch.from_numpy(x)).detach().numpy()
    scale = max(1.0, float(np.abs(want).max()))   # deep random-init nets grow large outputs
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
    with ember.no_grad():
        again = ember.jit.load(io.BytesIO(data))(ember.from_numpy(x)).numpy()
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-5 * scale)
