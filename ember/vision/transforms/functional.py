"""torchvision.transforms.functional on PIL images and ember tensors (..., C, H, W).

Each op routes through ``_route``: PIL images go to Pillow (imported lazily), tensors to ember
ops, so tensor results keep their autograd history. The geometric ops (affine, rotate,
perspective) share one path: map each output pixel centre back into the input and
``grid_sample`` there."""
import numbers
from enum import Enum

import numpy as np

import ember
from .._pil import pil as _pil, pil_module as _pil_module, is_pil_image as _is_pil_image
from . import _functional_tensor as _FT


# members named after their values: NEAREST = "nearest", NEAREST_EXACT = "nearest-exact", ...
InterpolationMode = Enum("InterpolationMode", [
    (value.upper().replace("-", "_"), value)
    for value in ("nearest", "nearest-exact", "bilinear", "bicubic", "box", "hamming", "lanczos")
], module=__name__)


# Pillow's resampling filter codes
pil_modes_mapping = {
    InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BILINEAR: 2, InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5, InterpolationMode.LANCZOS: 1,
}
_MODE_OF_PIL_CODE = {code: mode for mode, code in reversed(pil_modes_mapping.items())}


def _interpolation_modes_from_int(i):
    return _MODE_OF_PIL_CODE[i]


def _as_mode(interpolation):
    """An InterpolationMode from a mode, its value string or a Pillow filter code."""
    if isinstance(interpolation, InterpolationMode):
        return interpolation
    if isinstance(interpolation, str):
        return InterpolationMode(interpolation)
    if isinstance(interpolation, int):
        return _MODE_OF_PIL_CODE[interpolation]
    raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding "
                    "Pillow integer constant")


def _is_tensor(x):
    return isinstance(x, ember.Tensor)


def _require(ok, error, message):
    if not ok:
        raise error(message)


def _route(img, on_pil, on_tensor):
    """The one PIL-vs-tensor switch: ``on_pil(img)`` or ``on_tensor(img)``."""
    if _is_tensor(img):
        _require(img.dim() >= 2, TypeError, "Tensor is not a torch image.")
        return on_tensor(img)
    if _is_pil_image(img):
        return on_pil(img)
    raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def _pil_op(module, name, *args):
    """A Pillow ``module.name(img).enhance(*args)`` (ImageEnhance) or ``module.name(img, *args)``."""
    def run(img):
        fn = getattr(_pil_module(module), name)
        return fn(img).enhance(*args) if module == "ImageEnhance" else fn(img, *args)
    return run


# --------------------------------------------------------------------------- dimensions
def get_dimensions(img):
    """[channels, height, width]."""
    if _is_tensor(img):
        if img.dim() < 2:
            raise TypeError("Tensor is not a torch image.")
        return [img.shape[-3] if img.dim() > 2 else 1, *img.shape[-2:]]
    if _is_pil_image(img):
        return [len(img.getbands()), img.height, img.width]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img):
    """[width, height]."""
    return get_dimensions(img)[:0:-1]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


# --------------------------------------------------------------------------- conversions
def _hwc_to_tensor(arr):
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(np.moveaxis(arr, -1, 0)))


# numpy dtypes for the PIL modes that are not 8-bit
_PIL_WIDE_MODES = {"I": np.int32, "I;16": np.int16, "F": np.float32}


def to_tensor(pic):
    """PIL image or HWC ndarray -> CHW tensor; 8-bit data becomes floats in [0, 1]."""
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic
    elif _is_pil_image(pic):
        arr = np.array(pic, _PIL_WIDE_MODES.get(pic.mode, np.uint8))
        if pic.mode == "1":
            arr = arr * np.uint8(255)
        arr = arr.reshape(pic.height, pic.width, -1)
    else:
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    img = _hwc_to_tensor(arr)
    if img.dtype != ember.uint8:
        return img
    return img.to(ember.get_default_dtype()).div(255)


