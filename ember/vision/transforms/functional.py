"""torchvision.transforms.functional on PIL images and ember tensors (..., C, H, W).

Tensor paths are written in ember ops, so they work on autograd tensors; PIL paths use
Pillow (imported lazily)."""
import math
import numbers
from enum import Enum

import numpy as np

import ember
from ember.nn import functional as _F
from .._pil import pil as _pil, pil_module as _pil_module, is_pil_image as _is_pil_image


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


_PIL_MODES = {
    InterpolationMode.NEAREST: 0, InterpolationMode.NEAREST_EXACT: 0,
    InterpolationMode.BILINEAR: 2, InterpolationMode.BICUBIC: 3, InterpolationMode.BOX: 4,
    InterpolationMode.HAMMING: 5, InterpolationMode.LANCZOS: 1,
}
pil_modes_mapping = _PIL_MODES


def _interpolation_modes_from_int(i):
    inverse = {0: InterpolationMode.NEAREST, 2: InterpolationMode.BILINEAR,
               3: InterpolationMode.BICUBIC, 4: InterpolationMode.BOX,
               5: InterpolationMode.HAMMING, 1: InterpolationMode.LANCZOS}
    return inverse[i]


def _as_mode(interpolation):
    if isinstance(interpolation, int):
        return _interpolation_modes_from_int(interpolation)
    if isinstance(interpolation, str):
        return InterpolationMode(interpolation)
    if not isinstance(interpolation, InterpolationMode):
        raise TypeError("Argument interpolation should be a InterpolationMode or a corresponding "
                        "Pillow integer constant")
    return interpolation


def _is_tensor(x):
    return isinstance(x, ember.Tensor)


def _check_img(img):
    if not (_is_tensor(img) or _is_pil_image(img)):
        raise TypeError(f"img should be PIL Image or Tensor. Got {type(img)}")


def _assert_image_tensor(img):
    if img.dim() < 2:
        raise TypeError("Tensor is not a torch image.")


_MAX = {ember.uint8: 255, ember.int8: 127, ember.int16: 32767, ember.int32: 2 ** 31 - 1,
        ember.int64: 2 ** 63 - 1, ember.bool: 1}
if hasattr(ember, "uint16"):
    _MAX[ember.uint16] = 65535


def _max_value(dtype):
    if dtype.is_floating_point:
        return 1.0
    return _MAX[dtype]


# --------------------------------------------------------------------------- dimensions
def get_dimensions(img):
    if _is_tensor(img):
        _assert_image_tensor(img)
        c = 1 if img.dim() == 2 else img.shape[-3]
        return [c, img.shape[-2], img.shape[-1]]
    if _is_pil_image(img):
        w, h = img.size
        return [len(img.getbands()), h, w]
    raise TypeError(f"Unexpected type {type(img)}")


def get_image_size(img):
    _, h, w = get_dimensions(img)
    return [w, h]


def get_image_num_channels(img):
    return get_dimensions(img)[0]


# --------------------------------------------------------------------------- conversions
def to_tensor(pic):
    """PIL image or HWC ndarray -> CHW float tensor in [0, 1] (uint8 inputs are scaled)."""
    if not (_is_pil_image(pic) or isinstance(pic, np.ndarray)):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        if pic.ndim == 2:
            pic = pic[:, :, None]
        img = ember.from_numpy(np.ascontiguousarray(pic.transpose(2, 0, 1)))
        if img.dtype == ember.uint8:
            return img.to(ember.get_default_dtype()).div(255)
        return img
    arr = _pil_to_array(pic)
    img = ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))
    if img.dtype == ember.uint8:
        return img.to(ember.get_default_dtype()).div(255)
    return img


def _pil_to_array(pic):
    mode_to_dtype = {"I": np.int32, "I;16": np.int16, "F": np.float32}   # as torchvision
    if pic.mode in mode_to_dtype:
        arr = np.array(pic, mode_to_dtype[pic.mode], copy=True)
    else:
        arr = np.array(pic, np.uint8, copy=True)
    if pic.mode == "1":
        arr = arr * 255
    arr = arr.reshape(pic.size[1], pic.size[0], len(pic.getbands()))
    return arr


def pil_to_tensor(pic):
    """PIL image -> CHW tensor, values and dtype kept."""
    if not _is_pil_image(pic):
        raise TypeError(f"pic should be PIL Image. Got {type(pic)}")
    arr = np.array(pic, copy=True)
    if arr.dtype == np.uint16 and not hasattr(ember, "uint16"):
        arr = arr.astype(np.int32)          # ember has no uint16: widen (torchvision gives uint16)
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return ember.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


