"""ember.vision's models, datasets and ops against torchvision where the older tests do not
look: every architecture's module tree (repr), configuration variants, the builders' fixed
parameters, and the ops' dtypes, gradients and less common inputs."""
import numpy as np
import pytest

import ember
from helpers import import_torchvision
import ember.vision.models as models
import ember.vision.ops as ops

torch = pytest.importorskip("torch")


def _e(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def _tv_model(tv, name, **kw):
    with torch.device("meta"):
        return tv.models.get_model(name, **kw)


def _same_tree(m, ref):
    assert repr(m) == repr(ref)
    shapes = [(k, tuple(v.shape)) for k, v in m.state_dict().items()]
    assert shapes == [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]


# one of each family and variant (the largest builds take ember tens of seconds: their layer
# tables are checked by the state_dict tests of test_models.py)
TREES = ["densenet121", "densenet161", "mobilenet_v2", "mobilenet_v3_large", "mobilenet_v3_small",
         "resnet18", "resnet50", "resnext50_32x4d", "squeezenet1_0", "squeezenet1_1"]


@pytest.mark.parametrize("name", TREES)
def test_module_tree_matches_torchvision(name):
    tv = import_torchvision()
    _same_tree(models.get_model(name, num_classes=5), _tv_model(tv, name, num_classes=5))


def test_vgg_and_alexnet_classifier_layers_match_torchvision():
    tv = import_torchvision()
    from ember.vision.models._utils import classifier_head

    def layers(seq):
        return [(type(m).__name__, getattr(m, "p", None), getattr(m, "inplace", None)) for m in seq]
    ref = _tv_model(tv, "vgg11", num_classes=5, dropout=0.3)
    assert layers(classifier_head((8, 6, 6, 5), 0.3, dropout_first=False)) == layers(ref.classifier)
    ref = _tv_model(tv, "alexnet", num_classes=5, dropout=0.3)
    assert layers(classifier_head((8, 6, 6, 5), 0.3, dropout_first=True)) == layers(ref.classifier)
    assert list(models.VGG.__init__.__code__.co_varnames[:5]) == ["self", "features", "num_classes",
                                                                  "init_weights", "dropout"]


@pytest.mark.parametrize("arch", ["mobilenet_v3_large", "mobilenet_v3_small"])
@pytest.mark.parametrize("kw", [{"width_mult": 0.75}, {"reduced_tail": True}, {"dilated": True},
                                {"width_mult": 1.3, "reduced_tail": True, "dilated": True}])
def test_mobilenet_v3_variants(arch, kw):
    tv = import_torchvision()
    from torchvision.models import mobilenetv3 as tv3
    from ember.vision.models import mobilenetv3 as e3
    ours, our_last = e3._mobilenet_v3_conf(arch, **kw)
    ref, ref_last = tv3._mobilenet_v3_conf(arch, **kw)
    assert our_last == ref_last and [vars(c) for c in ours] == [vars(c) for c in ref]
    _same_tree(models.get_model(arch, num_classes=3, **kw), _tv_model(tv, arch, num_classes=3, **kw))


@pytest.mark.parametrize("kw", [{"width_mult": 0.5}, {"width_mult": 1.4, "round_nearest": 4},
                                {"inverted_residual_setting": [[1, 16, 1, 1], [6, 24, 2, 2]]}])
def test_mobilenet_v2_variants(kw):
    tv = import_torchvision()
    _same_tree(models.mobilenet_v2(num_classes=3, **kw), _tv_model(tv, "mobilenet_v2", num_classes=3, **kw))
    with pytest.raises(ValueError, match="inverted_residual_setting should be non-empty"):
        models.mobilenet_v2(inverted_residual_setting=[[1, 16, 1]])


def test_make_divisible_matches_torchvision():
    import_torchvision()
    from torchvision.models._utils import _make_divisible as ref
    from ember.vision.models._utils import _make_divisible
    for c in range(1, 700, 7):
        for w in (0.1, 0.35, 0.5, 0.75, 1.0, 1.3, 1 / 3):
            for d in (3, 4, 8, 16):
                assert _make_divisible(c * w, d) == ref(c * w, d), (c, w, d)


def test_resnet_dilation_and_outputs():
    tv = import_torchvision()
    kw = {"replace_stride_with_dilation": [False, True, True], "num_classes": 4}
    torch.manual_seed(0)
    ref = tv.models.resnet50(**kw).eval()
    m = models.resnet50(**kw).eval()
    _same_tree(m, ref)
    m.load_state_dict({k: _e(v.numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 3, 48, 48)).astype(np.float32)
    with torch.no_grad():
        want = ref(_t(x)).numpy()
    with ember.no_grad():
        got = m(_e(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="3-element tuple"):
        models.resnet18(replace_stride_with_dilation=[True])
    with pytest.raises(NotImplementedError, match="Dilation > 1"):
        models.resnet18(replace_stride_with_dilation=[False, False, True])


def test_builders_fix_their_hyperparameters_like_torchvision():
    tv = import_torchvision()
    for name, kw in (("resnext50_32x4d", {"groups": 2}), ("wide_resnet50_2", {"width_per_group": 64}),
                     ("resnet18", {"groups": 2})):
        with pytest.raises(ValueError) as ours:
            models.get_model(name, **kw)
        with pytest.raises(ValueError) as ref:
            tv.models.get_model(name, **kw)
        assert str(ours.value) == str(ref.value)
    assert models.resnext50_32x4d(groups=32, num_classes=2).layer1[0].conv2.groups == 32
    import inspect
    assert str(inspect.signature(models.resnet18)) == "(*, weights=None, progress=True, **kwargs)"
    assert models.resnet18.__name__ == "resnet18" and models.resnet18.__module__ == "ember.vision.models.resnet"


def test_list_models_by_module():
    import ember.vision as vision
    assert models.list_models(vision.models, include=["vgg1?", "alex*"]) == [
        "alexnet", "vgg11", "vgg13", "vgg16", "vgg19"]
    assert models.list_models(vision.ops) == []
    with pytest.raises(ValueError, match="already registered"):
        models._api.register_model("alexnet")(lambda: None)


# ----------------------------------------------------------------------------- ops

def _kw_to_ember(kw):
    return {k: getattr(ember.nn, v.__name__) if isinstance(v, type) else v for k, v in kw.items()}


@pytest.mark.parametrize("kw", [{"kernel_size": (3, 5), "dilation": 2}, {"kernel_size": 5, "dilation": (1, 2)},
                                {"kernel_size": 1, "norm_layer": None, "activation_layer": None},
                                {"kernel_size": 3, "inplace": None, "bias": True, "groups": 2}])
def test_conv2d_norm_activation_variants(kw):
    tv = import_torchvision()
    ours, ref = ops.Conv2dNormActivation(4, 8, **_kw_to_ember(kw)), tv.ops.Conv2dNormActivation(4, 8, **kw)
    _same_tree(ours, ref)


def test_mlp_and_squeeze_excitation():
    tv = import_torchvision()
    for kw in ({}, {"norm_layer": torch.nn.LayerNorm, "dropout": 0.2, "inplace": False}, {"bias": False}):
        _same_tree(ops.MLP(5, [6, 7, 3], **_kw_to_ember(kw)), tv.ops.MLP(5, [6, 7, 3], **kw))
    ref = tv.ops.SqueezeExcitation(8, 2)
    m = ops.SqueezeExcitation(8, 2)
    _same_tree(m, ref)
    m.load_state_dict({k: _e(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 8, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(m(_e(x)).detach().numpy(), ref(_t(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert repr(ops.FrozenBatchNorm2d(3, eps=1e-3)) == repr(tv.ops.FrozenBatchNorm2d(3, eps=1e-3))


def _boxes(n, rng):
    xy = rng.uniform(0, 20, (n, 2))
    return np.concatenate([xy, xy + rng.uniform(0.5, 10, (n, 2))], 1).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int16, np.uint8])
def test_box_ops_dtypes(dtype):
    tv = import_torchvision()
    rng = np.random.default_rng(2)
    a, b = (_boxes(6, rng) * 3).astype(dtype), (_boxes(5, rng) * 3).astype(dtype)
    pairs = [("box_area", (a,))] + [(f, (a, b)) for f in ("box_iou", "generalized_box_iou",
                                                          "distance_box_iou", "complete_box_iou")]
    for fn, args in pairs:
        got = getattr(ops, fn)(*map(_e, args))
        want = getattr(tv.ops, fn)(*map(_t, args))
        assert str(got.dtype) == str(want.dtype), fn
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.numpy().astype(np.float64),
                                   rtol=2e-3, atol=1e-3, err_msg=fn)


def test_box_iou_family_gradients():
    tv = import_torchvision()
    rng = np.random.default_rng(3)
    a, b = _boxes(6, rng), _boxes(5, rng)
    for fn in ("box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"):
        ea, eb = (_e(v.copy()).requires_grad_() for v in (a, b))
        ta, tb = (_t(v.copy()).requires_grad_() for v in (a, b))
        getattr(ops, fn)(ea, eb).sum().backward()
        getattr(tv.ops, fn)(ta, tb).sum().backward()
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=fn)
        np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-4, atol=1e-6, err_msg=fn)


def test_boxes_with_leading_dims_and_masks():
    tv = import_torchvision()
    big = np.random.default_rng(4).uniform(-10, 40, (2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(ops.clip_boxes_to_image(_e(big), (17, 23)).numpy(),
                                  tv.ops.clip_boxes_to_image(_t(big), (17, 23)).numpy())
    for i in ("xyxy", "xywh", "cxcywh"):
        for o in ("xyxy", "xywh", "cxcywh"):
            np.testing.assert_allclose(ops.box_convert(_e(big), i, o).numpy(),
                                       tv.ops.box_convert(_t(big), i, o).numpy(), rtol=1e-6, atol=1e-5)
    masks = np.zeros((4, 7, 9), dtype=bool)
    masks[0, 2:5, 3:8] = masks[1, 6, 0] = masks[2, :, 4] = masks[3, 1, 1] = masks[3, 5, 7] = True
    np.testing.assert_array_equal(ops.masks_to_boxes(_e(masks)).numpy(), tv.ops.masks_to_boxes(_t(masks)).numpy())
    assert tuple(ops.masks_to_boxes(ember.zeros((0, 3, 3))).shape) == (0, 4)


def test_stochastic_depth_draws_like_torchvision():
    tv = import_torchvision()
    x = np.ones((50, 3), np.float32)
    for mode in ("row", "batch"):
        for p in (0.3, 1.0):
            ember.manual_seed(7)
            torch.manual_seed(7)
            got = ops.stochastic_depth(_e(x), p, mode).numpy()
            want = tv.ops.stochastic_depth(_t(x), p, mode).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert repr(ops.RoIAlign(2, 0.25, 0)) == repr(tv.ops.RoIAlign(2, 0.25, 0))


def test_roi_box_checks():
    x = ember.zeros((1, 1, 4, 4))
    with pytest.raises(AssertionError, match="Tensor\\[K, 5\\]"):
        ops.roi_align(x, ember.zeros((2, 4)), 2)
    with pytest.raises(AssertionError, match="List\\[Tensor\\[L, 4\\]\\]"):
        ops.roi_pool(x, [ember.zeros((2, 5))], 2)
    from ember.vision.ops._utils import convert_boxes_to_roi_format
    rois = convert_boxes_to_roi_format([ember.ones((2, 4)), ember.zeros((1, 4))]).numpy()
    np.testing.assert_array_equal(rois[:, 0], [0, 0, 1])
    np.testing.assert_array_equal(rois[:, 1:], [[1] * 4, [1] * 4, [0] * 4])


# ----------------------------------------------------------------------------- datasets

def test_kmnist_and_idx_reader(tmp_path):
    import struct
    tv = import_torchvision()
    from ember.vision.datasets import KMNIST, mnist
    raw = tmp_path / "KMNIST" / "raw"
    raw.mkdir(parents=True)
    rng = np.random.default_rng(5)
    for split, n in (("train", 3), ("t10k", 2)):
        for kind, shape in (("images-idx3", (n, 28, 28)), ("labels-idx1", (n,))):
            data = rng.integers(0, 10 if kind.startswith("labels") else 256, shape).astype(np.uint8)
            head = struct.pack(">I", 0x800 | data.ndim) + b"".join(struct.pack(">I", d) for d in shape)
            (raw / f"{split}-{kind}-ubyte").write_bytes(head + data.tobytes())
    ours, ref = KMNIST(str(tmp_path)), tv.datasets.KMNIST(str(tmp_path))
    np.testing.assert_array_equal(ours.data.numpy(), ref.data.numpy())
    np.testing.assert_array_equal(ours.targets.numpy(), ref.targets.numpy())
    assert ours.classes == ref.classes and repr(ours) == repr(ref)
    assert ours.train_labels is ours.targets and ours.test_data is ours.data
    # big-endian multi-byte values
    vals = np.arange(6, dtype=">i4").reshape(2, 3)
    path = tmp_path / "ints-idx2"
    path.write_bytes(struct.pack(">I", 0xC02) + struct.pack(">II", 2, 3) + vals.tobytes())
    np.testing.assert_array_equal(mnist.read_sn3_pascalvincent_tensor(str(path)).numpy(), vals.astype(np.int32))
    with pytest.raises(TypeError, match="torch.uint8"):
        mnist.read_image_file(str(path))


def test_vision_dataset_repr_and_transforms():
    tv = import_torchvision()
    from ember.vision.datasets import VisionDataset
    from ember.vision.datasets.vision import StandardTransform

    class Multi:
        def __repr__(self):
            return "Multi(\n  a,\n  b)"
    for cls in (VisionDataset, tv.datasets.VisionDataset):
        cls.__len__ = lambda self: 3
    ours = VisionDataset("~/data", transform=Multi(), target_transform=Multi())
    ref = tv.datasets.VisionDataset("~/data", transform=Multi(), target_transform=Multi())
    assert repr(ours) == repr(ref)
    assert repr(StandardTransform(None, Multi())) == repr(tv.datasets.vision.StandardTransform(None, Multi()))
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        VisionDataset("x", transforms=lambda a, b: (a, b), transform=Multi())
    ds = VisionDataset(None, transforms=lambda a, b: (a, b))
    assert repr(ds) == repr(tv.datasets.VisionDataset(None, transforms=ds.transforms)).replace(
        "Dataset VisionDataset", "Dataset VisionDataset")
