"""GeneralizedRCNNTransform: the detection models' input and output adapter.

In: each (C, H, W) image is normalized per channel, scaled by
``min(min_size / short side, max_size / long side)`` (bilinear; a random ``min_size`` entry
while training), and the batch is zero-padded to (N, C, H_max, W_max) rounded up to
multiples of ``size_divisible``; target boxes are scaled with their image.
Out: detected boxes are scaled back from the resized to the original image sizes."""
import math

import numpy as np

import ember
from ember import nn
from ember.nn import functional as F
from .image_list import ImageList

__all__ = ["GeneralizedRCNNTransform", "resize_boxes"]


def resize_boxes(boxes, original_size, new_size):
    """(N, 4) xyxy boxes of an (h, w) image -> the same boxes in a ``new_size`` image (the
    ratios taken in float32)."""
    (sy, sx) = (np.float32(n) / np.float32(o) for n, o in zip(new_size, original_size))
    factors = ember.tensor([sx, sy, sx, sy], dtype=ember.float32)
    return boxes * factors


def _bilinear(image, **how):
    return F.interpolate(image.unsqueeze(0), mode="bilinear", align_corners=False, **how).squeeze(0)


def _resize_image(image, min_size, max_size, fixed_size=None):
    """(C, H, W) -> (C, H', W'): ``fixed_size`` (w, h) when given, else the short side to
    ``min_size`` unless the long side would pass ``max_size`` (the factor in float64)."""
    if fixed_size is not None:
        return _bilinear(image, size=[fixed_size[1], fixed_size[0]])
    sides = sorted(float(s) for s in image.shape[-2:])
    factor = min(float(min_size) / sides[0], float(max_size) / sides[1])
    return _bilinear(image, scale_factor=factor, recompute_scale_factor=True)


def _round_up(n, multiple):
    return int(math.ceil(n / float(multiple)) * multiple)


class GeneralizedRCNNTransform(nn.Module):
    """``forward(images, targets=None)`` -> (ImageList of the padded batch and the resized
    (h, w) sizes, targets with resized boxes); ``postprocess`` maps detections back."""

    def __init__(self, min_size, max_size, image_mean, image_std, size_divisible=32,
                 fixed_size=None, **kwargs):
        super().__init__()
        self.min_size = tuple(min_size) if isinstance(min_size, (list, tuple)) else (min_size,)
        self.max_size, self.fixed_size, self.size_divisible = max_size, fixed_size, size_divisible
        self.image_mean, self.image_std = image_mean, image_std
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def normalize(self, image):
        """(C, H, W) float image -> (image - mean) / std, per channel."""
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), "
                            f"but found type {image.dtype} instead")
        per_channel = [ember.as_tensor(v, dtype=image.dtype).reshape(-1, 1, 1)
                       for v in (self.image_mean, self.image_std)]
        return (image - per_channel[0]) / per_channel[1]

    def torch_choice(self, k):
        """One entry of ``k``, drawn from the global RNG (one uniform sample)."""
        draw = ember.empty(1).uniform_(0.0, float(len(k)))
        return k[int(draw.item())]

    def _target_short_side(self):
        return self.torch_choice(self.min_size) if self.training else self.min_size[-1]

    def resize(self, image, target=None):
        """-> (resized image, target with its boxes resized too)."""
        if self.training and self._skip_resize:
            return image, target
        before = tuple(image.shape[-2:])
        image = _resize_image(image, self._target_short_side(), self.max_size, self.fixed_size)
        if target is not None:
            if {"masks", "keypoints"} & set(target):
                raise NotImplementedError("GeneralizedRCNNTransform: mask and keypoint targets are not implemented in ember")
            target["boxes"] = resize_boxes(target["boxes"], before, image.shape[-2:])
        return image, target

    @staticmethod
    def max_by_axis(the_list):
        """Element-wise maximum of equal-length shape lists."""
        return [int(v) for v in np.max(np.asarray(the_list), axis=0)]

    def batch_images(self, images, size_divisible=32):
        """[(C, H_i, W_i)] -> (N, C, H, W) zero-padded at the bottom/right, H and W rounded up
        to multiples of ``size_divisible``."""
        channels, height, width = self.max_by_axis([list(im.shape) for im in images])
        batch = images[0].new_full([len(images), channels, _round_up(height, size_divisible),
                                    _round_up(width, size_divisible)], 0)
        for slot, im in zip(batch, images):
            c, h, w = im.shape
            slot[:c, :h, :w] = im
        return batch

    def forward(self, images, targets=None):
        targets = None if targets is None else [dict(t) for t in targets]
        prepared = []
        for i, image in enumerate(images):
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got {image.shape}")
            image, resized_target = self.resize(self.normalize(image), None if targets is None else targets[i])
            if resized_target is not None:
                targets[i] = resized_target
            prepared.append(image)
        sizes = [tuple(im.shape[-2:]) for im in prepared]
        return ImageList(self.batch_images(prepared, self.size_divisible), sizes), targets

    def postprocess(self, result, image_shapes, original_image_sizes):
        """Detections' boxes from the resized back to the original image sizes (eval only)."""
        if not self.training:
            for detection, now, then in zip(result, image_shapes, original_image_sizes):
                detection["boxes"] = resize_boxes(detection["boxes"], now, then)
        return result

    def __repr__(self):
        return (f"{type(self).__name__}(\n    Normalize(mean={self.image_mean}, std={self.image_std})\n"
                f"    Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')\n)")