def pil_to_tensor(pic):
    """PIL image -> CHW tensor with the image's own values and dtype."""
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic)
    if arr.dtype == np.uint16 and not hasattr(ember, "uint16"):
        arr = arr.astype(np.int32)          # ember has no uint16: widen (torchvision gives uint16)
    return _hwc_to_tensor(arr)


# single-band PIL mode for each array dtype; permitted modes for 2-4 bands (first: the default)
_ONE_BAND_MODE = {np.dtype(np.uint8): "L", np.dtype(np.int16): "I;16",
                  np.dtype(np.uint16): "I;16", np.dtype(np.int32): "I",
                  np.dtype(np.float32): "F"}
_BAND_MODES = {2: ["LA"], 3: ["RGB", "YCbCr", "HSV"], 4: ["RGBA", "CMYK", "RGBX"]}


def _pil_mode(arr, mode):
    bands = arr.shape[2]
    if bands == 1:
        expected = _ONE_BAND_MODE.get(arr.dtype)
        if mode not in (None, expected):
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {arr.dtype}. "
                             f"Should be {expected}")
        return expected
    permitted = _BAND_MODES[bands]
    if mode is None:
        return permitted[0] if arr.dtype == np.uint8 else None
    if mode not in permitted:
        raise ValueError(f"Only modes {permitted} are supported for {bands}D inputs")
    return mode


def to_pil_image(pic, mode=None):
    """CHW tensor or HWC ndarray -> PIL image (floats are scaled by 255 unless mode is 'F')."""
    Image = _pil()
    if _is_tensor(pic):
        if pic.dim() not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.dim()} dimensions.")
        arr = pic.detach().numpy()
        arr = np.moveaxis(arr, 0, -1) if arr.ndim == 3 else arr
    elif isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        arr = pic
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")
    arr = arr.reshape(*arr.shape[:2], -1)
    if arr.shape[2] > 4:
        raise ValueError(f"pic should not have > 4 channels. Got {arr.shape[2]} channels.")
    if arr.dtype.kind == "f" and mode != "F":
        arr = (arr * 255).astype(np.uint8)
    mode = _pil_mode(arr, mode)
    if mode is None:
        raise TypeError(f"Input type {arr.dtype} is not supported")
    arr = np.ascontiguousarray(arr)
    return Image.frombuffer(mode, (arr.shape[1], arr.shape[0]), arr.tobytes(), "raw", mode, 0, 1)


def convert_image_dtype(image, dtype=ember.float32):
    """Rescale values between dtypes: floats span [0, 1], integers 0 .. 2**bits - 1."""
    if not _is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    return _FT.convert_image_dtype(image, dtype)


# --------------------------------------------------------------------------- normalize
def normalize(tensor, mean, std, inplace=False):
    """(tensor - mean) / std per channel."""
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    _require(tensor.dim() >= 2, TypeError, "Tensor is not a torch image.")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tuple(tensor.shape)}")
    dtype = tensor.dtype
    mean, std = (ember.as_tensor(v, dtype=dtype) for v in (mean, std))
    if bool((std == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to "
                         "division by zero.")
    mean, std = (v.view(-1, 1, 1) if v.dim() == 1 else v for v in (mean, std))
    return tensor.sub_(mean).div_(std) if inplace else (tensor - mean) / std


# --------------------------------------------------------------------------- resize
def _resized_hw(height, width, size, max_size):
    """Output [h, w]: ``size`` [h, w] exactly, or [s]: the short side s (long side scaled, capped
    at ``max_size``), or nothing: the long side ``max_size``."""
    if size and len(size) == 2:
        if max_size is not None:
            raise ValueError("max_size should only be passed if size specifies the length of "
                             "the smaller edge, i.e. size should be an int or a sequence of "
                             "length 1 in torchscript mode.")
        return list(size)
    short, long = sorted((height, width))
    if size:
        if max_size is not None and max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                             f"requested size for the smaller edge size = {size}")
        out_short, out_long = size[0], int(size[0] * long / short)
        if max_size is not None and out_long > max_size:
            out_short, out_long = int(max_size * out_short / out_long), max_size
    elif max_size is None:
        raise ValueError("max_size must be an integer when size is None")
    else:
        out_short, out_long = int(max_size * short / long), max_size
    return [out_long, out_short] if width <= height else [out_short, out_long]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    interpolation = _as_mode(interpolation)
    if isinstance(size, numbers.Integral):
        size = [int(size)]
    elif isinstance(size, (list, tuple)):
        _require(len(size) in (1, 2), ValueError, f"Size must be an int or a 1 or 2 element "
                 f"tuple/list, not a {len(size)} element tuple/list")
        size = list(size)
    elif size is not None:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _, height, width = get_dimensions(img)
    out_hw = _resized_hw(height, width, size, max_size)
    if out_hw == [height, width]:
        return img
    return _route(img, lambda im: im.resize(out_hw[::-1], pil_modes_mapping[interpolation]),
                  lambda t: _FT.resize(t, out_hw, interpolation.value, None, antialias))


