"""AnchorGenerator: per feature map, a grid of base anchors (one per size x aspect ratio,
centred at 0 and rounded) shifted by the map's stride in the padded image."""
import ember
from ember import nn

__all__ = ["AnchorGenerator"]


class AnchorGenerator(nn.Module):
    """``forward(image_list, feature_maps)`` -> one (sum_l H_l W_l A_l, 4) tensor per image."""

    def __init__(self, sizes=((128, 256, 512),), aspect_ratios=((0.5, 1.0, 2.0),)):
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        self.sizes, self.aspect_ratios = sizes, aspect_ratios
        self.cell_anchors = [self.generate_anchors(s, a) for s, a in zip(sizes, aspect_ratios)]

    @staticmethod
    def generate_anchors(scales, aspect_ratios, dtype=ember.float32, device="cpu"):
        """(len(ratios) * len(scales), 4) boxes of area scale**2 and height/width = ratio."""
        scales = ember.as_tensor(scales, dtype=dtype)
        ratios = ember.as_tensor(aspect_ratios, dtype=dtype)
        h_ratios = ember.sqrt(ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).view(-1)
        hs = (h_ratios[:, None] * scales[None, :]).view(-1)
        return (ember.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def set_cell_anchors(self, dtype, device="cpu"):
        self.cell_anchors = [a.to(dtype=dtype) for a in self.cell_anchors]

    def num_anchors_per_location(self):
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes, strides):
        if not (len(grid_sizes) == len(strides) == len(self.cell_anchors)):
            raise ValueError("Anchors should be Tuple[Tuple[int]] because each feature map could "
                             "potentially have different sizes and aspect ratios. There needs to be "
                             "a match between the number of feature maps passed and the number of "
                             "sizes / aspect ratios specified.")
        anchors = []
        for (gh, gw), (sh, sw), base in zip(grid_sizes, strides, self.cell_anchors):
            shifts_x = ember.arange(0, gw, dtype=ember.int32) * sw
            shifts_y = ember.arange(0, gh, dtype=ember.int32) * sh
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = ember.stack((shift_x, shift_y, shift_x, shift_y), dim=1)
            anchors.append((shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_list, feature_maps):
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        ih, iw = image_list.tensors.shape[-2:]
        strides = [(ember.tensor(ih // gh, dtype=ember.int64), ember.tensor(iw // gw, dtype=ember.int64))
                   for gh, gw in grid_sizes]
        self.set_cell_anchors(feature_maps[0].dtype)
        per_level = self.grid_anchors(grid_sizes, strides)
        return [ember.cat(per_level) for _ in image_list.image_sizes]

    def __repr__(self):
        return f"{type(self).__name__}()"
