"""torchvision.transforms (v1) classes.

Every random transform draws its parameters first (from ember's global RNG, in the order
torchvision draws from torch's, so a seeded run picks the same crops, angles and flips) and then
calls one op of ``functional``. ``RandomChoice``/``RandomOrder`` use Python's ``random``, as
torchvision does."""
import math
import numbers
import random
import warnings
from collections.abc import Sequence

import ember
from ember import nn
from . import functional as F
from .functional import InterpolationMode, _setup_size

__all__ = ["Compose", "ToTensor", "PILToTensor", "ConvertImageDtype", "ToPILImage", "Normalize",
           "Resize", "CenterCrop", "Pad", "Lambda", "RandomApply", "RandomChoice", "RandomOrder",
           "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomResizedCrop",
           "FiveCrop", "TenCrop", "ColorJitter", "RandomRotation", "RandomAffine", "Grayscale",
           "RandomGrayscale", "GaussianBlur", "RandomErasing", "InterpolationMode",
           "RandomInvert", "RandomSolarize", "RandomAdjustSharpness", "RandomPerspective",
           "RandomPosterize", "RandomAutocontrast", "RandomEqualize", "RandomTransforms"]


# --------------------------------------------------------------------------- random draws
def _uniform(lo, hi):
    """One float32 draw from U(lo, hi), as ``torch.empty(1).uniform_`` makes it."""
    return ember.empty(1).uniform_(float(lo), float(hi)).item()


def _randint(lo, hi):
    return int(ember.randint(lo, hi, size=(1,)).item())


def _coin():
    return ember.rand(1).item()


def _box_sides(area, scale, ratio):
    """Up to ten candidate (long-along-ratio, short) side pairs for a box of a random share of
    ``area`` and a log-uniform aspect ratio (RandomResizedCrop and RandomErasing)."""
    log_lo, log_hi = ember.log(ember.tensor(ratio)).tolist()
    for _ in range(10):
        target = area * _uniform(*scale)
        aspect = ember.empty(1).uniform_(log_lo, log_hi).exp().item()
        yield int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))


