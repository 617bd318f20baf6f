"""``torchvision.models.detection``: Faster R-CNN built from the RPN, RoI heads, anchor
generator, transform and the ops' FeaturePyramidNetwork / MultiScaleRoIAlign, and RetinaNet
from the same parts, with torchvision's module names (state_dicts interchange). Mask and
keypoint heads are absent."""
from .faster_rcnn import *  # noqa: F401,F403
from .faster_rcnn import FastRCNNPredictor, TwoMLPHead  # noqa: F401
from .anchor_utils import AnchorGenerator  # noqa: F401
from .backbone_utils import BackboneWithFPN, resnet_fpn_backbone  # noqa: F401
from .generalized_rcnn import GeneralizedRCNN  # noqa: F401
from .image_list import ImageList  # noqa: F401
from .roi_heads import RoIHeads  # noqa: F401
from .rpn import RegionProposalNetwork, RPNHead  # noqa: F401
from .retinanet import *  # noqa: F401,F403
from .transform import GeneralizedRCNNTransform  # noqa: F401