def to_pil_image(pic, mode=None):
    """CHW tensor or HWC ndarray -> PIL image."""
    Image = _pil()
    if isinstance(pic, np.ndarray):
        if pic.ndim not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
        npimg = pic[:, :, None] if pic.ndim == 2 else pic
        if npimg.shape[-1] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {npimg.shape[-1]} channels.")
        if np.issubdtype(npimg.dtype, np.floating) and mode != "F":
            npimg = (npimg * 255).astype(np.uint8)
    elif _is_tensor(pic):
        if pic.dim() not in (2, 3):
            raise ValueError(f"pic should be 2/3 dimensional. Got {pic.dim()} dimensions.")
        t = pic.detach()
        if t.dim() == 2:
            t = t.unsqueeze(0)
        if t.shape[-3] > 4:
            raise ValueError(f"pic should not have > 4 channels. Got {t.shape[-3]} channels.")
        if t.is_floating_point() and mode != "F":
            t = t.mul(255).to(ember.uint8)
        npimg = np.transpose(t.numpy(), (1, 2, 0))
    else:
        raise TypeError(f"pic should be Tensor or ndarray. Got {type(pic)}.")

    if npimg.shape[2] == 1:
        expected = None
        npimg = npimg[:, :, 0]
        if npimg.dtype == np.uint8:
            expected = "L"
        elif npimg.dtype == np.int16 or npimg.dtype == np.uint16:
            expected = "I;16"
        elif npimg.dtype == np.int32:
            expected = "I"
        elif npimg.dtype == np.float32:
            expected = "F"
        if mode is not None and mode != expected:
            raise ValueError(f"Incorrect mode ({mode}) supplied for input type {npimg.dtype}. "
                             f"Should be {expected}")
        mode = expected
    elif npimg.shape[2] == 2:
        permitted = ["LA"]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for 2D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "LA"
    elif npimg.shape[2] == 4:
        permitted = ["RGBA", "CMYK", "RGBX"]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for 4D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGBA"
    else:
        permitted = ["RGB", "YCbCr", "HSV"]
        if mode is not None and mode not in permitted:
            raise ValueError(f"Only modes {permitted} are supported for 3D inputs")
        if mode is None and npimg.dtype == np.uint8:
            mode = "RGB"
    if mode is None:
        raise TypeError(f"Input type {npimg.dtype} is not supported")
    if mode == "I;16" and npimg.dtype == np.int16:
        npimg = npimg.astype(np.uint16)
    npimg = np.ascontiguousarray(npimg)
    if mode in ("L", "I", "F", "RGB", "RGBA", "LA", "I;16"):
        out = Image.fromarray(npimg)
        return out if out.mode == mode else out.convert(mode)
    return Image.frombuffer(mode, (npimg.shape[1], npimg.shape[0]), npimg.tobytes(), "raw", mode, 0, 1)


