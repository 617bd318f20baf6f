"""torchvision.transforms.functional on PIL images and ember tensors (..., C, H, W).

Each op routes through ``_route``: PIL images go to Pillow (imported lazily), tensors to ember
ops, so tensor results keep their autograd history. The geometric ops (affine, rotate,
perspective) share one path: map each output pixel centre back into the input and
``grid_sample`` there."""
import math
import numbers
from enum import Enum

import numpy as np

import ember
from ember.nn import functional as _F
from .._pil import pil as _pil, pil_module as _pil_module, is_pil_image as _is_pil_image


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


# Integer image dtypes hold values 0 .. 2**bits - 1; floating images hold 0 .. 1.
_VALUE_BITS = {ember.uint8: 8, ember.int8: 7, ember.int16: 15, ember.int32: 31, ember.int64: 63,
               ember.bool: 1}
if hasattr(ember, "uint16"):
    _VALUE_BITS[ember.uint16] = 16


def _max_value(dtype):
    return 1.0 if dtype.is_floating_point else 2 ** _VALUE_BITS[dtype] - 1


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
    source = image.dtype
    if source == dtype:
        return image
    if source.is_floating_point and dtype.is_floating_point:
        return image.to(dtype)
    if source.is_floating_point:
        if _VALUE_BITS[dtype] > (24 if source == ember.float32 else 53) - 1:
            raise RuntimeError(f"The cast from {source} to {dtype} cannot be performed safely.")
        return image.mul(_max_value(dtype) + 0.999).to(dtype)    # [0, 1] -> 0 .. max
    if dtype.is_floating_point:
        return image.to(dtype) / float(_max_value(source))
    shift = _VALUE_BITS[dtype] - _VALUE_BITS[source]
    if shift < 0:
        return ember.div(image, 2 ** -shift, rounding_mode="floor").to(dtype)
    return image.to(dtype) * 2 ** shift


# --------------------------------------------------------------------------- batching helpers
def _float_batch(img, dtypes=(ember.float32, ember.float64)):
    """``img`` as an (N, C, H, W) batch of a dtype in ``dtypes``, and the function that gives a
    result back ``img``'s leading dims and dtype (rounding for integer images)."""
    lead, dtype = tuple(img.shape[:-3]), img.dtype
    batch = img.reshape(-1, *img.shape[-3:])
    if dtype not in dtypes:
        batch = batch.to(dtypes[0])

    def restore(out):
        out = out.reshape(*lead, *out.shape[-3:])
        if out.dtype == dtype:
            return out
        return (out if dtype.is_floating_point else ember.round(out)).to(dtype)
    return batch, restore


def _float_dtype(img):
    return img.dtype if img.is_floating_point() else ember.float32


# --------------------------------------------------------------------------- normalize
def normalize(tensor, mean, std, inplace=False):
    """(tensor - mean) / std per channel."""
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
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
        _require(len(size) <= 2, ValueError, "If size is a sequence, it should have 1 or 2 values")
        size = list(size)
    elif size is not None:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _, height, width = get_dimensions(img)
    out_hw = _resized_hw(height, width, size, max_size)
    if out_hw == [height, width]:
        return img
    return _route(img, lambda im: im.resize(out_hw[::-1], pil_modes_mapping[interpolation]),
                  lambda t: _resize_tensor(t, out_hw, interpolation.value, antialias))


def _resize_tensor(img, out_hw, mode, antialias):
    if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError("Tensor inputs support only nearest, nearest-exact, bilinear and "
                         f"bicubic interpolation, got {InterpolationMode(mode)}")
    smooth = mode in ("bilinear", "bicubic")
    batch, restore = _float_batch(img)
    out = _F.interpolate(batch, size=out_hw, mode=mode, align_corners=False if smooth else None,
                         antialias=bool(antialias) and smooth)
    if mode == "bicubic" and img.dtype == ember.uint8:
        out = out.clamp(min=0, max=255)           # cubic overshoot
    return restore(out)


# --------------------------------------------------------------------------- crops & flips
def crop(img, top, left, height, width):
    """The box at (top, left); parts outside a tensor image are zeros."""
    def tensor_crop(t):
        h, w = t.shape[-2:]
        outside = [max(-left, 0), max(-top, 0), max(left + width - w, 0), max(top + height - h, 0)]
        if any(outside):
            t = pad(t, outside)
        y, x = top + outside[1], left + outside[0]
        return t[..., y:y + height, x:x + width]
    return _route(img, lambda im: im.crop((left, top, left + width, top + height)), tensor_crop)


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
    return _route(img, lambda im: im.transpose(_pil().FLIP_LEFT_RIGHT), lambda t: t.flip(-1))


