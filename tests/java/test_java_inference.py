"""The Java runtime (java/src/ember) runs ONNX files that ember.onnx.export writes; its
outputs match ember's eager outputs. Compiled with javac into a temp dir, run in a subprocess."""
from __future__ import annotations

import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import ember
import ember.onnx
from ember import nn
from ember.vision.models import mobilenet_v2

pytest.importorskip("onnx")  # ember.onnx.export writes through the onnx package

JAVA_SRC = pathlib.Path(__file__).resolve().parents[2] / "java" / "src"
TIMEOUT = 120

if shutil.which("javac") is None or shutil.which("java") is None:
    pytest.skip("a JDK (javac and java on PATH) is needed to build the Java runtime",
                allow_module_level=True)


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    """The Java runtime compiled with javac; the class directory."""
    out = tmp_path_factory.mktemp("java_classes")
    sources = sorted(str(p) for p in JAVA_SRC.rglob("*.java"))
    subprocess.run(["javac", "-d", str(out), *sources],
                   check=True, timeout=TIMEOUT, capture_output=True, text=True)
    return out


def run_java(classes, model_path, x):
    """Runs ember.RunModel on `x` (float32 ndarray); the output as an ndarray."""
    inp = model_path.with_suffix(".f32")
    x.astype("<f4").tofile(inp)
    shape = ",".join(str(d) for d in x.shape)
    proc = subprocess.run(["java", "-cp", str(classes), "ember.RunModel", str(model_path),
                           str(inp), shape], capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    lines = proc.stdout.split()
    assert lines[0] == "shape"
    rank = next(i for i, s in enumerate(lines[1:]) if not s.isdigit())
    shape = tuple(int(s) for s in lines[1:1 + rank])
    return np.array(lines[1 + rank:], dtype=np.float32).reshape(shape)


def check(classes, tmp_path, model, x, **export_kw):
    """Exports `model`, runs the file in Java, compares with ember eager (atol 1e-4)."""
    path = tmp_path / "model.onnx"
    xt = ember.tensor(x)
    ember.onnx.export(model, (xt,), str(path), **export_kw)
    with ember.no_grad():
        expected = model(xt).numpy()
    got = run_java(classes, path, x)
    assert got.shape == expected.shape
    assert np.abs(expected).max() > 0.05  # outputs large enough that the comparison means something
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)
    return path


def randomize_batchnorm(model, rng, gain=1.0):
    """Non-trivial running statistics and affine parameters (weights around `gain`) in
    every BatchNorm2d."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(ember.tensor(rng.normal(0, 0.1, c).astype(np.float32)))
            m.running_var.copy_(ember.tensor(rng.uniform(0.5, 1.5, c).astype(np.float32)))
            with ember.no_grad():
                m.weight.copy_(ember.tensor(gain * rng.uniform(0.5, 1.5, c).astype(np.float32)))
                m.bias.copy_(ember.tensor(rng.normal(0, 0.1, c).astype(np.float32)))
    return model


class SmallCNN(nn.Module):
    """conv/bn/relu/maxpool, a strided dilated grouped conv, avgpool (ceil mode, padded),
    a view through x.size(0), linear, then elementwise and matmul on the logits."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2, padding=2, dilation=2, groups=2), nn.ReLU6(),
            nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True))
        self.fc = nn.Linear(16 * 3 * 3, 10)
        self.proj = nn.Parameter(ember.randn(10, 4))

    def forward(self, x):
        y = self.features(x)
        y = self.fc(y.view(y.size(0), -1))
        return ember.matmul(y * 2.0 - 0.5, self.proj) / 3.0


def test_mobilenet_v2_matches_ember(classes, tmp_path):
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    model = randomize_batchnorm(mobilenet_v2(num_classes=10), rng, gain=3.0).eval()
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    check(classes, tmp_path, model, x)


@pytest.mark.parametrize("kw", [{}, {"do_constant_folding": False}],
                         ids=["folded", "unfolded"])
def test_small_cnn_matches_ember(classes, tmp_path, kw):
    ember.manual_seed(0)
    rng = np.random.default_rng(1)
    model = randomize_batchnorm(SmallCNN(), rng).eval()
    x = 8 * rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    check(classes, tmp_path, model, x, **kw)


@pytest.mark.parametrize("pool", [nn.AvgPool2d(2), nn.MaxPool2d(3, 2, 1, ceil_mode=True),
                                  nn.AvgPool2d(3, 2, 1, count_include_pad=False)],
                         ids=["avg", "max_ceil", "avg_padded"])
def test_pooling_matches_ember(classes, tmp_path, pool):
    x = np.random.default_rng(3).standard_normal((1, 2, 9, 9)).astype(np.float32)
    check(classes, tmp_path, pool, x)


def test_shape_ops_graph(classes, tmp_path):
    """Shape/Gather/Unsqueeze/Concat/Reshape/Squeeze, as a dynamic-batch flatten is often
    exported (ember's tracer folds these to constants, so this graph is built by hand)."""
    onnx = pytest.importorskip("onnx")
    h, T = onnx.helper, onnx.TensorProto
    consts = [h.make_tensor("zero", T.INT64, [], [0]),
              h.make_tensor("axes0", T.INT64, [1], [0]),
              h.make_tensor("minus1", T.INT64, [1], [-1]),
              h.make_tensor("axes2", T.INT64, [1], [2])]
    nodes = [h.make_node("Shape", ["x"], ["shape"]),
             h.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             h.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
             h.make_node("Concat", ["batch1", "minus1"], ["target"], axis=0),
             h.make_node("Reshape", ["x", "target"], ["flat"]),
             h.make_node("Unsqueeze", ["flat", "axes2"], ["flat3"]),
             h.make_node("Squeeze", ["flat3", "axes2"], ["y"])]
    graph = h.make_graph(nodes, "shape_ops", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4, 4])],
                         [h.make_tensor_value_info("y", T.FLOAT, [2, 48])], initializer=consts)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    path = tmp_path / "shape_ops.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(run_java(classes, path, x), x.reshape(2, -1))


def test_unsupported_operator_is_named(classes, tmp_path):
    path = tmp_path / "sigmoid.onnx"
    ember.onnx.export(nn.Sigmoid(), (ember.randn(2, 3),), str(path))
    with pytest.raises(RuntimeError, match="ONNX operator 'Sigmoid'.*not supported"):
        run_java(classes, path, np.ones((2, 3), np.float32))
