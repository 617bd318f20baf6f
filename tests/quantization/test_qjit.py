"""jit.script / jit.trace of quantized code: quantized:: ops as nodes, quantized tensors as
attributes and constants, jit.save/jit.load round trips (in ember, and read by torch)."""
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
from tests.quantization.conftest import assert_same_q, torch, to_torch


def _add_fn(a, b):
    q = ember.quantize_per_tensor(a, 0.1, 2, ember.quint8)
    r = ember.quantize_per_tensor(b, 0.2, 1, ember.quint8)
    return ember.ops.quantized.add(q, r, 0.1, 3)


class _AddAttr(nn.Module):
    """A quantized tensor attribute and quantized::add / add_relu calls."""

    def __init__(self):
        super().__init__()
        g = ember.Generator().manual_seed(0)
        self.w = ember.quantize_per_tensor(ember.randn(5, generator=g), 0.05, 4, ember.quint8)

    def forward(self, x):
        q = ember.quantize_per_tensor(x, 0.1, 2, ember.quint8)
        y = ember.ops.quantized.add(q, self.w, 0.2, 1)
        return ember.ops.quantized.add_relu(y, q, 0.15, 0)


def _x(seed=1, n=5):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32) * 2


def _roundtrip(m):
    buf = io.BytesIO()
    ember.jit.save(m, buf)
    data = buf.getvalue()
    return ember.jit.load(io.BytesIO(data)), data


def test_script_function_emits_quantized_node_and_matches_eager():
    s = ember.jit.script(_add_fn)
    kinds = [n.kind for n in s.graph.nodes()]
    assert "quantized::add" in kinds and "aten::add" not in kinds
    a, b = ember.from_numpy(_x(1)), ember.from_numpy(_x(2))
    assert_same_q(s(a, b), to_torch(_add_fn(a, b)))
    assert "ops.quantized.add(q, r, 0.10000000000000001, 3)" in s.code


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_module_with_quantized_attribute_roundtrip(mode):
    m = _AddAttr()
    x = ember.from_numpy(_x())
    jm = ember.jit.script(m) if mode == "script" else ember.jit.trace(m, x)
    want = m(x)
    assert_same_q(jm(x), to_torch(want))
    assert "quantized::add_relu" in str(jm.graph)
    loaded, data = _roundtrip(jm)
    assert_same_q(loaded(x), to_torch(want))
    # torch reads ember's archive and runs it as torch's own ops on the same attribute
    tm = torch.jit.load(io.BytesIO(data))
    tx = torch.from_numpy(_x())
    q = torch.quantize_per_tensor(tx, 0.1, 2, torch.quint8)
    y = torch.ops.quantized.add(q, to_torch(m.w), 0.2, 1)
    assert torch.equal(tm(tx).int_repr(), torch.ops.quantized.add_relu(y, q, 0.15, 0).int_repr())


