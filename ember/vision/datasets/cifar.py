"""CIFAR-10 / CIFAR-100 from the python-pickle batches under ``root/cifar-10[0]-...-py/``."""
import os
import pickle

import numpy as np

from .vision import VisionDataset, _no_download, _pil_image

__all__ = ["CIFAR10", "CIFAR100"]


def _unpickle(path):
    with open(path, "rb") as f:
        return pickle.load(f, encoding="latin1")


class CIFAR10(VisionDataset):
    """``data``: uint8 [N, 32, 32, 3] (each batch stores rows of 3072 = planes R, G, B of
    32x32); ``targets``: a list of ints; items are an RGB PIL image and an int."""

    base_folder = "cifar-10-batches-py"
    filename = "cifar-10-python.tar.gz"
    train_list = [[f"data_batch_{i}", None] for i in range(1, 6)]
    test_list = [["test_batch", None]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": None}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        names = [name for name, _ in (self.train_list if train else self.test_list)]
        missing = [n for n in names + [self.meta["filename"]] if not os.path.isfile(os.path.join(folder, n))]
        if missing:
            if download:
                _no_download(type(self).__name__, folder)
            raise RuntimeError(
                f"Dataset not found: missing {', '.join(missing)} under {folder}. Extract "
                f"{self.filename} under {self.root} (ember downloads nothing).")
        batches = [_unpickle(os.path.join(folder, n)) for n in names]
        rows = np.concatenate([b["data"] for b in batches])
        self.data = rows.reshape(len(rows), 3, 32, 32).transpose(0, 2, 3, 1)
        self.targets = [label for b in batches for label in b.get("labels", b.get("fine_labels"))]
        self._load_meta()

    def _load_meta(self):
        self.classes = _unpickle(os.path.join(self.root, self.base_folder, self.meta["filename"]))[self.meta["key"]]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def __getitem__(self, index):
        return self._transformed(_pil_image().fromarray(self.data[index]), self.targets[index])

    def __len__(self):
        return len(self.data)

    def download(self):
        _no_download(type(self).__name__, os.path.join(self.root, self.base_folder))

    def extra_repr(self):
        return "Split: " + ("Train" if self.train is True else "Test")


class CIFAR100(CIFAR10):
    """The 100 fine classes (``targets`` are the fine labels)."""

    base_folder = "cifar-100-python"
    filename = "cifar-100-python.tar.gz"
    train_list = [["train", None]]
    test_list = [["test", None]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": None}
