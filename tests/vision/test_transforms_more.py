"""More ember.vision.transforms vs torchvision (v1): argument checks, warnings, drawn parameters,
the less common modes and dtypes."""
import random
import warnings

import numpy as np
import pytest

import ember
from helpers import import_torchvision
import ember.vision.transforms as ET
import ember.vision.transforms.functional as EF

torch = pytest.importorskip("torch")
Image = pytest.importorskip("PIL.Image")

tv = import_torchvision()
TT = tv.transforms
TF = tv.transforms.functional

RNG = np.random.default_rng(3)
IMG_F = RNG.random((3, 12, 15), dtype=np.float32)
IMG_U8 = RNG.integers(0, 256, (3, 12, 15), dtype=np.uint8)
PIL_RGB = Image.fromarray(RNG.integers(0, 256, (10, 14, 3), dtype=np.uint8))


def pair(a):
    a = np.ascontiguousarray(a)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def same(e, t, atol=1e-5):
    if isinstance(t, Image.Image):
        assert isinstance(e, Image.Image) and e.mode == t.mode and e.size == t.size
        np.testing.assert_array_equal(np.asarray(e), np.asarray(t))
        if t.mode == "P":
            assert e.getpalette() == t.getpalette()
        return
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            same(a, b, atol)
        return
    e_np, t_np = e.detach().numpy(), t.detach().numpy()
    assert e_np.shape == t_np.shape
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e_np.astype(np.float64), t_np.astype(np.float64), atol=atol)


def raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc)
    return None


# ----------------------------------------------------------------------------- argument checks
CONSTRUCTORS = [
    ("RandomAffine", (10,), dict(translate=(0.5,))), ("RandomAffine", (10,), dict(translate=3)),
    ("RandomAffine", (10,), dict(translate=(1.5, 0.1))), ("RandomAffine", (10,), dict(scale=(2,))),
    ("RandomAffine", (10,), dict(scale=(-1, 2))), ("RandomAffine", (10,), dict(shear=(1, 2, 3))),
    ("RandomAffine", (10,), dict(shear=-3)), ("RandomAffine", (-10,), {}),
    ("RandomAffine", ((1, 2, 3),), {}), ("RandomAffine", (10,), dict(center=3)),
    ("RandomRotation", (10,), dict(center=(1, 2, 3))), ("RandomRotation", (10,), dict(center=3)),
    ("RandomCrop", ((1, 2, 3),), {}), ("CenterCrop", ((1, 2, 3),), {}),
    ("GaussianBlur", (4,), {}), ("GaussianBlur", ((3, 3, 3),), {}),
    ("GaussianBlur", (3,), dict(sigma=(2, 1))), ("GaussianBlur", (3,), dict(sigma=-1)),
    ("GaussianBlur", (3,), dict(sigma="a")), ("ColorJitter", (), dict(brightness=-1)),
    ("ColorJitter", (), dict(contrast=(1, 2, 3))), ("ColorJitter", (), dict(saturation=(2, 1))),
    ("ColorJitter", (), dict(hue=(-0.6, 0.1))), ("RandomErasing", (), dict(value="x")),
    ("RandomErasing", (), dict(value=object())), ("RandomErasing", (), dict(scale=(0.5, 1.1))),
    ("RandomErasing", (), dict(p=2)), ("Pad", ("a",), {}), ("Pad", (2,), dict(fill="a")),
    ("Pad", (2,), dict(padding_mode="x")), ("Pad", ((1, 2, 3),), {}), ("Resize", (2.5,), {}),
("Lambda", (3,), {}), ("RandomOrder", (3,), {}),
    ("RandomResizedCrop", (3,), dict(scale=0.5)), ("FiveCrop", ((1, 2, 3),), {}),
]


@pytest.mark.parametrize("name,args,kw", CONSTRUCTORS)
def test_constructor_errors(name, args, kw):
    expected = raised(lambda: getattr(TT, name)(*args, **kw))
    assert expected is not None
    assert raised(lambda: getattr(ET, name)(*args, **kw)) is expected


