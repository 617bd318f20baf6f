"""ember.vision.transforms vs torchvision.transforms (v1): same inputs, same outputs, and
seeded random transforms pick the same parameters."""
import random

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


def pair(a):
    a = np.ascontiguousarray(a)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def close(e, t, atol=1e-5, rtol=1e-5):
    if isinstance(e, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, atol, rtol)
        return
    if isinstance(t, Image.Image):
        assert isinstance(e, Image.Image)
        assert e.mode == t.mode and e.size == t.size
        np.testing.assert_array_equal(np.asarray(e), np.asarray(t))
        return
    e_np = e.detach().numpy()
    t_np = t.detach().numpy()
    assert e_np.shape == t_np.shape
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    if t_np.dtype.kind in "iub":
        np.testing.assert_allclose(e_np.astype(np.int64), t_np.astype(np.int64), atol=atol)
    else:
        np.testing.assert_allclose(e_np, t_np, atol=atol, rtol=rtol)


RNG = np.random.default_rng(0)
IMG_F = RNG.random((3, 13, 17), dtype=np.float32)
IMG_U8 = RNG.integers(0, 256, (3, 13, 17), dtype=np.uint8)
PIL_RGB = Image.fromarray(RNG.integers(0, 256, (11, 15, 3), dtype=np.uint8))
PIL_L = Image.fromarray(RNG.integers(0, 256, (11, 15), dtype=np.uint8))


# ----------------------------------------------------------------------------- conversions
@pytest.mark.parametrize("pic", [PIL_RGB, PIL_L, PIL_RGB.convert("RGBA"), PIL_L.convert("F"),
                                 PIL_L.convert("1"), PIL_L.convert("I"),
                                 Image.fromarray(RNG.integers(0, 30000, (4, 5), dtype=np.uint16))])
def test_to_tensor_pil_to_tensor(pic):
    close(EF.to_tensor(pic), TF.to_tensor(pic))
    close(EF.pil_to_tensor(pic), TF.pil_to_tensor(pic))
    close(ET.ToTensor()(pic), TT.ToTensor()(pic))


def test_to_tensor_ndarray():
    a = RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    close(EF.to_tensor(a), TF.to_tensor(a))
    close(EF.to_tensor(a[:, :, 0]), TF.to_tensor(a[:, :, 0]))
    f = RNG.random((5, 6, 2)).astype(np.float64)
    close(EF.to_tensor(f), TF.to_tensor(f))
    with pytest.raises(TypeError):
        EF.to_tensor([1, 2])


@pytest.mark.parametrize("arr,mode", [(IMG_F, None), (IMG_U8, None), (IMG_U8[:1], None),
                                      (IMG_F[:1], "F"), (IMG_U8[:2], None),
                                      (np.concatenate([IMG_U8, IMG_U8[:1]]), None),
                                      (IMG_U8, "HSV")])
def test_to_pil_image(arr, mode):
    e, t = pair(arr)
    close(EF.to_pil_image(e, mode), TF.to_pil_image(t, mode))
    close(ET.ToPILImage(mode)(e), TT.ToPILImage(mode)(t))
    hwc = np.ascontiguousarray(arr.transpose(1, 2, 0))
    close(EF.to_pil_image(hwc, mode), TF.to_pil_image(hwc, mode))


def test_to_pil_image_errors():
    with pytest.raises(ValueError):
        EF.to_pil_image(ember.zeros(5, 4, 4))
    with pytest.raises(ValueError):
        EF.to_pil_image(ember.zeros(3, 4, 4, dtype=ember.uint8), mode="L")


@pytest.mark.parametrize("src,dst", [("float32", "uint8"), ("float64", "int16"),
                                     ("uint8", "float32"), ("uint8", "int32"),
                                     ("int32", "uint8"), ("int16", "int64"),
                                     ("float32", "float64")])
def test_convert_image_dtype(src, dst):
    if src.startswith("float"):
        a = RNG.random((2, 3, 4)).astype(src)
    else:
        info = np.iinfo(src)
        a = RNG.integers(0, info.max, (2, 3, 4), dtype=src, endpoint=True)
    e, t = pair(a)
    close(EF.convert_image_dtype(e, getattr(ember, dst)), TF.convert_image_dtype(t, getattr(torch, dst)))
    close(ET.ConvertImageDtype(getattr(ember, dst))(e), TT.ConvertImageDtype(getattr(torch, dst))(t))