# --------------------------------------------------------------------------- argument checks
def _symmetric_range(value, name, sizes=(2,)):
    """A number ``x`` becomes ``[-x, x]``; a sequence must have one of ``sizes`` lengths."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        return [-float(value), float(value)]
    _check_length(value, name, sizes)
    return [float(v) for v in value]


def _check_length(value, name, sizes=(2,)):
    wanted = " or ".join(str(n) for n in sizes)
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} should be a sequence of length {wanted}.")
    if len(value) not in sizes:
        raise ValueError(f"{name} should be a sequence of length {wanted}.")


def _fill_for(img, fill):
    """Tensor images take one float fill per channel; PIL images take the fill as given."""
    if not F._is_tensor(img):
        return fill
    if isinstance(fill, (int, float)):
        return [float(fill)] * F.get_dimensions(img)[0]
    return [float(v) for v in fill]


def _warn_if_reversed(scale, ratio):
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        warnings.warn("Scale and ratio should be of kind (min, max)")


# --------------------------------------------------------------------------- bases
class _Shown:
    """``repr`` lists the attributes named in ``_shown``."""
    _shown = ()

    def extra_repr(self):
        return ", ".join(f"{name}={getattr(self, name)}" for name in self._shown)

    def __repr__(self):
        return f"{type(self).__name__}({self.extra_repr()})"


class _Module(_Shown, nn.Module):
    __repr__ = nn.Module.__repr__


class _Coin(_Module):
    """Applies ``_op`` with probability ``p`` (one ``rand`` draw per call)."""
    _shown = ("p",)

    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        return self._op(img) if _coin() < self.p else img


# --------------------------------------------------------------------------- plain wrappers
class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for transform in self.transforms:
            img = transform(img)
        return img

    def __repr__(self):
        lines = [f"    {t}" for t in self.transforms]
        return "\n".join([f"{type(self).__name__}(", *lines, ")"])


class ToTensor(_Shown):
    def __call__(self, pic):
        return F.to_tensor(pic)


class PILToTensor(_Shown):
    def __call__(self, pic):
        return F.pil_to_tensor(pic)


class ToPILImage(_Shown):
    _shown = ("mode",)

    def __init__(self, mode=None):
        self.mode = mode

    def __call__(self, pic):
        return F.to_pil_image(pic, self.mode)


class Lambda(_Shown):
    def __init__(self, lambd):
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


class ConvertImageDtype(_Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, image):
        return F.convert_image_dtype(image, self.dtype)


class Normalize(_Module):
    _shown = ("mean", "std")

    def __init__(self, mean, std, inplace=False):
        super().__init__()
        self.mean, self.std, self.inplace = mean, std, inplace

    def forward(self, tensor):
        return F.normalize(tensor, self.mean, self.std, self.inplace)


class Resize(_Module):
    _shown = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        super().__init__()
        if size is not None and not isinstance(size, (int, Sequence)):
            raise TypeError(f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence) and not 1 <= len(size) <= 2:
            raise ValueError("If size is a sequence, it should have 1 or 2 values")
        self.size, self.max_size, self.antialias = size, max_size, antialias
        self.interpolation = F._as_mode(interpolation)

    def forward(self, img):
        return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)


class CenterCrop(_Module):
    _shown = ("size",)

    def __init__(self, size):
        super().__init__()
        self.size = _setup_size(size)

    def forward(self, img):
        return F.center_crop(img, self.size)


class FiveCrop(CenterCrop):
    def forward(self, img):
        return F.five_crop(img, self.size)


class TenCrop(CenterCrop):
    _shown = ("size", "vertical_flip")

    def __init__(self, size, vertical_flip=False):
        super().__init__(size)
        self.vertical_flip = vertical_flip

    def forward(self, img):
        return F.ten_crop(img, self.size, self.vertical_flip)


class Pad(_Module):
    _shown = ("padding", "fill", "padding_mode")

    def __init__(self, padding, fill=0, padding_mode="constant"):
        super().__init__()
        F._check_pad_args(padding, fill, padding_mode)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def forward(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class Grayscale(_Module):
    _shown = ("num_output_channels",)

    def __init__(self, num_output_channels=1):
        super().__init__()
        self.num_output_channels = num_output_channels

    def forward(self, img):
        return F.rgb_to_grayscale(img, self.num_output_channels)


# --------------------------------------------------------------------------- choosing transforms
class RandomTransforms:
    def __init__(self, transforms):
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    def __repr__(self):
        return Compose.__repr__(self)


class RandomOrder(RandomTransforms):
    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        return Compose([self.transforms[k] for k in order])(img)


class RandomChoice(RandomTransforms):
    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        return random.choices(self.transforms, weights=self.p)[0](*args)


class RandomApply(_Module):
    """All of ``transforms`` with probability ``p`` (applied unless ``p < rand()``)."""
    _shown = ("p",)

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, img):
        return img if self.p < _coin() else Compose(self.transforms)(img)


# --------------------------------------------------------------------------- coin-flip transforms
class RandomHorizontalFlip(_Coin):
    def _op(self, img):
        return F.hflip(img)


class RandomVerticalFlip(_Coin):
    def _op(self, img):
        return F.vflip(img)


class RandomInvert(_Coin):
    def _op(self, img):
        return F.invert(img)


class RandomAutocontrast(_Coin):
    def _op(self, img):
        return F.autocontrast(img)


class RandomEqualize(_Coin):
    def _op(self, img):
        return F.equalize(img)


class RandomSolarize(_Coin):
    _shown = ("threshold", "p")

    def __init__(self, threshold, p=0.5):
        super().__init__(p)
        self.threshold = threshold

    def _op(self, img):
        return F.solarize(img, self.threshold)


class RandomAdjustSharpness(_Coin):
    _shown = ("sharpness_factor", "p")

    def __init__(self, sharpness_factor, p=0.5):
        super().__init__(p)
        self.sharpness_factor = sharpness_factor

    def _op(self, img):
        return F.adjust_sharpness(img, self.sharpness_factor)


class RandomPosterize(_Coin):
    _shown = ("bits", "p")

    def __init__(self, bits, p=0.5):
        super().__init__(p)
        self.bits = bits

    def _op(self, img):
        return F.posterize(img, self.bits)


class RandomGrayscale(_Coin):
    def __init__(self, p=0.1):
        super().__init__(p)

    def _op(self, img):
        return F.rgb_to_grayscale(img, F.get_dimensions(img)[0])


# --------------------------------------------------------------------------- crops
class RandomCrop(_Module):
    _shown = ("size", "padding")

    @staticmethod
    def get_params(img, output_size):
        _, height, width = F.get_dimensions(img)
        out_h, out_w = output_size
        if height < out_h or width < out_w:
            raise ValueError(f"Required crop size {(out_h, out_w)} is larger than input image "
                             f"size {(height, width)}")
        if (height, width) == (out_h, out_w):
            return 0, 0, height, width
        return _randint(0, height - out_h + 1), _randint(0, width - out_w + 1), out_h, out_w

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = tuple(_setup_size(size))
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode = fill, padding_mode

    def _pad(self, img, padding):
        return F.pad(img, padding, self.fill, self.padding_mode)

    def forward(self, img):
        if self.padding is not None:
            img = self._pad(img, self.padding)
        if self.pad_if_needed:        # widen first, then heighten, each on both sides
            short_w = self.size[1] - F.get_dimensions(img)[2]
            if short_w > 0:
                img = self._pad(img, [short_w, 0])
            short_h = self.size[0] - F.get_dimensions(img)[1]
            if short_h > 0:
                img = self._pad(img, [0, short_h])
        return F.crop(img, *self.get_params(img, self.size))


class RandomResizedCrop(_Module):
    _shown = ("size", "scale", "ratio", "interpolation", "antialias")

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        super().__init__()
        self.size = _setup_size(size)
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        _warn_if_reversed(scale, ratio)
        self.interpolation = F._as_mode(interpolation)
        self.antialias, self.scale, self.ratio = antialias, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        _, height, width = F.get_dimensions(img)
        for w, h in _box_sides(height * width, scale, ratio):
            if 0 < w <= width and 0 < h <= height:
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w
        # ten misses: the largest centred box whose aspect ratio lies within ``ratio``
        lo, hi = min(ratio), max(ratio)
        w, h = width, height
        if width / height < lo:
            h = int(round(width / lo))
        elif width / height > hi:
            w = int(round(height * hi))
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        box = self.get_params(img, self.scale, self.ratio)
        return F.resized_crop(img, *box, self.size, self.interpolation, antialias=self.antialias)


# --------------------------------------------------------------------------- colour
def _jitter_range(value, name, center=1.0, bound=(0, float("inf")), clip_at_zero=True):
    """A factor range for ColorJitter: ``x`` means ``center -/+ x``; None when it is a no-op."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError(f"If {name} is a single number, it must be non negative.")
        lo, hi = center - float(value), center + float(value)
        if clip_at_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    if not bound[0] <= lo <= hi <= bound[1]:
        raise ValueError(f"{name} values should be between {bound}, but got {[lo, hi]}.")
    return None if lo == hi == center else (lo, hi)


