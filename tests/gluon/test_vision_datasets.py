"""MNIST, Fashion-MNIST, CIFAR-10 and CIFAR-100 read from files in MXNet's formats
(small ones written here: MXNet's own would have to be downloaded), as MXNet
1.9.1's datasets read them: uint8 HWC images, int32 labels, `transform(image,
label)`; missing files named, other copies read with a warning."""
from __future__ import annotations

import gzip
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DataFileError
from minimx.gluon.data.vision import CIFAR10, CIFAR100, MNIST, FashionMNIST

RNG = np.random.default_rng(0)


def write_idx(path: Path, magic: int, values: np.ndarray) -> None:
    header = struct.pack(f">{values.ndim + 1}I", magic, *values.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + values.astype(np.uint8).tobytes())


def mnist_files(root: Path, prefix: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    images = RNG.integers(0, 256, (count, 28, 28), dtype=np.uint8)
    labels = RNG.integers(0, 10, count, dtype=np.uint8)
    write_idx(root / f"{prefix}-images-idx3-ubyte.gz", 0x803, images)
    write_idx(root / f"{prefix}-labels-idx1-ubyte.gz", 0x801, labels)
    return images, labels


def read_quietly(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = make()
    assert caught and all("is not MXNet's copy" in str(w.message) for w in caught)
    return ds


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST])
@pytest.mark.parametrize("train", [True, False])
def test_mnist_reads_its_idx_files(tmp_path: Path, cls, train: bool) -> None:
    images, labels = mnist_files(tmp_path, "train" if train else "t10k", 5)
    ds = read_quietly(lambda: cls(root=str(tmp_path), train=train))
    assert len(ds) == 5
    image, label = ds[3]
    assert image.shape == (28, 28, 1) and image.dtype == np.uint8
    np.testing.assert_array_equal(image.asnumpy()[..., 0], images[3])
    assert label == labels[3] and label.dtype == np.int32


def test_the_transform_maps_image_and_label(tmp_path: Path) -> None:
    mnist_files(tmp_path, "train", 3)
    ds = read_quietly(lambda: MNIST(root=str(tmp_path), transform=lambda x, y: (
        mx.nd.cast(x, dtype="float32") / 255, int(y) + 100)))
    image, label = ds[0]
    assert image.dtype == np.float32 and float(image.max().asscalar()) <= 1 and label >= 100


def test_mxnet_home_is_where_they_are_looked_for(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "datasets" / "mnist"
    root.mkdir(parents=True)
    mnist_files(root, "t10k", 2)
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert len(read_quietly(lambda: MNIST(train=False))) == 2


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match=r"t10k-images-idx3-ubyte.gz.*not found; minimx "
                                            r"does not download"):
        MNIST(root=str(tmp_path), train=False)


def test_labels_and_images_must_agree(tmp_path: Path) -> None:
    mnist_files(tmp_path, "train", 4)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", 0x801, np.zeros(3))
    with pytest.raises(DataFileError, match="holds 4 images but .* 3 labels"):
        read_quietly(lambda: MNIST(root=str(tmp_path)))


def cifar_file(path: Path, count: int, label_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    labels = RNG.integers(0, 100, (count, label_bytes), dtype=np.uint8)
    planes = RNG.integers(0, 256, (count, 3, 32, 32), dtype=np.uint8)
    path.write_bytes(np.concatenate([labels, planes.reshape(count, -1)], axis=1).tobytes())
    return planes.transpose(0, 2, 3, 1), labels


def test_cifar10_reads_its_five_training_batches(tmp_path: Path) -> None:
    parts = [cifar_file(tmp_path / f"data_batch_{i}.bin", 2, 1) for i in range(1, 6)]
    ds = read_quietly(lambda: CIFAR10(root=str(tmp_path)))
    assert len(ds) == 10
    image, label = ds[7]
    np.testing.assert_array_equal(image.asnumpy(), parts[3][0][1])
    assert image.shape == (32, 32, 3) and label == parts[3][1][1, 0] and label.dtype == np.int32


@pytest.mark.parametrize("fine", [False, True])
def test_cifar100_reads_the_coarse_or_fine_label(tmp_path: Path, fine: bool) -> None:
    images, labels = cifar_file(tmp_path / "test.bin", 3, 2)
    ds = read_quietly(lambda: CIFAR100(root=str(tmp_path), fine_label=fine, train=False))
    np.testing.assert_array_equal(ds[2][0].asnumpy(), images[2])
    assert ds[2][1] == labels[2, int(fine)]


def test_a_torn_cifar_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "test_batch.bin").write_bytes(b"\0" * 3000)
    with pytest.raises(DataFileError, match="not a whole number of 3073-byte records"):
        read_quietly(lambda: CIFAR10(root=str(tmp_path), train=False))
