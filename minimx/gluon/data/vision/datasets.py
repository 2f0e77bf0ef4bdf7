"""`mx.gluon.data.vision` datasets of images on disk, as MXNet 1.9.1's: a RecordIO
file of packed images, or a folder with a subfolder per class. (MXNet's MNIST
and CIFAR datasets download their files; minimx does not download.)"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

from .... import image, recordio
from ....ndarray import NDArray
from ..dataset import Dataset, RecordFileDataset

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")


class ImageRecordDataset(RecordFileDataset):
    """``(image, label)`` samples of a ``.rec`` file that ``im2rec`` packed;
    `flag` 1 decodes colour (RGB), 0 grey; `transform(image, label)` maps each."""

    def __init__(self, filename: str, flag: int = 1,
                 transform: Callable[[NDArray, Any], Any] | None = None) -> None:
        super().__init__(filename)
        self._flag, self._transform = flag, transform

    def __getitem__(self, idx: int) -> Any:
        header, img = recordio.unpack(super().__getitem__(idx))
        decoded = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(decoded, header.label)
        return decoded, header.label


class ImageFolderDataset(Dataset):
    """``(image, label)`` samples of ``root/<class>/<image>`` files (.jpg,
    .jpeg, .png): the classes in sorted order are labels 0, 1, ... (their
    names in `synsets`), the files of each in sorted order (`items`: (path,
    label)). Other files are skipped with a warning."""

    def __init__(self, root: str, flag: int = 1,
                 transform: Callable[[NDArray, int], Any] | None = None) -> None:
        self._root = os.path.expanduser(root)
        self._flag, self._transform = flag, transform
        self.synsets: list[str] = []
        self.items: list[tuple[str, int]] = []
        for folder in sorted(os.listdir(self._root)):
            path = os.path.join(self._root, folder)
            if not os.path.isdir(path):
                warnings.warn(f"Ignoring {path}, which is not a directory.", stacklevel=2)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                filename = os.path.join(path, name)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in IMAGE_EXTENSIONS:
                    warnings.warn(f"Ignoring {filename} of type {ext}. Only support "
                                  f"{', '.join(IMAGE_EXTENSIONS)}", stacklevel=2)
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx: int) -> Any:
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self) -> int:
        return len(self.items)