def test_convert_image_dtype_unsafe():
    with pytest.raises(RuntimeError):
        EF.convert_image_dtype(ember.zeros(1, 2, 2), ember.int32)


# ----------------------------------------------------------------------------- normalize
def test_normalize_and_grad():
    e, t = pair(IMG_F)
    e.requires_grad_(True)
    t.requires_grad_(True)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    eo, to = EF.normalize(e, mean, std), TF.normalize(t, mean, std)
    close(eo, to)
    w = RNG.random(eo.shape).astype(np.float32)
    (eo * ember.from_numpy(w)).sum().backward()
    (to * torch.from_numpy(w)).sum().backward()
    close(e.grad, t.grad)
    close(ET.Normalize(mean, std)(e.detach()), TT.Normalize(mean, std)(t.detach()))
    x_e, x_t = pair(IMG_F)
    EF.normalize(x_e, mean, std, inplace=True)
    TF.normalize(x_t, mean, std, inplace=True)
    close(x_e, x_t)
    with pytest.raises(TypeError):
        EF.normalize(ember.zeros(3, 2, 2, dtype=ember.uint8), mean, std)
    with pytest.raises(ValueError):
        EF.normalize(ember.zeros(3, 2, 2), mean, [1.0, 0.0, 1.0])


# ----------------------------------------------------------------------------- resize
@pytest.mark.parametrize("interp", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("size", [7, [20, 9], (5,)])
def test_resize_tensor(interp, antialias, size):
    mode = TF.InterpolationMode(interp)
    emode = EF.InterpolationMode(interp)
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        eo = EF.resize(e, size, emode, antialias=antialias)
        to = TF.resize(t, size, mode, antialias=antialias)
        close(eo, to, atol=1 if arr.dtype == np.uint8 else 1e-4)
        close(ET.Resize(size, emode, antialias=antialias)(e),
              TT.Resize(size, mode, antialias=antialias)(t), atol=1 if arr.dtype == np.uint8 else 1e-4)


def test_resize_max_size_batched_and_identity():
    a = RNG.random((2, 2, 3, 10, 14)).astype(np.float32)
    e, t = pair(a)
    close(EF.resize(e, 6, max_size=8), TF.resize(t.reshape(4, 3, 10, 14), 6, max_size=8).reshape(2, 2, 3, 6, 8),
          atol=1e-5)
    assert tuple(EF.resize(e, 6, max_size=8).shape) == (2, 2, 3, 6, 8)
    close(EF.resize(e, [10, 14]), TF.resize(t, [10, 14]))
    with pytest.raises(ValueError):
        EF.resize(e, 8, max_size=8)


@pytest.mark.parametrize("interp", ["nearest", "bilinear", "bicubic", "box", "hamming", "lanczos"])
def test_resize_pil(interp):
    for size in (8, [5, 19]):
        for img in (PIL_RGB, PIL_L):
            close(EF.resize(img, size, EF.InterpolationMode(interp)),
                  TF.resize(img, size, TF.InterpolationMode(interp)))


# ----------------------------------------------------------------------------- crops / flips
@pytest.mark.parametrize("box", [(2, 3, 5, 6), (-2, -3, 6, 8), (10, 12, 6, 9), (0, 0, 13, 17)])
def test_crop(box):
    e, t = pair(IMG_F)
    close(EF.crop(e, *box), TF.crop(t, *box))
    close(EF.crop(PIL_RGB, *box), TF.crop(PIL_RGB, *box))


@pytest.mark.parametrize("size", [5, (4, 9), [16, 20], (13, 20), [3]])
def test_center_crop(size):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        close(EF.center_crop(e, size), TF.center_crop(t, size))
        close(ET.CenterCrop(size)(e), TT.CenterCrop(size)(t))
    close(EF.center_crop(PIL_RGB, size), TF.center_crop(PIL_RGB, size))


def test_flips_five_ten_crop():
    a = RNG.random((2, 3, 9, 11)).astype(np.float32)
    e, t = pair(a)
    close(EF.hflip(e), TF.hflip(t))
    close(EF.vflip(e), TF.vflip(t))
    close(EF.hflip(PIL_RGB), TF.hflip(PIL_RGB))
    close(EF.vflip(PIL_RGB), TF.vflip(PIL_RGB))
    close(ET.FiveCrop(4)(e), TT.FiveCrop(4)(t))
    close(ET.TenCrop((3, 5))(e), TT.TenCrop((3, 5))(t))
    close(ET.TenCrop(4, vertical_flip=True)(e), TT.TenCrop(4, vertical_flip=True)(t))
    close(EF.five_crop(PIL_RGB, (5, 7)), TF.five_crop(PIL_RGB, (5, 7)))
    with pytest.raises(ValueError):
        EF.five_crop(e, 20)


# ----------------------------------------------------------------------------- pad
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
@pytest.mark.parametrize("padding", [2, [1, 3], (1, 2, 3, 4), [3, -2, 1, -1]])
def test_pad(mode, padding):
    for arr in (IMG_F, IMG_U8, RNG.random((2, 1, 5, 6)).astype(np.float32)):
        e, t = pair(arr)
        close(EF.pad(e, padding, fill=3, padding_mode=mode), TF.pad(t, padding, fill=3, padding_mode=mode))
        close(ET.Pad(padding, padding_mode=mode)(e), TT.Pad(padding, padding_mode=mode)(t))
    for img in (PIL_RGB, PIL_L):
        close(EF.pad(img, padding, fill=7, padding_mode=mode), TF.pad(img, padding, fill=7, padding_mode=mode))
    close(EF.pad(PIL_RGB, padding, fill=(1, 2, 3), padding_mode=mode),
          TF.pad(PIL_RGB, padding, fill=(1, 2, 3), padding_mode=mode))


def test_pad_grad_symmetric():
    e, t = pair(IMG_F)
    e.requires_grad_(True)
    t.requires_grad_(True)
    EF.pad(e, [3, 2], padding_mode="symmetric").pow(2).sum().backward()
    TF.pad(t, [3, 2], padding_mode="symmetric").pow(2).sum().backward()
    close(e.grad, t.grad)


# ----------------------------------------------------------------------------- rotate / affine
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("kw", [dict(angle=30.0), dict(angle=-73.0, expand=True),
                                dict(angle=90, center=[3, 4]), dict(angle=45.0, fill=0.5)])
def test_rotate_tensor(interp, kw):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        eo = EF.rotate(e, interpolation=EF.InterpolationMode(interp), **kw)
        to = TF.rotate(t, interpolation=TF.InterpolationMode(interp), **kw)
        close(eo, to, atol=1 if arr.dtype == np.uint8 else 1e-4)


@pytest.mark.parametrize("kw", [dict(angle=30.0), dict(angle=-73.0, expand=True),
                                dict(angle=20, center=(3, 4), fill=(10, 20, 30))])
def test_rotate_pil(kw):
    close(EF.rotate(PIL_RGB, **kw), TF.rotate(PIL_RGB, **kw))


AFFINE = [dict(angle=25.0, translate=[2, -3], scale=1.2, shear=[10.0, -5.0]),
          dict(angle=-10, translate=(0, 1), scale=0.8, shear=15, center=[4, 5]),
          dict(angle=0.0, translate=[1, 1], scale=1.0, shear=[7.0], fill=1.0)]


@pytest.mark.parametrize("kw", AFFINE)
@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
def test_affine(kw, interp):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        eo = EF.affine(e, interpolation=EF.InterpolationMode(interp), **kw)
        to = TF.affine(t, interpolation=TF.InterpolationMode(interp), **kw)
        close(eo, to, atol=1 if arr.dtype == np.uint8 else 1e-4)
    close(EF.affine(PIL_RGB, interpolation=EF.InterpolationMode(interp), **kw),
          TF.affine(PIL_RGB, interpolation=TF.InterpolationMode(interp), **kw))


def test_affine_grad():
    e, t = pair(IMG_F)
    e.requires_grad_(True)
    t.requires_grad_(True)
    kw = dict(angle=17.0, translate=[1, 2], scale=1.1, shear=[3.0, 4.0],
              interpolation=EF.InterpolationMode.BILINEAR)
    EF.affine(e, **kw).pow(2).sum().backward()
    kw["interpolation"] = TF.InterpolationMode.BILINEAR
    TF.affine(t, **kw).pow(2).sum().backward()
    close(e.grad, t.grad, atol=1e-4)


# ----------------------------------------------------------------------------- colour
@pytest.mark.parametrize("fn,factor", [("adjust_brightness", 1.4), ("adjust_brightness", 0.3),
                                       ("adjust_contrast", 0.5), ("adjust_contrast", 1.7),
                                       ("adjust_saturation", 0.2), ("adjust_saturation", 2.0),
                                       ("adjust_hue", 0.2), ("adjust_hue", -0.45),
                                       ("adjust_gamma", 0.6), ("adjust_sharpness", 2.5),
                                       ("adjust_sharpness", 0.3)])
def test_color_adjust(fn, factor):
    for arr in (IMG_F, IMG_U8, RNG.random((2, 3, 6, 7)).astype(np.float32)):
        e, t = pair(arr)
        close(getattr(EF, fn)(e, factor), getattr(TF, fn)(t, factor),
              atol=1 if arr.dtype == np.uint8 else 1e-5)
    for img in (PIL_RGB, PIL_L):
        close(getattr(EF, fn)(img, factor), getattr(TF, fn)(img, factor))


def test_color_adjust_single_channel_and_errors():
    e, t = pair(IMG_F[:1])
    for fn in ("adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue"):
        close(getattr(EF, fn)(e, 0.3), getattr(TF, fn)(t, 0.3))
    with pytest.raises(ValueError):
        EF.adjust_hue(e, 0.7)
    with pytest.raises(ValueError):
        EF.adjust_brightness(e, -1)


def test_invert_solarize():
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        close(EF.invert(e), TF.invert(t))
        thr = 0.5 if arr.dtype != np.uint8 else 128
        close(EF.solarize(e, thr), TF.solarize(t, thr))
    close(EF.invert(PIL_RGB), TF.invert(PIL_RGB))
    close(EF.solarize(PIL_RGB, 100), TF.solarize(PIL_RGB, 100))


@pytest.mark.parametrize("n", [1, 3])
def test_grayscale(n):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        close(EF.rgb_to_grayscale(e, n), TF.rgb_to_grayscale(t, n), atol=1 if arr.dtype == np.uint8 else 1e-6)
        close(ET.Grayscale(n)(e), TT.Grayscale(n)(t), atol=1 if arr.dtype == np.uint8 else 1e-6)
    close(EF.to_grayscale(PIL_RGB, n), TF.to_grayscale(PIL_RGB, n))
    close(ET.Grayscale(n)(PIL_RGB), TT.Grayscale(n)(PIL_RGB))


def test_hue_grad():
    e, t = pair(IMG_F)
    e.requires_grad_(True)
    t.requires_grad_(True)
    EF.adjust_hue(EF.adjust_saturation(e, 0.7), 0.1).pow(2).sum().backward()
    TF.adjust_hue(TF.adjust_saturation(t, 0.7), 0.1).pow(2).sum().backward()
    close(e.grad, t.grad, atol=1e-4)


# ----------------------------------------------------------------------------- blur / erase
@pytest.mark.parametrize("ks,sigma", [(3, None), ([5, 3], [1.5, 0.7]), (7, 2.0)])
def test_gaussian_blur(ks, sigma):
    for arr in (IMG_F, IMG_U8, RNG.random((2, 3, 9, 10)).astype(np.float64)):
        e, t = pair(arr)
        close(EF.gaussian_blur(e, ks, sigma), TF.gaussian_blur(t, ks, sigma),
              atol=1 if arr.dtype == np.uint8 else 1e-5)
    close(EF.gaussian_blur(PIL_RGB, ks, sigma), TF.gaussian_blur(PIL_RGB, ks, sigma))
    with pytest.raises(ValueError):
        EF.gaussian_blur(e, 4)


def test_erase():
    e, t = pair(IMG_F)
    v = RNG.random((3, 1, 1)).astype(np.float32)
    close(EF.erase(e, 2, 3, 4, 5, ember.from_numpy(v)), TF.erase(t, 2, 3, 4, 5, torch.from_numpy(v)))
    assert not np.array_equal(e.numpy(), EF.erase(e, 2, 3, 4, 5, 0.0).numpy())
    EF.erase(e, 0, 0, 2, 2, 0.0, inplace=True)
    assert float(e[:, :2, :2].abs().sum()) == 0.0


# ----------------------------------------------------------------------------- seeded random transforms
def _seeded_pair(make_e, make_t, inp_e, inp_t, seed, reps=4, atol=1e-5):
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    random.seed(seed)
    te, tt = make_e(), make_t()
    outs_e = [te(inp_e) for _ in range(reps)]
    random.seed(seed)
    outs_t = [tt(inp_t) for _ in range(reps)]
    for a, b in zip(outs_e, outs_t):
        close(a, b, atol=atol)


@pytest.mark.parametrize("seed", [0, 7])
def test_random_crop_flip(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.RandomCrop(8), lambda: TT.RandomCrop(8), e, t, seed)
    _seeded_pair(lambda: ET.RandomCrop((9, 20), padding=2, pad_if_needed=True, padding_mode="reflect"),
                 lambda: TT.RandomCrop((9, 20), padding=2, pad_if_needed=True, padding_mode="reflect"),
                 e, t, seed)
    _seeded_pair(lambda: ET.RandomCrop(16, pad_if_needed=True, fill=1),
                 lambda: TT.RandomCrop(16, pad_if_needed=True, fill=1), PIL_RGB, PIL_RGB, seed)
    _seeded_pair(lambda: ET.RandomHorizontalFlip(), lambda: TT.RandomHorizontalFlip(), e, t, seed, reps=8)
    _seeded_pair(lambda: ET.RandomVerticalFlip(0.3), lambda: TT.RandomVerticalFlip(0.3), e, t, seed, reps=8)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_resized_crop(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.RandomResizedCrop(6), lambda: TT.RandomResizedCrop(6), e, t, seed, atol=1e-4)
    _seeded_pair(lambda: ET.RandomResizedCrop((5, 8), scale=(0.5, 1.0), ratio=(0.2, 0.3)),
                 lambda: TT.RandomResizedCrop((5, 8), scale=(0.5, 1.0), ratio=(0.2, 0.3)),
                 e, t, seed, atol=1e-4)
    _seeded_pair(lambda: ET.RandomResizedCrop(7), lambda: TT.RandomResizedCrop(7), PIL_RGB, PIL_RGB, seed)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ET.RandomResizedCrop.get_params(e, (0.08, 1.0), (0.75, 4 / 3)) == \
        TT.RandomResizedCrop.get_params(t, (0.08, 1.0), (0.75, 4 / 3))


@pytest.mark.parametrize("seed", [0, 5])
def test_color_jitter_grayscale(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.ColorJitter(0.4, 0.4, 0.4, 0.1), lambda: TT.ColorJitter(0.4, 0.4, 0.4, 0.1),
                 e, t, seed, atol=1e-5)
    _seeded_pair(lambda: ET.ColorJitter(brightness=(0.5, 1.5), hue=(-0.2, 0.3)),
                 lambda: TT.ColorJitter(brightness=(0.5, 1.5), hue=(-0.2, 0.3)), PIL_RGB, PIL_RGB, seed)
    _seeded_pair(lambda: ET.RandomGrayscale(0.5), lambda: TT.RandomGrayscale(0.5), e, t, seed, reps=6)
    assert ET.ColorJitter(0, 0, 0, 0).brightness is None
    with pytest.raises(ValueError):
        ET.ColorJitter(hue=0.7)


@pytest.mark.parametrize("seed", [0, 4])
def test_random_rotation_affine(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.RandomRotation(40), lambda: TT.RandomRotation(40), e, t, seed, atol=1e-4)
    _seeded_pair(lambda: ET.RandomRotation((10, 80), interpolation=EF.InterpolationMode.BILINEAR, expand=True, fill=0.3),
                 lambda: TT.RandomRotation((10, 80), interpolation=TF.InterpolationMode.BILINEAR, expand=True, fill=0.3),
                 e, t, seed, atol=1e-4)
    _seeded_pair(lambda: ET.RandomAffine(30, translate=(0.2, 0.1), scale=(0.7, 1.3), shear=(-5, 5, -3, 3)),
                 lambda: TT.RandomAffine(30, translate=(0.2, 0.1), scale=(0.7, 1.3), shear=(-5, 5, -3, 3)),
                 e, t, seed, atol=1e-4)
    _seeded_pair(lambda: ET.RandomAffine(20, translate=(0.1, 0.1), shear=10, fill=(5, 6, 7)),
                 lambda: TT.RandomAffine(20, translate=(0.1, 0.1), shear=10, fill=(5, 6, 7)), PIL_RGB, PIL_RGB, seed)
    ember.manual_seed(seed)
    torch.manual_seed(seed)
    assert ET.RandomAffine.get_params([-30, 30], (0.2, 0.1), (0.7, 1.3), [-5, 5, -3, 3], [17, 13]) == \
        TT.RandomAffine.get_params([-30, 30], (0.2, 0.1), (0.7, 1.3), [-5, 5, -3, 3], [17, 13])


@pytest.mark.parametrize("seed", [0, 3])
def test_gaussian_blur_erasing(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.GaussianBlur(5), lambda: TT.GaussianBlur(5), e, t, seed, atol=1e-5)
    _seeded_pair(lambda: ET.GaussianBlur((3, 5), sigma=(0.5, 3.0)), lambda: TT.GaussianBlur((3, 5), sigma=(0.5, 3.0)),
                 PIL_RGB, PIL_RGB, seed)
    _seeded_pair(lambda: ET.RandomErasing(p=0.7), lambda: TT.RandomErasing(p=0.7), e, t, seed, reps=6)
    _seeded_pair(lambda: ET.RandomErasing(p=1.0, value="random", scale=(0.1, 0.4)),
                 lambda: TT.RandomErasing(p=1.0, value="random", scale=(0.1, 0.4)), e, t, seed, reps=4)
    _seeded_pair(lambda: ET.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3)),
                 lambda: TT.RandomErasing(p=1.0, value=(0.1, 0.2, 0.3)), e, t, seed, reps=4)