def test_torch_scripted_quantized_function_loads_in_ember(tmp_path):
    src = tmp_path / "qfn.py"
    src.write_text(
        "import torch\n"
        "def f(a: torch.Tensor, b: torch.Tensor):\n"
        "    q = torch.quantize_per_tensor(a, 0.1, 2, torch.quint8)\n"
        "    r = torch.quantize_per_tensor(b, 0.2, 1, torch.quint8)\n"
        "    return torch.ops.quantized.add_relu(q, r, 0.1, 3)\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("qfn", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(mod.f), buf)
    e = ember.jit.load(io.BytesIO(buf.getvalue()))
    a, b = _x(3), _x(4)
    got = e(ember.from_numpy(a), ember.from_numpy(b))
    assert_same_q(got, mod.f(torch.from_numpy(a), torch.from_numpy(b)))


class _Packed(nn.Module):
    """Packed linear and conv parameters as attributes, called through quantized:: ops."""

    def __init__(self):
        super().__init__()
        g = ember.Generator().manual_seed(3)
        wl = ember.quantize_per_channel(ember.randn(4, 6, generator=g),
                                        ember.linspace(0.02, 0.05, 4).double(),
                                        ember.zeros(4, dtype=ember.int64), 0, ember.qint8)
        wc = ember.quantize_per_tensor(ember.randn(4, 1, 3, 3, generator=g), 0.05, 0,
                                       ember.qint8)
        self.lin = ember.ops.quantized.linear_prepack(wl, ember.randn(4, generator=g))
        self.conv = ember.ops.quantized.conv2d_prepack(wc, None, [1, 2], [1, 0], [1, 1], 2)

    def forward(self, x, v):
        c = ember.ops.quantized.conv2d_relu(ember.quantize_per_tensor(x, 0.1, 2, ember.quint8),
                                            self.conv, 0.2, 3)
        y = ember.ops.quantized.linear(ember.quantize_per_tensor(v, 0.1, 2, ember.quint8),
                                       self.lin, 0.3, 5)
        return c, y


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_packed_params_script_trace_save_load(mode):
    m = _Packed()
    rng = np.random.default_rng(7)
    x = ember.from_numpy(rng.standard_normal((1, 2, 5, 6)).astype(np.float32))
    v = ember.from_numpy(rng.standard_normal((3, 6)).astype(np.float32))
    jm = ember.jit.script(m) if mode == "script" else ember.jit.trace(m, (x, v))
    want = m(x, v)
    for got in (jm(x, v), _roundtrip(jm)[0](x, v)):
        for g_, w_ in zip(got, want):
            assert_same_q(g_, to_torch(w_))
    _, data = _roundtrip(jm)
    tx, tv = to_torch(x), to_torch(v)
    tc, ty = torch.jit.load(io.BytesIO(data))(tx, tv)
    # torch runs the archive as its own ops on the same packed weights
    wc, bc = m.conv.unpack()
    conv = torch.ops.quantized.conv2d_prepack(to_torch(wc), bc, [1, 2], [1, 0], [1, 1], 2)
    wl, bl = m.lin.unpack()
    lin = torch.ops.quantized.linear_prepack(to_torch(wl), to_torch(bl))
    q = torch.quantize_per_tensor
    assert torch.equal(tc.int_repr(), torch.ops.quantized.conv2d_relu(
        q(tx, 0.1, 2, torch.quint8), conv, 0.2, 3).int_repr())
    assert torch.equal(ty.int_repr(), torch.ops.quantized.linear(
        q(tv, 0.1, 2, torch.quint8), lin, 0.3, 5).int_repr())


def _converted(conv):
    """A converted quantized model built from ember.ao.nn.quantized modules."""
    import ember.ao.nn.quantized as nnq
    ember.manual_seed(0)
    if conv:
        return nn.Sequential(nnq.Quantize(0.1, 2, ember.quint8), nnq.Conv2d(2, 4, 3, padding=1),
                             nn.ReLU(), nn.Flatten(), nnq.Linear(4 * 5 * 5, 6),
                             nnq.DeQuantize()).eval()
    return nn.Sequential(nnq.Quantize(0.1, 2, ember.quint8), nnq.Linear(5, 8), nn.ReLU(),
                         nnq.Linear(8, 3), nnq.DeQuantize()).eval()


@pytest.mark.parametrize("mode,conv", [
    ("trace", True), ("trace", False), ("script", False), ("script", True)])
def test_converted_modules_script_trace_roundtrip(mode, conv):
    m = _converted(conv)
    shape = (2, 2, 5, 5) if conv else (3, 5)
    x = ember.from_numpy(np.random.default_rng(2).standard_normal(shape).astype(np.float32))
    jm = ember.jit.script(m) if mode == "script" else ember.jit.trace(m, x)
    want = m(x).numpy()
    np.testing.assert_array_equal(jm(x).numpy(), want)
    loaded, data = _roundtrip(jm)
    np.testing.assert_array_equal(loaded(x).numpy(), want)
    # torch runs ember's archive with its own kernels: the same values
    np.testing.assert_array_equal(torch.jit.load(io.BytesIO(data))(to_torch(x)).numpy(), want)


@pytest.mark.parametrize("mode", ["trace", "script"])
def test_eager_converted_model_runs_in_ember_and_torch(mode):
    """A model from ao.quantization.convert (the demo's digits CNN: fused ConvReLU2d,
    quantized max pooling, Dropout, Linear, Quantize/DeQuantize) traced or scripted, saved,
    loaded."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    train_digits = pytest.importorskip("train_digits")
    ember.manual_seed(0)
    model = train_digits.DigitsCNN().eval()
    rng = np.random.default_rng(4)
    batches = [(ember.from_numpy(rng.random((8, 1, 8, 8), dtype=np.float32)), None)]
    q = train_digits.quantize_static(model, batches, calibration_batches=1)
    x = ember.from_numpy(rng.random((5, 1, 8, 8), dtype=np.float32))
    want = q(x).numpy()
    traced = ember.jit.trace(q, x) if mode == "trace" else ember.jit.script(q)
    np.testing.assert_array_equal(traced(x).numpy(), want)
    loaded, data = _roundtrip(traced)
    np.testing.assert_array_equal(loaded(x).numpy(), want)
    np.testing.assert_array_equal(torch.jit.load(io.BytesIO(data))(to_torch(x)).numpy(), want)


@pytest.mark.parametrize("mode", ["script", "trace"])
def test_torch_quantized_conv_archives_load_in_ember(mode):
    """torch's scripted quantized Conv pickles itself with __getstate__ (a tuple, packed
    weights rebuilt by the archive's __setstate__ through ops.quantized.conv2d_prepack)."""
    import torch.ao.nn.quantized as tnnq
    torch.manual_seed(0)
    m = torch.nn.Sequential(tnnq.Quantize(0.1, 2, torch.quint8),
                            tnnq.Conv2d(2, 4, 3, stride=(1, 2), padding=1),
                            torch.nn.ReLU(), torch.nn.Flatten(), tnnq.Linear(4 * 5 * 3, 6),
                            tnnq.DeQuantize()).eval()
    x = torch.rand(2, 2, 5, 5)
    jm = torch.jit.script(m) if mode == "script" else torch.jit.trace(m, x)
    buf = io.BytesIO()
    torch.jit.save(jm, buf)
    em = ember.jit.load(io.BytesIO(buf.getvalue()))
    np.testing.assert_array_equal(em(ember.from_numpy(x.numpy())).numpy(), m(x).numpy())
    conv = getattr(em, "1")
    w, b = conv._weight_bias()          # archive method calling (packed).unpack()
    assert_same_q(w, m[1].weight())
    # and ember writes it back in a form torch reads
    again = io.BytesIO()
    ember.jit.save(em, again)
    np.testing.assert_array_equal(torch.jit.load(io.BytesIO(again.getvalue()))(x).numpy(),
                                  m(x).numpy())


def test_torchvision_quantized_mobilenet_archive_loads_in_ember():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    from helpers import import_torchvision
    import_torchvision()
    import torchvision.models.quantization as TQ
    torch.manual_seed(0)
    m = TQ.mobilenet_v2(quantize=True, width_mult=0.25, num_classes=10)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(m), buf)
    em = ember.jit.load(io.BytesIO(buf.getvalue()))
    x = torch.rand(1, 3, 32, 32)
    ember.backends.quantized.engine = torch.backends.quantized.engine
    np.testing.assert_array_equal(em(ember.from_numpy(x.numpy())).numpy(), m(x).numpy())
