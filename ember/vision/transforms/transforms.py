"""torchvision.transforms (v1) classes.

Every random transform draws its parameters first (from ember's global RNG, in the order
torchvision draws from torch's, so a seeded run picks the same crops, angles and flips) and then
calls one op. The ``nn.Module`` transforms are ``ember.jit.script``-able: ``forward`` sends
PIL images to ``functional`` and tensors (any leading dims) to ``_functional_tensor``, which
is what the scripted module runs too; modes, sizes and fills are kept in script-friendly
private attributes (``_mode``, ``_size``, ``_fill``). ``RandomChoice``/``RandomOrder`` use
Python's ``random``, as torchvision does."""
import math
import numbers
import random
import warnings
from collections.abc import Sequence
from typing import List, Optional, Tuple

import ember
from ember import Tensor, nn
from . import _functional_tensor as FT
from . import functional as F
from .functional import InterpolationMode, _require, _setup_size


# --------------------------------------------------------------------------- random draws
def _uniform(lo: float, hi: float) -> float:
    """One float32 draw from U(lo, hi), as ``torch.empty(1).uniform_`` makes it."""
    return float(ember.empty(1).uniform_(float(lo), float(hi)).item())


def _randint(lo: int, hi: int) -> int:
    return int(ember.randint(lo, hi, size=(1,)).item())


def _coin() -> float:
    return float(ember.rand(1).item())


def _hw(img: Tensor) -> List[int]:
    """[height, width] of a tensor or PIL image."""
    if not isinstance(img, Tensor):
        return F.get_dimensions(img)[1:]
    return [img.shape[-2], img.shape[-1]]


def _floats(values) -> List[float]:
    return [float(v) for v in values]


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


def _fill_list(fill):
    """The fill for tensor images: a list of floats (one, or one per channel)."""
    if fill is None:
        return [0.0]
    if isinstance(fill, (int, float)):
        return [float(fill)]
    return [float(v) for v in fill]


def _warn_if_reversed(scale, ratio):
    if scale[0] > scale[1] or ratio[0] > ratio[1]:
        warnings.warn("Scale and ratio should be of kind (min, max)")


# --------------------------------------------------------------------------- bases
class _Shown:
    """``repr`` lists the attributes named in ``_shown``."""
    _shown = ()
    _sep = ", "         # torchvision joins some transforms' fields with a bare ","

    def extra_repr(self):
        values = ((name, getattr(self, name)) for name in self._shown)
        return self._sep.join(f"{name}={getattr(v, 'value', v)}" for name, v in values)

    def __repr__(self):
        return f"{type(self).__name__}({self.extra_repr()})"


class _Op(_Shown, nn.Module):
    """A scriptable transform: ``forward`` is written out per class."""
    __repr__ = nn.Module.__repr__

    def _keep(self, **attrs):
        """Module set-up, then the constructor's arguments kept as attributes."""
        nn.Module.__init__(self)
        for name, value in attrs.items():
            setattr(self, name, value)


# --------------------------------------------------------------------------- deterministic
class Compose:
    """Applies ``transforms`` in order (not scriptable: script ``nn.Sequential(*transforms)``)."""

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

    def extra_repr(self):
        return "" if self.mode is None else super().extra_repr()

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
    def __init__(self, dtype):
        self._keep(dtype=dtype)

    def forward(self, image):
        if not isinstance(image, Tensor):
            return F.convert_image_dtype(image, self.dtype)
        return FT.convert_image_dtype(image, self.dtype)


class Normalize(_Op):
    _shown = ("mean", "std")

    def __init__(self, mean, std, inplace=False):
        self._keep(mean=mean, std=std, inplace=inplace,
                   _mean=_floats(ember.as_tensor(mean).flatten().tolist()),
                   _std=_floats(ember.as_tensor(std).flatten().tolist()))

    def forward(self, tensor):
        if not isinstance(tensor, Tensor):
            return F.normalize(tensor, self.mean, self.std, self.inplace)
        return FT.normalize(tensor, self._mean, self._std, self.inplace)


