"""Tensor transforms scripted with ember.jit.script equal the eager ones and torchvision's,
on batched images (leading dims), with the same seeds: the 1.7 example
``jit.script(nn.Sequential(*transforms))``, and every nn.Module transform one by one."""
import numpy as np
import pytest

import ember
from ember import nn
from helpers import assert_close, import_torchvision
import ember.vision.transforms as ET
from ember.vision.transforms import InterpolationMode as EIM

torch = pytest.importorskip("torch")


def _tv():
    return import_torchvision().transforms


def _images(dtype, shape=(2, 3, 20, 24), seed=0):
    rng = np.random.RandomState(seed)
    if dtype == "uint8":
        return rng.randint(0, 256, size=shape).astype(np.uint8)
    return rng.rand(*shape).astype(np.float32)


def _mode(name):
    return name if name is None else getattr(EIM, name)


# (class name, constructor kwargs, dtypes, atol against torchvision for floats)
CASES = [
    ("Resize", dict(size=[12, 10]), ("uint8", "float32")),
    ("Resize", dict(size=9, interpolation="NEAREST"), ("uint8",)),
    ("Resize", dict(size=11, max_size=13, interpolation="BICUBIC"), ("float32",)),
    ("CenterCrop", dict(size=[10, 30]), ("uint8",)),
    ("FiveCrop", dict(size=7), ("float32",)),
    ("TenCrop", dict(size=[5, 6], vertical_flip=True), ("uint8",)),
    ("Pad", dict(padding=[2, 3], padding_mode="reflect"), ("uint8",)),
    ("Pad", dict(padding=[1, 2, 3, 4], fill=7), ("float32",)),
    ("Pad", dict(padding=3, padding_mode="symmetric"), ("float32",)),
    ("Grayscale", dict(num_output_channels=3), ("uint8", "float32")),
    ("Normalize", dict(mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.3]), ("float32",)),
    ("ConvertImageDtype", dict(dtype="float32"), ("uint8",)),
    ("ConvertImageDtype", dict(dtype="uint8"), ("float32",)),
    ("RandomHorizontalFlip", dict(p=0.5), ("uint8",)),
    ("RandomVerticalFlip", dict(p=0.5), ("float32",)),
    ("RandomInvert", dict(p=0.7), ("uint8",)),
    ("RandomAutocontrast", dict(p=0.7), ("float32",)),
    ("RandomEqualize", dict(p=0.9), ("uint8",)),
    ("RandomSolarize", dict(threshold=100, p=0.9), ("uint8",)),
    ("RandomAdjustSharpness", dict(sharpness_factor=2.0, p=0.9), ("float32", "uint8")),
    ("RandomPosterize", dict(bits=3, p=0.9), ("uint8",)),
    ("RandomGrayscale", dict(p=0.8), ("float32",)),
    ("RandomCrop", dict(size=[12, 14], padding=2, pad_if_needed=True), ("uint8",)),
    ("RandomCrop", dict(size=[22, 30], pad_if_needed=True, padding_mode="edge"), ("float32",)),
    ("RandomResizedCrop", dict(size=[10, 12], antialias=True), ("float32", "uint8")),
    ("ColorJitter", dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.2), ("float32", "uint8")),
    ("RandomRotation", dict(degrees=30, fill=[0.5, 0.2, 0.1]), ("float32",)),
    ("RandomRotation", dict(degrees=[10, 80], expand=True, interpolation="BILINEAR"), ("uint8",)),
    ("RandomAffine", dict(degrees=20, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=[-5, 5, -3, 3]),
     ("float32",)),
    ("RandomAffine", dict(degrees=0, shear=10, interpolation="BILINEAR", fill=3), ("uint8",)),
    ("RandomPerspective", dict(distortion_scale=0.4, p=0.9), ("float32",)),
    ("GaussianBlur", dict(kernel_size=[3, 5], sigma=(0.5, 1.5)), ("float32", "uint8")),
    ("RandomErasing", dict(p=0.9, value=0.5), ("float32",)),
    ("RandomErasing", dict(p=0.9, value="random"), ("float32",)),
    ("ElasticTransform", dict(alpha=20.0, sigma=[3.0, 2.0]), ("float32",)),
]


def _build(module, name, kwargs):
    kw = dict(kwargs)
    if "interpolation" in kw:
        kw["interpolation"] = getattr(module.InterpolationMode, kw["interpolation"])
    if "dtype" in kw:
        kw["dtype"] = getattr(ember if module is ET else torch, kw["dtype"])
    return getattr(module, name)(**kw)


def _run(fn, x, seed, lib):
    lib.manual_seed(seed)
    return fn(x)