def convert_image_dtype(image, dtype=ember.float32):
    if not _is_tensor(image):
        raise TypeError("Input img should be Tensor Image")
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if dtype.is_floating_point:
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or \
                (image.dtype == ember.float64 and dtype == ember.int64):
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        eps = 1e-3
        max_val = float(_max_value(dtype))
        return image.mul(max_val + 1.0 - eps).to(dtype)
    input_max = float(_max_value(image.dtype))
    if dtype.is_floating_point:
        return image.to(dtype) / input_max
    output_max = float(_max_value(dtype))
    if input_max > output_max:
        factor = int((input_max + 1) // (output_max + 1))
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    factor = int((output_max + 1) // (input_max + 1))
    return image.to(dtype) * factor


# --------------------------------------------------------------------------- helpers
def _cast_squeeze_in(img, req_dtypes):
    """Flatten leading dims to (N, C, H, W) and cast to a floating dtype the kernel accepts."""
    lead = tuple(img.shape[:-3])
    squeeze = None
    if img.dim() < 4:
        img = img.unsqueeze(0)
        squeeze = "one"
    elif img.dim() > 4:
        img = img.reshape(-1, *img.shape[-3:])
        squeeze = lead
    out_dtype = img.dtype
    need_cast = out_dtype not in req_dtypes
    if need_cast:
        img = img.to(req_dtypes[0])
    return img, need_cast, squeeze, out_dtype


def _cast_squeeze_out(img, need_cast, squeeze, out_dtype):
    if squeeze == "one":
        img = img.squeeze(0)
    elif squeeze is not None:
        img = img.reshape(*squeeze, *img.shape[-3:])
    if need_cast:
        if not out_dtype.is_floating_point:
            img = ember.round(img)
        img = img.to(out_dtype)
    return img


def _float_dtype(img):
    return img.dtype if img.is_floating_point() else ember.float32


# --------------------------------------------------------------------------- normalize
def normalize(tensor, mean, std, inplace=False):
    if not _is_tensor(tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(tensor)}")
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tuple(tensor.shape)}")
    dtype = tensor.dtype
    mean = ember.as_tensor(mean, dtype=dtype)
    std = ember.as_tensor(std, dtype=dtype)
    if bool((std == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to "
                         "division by zero.")
    if mean.dim() == 1:
        mean = mean.view(-1, 1, 1)
    if std.dim() == 1:
        std = std.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean).div_(std)
    return (tensor - mean) / std


# --------------------------------------------------------------------------- resize
def _compute_resized_output_size(image_size, size, max_size=None):
    h, w = image_size
    short, long = (w, h) if w <= h else (h, w)
    if size is None or len(size) == 0:
        if max_size is None:
            raise ValueError("max_size must be an integer when size is None")
        new_short, new_long = int(max_size * short / long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    elif len(size) == 1:
        requested = size[0]
        new_short, new_long = requested, int(requested * long / short)
        if max_size is not None:
            if max_size <= requested:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
            if new_long > max_size:
                new_short, new_long = int(max_size * new_short / new_long), max_size
        new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    else:
        if max_size is not None:
            raise ValueError("max_size should only be passed if size specifies the length of "
                             "the smaller edge, i.e. size should be an int or a sequence of "
                             f"length 1 in torchscript mode.")
        new_h, new_w = size
    return [new_h, new_w]


def resize(img, size, interpolation=InterpolationMode.BILINEAR, max_size=None, antialias=True):
    interpolation = _as_mode(interpolation)
    if isinstance(size, (list, tuple)):
        if len(size) not in (0, 1, 2):
            raise ValueError(f"Size must be an int or a 1 or 2 element tuple/list, not a "
                             f"{len(size)} element tuple/list")
        size = list(size)
    elif isinstance(size, numbers.Integral):
        size = [int(size)]
    elif size is not None:
        raise TypeError(f"Size should be int or sequence. Got {type(size)}")
    _check_img(img)
    _, h, w = get_dimensions(img)
    output_size = _compute_resized_output_size((h, w), size, max_size)
    if [h, w] == output_size:
        return img
    if not _is_tensor(img):
        return img.resize(tuple(output_size[::-1]), _PIL_MODES[interpolation])
    mode = interpolation.value
    if mode not in ("nearest", "nearest-exact", "bilinear", "bicubic"):
        raise ValueError("Tensor inputs support only nearest, nearest-exact, bilinear and "
                         f"bicubic interpolation, got {interpolation}")
    if antialias is None:
        antialias = False
    if antialias and mode not in ("bilinear", "bicubic"):
        antialias = False
    x, need_cast, squeeze, out_dtype = _cast_squeeze_in(img, [ember.float32, ember.float64])
    align = False if mode in ("bilinear", "bicubic") else None
    x = _F.interpolate(x, size=output_size, mode=mode, align_corners=align, antialias=antialias)
    if mode == "bicubic" and out_dtype == ember.uint8:
        x = x.clamp(min=0, max=255)
    return _cast_squeeze_out(x, need_cast, squeeze, out_dtype)


# --------------------------------------------------------------------------- crops & flips
def crop(img, top, left, height, width):
    _check_img(img)
    if not _is_tensor(img):
        return img.crop((left, top, left + width, top + height))
    _, h, w = get_dimensions(img)
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        padding_ltrb = [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                        max(right - max(w, left), 0), max(bottom - max(h, top), 0)]
        return pad(img[..., max(top, 0):bottom, max(left, 0):right], padding_ltrb, fill=0)
    return img[..., top:bottom, left:right]


def _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size."):
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (list, tuple)) and len(size) == 1:
        return size[0], size[0]
    if len(size) != 2:
        raise ValueError(error_msg)
    return size


def center_crop(img, output_size):
    if isinstance(output_size, numbers.Number):
        output_size = (int(output_size), int(output_size))
    elif isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        output_size = (output_size[0], output_size[0])
    _, ih, iw = get_dimensions(img)
    ch, cw = output_size
    if cw > iw or ch > ih:
        padding_ltrb = [(cw - iw) // 2 if cw > iw else 0, (ch - ih) // 2 if ch > ih else 0,
                        (cw - iw + 1) // 2 if cw > iw else 0, (ch - ih + 1) // 2 if ch > ih else 0]
        img = pad(img, padding_ltrb, fill=0)
        _, ih, iw = get_dimensions(img)
        if cw == iw and ch == ih:
            return img
    top = int(round((ih - ch) / 2.0))
    left = int(round((iw - cw) / 2.0))
    return crop(img, top, left, ch, cw)


def resized_crop(img, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR,
                 antialias=True):
    img = crop(img, top, left, height, width)
    return resize(img, size, interpolation, antialias=antialias)


def hflip(img):
    _check_img(img)
    if not _is_tensor(img):
        return img.transpose(_pil().FLIP_LEFT_RIGHT)
    return img.flip(-1)


def vflip(img):
    _check_img(img)
    if not _is_tensor(img):
        return img.transpose(_pil().FLIP_TOP_BOTTOM)
    return img.flip(-2)


def five_crop(img, size):
    size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
    _, ih, iw = get_dimensions(img)
    ch, cw = size
    if cw > iw or ch > ih:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(ih, iw)}")
    tl = crop(img, 0, 0, ch, cw)
    tr = crop(img, 0, iw - cw, ch, cw)
    bl = crop(img, ih - ch, 0, ch, cw)
    br = crop(img, ih - ch, iw - cw, ch, cw)
    center = center_crop(img, [ch, cw])
    return tl, tr, bl, br, center


def ten_crop(img, size, vertical_flip=False):
    size = _setup_size(size, "Please provide only two dimensions (h, w) for size.")
    first = five_crop(img, size)
    img = vflip(img) if vertical_flip else hflip(img)
    return first + five_crop(img, size)


# --------------------------------------------------------------------------- pad
def _parse_padding(padding):
    if isinstance(padding, numbers.Number):
        padding = [int(padding)]
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    padding = list(padding)
    if len(padding) not in (1, 2, 4):
        raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(padding)} element tuple")
    if len(padding) == 1:
        return [padding[0]] * 4
    if len(padding) == 2:
        return [padding[0], padding[1], padding[0], padding[1]]
    return padding  # left, top, right, bottom


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