@pytest.mark.parametrize("seed", [0, 11])
def test_random_apply_choice_order_compose(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.RandomApply([ET.ColorJitter(0.5), ET.RandomHorizontalFlip(1.0)], p=0.5),
                 lambda: TT.RandomApply([TT.ColorJitter(0.5), TT.RandomHorizontalFlip(1.0)], p=0.5),
                 e, t, seed, reps=12)
    _seeded_pair(lambda: ET.RandomChoice([ET.Lambda(lambda x: x * 2), ET.RandomVerticalFlip(1.0), ET.Grayscale(3)]),
                 lambda: TT.RandomChoice([TT.Lambda(lambda x: x * 2), TT.RandomVerticalFlip(1.0), TT.Grayscale(3)]),
                 e, t, seed, reps=6)
    _seeded_pair(lambda: ET.RandomOrder([ET.Lambda(lambda x: x * 2), ET.Lambda(lambda x: x + 1), ET.CenterCrop(9)]),
                 lambda: TT.RandomOrder([TT.Lambda(lambda x: x * 2), TT.Lambda(lambda x: x + 1), TT.CenterCrop(9)]),
                 e, t, seed, reps=6)

    def pipeline(T):
        return T.Compose([T.RandomResizedCrop(10), T.RandomHorizontalFlip(), T.ColorJitter(0.3, 0.3, 0.3, 0.05),
                          T.ToTensor(), T.Normalize([0.5, 0.4, 0.3], [0.2, 0.3, 0.25]), T.RandomErasing()])
    _seeded_pair(lambda: pipeline(ET), lambda: pipeline(TT), PIL_RGB, PIL_RGB, seed, reps=3, atol=1e-5)


