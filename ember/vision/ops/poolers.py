"""MultiScaleRoIAlign: RoIAlign over the FPN level each box belongs to (level
floor(4 + log2(sqrt(area) / 224)), clamped to the levels present), as torchvision pools."""
import math

import ember
from ember import nn
from .boxes import box_area
from .roi_align import roi_align
from ._utils import convert_boxes_to_roi_format

__all__ = ["MultiScaleRoIAlign", "LevelMapper", "initLevelMapper"]


class LevelMapper:
    """Box lists -> int64 level index (0 = the finest level given) per box (FPN paper, eq. 1)."""

    def __init__(self, k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
        self.k_min, self.k_max = k_min, k_max
        self.s0, self.lvl0, self.eps = canonical_scale, canonical_level, eps

    def __call__(self, boxlists):
        side = ember.sqrt(ember.cat([box_area(b) for b in boxlists]))
        target = self.lvl0 + ember.log2(side / self.s0) + ember.tensor(self.eps, dtype=side.dtype)
        levels = ember.clamp(ember.floor(target), min=self.k_min, max=self.k_max)
        return (levels.to(ember.int64) - self.k_min).to(ember.int64)


def initLevelMapper(k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
    return LevelMapper(k_min, k_max, canonical_scale, canonical_level, eps)


def _infer_scale(feature, original_size):
    """The power of two nearest to feature height / image height."""
    approx = float(feature.shape[-2]) / float(original_size[0])
    return 2 ** float(ember.tensor(approx).log2().round())


class MultiScaleRoIAlign(nn.Module):
    """``forward(x: {name: (N, C, H_l, W_l)}, boxes: [ (L_i, 4) per image ], image_shapes:
    [(h, w)])`` -> (sum L_i, C, *output_size): each box pooled from its level of
    ``featmap_names``."""

    def __init__(self, featmap_names, output_size, sampling_ratio, *, canonical_scale=224,
                 canonical_level=4):
        super().__init__()
        self.output_size = (output_size,) * 2 if isinstance(output_size, int) else tuple(output_size)
        self.featmap_names, self.sampling_ratio = featmap_names, sampling_ratio
        self.canonical_scale, self.canonical_level = canonical_scale, canonical_level
        self.scales = self.map_levels = None          # set from the inputs by each forward

    def _setup_scales(self, features, image_shapes):
        if not image_shapes:
            raise ValueError("images list should not be empty")
        original = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
        scales = [_infer_scale(f, original) for f in features]
        lvl_min, lvl_max = -math.log2(scales[0]), -math.log2(scales[-1])
        return scales, initLevelMapper(int(lvl_min), int(lvl_max), self.canonical_scale,
                                       self.canonical_level)

    def forward(self, x, boxes, image_shapes):
        features = [v for k, v in x.items() if k in self.featmap_names]
        self.scales, self.map_levels = self._setup_scales(features, image_shapes)
        rois = convert_boxes_to_roi_format(boxes)
        if len(features) == 1:
            return roi_align(features[0], rois, self.output_size, spatial_scale=self.scales[0],
                             sampling_ratio=self.sampling_ratio)
        levels = self.map_levels(boxes)
        result = ember.zeros((rois.shape[0], features[0].shape[1]) + self.output_size,
                             dtype=features[0].dtype)
        for level, (feature, scale) in enumerate(zip(features, self.scales)):
            in_level = ember.where(levels == level)[0]
            if in_level.numel() == 0:
                continue
            pooled = roi_align(feature, rois[in_level], self.output_size, spatial_scale=scale,
                               sampling_ratio=self.sampling_ratio)
            result[in_level] = pooled.to(result.dtype)
        return result

    def __repr__(self):
        return (f"{type(self).__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")