# --------------------------------------------------------------------------- crops & flips
def crop(img, top, left, height, width):
    """The box at (top, left); parts outside a tensor image are zeros."""
    return _route(img, lambda im: im.crop((left, top, left + width, top + height)),
                  lambda t: _FT.crop(t, top, left, height, width))


def _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size."):
    """(h, w) from a number or a 1- or 2-element sequence."""
    sides = (int(size),) if isinstance(size, numbers.Number) else tuple(size)
    sides = sides * 2 if len(sides) == 1 else sides
    _require(len(sides) == 2, ValueError, error_msg)
    return sides


def center_crop(img, output_size):
    out_h, out_w = _setup_size(output_size)
    _, h, w = get_dimensions(img)
    if out_h > h or out_w > w:                    # grow with zeros to at least the crop size
        grow_h, grow_w = max(out_h - h, 0), max(out_w - w, 0)
        img = pad(img, [grow_w // 2, grow_h // 2, (grow_w + 1) // 2, (grow_h + 1) // 2])
        _, h, w = get_dimensions(img)
    return crop(img, int(round((h - out_h) / 2)), int(round((w - out_w) / 2)), out_h, out_w)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    return resize(crop(img, top, left, height, width), size, interpolation, antialias=antialias)


def hflip(img):
    return _route(img, lambda im: im.transpose(_pil().FLIP_LEFT_RIGHT), _FT.hflip)


def vflip(img):
    return _route(img, lambda im: im.transpose(_pil().FLIP_TOP_BOTTOM), _FT.vflip)


def five_crop(img, size):
    """Top-left, top-right, bottom-left, bottom-right and centre crops."""
    out_h, out_w = _setup_size(size)
    _, h, w = get_dimensions(img)
    if out_h > h or out_w > w:
        raise ValueError(f"Requested crop size {(out_h, out_w)} is bigger than input size {(h, w)}")
    corners = [(0, 0), (0, w - out_w), (h - out_h, 0), (h - out_h, w - out_w)]
    return (*(crop(img, y, x, out_h, out_w) for y, x in corners),
            center_crop(img, [out_h, out_w]))


def ten_crop(img, size, vertical_flip=False):
    """five_crop of the image, then five_crop of its (horizontal or vertical) mirror."""
    mirror = vflip(img) if vertical_flip else hflip(img)
    return five_crop(img, size) + five_crop(mirror, size)


# --------------------------------------------------------------------------- pad
def _check_pad_args(padding, fill, padding_mode):
    many = isinstance(padding, (tuple, list))
    _require(many or isinstance(padding, numbers.Number), TypeError,
             "Got inappropriate padding arg")
    _require(fill is None or isinstance(fill, (numbers.Number, str, tuple, list)), TypeError,
             "Got inappropriate fill arg")
    _require(padding_mode in ("constant", "edge", "reflect", "symmetric"), ValueError,
             "Padding mode should be either constant, edge, reflect or symmetric")
    _require(not many or len(padding) in (1, 2, 4), ValueError,
             "Padding must be an int or a 1, 2, or 4 element tuple, not a "
             f"{len(padding) if many else 1} element tuple")


def pad(img, padding, fill=0, padding_mode="constant"):
    """Pad by (left, top, right, bottom); negative amounts crop instead."""
    _check_pad_args(padding, fill, padding_mode)
    amounts = [int(padding)] if isinstance(padding, numbers.Number) else list(padding)
    ltrb = (amounts * 4)[:4] if len(amounts) < 4 else amounts
    _, h, w = get_dimensions(img)
    cut = [max(-v, 0) for v in ltrb]
    if any(cut):
        img = crop(img, cut[1], cut[0], h - cut[1] - cut[3], w - cut[0] - cut[2])
    ltrb = [max(v, 0) for v in ltrb]
    return _route(img, lambda im: _pad_pil(im, ltrb, fill, padding_mode),
                  lambda t: _pad_tensor(t, ltrb, 0 if fill is None else fill, padding_mode))


def _pad_tensor(img, ltrb, fill, padding_mode):
    left, top, right, bottom = ltrb
    _require(not isinstance(fill, (tuple, list)), TypeError, "Got inappropriate fill arg")
    return _FT.pad(img, ltrb, float(fill), padding_mode)


def _pil_fill(fill, img):
    """A Pillow colour for ``img`` from a number or a per-band sequence (ints unless mode 'F')."""
    bands = len(img.getbands())
    values = list(fill) if isinstance(fill, (list, tuple)) else [0 if fill is None else fill]
    if len(values) == 1:
        values = values * bands
    elif len(values) != bands:
        raise ValueError("The number of elements in 'fill' does not match the number of "
                         f"channels of the image ({len(values)} != {bands})")
    if img.mode != "F":
        values = [int(v) for v in values]
    return values[0] if bands == 1 else tuple(values)


def _pad_pil(img, ltrb, fill, padding_mode):
    Image = _pil()
    left, top, right, bottom = ltrb
    if padding_mode == "constant":
        out = Image.new(img.mode, (img.width + left + right, img.height + top + bottom),
                        _pil_fill(fill, img))
        out.paste(img, (left, top))
    else:
        arr = np.asarray(img)
        widths = [(top, bottom), (left, right), (0, 0)][:arr.ndim]
        out = Image.fromarray(np.pad(arr, widths, mode=padding_mode))
    if img.mode == "P":                    # padded indices keep their palette
        out.putpalette(img.getpalette())
    return out


# --------------------------------------------------------------------------- geometry
def _check_fill(fill, channels):
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    fill = [float(v) for v in fill]
    if len(fill) not in (1, channels):
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {channels})")
    return fill


def _fill_list(fill, channels):
    """The fill as ``_functional_tensor`` takes it: None or a list of floats."""
    fill = _check_fill(fill, channels)
    return None if fill is None else fill if isinstance(fill, list) else [float(fill)]


def _tensor_mode(interpolation):
    if interpolation.value not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{interpolation.value}' is unsupported with Tensor input")
    return interpolation.value


def _check_angle_center(angle, center):
    _require(isinstance(angle, (int, float)), TypeError, "Argument angle should be int or float")
    _require(center is None or isinstance(center, (list, tuple)), TypeError,
             "Argument center should be a sequence")


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    """Counter-clockwise rotation by ``angle`` degrees about ``center``."""
    _check_angle_center(angle, center)
    interpolation = _as_mode(interpolation)

    def on_pil(im):
        return im.rotate(angle, pil_modes_mapping[interpolation], expand, center,
                         fillcolor=_pil_fill(fill, im))

    def on_tensor(t):
        return _FT.rotate(t, float(angle), _tensor_mode(interpolation), expand,
                          None if center is None else [float(c) for c in center],
                          _fill_list(fill, t.shape[-3]))
    return _route(img, on_pil, on_tensor)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    """Rotate by ``angle``, scale, shear (degrees, along x then y) and translate, about
    ``center`` (default: the image centre)."""
    _check_angle_center(angle, center)
    _require(isinstance(translate, (list, tuple)), TypeError,
             "Argument translate should be a sequence")
    _require(len(translate) == 2, ValueError, "Argument translate should be a sequence of length 2")
    _require(scale > 0.0, ValueError, "Argument scale should be positive")
    _require(isinstance(shear, (numbers.Number, list, tuple)), TypeError,
             "Shear should be either a single value or a sequence of two values")
    shear = [shear, 0.0] if isinstance(shear, numbers.Number) else list(shear)
    shear = shear * 2 if len(shear) == 1 else shear
    _require(len(shear) == 2, ValueError,
             f"Shear should be a sequence containing two values. Got {shear}")
    interpolation = _as_mode(interpolation)
    angle, translate = float(angle), [float(t) for t in translate]

    def on_pil(im):
        pivot = [im.width * 0.5, im.height * 0.5] if center is None else center
        matrix = _FT.inverse_affine([float(p) for p in pivot], angle, translate, float(scale),
                                    [float(v) for v in shear])
        return im.transform(im.size, _pil().AFFINE, matrix,
                            pil_modes_mapping[interpolation], fillcolor=_pil_fill(fill, im))

    def on_tensor(t):
        return _FT.affine(t, angle, translate, float(scale), [float(v) for v in shear],
                          _tensor_mode(interpolation), _fill_list(fill, t.shape[-3]),
                          None if center is None else [float(c) for c in center])
    return _route(img, on_pil, on_tensor)


def _get_perspective_coeffs(startpoints, endpoints):
    return _FT.perspective_coeffs([list(p) for p in startpoints], [list(p) for p in endpoints])


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp so that the four ``startpoints`` land on the four ``endpoints``."""
    interpolation = _as_mode(interpolation)
    coeffs = _get_perspective_coeffs(startpoints, endpoints)

    def on_pil(im):
        return im.transform(im.size, _pil().PERSPECTIVE, coeffs, pil_modes_mapping[interpolation],
                            fillcolor=_pil_fill(fill, im))

    def on_tensor(t):
        return _FT.perspective(t, [[int(v) for v in p] for p in startpoints],
                               [[int(v) for v in p] for p in endpoints],
                               _tensor_mode(interpolation), _fill_list(fill, t.shape[-3]))
    return _route(img, on_pil, on_tensor)


# --------------------------------------------------------------------------- colour


def rgb_to_grayscale(img, num_output_channels=1):
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    if _is_tensor(img):             # (its own rank check and text)
        return _FT.rgb_to_grayscale(img, num_output_channels)
    return _route(img, lambda im: to_grayscale(im, num_output_channels),
                  lambda t: _FT.rgb_to_grayscale(t, num_output_channels))


def to_grayscale(img, num_output_channels=1):
    if _is_tensor(img):
        return rgb_to_grayscale(img, num_output_channels)
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    gray = img.convert("L")
    return gray if num_output_channels == 1 else gray.convert("RGB")


def _nonnegative(value, name):
    if value < 0:
        raise ValueError(f"{name} ({value}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    _nonnegative(brightness_factor, "brightness_factor")
    return _route(img, _pil_op("ImageEnhance", "Brightness", brightness_factor),
                  lambda t: _FT.adjust_brightness(t, float(brightness_factor)))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level of the image."""
    _nonnegative(contrast_factor, "contrast_factor")

    def on_tensor(t):
        return _FT.adjust_contrast(t, float(contrast_factor))
    return _route(img, _pil_op("ImageEnhance", "Contrast", contrast_factor), on_tensor)


def adjust_saturation(img, saturation_factor):
    """Blend with the greyscale image."""
    _nonnegative(saturation_factor, "saturation_factor")

    def on_tensor(t):
        return _FT.adjust_saturation(t, float(saturation_factor))
    return _route(img, _pil_op("ImageEnhance", "Color", saturation_factor), on_tensor)


def adjust_hue(img, hue_factor):
    """Rotate the hue by ``hue_factor`` turns (in [-0.5, 0.5])."""
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")

    def on_pil(im):
        if im.mode in ("L", "1", "I", "F"):
            return im
        Image = _pil()
        h, s, v = im.convert("HSV").split()
        shifted = (np.asarray(h, dtype=np.int64) + int(hue_factor * 255)) % 256
        hue = Image.fromarray(shifted.astype(np.uint8), "L")
        return Image.merge("HSV", (hue, s, v)).convert(im.mode)

    def on_tensor(t):
        return _FT.adjust_hue(t, float(hue_factor))
    return _route(img, on_pil, on_tensor)


def adjust_gamma(img, gamma, gain=1):
    """gain * img ** gamma on [0, 1] intensities."""
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")

    def on_pil(im):
        levels = np.arange(256) / 255.0
        table = ((256 - 1e-3) * gain * levels ** gamma).astype(np.int64).tolist()
        return im.convert("RGB").point(table * 3).convert(im.mode)

    def on_tensor(t):
        return _FT.adjust_gamma(t, float(gamma), float(gain))
    return _route(img, on_pil, on_tensor)


def invert(img):
    return _route(img, _pil_op("ImageOps", "invert"), _FT.invert)


def solarize(img, threshold):
    """Invert the pixels at or above ``threshold``."""
    return _route(img, _pil_op("ImageOps", "solarize", threshold),
                  lambda t: _FT.solarize(t, float(threshold)))


def adjust_sharpness(img, sharpness_factor):
    """Blend with a smoothed copy (3x3 kernel, centre weight 5, borders kept)."""
    _nonnegative(sharpness_factor, "sharpness_factor")

    return _route(img, _pil_op("ImageEnhance", "Sharpness", sharpness_factor),
                  lambda t: _FT.adjust_sharpness(t, float(sharpness_factor)))


# --------------------------------------------------------------------------- blur / erase
def _pair(value):
    return [value, value] if isinstance(value, (int, float)) else list(value)


def gaussian_blur(img, kernel_size, sigma=None):
    """Separable Gaussian blur with reflect padding; sigma defaults to 0.3 * ((k - 1) / 2 - 1) + 0.8."""
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    sizes = _pair(kernel_size)
    if len(sizes) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(sizes)}")
    if any(k % 2 == 0 or k < 0 for k in sizes):
        raise ValueError(f"kernel_size should have odd and positive integers. Got {sizes}")
    sigmas = [0.15 * k + 0.35 for k in sizes] if sigma is None else _pair(sigma)
    sigmas = sigmas * 2 if len(sigmas) == 1 else [float(s) for s in sigmas]
    if len(sigmas) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigmas)}")
    if any(s <= 0.0 for s in sigmas):
        raise ValueError(f"sigma should have positive values. Got {sigmas}")

    def on_tensor(t):
        return _FT.gaussian_blur(t, sizes, sigmas)
    return _route(img, lambda im: to_pil_image(on_tensor(pil_to_tensor(im)), mode=im.mode),
                  on_tensor)