def test_tensor_pipeline_grad():
    """A tensor pipeline on an autograd tensor: same output and same input gradient."""
    e, t = pair(IMG_F)
    e.requires_grad_(True)
    t.requires_grad_(True)

    def pipeline(T, F):
        return T.Compose([T.Resize(20), T.CenterCrop(16), T.RandomRotation(15, interpolation=F.InterpolationMode.BILINEAR),
                          T.GaussianBlur(3), T.ColorJitter(0.2, 0.2, 0.2), T.Normalize([0.5] * 3, [0.25] * 3)])
    ember.manual_seed(9)
    torch.manual_seed(9)
    eo, to = pipeline(ET, EF)(e), pipeline(TT, TF)(t)
    close(eo, to, atol=1e-4)
    eo.pow(2).sum().backward()
    to.pow(2).sum().backward()
    close(e.grad, t.grad, atol=1e-3, rtol=1e-3)


def test_batched_leading_dims():
    a = RNG.random((2, 2, 3, 9, 10)).astype(np.float32)
    e, t = pair(a)
    close(EF.rotate(e, 33.0), TF.rotate(t.reshape(4, 3, 9, 10), 33.0).reshape(2, 2, 3, 9, 10), atol=1e-5)
    close(EF.gaussian_blur(e, 3), TF.gaussian_blur(t.reshape(4, 3, 9, 10), 3).reshape(2, 2, 3, 9, 10))
    close(EF.adjust_hue(e, 0.1), TF.adjust_hue(t, 0.1), atol=1e-5)
    close(EF.pad(e, 2, padding_mode="reflect"), TF.pad(t.reshape(4, 3, 9, 10), 2, padding_mode="reflect").reshape(2, 2, 3, 13, 14))


