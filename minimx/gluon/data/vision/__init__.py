"""`mx.gluon.data.vision`: image datasets (`ImageRecordDataset`,
`ImageFolderDataset`, `MNIST`, `FashionMNIST`, `CIFAR10`, `CIFAR100`) and
`transforms`."""
from . import transforms
from .datasets import (
    CIFAR10,
    CIFAR100,
    MNIST,
    FashionMNIST,
    ImageFolderDataset,
    ImageRecordDataset,
)

__all__ = ["CIFAR10", "CIFAR100", "MNIST", "FashionMNIST", "ImageFolderDataset",
           "ImageRecordDataset", "transforms"]
