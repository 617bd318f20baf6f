"""RetinaNet (ember.vision.models.detection.retinanet): against torchvision's model as a black
box where it imports (same state_dict layout, detections and losses), and on a tiny backbone:
training steps, postprocess invariants, checkpoint loading and argument errors."""
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from helpers import assert_close, import_torchvision

torch = pytest.importorskip("torch")

from ember.vision.models import detection  # noqa: E402
from ember.vision.ops import box_iou  # noqa: E402

_SMALL = dict(num_classes=4, min_size=64, max_size=96, topk_candidates=50, detections_per_img=20)
_COCO_FILE = "retinanet_resnet50_fpn_coco-eeacb38b.pth"


def _numpy_nms(boxes, scores, threshold):
    """Greedy NMS by decreasing score (stable): torchvision's C++ nms cannot load here."""
    b, s = boxes.detach().numpy().astype(np.float64), scores.detach().numpy()
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    alive, keep = np.ones(len(s), bool), []
    for i in np.argsort(-s, kind="stable"):
        if alive[i]:
            keep.append(i)
            wh = np.clip(np.minimum(b[i, 2:], b[:, 2:]) - np.maximum(b[i, :2], b[:, :2]), 0, None)
            inter = wh[:, 0] * wh[:, 1]
            alive &= ~(inter / (area[i] + area - inter) > threshold)
            alive[i] = False
    return torch.from_numpy(np.array(keep, dtype=np.int64))


def _images(seed=0):
    rng = np.random.RandomState(seed)
    return [rng.rand(3, 50, 60).astype(np.float32), rng.rand(3, 40, 44).astype(np.float32)]


_BOXES = [np.array([[5, 6, 30, 40], [20, 10, 45, 35]], np.float32), np.array([[2, 3, 20, 25]], np.float32)]
_LABELS = [np.array([1, 2]), np.array([3])]


def _targets(lib):
    return [{"boxes": lib.from_numpy(b.copy()), "labels": lib.from_numpy(l.copy())} for b, l in zip(_BOXES, _LABELS)]


@pytest.fixture(scope="module")
def pair():
    """ember's and torchvision's retinanet_resnet50_fpn with torchvision's weights (class and
    box biases spread so detections pass the score threshold)."""
    tv = import_torchvision()
    import torchvision.ops.boxes as tv_boxes
    saved_nms, tv_boxes.nms = tv_boxes.nms, _numpy_nms
    torch.manual_seed(0)
    ref = tv.models.detection.retinanet_resnet50_fpn(weights=None, weights_backbone=None, **_SMALL)
    with torch.no_grad():
        ref.head.classification_head.cls_logits.bias.copy_(torch.randn(36) * 2 - 3)
        ref.head.regression_head.bbox_reg.bias.copy_(torch.randn(36) * 0.2)
    model = detection.retinanet_resnet50_fpn(**_SMALL)
    sd, ours = ref.state_dict(), model.state_dict()
    assert list(sd) == list(ours)
    assert [tuple(v.shape) for v in sd.values()] == [tuple(v.shape) for v in ours.values()]
    model.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in sd.items()})
    yield model, ref
    tv_boxes.nms = saved_nms


def test_detections_equal_torchvision(pair):
    model, ref = pair
    model.eval(), ref.eval()
    xs = _images()
    with torch.no_grad():
        expected = ref([torch.from_numpy(x) for x in xs])
    with ember.no_grad():
        out = model([ember.from_numpy(x) for x in xs])
    for o, e in zip(out, expected):
        assert sorted(o) == sorted(e) == ["boxes", "labels", "scores"]
        assert len(e["boxes"]) == 20                      # the cap, with enough candidates
        assert_close(o["labels"], e["labels"], check_dtype=True)
        assert_close(o["scores"], e["scores"], atol=1e-6, rtol=1e-5)
        assert_close(o["boxes"], e["boxes"], atol=1e-3, rtol=1e-5)


