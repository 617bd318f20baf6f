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
    assert "deeplabv3_resnet50" in models.list_models(segmentation)
