"""MNISTIter and ImageRecordIter against MXNet 1.9.1's batches on the same small files
(tests/fixtures/recordio, tools/mxnet_recordio_fixtures.py): every case of cases.json,
every epoch, batch and pad."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "recordio"
CASES = json.loads((FIXTURES / "cases.json").read_text())
BATCHES = np.load(FIXTURES / "batches.npz")
IMAGES, LABELS = FIXTURES / "mnist-images-idx3-ubyte", FIXTURES / "mnist-labels-idx1-ubyte"


def check_epochs(it: mx.io.DataIter, case: str, pads: list[list[int]], atol: float = 0,
                 padded_ones: bool = False) -> None:
    """Each epoch's batches equal MXNet's (the rows that are examples; MXNet leaves
    stale values in padding)."""
    for epoch, want_pads in enumerate(pads):
        batches = list(it)
        it.reset()
        got_pads = [b.pad for b in batches]
        # MXNet 1.9.1 reports pad 0 for a padded last batch without round_batch
        assert got_pads == want_pads if not padded_ones else got_pads[:-1] == want_pads[:-1]
        for number, batch in enumerate(batches):
            key = f"{case}:{epoch}:{number}"
            data, label = BATCHES[f"{key}:data"], BATCHES[f"{key}:label"]
            real = len(data) - batch.pad
            got = batch.data[0].asnumpy()
            assert got.dtype == data.dtype and got.shape == data.shape
            np.testing.assert_allclose(got[:real], data[:real], rtol=0, atol=atol)
            np.testing.assert_array_equal(batch.label[0].asnumpy()[:real], label[:real])


@pytest.mark.parametrize("case", sorted(CASES["mnist"]))
def test_mnist_batches_are_mxnets(case: str):
    spec = CASES["mnist"][case]
    # data_shape and prefetch_buffer: keywords MXNet's own scripts pass, which it ignores
    it = mx.io.MNISTIter(image=str(IMAGES), label=str(LABELS), silent=True, data_shape=(784,),
                         prefetch_buffer=4, **spec["kwargs"])
    flat = spec["kwargs"].get("flat", False)
    assert it.provide_data[0].shape == ((it.batch_size, 20) if flat else (it.batch_size, 1, 5, 4))
    assert it.provide_label[0].shape == (it.batch_size,)
    check_epochs(it, f"mnist_{case}", spec["pads"])


def test_mnist_shuffle_is_mxnets_permutation():
    assert mx.io.mnist.mt19937_shuffle(10, 0).tolist() == [0, 2, 3, 5, 9, 1, 6, 8, 4, 7]


def _idx(tmp_path: Path, name: str, data: bytes) -> str:
    (tmp_path / name).write_bytes(data)
    return str(tmp_path / name)


def test_mnist_bad_files_are_refused(tmp_path: Path):
    with pytest.raises(mx.DataFileError, match="nowhere"):
        mx.io.MNISTIter(image=str(tmp_path / "nowhere"), label=str(LABELS))
    with pytest.raises(mx.DataFileError, match="gunzip it first"):
        mx.io.MNISTIter(image=_idx(tmp_path, "i.gz", b"\x1f\x8b\x08rest"), label=str(LABELS))
    with pytest.raises(mx.DataFileError, match=r"magic 0x803 expected, found 0x801"):
        mx.io.MNISTIter(image=str(LABELS), label=str(LABELS))
    with pytest.raises(mx.DataFileError, match=r"announces 3 items of shape \(2, 2\)"):
        mx.io.MNISTIter(image=_idx(tmp_path, "i", struct.pack(">iiii", 0x803, 3, 2, 2) + b"x"),
                        label=str(LABELS))
    with pytest.raises(mx.ShapeError, match="37 images .* 2 labels"):
        mx.io.MNISTIter(image=str(IMAGES),
                        label=_idx(tmp_path, "l", struct.pack(">ii", 0x801, 2) + b"\x01\x02"))
    with pytest.raises(mx.ShapeError, match="part_index"):
        mx.io.MNISTIter(image=str(IMAGES), label=str(LABELS), num_parts=2, part_index=2)


@pytest.mark.parametrize("case", sorted(CASES["image"]))
def test_image_record_batches_are_mxnets(case: str, tmp_path: Path):
    """ImageRecordIter, and MXNet's other names for it (uint8 / int8, legacy _v1)."""
    spec = CASES["image"][case]
    kwargs = dict(spec["kwargs"])
    for key in ("path_imgidx", "mean_img"):
        if key in kwargs:
            kwargs[key] = str(FIXTURES / kwargs[key])
    iterator = spec.get("iter", "ImageRecordIter")
    it = getattr(mx.io, iterator)(path_imgrec=str(FIXTURES / f"{spec['rec']}.rec"),
                                  preprocess_threads=2, **kwargs)
    assert isinstance(it, mx.io.MXDataIter)
    assert list(it.provide_label[0].shape) == spec["provide_label"]
    assert it.provide_data[0].shape == (it.batch_size, *kwargs["data_shape"])
    # MXNet's legacy iterators report the pad of a last batch without round_batch
    padded_ones = not kwargs.get("round_batch", True) and not iterator.endswith("_v1")
    check_epochs(it, case, spec["pads"], padded_ones=padded_ones)