def elastic_transform(img, displacement, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Resample at the pixel centres moved by ``displacement`` (1, H, W, 2), in [-1, 1] units."""
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    interpolation = _as_mode(interpolation)
    _, h, w = get_dimensions(img)
    if tuple(displacement.shape) != (1, h, w, 2):
        raise ValueError(f"Argument displacement shape should be (1, {h}, {w}, 2), but given "
                         f"{list(displacement.shape)}")

    def on_tensor(t):
        return _FT.elastic_transform(t, displacement, _tensor_mode(interpolation),
                                     _fill_list(fill, t.shape[-3]))
    return _route(img, lambda im: to_pil_image(on_tensor(pil_to_tensor(im)), mode=im.mode), on_tensor)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the (h, w) box at (i, j) to ``v``."""
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    _require(img.dim() >= 2, TypeError, "Tensor is not a torch image.")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


# --------------------------------------------------------------------------- posterize / equalize
def posterize(img, bits):
    """Keep the ``bits`` highest bits of each 8-bit value."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")

    def on_tensor(t):
        return _FT.posterize(t, int(bits))
    return _route(img, _pil_op("ImageOps", "posterize", bits), on_tensor)


def autocontrast(img):
    """Stretch each channel linearly so its minimum maps to 0 and its maximum to the top."""
    return _route(img, _pil_op("ImageOps", "autocontrast"), _FT.autocontrast)


def equalize(img):
    return _route(img, _pil_op("ImageOps", "equalize"), _FT.equalize)
