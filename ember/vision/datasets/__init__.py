"""``torchvision.datasets`` stand-in: FakeData, ImageFolder/DatasetFolder, and MNIST /
FashionMNIST / CIFAR10 / CIFAR100 read from their standard files under ``root`` (nothing is
downloaded: ``download=True`` raises unless the files are already there)."""
from .cifar import CIFAR10, CIFAR100
from .fakedata import FakeData
from .folder import DatasetFolder, ImageFolder
from .mnist import KMNIST, MNIST, FashionMNIST
from .vision import VisionDataset

__all__ = ["VisionDataset", "FakeData", "DatasetFolder", "ImageFolder", "MNIST", "FashionMNIST",
           "KMNIST", "CIFAR10", "CIFAR100"]