def test_training_losses_and_gradients_equal_torchvision(pair):
    model, ref = pair
    model.train(), ref.train()
    for net in (model, ref):                  # gradients of the heads only: backward stays short
        for p in net.backbone.parameters():
            p.requires_grad_(False)
    xs = _images()
    expected = ref([torch.from_numpy(x) for x in xs], _targets(torch))
    out = model([ember.from_numpy(x) for x in xs], _targets(ember))
    assert sorted(out) == sorted(expected) == ["bbox_regression", "classification"]
    for k in expected:
        assert_close(out[k], expected[k].detach(), atol=1e-5, rtol=1e-4, msg=k)
    sum(expected.values()).backward()
    sum(out.values()).backward()
    for name in ("head.classification_head.cls_logits.weight", "head.regression_head.bbox_reg.bias"):
        ours, theirs = dict(model.named_parameters())[name].grad, dict(ref.named_parameters())[name].grad
        assert_close(ours, theirs, atol=1e-5, rtol=1e-3, msg=name)
    model.zero_grad(), ref.zero_grad()
    model.eval(), ref.eval()
    for net in (model, ref):
        for p in net.backbone.parameters():
            p.requires_grad_(True)


def test_builder_layout_defaults_and_coco_checkpoint(tmp_path, monkeypatch):
    """Key names and shapes as torchvision's checkpoints have them, without torchvision; a
    checkpoint in the hub cache loads through ``weights``."""
    ember.manual_seed(2)
    model = detection.retinanet_resnet50_fpn()
    sd = model.state_dict()
    assert len(sd) == 354
    shapes = {"backbone.fpn.inner_blocks.0.0.weight": (256, 512, 1, 1),
              "backbone.fpn.inner_blocks.2.0.weight": (256, 2048, 1, 1),
              "backbone.fpn.extra_blocks.p6.weight": (256, 256, 3, 3),
              "backbone.fpn.extra_blocks.p7.bias": (256,),
              "head.classification_head.conv.3.0.weight": (256, 256, 3, 3),
              "head.classification_head.cls_logits.weight": (9 * 91, 256, 3, 3),
              "head.regression_head.conv.0.0.bias": (256,),
              "head.regression_head.bbox_reg.weight": (36, 256, 3, 3)}
    for key, shape in shapes.items():
        assert tuple(sd[key].shape) == shape, key
    assert model.anchor_generator.sizes[0] == (32, 40, 50) and model.anchor_generator.sizes[-1] == (512, 645, 812)
    assert model.anchor_generator.num_anchors_per_location() == [9] * 5
    assert_close(model.head.classification_head.cls_logits.bias, ember.full((819,), -np.log(99.0)), atol=1e-6, rtol=0)
    assert (model.score_thresh, model.nms_thresh, model.detections_per_img, model.topk_candidates) == (0.05, 0.5, 300, 1000)
    matcher = model.proposal_matcher
    assert (matcher.high_threshold, matcher.low_threshold, matcher.allow_low_quality_matches) == (0.5, 0.4, True)
    trainable = {n.split(".")[2] for n, p in model.named_parameters() if p.requires_grad and n.startswith("backbone.body")}
    assert trainable == {"conv1", "bn1", "layer1", "layer2", "layer3", "layer4"}   # fresh: all of it
    from ember.vision import models
    assert "retinanet_resnet50_fpn" in models.list_models(detection)
    (tmp_path / "checkpoints").mkdir()
    ember.save(sd, str(tmp_path / "checkpoints" / _COCO_FILE))
    monkeypatch.setattr(ember.hub, "_hub_dir", str(tmp_path))
    loaded = detection.retinanet_resnet50_fpn(weights=detection.RetinaNet_ResNet50_FPN_Weights.COCO_V1)
    for key in ("backbone.body.layer1.0.conv1.weight", "backbone.fpn.extra_blocks.p7.weight",
                "head.regression_head.conv.2.0.weight", "head.classification_head.cls_logits.bias"):
        assert_close(loaded.state_dict()[key], sd[key], atol=0, rtol=0, msg=key)
    trainable = {n.split(".")[2] for n, p in loaded.named_parameters() if p.requires_grad and n.startswith("backbone.body")}
    assert trainable == {"layer2", "layer3", "layer4"}


# --------------------------------------------------------------------------- a tiny model
class _TinyPyramid(nn.Module):
    """Five 8-wide levels at strides 8..128 (stand-in for the ResNet-FPN)."""
    out_channels = 8

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=8, padding=1)
        self.down = nn.ModuleList([nn.Conv2d(8, 8, 3, stride=2, padding=1) for _ in range(4)])

    def forward(self, x):
        levels = [self.stem(x)]
        for conv in self.down:
            levels.append(conv(ember.relu(levels[-1])))
        return OrderedDict((f"p{i + 3}", t) for i, t in enumerate(levels))