def vflip(img):
    return _route(img, lambda im: im.transpose(_pil().FLIP_TOP_BOTTOM), lambda t: t.flip(-2))


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


def _pad_index(n, before, after, mode):
    """Source indices along one axis for non-constant padding."""
    idx = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(idx, 0, n - 1)
    if mode == "reflect":
        if n == 1:
            return np.zeros_like(idx)
        period = 2 * (n - 1)
        m = np.mod(idx, period)
        return np.where(m >= n, period - m, m)
    period = 2 * n                                    # symmetric
    m = np.mod(idx, period)
    return np.where(m >= n, period - 1 - m, m)


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
    if not any(ltrb):
        return img
    if padding_mode == "constant":
        return _F.pad(img, [left, right, top, bottom], mode="constant", value=float(fill))
    h, w = img.shape[-2:]
    if padding_mode == "reflect" and (max(top, bottom) >= h or max(left, right) >= w):
        raise RuntimeError("Padding size should be less than the corresponding input dimension")
    rows = ember.from_numpy(_pad_index(h, top, bottom, padding_mode).astype(np.int64))
    cols = ember.from_numpy(_pad_index(w, left, right, padding_mode).astype(np.int64))
    return img.index_select(-2, rows).index_select(-1, cols)


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
def _inverse_affine(center, angle, translate, scale, shear):
    """2x3 matrix taking output positions to input positions for the map
    p -> center + translate + scale * R(angle) Sy(shear_y) Sx(shear_x) (p - center)."""
    rot, shear_x, shear_y = (math.radians(a) for a in (angle, *shear))
    rotation = np.array([[math.cos(rot), -math.sin(rot)], [math.sin(rot), math.cos(rot)]])
    slant_y = np.array([[1.0, 0.0], [-math.tan(shear_y), 1.0]])
    slant_x = np.array([[1.0, -math.tan(shear_x)], [0.0, 1.0]])
    (a, b), (c, d) = rotation @ slant_y @ slant_x          # determinant 1
    linear = np.array([[d, -b], [-c, a]]) / scale
    center = np.asarray(center, dtype=np.float64)
    offset = center - linear @ (center + np.asarray(translate, dtype=np.float64))
    return np.column_stack([linear, offset])


def _expanded_size(matrix, w, h):
    """(w, h) of the box holding the image's corners under ``matrix`` (centred coordinates);
    positions within 1e-4 of an integer count as that integer."""
    half = np.array([w, h], dtype=np.float32) * 0.5
    corners = np.array([[-1, -1], [-1, 1], [1, 1], [1, -1]], dtype=np.float32) * half
    m = matrix.astype(np.float32)
    ends = corners @ m[:, :2].T + m[:, 2] + half
    snapped = np.trunc(ends / np.float32(1e-4)) * np.float32(1e-4)
    size = np.ceil(snapped.max(axis=0)) - np.floor(snapped.min(axis=0))
    return int(size[0]), int(size[1])


def _check_fill(fill, channels):
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    fill = [float(v) for v in fill]
    if len(fill) not in (1, channels):
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {channels})")
    return fill


def _warp(img, grid, interpolation, fill):
    """Sample ``img`` at ``grid`` (out_h, out_w, 2) positions in [-1, 1] units (numpy, in the
    image's float dtype); outside the image: zeros, or ``fill`` blended by coverage."""
    mode = interpolation.value
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{mode}' is unsupported with Tensor input")
    fill = _check_fill(fill, img.shape[-3])
    batch, restore = _float_batch(img, (_float_dtype(img),))
    n, _, h, w = batch.shape
    grid = ember.from_numpy(np.ascontiguousarray(grid)).expand(n, *grid.shape)
    if fill is None:
        return restore(_F.grid_sample(batch, grid, mode=mode, padding_mode="zeros",
                                      align_corners=False))
    ones = ember.ones((n, 1, h, w), dtype=batch.dtype)
    sampled = _F.grid_sample(ember.cat((batch, ones), dim=1), grid, mode=mode,
                             padding_mode="zeros", align_corners=False)
    values, coverage = sampled[:, :-1], sampled[:, -1:]
    fill = ember.tensor(fill if isinstance(fill, list) else [float(fill)],
                        dtype=batch.dtype).view(1, -1, 1, 1)
    if mode == "nearest":
        out = ember.where(coverage < 0.5, fill.expand_as(values), values)
    else:
        out = values * coverage + fill * (1.0 - coverage)
    return restore(out)


