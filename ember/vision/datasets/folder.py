"""DatasetFolder / ImageFolder: samples laid out as ``root/<class>/.../<file>``."""
import os

from .vision import VisionDataset, _pil_image

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "pil_loader",
           "find_classes", "make_dataset", "has_file_allowed_extension", "is_image_file"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename, extensions):
    """Whether ``filename`` ends (case-insensitively) with one of ``extensions``."""
    suffixes = (extensions,) if isinstance(extensions, str) else tuple(extensions)
    return filename.lower().endswith(suffixes)


def is_image_file(filename):
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory):
    """The sub-folders of ``directory`` in sorted order, and each one's index."""
    with os.scandir(directory) as entries:
        names = sorted(e.name for e in entries if e.is_dir())
    if not names:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return names, dict(zip(names, range(len(names))))


def _walk_sorted(folder):
    """Paths of the files under ``folder`` (links followed), folders and names in sorted order."""
    for where, _, files in sorted(os.walk(folder, followlinks=True)):
        for name in sorted(files):
            yield os.path.join(where, name)


def make_dataset(directory, class_to_idx=None, extensions=None, is_valid_file=None, allow_empty=False):
    """``(path, class index)`` for every accepted file, classes and files in sorted order. A file
    is accepted by ``is_valid_file(path)`` or by its extension: exactly one must be given."""
    directory = os.path.expanduser(directory)
    if class_to_idx is None:
        class_to_idx = find_classes(directory)[1]
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    accept = is_valid_file or (lambda path: has_file_allowed_extension(path, extensions))
    samples, empty = [], []
    for name in sorted(class_to_idx):
        folder = os.path.join(directory, name)
        found = [(p, class_to_idx[name]) for p in _walk_sorted(folder) if accept(p)] if os.path.isdir(folder) else []
        samples += found
        if not found:
            empty.append(name)
    if empty and not allow_empty:
        message = f"Found no valid file for the classes {', '.join(empty)}. "
        if extensions is not None:
            listed = extensions if isinstance(extensions, str) else ", ".join(extensions)
            message += f"Supported extensions are: {listed}"
        raise FileNotFoundError(message)
    return samples


class DatasetFolder(VisionDataset):
    """Samples ``loader(path)`` with the index of their class folder as target."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None,
                 is_valid_file=None, allow_empty=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(self.root, self.class_to_idx, extensions, is_valid_file,
                                         allow_empty=allow_empty)
        self.targets = [target for _, target in self.samples]
        self.loader = loader
        self.extensions = extensions

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None, allow_empty=False):
        if class_to_idx is None:  # the module-level function would look the classes up itself
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory):
        return find_classes(directory)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._transformed(self.loader(path), target)

    def __len__(self):
        return len(self.samples)


def pil_loader(path):
    """The image at ``path`` as an RGB PIL image (read fully, the file closed)."""
    with open(path, "rb") as f:
        return _pil_image().open(f).convert("RGB")


def default_loader(path):
    return pil_loader(path)


class ImageFolder(DatasetFolder):
    """Images arranged as ``root/<class>/<image>``; ``imgs`` is ``samples``."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader,
                 is_valid_file=None, allow_empty=False):
        extensions = None if is_valid_file is not None else IMG_EXTENSIONS
        super().__init__(root, loader, extensions, transform, target_transform, is_valid_file, allow_empty)
        self.imgs = self.samples