def _check_pad_args(padding, fill, padding_mode):
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if fill is not None and not isinstance(fill, (numbers.Number, str, tuple, list)):
        raise TypeError("Got inappropriate fill arg")
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError("Padding must be an int or a 1, 2, or 4 element tuple, not a "
                         f"{len(padding)} element tuple")


def pad(img, padding, fill=0, padding_mode="constant"):
    _check_img(img)
    _check_pad_args(padding, fill, padding_mode)
    left, top, right, bottom = _parse_padding(padding)
    if not _is_tensor(img):
        return _pil_pad(img, (left, top, right, bottom), fill, padding_mode)
    if fill is None:
        fill = 0
    _, h, w = get_dimensions(img)
    # negative padding crops
    if min(left, top, right, bottom) < 0:
        img = img[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
        left, top, right, bottom = (max(v, 0) for v in (left, top, right, bottom))
        _, h, w = get_dimensions(img)
    if left == top == right == bottom == 0:
        return img
    if padding_mode == "constant":
        if isinstance(fill, (tuple, list)):
            raise TypeError("Tensor inputs support only a number as padding fill")
        return _F.pad(img, [left, right, top, bottom], mode="constant", value=float(fill))
    if padding_mode == "reflect" and (max(top, bottom) >= h or max(left, right) >= w):
        raise RuntimeError("Padding size should be less than the corresponding input dimension")
    rows = ember.from_numpy(_pad_index(h, top, bottom, padding_mode).astype(np.int64))
    cols = ember.from_numpy(_pad_index(w, left, right, padding_mode).astype(np.int64))
    return img.index_select(-2, rows).index_select(-1, cols)


def _parse_fill(fill, img, name="fillcolor"):
    num_channels = len(img.getbands())
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)) and num_channels > 1:
        fill = tuple([fill] * num_channels)
    if isinstance(fill, (list, tuple)):
        if len(fill) == 1:
            fill = fill * num_channels
        elif len(fill) != num_channels:
            raise ValueError(f"The number of elements in 'fill' does not match the number of "
                             f"channels of the image ({len(fill)} != {num_channels})")
        fill = tuple(fill)
    if img.mode != "F":
        fill = tuple(int(x) for x in fill) if isinstance(fill, tuple) else int(fill)
    return {name: fill}


def _pil_pad(img, ltrb, fill, padding_mode):
    Image = _pil()
    left, top, right, bottom = ltrb
    if min(ltrb) < 0:
        w, h = img.size
        img = img.crop((max(-left, 0), max(-top, 0), w - max(-right, 0), h - max(-bottom, 0)))
        left, top, right, bottom = (max(v, 0) for v in ltrb)
    if padding_mode == "constant":
        opts = _parse_fill(fill, img, name="fill")
        if img.mode == "P":
            palette = img.getpalette()
            out = _pil_module("ImageOps").expand(img, border=(left, top, right, bottom), **opts)
            out.putpalette(palette)
            return out
        return _pil_module("ImageOps").expand(img, border=(left, top, right, bottom), **opts)
    arr = np.asarray(img)
    pads = [(top, bottom), (left, right)] + ([(0, 0)] if arr.ndim == 3 else [])
    out = np.pad(arr, pads, mode=padding_mode)
    res = Image.fromarray(out)
    if img.mode == "P":
        res = res.convert("P") if res.mode != "P" else res
        res.putpalette(img.getpalette())
    return res