def _grid_dtype(img):
    return np.float64 if img.dtype == ember.float64 else np.float32


def _pixel_centres(out_w, out_h, dtype, centred):
    """(out_h, out_w, 3) homogeneous pixel-centre positions, from the image centre if
    ``centred`` else from the top-left corner."""
    shift = 0.5 - 0.5 * np.array([out_w, out_h]) if centred else np.array([0.5, 0.5])
    xs = np.linspace(shift[0], shift[0] + out_w - 1, out_w, dtype=dtype)
    ys = np.linspace(shift[1], shift[1] + out_h - 1, out_h, dtype=dtype)
    ones = np.ones((out_h, out_w), dtype=dtype)
    return np.stack([np.broadcast_to(xs, ones.shape), np.broadcast_to(ys[:, None], ones.shape),
                     ones], axis=-1)


def _warp_affine(img, matrix, interpolation, fill, expand=False):
    """``matrix`` maps output positions to input positions, both measured from their image's
    centre; it is scaled to [-1, 1] units and applied to every output pixel centre."""
    _, h, w = get_dimensions(img)
    out_w, out_h = _expanded_size(matrix, w, h) if expand else (w, h)
    dtype = _grid_dtype(img)
    to_unit = (matrix.astype(dtype) / np.array([[w * 0.5], [h * 0.5]], dtype=dtype)).T
    points = _pixel_centres(out_w, out_h, dtype, centred=True).reshape(-1, 3)
    return _warp(img, (points @ to_unit).reshape(out_h, out_w, 2), interpolation, fill)


def _centre_offset(center, img):
    """``center`` in pixels measured from the image centre (default: the centre itself)."""
    if center is None:
        return [0.0, 0.0]
    return [float(c) - s * 0.5 for c, s in zip(center, get_image_size(img))]


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
        matrix = _inverse_affine(_centre_offset(center, t), -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
        return _warp_affine(t, matrix, interpolation, fill, expand)
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
        matrix = _inverse_affine(pivot, angle, translate, scale, shear)
        return im.transform(im.size, _pil().AFFINE, matrix.ravel().tolist(),
                            pil_modes_mapping[interpolation], fillcolor=_pil_fill(fill, im))

    def on_tensor(t):
        matrix = _inverse_affine(_centre_offset(center, t), angle, translate, scale, shear)
        return _warp_affine(t, matrix, interpolation, fill)
    return _route(img, on_pil, on_tensor)


def _get_perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients (a..h) with start = ((a x + b y + c), (d x + e y + f)) / (g x + h y + 1)
    for every (x, y) in ``endpoints``: Pillow's PERSPECTIVE data."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints "
                         f"and {len(endpoints)} endpoints.")
    x, y = np.asarray(endpoints, dtype=np.float64).T
    u, v = np.asarray(startpoints, dtype=np.float64).T
    one, zero = np.ones(4), np.zeros(4)
    rows_u = np.stack([x, y, one, zero, zero, zero, -u * x, -u * y], axis=1)
    rows_v = np.stack([zero, zero, zero, x, y, one, -v * x, -v * y], axis=1)
    system = np.stack([rows_u, rows_v], axis=1).reshape(8, 8)
    targets = np.stack([u, v], axis=1).reshape(8)
    coeffs = np.linalg.lstsq(system, targets, rcond=None)[0].astype(np.float32)
    return coeffs.tolist()


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    """Warp so that the four ``startpoints`` land on the four ``endpoints``."""
    interpolation = _as_mode(interpolation)
    coeffs = _get_perspective_coeffs(startpoints, endpoints)

    def on_pil(im):
        return im.transform(im.size, _pil().PERSPECTIVE, coeffs, pil_modes_mapping[interpolation],
                            fillcolor=_pil_fill(fill, im))

    def on_tensor(t):
        _, h, w = get_dimensions(t)
        dtype = _grid_dtype(t)
        a, b, c, d, e, f, g, k = coeffs
        to_unit = np.array([[a, d], [b, e], [c, f]], dtype=dtype) / np.array([0.5 * w, 0.5 * h],
                                                                             dtype=dtype)
        depth = np.array([[g, g], [k, k], [1.0, 1.0]], dtype=dtype)
        points = _pixel_centres(w, h, dtype, centred=False).reshape(-1, 3)
        grid = (points @ to_unit) / (points @ depth) - 1.0
        return _warp(t, grid.reshape(h, w, 2), interpolation, fill)
    return _route(img, on_pil, on_tensor)