_JITTER_OPS = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)


class ColorJitter(_Module):
    _shown = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self.brightness = _jitter_range(brightness, "brightness")
        self.contrast = _jitter_range(contrast, "contrast")
        self.saturation = _jitter_range(saturation, "saturation")
        self.hue = _jitter_range(hue, "hue", 0, (-0.5, 0.5), clip_at_zero=False)

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        """A random order of the four ops, then one factor per enabled op."""
        order = ember.randperm(4)
        factors = [None if r is None else _uniform(*r)
                   for r in (brightness, contrast, saturation, hue)]
        return (order, *factors)

    def forward(self, img):
        order, *factors = self.get_params(*(getattr(self, n) for n in self._shown))
        for k in order.tolist():
            if factors[k] is not None:
                img = _JITTER_OPS[k](img, factors[k])
        return img


# --------------------------------------------------------------------------- geometry
class RandomRotation(_Module):
    _shown = ("degrees", "interpolation", "expand", "fill")

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
                 fill=0):
        super().__init__()
        self.interpolation = F._as_mode(interpolation)
        self.degrees = _symmetric_range(degrees, "degrees")
        if center is not None:
            _check_length(center, "center")
        self.center, self.expand = center, expand
        self.fill = 0 if fill is None else fill

    @staticmethod
    def get_params(degrees):
        return _uniform(*degrees)

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        return F.rotate(img, self.get_params(self.degrees), self.interpolation, self.expand,
                        self.center, fill)


