"""ember.vision models and ops exported to ONNX, run in onnxruntime at two batch sizes."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.onnx
import ember.vision.models as M
import ember.vision.ops as ops
from ember import nn

from _onnx_run import check, op_types

# One builder per family. The deeper variants build from the same blocks with other
# depths/widths (test_every_builder_has_a_tested_family says which stands for which).
TESTED = ["alexnet", "vgg11", "vgg11_bn", "resnet18", "resnext50_32x4d", "densenet121",
          "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "squeezenet1_0",
          "squeezenet1_1"]
FAMILY = {"resnet": "resnet18", "wide_resnet": "resnext50_32x4d", "resnext": "resnext50_32x4d",
          "vgg": "vgg11", "densenet": "densenet121"}


def _build(name):
    """The model; AlexNet/VGG with 64-wide hidden layers in place of 4096 (the same layer
    kinds; built on the meta device first, so the 4096-wide layers are never filled)."""
    if not name.startswith(("vgg", "alexnet")):
        return getattr(M, name)(num_classes=10)
    with ember.device("meta"):
        m = getattr(M, name)(num_classes=10)
    cls = m.classifier
    lin = [i for i, layer in enumerate(cls) if isinstance(layer, nn.Linear)]
    widths = [cls[lin[0]].in_features, 64, 64, 10]
    for k, i in enumerate(lin):
        cls[i] = nn.Linear(widths[k], widths[k + 1], device="meta")
    m.to_empty(device="cpu")
    for mod in m.modules():
        if hasattr(mod, "reset_parameters"):
            mod.reset_parameters()
    return m


def _randomized(m):
    """Non-trivial running statistics, and larger outputs (MobileNet's classifier starts at
    N(0, 0.01); SqueezeNet's last layer is a convolution)."""
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)
    last = [mod for mod in m.modules() if isinstance(mod, (nn.Linear, nn.Conv2d))][-1]
    with ember.no_grad():
        last.weight.mul_(10)
    return m


@pytest.mark.parametrize("name", TESTED)
def test_vision_model(name):
    ember.manual_seed(0)
    m = _randomized(_build(name)).eval()
    size = 64 if name == "alexnet" else 32         # AlexNet's first layers need 63 pixels
    proto = check(m, ember.randn(1, 3, size, size), ember.randn(2, 3, size, size),
                  dynamic={"in0": {0: "batch"}, "out0": {0: "batch"}})
    assert "Conv" in op_types(proto)


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small"])
def test_dynamic_spatial_size(name):
    """Global average pooling exports as GlobalAveragePool: other image sizes run too."""
    ember.manual_seed(0)
    m = _randomized(_build(name)).eval()
    proto = check(m, ember.randn(1, 3, 32, 32), ember.randn(2, 3, 48, 40),
                  dynamic={"in0": [0, 2, 3], "out0": [0]})
    assert "GlobalAveragePool" in op_types(proto)


def test_every_builder_has_a_tested_family():
    for name in M.list_models(module=M):   # the classification builders
        if name in TESTED:
            continue
        family = name.rstrip("0123456789_").replace("_bn", "").rstrip("0123456789_")
        family = family.split("101")[0].split("50")[0].rstrip("_")
        assert FAMILY.get(family) in TESTED, name


def _boxes(n, seed):
    g = ember.Generator().manual_seed(seed)
    xy = ember.rand(n, 2, generator=g) * 20
    wh = ember.rand(n, 2, generator=g) * 15 + 1
    return ember.cat([xy, xy + wh], 1), ember.rand(n, generator=g)


def test_nms():
    def fn(boxes, scores):
        return ops.nms(boxes, scores, 0.3)
    b, s = _boxes(30, 0)
    b2, s2 = _boxes(50, 1)
    assert 0 < fn(b, s).numel() < 30                  # some boxes are suppressed
    proto = check(fn, (b, s), (b2, s2), dynamic={"in0": [0], "in1": [0], "out0": [0]})
    assert "NonMaxSuppression" in op_types(proto)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("ratio", [2, -1])
