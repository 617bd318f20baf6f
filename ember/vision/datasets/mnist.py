"""MNIST, FashionMNIST and KMNIST from their idx files under ``root/<Name>/raw/``."""
import gzip
import os

import numpy as np

import ember

from .vision import VisionDataset, _no_download, _pil_image

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "read_image_file", "read_label_file"]

# idx element types by the magic number's third byte (multi-byte ones are big-endian)
_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_sn3_pascalvincent_tensor(path, strict=True):
    """An idx file (LeCun's format: zero bytes, a type byte, the number of dimensions, the
    big-endian 32-bit sizes, then the values), plain or gzipped, as an ember tensor."""
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rb") as f:
        raw = f.read()
    code, ndim = raw[2], raw[3]
    if raw[:2] != b"\0\0" or code not in _IDX_TYPES or not 1 <= ndim <= 3:
        raise RuntimeError(f"{path} is not an idx file (magic number {int.from_bytes(raw[:4], 'big')})")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", ndim, 4))
    values = np.frombuffer(raw, _IDX_TYPES[code], offset=4 + 4 * ndim)
    count = int(np.prod(shape))
    if strict and values.size != count:
        raise RuntimeError(f"{path}: expected {count} values, found {values.size}")
    native = values[:count].astype(values.dtype.newbyteorder("="))
    return ember.from_numpy(native.reshape(shape))


def _read_checked(path, ndim):
    data = read_sn3_pascalvincent_tensor(path, strict=False)
    if data.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {data.dtype}")
    if data.dim() != ndim:
        raise ValueError(f"x should have {ndim} dimension instead of {data.dim()}")
    return data


def read_label_file(path):
    """Labels of an idx1 file as int64."""
    return _read_checked(path, 1).long()


def read_image_file(path):
    """Images of an idx3 file as uint8 [N, H, W]."""
    return _read_checked(path, 3)


class MNIST(VisionDataset):
    """``root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (or the same with .gz):
    ``data`` uint8 [N, 28, 28], ``targets`` int64; items are a PIL "L" image and an int."""

    resources = [(f"{split}-{kind}-ubyte.gz", None) for split in ("train", "t10k")
                 for kind in ("images-idx3", "labels-idx1")]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = [f"{i} - {word}" for i, word in enumerate(
        "zero one two three four five six seven eight nine".split())]

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if not self._check_exists():
            if download:
                _no_download(type(self).__name__, self.raw_folder)
            raise RuntimeError(
                f"Dataset not found. Place the idx files ({', '.join(self._split_files())}, "
                f"optionally .gz) under {self.raw_folder} (ember downloads nothing).")
        self.data, self.targets = self._load_data()

    # torchvision's old names for the same tensors
    train_data = test_data = property(lambda self: self.data)
    train_labels = test_labels = property(lambda self: self.targets)

    def _split_files(self):
        split = "train" if self.train else "t10k"
        return [f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte"]

    def _find(self, name):
        """The path of ``name`` or ``name.gz`` in the raw folder, or None."""
        paths = [os.path.join(self.raw_folder, name + ext) for ext in ("", ".gz")]
        return next((p for p in paths if os.path.isfile(p)), None)

    def _check_exists(self):
        return all(self._find(name) for name in self._split_files())

    def _load_data(self):
        images, labels = (self._find(name) for name in self._split_files())
        return read_image_file(images), read_label_file(labels)

    def __getitem__(self, index):
        image = _pil_image().fromarray(self.data[index].numpy(), mode="L")
        return self._transformed(image, int(self.targets[index]))

    def __len__(self):
        return len(self.data)

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, type(self).__name__, "processed")

    @property
    def class_to_idx(self):
        return {name: i for i, name in enumerate(self.classes)}

    def download(self):
        if not self._check_exists():
            _no_download(type(self).__name__, self.raw_folder)

    def extra_repr(self):
        return "Split: " + ("Train" if self.train is True else "Test")


class FashionMNIST(MNIST):
    """Zalando's article images, in MNIST's files under ``root/FashionMNIST/raw/``."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """Kuzushiji-MNIST (cursive Japanese), under ``root/KMNIST/raw/``."""

    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
