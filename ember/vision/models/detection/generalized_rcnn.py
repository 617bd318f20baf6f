"""GeneralizedRCNN: transform -> backbone -> RPN -> RoI heads -> detections in the original
image coordinates (eval) or the loss dict (training)."""
from collections import OrderedDict

import ember
from ember import nn

__all__ = ["GeneralizedRCNN"]


def _height_width(image):
    """The (H, W) of a (..., H, W) image."""
    if image.dim() < 2:
        raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got {image.shape[-2:]}")
    return tuple(image.shape[-2:])


def _batched_features(model, images, targets):
    """The detectors' common first half: check the targets (training), resize and batch the
    images with ``model.transform``, run ``model.backbone``. Returns (original sizes, the
    ImageList, transformed targets, feature maps as an OrderedDict)."""
    if model.training:
        GeneralizedRCNN._check_targets(model, targets)
    original_sizes = [_height_width(img) for img in images]
    batch, targets = model.transform(images, targets)
    if model.training:
        GeneralizedRCNN._check_degenerate(targets)
    maps = model.backbone(batch.tensors)
    if isinstance(maps, ember.Tensor):
        maps = OrderedDict({"0": maps})
    return original_sizes, batch, targets, maps


class GeneralizedRCNN(nn.Module):
    def __init__(self, backbone, rpn, roi_heads, transform):
        super().__init__()
        self.transform, self.backbone, self.rpn, self.roi_heads = transform, backbone, rpn, roi_heads

    def _check_targets(self, targets):
        if targets is None:
            raise ValueError("In training mode, targets should be passed")
        for target in targets:
            boxes = target["boxes"]
            if not isinstance(boxes, ember.Tensor) or boxes.dim() != 2 or boxes.shape[-1] != 4:
                raise ValueError(f"Expected target boxes to be a tensor of shape [N, 4], got {getattr(boxes, 'shape', None)}.")

    @staticmethod
    def _check_degenerate(targets):
        for i, target in enumerate(targets):
            boxes = target["boxes"]
            degenerate = boxes[:, 2:] <= boxes[:, :2]
            if bool(degenerate.any()):
                b = int(ember.where(degenerate.any(dim=1))[0][0])
                raise ValueError("All bounding boxes should have positive height and width. "
                                 f"Found invalid box {boxes[b].tolist()} for target at index {i}.")

    def forward(self, images, targets=None):
        """``images``: list of (C, H_i, W_i) float tensors in [0, 1]; ``targets`` (training):
        list of {"boxes": (B_i, 4) xyxy, "labels": (B_i,) int64}."""
        original_sizes, batch, targets, maps = _batched_features(self, images, targets)
        proposals, rpn_losses = self.rpn(batch, maps, targets)
        found, head_losses = self.roi_heads(maps, proposals, batch.image_sizes, targets)
        if self.training:
            return {**head_losses, **rpn_losses}
        return self.transform.postprocess(found, batch.image_sizes, original_sizes)
