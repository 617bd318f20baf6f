"""CIFAR-10 / CIFAR-100 from the python-pickle batches under ``root/cifar-10[0]-...-py/``."""
import os
import pickle

import numpy as np

from .vision import VisionDataset, _no_download, _pil_image

__all__ = ["CIFAR10", "CIFAR100"]


class CIFAR10(VisionDataset):
    base_folder = "cifar-10-batches-py"
    filename = "cifar-10-python.tar.gz"
    train_list = [["data_batch_1", None], ["data_batch_2", None], ["data_batch_3", None],
                  ["data_batch_4", None], ["data_batch_5", None]]
    test_list = [["test_batch", None]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": None}

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        files = self.train_list if self.train else self.test_list
        folder = os.path.join(self.root, self.base_folder)
        missing = [f for f, _ in files + [[self.meta["filename"], None]]
                   if not os.path.isfile(os.path.join(folder, f))]
        if missing:
            if download:
                _no_download(self.__class__.__name__, folder)
            raise RuntimeError(
                f"Dataset not found: missing {', '.join(missing)} under {folder}. Extract "
                f"{self.filename} under {self.root} (ember downloads nothing).")
        self.data = []
        self.targets = []
        for file_name, _ in files:
            with open(os.path.join(folder, file_name), "rb") as f:
                entry = pickle.load(f, encoding="latin1")
                self.data.append(entry["data"])
                if "labels" in entry:
                    self.targets.extend(entry["labels"])
                else:
                    self.targets.extend(entry["fine_labels"])
        self.data = np.vstack(self.data).reshape(-1, 3, 32, 32)
        self.data = self.data.transpose((0, 2, 3, 1))
        self._load_meta()

    def _load_meta(self):
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        with open(path, "rb") as infile:
            data = pickle.load(infile, encoding="latin1")
            self.classes = data[self.meta["key"]]
        self.class_to_idx = {_class: i for i, _class in enumerate(self.classes)}

    def __getitem__(self, index):
        img, target = self.data[index], self.targets[index]
        img = _pil_image().fromarray(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self):
        return len(self.data)

    def download(self):
        _no_download(self.__class__.__name__, os.path.join(self.root, self.base_folder))

    def extra_repr(self):
        split = "Train" if self.train is True else "Test"
        return f"Split: {split}"


class CIFAR100(CIFAR10):
    base_folder = "cifar-100-python"
    filename = "cifar-100-python.tar.gz"
    train_list = [["train", None]]
    test_list = [["test", None]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": None}
