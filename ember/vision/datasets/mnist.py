"""MNIST and FashionMNIST from the standard idx files under ``root/<Name>/raw/``."""
import gzip
import os

import numpy as np

import ember

from .vision import VisionDataset, _no_download, _pil_image

__all__ = ["MNIST", "FashionMNIST", "read_image_file", "read_label_file"]

_TYPEMAP = {8: np.uint8, 9: np.int8, 11: np.dtype(">i2"), 12: np.dtype(">i4"),
            13: np.dtype(">f4"), 14: np.dtype(">f8")}


def read_sn3_pascalvincent_tensor(path, strict=True):
    """Read an idx ("SN3 Pascal Vincent") file, plain or .gz, into an ember tensor."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    nd = magic % 256
    ty = magic // 256
    if not (1 <= nd <= 3 and 8 <= ty <= 14 and ty in _TYPEMAP):
        raise RuntimeError(f"{path} is not an idx file (magic number {magic})")
    s = [int.from_bytes(data[4 * (i + 1): 4 * (i + 2)], "big") for i in range(nd)]
    arr = np.frombuffer(data, dtype=_TYPEMAP[ty], offset=4 * (nd + 1))
    arr = arr.astype(arr.dtype.newbyteorder("="))
    if strict and arr.shape[0] != int(np.prod(s)):
        raise RuntimeError(f"{path}: expected {int(np.prod(s))} values, found {arr.shape[0]}")
    return ember.from_numpy(arr[: int(np.prod(s))].reshape(s).copy())


def read_label_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype}")
    if x.ndimension() != 1:
        raise ValueError(f"x should have 1 dimension instead of {x.ndimension()}")
    return x.long()


def read_image_file(path):
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype torch.uint8 instead of {x.dtype}")
    if x.ndimension() != 3:
        raise ValueError(f"x should have 3 dimension instead of {x.ndimension()}")
    return x


class MNIST(VisionDataset):
    """`root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte` (or the same with .gz)."""

    resources = [
        ("train-images-idx3-ubyte.gz", None),
        ("train-labels-idx1-ubyte.gz", None),
        ("t10k-images-idx3-ubyte.gz", None),
        ("t10k-labels-idx1-ubyte.gz", None),
    ]
    training_file = "training.pt"
    test_file = "test.pt"
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six",
               "7 - seven", "8 - eight", "9 - nine"]

    @property
    def train_labels(self):
        return self.targets

    @property
    def test_labels(self):
        return self.targets

    @property
    def train_data(self):
        return self.data

    @property
    def test_data(self):
        return self.data

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if not self._check_exists():
            if download:
                _no_download(self.__class__.__name__, self.raw_folder)
            raise RuntimeError(
                f"Dataset not found. Place the idx files ({', '.join(self._split_files())}, "
                f"optionally .gz) under {self.raw_folder} (ember downloads nothing).")
        self.data, self.targets = self._load_data()

    def _split_files(self):
        prefix = "train" if self.train else "t10k"
        return [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]

    def _find(self, name):
        for cand in (name, name + ".gz"):
            p = os.path.join(self.raw_folder, cand)
            if os.path.isfile(p):
                return p
        return None

    def _check_exists(self):
        return all(self._find(f) is not None for f in self._split_files())

    def _load_data(self):
        image_file, label_file = self._split_files()
        data = read_image_file(self._find(image_file))
        targets = read_label_file(self._find(label_file))
        return data, targets

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        img = _pil_image().fromarray(img.numpy(), mode="L")
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    @property
    def raw_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def processed_folder(self):
        return os.path.join(self.root, self.__class__.__name__, "processed")

    @property
    def class_to_idx(self):
        return {_class: i for i, _class in enumerate(self.classes)}

    def download(self):
        if not self._check_exists():
            _no_download(self.__class__.__name__, self.raw_folder)

    def extra_repr(self):
        split = "Train" if self.train is True else "Test"
        return f"Split: {split}"


class FashionMNIST(MNIST):
    """`root/FashionMNIST/raw/...`: the same idx files as MNIST."""

    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
               "Bag", "Ankle boot"]


class KMNIST(MNIST):
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
