"""Helpers of the ops: RoI box conversion and checks, and the modules wrapping an op."""
import ember
import ember.nn as nn


def convert_boxes_to_roi_format(boxes):
    """A list of per-image [L, 4] boxes -> one [K, 5] tensor whose first column is the image index."""
    tagged = [ember.cat([ember.full_like(b[:, :1], i), b], dim=1) for i, b in enumerate(boxes)]
    return ember.cat(tagged, dim=0)


def check_roi_boxes_shape(boxes):
    """Boxes must be a [K, 5] tensor (image index first) or a list of [L, 4] tensors."""
    if isinstance(boxes, ember.Tensor):
        if boxes.size(1) != 5:
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    elif isinstance(boxes, (list, tuple)):
        if any(b.size(1) != 4 for b in boxes):
            raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def as_rois(boxes):
    """Checked boxes as one [K, 5] tensor."""
    check_roi_boxes_shape(boxes)
    return boxes if isinstance(boxes, ember.Tensor) else convert_boxes_to_roi_format(boxes)


def _pair(x):
    return (x, x) if isinstance(x, int) else tuple(x)


class OpModule(nn.Module):
    """A module calling ``op(input, rois, *settings)``, the settings named in ``_fields`` and
    listed, as ``name=value``, by the repr."""

    _fields = ()

    def forward(self, input, rois):
        return type(self).op(input, rois, *(getattr(self, f) for f in self._fields))

    def __repr__(self):
        settings = ", ".join(f"{f}={getattr(self, f)}" for f in self._fields)
        return f"{type(self).__name__}({settings})"