class LinearTransformation(_Op):
    """Flatten each (C, H, W) image, subtract ``mean_vector``, multiply by
    ``transformation_matrix`` (D x D, D = C*H*W) and reshape back."""
    _shown = ()

    def __init__(self, transformation_matrix, mean_vector):
        m = transformation_matrix
        _require(m.size(0) == m.size(1), ValueError,
                 "transformation_matrix should be square. Got "
                 f"{tuple(m.size())} rectangular matrix.")
        _require(mean_vector.size(0) == m.size(0), ValueError,
                 f"mean_vector should have the same length {mean_vector.size(0)} as any one of "
                 f"the dimensions of the transformation_matrix [{tuple(m.size())}]")
        _require(m.dtype == mean_vector.dtype, ValueError,
                 f"Input tensors should have the same dtype. Got {m.dtype} and {mean_vector.dtype}")
        self._keep(transformation_matrix=m, mean_vector=mean_vector)

    def forward(self, tensor):
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError("Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != "
                             f"{self.transformation_matrix.shape[0]}")
        if tensor.dtype != self.mean_vector.dtype:
            raise ValueError("Input tensor should have the same dtype as transformation matrix "
                             f"and mean vector, but got {tensor.dtype} and {self.mean_vector.dtype}")
        flat = tensor.reshape(-1, n) - self.mean_vector
        return ember.mm(flat, self.transformation_matrix).reshape(shape)

    def extra_repr(self):
        return (f"transformation_matrix={self.transformation_matrix.tolist()}, "
                f"mean_vector={self.mean_vector.tolist()}")


def _size_list(size) -> Optional[List[int]]:
    if size is None:
        return None
    if isinstance(size, numbers.Integral):
        return [int(size)]
    return [int(v) for v in size]


class Resize(_Op):
    _shown = ("size", "interpolation", "max_size", "antialias")

    def __init__(self, size, interpolation=InterpolationMode.BILINEAR, max_size=None,
                 antialias=True):
        _require(size is None or isinstance(size, (int, Sequence)), TypeError,
                 f"Size should be int or sequence. Got {type(size)}")
        if isinstance(size, Sequence):
            _require(len(size) in (1, 2), ValueError,
                     "If size is a sequence, it should have 1 or 2 values")
        mode = F._as_mode(interpolation)
        self._keep(size=size, interpolation=mode, max_size=max_size, antialias=antialias,
                   _size=_size_list(size), _mode=mode.value)

    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.resize(img, self.size, self.interpolation, self.max_size, self.antialias)
        return FT.resize(img, self._size, self._mode, self.max_size, self.antialias)


class CenterCrop(_Op):
    _shown = ("size",)

    def __init__(self, size):
        self._keep(size=_setup_size(size))

    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.center_crop(img, self.size)
        return FT.center_crop(img, [self.size[0], self.size[1]])


class FiveCrop(CenterCrop):
    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.five_crop(img, self.size)
        return FT.five_crop(img, [self.size[0], self.size[1]])


class TenCrop(_Op):
    _shown = ("size", "vertical_flip")

    def __init__(self, size, vertical_flip=False):
        self._keep(size=_setup_size(size), vertical_flip=vertical_flip)

    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.ten_crop(img, self.size, self.vertical_flip)
        return FT.ten_crop(img, [self.size[0], self.size[1]], self.vertical_flip)


def _pad_list(padding) -> List[int]:
    return [int(padding)] if isinstance(padding, numbers.Number) else [int(v) for v in padding]


class Pad(_Op):
    _shown = ("padding", "fill", "padding_mode")

    def __init__(self, padding, fill=0, padding_mode="constant"):
        F._check_pad_args(padding, fill, padding_mode)
        _require(isinstance(fill, (numbers.Number, tuple, list)), TypeError,     # no colour names
                 "Got inappropriate fill arg")
        self._keep(padding=padding, fill=fill, padding_mode=padding_mode,
                   _padding=_pad_list(padding), _fill=_fill_list(fill),
                   _fill_is_number=isinstance(fill, numbers.Number))

    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.pad(img, self.padding, self.fill, self.padding_mode)
        if not self._fill_is_number:
            raise TypeError("Got inappropriate fill arg")
        return FT.pad(img, self._padding, self._fill[0], self.padding_mode)