def test_roi_align(aligned, ratio):
    def fn(x, rois):
        return ops.roi_align(x, rois, (3, 3), 0.5, ratio, aligned)
    x = ember.randn(2, 3, 16, 16)
    rois = ember.tensor([[0, 1, 1, 10, 12.], [1, 0.5, 2, 20, 25], [0, 3, 3, 3.5, 4]])
    rois2 = ember.tensor([[1, 2, 2, 30, 30.], [0, 0, 0, 8, 8]])
    proto = check(fn, (x, rois), (x, rois2), dynamic={"in1": [0], "out0": [0]})
    assert "RoiAlign" in op_types(proto)


def test_roi_align_module_in_a_model():
    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.pool = ops.RoIAlign((2, 2), 1.0, 2, aligned=True)

        def forward(self, x, rois):
            return self.pool(self.conv(x), rois).flatten(1)
    x = ember.randn(1, 3, 12, 12)
    rois = ember.tensor([[0, 1, 1, 8, 9.], [0, 2, 0, 11, 5]])
    check(Head().eval(), (x, rois))
    assert ops.roi_align is not None and np is not None


def test_batched_nms():
    def fn(boxes, scores, idxs):
        return ops.batched_nms(boxes, scores, idxs, 0.3)
    b, s = _boxes(30, 2)
    idxs = (ember.arange(30) % 3)
    b2, s2 = _boxes(40, 3)
    ref = fn(b, s, idxs)
    assert 0 < ref.numel() < 30
    check(fn, (b, s, idxs), (b2, s2, ember.arange(40) % 4),
          dynamic={"in0": [0], "in1": [0], "in2": [0], "out0": [0]})


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v3_small", "densenet121", "alexnet",
                                  "squeezenet1_1"])
def test_scripted_vision_model(name):
    """The scripted graph (functional calls, shape checks, loops over blocks) exports too."""
    ember.manual_seed(0)
    m = _randomized(_build(name)).eval()
    size = 64 if name == "alexnet" else 32         # AlexNet's first layers need 63 pixels
    proto = check(ember.jit.script(m), ember.randn(1, 3, size, size),
                  ember.randn(2, 3, size, size), dynamic={"in0": [0], "out0": [0]})
    assert "Conv" in op_types(proto) and "If" not in op_types(proto)


class _Detect(nn.Module):
    def forward(self, boxes, scores, x):
        keep = ops.nms(boxes, scores, 0.3)
        i = 1
        return boxes[keep], x[:, i:3, ::2], x[0, ..., None], scores[scores > 0.5], x[i]


def test_scripted_nms_and_indexing():
    b, s = _boxes(20, 4)
    b2, s2 = _boxes(25, 5)
    x = ember.randn(3, 4, 5)
    proto = check(ember.jit.script(_Detect()), (b, s, x), (b2, s2, x),
                  dynamic={"in0": [0], "in1": [0], "out0": [0], "out3": [0]})
    assert {"NonMaxSuppression", "Compress", "Gather"} <= set(op_types(proto))


def test_nms_keep_and_small_boxes():
    def fn(boxes, scores):
        keep = ops.nms(boxes, scores, 0.3)
        return boxes[keep], ops.remove_small_boxes(boxes, 8.0)
    b, s = _boxes(30, 6)
    b2, s2 = _boxes(35, 7)
    check(fn, (b, s), (b2, s2), dynamic={"in0": [0], "in1": [0], "out0": [0], "out1": [0]})


def test_roi_pool():
    def fn(x, rois):
        return ops.roi_pool(x, rois, (3, 2), 0.5)
    x = ember.randn(2, 3, 16, 16)
    rois = ember.tensor([[0, 1, 1, 10, 12.], [1, 0.5, 2, 20, 25], [0, 3, 3, 3.5, 4],
                         [1, 7.3, 2.2, 30, 9.9]])
    proto = check(fn, (x, rois), (x, rois[1:]), dynamic={"in1": [0], "out0": [0]})
    assert "MaxRoiPool" in op_types(proto)