# --------------------------------------------------------------------------- colour
_LUMA = (0.2989, 0.587, 0.114)      # ITU-R 601-2 weights of R, G, B


def _mix(img, other, weight):
    """weight * img + (1 - weight) * other, clamped to img's value range, in img's dtype."""
    weight = float(weight)
    out = img * weight + other * (1.0 - weight)
    return out.clamp(0, _max_value(img.dtype)).to(img.dtype)


def _channels(img):
    return get_dimensions(img)[0]


def rgb_to_grayscale(img, num_output_channels=1):
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    return _route(img, lambda im: to_grayscale(im, num_output_channels),
                  lambda t: _gray_tensor(t, num_output_channels))


def _gray_tensor(img, num_output_channels):
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.dim()}")
    channels = img.shape[-3]
    if channels not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {channels}")
    if channels == 1:
        gray = img.clone()
    else:
        weights = ember.tensor(_LUMA, dtype=_float_dtype(img)).view(3, 1, 1)
        gray = (img * weights).sum(dim=-3, keepdim=True).to(img.dtype)
    return gray.expand(img.shape) if num_output_channels == 3 else gray


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
                  lambda t: _mix(t, ember.zeros_like(t), brightness_factor))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level of the image."""
    _nonnegative(contrast_factor, "contrast_factor")

    def on_tensor(t):
        gray = _gray_tensor(t, 1) if _channels(t) == 3 else t
        mean = gray.to(_float_dtype(t)).mean(dim=(-3, -2, -1), keepdim=True)
        return _mix(t, mean, contrast_factor)
    return _route(img, _pil_op("ImageEnhance", "Contrast", contrast_factor), on_tensor)


def adjust_saturation(img, saturation_factor):
    """Blend with the greyscale image."""
    _nonnegative(saturation_factor, "saturation_factor")

    def on_tensor(t):
        return t if _channels(t) == 1 else _mix(t, _gray_tensor(t, 1), saturation_factor)
    return _route(img, _pil_op("ImageEnhance", "Color", saturation_factor), on_tensor)


def _rgb_to_hsv(rgb):
    """Hue in [0, 1), saturation and value of float RGB in [0, 1] (channels on dim -3)."""
    r, g, b = rgb.unbind(dim=-3)
    value = rgb.max(dim=-3).values
    chroma = value - rgb.min(dim=-3).values
    grey = chroma == 0
    safe_chroma = ember.where(grey, ember.ones_like(chroma), chroma)
    saturation = chroma / ember.where(grey, ember.ones_like(value), value)
    # hue sextant offset + signed position inside it, by which channel is the largest
    from_r = (g - b) / safe_chroma
    from_g = 2.0 + (b - r) / safe_chroma
    from_b = 4.0 + (r - g) / safe_chroma
    sextant = ember.where(value == r, from_r, ember.where(value == g, from_g, from_b))
    return ember.remainder(sextant / 6.0, 1.0), saturation, value


# for each sextant of the hue circle, which of (v, q, p, t) gives R, G and B
_SEXTANT_PICKS = np.array([[0, 3, 2], [1, 0, 2], [2, 0, 3], [2, 1, 0], [3, 2, 0], [0, 2, 1]])


def _hsv_to_rgb(hue, saturation, value):
    scaled = hue * 6.0
    sextant = ember.floor(scaled)
    frac = scaled - sextant
    falling = (value * (1.0 - saturation * frac)).clamp(0.0, 1.0)           # q
    low = (value * (1.0 - saturation)).clamp(0.0, 1.0)                       # p
    rising = (value * (1.0 - saturation * (1.0 - frac))).clamp(0.0, 1.0)     # t
    levels = ember.stack((value, falling, low, rising), dim=-3)
    sextant = sextant.to(ember.int64) % 6
    picks = ember.from_numpy(_SEXTANT_PICKS)[sextant]                      # (..., H, W, 3)
    return ember.gather(levels, -3, picks.movedim(-1, -3))


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
        if _channels(t) == 1:
            return t
        rgb = t if t.is_floating_point() else convert_image_dtype(t, ember.float32)
        hue, saturation, value = _rgb_to_hsv(rgb)
        out = _hsv_to_rgb(ember.remainder(hue + hue_factor, 1.0), saturation, value)
        return convert_image_dtype(out, t.dtype) if t.dtype == ember.uint8 else out
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
        unit = t if t.is_floating_point() else convert_image_dtype(t, ember.float32)
        return convert_image_dtype((gain * unit ** gamma).clamp(0, 1), t.dtype)
    return _route(img, on_pil, on_tensor)


def invert(img):
    def on_tensor(t):
        if t.dtype == ember.uint8:
            return (255 - t.to(ember.int16)).to(ember.uint8)
        return _max_value(t.dtype) - t
    return _route(img, _pil_op("ImageOps", "invert"), on_tensor)


def solarize(img, threshold):
    """Invert the pixels at or above ``threshold``."""
    return _route(img, _pil_op("ImageOps", "solarize", threshold),
                  lambda t: ember.where(t >= threshold, invert(t), t))


def adjust_sharpness(img, sharpness_factor):
    """Blend with a smoothed copy (3x3 kernel, centre weight 5, borders kept)."""
    _nonnegative(sharpness_factor, "sharpness_factor")

    def on_tensor(t):
        if min(t.shape[-2:]) <= 2:
            return t
        return _mix(t, _smoothed(t), sharpness_factor)
    return _route(img, _pil_op("ImageEnhance", "Sharpness", sharpness_factor), on_tensor)


def _smoothed(img):
    channels = img.shape[-3]
    kernel = ember.ones((3, 3), dtype=_float_dtype(img))
    kernel[1, 1] = 5.0
    kernel = (kernel / 13.0).expand(channels, 1, 3, 3)
    batch, restore = _float_batch(img, (_float_dtype(img),))
    out = img.clone()
    out[..., 1:-1, 1:-1] = restore(_F.conv2d(batch, kernel, groups=channels))
    return out


# --------------------------------------------------------------------------- blur / erase
def _gaussian_kernel1d(ks, sigma, dtype):
    half = (ks - 1) * 0.5
    x = ember.linspace(-half, half, steps=ks, dtype=dtype)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


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
        dtype, channels = _float_dtype(t), t.shape[-3]
        kx, ky = (_gaussian_kernel1d(k, s, dtype) for k, s in zip(sizes, sigmas))
        kernel = (ky[:, None] * kx[None, :]).expand(channels, 1, sizes[1], sizes[0])
        batch, restore = _float_batch(t, (dtype,))
        rx, ry = sizes[0] // 2, sizes[1] // 2
        batch = _F.pad(batch, [rx, rx, ry, ry], mode="reflect")
        return restore(_F.conv2d(batch, kernel, groups=channels))
    return _route(img, lambda im: to_pil_image(on_tensor(pil_to_tensor(im)), mode=im.mode),
                  on_tensor)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the (h, w) box at (i, j) to ``v``."""
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out


