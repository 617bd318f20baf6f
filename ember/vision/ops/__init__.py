"""``torchvision.ops`` stand-in: box utilities, NMS, RoIAlign/RoIPool, focal loss, stochastic
depth and the misc building blocks, in NumPy + ember ops."""
from .boxes import (batched_nms, box_area, box_convert, box_iou, clip_boxes_to_image, complete_box_iou,
                    distance_box_iou, generalized_box_iou, masks_to_boxes, nms, remove_small_boxes)
from .box_losses import complete_box_iou_loss, distance_box_iou_loss, generalized_box_iou_loss
from .feature_pyramid_network import FeaturePyramidNetwork
from .focal_loss import sigmoid_focal_loss
from .misc import MLP, Conv2dNormActivation, FrozenBatchNorm2d, Permute, SqueezeExcitation
from .roi_align import RoIAlign, roi_align
from .poolers import MultiScaleRoIAlign
from .roi_pool import RoIPool, roi_pool
from .stochastic_depth import StochasticDepth, stochastic_depth

__all__ = ["nms", "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image",
           "complete_box_iou", "distance_box_iou", "generalized_box_iou", "masks_to_boxes",
           "remove_small_boxes", "sigmoid_focal_loss", "generalized_box_iou_loss",
           "distance_box_iou_loss", "complete_box_iou_loss", "MLP", "Conv2dNormActivation",
           "FrozenBatchNorm2d", "Permute", "SqueezeExcitation", "RoIAlign", "roi_align", "RoIPool",
           "roi_pool", "StochasticDepth", "stochastic_depth", "FeaturePyramidNetwork",
           "MultiScaleRoIAlign"]