class Grayscale(_Op):
    _shown = ("num_output_channels",)

    def __init__(self, num_output_channels=1):
        self._keep(num_output_channels=num_output_channels)

    def forward(self, img):
        if not isinstance(img, Tensor):
            return F.rgb_to_grayscale(img, self.num_output_channels)
        return FT.rgb_to_grayscale(img, self.num_output_channels)


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
    """All of ``transforms`` with probability ``p`` (applied unless ``p < rand()``); scriptable
    when ``transforms`` is an ``nn.ModuleList`` of scriptable transforms."""
    _shown = ("p",)

    def __init__(self, transforms, p=0.5):
        self._keep(transforms=transforms, p=p)

    def forward(self, img):
        if self.p < _coin():
            return img
        for t in self.transforms:
            img = t(img)
        return img


# --------------------------------------------------------------------------- coin-flip transforms
class _Coin(_Op):
    """Applies one op with probability ``p`` (one ``rand`` draw per call): for a PIL image
    ``functional.<_OP>(img, *args)``, ``args`` being the shown attributes other than ``p``;
    for a tensor ``(..., C, H, W)`` the subclass's scriptable ``_on_tensor``."""
    _shown = ("p",)
    _OP = ""

    def __init__(self, p=0.5):
        self._keep(p=p)

    def forward(self, img):
        if _coin() < self.p:
            if not isinstance(img, Tensor):
                return self._on_pil(img)
            return self._on_tensor(img)
        return img

    def _on_pil(self, img):
        args = [getattr(self, name) for name in self._shown if name != "p"]
        return getattr(F, self._OP)(img, *args)


class RandomHorizontalFlip(_Coin):
    _OP = "hflip"

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.hflip(img)


class RandomVerticalFlip(_Coin):
    _OP = "vflip"

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.vflip(img)


class RandomInvert(_Coin):
    _OP = "invert"

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.invert(img)


class RandomAutocontrast(_Coin):
    _OP = "autocontrast"

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.autocontrast(img)


class RandomEqualize(_Coin):
    _OP = "equalize"

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.equalize(img)


class RandomSolarize(_Coin):
    _shown = ("threshold", "p")
    _sep = ","
    _OP = "solarize"

    def __init__(self, threshold, p=0.5):
        self._keep(threshold=threshold, p=p)

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.solarize(img, float(self.threshold))


class RandomAdjustSharpness(_Coin):
    _shown = ("sharpness_factor", "p")
    _sep = ","
    _OP = "adjust_sharpness"

    def __init__(self, sharpness_factor, p=0.5):
        self._keep(sharpness_factor=sharpness_factor, p=p)

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.adjust_sharpness(img, float(self.sharpness_factor))


class RandomPosterize(_Coin):
    _shown = ("bits", "p")
    _sep = ","
    _OP = "posterize"

    def __init__(self, bits, p=0.5):
        self._keep(bits=bits, p=p)

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.posterize(img, self.bits)


class RandomGrayscale(_Coin):
    """Grayscale with as many output channels as the input has, with probability ``p``."""

    def __init__(self, p=0.1):
        self._keep(p=p)

    def _on_pil(self, img):
        return F.rgb_to_grayscale(img, F.get_dimensions(img)[0])

    def _on_tensor(self, img: Tensor) -> Tensor:
        return FT.rgb_to_grayscale(img, img.shape[-3])