# --------------------------------------------------------------------------- affine / rotate
def _get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=True):
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [d, -b, 0.0, -c, a, 0.0]
        m = [x / scale for x in m]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
        m[2] += cx
        m[5] += cy
    else:
        m = [a, b, 0.0, c, d, 0.0]
        m = [x * scale for x in m]
        m[2] += m[0] * (-cx) + m[1] * (-cy)
        m[5] += m[3] * (-cx) + m[4] * (-cy)
        m[2] += cx + tx
        m[5] += cy + ty
    return m


def _compute_affine_output_size(matrix, w, h):
    f = np.float32
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                    [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]], dtype=f)
    theta = np.array(matrix, dtype=f).reshape(2, 3)
    new_pts = pts @ theta.T
    mn = new_pts.min(axis=0) + np.array([w * 0.5, h * 0.5], dtype=f)
    mx = new_pts.max(axis=0) + np.array([w * 0.5, h * 0.5], dtype=f)
    tol = f(1e-4)
    cmax = np.ceil(np.trunc(mx / tol) * tol)
    cmin = np.floor(np.trunc(mn / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def _gen_affine_grid(matrix, w, h, ow, oh, dtype):
    npd = np.float64 if dtype == ember.float64 else np.float32
    theta = np.array(matrix, dtype=npd).reshape(1, 2, 3)
    base = np.empty((1, oh, ow, 3), dtype=npd)
    base[..., 0] = np.linspace(-ow * 0.5 + 0.5, ow * 0.5 + 0.5 - 1, ow, dtype=npd)
    base[..., 1] = np.linspace(-oh * 0.5 + 0.5, oh * 0.5 + 0.5 - 1, oh, dtype=npd)[:, None]
    base[..., 2] = 1
    rescaled = theta.transpose(0, 2, 1) / np.array([0.5 * w, 0.5 * h], dtype=npd)
    grid = base.reshape(1, oh * ow, 3) @ rescaled
    return ember.from_numpy(np.ascontiguousarray(grid.reshape(1, oh, ow, 2).astype(npd)))


def _apply_grid_transform(img, grid, mode, fill):
    x, need_cast, squeeze, out_dtype = _cast_squeeze_in(img, [grid.dtype])
    n = x.shape[0]
    if n > 1:
        grid = grid.expand(n, *grid.shape[1:])
    if fill is not None:
        mask = ember.ones((n, 1, x.shape[2], x.shape[3]), dtype=x.dtype)
        x = ember.cat((x, mask), dim=1)
    x = _F.grid_sample(x, grid, mode=mode, padding_mode="zeros", align_corners=False)
    if fill is not None:
        mask = x[:, -1:, :, :]
        x = x[:, :-1, :, :]
        mask = mask.expand_as(x)
        fill_list = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ember.tensor(fill_list, dtype=x.dtype).view(1, len(fill_list), 1, 1).expand_as(x)
        if mode == "nearest":
            x = ember.where(mask < 0.5, fill_img, x)
        else:
            x = x * mask + (1.0 - mask) * fill_img
    return _cast_squeeze_out(x, need_cast, squeeze, out_dtype)


def _check_fill(fill, img):
    if fill is None or isinstance(fill, numbers.Number):
        return fill
    fill = list(fill)
    c = get_dimensions(img)[0]
    if len(fill) not in (1, c):
        raise ValueError(f"The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {c})")
    return fill


def rotate(img, angle, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
           fill=None):
    interpolation = _as_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if center is not None and not isinstance(center, (list, tuple)):
        raise TypeError("Argument center should be a sequence")
    _check_img(img)
    if not _is_tensor(img):
        opts = _parse_fill(fill, img)
        return img.rotate(angle, _PIL_MODES[interpolation], expand, center, **opts)
    _, h, w = get_dimensions(img)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return _tensor_affine(img, matrix, interpolation, _check_fill(fill, img), expand)


def _tensor_affine(img, matrix, interpolation, fill, expand=False):
    mode = interpolation.value
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{mode}' is unsupported with Tensor input")
    _, h, w = get_dimensions(img)
    ow, oh = _compute_affine_output_size(matrix, w, h) if expand else (w, h)
    grid = _gen_affine_grid(matrix, w, h, ow, oh, _float_dtype(img))
    return _apply_grid_transform(img, grid, mode, fill)


def affine(img, angle, translate, scale, shear, interpolation=InterpolationMode.NEAREST,
           fill=None, center=None):
    interpolation = _as_mode(interpolation)
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    if isinstance(angle, int):
        angle = float(angle)
    if isinstance(translate, tuple):
        translate = list(translate)
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    if isinstance(shear, tuple):
        shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    _check_img(img)
    _, h, w = get_dimensions(img)
    if not _is_tensor(img):
        if center is None:
            center = [w * 0.5, h * 0.5]
        matrix = _get_inverse_affine_matrix(center, angle, translate, scale, shear)
        opts = _parse_fill(fill, img)
        return img.transform(img.size, _pil().AFFINE, matrix, _PIL_MODES[interpolation], **opts)
    center_f = [0.0, 0.0]
    if center is not None:
        center_f = [1.0 * (c - s * 0.5) for c, s in zip(center, [w, h])]
    translate_f = [1.0 * t for t in translate]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate_f, scale, shear)
    return _tensor_affine(img, matrix, interpolation, _check_fill(fill, img))


# --------------------------------------------------------------------------- colour
def _blend(img1, img2, ratio):
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def _channels(img):
    return 1 if img.dim() == 2 else img.shape[-3]


def rgb_to_grayscale(img, num_output_channels=1):
    if num_output_channels not in (1, 3):
        raise ValueError("num_output_channels should be either 1 or 3")
    _check_img(img)
    if not _is_tensor(img):
        return to_grayscale(img, num_output_channels)
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.dim()}")
    c = img.shape[-3]
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {c}")
    if c == 3:
        r, g, b = img.unbind(dim=-3)
        l_img = (0.2989 * r + 0.587 * g + 0.114 * b).to(img.dtype).unsqueeze(dim=-3)
    else:
        l_img = img.clone()
    if num_output_channels == 3:
        return l_img.expand(img.shape)
    return l_img


