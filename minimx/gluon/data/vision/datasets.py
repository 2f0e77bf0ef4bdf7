"""`mx.gluon.data.vision` datasets of images on disk, as MXNet 1.9.1's: a RecordIO
file of packed images, a folder with a subfolder per class, and MNIST,
Fashion-MNIST, CIFAR-10 and CIFAR-100 from MXNet's files (which MXNet downloads
and minimx reads where they are put)."""
from __future__ import annotations

import gzip
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .... import image, recordio
from .... import ndarray as nd
from ....base import DataFileError, settings
from ....io.mnist import IMAGE_MAGIC, LABEL_MAGIC, idx_items
from ....ndarray import NDArray
from ...utils import check_sha1
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
        return _sample(self._transform, image.imdecode(img, self._flag), header.label)


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
        try:
            folders = sorted(os.listdir(self._root))
        except OSError as exc:
            raise DataFileError(f"ImageFolderDataset: {self._root}: {exc.strerror}") from None
        for folder in folders:
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
        return _sample(self._transform, image.imread(filename, self._flag), label)

    def __len__(self) -> int:
        return len(self.items)


class _LocalDataset(Dataset):
    """A dataset of MXNet's ``gluon/dataset`` files read from `root` (by default
    ``<MXNET_HOME>/datasets/<name>``): images (an NDArray, uint8 HWC) and int32
    labels; `transform(image, label)` maps each sample. MXNet downloads missing
    files; minimx reads them where the user put them, and says which are missing.
    A file whose SHA-1 is not that of MXNet's copy is read with a warning."""

    name: str
    files: dict[bool, list[tuple[str, str]]]   # train or not -> (file name, MXNet's SHA-1)

    def __init__(self, root: str | None, train: bool,
                 transform: Callable[[NDArray, Any], Any] | None) -> None:
        self._root = os.path.expanduser(root or os.path.join(settings().data_dir, "datasets",
                                                             self.name))
        self._train, self._transform = train, transform
        paths = [os.path.join(self._root, f) for f, _ in self.files[train]]
        missing = [p for p in paths if not os.path.isfile(p)]
        if missing:
            raise DataFileError(f"{type(self).__name__}: {', '.join(missing)} not found; "
                                f"minimx does not download datasets: put MXNet's "
                                f"{', '.join(f for f, _ in self.files[train])} in {self._root}")
        for path, (_, sha1) in zip(paths, self.files[train], strict=True):
            if not check_sha1(path, sha1):
                warnings.warn(f"{path} is not MXNet's copy (its SHA-1 is not {sha1}); reading "
                              f"it anyway", stacklevel=3)
        data, label = self._read(paths)
        self._data, self._label = nd.array(data, dtype=data.dtype), label

    def _read(self, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def __getitem__(self, idx: int) -> Any:
        return _sample(self._transform, self._data[idx], self._label[idx])

    def __len__(self) -> int:
        return len(self._label)


class MNIST(_LocalDataset):
    """MNIST's handwritten digits: 28x28x1 uint8 images, int32 labels, from
    MXNet's gzip-compressed idx files."""

    name = "mnist"
    files = {True: [("train-images-idx3-ubyte.gz", "6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d"),
                    ("train-labels-idx1-ubyte.gz", "2a80914081dc54586dbdf242f9805a6b8d2a15fc")],
             False: [("t10k-images-idx3-ubyte.gz", "c3a25af1f52dad7f726cce8cacb138654b760d48"),
                     ("t10k-labels-idx1-ubyte.gz", "763e7fa3757d93b0cdec073cef058b2004252c17")]}

    def __init__(self, root: str | None = None, train: bool = True,
                 transform: Callable[[NDArray, Any], Any] | None = None) -> None:
        super().__init__(root, train, transform)

    def _read(self, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
        images, labels = (_gunzipped(p) for p in paths)
        label = idx_items(labels, LABEL_MAGIC, 1, paths[1]).astype(np.int32)
        data = idx_items(images, IMAGE_MAGIC, 3, paths[0])
        if len(data) != len(label):
            raise DataFileError(f"{type(self).__name__}: {paths[0]} holds {len(data)} images "
                                f"but {paths[1]} {len(label)} labels")
        return data[..., None], label


class FashionMNIST(MNIST):
    """Fashion-MNIST's clothing images, in MNIST's format."""

    name = "fashion-mnist"
    files = {True: [("train-images-idx3-ubyte.gz", "0cf37b0d40ed5169c6b3aba31069a9770ac9043d"),
                    ("train-labels-idx1-ubyte.gz", "236021d52f1e40852b06a4c3008d8de8aef1e40b")],
             False: [("t10k-images-idx3-ubyte.gz", "626ed6a7c06dd17c0eec72fa3be1740f146a2863"),
                     ("t10k-labels-idx1-ubyte.gz", "17f9ab60e7257a1620f4ad76bbbaf857c3920701")]}


class CIFAR10(_LocalDataset):
    """CIFAR-10: 32x32x3 uint8 images, int32 labels, from the binary batches
    (a label byte, then 3072 bytes of planes, per image) of
    ``cifar-10-binary.tar.gz``, extracted into `root`."""

    name = "cifar10"
    files = {True: [("data_batch_1.bin", "aadd24acce27caa71bf4b10992e9e7b2d74c2540"),
                    ("data_batch_2.bin", "c0ba65cce70568cd57b4e03e9ac8d2a5367c1795"),
                    ("data_batch_3.bin", "1dd00a74ab1d17a6e7d73e185b69dbf31242f295"),
                    ("data_batch_4.bin", "aab85764eb3584312d3c7f65fd2fd016e36a258e"),
                    ("data_batch_5.bin", "26e2849e66a845b7f1e4614ae70f4889ae604628")],
             False: [("test_batch.bin", "67eb016db431130d61cd03c7ad570b013799c88c")]}
    label_bytes = 1   # label bytes before each image (CIFAR-100: coarse, then fine)
    label_index = 0   # the one read

    def __init__(self, root: str | None = None, train: bool = True,
                 transform: Callable[[NDArray, Any], Any] | None = None) -> None:
        super().__init__(root, train, transform)

    def _read(self, paths: list[str]) -> tuple[np.ndarray, np.ndarray]:
        record = self.label_bytes + 3 * 32 * 32
        rows = []
        for path in paths:
            with open(path, "rb") as f:
                raw = np.frombuffer(f.read(), np.uint8)
            if raw.size % record:
                raise DataFileError(f"{type(self).__name__}: {path} holds {raw.size} bytes, "
                                    f"not a whole number of {record}-byte records")
            rows.append(raw.reshape(-1, record))
        table = np.concatenate(rows)
        images = table[:, self.label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return np.ascontiguousarray(images), table[:, self.label_index].astype(np.int32)


class CIFAR100(CIFAR10):
    """CIFAR-100: as CIFAR-10, with a coarse and a fine label before each image;
    `fine_label` picks the fine one (100 classes) rather than the coarse (20)."""

    name = "cifar100"
    files = {True: [("train.bin", "e207cd2e05b73b1393c74c7f5e7bea451d63e08e")],
             False: [("test.bin", "8fb6623e830365ff53cf14adec797474f5478006")]}
    label_bytes = 2

    def __init__(self, root: str | None = None, fine_label: bool = False, train: bool = True,
                 transform: Callable[[NDArray, Any], Any] | None = None) -> None:
        self.label_index = int(fine_label)
        super().__init__(root, train, transform)


def _sample(transform: Callable[[NDArray, Any], Any] | None, img: NDArray, label: Any) -> Any:
    """``(img, label)``, or what `transform(img, label)` makes of them."""
    return (img, label) if transform is None else transform(img, label)


def _gunzipped(path: str) -> bytes:
    with gzip.open(path, "rb") as f:
        return f.read()
