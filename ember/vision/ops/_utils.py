import ember


def convert_boxes_to_roi_format(boxes):
    """A list of per-image [L, 4] boxes -> one [K, 5] tensor whose first column is the image index."""
    concat_boxes = ember.cat([b for b in boxes], dim=0)
    temp = []
    for i, b in enumerate(boxes):
        temp.append(ember.full_like(b[:, :1], i))
    ids = ember.cat(temp, dim=0)
    return ember.cat([ids, concat_boxes], dim=1)


def check_roi_boxes_shape(boxes):
    if isinstance(boxes, (list, tuple)):
        for _tensor in boxes:
            if _tensor.size(1) != 4:
                raise AssertionError("The shape of the tensor in the boxes list is not correct as List[Tensor[L, 4]]")
    elif isinstance(boxes, ember.Tensor):
        if boxes.size(1) != 5:
            raise AssertionError("The boxes tensor shape is not correct as Tensor[K, 5]")
    else:
        raise AssertionError("boxes is expected to be a Tensor[L, 5] or a List[Tensor[K, 4]]")


def _pair(x):
    if isinstance(x, int):
        return (x, x)
    return tuple(x)