def test_interpolation_int_and_module_types():
    e, t = pair(IMG_F)
    close(EF.resize(e, 5, interpolation=EF.InterpolationMode.NEAREST), TF.resize(t, 5, interpolation=TF.InterpolationMode.NEAREST))
    assert isinstance(ET.RandomCrop(3), ember.nn.Module)
    assert ET.Resize(5, interpolation=3).interpolation is EF.InterpolationMode.BICUBIC
    with pytest.raises(TypeError):
        EF.hflip(np.zeros((3, 4, 4)))


# ----------------------------------------------------------------------------- perspective / posterize / autocontrast / equalize
PERSP = ([[0, 0], [16, 0], [16, 12], [0, 12]], [[2, 1], [14, 0], [15, 11], [1, 10]])


@pytest.mark.parametrize("interp", ["nearest", "bilinear"])
@pytest.mark.parametrize("fill", [None, 0.5])
def test_perspective(interp, fill):
    for arr in (IMG_F, IMG_U8):
        e, t = pair(arr)
        close(EF.perspective(e, *PERSP, EF.InterpolationMode(interp), fill),
              TF.perspective(t, *PERSP, TF.InterpolationMode(interp), fill),
              atol=1 if arr.dtype == np.uint8 else 1e-4)
    close(EF.perspective(PIL_RGB, *PERSP, EF.InterpolationMode(interp)),
          TF.perspective(PIL_RGB, *PERSP, TF.InterpolationMode(interp)))


