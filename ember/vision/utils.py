"""torchvision.utils: make_grid, save_image, draw_bounding_boxes (Pillow imported lazily)."""
import math
import pathlib

import numpy as np

import ember
from ._pil import pil as _pil, pil_module as _pil_module

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


@ember.no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Arrange a batch (B, C, H, W) or list of images into one grid image (C, H', W')."""
    if not (isinstance(tensor, ember.Tensor) or
            (isinstance(tensor, list) and all(isinstance(t, ember.Tensor) for t in tensor))):
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)

    if normalize is True:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                            "are numbers")

        def norm(img, low, high):
            return (img.clamp(min=low, max=high) - low) / max(high - low, 1e-5)

        def norm_range(t):
            if value_range is not None:
                return norm(t, value_range[0], value_range[1])
            return norm(t, float(t.min()), float(t.max()))

        if scale_each is True:
            tensor = ember.stack([norm_range(t) for t in tensor.unbind(0)], dim=0)
        else:
            tensor = norm_range(tensor)

    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps = tensor.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
    num_channels = tensor.shape[1]
    # Runs under no_grad, as torchvision's does.
    fill = lambda h, w: ember.full((num_channels, h, w), pad_value, dtype=tensor.dtype)  # noqa: E731
    rows = []
    k = 0
    for _ in range(ymaps):
        cells = []
        for _ in range(xmaps):
            if k < nmaps:
                cell = tensor[k]
            else:
                cell = fill(height - padding, width - padding)
            cells.append(fill(height - padding, padding))
            cells.append(cell)
            k += 1
        cells.append(fill(height - padding, padding))
        rows.append(fill(padding, width * xmaps + padding))
        rows.append(ember.cat(cells, dim=2))
    rows.append(fill(padding, width * xmaps + padding))
    grid = ember.cat(rows, dim=1)
    return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Save a tensor (or batch, via make_grid) as an image file with Pillow."""
    Image = _pil()
    grid = make_grid(tensor, **kwargs)
    ndarr = grid.detach().mul(255).add(0.5).clamp(0, 255).permute(1, 2, 0).to(ember.uint8).numpy()
    im = Image.fromarray(np.ascontiguousarray(ndarr))
    im.save(fp, format=format)


def _parse_colors(colors, num_objects):
    if colors is None:
        palette = np.array([2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1])
        return [tuple(int(v) for v in (i * palette) % 255) for i in range(num_objects)]
    if isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(f"Number of colors must be equal or larger than the number of "
                             f"objects, but got {len(colors)} < {num_objects}.")
        out = colors[:num_objects]
    else:
        out = [colors] * num_objects
    ImageColor = _pil_module("ImageColor")
    return [ImageColor.getrgb(c) if isinstance(c, str) else tuple(c) for c in out]


@ember.no_grad()
def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None,
                        font_size=None, label_colors=None):
    """Draw (xmin, ymin, xmax, ymax) boxes on a uint8 (C, H, W) image; returns a new tensor."""
    Image = _pil()
    ImageDraw = _pil_module("ImageDraw")
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in (1, 3):
        raise ValueError("Only grayscale and RGB images are supported")
    boxes_np = boxes.detach().numpy() if isinstance(boxes, ember.Tensor) else np.asarray(boxes)
    if boxes_np.size and ((boxes_np[:, 0] > boxes_np[:, 2]).any() or (boxes_np[:, 1] > boxes_np[:, 3]).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                         "torchvision.ops.box_convert to convert them")
    num_boxes = boxes_np.shape[0]
    if num_boxes == 0:
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. "
                         "Please specify labels for each box.")
    colors = _parse_colors(colors, num_boxes)
    label_colors = _parse_colors(label_colors, num_boxes) if label_colors is not None else colors
    ImageFont = _pil_module("ImageFont")
    if font is None:
        txt_font = ImageFont.load_default()
    else:
        txt_font = ImageFont.truetype(font=font, size=font_size or 10)

    original_dtype = image.dtype
    img = image
    if img.is_floating_point():
        img = (img * 255).to(ember.uint8)
    elif img.dtype != ember.uint8:
        raise ValueError(f"The image dtype must be uint8 or float, got {img.dtype}")
    if img.shape[0] == 1:
        img = img.repeat(3, 1, 1)
    ndarr = np.ascontiguousarray(img.detach().permute(1, 2, 0).numpy())
    img_to_draw = Image.fromarray(ndarr)
    img_boxes = boxes_np.astype(np.int64).tolist()
    draw = ImageDraw.Draw(img_to_draw, "RGBA") if fill else ImageDraw.Draw(img_to_draw)
    for bbox, color, label, label_color in zip(img_boxes, colors, labels, label_colors):
        if fill:
            draw.rectangle(bbox, width=width, outline=color, fill=tuple(color) + (100,))
        else:
            draw.rectangle(bbox, width=width, outline=color)
        if label is not None:
            margin = width + 1
            draw.text((bbox[0] + margin, bbox[1] + margin), label, fill=label_color, font=txt_font)
    out = ember.from_numpy(np.array(img_to_draw)).permute(2, 0, 1).contiguous()
    if original_dtype.is_floating_point:
        out = out.to(original_dtype) / 255
    return out