# --------------------------------------------------------------------------- crops
class RandomCrop(_Op):
    _shown = ("size", "padding")

    @staticmethod
    def get_params(img: Tensor, output_size: List[int]) -> Tuple[int, int, int, int]:
        hw = _hw(img)
        height, width = hw[0], hw[1]
        out_h, out_w = output_size[0], output_size[1]
        if height < out_h or width < out_w:
            raise ValueError(f"Required crop size {(out_h, out_w)} is larger than input image size "
                             f"{(height, width)}")
        if height == out_h and width == out_w:
            return 0, 0, height, width
        top = _randint(0, height - out_h + 1)
        return top, _randint(0, width - out_w + 1), out_h, out_w

    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        self._keep(size=_setup_size(size), padding=padding, pad_if_needed=pad_if_needed,
                   fill=fill, padding_mode=padding_mode,
                   _padding=None if padding is None else _pad_list(padding),
                   _fill=_fill_list(fill))

    def _pad(self, img: Tensor, padding: List[int]) -> Tensor:
        if not isinstance(img, Tensor):
            return F.pad(img, padding, self.fill, self.padding_mode)
        return FT.pad(img, padding, self._fill[0], self.padding_mode)

    def forward(self, img):
        if self._padding is not None:
            img = self._pad(img, self._padding)
        size = [self.size[0], self.size[1]]
        if self.pad_if_needed:        # widen first, then heighten, each on both sides
            short_w = size[1] - _hw(img)[1]
            if short_w > 0:
                img = self._pad(img, [short_w, 0])
            short_h = size[0] - _hw(img)[0]
            if short_h > 0:
                img = self._pad(img, [0, short_h])
        top, left, h, w = self.get_params(img, size)
        if not isinstance(img, Tensor):
            return F.crop(img, top, left, h, w)
        return FT.crop(img, top, left, h, w)


class RandomResizedCrop(_Op):
    _shown = ("size", "scale", "ratio", "interpolation", "antialias")

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0),
                 interpolation=InterpolationMode.BILINEAR, antialias=True):
        for value, name in ((scale, "Scale"), (ratio, "Ratio")):
            _require(isinstance(value, Sequence), TypeError, f"{name} should be a sequence")
        _warn_if_reversed(scale, ratio)
        mode = F._as_mode(interpolation)
        self._keep(size=_setup_size(size), scale=scale, ratio=ratio, interpolation=mode,
                   antialias=antialias, _mode=mode.value, _scale=_floats(scale),
                   _ratio=_floats(ratio))

    def extra_repr(self):
        rounded = {name: tuple(round(v, 4) for v in getattr(self, name)) for name in ("scale", "ratio")}
        return ", ".join(f"{name}={rounded.get(name, getattr(getattr(self, name), 'value', getattr(self, name)))}"
                         for name in self._shown)

    @staticmethod
    def get_params(img: Tensor, scale: List[float], ratio: List[float]) -> Tuple[int, int, int, int]:
        """Up to ten tries of a box of a random share of the area and a log-uniform aspect
        ratio; then the largest centred box whose aspect ratio lies within ``ratio``."""
        hw = _hw(img)
        height, width = hw[0], hw[1]
        area = height * width
        log_ratio = ember.log(ember.tensor([float(ratio[0]), float(ratio[1])]))
        for _ in range(10):
            target = area * _uniform(float(scale[0]), float(scale[1]))
            lo, hi = float(log_ratio[0].item()), float(log_ratio[1].item())
            aspect = float(ember.empty(1).uniform_(lo, hi).exp().item())
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                top = _randint(0, height - h + 1)
                return top, _randint(0, width - w + 1), h, w
        lo_r, hi_r = min(float(ratio[0]), float(ratio[1])), max(float(ratio[0]), float(ratio[1]))
        w, h = width, height
        if width / height < lo_r:
            h = int(round(width / lo_r))
        elif width / height > hi_r:
            w = int(round(height * hi_r))
        return (height - h) // 2, (width - w) // 2, h, w

    def forward(self, img):
        top, left, h, w = self.get_params(img, self._scale, self._ratio)
        if not isinstance(img, Tensor):
            return F.resized_crop(img, top, left, h, w, self.size, self.interpolation,
                                  antialias=self.antialias)
        return FT.resized_crop(img, top, left, h, w, [self.size[0], self.size[1]], self._mode,
                               self.antialias)


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


def _maybe_uniform(bounds: Optional[Tuple[float, float]]) -> Optional[float]:
    if bounds is None:
        return None
    return _uniform(bounds[0], bounds[1])


