"""GeneralizedRCNNTransform: normalize each (C, H, W) image, resize it so its short side is
``min_size`` (long side at most ``max_size``), pad the batch to a multiple of
``size_divisible``; afterwards scale the detections back to the original sizes."""
import math

import ember
from ember import nn
from ember.nn import functional as F
from .image_list import ImageList

__all__ = ["GeneralizedRCNNTransform", "resize_boxes"]


def resize_boxes(boxes, original_size, new_size):
    """(N, 4) boxes scaled from an (h, w) image to a ``new_size`` one."""
    ratio_h, ratio_w = (ember.tensor(s, dtype=ember.float32) / ember.tensor(o, dtype=ember.float32)
                        for s, o in zip(new_size, original_size))
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return ember.stack((xmin * ratio_w, ymin * ratio_h, xmax * ratio_w, ymax * ratio_h), dim=1)


def _resize_image(image, min_size, max_size, fixed_size=None):
    if fixed_size is not None:
        return F.interpolate(image[None], size=[fixed_size[1], fixed_size[0]], mode="bilinear",
                             align_corners=False)[0]
    short, long = float(min(image.shape[-2:])), float(max(image.shape[-2:]))
    scale = min(float(min_size) / short, float(max_size) / long)         # in double, as torchvision
    return F.interpolate(image[None], scale_factor=scale, mode="bilinear",
                         recompute_scale_factor=True, align_corners=False)[0]


class GeneralizedRCNNTransform(nn.Module):
    def __init__(self, min_size, max_size, image_mean, image_std, size_divisible=32,
                 fixed_size=None, **kwargs):
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size, self.max_size = min_size, max_size
        self.image_mean, self.image_std = image_mean, image_std
        self.size_divisible, self.fixed_size = size_divisible, fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images, targets=None):
        images = list(images)
        if targets is not None:
            targets = [{k: v for k, v in t.items()} for t in targets]
        for i, image in enumerate(images):
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got {image.shape}")
            target = targets[i] if targets is not None else None
            image, target = self.resize(self.normalize(image), target)
            images[i] = image
            if targets is not None and target is not None:
                targets[i] = target
        image_sizes = [tuple(img.shape[-2:]) for img in images]
        return ImageList(self.batch_images(images, self.size_divisible), image_sizes), targets

    def normalize(self, image):
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), "
                            f"but found type {image.dtype} instead")
        mean = ember.as_tensor(self.image_mean, dtype=image.dtype)
        std = ember.as_tensor(self.image_std, dtype=image.dtype)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k):
        """One element of ``k`` picked with torch's RNG (as torchvision does)."""
        return k[int(ember.empty(1).uniform_(0.0, float(len(k))).item())]

    def resize(self, image, target=None):
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image = _resize_image(image, size, self.max_size, self.fixed_size)
        if target is None:
            return image, target
        if "masks" in target or "keypoints" in target:
            raise NotImplementedError("GeneralizedRCNNTransform: mask and keypoint targets are not implemented in ember")
        target["boxes"] = resize_boxes(target["boxes"], (h, w), image.shape[-2:])
        return image, target

    @staticmethod
    def max_by_axis(the_list):
        return [max(sizes) for sizes in zip(*the_list)]

    def batch_images(self, images, size_divisible=32):
        stride = float(size_divisible)
        size = self.max_by_axis([list(img.shape) for img in images])
        size[1] = int(math.ceil(float(size[1]) / stride) * stride)
        size[2] = int(math.ceil(float(size[2]) / stride) * stride)
        batch = images[0].new_full([len(images)] + size, 0)
        for i, img in enumerate(images):
            batch[i, : img.shape[0], : img.shape[1], : img.shape[2]] = img
        return batch

    def postprocess(self, result, image_shapes, original_image_sizes):
        if self.training:
            return result
        for pred, size, original in zip(result, image_shapes, original_image_sizes):
            pred["boxes"] = resize_boxes(pred["boxes"], size, original)
        return result

    def __repr__(self):
        return (f"{type(self).__name__}(\n    Normalize(mean={self.image_mean}, std={self.image_std})\n"
                f"    Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')\n)")