def test_choice_weights_error_and_functional_checks():
    assert raised(lambda: ET.RandomChoice([ET.ToTensor()], p=3)) is TypeError
    e, t = pair(IMG_F)
    calls = [("affine", (10, [0, 0], 1.0, 0.0), dict(center=3)), ("affine", ("a", [0, 0], 1.0, 0.0), {}),
             ("affine", (10, [0, 0], -1.0, 0.0), {}), ("affine", (10, [0, 0], 1.0, (1, 2, 3)), {}),
             ("affine", (10, [0], 1.0, 0.0), {}), ("affine", (10, 3, 1.0, 0.0), {}),
             ("rotate", (10,), dict(center=3)), ("rotate", ("x",), {}),
             ("rotate", (10,), dict(interpolation=TF.InterpolationMode.BICUBIC)),
             ("perspective", ([[0, 0]] * 3, [[0, 0]] * 4), {}),
             ("resize", ([1, 2, 3],), {}), ("resize", ("a",), {}), ("resize", (None,), {}),
             ("pad", (2,), dict(padding_mode="reflect", fill=(1, 2))), ("pad", (20,), dict(padding_mode="reflect")),
             ("gaussian_blur", ([3, 3, 3],), {}), ("gaussian_blur", (3.5,), {}),
             ("gaussian_blur", (3, [1, 2, 3]), {}), ("gaussian_blur", (3, -1.0), {}),
             ("adjust_gamma", (-1,), {}), ("posterize", (3,), {}), ("equalize", (), {}),
             ("adjust_saturation", (-1,), {}), ("adjust_hue", (0.6,), {}),
             ("rgb_to_grayscale", (2,), {}), ("five_crop", (20,), {}), ("erase", (0, 0, 1, 1, 0.0), {})]
    for name, args, kw in calls:
        kw_e = {k: (EF.InterpolationMode(v.value) if isinstance(v, TF.InterpolationMode) else v)
                for k, v in kw.items()}
        t_in = t.numpy() if name == "erase" else t
        e_in = e.numpy() if name == "erase" else e
        expected = raised(lambda: getattr(TF, name)(t_in, *args, **kw))
        assert expected is not None, name
        assert raised(lambda: getattr(EF, name)(e_in, *args, **kw_e)) is expected, (name, args, kw)


@pytest.mark.parametrize("make", [lambda T: T.RandomResizedCrop(4, scale=(1.0, 0.5)),
                                  lambda T: T.RandomResizedCrop(4, ratio=(2.0, 1.0)),
                                  lambda T: T.RandomErasing(scale=(0.3, 0.1))])
def test_reversed_ranges_warn(make):
    with warnings.catch_warnings(record=True) as got_t:
        warnings.simplefilter("always")
        make(TT)
    with warnings.catch_warnings(record=True) as got_e:
        warnings.simplefilter("always")
        make(ET)
    assert [str(w.message) for w in got_e] == [str(w.message) for w in got_t]


# ----------------------------------------------------------------------------- drawn parameters
@pytest.mark.parametrize("seed", [0, 1, 6])
def test_get_params_match(seed):
    e, t = pair(IMG_F)
    cases = [
        (lambda T, x: T.RandomCrop.get_params(x, (5, 7)), None),
        (lambda T, x: T.RandomCrop.get_params(x, (12, 15)), None),
        (lambda T, x: T.RandomPerspective.get_params(15, 12, 0.7), None),
        (lambda T, x: T.RandomRotation.get_params([-20.0, 35.0]), None),
        (lambda T, x: T.GaussianBlur.get_params(0.2, 1.7), None),
        (lambda T, x: T.RandomAffine.get_params([-5.0, 5.0], None, None, [-3.0, 3.0], [15, 12]), None),
        (lambda T, x: T.RandomResizedCrop.get_params(x, (0.9, 1.0), (5.0, 6.0)), None),
    ]
    for fn, _ in cases:
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        assert fn(ET, e) == fn(TT, t)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    got_e = ET.ColorJitter.get_params((0.5, 1.5), None, (0.1, 0.9), (-0.2, 0.2))
    got_t = TT.ColorJitter.get_params((0.5, 1.5), None, (0.1, 0.9), (-0.2, 0.2))
    assert got_e[0].tolist() == got_t[0].tolist() and got_e[1:] == got_t[1:]
    for value in (None, [0.5]):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        got_e = ET.RandomErasing.get_params(e, (0.05, 0.2), (0.5, 2.0), value)
        got_t = TT.RandomErasing.get_params(t, (0.05, 0.2), (0.5, 2.0), value)
        assert got_e[:4] == got_t[:4]
        same(got_e[4], got_t[4])