class RandomAffine(_Module):
    _shown = ("degrees",)

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        super().__init__()
        self.interpolation = F._as_mode(interpolation)
        self.degrees = _symmetric_range(degrees, "degrees")
        if translate is not None:
            _check_length(translate, "translate")
            if any(not 0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translation values should be between 0 and 1")
        if scale is not None:
            _check_length(scale, "scale")
            if any(s <= 0 for s in scale):
                raise ValueError("scale values should be positive")
        if shear is not None:
            shear = _symmetric_range(shear, "shear", sizes=(2, 4))
        if center is not None:
            _check_length(center, "center")
        self.translate, self.scale, self.shear, self.center = translate, scale, shear, center
        self.fill = 0 if fill is None else fill

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        """(angle, (tx, ty), scale, (shear_x, shear_y)); drawn in that order."""
        angle = _uniform(*degrees)
        shift = (0, 0)
        if translate is not None:
            reach = [float(t * n) for t, n in zip(translate, img_size)]
            shift = tuple(int(round(_uniform(-r, r))) for r in reach)
        scale = 1.0 if scale_ranges is None else _uniform(*scale_ranges)
        shear = [0.0, 0.0]
        if shears is not None:
            for axis in range(len(shears) // 2):
                shear[axis] = _uniform(shears[2 * axis], shears[2 * axis + 1])
        return angle, shift, scale, tuple(shear)

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        size = F.get_image_size(img)
        angle, shift, scale, shear = self.get_params(self.degrees, self.translate, self.scale,
                                                     self.shear, size)
        return F.affine(img, angle, shift, scale, shear, interpolation=self.interpolation,
                        fill=fill, center=self.center)


class RandomPerspective(_Module):
    _shown = ("p",)

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        super().__init__()
        self.p, self.distortion_scale = p, distortion_scale
        self.interpolation = F._as_mode(interpolation)
        self.fill = 0 if fill is None else fill

    @staticmethod
    def get_params(width, height, distortion_scale):
        """The image corners (clockwise from top-left), each moved inwards by a random amount of
        up to ``distortion_scale`` of half the side."""
        reach_x = int(distortion_scale * (width // 2))
        reach_y = int(distortion_scale * (height // 2))

        def move(edge, reach):
            return _randint(0, reach + 1) if edge == 0 else _randint(edge - reach, edge + 1)

        corners = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        moved = [[move(x, reach_x), move(y, reach_y)] for x, y in corners]
        return corners, moved

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        if _coin() >= self.p:
            return img
        width, height = F.get_image_size(img)
        corners, moved = self.get_params(width, height, self.distortion_scale)
        return F.perspective(img, corners, moved, self.interpolation, fill)


# --------------------------------------------------------------------------- blur / erase
class GaussianBlur(_Module):
    _shown = ("kernel_size", "sigma")

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        if any(k <= 0 or k % 2 == 0 for k in self.kernel_size):
            raise ValueError("Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            if sigma <= 0:
                raise ValueError("If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        elif not (isinstance(sigma, Sequence) and len(sigma) == 2):
            raise ValueError("sigma should be a single number or a list/tuple with length 2.")
        elif not 0.0 < sigma[0] <= sigma[1]:
            raise ValueError("sigma values should be positive and of the form (min, max).")
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(*self.sigma)
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class RandomErasing(_Module):
    _shown = ("p", "scale", "ratio", "value", "inplace")

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        _warn_if_reversed(scale, ratio)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        if not 0 <= p <= 1:
            raise ValueError("Random erasing probability should be between 0 and 1")
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        """(top, left, height, width, patch); ``value`` None draws a standard-normal patch."""
        channels, height, width = img.shape[-3:]
        for h, w in _box_sides(height * width, scale, ratio):
            if h < height and w < width:
                if value is None:
                    patch = ember.empty([channels, h, w], dtype=ember.float32).normal_()
                else:
                    patch = ember.tensor(value)[:, None, None]
                return _randint(0, height - h + 1), _randint(0, width - w + 1), h, w, patch
        return 0, 0, height, width, img

    def forward(self, img):
        if _coin() >= self.p:
            return img
        value = self.value
        if isinstance(value, str):
            value = None
        else:
            value = [float(v) for v in (value if isinstance(value, (tuple, list)) else [value])]
            channels = img.shape[-3]
            if len(value) not in (1, channels):
                raise ValueError("If value is a sequence, it should have either a single value "
                                 f"or {channels} (number of input channels)")
        box = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
        return F.erase(img, *box, self.inplace)