def to_grayscale(img, num_output_channels=1):
    if _is_tensor(img):
        return rgb_to_grayscale(img, num_output_channels)
    Image = _pil()
    if num_output_channels == 1:
        return img.convert("L")
    if num_output_channels == 3:
        g = np.asarray(img.convert("L"))
        return Image.fromarray(np.dstack([g, g, g]), "RGB")
    raise ValueError("num_output_channels should be either 1 or 3")


def _check_factor(f, name):
    if f < 0:
        raise ValueError(f"{name} ({f}) is not non-negative.")


def adjust_brightness(img, brightness_factor):
    _check_img(img)
    _check_factor(brightness_factor, "brightness_factor")
    if not _is_tensor(img):
        return _pil_module("ImageEnhance").Brightness(img).enhance(brightness_factor)
    return _blend(img, ember.zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor):
    _check_img(img)
    _check_factor(contrast_factor, "contrast_factor")
    if not _is_tensor(img):
        return _pil_module("ImageEnhance").Contrast(img).enhance(contrast_factor)
    dtype = _float_dtype(img)
    src = rgb_to_grayscale(img) if _channels(img) == 3 else img
    mean = ember.mean(src.to(dtype), dim=(-3, -2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


def adjust_saturation(img, saturation_factor):
    _check_img(img)
    _check_factor(saturation_factor, "saturation_factor")
    if not _is_tensor(img):
        return _pil_module("ImageEnhance").Color(img).enhance(saturation_factor)
    if _channels(img) == 1:
        return img
    return _blend(img, rgb_to_grayscale(img), saturation_factor)


def _rgb2hsv(img):
    r, g, b = img.unbind(dim=-3)
    maxc = ember.max(img, dim=-3).values
    minc = ember.min(img, dim=-3).values
    eqc = maxc == minc
    cr = maxc - minc
    ones = ember.ones_like(maxc)
    s = cr / ember.where(eqc, ones, maxc)
    cr_div = ember.where(eqc, ones, cr)
    rc = (maxc - r) / cr_div
    gc = (maxc - g) / cr_div
    bc = (maxc - b) / cr_div
    hr = (maxc == r).to(img.dtype) * (bc - gc)
    hg = ((maxc == g) & (maxc != r)).to(img.dtype) * (2.0 + rc - bc)
    hb = ((maxc != g) & (maxc != r)).to(img.dtype) * (4.0 + gc - rc)
    h = ember.fmod(((hr + hg + hb) / 6.0 + 1.0), 1.0)
    return ember.stack((h, s, maxc), dim=-3)


def _hsv2rgb(img):
    h, s, v = img.unbind(dim=-3)
    i = ember.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.to(ember.int32) % 6
    p = ember.clamp(v * (1.0 - s), 0.0, 1.0)
    q = ember.clamp(v * (1.0 - s * f), 0.0, 1.0)
    t = ember.clamp(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    table = ((v, q, p, p, t, v), (t, v, v, q, p, p), (p, p, t, v, v, q))
    out = []
    for row in table:
        ch = ember.zeros_like(v)
        for k in range(6):
            ch = ember.where(i == k, row[k], ch)
        out.append(ch)
    return ember.stack(out, dim=-3)


def adjust_hue(img, hue_factor):
    if not -0.5 <= hue_factor <= 0.5:
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    _check_img(img)
    if not _is_tensor(img):
        return _pil_adjust_hue(img, hue_factor)
    if _channels(img) == 1:
        return img
    orig_dtype = img.dtype
    x = convert_image_dtype(img, ember.float32) if not img.is_floating_point() else img
    hsv = _rgb2hsv(x)
    h, s, v = hsv.unbind(dim=-3)
    h = ember.remainder(h + hue_factor, 1.0)
    out = _hsv2rgb(ember.stack((h, s, v), dim=-3))
    if orig_dtype == ember.uint8:
        out = convert_image_dtype(out, orig_dtype)
    return out


def _pil_adjust_hue(img, hue_factor):
    Image = _pil()
    input_mode = img.mode
    if input_mode in {"L", "1", "I", "F"}:
        return img
    h, s, v = img.convert("HSV").split()
    np_h = np.array(h, dtype=np.uint8)
    with np.errstate(over="ignore"):
        np_h += np.array(int(hue_factor * 255)).astype(np.uint8)
    h = Image.fromarray(np_h, "L")
    return Image.merge("HSV", (h, s, v)).convert(input_mode)


def adjust_gamma(img, gamma, gain=1):
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    _check_img(img)
    if not _is_tensor(img):
        input_mode = img.mode
        img = img.convert("RGB")
        gamma_map = [int((255 + 1 - 1e-3) * gain * pow(ele / 255.0, gamma)) for ele in range(256)] * 3
        return img.point(gamma_map).convert(input_mode)
    result = img
    dtype = img.dtype
    if not img.is_floating_point():
        result = convert_image_dtype(result, ember.float32)
    result = (gain * result ** gamma).clamp(0, 1)
    return convert_image_dtype(result, dtype)


def invert(img):
    _check_img(img)
    if not _is_tensor(img):
        return _pil_module("ImageOps").invert(img)
    return _max_value(img.dtype) - img if img.dtype != ember.uint8 else (255 - img.to(ember.int16)).to(ember.uint8)


def solarize(img, threshold):
    _check_img(img)
    if not _is_tensor(img):
        return _pil_module("ImageOps").solarize(img, threshold)
    return ember.where(img >= threshold, invert(img), img)


def adjust_sharpness(img, sharpness_factor):
    _check_img(img)
    _check_factor(sharpness_factor, "sharpness_factor")
    if not _is_tensor(img):
        return _pil_module("ImageEnhance").Sharpness(img).enhance(sharpness_factor)
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _blend(img, _blurred_degenerate(img), sharpness_factor)


def _blurred_degenerate(img):
    dtype = _float_dtype(img)
    kernel = ember.ones((3, 3), dtype=dtype)
    kernel[1, 1] = 5.0
    kernel = kernel / kernel.sum()
    c = img.shape[-3]
    kernel = kernel.expand(c, 1, 3, 3)
    x, need_cast, squeeze, out_dtype = _cast_squeeze_in(img, [dtype])
    inner = _F.conv2d(x, kernel, groups=c)
    inner = _cast_squeeze_out(inner, need_cast, squeeze, out_dtype)
    out = img.clone()
    out[..., 1:-1, 1:-1] = inner
    return out


# --------------------------------------------------------------------------- blur / erase
def _gaussian_kernel1d(ks, sigma, dtype):
    half = (ks - 1) * 0.5
    x = ember.linspace(-half, half, steps=ks, dtype=dtype)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def _gaussian_kernel2d(kernel_size, sigma, dtype):
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], dtype)
    return ember.mm(ky[:, None], kx[None, :])


def gaussian_blur(img, kernel_size, sigma=None):
    if not isinstance(kernel_size, (int, list, tuple)):
        raise TypeError(f"kernel_size should be int or a sequence of integers. Got {type(kernel_size)}")
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    kernel_size = list(kernel_size)
    if len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for ks in kernel_size:
        if ks % 2 == 0 or ks < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [ks * 0.15 + 0.35 for ks in kernel_size]
    if isinstance(sigma, (int, float)):
        sigma = [float(sigma), float(sigma)]
    sigma = list(sigma)
    if len(sigma) == 1:
        sigma = [sigma[0], sigma[0]]
    if len(sigma) != 2:
        raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    _check_img(img)
    if not _is_tensor(img):
        return to_pil_image(gaussian_blur(pil_to_tensor(img), kernel_size, sigma), mode=img.mode)
    dtype = _float_dtype(img)
    kernel = _gaussian_kernel2d(kernel_size, sigma, dtype)
    c = img.shape[-3]
    kernel = kernel.expand(c, 1, kernel.shape[0], kernel.shape[1])
    x, need_cast, squeeze, out_dtype = _cast_squeeze_in(img, [dtype])
    p = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    x = _F.pad(x, p, mode="reflect")
    x = _F.conv2d(x, kernel, groups=c)
    return _cast_squeeze_out(x, need_cast, squeeze, out_dtype)


def erase(img, i, j, h, w, v, inplace=False):
    if not _is_tensor(img):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if not inplace:
        img = img.clone()
    img[..., i:i + h, j:j + w] = v
    return img


# --------------------------------------------------------------------------- perspective
def _get_perspective_coeffs(startpoints, endpoints):
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints "
                         f"and {len(endpoints)} endpoints.")
    a = np.zeros((8, 8), dtype=np.float64)
    for i, (p1, p2) in enumerate(zip(endpoints, startpoints)):
        a[2 * i] = [p1[0], p1[1], 1, 0, 0, 0, -p2[0] * p1[0], -p2[0] * p1[1]]
        a[2 * i + 1] = [0, 0, 0, p1[0], p1[1], 1, -p2[1] * p1[0], -p2[1] * p1[1]]
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    res = np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)
    return [float(v) for v in res]