def _numbered_records(tmp_path: Path, count: int) -> str:
    """A .rec of `count` 4x4 images whose labels are their positions."""
    path = str(tmp_path / f"n{count}.rec")
    writer = mx.recordio.MXRecordIO(path, "w")
    for i in range(count):
        image = np.full((4, 4, 3), 10 * i, np.uint8)
        writer.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), image,
                                          img_fmt=".png"))
    writer.close()
    return path


@pytest.mark.parametrize("count, batch_size, epochs", [
    # MXNet 1.9.1's (labels, pad) per batch over four epochs with round_batch
    (2, 3, [[([0, 1, 0], 1)], [([1, 0, 1], 2)], [], [([0, 1, 0], 1)]]),
    (3, 4, [[([0, 1, 2, 0], 1)], [([1, 2, 0, 1], 2)], [([2, 0, 1, 2], 3)], []]),
    (4, 8, [[([0, 1, 2, 3, 0, 1, 2, 3], 4)], [], [([0, 1, 2, 3, 0, 1, 2, 3], 4)], []]),
])
def test_the_ring_of_records_is_mxnets(count, batch_size, epochs, tmp_path: Path):
    it = mx.io.ImageRecordIter(path_imgrec=_numbered_records(tmp_path, count),
                               data_shape=(3, 4, 4), batch_size=batch_size)
    for want in epochs:
        assert [(b.label[0].asnumpy().astype(int).tolist(), b.pad) for b in it] == want
        it.reset()


@pytest.mark.parametrize("count, batch_size, good_batches", [(1, 3, None), (3, 5, 1), (5, 8, 1)])
def test_a_batch_that_would_take_the_ring_twice_is_refused(count, batch_size, good_batches,
                                                            tmp_path: Path):
    # MXNet 1.9.1: "number of input images must be bigger than the batch size", at
    # once or (read ahead) for the first batch of the next epoch.
    path = _numbered_records(tmp_path, count)
    if good_batches is None:
        with pytest.raises(mx.ShapeError, match="bigger than batch size"):
            mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=batch_size)
        return
    it = mx.io.ImageRecordIter(path_imgrec=path, data_shape=(3, 4, 4), batch_size=batch_size)
    assert len(list(it)) == good_batches
    it.reset()
    with pytest.raises(mx.ShapeError, match=f"needs .* from the start, but there are {count}"):
        next(it)


def test_pads_without_round_batch_count_the_padding():
    it = mx.io.ImageRecordIter(path_imgrec=str(FIXTURES / "png.rec"), data_shape=(3, 8, 8),
                               batch_size=4, round_batch=False)
    assert [b.pad for b in it] == [0, 1]