def _flatten(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name,kwargs,dtypes", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_scripted_equals_eager_and_torchvision(name, kwargs, dtypes):
    TT = _tv()
    ours, ref = _build(ET, name, kwargs), _build(TT, name, kwargs)
    scripted = ember.jit.script(ours)
    for dtype in dtypes:
        x = _images(dtype)
        for seed in (0, 5):
            eager = _flatten(_run(ours, ember.from_numpy(x.copy()), seed, ember))
            compiled = _flatten(_run(scripted, ember.from_numpy(x.copy()), seed, ember))
            expected = _flatten(_run(ref, torch.from_numpy(x.copy()), seed, torch))
            assert len(eager) == len(compiled) == len(expected)
            for e, c, t in zip(eager, compiled, expected):
                assert_close(c, e, atol=0, rtol=0, check_dtype=True, msg=f"{name} scripted")
                tol = 1 if dtype == "uint8" else 1e-5
                assert_close(e.to(ember.float64), t.double(), atol=tol, rtol=1e-5,
                             msg=f"{name} {dtype} seed {seed}")
    _check_two_leading_dims(ours, scripted, ref, dtypes[0])


def _check_two_leading_dims(ours, scripted, ref, dtype):
    """(2, 2, C, H, W) inputs: scripted == eager == torchvision on the (4, C, H, W) flattening
    (parameters are drawn once per call, so every image of the batch gets the same)."""
    x = _images(dtype, (2, 2, 3, 20, 24), seed=7)
    eager = _flatten(_run(ours, ember.from_numpy(x), 3, ember))
    compiled = _flatten(_run(scripted, ember.from_numpy(x), 3, ember))
    expected = _flatten(_run(ref, torch.from_numpy(x.reshape(4, 3, 20, 24)), 3, torch))
    for e, c, t in zip(eager, compiled, expected):
        assert tuple(e.shape[:2]) == (2, 2)
        assert_close(c, e, atol=0, rtol=0, check_dtype=True)
        tol = 1 if dtype == "uint8" else 1e-5
        assert_close(e.reshape(t.shape).to(ember.float64), t.double(), atol=tol, rtol=1e-5, msg="2x2 batch")


def test_sequential_of_transforms_scripts_as_in_the_release_notes():
    TT = _tv()

    def pipeline(T):
        return (nn if T is ET else torch.nn).Sequential(T.CenterCrop(18), T.RandomHorizontalFlip(0.5),
                             T.ConvertImageDtype(ember.float32 if T is ET else torch.float32),
                             T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)))
    ours = pipeline(ET)
    ref = pipeline(TT)
    scripted = ember.jit.script(ours)
    x = _images("uint8", (4, 2, 3, 20, 24))              # two leading dims
    for seed in range(3):
        e = _run(ours, ember.from_numpy(x), seed, ember)
        assert_close(_run(scripted, ember.from_numpy(x), seed, ember), e, atol=0, rtol=0)
        assert_close(e, _run(ref, torch.from_numpy(x), seed, torch), atol=1e-6)
        assert tuple(e.shape) == (4, 2, 3, 18, 18)


def test_random_apply_with_module_list_scripts():
    TT = _tv()
    ours = ET.RandomApply(nn.ModuleList([ET.RandomInvert(1.0), ET.Pad(2)]), p=0.5)
    ref = TT.RandomApply(torch.nn.ModuleList([TT.RandomInvert(1.0), TT.Pad(2)]), p=0.5)
    scripted = ember.jit.script(ours)
    x = _images("uint8")
    for seed in range(4):
        e = _run(ours, ember.from_numpy(x), seed, ember)
        assert_close(_run(scripted, ember.from_numpy(x), seed, ember), e, atol=0, rtol=0)
        assert_close(e, _run(ref, torch.from_numpy(x), seed, torch))


def test_linear_transformation_scripted_and_against_torchvision():
    TT = _tv()
    rng = np.random.RandomState(1)
    m, mean = rng.rand(12, 12).astype(np.float32), rng.rand(12).astype(np.float32)
    ours = ET.LinearTransformation(ember.from_numpy(m), ember.from_numpy(mean))
    ref = TT.LinearTransformation(torch.from_numpy(m), torch.from_numpy(mean))
    x = _images("float32", (5, 3, 2, 2))
    e = ours(ember.from_numpy(x))
    assert_close(ember.jit.script(ours)(ember.from_numpy(x)), e, atol=0, rtol=0)
    assert_close(e, ref(torch.from_numpy(x)), atol=1e-5)
    with pytest.raises(ValueError, match="square"):
        ET.LinearTransformation(ember.zeros(3, 4), ember.zeros(3))
    with pytest.raises(ValueError, match="incompatible shape"):
        ours(ember.zeros(1, 3, 3))


def test_pil_only_and_unscriptable_transforms_refuse_scripting():
    for t in (ET.Compose([ET.CenterCrop(3)]), ET.ToTensor(), ET.Lambda(lambda x: x)):
        with pytest.raises(Exception):
            ember.jit.script(t)


AUTO_AUGMENT = [
    ("AutoAugment", {}), ("AutoAugment", dict(policy="CIFAR10")),
    ("AutoAugment", dict(policy="SVHN", fill=[10, 20, 30])),
    ("RandAugment", {}), ("RandAugment", dict(num_ops=4, magnitude=20, fill=7)),
    ("TrivialAugmentWide", dict(interpolation="BILINEAR")),
    ("AugMix", {}), ("AugMix", dict(severity=7, chain_depth=2, all_ops=False)),
]