def _perspective_grid(coeffs, ow, oh, dtype):
    npd = np.float64 if dtype == ember.float64 else np.float32
    theta1 = np.array([[coeffs[0], coeffs[1], coeffs[2]], [coeffs[3], coeffs[4], coeffs[5]]], dtype=npd)
    theta2 = np.array([[coeffs[6], coeffs[7], 1.0], [coeffs[6], coeffs[7], 1.0]], dtype=npd)
    base = np.empty((oh, ow, 3), dtype=npd)
    base[..., 0] = np.linspace(0.5, ow * 1.0 + 0.5 - 1.0, ow, dtype=np.float32)
    base[..., 1] = np.linspace(0.5, oh * 1.0 + 0.5 - 1.0, oh, dtype=np.float32)[:, None]
    base[..., 2] = 1
    flat = base.reshape(oh * ow, 3)
    g1 = flat @ (theta1.T / np.array([0.5 * ow, 0.5 * oh], dtype=npd))
    g2 = flat @ theta2.T
    grid = (g1 / g2 - 1.0).astype(npd)
    return ember.from_numpy(np.ascontiguousarray(grid.reshape(1, oh, ow, 2)))


def perspective(img, startpoints, endpoints, interpolation=InterpolationMode.BILINEAR, fill=None):
    interpolation = _as_mode(interpolation)
    _check_img(img)
    coeffs = _get_perspective_coeffs(startpoints, endpoints)
    if not _is_tensor(img):
        opts = _parse_fill(fill, img)
        return img.transform(img.size, _pil().PERSPECTIVE, coeffs, _PIL_MODES[interpolation], **opts)
    mode = interpolation.value
    if mode not in ("nearest", "bilinear"):
        raise ValueError(f"Interpolation mode '{mode}' is unsupported with Tensor input")
    _, h, w = get_dimensions(img)
    grid = _perspective_grid(coeffs, w, h, _float_dtype(img))
    return _apply_grid_transform(img, grid, mode, _check_fill(fill, img))


