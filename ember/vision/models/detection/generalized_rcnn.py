"""GeneralizedRCNN: transform -> backbone -> RPN -> RoI heads -> detections in the original
image coordinates (eval) or the loss dict (training)."""
from collections import OrderedDict

import ember
from ember import nn

__all__ = ["GeneralizedRCNN"]


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
        """``images``: list of (C, H_i, W_i) float tensors in [0, 1]."""
        if self.training:
            self._check_targets(targets)
        original_image_sizes = []
        for img in images:
            size = img.shape[-2:]
            if len(size) != 2:
                raise AssertionError(f"expecting the last two dimensions of the Tensor to be H and W instead got {img.shape[-2:]}")
            original_image_sizes.append((size[0], size[1]))
        images, targets = self.transform(images, targets)
        if self.training:
            self._check_degenerate(targets)
        features = self.backbone(images.tensors)
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes, targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        losses = {**detector_losses, **proposal_losses}
        return losses if self.training else detections
