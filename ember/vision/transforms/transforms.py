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
from .functional import InterpolationMode, _require, _setup_size


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
def _check_length(value, name, sizes=(2,)):
    message = f"{name} should be a sequence of length {' or '.join(map(str, sizes))}."
    _require(isinstance(value, Sequence), TypeError, message)
    _require(len(value) in sizes, ValueError, message)


def _symmetric_range(value, name, sizes=(2,)):
    """A number ``x`` becomes ``[-x, x]``; a sequence must have one of ``sizes`` lengths."""
    if isinstance(value, numbers.Number):
        _require(value >= 0, ValueError, f"If {name} is a single number, it must be positive.")
        return [-float(value), float(value)]
    _check_length(value, name, sizes)
    return [float(v) for v in value]


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
        values = ((name, getattr(self, name)) for name in self._shown)
        return ", ".join(f"{name}={getattr(v, 'value', v)}" for name, v in values)

    def __repr__(self):
        return f"{type(self).__name__}({self.extra_repr()})"


class _Op(_Shown, nn.Module):
    """A module whose ``forward(img)`` is ``_fn(img, *attributes named in _args)``."""
    __repr__ = nn.Module.__repr__
    _fn, _args = None, ()

    def _keep(self, **attrs):
        """Module set-up, then the constructor's arguments kept as attributes."""
        nn.Module.__init__(self)
        for name, value in attrs.items():
            setattr(self, name, value)

    def forward(self, img):
        return type(self)._fn(img, *(getattr(self, name) for name in self._args))


class _Coin(_Op):
    """Applies ``_fn`` with probability ``p`` (one ``rand`` draw per call)."""
    _shown = ("p",)

    def __init__(self, p=0.5):
        self._keep(p=p)

    def forward(self, img):
        return super().forward(img) if _coin() < self.p else img