# --------------------------------------------------------------------------- posterize / autocontrast / equalize
def posterize(img, bits):
    if not 0 <= bits <= 8:
        raise ValueError(f"The number if bits should be between 0 and 8. Got {bits}")
    _check_img(img)
    if not _is_tensor(img):
        return _pil_module("ImageOps").posterize(img, bits)
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    mask = (0xFF << (8 - bits)) & 0xFF
    return img & mask


def autocontrast(img):
    _check_img(img)
    if not _is_tensor(img):
        return _pil_module("ImageOps").autocontrast(img)
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.dim()}")
    bound = _max_value(img.dtype)
    dtype = _float_dtype(img)
    minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    flat = maximum == minimum
    scale = bound / ember.where(flat, ember.ones_like(maximum), maximum - minimum)
    minimum = ember.where(flat, ember.zeros_like(minimum), minimum)
    scale = ember.where(flat, ember.ones_like(scale), scale)
    return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)


def _equalize_channel(ch):
    hist = np.bincount(ch.reshape(-1), minlength=256).astype(np.int64)
    nonzero = hist[hist != 0]
    step = nonzero[:-1].sum() // 255
    if step == 0:
        return ch
    lut = (np.cumsum(hist) + step // 2) // step
    lut = np.concatenate([[0], lut[:-1]]).clip(0, 255)
    return lut[ch.astype(np.int64)].astype(np.uint8)


def equalize(img):
    _check_img(img)
    if not _is_tensor(img):
        return _pil_module("ImageOps").equalize(img)
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    a = img.detach().numpy()
    flat = a.reshape(-1, a.shape[-2], a.shape[-1])
    out = np.stack([_equalize_channel(c) for c in flat]).reshape(a.shape)
    return ember.from_numpy(np.ascontiguousarray(out))