def _tiny(**kw):
    ember.manual_seed(0)
    return detection.RetinaNet(_TinyPyramid(), num_classes=4, min_size=128, max_size=128, **kw)


def test_sgd_steps_reduce_the_loss():
    model = _tiny().train()
    rng = np.random.RandomState(1)
    xs = [ember.from_numpy(rng.rand(3, 128, 128).astype(np.float32)) for _ in range(2)]
    targets = [{"boxes": ember.tensor([[10.0, 12.0, 60.0, 70.0], [64.0, 20.0, 120.0, 90.0]]),
                "labels": ember.tensor([1, 3])},
               {"boxes": ember.tensor([[30.0, 30.0, 100.0, 110.0]]), "labels": ember.tensor([2])}]
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    history = []
    for _ in range(6):
        losses = model(xs, targets)
        history.append([float(v.detach()) for v in losses.values()])
        assert np.isfinite(history[-1]).all()
        opt.zero_grad()
        (losses["classification"] + losses["bbox_regression"]).backward()
        opt.step()
    totals = np.sum(history, axis=1)
    assert (np.diff(totals) < 0).all(), history
    # the tiny std-0.01 towers learn slowly: the box loss moves first
    assert history[-1][1] < 0.95 * history[0][1] and history[-1][0] < history[0][0], history


def test_image_without_boxes_is_all_background():
    model = _tiny().train()
    xs = [ember.rand(3, 128, 128), ember.rand(3, 128, 128)]
    targets = [{"boxes": ember.zeros(0, 4), "labels": ember.zeros(0, dtype=ember.int64)},
               {"boxes": ember.tensor([[10.0, 10.0, 50.0, 60.0]]), "labels": ember.tensor([1])}]
    losses = model(xs, targets)
    lone = model(xs[:1], targets[:1])
    assert float(lone["bbox_regression"].detach()) == 0.0
    # every anchor of the empty image is a negative: the focal loss sums over all of them
    head = model.head(list(model.backbone(model.transform(xs[:1])[0].tensors).values()))
    logits = head["cls_logits"][0]
    p = ember.sigmoid(logits)
    expected = (-(1 - 0.25) * p ** 2 * ember.log(1 - p)).sum()
    assert_close(lone["classification"], expected, rtol=1e-4, atol=1e-6)
    assert np.isfinite(float(losses["classification"].detach())) and float(losses["bbox_regression"].detach()) > 0


def test_postprocess_invariants():
    model = _tiny(score_thresh=0.3, detections_per_img=15, topk_candidates=40).eval()
    with ember.no_grad():                    # fresh: every score is the prior 0.01, none pass
        (nothing,) = model([ember.rand(3, 100, 120)])
    assert [(tuple(v.shape), v.dtype) for v in nothing.values()] == [
        ((0, 4), ember.float32), ((0,), ember.float32), ((0,), ember.int64)]
    with ember.no_grad():
        model.head.classification_head.cls_logits.bias.copy_(ember.randn(36) * 2)
        out = model([ember.rand(3, 100, 120), ember.rand(3, 80, 64)])
    for det, (h, w) in zip(out, [(100, 120), (80, 64)]):
        boxes, scores, labels = det["boxes"], det["scores"], det["labels"]
        assert 0 < len(scores) <= 15 and labels.dtype == ember.int64
        assert bool((scores > 0.3).all()) and bool((scores[:-1] >= scores[1:]).all())
        assert bool((labels >= 0).all()) and bool((labels < 4).all())
        b = boxes.numpy()
        assert (b[:, 0] >= 0).all() and (b[:, 1] >= 0).all() and (b[:, 2] <= w + 1e-3).all() and (b[:, 3] <= h + 1e-3).all()
        same = (labels[:, None] == labels[None, :]).numpy() & ~np.eye(len(labels), dtype=bool)
        assert (box_iou(boxes, boxes).numpy()[same] <= 0.5 + 1e-6).all()         # NMS per class


