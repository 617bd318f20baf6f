"""VisionDataset: the base of the vision datasets (transform plumbing and torchvision's repr)."""
import os

from ember.utils.data import Dataset

_PIL_HINT = "pip install 'ember[images]'"


def _pil_image():
    try:
        from PIL import Image
    except ImportError as e:
        raise ImportError(f"ember.vision.datasets needs Pillow to produce PIL images: {_PIL_HINT}") from e
    return Image


def _labelled(label, obj):
    """``obj``'s repr with ``label`` before its first line and the rest indented under it."""
    first, *rest = repr(obj).splitlines() or [""]
    return [label + first] + [" " * len(label) + line for line in rest]


class StandardTransform:
    """``transform`` applied to the input and ``target_transform`` to the target (either may
    be None)."""

    def __init__(self, transform=None, target_transform=None):
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input, target):
        return (input if self.transform is None else self.transform(input),
                target if self.target_transform is None else self.target_transform(target))

    def __repr__(self):
        lines = [type(self).__name__]
        for label, fn in (("Transform: ", self.transform), ("Target transform: ", self.target_transform)):
            if fn is not None:
                lines += _labelled(label, fn)
        return "\n".join(lines)


class VisionDataset(Dataset):
    """Base class of vision datasets: subclasses define ``__getitem__`` and ``__len__``.

    ``transforms`` (taking and returning image and target) and ``transform`` /
    ``target_transform`` are mutually exclusive; ``root`` is only used in the repr."""

    _repr_indent = 4

    def __init__(self, root=None, transforms=None, transform=None, target_transform=None):
        self.root = os.path.expanduser(root) if isinstance(root, str) else root
        separate = transform is not None or target_transform is not None
        if separate and transforms is not None:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        self.transforms = StandardTransform(transform, target_transform) if separate else transforms

    def _transformed(self, sample, target):
        """(sample, target) through ``transform`` and ``target_transform`` where set."""
        return StandardTransform(self.transform, self.target_transform)(sample, target)

    def __getitem__(self, index):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def __repr__(self):
        lines = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            lines.append(f"Root location: {self.root}")
        lines += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            lines.append(repr(self.transforms))
        pad = " " * self._repr_indent
        return "\n".join([f"Dataset {type(self).__name__}"] + [pad + line for line in lines])

    def _format_transform_repr(self, transform, head):
        return _labelled(head, transform)

    def extra_repr(self):
        return ""


def _no_download(name, where):
    raise RuntimeError(
        f"{name}: ember downloads nothing (download=True is not supported). Place the dataset's "
        f"standard files under {where} yourself and use download=False.")
