"""The tensor side of ``functional``: typed, ``ember.jit.script``-able ops on (..., C, H, W)
images. ``functional`` checks arguments and sends tensors here; the transform modules call
these directly, so a scripted transform runs the same code as the eager one.

Geometric ops (affine, rotate, perspective) map each output pixel centre back into the input
and ``grid_sample`` there; interpolation modes are passed as their string values."""
import math
from typing import List, Optional, Tuple

import ember
from ember import Tensor
from ember.nn import functional as F


def _is_float(dtype: ember.dtype) -> bool:
    return ember.empty(0, dtype=dtype).is_floating_point()


def _max_value(dtype: ember.dtype) -> float:
    """1 for floating (and bool) images, else the dtype's largest value (uint8, uint16 and
    the signed integers)."""
    if _is_float(dtype) or dtype == ember.bool:
        return 1.0
    if dtype == ember.uint8:
        return 255.0
    size = ember.empty(0, dtype=dtype).element_size()
    if size == 2 and dtype != ember.int16:          # uint16, without naming it (archives lack it)
        return 65535.0
    return float(2 ** (8 * size - 1) - 1)


def _float_dtype(img: Tensor) -> ember.dtype:
    if img.is_floating_point():
        return img.dtype
    return ember.float32


def _to_batch(img: Tensor, dtype: ember.dtype) -> Tensor:
    """``img`` as an (N, C, H, W) batch in ``dtype``."""
    return img.reshape(-1, img.shape[-3], img.shape[-2], img.shape[-1]).to(dtype)


def _restore(out: Tensor, img: Tensor) -> Tensor:
    """``out`` (N, C, h, w) given ``img``'s leading dims and dtype (rounded for integers)."""
    shape = list(img.shape[:-3]) + [out.shape[-3], out.shape[-2], out.shape[-1]]
    out = out.reshape(shape)
    if out.dtype == img.dtype:
        return out
    if not img.is_floating_point():
        out = ember.round(out)
    return out.to(img.dtype)


def _channels(img: Tensor) -> int:
    if img.dim() > 2:
        return img.shape[-3]
    return 1


