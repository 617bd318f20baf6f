"""The demo's --quantize step: static PTQ of the digits CNN; the int8 state_dict it saves
loads in torch into the same model quantized by torch and gives the same integers."""
import io
import os
import sys

import numpy as np
import pytest

import ember
from tests.quantization.conftest import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
train_digits = pytest.importorskip("train_digits")
pytest.importorskip("sklearn")


def _torch_digits_cnn(width=32):
    """examples/train_digits.DigitsCNN in torch (same module names)."""
    nn = torch.nn

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
                nn.BatchNorm2d(2 * width), nn.ReLU(), nn.MaxPool2d(2))
            self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2),
                                            nn.Linear(2 * width * 2 * 2, 10))

        def forward(self, x):
            return self.classifier(self.features(x))
    return DigitsCNN()


def _torch_quantized_shell():
    """torch's DigitsCNN taken through the same fuse/prepare/convert (weights to be loaded)."""
    tq = torch.ao.quantization
    torch.backends.quantized.engine = "x86"
    m = tq.QuantWrapper(_torch_digits_cnn()).eval()
    tq.fuse_modules(m.module, train_digits.FUSE_GROUPS, inplace=True)
    m.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(m, inplace=True)
    m(torch.rand(2, 1, 8, 8))
    tq.convert(m, inplace=True)
    return m


def test_quantize_step_saves_a_state_dict_torch_loads():
    from ember.utils.data import DataLoader
    ember.manual_seed(0)
    train_set, test_set = train_digits.load_digits_split()
    loader = DataLoader(train_set, batch_size=64, shuffle=False)
    model = train_digits.DigitsCNN()
    opt = ember.optim.AdamW(model.parameters(), lr=0.01)
    model.train()
    for x, y in loader:                    # one epoch: enough for a meaningful accuracy
        loss = ember.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    test_loader = DataLoader(test_set, batch_size=256)
    float_acc = train_digits.evaluate(model, test_loader)
    qmodel = train_digits.quantize_static(model, loader, calibration_batches=4)
    int8_acc = train_digits.evaluate(qmodel, test_loader)
    assert float_acc > 0.7 and abs(float_acc - int8_acc) <= 0.03, (float_acc, int8_acc)

    buf = io.BytesIO()
    ember.save(qmodel.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf)                    # weights_only: plain tensors and qtensors
    tmodel = _torch_quantized_shell()
    tmodel.load_state_dict(sd)
    x = test_set.tensors[0][:64]
    with ember.no_grad():
        want = qmodel(x).numpy()
    with torch.no_grad():
        got = tmodel(torch.from_numpy(x.numpy().copy())).numpy()
    np.testing.assert_array_equal(got, want)


def test_torch_quantized_state_dict_loads_into_ember_model():
    """The reverse: torch quantizes (its own calibration), torch.save's the state_dict;
    ember.load reads it into ember's converted model, which then computes torch's values."""
    torch.manual_seed(0)
    tq = torch.ao.quantization
    t = tq.QuantWrapper(_torch_digits_cnn()).eval()
    for m in t.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_var.uniform_(0.5, 1.5)
    tq.fuse_modules(t.module, train_digits.FUSE_GROUPS, inplace=True)
    t.qconfig = tq.get_default_qconfig("x86")
    tq.prepare(t, inplace=True)
    t(torch.rand(16, 1, 8, 8))
    tq.convert(t, inplace=True)
    buf = io.BytesIO()
    torch.save(t.state_dict(), buf)
    buf.seek(0)
    sd = ember.load(buf)
    e = train_digits.quantize_static(train_digits.DigitsCNN(),
                                     [(ember.rand(2, 1, 8, 8), None)], calibration_batches=1)
    e.load_state_dict(sd)
    x = torch.rand(8, 1, 8, 8)
    with torch.no_grad():
        want = t(x).numpy()
    np.testing.assert_array_equal(e(ember.from_numpy(x.numpy().copy())).numpy(), want)