# --------------------------------------------------------------------------- deterministic
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
        _require(callable(lambd), TypeError,
                 f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd

    def __call__(self, img):
        return self.lambd(img)


class ConvertImageDtype(_Op):
    _fn, _args = F.convert_image_dtype, ("dtype",)

    def __init__(self, dtype):
        self._keep(dtype=dtype)


class Normalize(_Op):
    _fn, _args, _shown = F.normalize, ("mean", "std", "inplace"), ("mean", "std")

    def __init__(self, mean, std, inplace=False):
        self._keep(mean=mean, std=std, inplace=inplace)


class Resize(_Op):
    _fn = F.resize
    _args = _shown = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        _require(size is None or isinstance(size, (int, Sequence)), TypeError,
                 f"Size should be int or sequence. Got {type(size)}")
        self._keep(size=size, interpolation=F._as_mode(interpolation), max_size=max_size,
                   antialias=antialias)


class CenterCrop(_Op):
    _fn, _args = F.center_crop, ("size",)
    _shown = _args

    def __init__(self, size):
        self._keep(size=_setup_size(size))


class FiveCrop(CenterCrop):
    _fn = F.five_crop


class TenCrop(_Op):
    _fn, _args = F.ten_crop, ("size", "vertical_flip")
    _shown = _args

    def __init__(self, size, vertical_flip=False):
        self._keep(size=_setup_size(size), vertical_flip=vertical_flip)


class Pad(_Op):
    _fn, _args = F.pad, ("padding", "fill", "padding_mode")
    _shown = _args

    def __init__(self, padding, fill=0, padding_mode="constant"):
        F._check_pad_args(padding, fill, padding_mode)
        _require(isinstance(fill, (numbers.Number, tuple, list)), TypeError,     # no colour names
                 "Got inappropriate fill arg")
        self._keep(padding=padding, fill=fill, padding_mode=padding_mode)


class Grayscale(_Op):
    _fn, _args = F.rgb_to_grayscale, ("num_output_channels",)
    _shown = _args

    def __init__(self, num_output_channels=1):
        self._keep(num_output_channels=num_output_channels)


# --------------------------------------------------------------------------- choosing transforms
class RandomTransforms:
    """Base of the transforms that pick among ``transforms`` with Python's ``random``."""

    def __init__(self, transforms):
        _require(isinstance(transforms, Sequence), TypeError,
                 "Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()

    __repr__ = Compose.__repr__


class RandomOrder(RandomTransforms):
    def __call__(self, img):
        shuffled = list(self.transforms)
        random.shuffle(shuffled)
        return Compose(shuffled)(img)


class RandomChoice(RandomTransforms):
    def __init__(self, transforms, p=None):
        _require(p is None or isinstance(p, Sequence), TypeError, "Argument p should be a sequence")
        super().__init__(transforms)
        self.p = p

    def __call__(self, *args):
        chosen, = random.choices(self.transforms, self.p)
        return chosen(*args)


class RandomApply(_Op):
    """All of ``transforms`` with probability ``p`` (applied unless ``p < rand()``)."""
    _shown = ("p",)

    def __init__(self, transforms, p=0.5):
        self._keep(transforms=transforms, p=p)

    def forward(self, img):
        return img if self.p < _coin() else Compose(self.transforms)(img)


# --------------------------------------------------------------------------- coin-flip transforms
class RandomHorizontalFlip(_Coin):
    _fn = F.hflip


class RandomVerticalFlip(_Coin):
    _fn = F.vflip


class RandomInvert(_Coin):
    _fn = F.invert


class RandomAutocontrast(_Coin):
    _fn = F.autocontrast


class RandomEqualize(_Coin):
    _fn = F.equalize


class RandomSolarize(_Coin):
    _fn, _args, _shown = F.solarize, ("threshold",), ("threshold", "p")

    def __init__(self, threshold, p=0.5):
        self._keep(threshold=threshold, p=p)


class RandomAdjustSharpness(_Coin):
    _fn, _args, _shown = F.adjust_sharpness, ("sharpness_factor",), ("sharpness_factor", "p")

    def __init__(self, sharpness_factor, p=0.5):
        self._keep(sharpness_factor=sharpness_factor, p=p)


class RandomPosterize(_Coin):
    _fn, _args, _shown = F.posterize, ("bits",), ("bits", "p")

    def __init__(self, bits, p=0.5):
        self._keep(bits=bits, p=p)


class RandomGrayscale(_Coin):
    def __init__(self, p=0.1):
        self._keep(p=p)

    @staticmethod
    def _fn(img):
        return F.rgb_to_grayscale(img, F.get_dimensions(img)[0])


# --------------------------------------------------------------------------- crops
class RandomCrop(_Op):
    _shown = ("size", "padding")

    @staticmethod
    def get_params(img, output_size):
        _, height, width = F.get_dimensions(img)
        out_h, out_w = output_size
        _require(height >= out_h and width >= out_w, ValueError,
                 f"Required crop size {(out_h, out_w)} is larger than input image size "
                 f"{(height, width)}")
        if (height, width) == (out_h, out_w):
            return 0, 0, height, width
        return _randint(0, height - out_h + 1), _randint(0, width - out_w + 1), out_h, out_w

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self._keep(size=_setup_size(size), padding=padding, pad_if_needed=pad_if_needed,
                   fill=fill, padding_mode=padding_mode)

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


class RandomResizedCrop(_Op):
    _shown = ("size", "scale", "ratio", "interpolation", "antialias")

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        for value, name in ((scale, "Scale"), (ratio, "Ratio")):
            _require(isinstance(value, Sequence), TypeError, f"{name} should be a sequence")
        _warn_if_reversed(scale, ratio)
        self._keep(size=_setup_size(size), scale=scale, ratio=ratio,
                   interpolation=F._as_mode(interpolation), antialias=antialias)

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
        _require(value >= 0, ValueError, f"If {name} is a single number, it must be non negative.")
        lo, hi = center - float(value), center + float(value)
        if clip_at_zero:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
    else:
        raise TypeError(f"{name} should be a single number or a list/tuple with length 2.")
    _require(bound[0] <= lo <= hi <= bound[1], ValueError,
             f"{name} values should be between {bound}, but got {[lo, hi]}.")
    return None if lo == hi == center else (lo, hi)


_JITTER_OPS = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)


class ColorJitter(_Op):
    _shown = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self._keep(brightness=_jitter_range(brightness, "brightness"),
                   contrast=_jitter_range(contrast, "contrast"),
                   saturation=_jitter_range(saturation, "saturation"),
                   hue=_jitter_range(hue, "hue", 0, (-0.5, 0.5), clip_at_zero=False))

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
class RandomRotation(_Op):
    _shown = ("degrees", "interpolation", "expand", "fill")

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
                 fill=0):
        if center is not None:
            _check_length(center, "center")
        self._keep(degrees=_symmetric_range(degrees, "degrees"), center=center, expand=expand,
                   interpolation=F._as_mode(interpolation), fill=0 if fill is None else fill)

    @staticmethod
    def get_params(degrees):
        return _uniform(*degrees)

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        return F.rotate(img, self.get_params(self.degrees), self.interpolation, self.expand,
                        self.center, fill)