@pytest.mark.parametrize("seed", [0, 2])
def test_random_perspective_posterize_autocontrast_equalize(seed):
    e, t = pair(IMG_F)
    _seeded_pair(lambda: ET.RandomPerspective(0.6, p=0.7), lambda: TT.RandomPerspective(0.6, p=0.7),
                 e, t, seed, reps=4, atol=1e-4)
    _seeded_pair(lambda: ET.RandomPerspective(), lambda: TT.RandomPerspective(), PIL_RGB, PIL_RGB, seed)
    u_e, u_t = pair(IMG_U8)
    _seeded_pair(lambda: ET.RandomPosterize(3), lambda: TT.RandomPosterize(3), u_e, u_t, seed, reps=4)
    _seeded_pair(lambda: ET.RandomAutocontrast(), lambda: TT.RandomAutocontrast(), e, t, seed, reps=4)
    _seeded_pair(lambda: ET.RandomEqualize(), lambda: TT.RandomEqualize(), u_e, u_t, seed, reps=4)


def test_posterize_autocontrast_equalize():
    low = (IMG_U8 // 3 + 40).astype(np.uint8)
    const = np.concatenate([IMG_U8[:2], np.full((1, 13, 17), 9, np.uint8)])
    for arr in (IMG_U8, low, const, RNG.integers(0, 256, (2, 3, 5, 6), dtype=np.uint8)):
        e, t = pair(arr)
        for bits in (1, 4, 8):
            close(EF.posterize(e, bits), TF.posterize(t, bits))
        close(EF.autocontrast(e), TF.autocontrast(t))
        close(EF.equalize(e), TF.equalize(t))
    e, t = pair(IMG_F * 0.5 + 0.2)
    close(EF.autocontrast(e), TF.autocontrast(t))
    for fn in ("posterize", "autocontrast", "equalize"):
        args = (3,) if fn == "posterize" else ()
        close(getattr(EF, fn)(PIL_RGB, *args), getattr(TF, fn)(PIL_RGB, *args))
    with pytest.raises(TypeError):
        EF.posterize(e, 3)
