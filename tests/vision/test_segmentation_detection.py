"""Segmentation models and the detection building blocks against torchvision: the same
state_dict layout, and the same outputs in eval mode once torchvision's weights are loaded."""
import numpy as np
import pytest

import ember
from helpers import assert_close, import_torchvision

torch = pytest.importorskip("torch")


def _load_from(model, ref):
    """Copy torchvision's ``ref`` weights into ``model`` after checking the layouts agree."""
    sd, ours = ref.state_dict(), model.state_dict()
    assert list(sd) == list(ours)
    for k in sd:
        assert tuple(sd[k].shape) == tuple(ours[k].shape), k
    model.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in sd.items()})
    return model.eval(), ref.eval()


def _image(*shape, seed=0):
    return np.random.RandomState(seed).rand(*shape).astype(np.float32)


# --------------------------------------------------------------------------- segmentation
SEGMENTATION = [("fcn_resnet50", True), ("deeplabv3_resnet50", True),
                ("deeplabv3_mobilenet_v3_large", True), ("lraspp_mobilenet_v3_large", False),
                ("fcn_resnet50", False)]


@pytest.mark.parametrize("name,aux", SEGMENTATION)
def test_segmentation_outputs_equal_torchvision(name, aux):
    tv = import_torchvision()
    import ember.vision.models.segmentation as segmentation
    kw = {"aux_loss": True} if aux else {}
    torch.manual_seed(0)
    ref = getattr(tv.models.segmentation, name)(weights=None, weights_backbone=None, num_classes=5, **kw)
    model, ref = _load_from(getattr(segmentation, name)(num_classes=5, **kw), ref)
    x = _image(1, 3, 40, 48)
    with torch.no_grad():
        expected = ref(torch.from_numpy(x))
    with ember.no_grad():
        out = model(ember.from_numpy(x))
    assert list(out) == list(expected) == (["out", "aux"] if aux else ["out"])
    for key in expected:
        assert tuple(out[key].shape) == (1, 5, 40, 48)
        assert_close(out[key], expected[key], atol=2e-5, rtol=1e-4, msg=key)


def test_segmentation_defaults_and_errors():
    import ember.vision.models.segmentation as segmentation
    model = segmentation.lraspp_mobilenet_v3_large()
    assert model.classifier.low_classifier.out_channels == 21          # VOC's 21 classes
    with pytest.raises(RuntimeError, match="downloads nothing"):
        segmentation.fcn_resnet50(weights="COCO_WITH_VOC_LABELS_V1")
    with pytest.raises(RuntimeError, match="downloads nothing"):
        segmentation.deeplabv3_resnet50(weights_backbone="IMAGENET1K_V1")
    with pytest.raises(NotImplementedError, match="auxiliary"):
        segmentation.lraspp_mobilenet_v3_large(aux_loss=True)
    from ember.vision import models
    assert models.segmentation is segmentation                     # the lazy attribute
    assert "deeplabv3_resnet50" in models.list_models(segmentation)


# --------------------------------------------------------------------------- detection blocks
def _numpy_nms(boxes, scores, threshold):
    """Greedy NMS in NumPy (by decreasing score, stable): the reference for both libraries,
    since torchvision's C++ nms kernel cannot load beside the CPU-only torch."""
    b = boxes.detach().numpy().astype(np.float64)
    s = scores.detach().numpy()
    x1, y1, x2, y2 = b.T
    area = (x2 - x1) * (y2 - y1)
    alive, keep = np.ones(len(s), bool), []
    for i in np.argsort(-s, kind="stable"):
        if alive[i]:
            keep.append(i)
            alive[i] = False
            inter = (np.clip(np.minimum(x2[i], x2) - np.maximum(x1[i], x1), 0, None)
                     * np.clip(np.minimum(y2[i], y2) - np.maximum(y1[i], y1), 0, None))
            alive &= ~(inter / (area[i] + area - inter) > threshold)
    return np.array(keep, dtype=np.int64)


