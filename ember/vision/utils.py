"""torchvision.utils: make_grid, save_image, draw_bounding_boxes (Pillow imported lazily)."""
import math

import numpy as np

import ember
from ._pil import pil as _pil, pil_module as _pil_module

__all__ = ["make_grid", "save_image", "draw_bounding_boxes"]


def _as_rgb_batch(tensor):
    """(B, C, H, W) from a list of images, one image (C, H, W) or (H, W); one channel -> three."""
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    while tensor.dim() < 4:
        tensor = tensor.unsqueeze(0)
    if tensor.shape[1] == 1:
        tensor = tensor.repeat(1, 3, 1, 1)
    return tensor


def _stretch(img, low, high):
    """Clamp to [low, high], then map that range onto [0, 1]."""
    return (img.clamp(min=low, max=high) - low) / max(high - low, 1e-5)


@ember.no_grad()
def make_grid(tensor, nrow=8, padding=2, normalize=False, value_range=None, scale_each=False,
              pad_value=0.0):
    """Tile a batch (B, C, H, W) or list of images into one image (C, H', W'): ``nrow`` images
    per row, ``padding`` pixels of ``pad_value`` around each."""
    is_images = isinstance(tensor, ember.Tensor) or (
        isinstance(tensor, list) and all(isinstance(t, ember.Tensor) for t in tensor))
    if not is_images:
        raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if normalize is True and value_range is not None and not isinstance(value_range, tuple):
        raise TypeError("value_range has to be a tuple (min, max) if specified. min and max "
                        "are numbers")
    batch = _as_rgb_batch(tensor)

    if normalize is True:
        def rescale(images):
            low, high = value_range or (float(images.min()), float(images.max()))
            return _stretch(images, low, high)
        if scale_each is True:
            batch = ember.stack([rescale(img) for img in batch.unbind(0)], dim=0)
        else:
            batch = rescale(batch)

    count, channels, h, w = batch.shape
    if count == 1:
        return batch.squeeze(0)
    cols = min(nrow, count)
    rows = int(math.ceil(count / cols))
    step_y, step_x = h + padding, w + padding
    grid = ember.full((channels, rows * step_y + padding, cols * step_x + padding), pad_value,
                      dtype=batch.dtype)
    for k in range(count):
        top, left = (k // cols) * step_y + padding, (k % cols) * step_x + padding
        grid[:, top:top + h, left:left + w] = batch[k]
    return grid


def save_image(tensor, fp, format=None, **kwargs):
    """Save a tensor (or batch, via make_grid) as an image file with Pillow."""
    grid = make_grid(tensor, **kwargs).detach()
    pixels = (grid * 255 + 0.5).clamp(0, 255).to(ember.uint8).numpy()
    _pil().fromarray(np.ascontiguousarray(np.moveaxis(pixels, 0, -1))).save(fp, format=format)


def _box_colours(colors, count):
    """``count`` RGB tuples: the default palette, one colour for all, or one per box."""
    if colors is None:
        steps = (2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1)
        return [tuple((i * s) % 255 for s in steps) for i in range(count)]
    if not isinstance(colors, list):
        colors = [colors] * count
    elif len(colors) < count:
        raise ValueError(f"Number of colors must be equal or larger than the number of "
                         f"objects, but got {len(colors)} < {count}.")
    get_rgb = _pil_module("ImageColor").getrgb
    return [get_rgb(c) if isinstance(c, str) else tuple(c) for c in colors[:count]]


@ember.no_grad()
def draw_bounding_boxes(image, boxes, labels=None, colors=None, fill=False, width=1, font=None,
                        font_size=None, label_colors=None):
    """Draw (xmin, ymin, xmax, ymax) boxes on a uint8 (C, H, W) image; returns a new tensor."""
    Image, ImageDraw = _pil(), _pil_module("ImageDraw")
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in (1, 3):
        raise ValueError("Only grayscale and RGB images are supported")
    corners = boxes.detach().numpy() if isinstance(boxes, ember.Tensor) else np.asarray(boxes)
    if len(corners) and (np.any(corners[:, 0] > corners[:, 2]) or np.any(corners[:, 1] > corners[:, 3])):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                         "torchvision.ops.box_convert to convert them")
    count = len(corners)
    if count == 0:
        return image
    if labels is not None and len(labels) != count:
        raise ValueError(f"Number of boxes ({count}) and labels ({len(labels)}) mismatch. "
                         "Please specify labels for each box.")
    outline = _box_colours(colors, count)
    text_colours = outline if label_colors is None else _box_colours(label_colors, count)
    fonts = _pil_module("ImageFont")
    text_font = fonts.load_default() if font is None else fonts.truetype(font=font,
                                                                         size=font_size or 10)

    if image.is_floating_point():
        pixels = (image * 255).to(ember.uint8)
    elif image.dtype == ember.uint8:
        pixels = image
    else:
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    pixels = np.moveaxis(pixels.detach().numpy(), 0, -1)
    canvas = Image.fromarray(np.ascontiguousarray(np.broadcast_to(pixels, (*pixels.shape[:2], 3))))
    pen = ImageDraw.Draw(canvas, "RGBA" if fill else None)
    for k, box in enumerate(corners.astype(np.int64).tolist()):
        shade = tuple(outline[k]) + (100,) if fill else None
        pen.rectangle(box, width=width, outline=outline[k], fill=shade)
        if labels is not None and labels[k] is not None:
            pen.text((box[0] + width + 1, box[1] + width + 1), labels[k], fill=text_colours[k],
                     font=text_font)
    out = ember.from_numpy(np.ascontiguousarray(np.moveaxis(np.array(canvas), -1, 0)))
    return out.to(image.dtype) / 255 if image.is_floating_point() else out
