"""Backbones with an FPN on top: the ResNet stages tapped by IntermediateLayerGetter and fed
to FeaturePyramidNetwork (plus a max-pooled extra level)."""
from ember import nn
from ...ops.feature_pyramid_network import FeaturePyramidNetwork, LastLevelMaxPool
from ...ops.misc import FrozenBatchNorm2d
from .. import resnet
from ..segmentation._utils import IntermediateLayerGetter

__all__ = ["BackboneWithFPN", "resnet_fpn_backbone"]


class BackboneWithFPN(nn.Module):
    """``forward(x)`` -> OrderedDict of (N, out_channels, H_l, W_l) levels ("0".."3", "pool")."""

    def __init__(self, backbone, return_layers, in_channels_list, out_channels, extra_blocks=None,
                 norm_layer=None):
        super().__init__()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list, out_channels,
                                         extra_blocks=LastLevelMaxPool() if extra_blocks is None else extra_blocks,
                                         norm_layer=norm_layer)
        self.out_channels = out_channels

    def forward(self, x):
        return self.fpn(self.body(x))


def _validate_trainable_layers(is_trained, trainable_backbone_layers, max_value, default_value):
    if not is_trained:
        if trainable_backbone_layers is not None:
            import warnings
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          f"pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable")
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if not 0 <= trainable_backbone_layers <= max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                         f"got {trainable_backbone_layers} ")
    return trainable_backbone_layers


# ResNet parts from the output end; the first ``trainable_layers`` of them keep learning
# (all five: the stem's batch norm too)
_RESNET_PARTS_OUTER_FIRST = ("layer4", "layer3", "layer2", "layer1", "conv1", "bn1")


def _resnet_fpn_extractor(backbone, trainable_layers, returned_layers=None, extra_blocks=None,
                          norm_layer=None):
    """Freeze all but the outer ``trainable_layers`` ResNet parts and tap ``returned_layers``
    (stage numbers 1..4, named "0", "1", ...) into a 256-wide FPN."""
    if trainable_layers not in range(6):
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    learning = _RESNET_PARTS_OUTER_FIRST[: trainable_layers + (trainable_layers == 5)]
    for name, param in backbone.named_parameters():
        if not name.startswith(learning):
            param.requires_grad_(False)
    stages = [1, 2, 3, 4] if returned_layers is None else list(returned_layers)
    if not stages or not all(1 <= k <= 4 for k in stages):
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    stage1_width = backbone.inplanes // 8            # each later stage doubles it
    taps = {f"layer{k}": str(i) for i, k in enumerate(stages)}
    widths = [stage1_width << (k - 1) for k in stages]
    return BackboneWithFPN(backbone, taps, widths, 256, extra_blocks=extra_blocks, norm_layer=norm_layer)


def resnet_fpn_backbone(*, backbone_name, weights=None, norm_layer=FrozenBatchNorm2d, trainable_layers=3,
                        returned_layers=None, extra_blocks=None):
    """A fresh ResNet (``weights`` must be None: nothing is downloaded) with an FPN."""
    if weights is not None:
        from .._api import _no_pretrained
        _no_pretrained(backbone_name, weights)
    kwargs = {} if norm_layer is None else {"norm_layer": norm_layer}
    backbone = getattr(resnet, backbone_name)(**kwargs)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)
