"""ember.vision.models against torchvision.models: state_dict keys/shapes, outputs with the
same weights, initialisation statistics, a training step, and the no-download errors."""

import numpy as np
import pytest

import ember
from helpers import import_torchvision
import ember.vision.models as models

torch = pytest.importorskip("torch")





# name, input size. VGG's 100M-parameter classifier makes each VGG build take seconds, so
# one VGG (vgg11_bn) is compared whole and the other configurations by their features.
CASES = [
    ("resnet18", 64), ("resnet34", 32), ("resnet50", 32), ("resnext50_32x4d", 32),
    ("wide_resnet50_2", 32), ("alexnet", 64), ("mobilenet_v2", 32), ("mobilenet_v3_small", 32),
    ("mobilenet_v3_large", 32), ("squeezenet1_0", 64),
    ("squeezenet1_1", 64), ("densenet121", 32),
]
STRUCTURE_ONLY = ["resnet101", "resnet152"]
_CACHE = {}


def _pair(name, num_classes=7):
    """(ember model, torchvision model), built once per module."""
    key = (name, num_classes)
    if key not in _CACHE:
        tv = import_torchvision()
        torch.manual_seed(0)
        # VGG's own init (normal_ over its 100M classifier weights) costs seconds: skipped
        # here, as the weights are replaced by torchvision's anyway.
        kw = {"init_weights": False} if name.startswith("vgg") else {}
        _CACHE[key] = (models.get_model(name, num_classes=num_classes, **kw),
                       tv.models.get_model(name, num_classes=num_classes, **kw))
    return _CACHE[key]


def _assert_same_state_layout(m, ref):
    sd, rsd = m.state_dict(), ref.state_dict()
    assert list(sd.keys()) == list(rsd.keys())
    for k in sd:
        assert tuple(sd[k].shape) == tuple(rsd[k].shape), k
        assert str(sd[k].dtype).split(".")[-1] == str(rsd[k].dtype).split(".")[-1], k


def _ember_state_from_torch(sd):
    return {k: ember.from_numpy(v.detach().numpy().copy()) for k, v in sd.items()}


@pytest.mark.parametrize("name", [c[0] for c in CASES] + ["vgg11_bn"])
def test_state_dict_matches_torchvision(name):
    m, ref = _pair(name)
    _assert_same_state_layout(m, ref)


@pytest.mark.parametrize("name", STRUCTURE_ONLY)
def test_state_dict_matches_torchvision_deep(name):
    tv = import_torchvision()
    with torch.device("meta"):
        ref = tv.models.get_model(name, num_classes=10)
    _assert_same_state_layout(models.get_model(name, num_classes=10), ref)


@pytest.mark.parametrize("cfg", ["A", "B", "D", "E"])
@pytest.mark.parametrize("bn", [False, True])
def test_vgg_configurations_match_torchvision(cfg, bn):
    tv = import_torchvision()
    from torchvision.models import vgg as tv_vgg
    from ember.vision.models import vgg as e_vgg
    _assert_same_state_layout(e_vgg.make_layers(e_vgg.cfgs[cfg], bn), tv_vgg.make_layers(tv_vgg.cfgs[cfg], bn))
    names = {"A": "vgg11", "B": "vgg13", "D": "vgg16", "E": "vgg19"}
    assert callable(getattr(models, names[cfg] + ("_bn" if bn else "")))


@pytest.mark.parametrize("name,size", CASES + [("vgg11_bn", 32)])
def test_outputs_match_torchvision_with_same_weights(name, size):
    m, ref = _pair(name)
    ref.eval()
    # make the batch norm statistics non-trivial so eval mode really uses them
    with torch.no_grad():
        for mod in ref.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.1, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.1, 0.1)
    missing = m.load_state_dict(_ember_state_from_torch(ref.state_dict()))
    assert not missing.missing_keys and not missing.unexpected_keys
    m.eval()
    x = np.random.default_rng(0).standard_normal((2, 3, size, size)).astype(np.float32)
    with torch.no_grad():
        want = ref(torch.from_numpy(x)).numpy()
    with ember.no_grad():
        got = m(ember.from_numpy(x)).numpy()
    assert got.shape == (2, 7)
    scale = max(np.abs(want).max(), 1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4 * scale)