@pytest.mark.parametrize("seed", [2, 9])
def test_seeded_choice_weights_and_coin_transforms(seed):
    e, t = pair(IMG_U8)
    for make in (lambda T: T.RandomChoice([T.RandomHorizontalFlip(1.0), T.RandomVerticalFlip(1.0),
                                            T.RandomInvert(1.0)], p=[0.2, 0.5, 0.3]),
                 lambda T: T.RandomSolarize(100, p=0.6), lambda T: T.RandomAdjustSharpness(3.0),
                 lambda T: T.RandomGrayscale(0.5), lambda T: T.RandomInvert(),
                 lambda T: T.RandomAffine(15, scale=(0.8, 1.2), fill=3),
                 lambda T: T.RandomPerspective(0.4, p=1.0, fill=[1, 2, 3]),
                 lambda T: T.RandomRotation(30, center=(2, 3), expand=True)):
        ember.manual_seed(seed)
        torch.manual_seed(seed)
        random.seed(seed)
        te, tt = make(ET), make(TT)
        outs_e = [te(e) for _ in range(5)]
        random.seed(seed)
        outs_t = [tt(t) for _ in range(5)]
        same(outs_e, outs_t, atol=1)


# ----------------------------------------------------------------------------- conversions
@pytest.mark.parametrize("arr,mode", [
    (RNG.integers(-3000, 3000, (1, 4, 5), dtype=np.int16), None),
    (RNG.integers(0, 9000, (1, 4, 5), dtype=np.int32), None),
    (RNG.random((1, 4, 5), dtype=np.float32), None),
    (RNG.integers(0, 256, (2, 4, 5), dtype=np.uint8), "LA"),
    (RNG.integers(0, 256, (4, 4, 5), dtype=np.uint8), "CMYK"),
    (RNG.integers(0, 256, (4, 4, 5), dtype=np.uint8), "RGBX"),
    (RNG.integers(0, 256, (3, 4, 5), dtype=np.uint8), "YCbCr"),
    (RNG.random((4, 4, 5), dtype=np.float32), None),
    (RNG.integers(0, 256, (4, 5), dtype=np.uint8), None),
])
def test_to_pil_image_modes(arr, mode):
    e, t = pair(arr)
    same(EF.to_pil_image(e, mode), TF.to_pil_image(t, mode))


def test_to_pil_image_mode_errors():
    for arr, mode in ((np.zeros((3, 3, 3), np.uint8), "LA"),
                      (np.zeros((2, 3, 3), np.uint8), "RGB"), (np.zeros((4, 3, 3), np.uint8), "RGB"),
                      (np.zeros((1, 3, 3), np.int32), "L"), (np.zeros((3, 3, 3), np.int32), None)):
        e, t = pair(arr)
        expected = raised(lambda: TF.to_pil_image(t, mode))
        assert expected is not None and raised(lambda: EF.to_pil_image(e, mode)) is expected


@pytest.mark.parametrize("src,dst", [("uint8", "int8"), ("int8", "uint8"), ("int64", "int16"),
                                     ("int16", "int32"), ("float64", "uint8"), ("float64", "int32"),
                                     ("int32", "float64")])
def test_convert_image_dtype_more(src, dst):
    if src.startswith("float"):
        a = RNG.random((2, 3, 4)).astype(src)
    else:
        a = RNG.integers(0, np.iinfo(src).max, (2, 3, 4), dtype=src, endpoint=True)
    e, t = pair(a)
    same(EF.convert_image_dtype(e, getattr(ember, dst)), TF.convert_image_dtype(t, getattr(torch, dst)),
         atol=0)
    assert raised(lambda: EF.convert_image_dtype(ember.zeros(1, 2, 2, dtype=ember.float64), ember.int64)) \
        is raised(lambda: TF.convert_image_dtype(torch.zeros(1, 2, 2, dtype=torch.float64), torch.int64))


# ----------------------------------------------------------------------------- geometry
def test_crop_and_center_crop_edges():
    e, t = pair(IMG_F)
    for box in [(20, 30, 4, 5), (-2, -3, 13, 30), (-2, 5, 20, 3)]:
        same(EF.crop(e, *box), TF.crop(t, *box))
    for size in [(15, 20), (5, 30), 1]:
        same(EF.center_crop(e, size), TF.center_crop(t, size))
        same(EF.center_crop(PIL_RGB, size), TF.center_crop(PIL_RGB, size))
    same(EF.ten_crop(PIL_RGB, (4, 6), vertical_flip=True), TF.ten_crop(PIL_RGB, (4, 6), vertical_flip=True))