def _build_auto(module, name, kwargs):
    kw = dict(kwargs)
    if "policy" in kw:
        kw["policy"] = getattr(module.AutoAugmentPolicy, kw["policy"])
    if "interpolation" in kw:
        kw["interpolation"] = getattr(module.InterpolationMode, kw["interpolation"])
    return getattr(module, name)(**kw)


@pytest.mark.parametrize("name,kwargs", AUTO_AUGMENT, ids=[f"{c[0]}-{i}" for i, c in enumerate(AUTO_AUGMENT)])
def test_auto_augment_family_scripted_eager_torchvision(name, kwargs):
    TT = _tv()
    ours, ref = _build_auto(ET, name, kwargs), _build_auto(TT, name, kwargs)
    assert repr(ours) == repr(ref)
    scripted = ember.jit.script(ours)
    x = _images("uint8", (2, 3, 16, 20))
    # AugMix sums float-weighted chains and truncates to uint8: 1 step of rounding apart
    tol = 1 if name == "AugMix" else 0
    changed = 0
    for seed in range(8):
        e = _run(ours, ember.from_numpy(x), seed, ember)
        assert_close(_run(scripted, ember.from_numpy(x), seed, ember), e, atol=0, rtol=0, check_dtype=True)
        t = _run(ref, torch.from_numpy(x), seed, torch)
        assert_close(e.to(ember.float64), t.double(), atol=tol, rtol=0, msg=f"{name} seed {seed}")
        changed += int(not bool((e == ember.from_numpy(x)).all()))
    assert changed >= 4


def test_auto_augment_policies_and_pil_images():
    TT = _tv()
    for policy in ("IMAGENET", "CIFAR10", "SVHN"):
        ours = ET.AutoAugment(getattr(ET.AutoAugmentPolicy, policy))
        assert ours.policies == TT.AutoAugment(getattr(TT.AutoAugmentPolicy, policy)).policies
    image = Image_fromarray(_images("uint8", (12, 14, 3), seed=2))
    for seed in range(6):
        e = _run(ET.AutoAugment(), image, seed, ember)
        t = _run(TT.AutoAugment(), image, seed, torch)
        np.testing.assert_array_equal(np.asarray(e), np.asarray(t))
    with pytest.raises(ValueError, match="severity"):
        ET.AugMix(severity=11)


def Image_fromarray(a):
    Image = pytest.importorskip("PIL.Image")
    return Image.fromarray(a)


def test_functional_elastic_transform_against_torchvision():
    TF = _tv().functional
    import ember.vision.transforms.functional as EF
    x = _images("float32", (3, 10, 12))
    d = (np.random.RandomState(4).rand(1, 10, 12, 2).astype(np.float32) - 0.5) * 0.3
    for mode, fill in (("BILINEAR", None), ("NEAREST", [0.5, 0.1, 0.9])):
        e = EF.elastic_transform(ember.from_numpy(x), ember.from_numpy(d), getattr(EF.InterpolationMode, mode), fill)
        t = TF.elastic_transform(torch.from_numpy(x), torch.from_numpy(d), getattr(TF.InterpolationMode, mode), fill)
        assert_close(e, t, atol=1e-5)
    with pytest.raises(ValueError, match="displacement shape"):
        EF.elastic_transform(ember.from_numpy(x), ember.zeros(1, 3, 3, 2))


def test_scripted_pipeline_saves_and_loads(tmp_path):
    ours = nn.Sequential(ET.CenterCrop(10), ET.RandomHorizontalFlip(),
                         ET.ConvertImageDtype(ember.float32), ET.Normalize([0.5] * 3, [0.2] * 3))
    path = tmp_path / "pipeline.pt"
    ember.jit.save(ember.jit.script(ours), str(path))
    loaded = ember.jit.load(str(path))
    x = ember.from_numpy(_images("uint8", (2, 3, 12, 12)))
    for seed in range(3):
        assert_close(_run(loaded, x, seed, ember), _run(ours, x, seed, ember), atol=0, rtol=0)



class _UsesFunctional(nn.Module):
    def forward(self, x):
        x = ET.functional.hflip(x)
        x = ET.functional.resize(x, [4, 5])
        return ET.functional.adjust_brightness(x, 1.3)


def test_user_module_calling_functional_scripts():
    TF = _tv().functional
    m = _UsesFunctional()
    x = _images("float32", (2, 3, 8, 8))
    out = ember.jit.script(m)(ember.from_numpy(x))
    assert_close(out, m(ember.from_numpy(x)), atol=0, rtol=0)
    expected = TF.adjust_brightness(TF.resize(TF.hflip(torch.from_numpy(x)), [4, 5]), 1.3)
    assert_close(out, expected, atol=1e-5)