def test_torchvision_module_loads_via_torch_save(tmp_path):
    tv = import_torchvision()
    ref = tv.models.resnet18(num_classes=3)
    p = tmp_path / "r18.pth"
    torch.save(ref.state_dict(), p)
    m = models.resnet18(num_classes=3)
    m.load_state_dict(ember.load(str(p)))
    np.testing.assert_array_equal(m.fc.weight.detach().numpy(), ref.fc.weight.detach().numpy())


def test_initialisation_like_torchvision():
    import_torchvision()
    ember.manual_seed(0)
    m = models.resnet18()
    w = m.conv1.weight.detach().numpy()
    # kaiming normal, fan_out, relu: std = sqrt(2 / (out_channels * k * k))
    assert abs(w.std() - np.sqrt(2.0 / (64 * 49))) < 0.1 * np.sqrt(2.0 / (64 * 49))
    assert (m.bn1.weight.detach().numpy() == 1).all() and (m.bn1.bias.detach().numpy() == 0).all()
    m = models.resnet18(zero_init_residual=True)
    assert (m.layer1[0].bn2.weight.detach().numpy() == 0).all()
    mb = models.mobilenet_v2()
    assert abs(mb.classifier[1].weight.detach().numpy().std() - 0.01) < 0.001
    sq = models.squeezenet1_1()
    assert abs(sq.classifier[1].weight.detach().numpy().std() - 0.01) < 0.002


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1"])
def test_training_step_reduces_loss(name):
    ember.manual_seed(0)
    m = models.get_model(name, num_classes=4)
    m.train()
    opt = ember.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = ember.randn(4, 3, 32, 32)
    y = ember.tensor([0, 1, 2, 3])
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        losses.append(loss.item())
        opt.step()
    assert all(p.grad is not None for p in m.parameters() if p.requires_grad)
    assert np.isfinite(losses).all()
    if name == "resnet18":
        assert losses[-1] < losses[0]


def test_output_shapes_default_classes():
    x = ember.randn(1, 3, 32, 32)
    with ember.no_grad():
        assert models.resnet18().eval()(x).shape == (1, 1000)
        assert models.resnet50(num_classes=5).eval()(x).shape == (1, 5)


def test_pretrained_weights_raise_clear_error():
    with pytest.raises(RuntimeError, match="load_state_dict"):
        models.resnet18(weights="IMAGENET1K_V1")
    with pytest.raises(RuntimeError, match="downloads nothing"):
        models.resnet18(weights=models.ResNet18_Weights.DEFAULT)
    with pytest.raises(RuntimeError, match="load_state_dict"):
        models.vgg16(pretrained=True)
    assert isinstance(models.squeezenet1_1(pretrained=False), models.SqueezeNet)


def test_registry():
    names = models.list_models()
    for n in ("resnet18", "resnet50", "vgg16_bn", "alexnet", "mobilenet_v2", "squeezenet1_0", "densenet121"):
        assert n in names
    assert models.list_models(include="resnet*", exclude="*101*") == [
        "resnet152", "resnet18", "resnet34", "resnet50"]
    assert isinstance(models.get_model("resnet18", num_classes=2), models.ResNet)
    with pytest.raises(ValueError):
        models.get_model("nope")


def test_building_blocks_exposed():
    assert models.resnet.BasicBlock is models.BasicBlock
    r = models.ResNet(models.Bottleneck, [1, 1, 1, 1], num_classes=3)
    assert r(ember.randn(2, 3, 32, 32)).shape == (2, 3)
    assert repr(models.resnet18()).startswith("ResNet(")


def test_weights_enums_exist_and_refuse():
    assert models.ResNet50_Weights.IMAGENET1K_V2.name == "IMAGENET1K_V2"
    for n in ("AlexNet_Weights", "VGG19_BN_Weights", "DenseNet201_Weights", "MobileNet_V2_Weights",
              "SqueezeNet1_1_Weights", "Wide_ResNet50_2_Weights"):
        assert hasattr(models, n), n
    with pytest.raises(RuntimeError, match="downloads nothing"):
        models.ResNet50_Weights.DEFAULT.transforms()
    with pytest.raises(RuntimeError, match="downloads nothing"):
        models.get_model("mobilenet_v2", weights="DEFAULT")


def test_densenet_memory_efficient_gradients_equal():
    from ember.vision.models.densenet import DenseNet
    ember.manual_seed(0)
    a = DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, num_classes=3)
    b = DenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8, num_classes=3, memory_efficient=True)
    b.load_state_dict(a.state_dict())
    x = ember.randn(2, 3, 16, 16)
    for m in (a, b):
        m(x).square().sum().backward()
    for (n, p), q in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=n)