class RandomAffine(_Op):
    _shown = ("degrees",)

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation=InterpolationMode.NEAREST, fill=0, center=None):
        degrees = _symmetric_range(degrees, "degrees")
        if translate is not None:
            _check_length(translate, "translate")
            _require(all(0.0 <= t <= 1.0 for t in translate), ValueError,
                     "translation values should be between 0 and 1")
        if scale is not None:
            _check_length(scale, "scale")
            _require(all(s > 0 for s in scale), ValueError, "scale values should be positive")
        if shear is not None:
            shear = _symmetric_range(shear, "shear", sizes=(2, 4))
        if center is not None:
            _check_length(center, "center")
        self._keep(degrees=degrees, translate=translate, scale=scale, shear=shear,
                   interpolation=F._as_mode(interpolation), fill=0 if fill is None else fill,
                   center=center)

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
        drawn = self.get_params(self.degrees, self.translate, self.scale, self.shear,
                                F.get_image_size(img))
        return F.affine(img, *drawn, interpolation=self.interpolation, fill=fill,
                        center=self.center)


class RandomPerspective(_Op):
    _shown = ("p",)

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        self._keep(p=p, distortion_scale=distortion_scale, fill=0 if fill is None else fill,
                   interpolation=F._as_mode(interpolation))

    @staticmethod
    def get_params(width, height, distortion_scale):
        """The image corners (clockwise from top-left), each moved inwards by a random amount of
        up to ``distortion_scale`` of half the side."""
        reach_x = int(distortion_scale * (width // 2))
        reach_y = int(distortion_scale * (height // 2))

        def move(edge, reach):
            return _randint(0, reach + 1) if edge == 0 else _randint(edge - reach, edge + 1)

        right, bottom = width - 1, height - 1
        corners = [[0, 0], [right, 0], [right, bottom], [0, bottom]]
        return corners, [[move(x, reach_x), move(y, reach_y)] for x, y in corners]

    def forward(self, img):
        fill = _fill_for(img, self.fill)
        if _coin() >= self.p:
            return img
        corners, moved = self.get_params(*F.get_image_size(img), self.distortion_scale)
        return F.perspective(img, corners, moved, self.interpolation, fill)


# --------------------------------------------------------------------------- blur / erase
class GaussianBlur(_Op):
    _shown = ("kernel_size", "sigma")

    def __init__(self, kernel_size, sigma=(0.1, 2.0)):
        sizes = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        _require(all(k > 0 and k % 2 == 1 for k in sizes), ValueError,
                 "Kernel size value should be an odd and positive number.")
        if isinstance(sigma, numbers.Number):
            _require(sigma > 0, ValueError, "If sigma is a single number, it must be positive.")
            sigma = (sigma, sigma)
        _require(isinstance(sigma, Sequence) and len(sigma) == 2, ValueError,
                 "sigma should be a single number or a list/tuple with length 2.")
        _require(0.0 < sigma[0] <= sigma[1], ValueError,
                 "sigma values should be positive and of the form (min, max).")
        self._keep(kernel_size=sizes, sigma=sigma)

    @staticmethod
    def get_params(sigma_min, sigma_max):
        return _uniform(sigma_min, sigma_max)

    def forward(self, img):
        sigma = self.get_params(*self.sigma)
        return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class RandomErasing(_Op):
    _shown = ("p", "scale", "ratio", "value", "inplace")

    def __init__(self, p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False):
        _require(isinstance(value, (numbers.Number, str, tuple, list)), TypeError,
                 "Argument value should be either a number or str or a sequence")
        _require(value == "random" or not isinstance(value, str), ValueError,
                 "If value is str, it should be 'random'")
        _warn_if_reversed(scale, ratio)
        _require(0 <= scale[0] and scale[1] <= 1, ValueError, "Scale should be between 0 and 1")
        _require(0 <= p <= 1, ValueError, "Random erasing probability should be between 0 and 1")
        self._keep(p=p, scale=scale, ratio=ratio, value=value, inplace=inplace)

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
        value = None
        if not isinstance(self.value, str):
            given = self.value if isinstance(self.value, (tuple, list)) else [self.value]
            value = [float(v) for v in given]
            channels = img.shape[-3]
            _require(len(value) in (1, channels), ValueError,
                     "If value is a sequence, it should have either a single value or "
                     f"{channels} (number of input channels)")
        top, left, h, w, patch = self.get_params(img, self.scale, self.ratio, value)
        return F.erase(img, top, left, h, w, patch, self.inplace)


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and obj.__module__ == __name__ and not name.startswith("_")]
__all__.append("InterpolationMode")