def test_checkpoint_from_hub_cache_in_the_old_layout(tmp_path, monkeypatch):
    """A torch.save'd checkpoint in the hub cache loads, torchvision 0.8's head layout
    (conv.0, conv.2, ... with version 1 metadata) included."""
    reference = _tiny().state_dict()
    old = OrderedDict()
    old._metadata = OrderedDict()
    for key, value in reference.items():
        for head in ("classification_head", "regression_head"):
            prefix = f"head.{head}.conv."
            if key.startswith(prefix):
                layer, _, kind = key[len(prefix):].split(".")
                key = f"{prefix}{2 * int(layer)}.{kind}"
        old[key] = torch.from_numpy(value.numpy().copy())
    old._metadata["head.classification_head"] = {"version": 1}
    old._metadata["head.regression_head"] = {"version": 1}
    assert "head.regression_head.conv.6.weight" in old
    (tmp_path / "checkpoints").mkdir()
    torch.save(old, tmp_path / "checkpoints" / _COCO_FILE)
    monkeypatch.setattr(ember.hub, "_hub_dir", str(tmp_path))
    state = detection.RetinaNet_ResNet50_FPN_Weights.DEFAULT.get_state_dict()
    fresh = detection.RetinaNet(_TinyPyramid(), num_classes=4, min_size=128, max_size=128)
    fresh.load_state_dict(state)
    for key, value in fresh.state_dict().items():
        assert_close(value, reference[key], atol=0, rtol=0, msg=key)


def test_builder_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(ember.hub, "_hub_dir", str(tmp_path))
    with pytest.raises(RuntimeError, match="not in the hub cache"):
        detection.retinanet_resnet50_fpn(weights="DEFAULT")
    with pytest.raises(RuntimeError, match="downloads nothing"):
        detection.retinanet_resnet50_fpn(weights_backbone="IMAGENET1K_V1")
    with pytest.raises(ValueError, match="expected value 91"):
        detection.retinanet_resnet50_fpn(weights="COCO_V1", num_classes=5)
    with pytest.raises(TypeError, match="Invalid Weight class"):
        detection.retinanet_resnet50_fpn(weights=detection.FasterRCNN_ResNet50_FPN_Weights.COCO_V1)
    with pytest.raises(ValueError, match="out_channels"):
        detection.RetinaNet(nn.ReLU(), num_classes=3)
    with pytest.raises(TypeError, match="AnchorGenerator"):
        detection.RetinaNet(_TinyPyramid(), num_classes=3, anchor_generator=nn.ReLU())
    model = _tiny().train()
    with pytest.raises(ValueError, match="targets should be passed"):
        model([ember.rand(3, 64, 64)])
    with pytest.raises(ValueError, match="positive height and width"):
        model([ember.rand(3, 64, 64)], [{"boxes": ember.tensor([[5.0, 5.0, 5.0, 9.0]]), "labels": ember.tensor([1])}])


def test_backbone_weights_from_hub_cache(tmp_path, monkeypatch):
    """weights_backbone loads the ResNet-50 checkpoint from the hub cache; the backbone's batch
    norms are then frozen and only the last three ResNet parts train."""
    from ember.vision.models import resnet50
    from ember.vision.ops import FrozenBatchNorm2d
    ember.manual_seed(1)
    body = resnet50().state_dict()
    (tmp_path / "checkpoints").mkdir()
    ember.save(body, str(tmp_path / "checkpoints" / "resnet50-0676ba61.pth"))
    monkeypatch.setattr(ember.hub, "_hub_dir", str(tmp_path))
    model = detection.retinanet_resnet50_fpn(weights_backbone="IMAGENET1K_V1", num_classes=3)
    assert isinstance(model.backbone.body.bn1, FrozenBatchNorm2d)
    for key in ("conv1.weight", "layer4.2.conv3.weight", "layer2.0.bn1.running_var"):
        assert_close(model.backbone.body.state_dict()[key], body[key], atol=0, rtol=0, msg=key)
    trainable = {n.split(".")[2] for n, p in model.named_parameters() if p.requires_grad and n.startswith("backbone.body")}
    assert trainable == {"layer2", "layer3", "layer4"}
    assert tuple(model.head.classification_head.cls_logits.weight.shape) == (27, 256, 3, 3)