# --------------------------------------------------------------------------- posterize / equalize
def _require_uint8(img):
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")


def posterize(img, bits):
    """Keep the ``bits`` highest bits of each 8-bit value."""
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")

    def on_tensor(t):
        _require_uint8(t)
        return t & (256 - 2 ** (8 - bits))
    return _route(img, _pil_op("ImageOps", "posterize", bits), on_tensor)


def autocontrast(img):
    """Stretch each channel linearly so its minimum maps to 0 and its maximum to the top."""
    def on_tensor(t):
        if t.dim() < 3:
            raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {t.dim()}")
        top, dtype = _max_value(t.dtype), _float_dtype(t)
        low = t.amin(dim=(-2, -1), keepdim=True).to(dtype)
        span = t.amax(dim=(-2, -1), keepdim=True).to(dtype) - low
        flat = span == 0
        stretched = (t - low) * (top / ember.where(flat, ember.ones_like(span), span))
        return ember.where(flat, t.to(dtype), stretched).clamp(0, top).to(t.dtype)
    return _route(img, _pil_op("ImageOps", "autocontrast"), on_tensor)


def _equalize_channel(ch):
    """Pillow's histogram equalisation of one uint8 channel."""
    hist = np.bincount(ch.reshape(-1), minlength=256).astype(np.int64)
    step = hist[hist != 0][:-1].sum() // 255
    if step == 0:
        return ch
    lut = np.concatenate([[0], (np.cumsum(hist)[:-1] + step // 2) // step]).clip(0, 255)
    return lut[ch.astype(np.int64)].astype(np.uint8)


def equalize(img):
    def on_tensor(t):
        _require_uint8(t)
        a = t.detach().numpy()
        planes = a.reshape(-1, *a.shape[-2:])
        out = np.stack([_equalize_channel(p) for p in planes]).reshape(a.shape)
        return ember.from_numpy(np.ascontiguousarray(out))
    return _route(img, _pil_op("ImageOps", "equalize"), on_tensor)