class ColorJitter(_Op):
    _shown = ("brightness", "contrast", "saturation", "hue")

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        self._keep(brightness=_jitter_range(brightness, "brightness"),
                   contrast=_jitter_range(contrast, "contrast"),
                   saturation=_jitter_range(saturation, "saturation"),
                   hue=_jitter_range(hue, "hue", 0, (-0.5, 0.5), clip_at_zero=False))

    @staticmethod
    def get_params(brightness: Optional[Tuple[float, float]], contrast: Optional[Tuple[float, float]],
                   saturation: Optional[Tuple[float, float]], hue: Optional[Tuple[float, float]]
                   ) -> Tuple[Tensor, Optional[float], Optional[float], Optional[float], Optional[float]]:
        """A random order of the four ops, then one factor per enabled op."""
        order = ember.randperm(4)
        b = _maybe_uniform(brightness)
        c = _maybe_uniform(contrast)
        s = _maybe_uniform(saturation)
        h = _maybe_uniform(hue)
        return order, b, c, s, h

    def forward(self, img):
        order, b, c, s, h = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for i in range(4):
            k = int(order[i].item())
            if k == 0 and b is not None:
                img = _jitter(img, k, b)
            elif k == 1 and c is not None:
                img = _jitter(img, k, c)
            elif k == 2 and s is not None:
                img = _jitter(img, k, s)
            elif k == 3 and h is not None:
                img = _jitter(img, k, h)
        return img


def _jitter(img: Tensor, k: int, factor: float) -> Tensor:
    """ColorJitter's op ``k``: brightness, contrast, saturation, hue."""
    if not isinstance(img, Tensor):
        return (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)[k](img, factor)
    if k == 0:
        return FT.adjust_brightness(img, factor)
    if k == 1:
        return FT.adjust_contrast(img, factor)
    if k == 2:
        return FT.adjust_saturation(img, factor)
    return FT.adjust_hue(img, factor)


# --------------------------------------------------------------------------- geometry
class RandomRotation(_Op):
    _shown = ("degrees", "interpolation", "expand", "fill")

    def __init__(self, degrees, interpolation=InterpolationMode.NEAREST, expand=False, center=None,
                 fill=0):
        if center is not None:
            _check_length(center, "center")
        mode = F._as_mode(interpolation)
        self._keep(degrees=_symmetric_range(degrees, "degrees"), center=center, expand=expand,
                   interpolation=mode, fill=0 if fill is None else fill, _mode=mode.value,
                   _fill=_fill_list(fill), _center=None if center is None else _floats(center))

    def extra_repr(self):
        text = f"degrees={self.degrees}, interpolation={self.interpolation.value}, expand={self.expand}"
        if self.center is not None:
            text += f", center={self.center}"
        return text + f", fill={self.fill}"

    @staticmethod
    def get_params(degrees: List[float]) -> float:
        return _uniform(float(degrees[0]), float(degrees[1]))

    def forward(self, img):
        angle = self.get_params(self.degrees)
        if not isinstance(img, Tensor):
            return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)
        return FT.rotate(img, angle, self._mode, self.expand, self._center, self._fill)


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
        mode = F._as_mode(interpolation)
        self._keep(degrees=degrees, translate=translate, scale=scale, shear=shear,
                   interpolation=mode, fill=0 if fill is None else fill, center=center,
                   _mode=mode.value, _fill=_fill_list(fill),
                   _translate=None if translate is None else _floats(translate),
                   _scale=None if scale is None else _floats(scale),
                   _center=None if center is None else _floats(center))

    def extra_repr(self):
        """The degrees, then only the arguments that differ from their defaults."""
        shown = [("translate", self.translate, self.translate is not None),
                 ("scale", self.scale, self.scale is not None),
                 ("shear", self.shear, self.shear is not None),
                 ("interpolation", self.interpolation.value,
                  self.interpolation != InterpolationMode.NEAREST),
                 ("fill", self.fill, self.fill != 0),
                 ("center", self.center, self.center is not None)]
        return ", ".join([f"degrees={self.degrees}"] + [f"{n}={v}" for n, v, on in shown if on])

    @staticmethod
    def get_params(degrees: List[float], translate: Optional[List[float]],
                   scale_ranges: Optional[List[float]], shears: Optional[List[float]],
                   img_size: List[int]) -> Tuple[float, Tuple[int, int], float, Tuple[float, float]]:
        """(angle, (tx, ty), scale, (shear_x, shear_y)); drawn in that order."""
        angle = _uniform(float(degrees[0]), float(degrees[1]))
        tx, ty = 0, 0
        if translate is not None:
            reach_x = float(translate[0] * img_size[0])
            reach_y = float(translate[1] * img_size[1])
            tx = int(round(_uniform(-reach_x, reach_x)))
            ty = int(round(_uniform(-reach_y, reach_y)))
        scale = 1.0
        if scale_ranges is not None:
            scale = _uniform(float(scale_ranges[0]), float(scale_ranges[1]))
        shear_x, shear_y = 0.0, 0.0
        if shears is not None:
            shear_x = _uniform(float(shears[0]), float(shears[1]))
            if len(shears) == 4:
                shear_y = _uniform(float(shears[2]), float(shears[3]))
        return angle, (tx, ty), scale, (shear_x, shear_y)

    def forward(self, img):
        hw = _hw(img)
        angle, shift, scale, shear = self.get_params(self.degrees, self._translate, self._scale,
                                                     self.shear, [hw[1], hw[0]])
        if not isinstance(img, Tensor):
            return F.affine(img, angle, shift, scale, shear, interpolation=self.interpolation,
                            fill=self.fill, center=self.center)
        return FT.affine(img, angle, [float(shift[0]), float(shift[1])], scale,
                         [shear[0], shear[1]], self._mode, self._fill, self._center)