def _eager_tv_roi_align():
    """torchvision's Python roi_align without its lazy torch.compile (which takes tens of
    seconds); like the C++ kernel on RoIs inside the feature map (it clamps samples beyond
    the border where the kernel zeroes them, so the tests keep boxes inside the image)."""
    import sys
    fn = sys.modules["torchvision.ops.roi_align"]._roi_align
    for cell in fn.__closure__ or ():
        if callable(cell.cell_contents) and getattr(cell.cell_contents, "__name__", "") == "_roi_align":
            fn = cell.cell_contents

    def roi_align(input, boxes, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=False):
        ph, pw = (output_size, output_size) if isinstance(output_size, int) else output_size
        return fn(input, boxes, spatial_scale, ph, pw, sampling_ratio, aligned)
    return roi_align


@pytest.fixture
def tv_with_nms(monkeypatch):
    """torchvision with a NumPy nms and the eager Python roi_align in its poolers."""
    tv = import_torchvision()
    import torchvision.ops.boxes as tv_boxes
    import torchvision.ops.poolers as tv_poolers
    monkeypatch.setattr(tv_boxes, "nms", lambda b, s, t: torch.from_numpy(_numpy_nms(b, s, t)))
    monkeypatch.setattr(tv_poolers, "roi_align", _eager_tv_roi_align())
    return tv


def _random_boxes(rng, n, size=60.0):
    xy = rng.rand(n, 2) * size
    wh = rng.rand(n, 2) * size / 2 + 1
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


def test_batched_nms_against_per_class_reference_and_torchvision(tv_with_nms):
    from ember.vision import ops
    rng = np.random.RandomState(0)
    boxes, scores = _random_boxes(rng, 200), rng.rand(200).astype(np.float32)
    idxs = rng.randint(0, 4, size=200).astype(np.int64)
    keep = ops.batched_nms(ember.from_numpy(boxes), ember.from_numpy(scores), ember.from_numpy(idxs), 0.3)
    expected = np.concatenate([np.flatnonzero(idxs == c)[_numpy_nms(torch.from_numpy(boxes[idxs == c]),
                                                                    torch.from_numpy(scores[idxs == c]), 0.3)]
                               for c in range(4)])
    expected = expected[np.argsort(-scores[expected], kind="stable")]
    np.testing.assert_array_equal(keep.numpy(), expected)
    ref = tv_with_nms.ops.batched_nms(torch.from_numpy(boxes), torch.from_numpy(scores),
                                      torch.from_numpy(idxs), 0.3)
    np.testing.assert_array_equal(keep.numpy(), ref.numpy())
    assert 0 < len(expected) < 200
    empty = ops.batched_nms(ember.zeros(0, 4), ember.zeros(0), ember.zeros(0, dtype=ember.int64), 0.5)
    assert tuple(empty.shape) == (0,) and empty.dtype == ember.int64


@pytest.mark.parametrize("extra", [None, "maxpool", "p6p7"])
def test_feature_pyramid_network_equals_torchvision(extra):
    tv = import_torchvision()
    from ember.vision import ops
    from ember.vision.ops import feature_pyramid_network as efpn
    from torchvision.ops import feature_pyramid_network as tfpn
    blocks = {None: (None, None), "maxpool": (efpn.LastLevelMaxPool(), tfpn.LastLevelMaxPool()),
              "p6p7": (efpn.LastLevelP6P7(16, 8), tfpn.LastLevelP6P7(16, 8))}[extra]
    torch.manual_seed(0)
    ref = tv.ops.FeaturePyramidNetwork([4, 8, 16], 8, extra_blocks=blocks[1])
    model, ref = _load_from(ops.FeaturePyramidNetwork([4, 8, 16], 8, extra_blocks=blocks[0]), ref)
    shapes = {"a": (2, 4, 16, 20), "b": (2, 8, 8, 10), "c": (2, 16, 3, 5)}
    xs = {k: _image(*s, seed=i) for i, (k, s) in enumerate(shapes.items())}
    out = model({k: ember.from_numpy(v) for k, v in xs.items()})
    expected = ref({k: torch.from_numpy(v) for k, v in xs.items()})
    assert list(out) == list(expected)
    for k in expected:
        assert_close(out[k], expected[k], atol=1e-5, rtol=1e-5, msg=k)
    with pytest.raises(TypeError, match="ExtraFPNBlock"):
        ops.FeaturePyramidNetwork([4], 8, extra_blocks=ember.nn.ReLU())