def test_pad_palette_and_single_band_fill():
    pal = PIL_RGB.convert("P", palette=Image.ADAPTIVE, colors=16)
    for mode in ("constant", "edge", "reflect", "symmetric"):
        same(EF.pad(pal, [2, 1, 0, 3], fill=4, padding_mode=mode),
             TF.pad(pal, [2, 1, 0, 3], fill=4, padding_mode=mode))
    gray = PIL_RGB.convert("L")
    same(EF.pad(gray, 2, fill=(9,)), TF.pad(gray, 2, fill=(9,)))
    same(EF.pad(gray, [-1, 2]), TF.pad(gray, [-1, 2]))


def test_resize_max_size_and_pil_nearest_exact():
    e, t = pair(IMG_F)
    same(EF.resize(e, 5, max_size=9), TF.resize(t, 5, max_size=9), atol=1e-4)
    assert raised(lambda: ET.Resize((1, 2, 3))(e)) is raised(lambda: TT.Resize((1, 2, 3))(t)) is ValueError
    same(EF.resize(PIL_RGB, [6, 9], EF.InterpolationMode.NEAREST_EXACT),
         TF.resize(PIL_RGB, [6, 9], TF.InterpolationMode.NEAREST_EXACT))
    assert EF.InterpolationMode("nearest-exact") is EF.InterpolationMode.NEAREST_EXACT
    assert EF._interpolation_modes_from_int(1) is EF.InterpolationMode.LANCZOS


@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_rotate_expand_about_point_and_affine_pil_center(interp):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        for kw in (dict(angle=37.0, expand=True, center=[2, 9]), dict(angle=-120, expand=True, fill=[1, 2, 3])):
            same(EF.rotate(e, interpolation=EF.InterpolationMode(interp), **kw),
                 TF.rotate(t, interpolation=TF.InterpolationMode(interp), **kw),
                 atol=1 if arr.dtype == np.uint8 else 1e-4)
    kw = dict(angle=12.0, translate=[3, -1], scale=0.9, shear=[4.0, 6.0], center=[3, 2], fill=(9, 8, 7))
    same(EF.affine(PIL_RGB, interpolation=EF.InterpolationMode(interp), **kw),
         TF.affine(PIL_RGB, interpolation=TF.InterpolationMode(interp), **kw))


def test_perspective_batched_fill_and_grad():
    a = RNG.random((2, 3, 12, 15)).astype(np.float32)
    start, end = [[0, 0], [14, 0], [14, 11], [0, 11]], [[1, 2], [13, 1], [12, 10], [2, 11]]
    e, t = pair(a)
    same(EF.perspective(e, start, end, fill=[0.1, 0.2, 0.3]), TF.perspective(t, start, end, fill=[0.1, 0.2, 0.3]),
         atol=1e-4)
    e.requires_grad_(True)
    t.requires_grad_(True)
    EF.perspective(e, start, end).pow(2).sum().backward()
    TF.perspective(t, start, end).pow(2).sum().backward()
    same(e.grad, t.grad, atol=1e-4)


# ----------------------------------------------------------------------------- colour
def test_colour_ops_more():
    grey_pixels = np.repeat(RNG.random((1, 5, 6), dtype=np.float32), 3, axis=0)
    for arr in (grey_pixels, RNG.random((2, 3, 5, 6)).astype(np.float64)):
        e, t = pair(arr)
        same(EF.adjust_hue(e, 0.3), TF.adjust_hue(t, 0.3))
        same(EF.rgb_to_grayscale(e), TF.rgb_to_grayscale(t))
        same(EF.adjust_contrast(e, 0.4), TF.adjust_contrast(t, 0.4))
    e, t = pair(IMG_U8)
    same(EF.adjust_hue(e, -0.2), TF.adjust_hue(t, -0.2), atol=1)
    same(EF.adjust_gamma(e, 1.7, gain=0.8), TF.adjust_gamma(t, 1.7, gain=0.8), atol=1)
    same(EF.posterize(e, 0), TF.posterize(t, 0))
    same(EF.adjust_gamma(PIL_RGB, 0.5, gain=1.2), TF.adjust_gamma(PIL_RGB, 0.5, gain=1.2))
    same(EF.adjust_hue(PIL_RGB, -0.3), TF.adjust_hue(PIL_RGB, -0.3))
    same(EF.to_grayscale(PIL_RGB, 3), TF.to_grayscale(PIL_RGB, 3))
    same(EF.solarize(PIL_RGB.convert("L"), 90), TF.solarize(PIL_RGB.convert("L"), 90))