class RandomPerspective(_Op):
    _shown = ("p",)

    def __init__(self, distortion_scale=0.5, p=0.5, interpolation=InterpolationMode.BILINEAR,
                 fill=0):
        mode = F._as_mode(interpolation)
        self._keep(p=p, distortion_scale=distortion_scale, fill=0 if fill is None else fill,
                   interpolation=mode, _mode=mode.value, _fill=_fill_list(fill))

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float
                   ) -> Tuple[List[List[int]], List[List[int]]]:
        """The image corners (clockwise from top-left), each moved inwards by a random amount of
        up to ``distortion_scale`` of half the side."""
        reach_x = int(distortion_scale * (width // 2))
        reach_y = int(distortion_scale * (height // 2))
        right, bottom = width - 1, height - 1
        corners = [[0, 0], [right, 0], [right, bottom], [0, bottom]]
        moved: List[List[int]] = []
        for corner in corners:
            x, y = corner[0], corner[1]
            nx = _randint(0, reach_x + 1) if x == 0 else _randint(x - reach_x, x + 1)
            ny = _randint(0, reach_y + 1) if y == 0 else _randint(y - reach_y, y + 1)
            moved.append([nx, ny])
        return corners, moved

    def forward(self, img):
        if _coin() >= self.p:
            return img
        hw = _hw(img)
        corners, moved = self.get_params(hw[1], hw[0], float(self.distortion_scale))
        if not isinstance(img, Tensor):
            return F.perspective(img, corners, moved, self.interpolation, self.fill)
        return FT.perspective(img, corners, moved, self._mode, self._fill)


class ElasticTransform(_Op):
    """Displace every pixel by a random field: uniform noise in [-1, 1] per axis, blurred by a
    Gaussian of ``sigma`` and scaled by ``alpha`` (pixels), then resample."""
    _shown = ("alpha", "sigma", "interpolation", "fill")

    def __init__(self, alpha=50.0, sigma=5.0, interpolation=InterpolationMode.BILINEAR, fill=0):
        _require(isinstance(alpha, (float, Sequence)), TypeError,
                 f"alpha should be float or a sequence of floats. Got {type(alpha)}")
        _require(isinstance(sigma, (float, Sequence)), TypeError,
                 f"sigma should be float or a sequence of floats. Got {type(sigma)}")
        given_alpha = [float(alpha)] * 2 if isinstance(alpha, float) else alpha
        given_sigma = [float(sigma)] * 2 if isinstance(sigma, float) else sigma
        alpha, sigma = _floats(given_alpha), _floats(given_sigma)
        _require(len(alpha) == 2 and len(sigma) == 2, ValueError,
                 "alpha and sigma should each be a number or a sequence of 2 numbers")
        mode = F._as_mode(interpolation)
        self._keep(alpha=alpha, sigma=sigma, interpolation=mode, fill=fill, _mode=mode.value,
                   _fill=_fill_list(fill), _given=(given_alpha, given_sigma))

    def extra_repr(self):
        """As torchvision shows it: a sequence argument as given, the mode as the enum, the fill
        as a list of floats."""
        alpha, sigma = self._given
        fill = [float(f) for f in self.fill] if isinstance(self.fill, Sequence) else [float(self.fill)]
        return (f"alpha={alpha}, sigma={sigma}, interpolation=InterpolationMode.{self.interpolation.name}, "
                f"fill={fill}")

    @staticmethod
    def get_params(alpha: List[float], sigma: List[float], size: List[int]) -> Tensor:
        """(1, H, W, 2) displacements in [-1, 1] grid units."""
        fields: List[Tensor] = []
        for axis in range(2):
            d = ember.rand([1, 1, size[0], size[1]]) * 2 - 1
            if sigma[axis] > 0.0:
                if sigma[0] <= 0.0 or sigma[1] <= 0.0:     # the blur takes both sigmas
                    raise ValueError(f"sigma should have positive values. Got {sigma}")
                ks = int(8 * sigma[axis] + 1)
                ks += 1 - ks % 2
                d = FT.gaussian_blur(d, [ks, ks], sigma)
            fields.append(d * alpha[axis] / size[1 - axis])      # x over the width, y over the height
        return ember.cat(fields, dim=1).permute([0, 2, 3, 1])

    def forward(self, img):
        hw = _hw(img)
        displacement = self.get_params(self.alpha, self.sigma, hw)
        if not isinstance(img, Tensor):
            return F.to_pil_image(FT.elastic_transform(F.pil_to_tensor(img), displacement,
                                                       self._mode, self._fill), mode=img.mode)
        return FT.elastic_transform(img, displacement, self._mode, self._fill)


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
        self._keep(kernel_size=sizes, sigma=sigma, _sigma=_floats(sigma))

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return _uniform(float(sigma_min), float(sigma_max))

    def forward(self, img):
        sigma = self.get_params(self._sigma[0], self._sigma[1])
        if not isinstance(img, Tensor):
            return F.gaussian_blur(img, self.kernel_size, [sigma, sigma])
        return FT.gaussian_blur(img, [self.kernel_size[0], self.kernel_size[1]], [sigma, sigma])


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
        self._keep(p=p, scale=scale, ratio=ratio, value=value, inplace=inplace,
                   _scale=_floats(scale), _ratio=_floats(ratio),
                   _value=None if isinstance(value, str) else _fill_list(value))

    @staticmethod
    def get_params(img: Tensor, scale: List[float], ratio: List[float],
                   value: Optional[List[float]] = None) -> Tuple[int, int, int, int, Tensor]:
        """(top, left, height, width, patch); ``value`` None draws a standard-normal patch."""
        channels, height, width = img.shape[-3], img.shape[-2], img.shape[-1]
        area = height * width
        log_ratio = ember.log(ember.tensor([float(ratio[0]), float(ratio[1])]))
        for _ in range(10):
            target = area * _uniform(float(scale[0]), float(scale[1]))
            lo, hi = float(log_ratio[0].item()), float(log_ratio[1].item())
            aspect = float(ember.empty(1).uniform_(lo, hi).exp().item())
            h = int(round(math.sqrt(target * aspect)))
            w = int(round(math.sqrt(target / aspect)))
            if h < height and w < width:
                if value is None:
                    patch = ember.empty([channels, h, w], dtype=ember.float32).normal_()
                else:
                    patch = ember.tensor(value)[:, None, None]
                top = _randint(0, height - h + 1)
                return top, _randint(0, width - w + 1), h, w, patch
        return 0, 0, height, width, img

    def forward(self, img):
        if not isinstance(img, Tensor):
            raise TypeError(f"img should be Tensor Image. Got {type(img)}")
        if _coin() >= self.p:
            return img
        value = self._value
        if value is not None:
            channels = img.shape[-3]
            if len(value) != 1 and len(value) != channels:
                raise ValueError("If value is a sequence, it should have either a single value or "
                                 f"{channels} (number of input channels)")
        top, left, h, w, patch = self.get_params(img, self._scale, self._ratio, value)
        return FT.erase(img, top, left, h, w, patch, self.inplace)


__all__ = [name for name, obj in list(globals().items())
           if isinstance(obj, type) and obj.__module__ == __name__ and not name.startswith("_")]
__all__.append("InterpolationMode")
