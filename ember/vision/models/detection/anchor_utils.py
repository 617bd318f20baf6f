"""Anchor boxes for the RPN (Ren et al. 2015, section 3.1.1).

Level l has A_l = len(sizes[l]) * len(aspect_ratios[l]) template boxes centred at the
origin: for size s and ratio r = height / width, width s / sqrt(r) and height s * sqrt(r),
so the area stays s**2; corners are rounded to integers. The templates are then repeated at
every cell of the level's (H_l, W_l) grid, the cell (i, j) sitting at (j * stride_x,
i * stride_y) of the padded image, where stride = padded size // grid size."""
import numpy as np

import ember
from ember import nn

__all__ = ["AnchorGenerator"]


def _as_per_level(sizes, aspect_ratios):
    """Accept flat ``sizes`` (one size per level) and one ratio tuple shared by all levels."""
    nested = lambda v: isinstance(v[0], (list, tuple))        # noqa: E731
    sizes = tuple(sizes) if nested(sizes) else tuple((s,) for s in sizes)
    ratios = tuple(aspect_ratios) if nested(aspect_ratios) else (tuple(aspect_ratios),) * len(sizes)
    return sizes, ratios


def _templates(sizes, ratios):
    """(len(ratios) * len(sizes), 4) float32 corners, ratio-major, computed in float32."""
    root = np.sqrt(np.asarray(ratios, dtype=np.float32))[:, None]
    side = np.asarray(sizes, dtype=np.float32)[None, :]
    half_w, half_h = ((1 / root) * side).ravel() / 2, (root * side).ravel() / 2
    return np.round(np.stack([-half_w, -half_h, half_w, half_h], axis=1))


def _tile(templates, grid, stride, dtype):
    """Templates (A, 4) placed at each cell of an (H, W) grid -> (H * W * A, 4), cells in
    row-major order, all templates of a cell together."""
    (rows, cols), (step_y, step_x) = grid, stride
    ys, xs = np.meshgrid(np.arange(rows) * step_y, np.arange(cols) * step_x, indexing="ij")
    offsets = np.stack([xs, ys, xs, ys], axis=-1).reshape(-1, 1, 4).astype(dtype)
    return (offsets + templates.astype(dtype)[None]).reshape(-1, 4)


class AnchorGenerator(nn.Module):
    """``forward(image_list, feature_maps)`` -> one (sum_l H_l W_l A_l, 4) tensor per image,
    in the dtype of the feature maps."""

    def __init__(self, sizes=((128, 256, 512),), aspect_ratios=((0.5, 1.0, 2.0),)):
        super().__init__()
        self.sizes, self.aspect_ratios = _as_per_level(sizes, aspect_ratios)
        self.cell_anchors = [self.generate_anchors(s, r) for s, r in zip(self.sizes, self.aspect_ratios)]

    @staticmethod
    def generate_anchors(scales, aspect_ratios, dtype=ember.float32, device="cpu"):
        """One level's (len(aspect_ratios) * len(scales), 4) templates."""
        return ember.from_numpy(_templates(scales, aspect_ratios)).to(dtype)

    def set_cell_anchors(self, dtype, device="cpu"):
        self.cell_anchors = [t.to(dtype=dtype) for t in self.cell_anchors]

    def num_anchors_per_location(self):
        return [len(s) * len(r) for s, r in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes, strides):
        """Per level (H_l * W_l * A_l, 4) anchors for the given grids and (y, x) strides."""
        if len({len(grid_sizes), len(strides), len(self.cell_anchors)}) != 1:
            raise ValueError("Anchors should be Tuple[Tuple[int]] because each feature map could "
                             "potentially have different sizes and aspect ratios. There needs to be "
                             "a match between the number of feature maps passed and the number of "
                             "sizes / aspect ratios specified.")
        out = []
        for grid, stride, templates in zip(grid_sizes, strides, self.cell_anchors):
            np_dtype = templates.numpy().dtype
            out.append(ember.from_numpy(_tile(templates.numpy(), grid, [int(s) for s in stride], np_dtype)))
        return out

    def forward(self, image_list, feature_maps):
        padded = image_list.tensors.shape[-2:]
        grids = [tuple(f.shape[-2:]) for f in feature_maps]
        strides = [tuple(p // g for p, g in zip(padded, grid)) for grid in grids]
        self.set_cell_anchors(feature_maps[0].dtype)
        anchors = ember.cat(self.grid_anchors(grids, strides))
        return [anchors.clone() for _ in image_list.image_sizes]

    def __repr__(self):
        return f"{type(self).__name__}()"