# --------------------------------------------------------------------------- repr
I = TT.InterpolationMode
REPR_CASES = [
    ("RandomSolarize", (128,), {}), ("RandomSolarize", (0.5,), {"p": 0.3}),
    ("RandomAdjustSharpness", (2,), {}), ("RandomAdjustSharpness", (1.5,), {"p": 1}),
    ("RandomPosterize", (4,), {}), ("RandomPosterize", (2,), {"p": 0.25}),
    ("RandomHorizontalFlip", (), {}), ("RandomVerticalFlip", (0.3,), {}), ("RandomInvert", (), {}),
    ("RandomAutocontrast", (), {}), ("RandomEqualize", (1,), {}), ("RandomGrayscale", (0.2,), {}),
    ("ToTensor", (), {}), ("PILToTensor", (), {}), ("ToPILImage", (), {}), ("ToPILImage", ("RGB",), {}),
    ("ConvertImageDtype", ("float32",), {}), ("Normalize", ((0.5, 0.4), (0.2, 0.1)), {}),
    ("Normalize", ([0.5], [0.2]), {"inplace": True}),
    ("Resize", (10,), {}), ("Resize", ((10, 12),), {"antialias": False}), ("Resize", (8,), {"max_size": 20}),
    ("CenterCrop", (5,), {}), ("CenterCrop", ((5, 6),), {}), ("FiveCrop", (4,), {}),
    ("TenCrop", (4,), {"vertical_flip": True}),
    ("Pad", (2,), {}), ("Pad", ((1, 2),), {"fill": 3, "padding_mode": "reflect"}),
    ("Grayscale", (), {}), ("Grayscale", (3,), {}),
    ("RandomCrop", (5,), {}), ("RandomCrop", ((5, 6),), {"padding": 2, "pad_if_needed": True}),
    ("RandomResizedCrop", (8,), {}),
    ("RandomResizedCrop", ((8, 9),), {"scale": (0.123456, 1.0), "ratio": (0.5, 2.0), "antialias": False}),
    ("ColorJitter", (), {}), ("ColorJitter", (0.2, 0.3, 0.4, 0.1), {}),
    ("RandomRotation", (30,), {}), ("RandomRotation", (10,), {"fill": [1, 2]}),
    ("RandomRotation", ((10, 20),), {"expand": True, "center": (1, 2), "fill": 1}),
    ("RandomAffine", (15,), {}), ("RandomAffine", (10,), {"fill": 0, "shear": (1, 2, 3, 4)}),
    ("RandomAffine", (10,), {"translate": (0.1, 0.2), "scale": (0.5, 1), "shear": 3,
                             "interpolation": "BILINEAR", "fill": 1, "center": (1, 2)}),
    ("RandomPerspective", (), {}), ("RandomPerspective", (0.3,), {"p": 0.2, "fill": 1}),
    ("ElasticTransform", (), {}), ("ElasticTransform", (40.0, 4.0), {"fill": 1}),
    ("ElasticTransform", ((1.0, 2.0), (3.0, 4.0)), {"fill": [1, 2.5], "interpolation": "NEAREST"}),
    ("GaussianBlur", (3,), {}), ("GaussianBlur", ((3, 5),), {"sigma": (0.2, 1.0)}),
    ("RandomErasing", (), {}), ("RandomErasing", (0.3,), {"value": 1, "inplace": True}),
]


@pytest.mark.parametrize("name,args,kwargs", REPR_CASES)
def test_repr_matches_torchvision(name, args, kwargs):
    def build(lib, transforms):
        a = (getattr(lib, args[0]),) if name == "ConvertImageDtype" else args
        kw = {k: getattr(transforms.InterpolationMode, v) if k == "interpolation" else v
              for k, v in kwargs.items()}
        return getattr(transforms, name)(*a, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(build(ember, ET)) == repr(build(torch, TT))
