"""AutoAugment, RandAugment, TrivialAugmentWide and AugMix (torchvision.transforms v1):
random chains of the photometric and geometric ops, drawn from ember's RNG in torchvision's
order, and ``ember.jit.script``-able on tensors (uint8 images, any leading dims).

The policies are the learned sub-policies of Cubuk et al., "AutoAugment" (2019)."""
import math
from enum import Enum
from typing import Dict, List, Optional, Tuple

import ember
from ember import Tensor, nn
from . import _functional_tensor as FT
from . import functional as F
from .functional import InterpolationMode

__all__ = ["AutoAugmentPolicy", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix"]


def _apply_op(img: Tensor, op_name: str, magnitude: float, interpolation: str,
              fill: Optional[List[float]]) -> Tensor:
    """One named op at ``magnitude`` (shears as slopes, translations in pixels, rotations in
    degrees, enhancements as 1 + magnitude)."""
    if not isinstance(img, Tensor):
        return _apply_op_pil(img, op_name, magnitude, interpolation, fill)
    if op_name == "ShearX":
        return FT.affine(img, 0.0, [0.0, 0.0], 1.0, [math.degrees(math.atan(magnitude)), 0.0],
                         interpolation, fill, [0.0, 0.0])
    if op_name == "ShearY":
        return FT.affine(img, 0.0, [0.0, 0.0], 1.0, [0.0, math.degrees(math.atan(magnitude))],
                         interpolation, fill, [0.0, 0.0])
    if op_name == "TranslateX":
        return FT.affine(img, 0.0, [float(int(magnitude)), 0.0], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "TranslateY":
        return FT.affine(img, 0.0, [0.0, float(int(magnitude))], 1.0, [0.0, 0.0], interpolation, fill)
    if op_name == "Rotate":
        return FT.rotate(img, magnitude, interpolation, False, None, fill)
    if op_name == "Brightness":
        return FT.adjust_brightness(img, 1.0 + magnitude)
    if op_name == "Color":
        return FT.adjust_saturation(img, 1.0 + magnitude)
    if op_name == "Contrast":
        return FT.adjust_contrast(img, 1.0 + magnitude)
    if op_name == "Sharpness":
        return FT.adjust_sharpness(img, 1.0 + magnitude)
    if op_name == "Posterize":
        return FT.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return FT.solarize(img, magnitude)
    if op_name == "AutoContrast":
        return FT.autocontrast(img)
    if op_name == "Equalize":
        return FT.equalize(img)
    if op_name == "Invert":
        return FT.invert(img)
    if op_name == "Identity":
        return img
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _apply_op_pil(img, op_name, magnitude, interpolation, fill):
    mode = InterpolationMode(interpolation)
    if op_name in ("ShearX", "ShearY"):
        slope = math.degrees(math.atan(magnitude))
        shear = [slope, 0.0] if op_name == "ShearX" else [0.0, slope]
        return F.affine(img, 0.0, [0, 0], 1.0, shear, mode, fill, center=[0, 0])
    if op_name in ("TranslateX", "TranslateY"):
        shift = [int(magnitude), 0] if op_name == "TranslateX" else [0, int(magnitude)]
        return F.affine(img, 0.0, shift, 1.0, [0.0, 0.0], mode, fill)
    if op_name == "Rotate":
        return F.rotate(img, magnitude, mode, fill=fill)
    enhance = {"Brightness": F.adjust_brightness, "Color": F.adjust_saturation,
               "Contrast": F.adjust_contrast, "Sharpness": F.adjust_sharpness}
    if op_name in enhance:
        return enhance[op_name](img, 1.0 + magnitude)
    plain = {"AutoContrast": F.autocontrast, "Equalize": F.equalize, "Invert": F.invert,
             "Identity": lambda im: im}
    if op_name in plain:
        return plain[op_name](img)
    if op_name == "Posterize":
        return F.posterize(img, int(magnitude))
    if op_name == "Solarize":
        return F.solarize(img, magnitude)
    raise ValueError(f"The provided operator {op_name} is not recognized.")


def _fill_for(img: Tensor, fill: Optional[List[float]]) -> Optional[List[float]]:
    if fill is None or not isinstance(img, Tensor):
        return fill
    if len(fill) == 1:
        return [fill[0]] * img.shape[-3]
    return fill


def _fill_arg(fill):
    """None, or the fill as a list of floats (a number becomes a one-element list)."""
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return [float(fill)]
    return [float(v) for v in fill]


def _hw(img: Tensor) -> List[int]:
    if not isinstance(img, Tensor):
        return F.get_dimensions(img)[1:]
    return [img.shape[-2], img.shape[-1]]


def _posterize_bits(num_bins: int, top: int, steps: int) -> Tensor:
    return top - (ember.arange(num_bins) / ((num_bins - 1) / steps)).round().int()


def _geometric_and_colour_space(num_bins: int, shear: float, translate_x: float, translate_y: float,
                                rotate: float, enhance: float) -> Dict[str, Tuple[Tensor, bool]]:
    return {
        "ShearX": (ember.linspace(0.0, shear, num_bins), True),
        "ShearY": (ember.linspace(0.0, shear, num_bins), True),
        "TranslateX": (ember.linspace(0.0, translate_x, num_bins), True),
        "TranslateY": (ember.linspace(0.0, translate_y, num_bins), True),
        "Rotate": (ember.linspace(0.0, rotate, num_bins), True),
        "Brightness": (ember.linspace(0.0, enhance, num_bins), True),
        "Color": (ember.linspace(0.0, enhance, num_bins), True),
        "Contrast": (ember.linspace(0.0, enhance, num_bins), True),
        "Sharpness": (ember.linspace(0.0, enhance, num_bins), True),
    }


class AutoAugmentPolicy(Enum):
    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


# (op, probability, magnitude bin or None) pairs, 25 sub-policies per dataset
_POLICIES = {
    'IMAGENET': [
        (('Posterize', 0.4, 8), ('Rotate', 0.6, 9)),
        (('Solarize', 0.6, 5), ('AutoContrast', 0.6, None)),
        (('Equalize', 0.8, None), ('Equalize', 0.6, None)),
        (('Posterize', 0.6, 7), ('Posterize', 0.6, 6)),
        (('Equalize', 0.4, None), ('Solarize', 0.2, 4)),
        (('Equalize', 0.4, None), ('Rotate', 0.8, 8)),
        (('Solarize', 0.6, 3), ('Equalize', 0.6, None)),
        (('Posterize', 0.8, 5), ('Equalize', 1.0, None)),
        (('Rotate', 0.2, 3), ('Solarize', 0.6, 8)),
        (('Equalize', 0.6, None), ('Posterize', 0.4, 6)),
        (('Rotate', 0.8, 8), ('Color', 0.4, 0)),
        (('Rotate', 0.4, 9), ('Equalize', 0.6, None)),
        (('Equalize', 0.0, None), ('Equalize', 0.8, None)),
        (('Invert', 0.6, None), ('Equalize', 1.0, None)),
        (('Color', 0.6, 4), ('Contrast', 1.0, 8)),
        (('Rotate', 0.8, 8), ('Color', 1.0, 2)),
        (('Color', 0.8, 8), ('Solarize', 0.8, 7)),
        (('Sharpness', 0.4, 7), ('Invert', 0.6, None)),
        (('ShearX', 0.6, 5), ('Equalize', 1.0, None)),
        (('Color', 0.4, 0), ('Equalize', 0.6, None)),
        (('Equalize', 0.4, None), ('Solarize', 0.2, 4)),
        (('Solarize', 0.6, 5), ('AutoContrast', 0.6, None)),
        (('Invert', 0.6, None), ('Equalize', 1.0, None)),
        (('Color', 0.6, 4), ('Contrast', 1.0, 8)),
        (('Equalize', 0.8, None), ('Equalize', 0.6, None)),
    ],
    'CIFAR10': [
        (('Invert', 0.1, None), ('Contrast', 0.2, 6)),
        (('Rotate', 0.7, 2), ('TranslateX', 0.3, 9)),
        (('Sharpness', 0.8, 1), ('Sharpness', 0.9, 3)),
        (('ShearY', 0.5, 8), ('TranslateY', 0.7, 9)),
        (('AutoContrast', 0.5, None), ('Equalize', 0.9, None)),
        (('ShearY', 0.2, 7), ('Posterize', 0.3, 7)),
        (('Color', 0.4, 3), ('Brightness', 0.6, 7)),
        (('Sharpness', 0.3, 9), ('Brightness', 0.7, 9)),
        (('Equalize', 0.6, None), ('Equalize', 0.5, None)),
        (('Contrast', 0.6, 7), ('Sharpness', 0.6, 5)),
        (('Color', 0.7, 7), ('TranslateX', 0.5, 8)),
        (('Equalize', 0.3, None), ('AutoContrast', 0.4, None)),
        (('TranslateY', 0.4, 3), ('Sharpness', 0.2, 6)),
        (('Brightness', 0.9, 6), ('Color', 0.2, 8)),
        (('Solarize', 0.5, 2), ('Invert', 0.0, None)),
        (('Equalize', 0.2, None), ('AutoContrast', 0.6, None)),
        (('Equalize', 0.2, None), ('Equalize', 0.6, None)),
        (('Color', 0.9, 9), ('Equalize', 0.6, None)),
        (('AutoContrast', 0.8, None), ('Solarize', 0.2, 8)),
        (('Brightness', 0.1, 3), ('Color', 0.7, 0)),
        (('Solarize', 0.4, 5), ('AutoContrast', 0.9, None)),
        (('TranslateY', 0.9, 9), ('TranslateY', 0.7, 9)),
        (('AutoContrast', 0.9, None), ('Solarize', 0.8, 3)),
        (('Equalize', 0.8, None), ('Invert', 0.1, None)),
        (('TranslateY', 0.7, 9), ('AutoContrast', 0.9, None)),
    ],
    'SVHN': [
        (('ShearX', 0.9, 4), ('Invert', 0.2, None)),
        (('ShearY', 0.9, 8), ('Invert', 0.7, None)),
        (('Equalize', 0.6, None), ('Solarize', 0.6, 6)),
        (('Invert', 0.9, None), ('Equalize', 0.6, None)),
        (('Equalize', 0.6, None), ('Rotate', 0.9, 3)),
        (('ShearX', 0.9, 4), ('AutoContrast', 0.8, None)),
        (('ShearY', 0.9, 8), ('Invert', 0.4, None)),
        (('ShearY', 0.9, 5), ('Solarize', 0.2, 6)),
        (('Invert', 0.9, None), ('AutoContrast', 0.8, None)),
        (('Equalize', 0.6, None), ('Rotate', 0.9, 3)),
        (('ShearX', 0.9, 4), ('Solarize', 0.3, 3)),
        (('ShearY', 0.8, 8), ('Invert', 0.7, None)),
        (('Equalize', 0.9, None), ('TranslateY', 0.6, 6)),
        (('Invert', 0.9, None), ('Equalize', 0.6, None)),
        (('Contrast', 0.3, 3), ('Rotate', 0.8, 4)),
        (('Invert', 0.8, None), ('TranslateY', 0.0, 2)),
        (('ShearY', 0.7, 6), ('Solarize', 0.4, 8)),
        (('Invert', 0.6, None), ('Rotate', 0.8, 4)),
        (('ShearY', 0.3, 7), ('TranslateX', 0.9, 3)),
        (('ShearX', 0.1, 6), ('Invert', 0.6, None)),
        (('Solarize', 0.7, 2), ('TranslateY', 0.6, 7)),
        (('ShearY', 0.8, 4), ('Invert', 0.8, None)),
        (('ShearX', 0.7, 9), ('TranslateY', 0.8, 3)),
        (('ShearY', 0.8, 5), ('AutoContrast', 0.7, None)),
        (('ShearX', 0.7, 2), ('Invert', 0.1, None)),
    ],
}


class AutoAugment(nn.Module):
    """One random sub-policy of ``policy`` per call: each of its two ops applied with its
    probability, at its magnitude bin (of 10), with a random sign where the op is signed."""

    def __init__(self, policy=AutoAugmentPolicy.IMAGENET, interpolation=InterpolationMode.NEAREST,
                 fill=None):
        super().__init__()
        if not isinstance(policy, AutoAugmentPolicy):
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy, self.interpolation, self.fill = policy, interpolation, fill
        self.policies = self._get_policies(policy)
        self._policies = [[(op, float(p), -1 if m is None else m) for op, p, m in pair]
                          for pair in self.policies]
        self._mode, self._fill = interpolation.value, _fill_arg(fill)

    def _get_policies(self, policy):
        return list(_POLICIES[policy.name])

    def _augmentation_space(self, num_bins: int, image_size: Tuple[int, int]) -> Dict[str, Tuple[Tensor, bool]]:
        space = _geometric_and_colour_space(num_bins, 0.3, 150.0 / 331.0 * image_size[1],
                                            150.0 / 331.0 * image_size[0], 30.0, 0.9)
        space["Posterize"] = (_posterize_bits(num_bins, 8, 4), False)
        space["Solarize"] = (ember.linspace(255.0, 0.0, num_bins), False)
        space["AutoContrast"] = (ember.tensor(0.0), False)
        space["Equalize"] = (ember.tensor(0.0), False)
        space["Invert"] = (ember.tensor(0.0), False)
        return space

    @staticmethod
    def get_params(transform_num: int) -> Tuple[int, Tensor, Tensor]:
        """(sub-policy index, two probabilities, two signs)."""
        policy_id = int(ember.randint(transform_num, (1,)).item())
        probs = ember.rand((2,))
        signs = ember.randint(2, (2,))
        return policy_id, probs, signs

    def forward(self, img):
        hw = _hw(img)
        fill = _fill_for(img, self._fill)
        transform_id, probs, signs = self.get_params(len(self._policies))
        op_meta = self._augmentation_space(10, (hw[0], hw[1]))
        pair = self._policies[transform_id]
        for i in range(2):
            op_name, p, magnitude_id = pair[i]
            if float(probs[i].item()) <= p:
                magnitudes, signed = op_meta[op_name]
                magnitude = float(magnitudes[magnitude_id].item()) if magnitude_id >= 0 else 0.0
                if signed and int(signs[i].item()) == 0:
                    magnitude *= -1.0
                img = _apply_op(img, op_name, magnitude, self._mode, fill)
        return img

    def __repr__(self):
        return f"{type(self).__name__}(policy={self.policy}, fill={self.fill})"


class RandAugment(nn.Module):
    """``num_ops`` ops drawn uniformly, each at bin ``magnitude`` of ``num_magnitude_bins``."""

    def __init__(self, num_ops=2, magnitude=9, num_magnitude_bins=31,
                 interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins
        self.interpolation, self.fill = interpolation, fill
        self._mode, self._fill = interpolation.value, _fill_arg(fill)

    def _augmentation_space(self, num_bins: int, image_size: Tuple[int, int]) -> Dict[str, Tuple[Tensor, bool]]:
        space = {"Identity": (ember.tensor(0.0), False)}
        space.update(_geometric_and_colour_space(num_bins, 0.3, 150.0 / 331.0 * image_size[1],
                                                 150.0 / 331.0 * image_size[0], 30.0, 0.9))
        space["Posterize"] = (_posterize_bits(num_bins, 8, 4), False)
        space["Solarize"] = (ember.linspace(255.0, 0.0, num_bins), False)
        space["AutoContrast"] = (ember.tensor(0.0), False)
        space["Equalize"] = (ember.tensor(0.0), False)
        return space

    def forward(self, img):
        hw = _hw(img)
        fill = _fill_for(img, self._fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins, (hw[0], hw[1]))
        names = list(op_meta.keys())
        for _ in range(self.num_ops):
            op_name = names[int(ember.randint(len(op_meta), (1,)).item())]
            magnitudes, signed = op_meta[op_name]
            magnitude = float(magnitudes[self.magnitude].item()) if magnitudes.dim() > 0 else 0.0
            if signed and int(ember.randint(2, (1,)).item()) == 1:
                magnitude *= -1.0
            img = _apply_op(img, op_name, magnitude, self._mode, fill)
        return img

    def __repr__(self):
        return (f"{type(self).__name__}(num_ops={self.num_ops}, magnitude={self.magnitude}, "
                f"num_magnitude_bins={self.num_magnitude_bins}, interpolation={self.interpolation}, "
                f"fill={self.fill})")


class TrivialAugmentWide(nn.Module):
    """One op drawn uniformly at a uniformly drawn bin of ``num_magnitude_bins`` (wide ranges)."""

    def __init__(self, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None):
        super().__init__()
        self.num_magnitude_bins, self.interpolation, self.fill = num_magnitude_bins, interpolation, fill
        self._mode, self._fill = interpolation.value, _fill_arg(fill)

    def _augmentation_space(self, num_bins: int) -> Dict[str, Tuple[Tensor, bool]]:
        space = {"Identity": (ember.tensor(0.0), False)}
        space.update(_geometric_and_colour_space(num_bins, 0.99, 32.0, 32.0, 135.0, 0.99))
        space["Posterize"] = (_posterize_bits(num_bins, 8, 6), False)
        space["Solarize"] = (ember.linspace(255.0, 0.0, num_bins), False)
        space["AutoContrast"] = (ember.tensor(0.0), False)
        space["Equalize"] = (ember.tensor(0.0), False)
        return space

    def forward(self, img):
        fill = _fill_for(img, self._fill)
        op_meta = self._augmentation_space(self.num_magnitude_bins)
        names = list(op_meta.keys())
        op_name = names[int(ember.randint(len(op_meta), (1,)).item())]
        magnitudes, signed = op_meta[op_name]
        magnitude = 0.0
        if magnitudes.dim() > 0:
            magnitude = float(magnitudes[int(ember.randint(len(magnitudes), (1,)).item())].item())
        if signed and int(ember.randint(2, (1,)).item()) == 1:
            magnitude *= -1.0
        return _apply_op(img, op_name, magnitude, self._mode, fill)

    def __repr__(self):
        return (f"{type(self).__name__}(num_magnitude_bins={self.num_magnitude_bins}, "
                f"interpolation={self.interpolation}, fill={self.fill})")


class AugMix(nn.Module):
    """A Beta(alpha, alpha)-weighted mix of the image with a Dirichlet(alpha)-weighted sum of
    ``mixture_width`` chains of 1-3 (or ``chain_depth``) random ops at bins below ``severity``."""
    _PARAMETER_MAX = 10

    def __init__(self, severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True,
                 interpolation=InterpolationMode.BILINEAR, fill=None):
        super().__init__()
        if not 1 <= severity <= self._PARAMETER_MAX:
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops = alpha, all_ops
        self.interpolation, self.fill = interpolation, fill
        self._mode, self._fill = interpolation.value, _fill_arg(fill)

    def _augmentation_space(self, num_bins: int, image_size: Tuple[int, int]) -> Dict[str, Tuple[Tensor, bool]]:
        space = {
            "ShearX": (ember.linspace(0.0, 0.3, num_bins), True),
            "ShearY": (ember.linspace(0.0, 0.3, num_bins), True),
            "TranslateX": (ember.linspace(0.0, image_size[1] / 3.0, num_bins), True),
            "TranslateY": (ember.linspace(0.0, image_size[0] / 3.0, num_bins), True),
            "Rotate": (ember.linspace(0.0, 30.0, num_bins), True),
            "Posterize": (_posterize_bits(num_bins, 4, 4), False),
            "Solarize": (ember.linspace(255.0, 0.0, num_bins), False),
            "AutoContrast": (ember.tensor(0.0), False),
            "Equalize": (ember.tensor(0.0), False),
        }
        if self.all_ops:
            for name in ("Brightness", "Color", "Contrast", "Sharpness"):
                space[name] = (ember.linspace(0.0, 0.9, num_bins), True)
        return space

    def _sample_dirichlet(self, params: Tensor) -> Tensor:
        return ember._sample_dirichlet(params)

    def forward(self, orig_img):
        if not isinstance(orig_img, Tensor):
            mixed = self.forward(F.pil_to_tensor(orig_img))
            return F.to_pil_image(mixed)
        img = orig_img
        fill = _fill_for(img, self._fill)
        op_meta = self._augmentation_space(self._PARAMETER_MAX, (img.shape[-2], img.shape[-1]))
        names = list(op_meta.keys())
        orig_dims = list(img.shape)
        batch = img.view([1] * max(4 - img.dim(), 0) + orig_dims)
        batch_dims = [batch.size(0)] + [1] * (batch.dim() - 1)
        # Beta(alpha, alpha) as a two-parameter Dirichlet: column 0 weighs the original
        m = self._sample_dirichlet(ember.tensor([self.alpha, self.alpha]).expand(batch_dims[0], -1))
        weights = self._sample_dirichlet(ember.tensor([self.alpha] * self.mixture_width).expand(batch_dims[0], -1))
        weights = weights * m[:, 1].view([batch_dims[0], -1])
        mix = m[:, 0].view(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth
            if depth <= 0:
                depth = int(ember.randint(low=1, high=4, size=(1,)).item())
            for _ in range(depth):
                op_name = names[int(ember.randint(len(op_meta), (1,)).item())]
                magnitudes, signed = op_meta[op_name]
                magnitude = 0.0
                if magnitudes.dim() > 0:
                    magnitude = float(magnitudes[int(ember.randint(self.severity, (1,)).item())].item())
                if signed and int(ember.randint(2, (1,)).item()) == 1:
                    magnitude *= -1.0
                aug = _apply_op(aug, op_name, magnitude, self._mode, fill)
            mix.add_(weights[:, i].view(batch_dims) * aug)
        return mix.view(orig_dims).to(dtype=img.dtype)

    def __repr__(self):
        return (f"{type(self).__name__}(severity={self.severity}, mixture_width={self.mixture_width}, "
                f"chain_depth={self.chain_depth}, alpha={self.alpha}, all_ops={self.all_ops}, "
                f"interpolation={self.interpolation}, fill={self.fill})")