def test_multiscale_roi_align_equals_torchvision(tv_with_nms):
    tv = tv_with_nms
    from ember.vision import ops
    rng = np.random.RandomState(3)
    feats = {"0": _image(2, 3, 32, 40, seed=1), "1": _image(2, 3, 16, 20, seed=2),
             "skip": _image(2, 3, 8, 10, seed=3), "2": _image(2, 3, 8, 10, seed=4)}
    # boxes of many sizes (each level gets some), inside the 128 x 160 image
    boxes = [np.minimum(_random_boxes(rng, 12, 100.0), 127.0), _random_boxes(rng, 7, 120.0) * 0.3]
    shapes = [(128, 160), (120, 150)]
    poolers = []
    for names, size in ((["0", "1", "2"], 5), (["1"], (3, 4))):
        ours = ops.MultiScaleRoIAlign(names, size, 2, canonical_scale=16)      # small boxes spread
        ref = tv.ops.MultiScaleRoIAlign(names, size, 2, canonical_scale=16)     # over the levels
        out = ours({k: ember.from_numpy(v) for k, v in feats.items()}, [ember.from_numpy(b) for b in boxes], shapes)
        expected = ref({k: torch.from_numpy(v) for k, v in feats.items()}, [torch.from_numpy(b) for b in boxes], shapes)
        assert_close(out, expected, atol=1e-5, rtol=1e-5, msg=str(names))
        poolers.append(ours)
    levels = poolers[0].map_levels([ember.from_numpy(b) for b in boxes])
    assert tuple(levels.shape) == (19,) and levels.dtype == ember.int64
    assert len(set(levels.tolist())) == 3               # every level was exercised


def test_anchor_generator_equals_torchvision():
    tv = import_torchvision()
    from ember.vision.models.detection import AnchorGenerator, ImageList
    from torchvision.models.detection.image_list import ImageList as TImageList
    sizes, ratios = ((16,), (32, 48)), ((0.5, 1.0, 2.0), (1.0, 3.0))
    ours, ref = AnchorGenerator(sizes, ratios), tv.models.detection.anchor_utils.AnchorGenerator(sizes, ratios)
    images = np.zeros((2, 3, 64, 96), dtype=np.float32)
    maps = [np.zeros((2, 8, 16, 24), dtype=np.float32), np.zeros((2, 8, 8, 12), dtype=np.float32)]
    out = ours(ImageList(ember.from_numpy(images), [(60, 90), (64, 96)]), [ember.from_numpy(m) for m in maps])
    expected = ref(TImageList(torch.from_numpy(images), [(60, 90), (64, 96)]), [torch.from_numpy(m) for m in maps])
    assert ours.num_anchors_per_location() == ref.num_anchors_per_location() == [3, 4]
    for o, e in zip(out, expected):
        assert_close(o, e, atol=0, rtol=0, check_dtype=True)


# --------------------------------------------------------------------------- Faster R-CNN
_FRCNN = dict(num_classes=3, min_size=64, max_size=96, rpn_pre_nms_top_n_test=300,
              rpn_post_nms_top_n_test=60, rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=60,
              box_detections_per_img=12, box_batch_size_per_image=64)