# --------------------------------------------------------------------------- dtype / normalize
def convert_image_dtype(image: Tensor, dtype: ember.dtype = ember.float32) -> Tensor:
    """Rescale between dtypes: floats span [0, 1], integers 0 .. 2**bits - 1."""
    if image.dtype == dtype:
        return image
    if image.is_floating_point():
        if _is_float(dtype):
            return image.to(dtype)
        top = _max_value(dtype)
        if (image.dtype == ember.float32 and top > 2.0 ** 23) or top > 2.0 ** 52:
            raise RuntimeError(f"The cast from {image.dtype} to {dtype} cannot be performed safely.")
        return image.mul(top + 0.999).to(dtype)
    source_top = _max_value(image.dtype)
    if _is_float(dtype):
        return image.to(dtype) / source_top
    top = _max_value(dtype)
    if source_top > top:
        factor = int((source_top + 1) // (top + 1))
        return ember.div(image, factor, rounding_mode="floor").to(dtype)
    return image.to(dtype) * int((top + 1) // (source_top + 1))


def normalize(tensor: Tensor, mean: List[float], std: List[float], inplace: bool = False) -> Tensor:
    """(tensor - mean) / std per channel; ``tensor`` floating, (..., C, H, W)."""
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.dim() < 3:
        raise ValueError("Expected tensor to be a tensor image of size (..., C, H, W). Got "
                         f"tensor.size() = {tensor.size()}")
    mean_t = ember.as_tensor(mean, dtype=tensor.dtype)
    std_t = ember.as_tensor(std, dtype=tensor.dtype)
    if bool((std_t == 0).any()):
        raise ValueError(f"std evaluated to zero after conversion to {tensor.dtype}, leading to "
                         "division by zero.")
    if mean_t.dim() == 1:
        mean_t = mean_t.view(-1, 1, 1)
    if std_t.dim() == 1:
        std_t = std_t.view(-1, 1, 1)
    if inplace:
        return tensor.sub_(mean_t).div_(std_t)
    return (tensor - mean_t) / std_t


# --------------------------------------------------------------------------- resize
def resized_hw(height: int, width: int, size: Optional[List[int]], max_size: Optional[int]) -> List[int]:
    """Output [h, w]: ``size`` [h, w] exactly, or [s]: the short side s (long side scaled, capped
    at ``max_size``), or None: the long side ``max_size``."""
    short, long = min(height, width), max(height, width)
    if size is not None and len(size) == 2:
        if max_size is not None:
            raise ValueError("max_size should only be passed if size specifies the length of "
                             "the smaller edge, i.e. size should be an int or a sequence of "
                             "length 1 in torchscript mode.")
        return [size[0], size[1]]
    if size is not None and len(size) == 1:
        out_short, out_long = size[0], int(size[0] * long / short)
        if max_size is not None:
            if max_size <= size[0]:
                raise ValueError(f"max_size = {max_size} must be strictly greater than the "
                                 f"requested size for the smaller edge size = {size}")
            if out_long > max_size:
                out_short, out_long = int(max_size * out_short / out_long), max_size
    elif max_size is not None:
        out_short, out_long = int(max_size * short / long), max_size
    else:
        raise ValueError("max_size must be an integer when size is None")
    if width <= height:
        return [out_long, out_short]
    return [out_short, out_long]


def resize(img: Tensor, size: Optional[List[int]], interpolation: str = "bilinear",
           max_size: Optional[int] = None, antialias: Optional[bool] = True) -> Tensor:
    out_hw = resized_hw(img.shape[-2], img.shape[-1], size, max_size)
    if out_hw[0] == img.shape[-2] and out_hw[1] == img.shape[-1]:
        return img
    if interpolation not in ["nearest", "nearest-exact", "bilinear", "bicubic"]:
        raise ValueError("Tensor inputs support only nearest, nearest-exact, bilinear and "
                         f"bicubic interpolation, got {interpolation}")
    batch = _to_batch(img, _float_dtype(img))
    if interpolation == "bilinear" or interpolation == "bicubic":
        smooth_aa = antialias is not None and bool(antialias)
        out = F.interpolate(batch, size=out_hw, mode=interpolation, align_corners=False,
                            antialias=smooth_aa)
        if interpolation == "bicubic" and img.dtype == ember.uint8:
            out = out.clamp(min=0, max=255)            # cubic overshoot
    else:
        out = F.interpolate(batch, size=out_hw, mode=interpolation)
    return _restore(out, img)


# --------------------------------------------------------------------------- crops, flips, pad
def hflip(img: Tensor) -> Tensor:
    return img.flip(-1)


def vflip(img: Tensor) -> Tensor:
    return img.flip(-2)


def crop(img: Tensor, top: int, left: int, height: int, width: int) -> Tensor:
    """The box at (top, left); parts outside the image are zeros."""
    h, w = img.shape[-2], img.shape[-1]
    outside = [max(-left, 0), max(-top, 0), max(left + width - w, 0), max(top + height - h, 0)]
    if outside[0] > 0 or outside[1] > 0 or outside[2] > 0 or outside[3] > 0:
        img = pad(img, outside)
    y, x = top + outside[1], left + outside[0]
    return img[..., y:y + height, x:x + width]


def center_crop(img: Tensor, output_size: List[int]) -> Tensor:
    out_h, out_w = output_size[0], output_size[-1]
    h, w = img.shape[-2], img.shape[-1]
    if out_h > h or out_w > w:                    # grow with zeros to at least the crop size
        grow_h, grow_w = max(out_h - h, 0), max(out_w - w, 0)
        img = pad(img, [grow_w // 2, grow_h // 2, (grow_w + 1) // 2, (grow_h + 1) // 2])
        h, w = img.shape[-2], img.shape[-1]
    return crop(img, int(round((h - out_h) / 2.0)), int(round((w - out_w) / 2.0)), out_h, out_w)


def resized_crop(img: Tensor, top: int, left: int, height: int, width: int, size: List[int],
                 interpolation: str = "bilinear", antialias: Optional[bool] = True) -> Tensor:
    return resize(crop(img, top, left, height, width), size, interpolation, None, antialias)


def five_crop(img: Tensor, size: List[int]) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """Top-left, top-right, bottom-left, bottom-right and centre crops."""
    out_h, out_w = size[0], size[-1]
    h, w = img.shape[-2], img.shape[-1]
    if out_h > h or out_w > w:
        raise ValueError(f"Requested crop size {size} is bigger than input size {[h, w]}")
    return (crop(img, 0, 0, out_h, out_w), crop(img, 0, w - out_w, out_h, out_w),
            crop(img, h - out_h, 0, out_h, out_w), crop(img, h - out_h, w - out_w, out_h, out_w),
            center_crop(img, [out_h, out_w]))


def ten_crop(img: Tensor, size: List[int], vertical_flip: bool = False
             ) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """five_crop of the image, then of its (horizontal or vertical) mirror."""
    mirror = vflip(img) if vertical_flip else hflip(img)
    a0, a1, a2, a3, a4 = five_crop(img, size)
    b0, b1, b2, b3, b4 = five_crop(mirror, size)
    return a0, a1, a2, a3, a4, b0, b1, b2, b3, b4


def _pad_index(n: int, before: int, after: int, mode: str) -> Tensor:
    """Source indices along one axis for non-constant padding."""
    idx = ember.arange(-before, n + after)
    if mode == "edge":
        return idx.clamp(0, n - 1)
    if mode == "reflect":
        if n == 1:
            return ember.zeros_like(idx)
        period = 2 * (n - 1)
        m = ember.remainder(idx, period)
        return ember.where(m >= n, period - m, m)
    period = 2 * n                                    # symmetric
    m = ember.remainder(idx, period)
    return ember.where(m >= n, period - 1 - m, m)


def pad(img: Tensor, padding: List[int], fill: float = 0.0, padding_mode: str = "constant") -> Tensor:
    """Pad by [left, top, right, bottom] (1, 2 or 4 values); negative amounts crop."""
    if len(padding) == 1:
        ltrb = [padding[0], padding[0], padding[0], padding[0]]
    elif len(padding) == 2:
        ltrb = [padding[0], padding[1], padding[0], padding[1]]
    else:
        ltrb = [padding[0], padding[1], padding[2], padding[3]]
    h, w = img.shape[-2], img.shape[-1]
    if ltrb[0] < 0 or ltrb[1] < 0 or ltrb[2] < 0 or ltrb[3] < 0:
        cut = [max(-v, 0) for v in ltrb]
        img = img[..., cut[1]:h - cut[3], cut[0]:w - cut[2]]
        ltrb = [max(v, 0) for v in ltrb]
        h, w = img.shape[-2], img.shape[-1]
    left, top, right, bottom = ltrb[0], ltrb[1], ltrb[2], ltrb[3]
    if left == 0 and top == 0 and right == 0 and bottom == 0:
        return img
    if padding_mode == "constant":
        return F.pad(img, [left, right, top, bottom], mode="constant", value=float(fill))
    if padding_mode == "reflect" and (max(top, bottom) >= h or max(left, right) >= w):
        raise RuntimeError("Padding size should be less than the corresponding input dimension")
    rows = _pad_index(h, top, bottom, padding_mode)
    cols = _pad_index(w, left, right, padding_mode)
    return img.index_select(-2, rows).index_select(-1, cols)


# --------------------------------------------------------------------------- geometry
def inverse_affine(center: List[float], angle: float, translate: List[float], scale: float,
                   shear: List[float]) -> List[float]:
    """Row-major 2x3 matrix taking output positions to input positions for the map
    p -> center + translate + RSS (p - center), RSS = R(angle) S(scale) SHy(shear_y) SHx(shear_x):
    RSS = s [[cos(a - sy) / cos(sy), -cos(a - sy) tan(sx) / cos(sy) - sin(a)],
             [sin(a - sy) / cos(sy), -sin(a - sy) tan(sx) / cos(sy) + cos(a)]]."""
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center[0], center[1]
    tx, ty = translate[0], translate[1]
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]      # inverse of RSS (det 1)
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


def _apply_rows(points: Tensor, m: Tensor) -> Tensor:
    """(N, 3) @ (3, k) as x*m0 + y*m1 + w*m2, term by term (no fused or reordered sums, so
    the grids match torchvision's to the last bit and nearest sampling breaks ties alike)."""
    return points[:, 0:1] * m[0] + points[:, 1:2] * m[1] + points[:, 2:3] * m[2]


def _grid_dtype(img: Tensor) -> ember.dtype:
    if img.dtype == ember.float64:
        return ember.float64
    return ember.float32


def _expanded_size(matrix: List[float], w: int, h: int) -> List[int]:
    """[w, h] of the box holding the image's corners under ``matrix`` (centred coordinates);
    positions are truncated to 1e-4 first, so that 1e-15 overshoots do not round up."""
    corners = ember.tensor([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0],
                            [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]], dtype=ember.float32)
    theta = ember.tensor(matrix, dtype=ember.float32).view(2, 3)
    ends = _apply_rows(corners, theta.t())
    halfs = ember.tensor([w * 0.5, h * 0.5], dtype=ember.float32)
    lo, hi = ends.amin(dim=0) + halfs, ends.amax(dim=0) + halfs
    inv_tol = 1.0 / 1e-4
    size = ember.ceil((hi * inv_tol).trunc() / inv_tol) - ember.floor((lo * inv_tol).trunc() / inv_tol)
    return [int(size[0].item()), int(size[1].item())]


def _pixel_centres(out_w: int, out_h: int, dtype: ember.dtype, centred: bool) -> Tensor:
    """(out_h * out_w, 3) homogeneous pixel-centre positions, from the image centre if
    ``centred`` else from the top-left corner."""
    x0, y0 = 0.5, 0.5
    if centred:
        x0, y0 = 0.5 - 0.5 * out_w, 0.5 - 0.5 * out_h
    xs = ember.linspace(x0, x0 + out_w - 1, steps=out_w, dtype=dtype)
    ys = ember.linspace(y0, y0 + out_h - 1, steps=out_h, dtype=dtype)
    points = ember.stack([xs.view(1, -1).expand(out_h, out_w), ys.view(-1, 1).expand(out_h, out_w),
                          ember.ones([out_h, out_w], dtype=dtype)], dim=-1)
    return points.reshape(-1, 3)


def _warp(img: Tensor, grid: Tensor, interpolation: str, fill: Optional[List[float]]) -> Tensor:
    """Sample ``img`` at ``grid`` (out_h, out_w, 2) positions in [-1, 1] units; outside the
    image: zeros, or ``fill`` blended by coverage."""
    if interpolation != "nearest" and interpolation != "bilinear":
        raise ValueError(f"Interpolation mode '{interpolation}' is unsupported with Tensor input")
    channels = _channels(img)
    if fill is not None and len(fill) != 1 and len(fill) != channels:
        raise ValueError("The number of elements in 'fill' cannot broadcast to match the number "
                         f"of channels of the image ({len(fill)} != {channels})")
    batch = _to_batch(img, _float_dtype(img))
    n, h, w = batch.shape[0], batch.shape[-2], batch.shape[-1]
    grid = grid.unsqueeze(0).expand(n, grid.shape[0], grid.shape[1], 2)
    if fill is None:
        return _restore(F.grid_sample(batch, grid, mode=interpolation, padding_mode="zeros",
                                      align_corners=False), img)
    ones = ember.ones([n, 1, h, w], dtype=batch.dtype)
    sampled = F.grid_sample(ember.cat([batch, ones], dim=1), grid, mode=interpolation,
                            padding_mode="zeros", align_corners=False)
    values, coverage = sampled[:, :-1], sampled[:, -1:]
    fill_t = ember.tensor(fill, dtype=batch.dtype).view(1, -1, 1, 1)
    if interpolation == "nearest":
        out = ember.where(coverage < 0.5, fill_t.expand_as(values), values)
    else:
        out = values * coverage + fill_t * (1.0 - coverage)
    return _restore(out, img)


def warp_affine(img: Tensor, matrix: List[float], interpolation: str,
                fill: Optional[List[float]], expand: bool = False) -> Tensor:
    """``matrix`` (2x3, row-major) maps output positions to input positions, both measured
    from their image's centre; applied to every output pixel centre."""
    h, w = img.shape[-2], img.shape[-1]
    out_w, out_h = w, h
    if expand:
        size = _expanded_size(matrix, w, h)
        out_w, out_h = size[0], size[1]
    dtype = _grid_dtype(img)
    to_unit = (ember.tensor(matrix, dtype=dtype).view(2, 3)
               / ember.tensor([[w * 0.5], [h * 0.5]], dtype=dtype)).t()
    points = _pixel_centres(out_w, out_h, dtype, True)
    return _warp(img, _apply_rows(points, to_unit).reshape(out_h, out_w, 2), interpolation, fill)


def elastic_transform(img: Tensor, displacement: Tensor, interpolation: str = "bilinear",
                      fill: Optional[List[float]] = None) -> Tensor:
    """Sample at the pixel centres (in [-1, 1] units) plus ``displacement`` (1, H, W, 2)."""
    h, w = img.shape[-2], img.shape[-1]
    dtype = _grid_dtype(img)
    ys = ember.linspace((-h + 1) / h, (h - 1) / h, steps=h, dtype=dtype)
    xs = ember.linspace((-w + 1) / w, (w - 1) / w, steps=w, dtype=dtype)
    identity = ember.stack([xs.view(1, -1).expand(h, w), ys.view(-1, 1).expand(h, w)], dim=-1)
    return _warp(img, identity + displacement[0].to(dtype), interpolation, fill)


def _centre_offset(center: Optional[List[float]], img: Tensor) -> List[float]:
    """``center`` in pixels measured from the image centre (default: the centre itself)."""
    if center is None:
        return [0.0, 0.0]
    return [float(center[0]) - img.shape[-1] * 0.5, float(center[1]) - img.shape[-2] * 0.5]


def rotate(img: Tensor, angle: float, interpolation: str = "nearest", expand: bool = False,
           center: Optional[List[float]] = None, fill: Optional[List[float]] = None) -> Tensor:
    """Counter-clockwise rotation by ``angle`` degrees about ``center``."""
    matrix = inverse_affine(_centre_offset(center, img), -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    return warp_affine(img, matrix, interpolation, fill, expand)


def affine(img: Tensor, angle: float, translate: List[float], scale: float, shear: List[float],
           interpolation: str = "nearest", fill: Optional[List[float]] = None,
           center: Optional[List[float]] = None) -> Tensor:
    matrix = inverse_affine(_centre_offset(center, img), angle, translate, scale, shear)
    return warp_affine(img, matrix, interpolation, fill)


def perspective_coeffs(startpoints: List[List[int]], endpoints: List[List[int]]) -> List[float]:
    """The 8 coefficients (a..h): start = ((a x + b y + c), (d x + e y + f)) / (g x + h y + 1)
    for every (x, y) in ``endpoints``."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints "
                         f"and {len(endpoints)} endpoints.")
    system = ember.zeros([8, 8], dtype=ember.float64)
    targets = ember.zeros([8], dtype=ember.float64)
    for i in range(4):
        x, y = float(endpoints[i][0]), float(endpoints[i][1])
        u, v = float(startpoints[i][0]), float(startpoints[i][1])
        system[2 * i] = ember.tensor([x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y], dtype=ember.float64)
        system[2 * i + 1] = ember.tensor([0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y], dtype=ember.float64)
        targets[2 * i] = u
        targets[2 * i + 1] = v
    solution = ember.linalg.lstsq(system, targets.unsqueeze(1))[0].squeeze(1)
    return solution.to(ember.float32).tolist()


def perspective(img: Tensor, startpoints: List[List[int]], endpoints: List[List[int]],
                interpolation: str = "bilinear", fill: Optional[List[float]] = None) -> Tensor:
    """Warp so that the four ``startpoints`` land on the four ``endpoints``."""
    c = perspective_coeffs(startpoints, endpoints)
    h, w = img.shape[-2], img.shape[-1]
    dtype = _grid_dtype(img)
    to_unit = ember.tensor([[c[0], c[3]], [c[1], c[4]], [c[2], c[5]]], dtype=dtype) \
        / ember.tensor([0.5 * w, 0.5 * h], dtype=dtype)
    depth = ember.tensor([[c[6], c[6]], [c[7], c[7]], [1.0, 1.0]], dtype=dtype)
    points = _pixel_centres(w, h, dtype, False)
    grid = _apply_rows(points, to_unit) / _apply_rows(points, depth) - 1.0
    return _warp(img, grid.reshape(h, w, 2), interpolation, fill)


# --------------------------------------------------------------------------- colour
def _mix(img: Tensor, other: Tensor, weight: float) -> Tensor:
    """weight * img + (1 - weight) * other, clamped to img's value range, in img's dtype."""
    out = img * weight + other * (1.0 - weight)
    return out.clamp(0, _max_value(img.dtype)).to(img.dtype)


def rgb_to_grayscale(img: Tensor, num_output_channels: int = 1) -> Tensor:
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.dim()}")
    channels = img.shape[-3]
    if channels != 1 and channels != 3:
        raise TypeError(f"Input image tensor permitted channel values are [1, 3], but found {channels}")
    if num_output_channels != 1 and num_output_channels != 3:
        raise ValueError("num_output_channels should be either 1 or 3")
    if channels == 1:
        gray = img.clone()
    else:
        weights = ember.tensor([0.2989, 0.587, 0.114], dtype=_float_dtype(img)).view(3, 1, 1)
        gray = (img * weights).sum(dim=-3, keepdim=True).to(img.dtype)
    if num_output_channels == 3:
        return gray.expand(img.shape)
    return gray


def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    return _mix(img, ember.zeros_like(img), brightness_factor)


def adjust_contrast(img: Tensor, contrast_factor: float) -> Tensor:
    """Blend with the mean grey level of the image."""
    gray = rgb_to_grayscale(img, 1) if _channels(img) == 3 else img
    mean = gray.to(_float_dtype(img)).mean(dim=[-3, -2, -1], keepdim=True)
    return _mix(img, mean, contrast_factor)


def adjust_saturation(img: Tensor, saturation_factor: float) -> Tensor:
    """Blend with the greyscale image."""
    if _channels(img) == 1:
        return img
    return _mix(img, rgb_to_grayscale(img, 1), saturation_factor)


def _rgb_to_hsv(rgb: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    """Hue in [0, 1), saturation and value of float RGB in [0, 1] (channels on dim -3)."""
    r, g, b = rgb.select(-3, 0), rgb.select(-3, 1), rgb.select(-3, 2)
    value = rgb.amax(dim=-3)
    chroma = value - rgb.amin(dim=-3)
    grey = chroma == 0
    safe_chroma = ember.where(grey, ember.ones_like(chroma), chroma)
    saturation = chroma / ember.where(grey, ember.ones_like(value), value)
    # hue sextant offset + signed position inside it, by which channel is the largest
    from_r = (g - b) / safe_chroma
    from_g = 2.0 + (b - r) / safe_chroma
    from_b = 4.0 + (r - g) / safe_chroma
    sextant = ember.where(value == r, from_r, ember.where(value == g, from_g, from_b))
    return ember.remainder(sextant / 6.0, 1.0), saturation, value


def _hsv_to_rgb(hue: Tensor, saturation: Tensor, value: Tensor) -> Tensor:
    scaled = hue * 6.0
    sextant = ember.floor(scaled)
    frac = scaled - sextant
    falling = (value * (1.0 - saturation * frac)).clamp(0.0, 1.0)           # q
    low = (value * (1.0 - saturation)).clamp(0.0, 1.0)                       # p
    rising = (value * (1.0 - saturation * (1.0 - frac))).clamp(0.0, 1.0)     # t
    levels = ember.stack([value, falling, low, rising], dim=-3)
    # for each sextant of the hue circle, which of (v, q, p, t) gives R, G and B
    table = ember.tensor([[0, 3, 2], [1, 0, 2], [2, 0, 3], [2, 1, 0], [3, 2, 0], [0, 2, 1]])
    picks = table[ember.remainder(sextant.to(ember.int64), 6)]              # (..., H, W, 3)
    return ember.gather(levels, -3, picks.movedim(-1, -3))


def adjust_hue(img: Tensor, hue_factor: float) -> Tensor:
    """Rotate the hue by ``hue_factor`` turns (in [-0.5, 0.5])."""
    if _channels(img) == 1:
        return img
    rgb = img if img.is_floating_point() else convert_image_dtype(img, ember.float32)
    hue, saturation, value = _rgb_to_hsv(rgb)
    out = _hsv_to_rgb(ember.remainder(hue + hue_factor, 1.0), saturation, value)
    if img.dtype == ember.uint8:
        return convert_image_dtype(out, img.dtype)
    return out


def adjust_gamma(img: Tensor, gamma: float, gain: float = 1.0) -> Tensor:
    unit = img if img.is_floating_point() else convert_image_dtype(img, ember.float32)
    return convert_image_dtype((gain * unit ** gamma).clamp(0, 1), img.dtype)


def invert(img: Tensor) -> Tensor:
    if img.dtype == ember.uint8:
        return (255 - img.to(ember.int16)).to(ember.uint8)
    return _max_value(img.dtype) - img


def solarize(img: Tensor, threshold: float) -> Tensor:
    """Invert the pixels at or above ``threshold``."""
    return ember.where(img >= threshold, invert(img), img)


def _smoothed(img: Tensor) -> Tensor:
    channels = img.shape[-3]
    kernel = ember.ones([3, 3], dtype=_float_dtype(img))
    kernel[1, 1] = 5.0
    kernel = (kernel / 13.0).expand(channels, 1, 3, 3)
    out = img.clone()
    smooth = F.conv2d(_to_batch(img, _float_dtype(img)), kernel, groups=channels)
    out[..., 1:-1, 1:-1] = _restore(smooth, img)
    return out


def adjust_sharpness(img: Tensor, sharpness_factor: float) -> Tensor:
    """Blend with a smoothed copy (3x3 kernel, centre weight 5, borders kept)."""
    if img.shape[-1] <= 2 or img.shape[-2] <= 2:
        return img
    return _mix(img, _smoothed(img), sharpness_factor)


def _require_uint8(img: Tensor):
    if img.dtype != ember.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")


def posterize(img: Tensor, bits: int) -> Tensor:
    """Keep the ``bits`` highest bits of each 8-bit value."""
    _require_uint8(img)
    return img & int(256 - 2 ** (8 - bits))


def autocontrast(img: Tensor) -> Tensor:
    """Stretch each channel linearly so its minimum maps to 0 and its maximum to the top."""
    if img.dim() < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.dim()}")
    top, dtype = _max_value(img.dtype), _float_dtype(img)
    low = img.amin(dim=[-2, -1], keepdim=True).to(dtype)
    span = img.amax(dim=[-2, -1], keepdim=True).to(dtype) - low
    flat = span == 0
    stretched = (img - low) * (top / ember.where(flat, ember.ones_like(span), span))
    return ember.where(flat, img.to(dtype), stretched).clamp(0, top).to(img.dtype)


def _equalize_channel(ch: Tensor) -> Tensor:
    """Pillow's histogram equalisation of one uint8 (H, W) channel."""
    hist = ember.bincount(ch.reshape(-1).to(ember.int64), minlength=256)
    used = hist[hist != 0]
    step = ember.div(used[:-1].sum(), 255, rounding_mode="floor")
    if int(step.item()) == 0:
        return ch
    lut = ember.div(ember.cumsum(hist, 0) + ember.div(step, 2, rounding_mode="floor"), step,
                    rounding_mode="floor")
    lut = ember.cat([ember.zeros([1], dtype=lut.dtype), lut[:-1]]).clamp(0, 255)
    return lut[ch.to(ember.int64)].to(ember.uint8)


def equalize(img: Tensor) -> Tensor:
    _require_uint8(img)
    planes = img.reshape(-1, img.shape[-2], img.shape[-1])
    return ember.stack([_equalize_channel(p) for p in planes.unbind(0)]).reshape(img.shape)


# --------------------------------------------------------------------------- blur / erase
def _gaussian_kernel1d(ks: int, sigma: float, dtype: ember.dtype) -> Tensor:
    half = (ks - 1) * 0.5
    x = ember.linspace(-half, half, steps=ks, dtype=dtype)
    pdf = ember.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def gaussian_blur(img: Tensor, kernel_size: List[int], sigma: List[float]) -> Tensor:
    """Separable Gaussian blur with reflect padding; ``kernel_size`` and ``sigma`` as [x, y]."""
    dtype, channels = _float_dtype(img), img.shape[-3]
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], dtype)
    kernel = (ky[:, None] * kx[None, :]).expand(channels, 1, kernel_size[1], kernel_size[0])
    rx, ry = kernel_size[0] // 2, kernel_size[1] // 2
    batch = F.pad(_to_batch(img, dtype), [rx, rx, ry, ry], mode="reflect")
    return _restore(F.conv2d(batch, kernel, groups=channels), img)


def erase(img: Tensor, i: int, j: int, h: int, w: int, v: Tensor, inplace: bool = False) -> Tensor:
    """Set the (h, w) box at (i, j) to ``v``."""
    out = img if inplace else img.clone()
    out[..., i:i + h, j:j + w] = v
    return out