def test_mean_image_is_made_and_saved_when_missing(tmp_path: Path):
    """MXNet computes a missing mean_img over the records and saves it; the batches then
    subtract it."""
    rec = str(FIXTURES / "png.rec")
    plain = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=7)
    images = next(plain).data[0].asnumpy()
    path = tmp_path / "mean.nd"
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=7,
                               mean_img=str(path))
    mean = mx.nd.load(str(path))["mean_img"].asnumpy()
    np.testing.assert_allclose(mean, images.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(next(it).data[0].asnumpy(), images - mean, atol=1e-4)


def test_random_augmentations_are_seeded_crops_and_mirrors():
    """Record 0 is 8x8: a random 8x8 crop is the whole image, mirrored or not."""
    rec = str(FIXTURES / "png.rec")
    plain = BATCHES["png_center:0:0:data"][0]
    runs = [[b.data[0].asnumpy() for b in mx.io.ImageRecordIter(
        path_imgrec=rec, data_shape=(3, 8, 8), batch_size=7, rand_crop=True, rand_mirror=True,
        seed=3)] for _ in range(2)]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    first = runs[0][0][0]
    assert (first == plain).all() or (first == plain[..., ::-1]).all()


def test_bad_settings_are_refused(tmp_path: Path):
    rec = str(FIXTURES / "png.rec")
    with pytest.raises(mx.OperatorError, match="max_rotate_angle=10 not supported"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                              max_rotate_angle=10)
    # At the values that do nothing, as MXNet's own example scripts pass them, they run.
    plain = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2)
    noop = mx.io.ImageRecordIter(
        path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2, num_parts=1, part_index=0,
        max_rotate_angle=0, max_shear_ratio=0.0, max_aspect_ratio=0, random_h=0,
        random_s=0, random_l=0, brightness=0, pad=0, fill_value=127, min_random_scale=1.0,
        max_random_scale=1.0)
    np.testing.assert_array_equal(next(noop).data[0].asnumpy(), next(plain).data[0].asnumpy())
    with pytest.raises(mx.ShapeError, match=r"data_shape must be .* got \(2, 8, 8\)"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(2, 8, 8), batch_size=2)
    with pytest.raises(mx.ShapeError, match="3 label\\(s\\), but label_width is 1"):
        next(mx.io.ImageRecordIter(path_imgrec=str(FIXTURES / "multi.rec"),
                                   data_shape=(3, 8, 8), batch_size=2))
    with pytest.raises(mx.ShapeError, match="the image has 1 channels"):
        next(mx.io.ImageRecordIter(path_imgrec=str(FIXTURES / "gray.rec"),
                                   data_shape=(4, 6, 6), batch_size=2))
    with pytest.raises(mx.DataFileError, match="missing.rec"):
        mx.io.ImageRecordIter(path_imgrec=str(tmp_path / "missing.rec"), data_shape=(3, 8, 8),
                              batch_size=2)
    bad = tmp_path / "bad.rec"
    shutil.copy(rec, bad)
    with open(bad, "r+b") as f:
        f.seek(0)
        f.write(b"\0\0\0\0")
    with pytest.raises(mx.DataFileError, match="no RecordIO magic number at byte 0"):
        mx.io.ImageRecordIter(path_imgrec=str(bad), data_shape=(3, 8, 8), batch_size=2)


def test_the_dtype_of_the_fixed_dtype_iterators():
    """MXNet 1.9.1's ImageRecordUInt8Iter / Int8Iter ignore `dtype`; its legacy iterators
    fail at the first batch for a dtype that is not theirs (the uint8 one for any)."""
    rec = str(FIXTURES / "png.rec")
    kwargs = dict(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2)
    assert next(mx.io.ImageRecordUInt8Iter(dtype="float32", **kwargs)).data[0].dtype == np.uint8
    assert next(mx.io.ImageRecordInt8Iter(dtype="uint8", **kwargs)).data[0].dtype == np.int8
    assert next(mx.io.ImageRecordIter_v1(dtype="float32", **kwargs)).data[0].dtype == np.float32
    with pytest.raises(mx.DTypeError, match="ImageRecordIter_v1: dtype='uint8'"):
        mx.io.ImageRecordIter_v1(dtype="uint8", **kwargs)
    with pytest.raises(mx.DTypeError, match="ImageRecordUInt8Iter_v1: .* takes no dtype"):
        mx.io.ImageRecordUInt8Iter_v1(dtype="uint8", **kwargs)


def test_a_uint8_iterator_reads_no_mean_image(tmp_path: Path):
    """MXNet's uint8 parser neither reads nor makes `mean_img`."""
    path = tmp_path / "mean.nd"
    it = mx.io.ImageRecordUInt8Iter(path_imgrec=str(FIXTURES / "png.rec"), data_shape=(3, 8, 8),
                                    batch_size=4, mean_img=str(path))
    np.testing.assert_array_equal(next(it).data[0].asnumpy(), BATCHES["png_uint8:0:0:data"])
    assert not path.exists()