@pytest.fixture(scope="module")
def frcnn_pair():
    tv = import_torchvision()
    from ember.vision.models import detection
    torch.manual_seed(0)
    ref = tv.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, **_FRCNN)
    return _load_from(detection.fasterrcnn_resnet50_fpn(**_FRCNN), ref)


def _frcnn_images():
    rng = np.random.RandomState(0)
    return [rng.rand(3, 50, 60).astype(np.float32), rng.rand(3, 40, 44).astype(np.float32)]


def test_fasterrcnn_detections_equal_torchvision(frcnn_pair, tv_with_nms):
    model, ref = frcnn_pair
    model.eval(), ref.eval()
    xs = _frcnn_images()
    with torch.no_grad():
        expected = ref([torch.from_numpy(x) for x in xs])
    with ember.no_grad():
        out = model([ember.from_numpy(x) for x in xs])
    assert len(out) == 2
    for o, e in zip(out, expected):
        assert sorted(o) == sorted(e) == ["boxes", "labels", "scores"]
        assert len(e["boxes"]) == 12                      # the cap, with enough candidates
        assert_close(o["labels"], e["labels"], check_dtype=True)
        assert_close(o["scores"], e["scores"], atol=1e-5, rtol=1e-4)
        assert_close(o["boxes"], e["boxes"], atol=1e-3, rtol=1e-4)


def test_fasterrcnn_training_losses_equal_torchvision(frcnn_pair, tv_with_nms):
    model, ref = frcnn_pair
    model.train(), ref.train()
    boxes = [np.array([[5, 6, 30, 40], [20, 10, 45, 35]], np.float32), np.array([[2, 3, 20, 25]], np.float32)]
    labels = [np.array([1, 2]), np.array([2])]
    xs = _frcnn_images()
    torch.manual_seed(3)
    expected = ref([torch.from_numpy(x) for x in xs],
                   [{"boxes": torch.from_numpy(b), "labels": torch.from_numpy(l)} for b, l in zip(boxes, labels)])
    ember.manual_seed(3)
    out = model([ember.from_numpy(x) for x in xs],
                [{"boxes": ember.from_numpy(b), "labels": ember.from_numpy(l)} for b, l in zip(boxes, labels)])
    assert sorted(out) == sorted(expected)
    for k in expected:
        assert_close(out[k], expected[k].detach(), atol=1e-5, rtol=1e-3, msg=k)
    sum(out.values()).backward()
    assert model.roi_heads.box_predictor.cls_score.weight.grad is not None
    with pytest.raises(ValueError, match="targets should be passed"):
        model([ember.from_numpy(xs[0])])
    with pytest.raises(ValueError, match="positive height and width"):
        model([ember.from_numpy(xs[0])], [{"boxes": ember.tensor([[5.0, 5.0, 5.0, 9.0]]),
                                            "labels": ember.tensor([1])}])
    model.eval(), ref.eval()


def test_fasterrcnn_builder_errors():
    from ember.vision.models import detection
    with pytest.raises(RuntimeError, match="downloads nothing"):
        detection.fasterrcnn_resnet50_fpn(weights="COCO_V1")
    with pytest.raises(RuntimeError, match="downloads nothing"):
        detection.fasterrcnn_resnet50_fpn(weights_backbone="IMAGENET1K_V1")
    backbone = detection.resnet_fpn_backbone(backbone_name="resnet18", trainable_layers=2)
    assert backbone.out_channels == 256
    with pytest.raises(ValueError, match="num_classes should not be None"):
        detection.FasterRCNN(backbone)
    with pytest.raises(ValueError, match="num_classes should be None"):
        detection.FasterRCNN(backbone, num_classes=3, box_predictor=ember.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="out_channels"):
        detection.FasterRCNN(ember.nn.ReLU(), num_classes=3)
    trainable = {n.split(".")[1] for n, p in backbone.named_parameters() if p.requires_grad and n.startswith("body")}
    assert trainable == {"layer3", "layer4"}
