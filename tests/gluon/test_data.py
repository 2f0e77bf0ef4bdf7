"""`mx.gluon.data` and its vision transforms against MXNet 1.9.1's
(tests/fixtures/gluon_data, written by tools/mxnet_gluon_data_fixtures.py).

Deterministic transforms give MXNet's values (exactly; rotations within float32
rounding); DataLoader gives MXNet's batches, dtypes and shapes in every
last-batch mode over two passes, with and without worker threads; datasets
select and map MXNet's samples; RandomSampler draws MXNet's orders from numpy's
seed; the image datasets read MXNet's files, labels and pixels. The random
transforms, whose draws come from minimx's generator, are checked for what they
may give.
"""
from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import DataFileError, DTypeError, MinimxError
from minimx.gluon.data import (
    ArrayDataset,
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    SequentialSampler,
    SimpleDataset,
)
from minimx.gluon.data.vision import ImageFolderDataset, ImageRecordDataset, transforms
from minimx.gluon.errors import InputError, WorkerTimeout
from tests.small_cnn import small_cnn

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HERE = FIXTURES / "gluon_data"
CASES = json.loads((HERE / "cases.json").read_text())
ARRAYS = np.load(HERE / "transforms.npz")
LOADERS = json.loads((HERE / "loaders.json").read_text())
FOLDER = json.loads((HERE / "folder.json").read_text())


def _inputs() -> dict[str, mx.nd.NDArray]:
    inputs = {"image": mx.nd.array(ARRAYS["image"], dtype="uint8"),
              "batch": mx.nd.array(ARRAYS["batch"], dtype="uint8")}
    inputs["tensor"] = transforms.ToTensor()(inputs["image"])
    return inputs


@pytest.mark.parametrize("case,source,code", CASES["transforms"],
                         ids=[c[0] for c in CASES["transforms"]])
def test_transforms_give_mxnets_values(case: str, source: str, code: str) -> None:
    got = eval(code, vars(transforms))(_inputs()[source]).asnumpy()
    want = ARRAYS[case]
    assert got.dtype == want.dtype and got.shape == want.shape
    if case.startswith("rotate"):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


def _dataset(case: str) -> ArrayDataset:
    """The fixture's dataset: (float32 features, a Python float label, an int label),
    or for ``labels_only`` the float labels alone."""
    arrays = LOADERS["dataset"]
    if case == "labels_only":
        return ArrayDataset(arrays["labels"])
    return ArrayDataset(np.array(arrays["features"], np.float32), arrays["labels"],
                        arrays["ints"])


def _batch_json(batch) -> list:
    parts = batch if isinstance(batch, list) else [batch]
    return [{"dtype": str(np.dtype(p.dtype)), "shape": list(p.shape),
             "values": p.asnumpy().tolist()} for p in parts]


@pytest.mark.parametrize("case,kwargs", CASES["loaders"], ids=[c[0] for c in CASES["loaders"]])
def test_dataloader_gives_mxnets_batches(case: str, kwargs: dict) -> None:
    loader = DataLoader(_dataset(case), **kwargs)
    want = LOADERS["loaders"][case]
    assert len(loader) == want["len"]
    assert [[_batch_json(b) for b in loader] for _ in range(2)] == want["passes"]


def _samples(ds: Dataset) -> list:
    out = []
    for i in range(len(ds)):
        sample = ds[i] if isinstance(ds[i], tuple) else (ds[i],)
        out.append([np.asarray(s.asnumpy() if isinstance(s, mx.nd.NDArray) else s).tolist()
                    for s in sample])
    return out


def test_dataset_selections_are_mxnets() -> None:
    ds = _dataset("keep")
    got = {"take3": ds.take(3), "take_all": ds.take(None),
           "shard_3_0": ds.shard(3, 0), "shard_3_2": ds.shard(3, 2),
           "filter_even": ds.filter(lambda s: s[2] % 2 == 0),
           "transform_first": ds.transform_first(lambda x: x * 2),
           "transform": ds.transform(lambda x, y, z: (y, z))}
    assert {k: _samples(v) for k, v in got.items()} == LOADERS["datasets"]
    eager = ds.transform_first(lambda x: x + 1, lazy=False)
    assert isinstance(eager, SimpleDataset) and _samples(eager)[0][0] == [[1, 2, 3], [4, 5, 6]]


@pytest.mark.parametrize("seed", sorted(LOADERS["random_orders"]))
def test_random_sampler_draws_mxnets_orders(seed: str) -> None:
    np.random.seed(int(seed))
    assert [list(RandomSampler(10)) for _ in range(2)] == LOADERS["random_orders"][seed]


def test_shuffled_loader_covers_every_sample_once_a_pass() -> None:
    loader = DataLoader(ArrayDataset(np.arange(23)), batch_size=5, shuffle=True,
                        num_workers=2)
    for _ in range(2):
        seen = np.concatenate([b.asnumpy() for b in loader])
        assert sorted(seen.tolist()) == list(range(23))


def _folder(**kwargs) -> ImageFolderDataset:
    """The fixture folder's dataset; it warns of the files it skips, as MXNet's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = ImageFolderDataset(str(HERE / "folder"), **kwargs)
    assert len(caught) == FOLDER["warnings"]
    assert all("Ignoring" in str(w.message) for w in caught)
    return ds


def test_image_folder_dataset_reads_mxnets_items_and_pixels() -> None:
    ds = _folder()
    assert ds.synsets == FOLDER["synsets"]
    assert [[str(Path(p).relative_to(HERE / "folder")), label] for p, label in ds.items] \
        == FOLDER["items"]
    assert [[ds[i][0].asnumpy().tolist(), ds[i][1]] for i in range(len(ds))] \
        == FOLDER["samples"]
    grey = _folder(flag=0)
    assert grey[0][0].asnumpy().tolist() == FOLDER["grey"]


def test_image_folder_dataset_applies_its_transform() -> None:
    ds = _folder(transform=lambda img, label: (transforms.ToTensor()(img), label + 1))
    image, label = ds[0]
    assert image.shape[0] == 3 and image.dtype == np.float32 and label == 1


def test_image_record_dataset_reads_mxnets_records() -> None:
    ds = ImageRecordDataset(str(FIXTURES / "recordio" / "gray.rec"), flag=0)
    assert [[ds[i][0].asnumpy().tolist(), float(ds[i][1])] for i in range(len(ds))] \
        == FOLDER["gray_rec"]


def test_a_batch_sampler_rolls_a_short_batch_over() -> None:
    sampler = BatchSampler(SequentialSampler(7), 3, "rollover")
    assert len(sampler) == 2 and list(sampler) == [[0, 1, 2], [3, 4, 5]]
    assert len(sampler) == 2 and list(sampler) == [[6, 0, 1], [2, 3, 4]]


def test_compose_leaves_the_callers_list_alone() -> None:
    steps = [transforms.ToTensor()]
    transforms.Compose(steps).hybridize()
    assert len(steps) == 1   # MXNet 1.9.1 appends None to it


@pytest.mark.parametrize("p,applied", [(0.0, False), (1.0, True)])
def test_random_apply_applies_with_its_probability(p: float, applied: bool) -> None:
    x = mx.nd.array(ARRAYS["image"], dtype="uint8")
    out = transforms.RandomApply(transforms.Cast("float32"), p=p)(x)
    assert (out.dtype == np.float32) == applied


def test_random_transforms_give_what_they_may_and_repeat_with_the_seed() -> None:
    x = mx.nd.array(ARRAYS["image"], dtype="float32")   # HWC, as MXNet's image operators take
    flip = transforms.RandomFlipLeftRight()
    for _ in range(8):
        out = flip(x).asnumpy()
        assert np.array_equal(out, x.asnumpy()) or np.array_equal(out, x.asnumpy()[:, ::-1])
    bright = transforms.RandomBrightness(brightness=0.3)(x).asnumpy()
    ratio = bright[x.asnumpy() > 25] / x.asnumpy()[x.asnumpy() > 25]
    assert 0.7 - 1e-5 <= ratio.min() and ratio.max() <= 1.3 + 1e-5 and np.ptp(ratio) < 1e-4
    crop = transforms.RandomResizedCrop((20, 16))(mx.nd.array(ARRAYS["image"], dtype="uint8"))
    assert crop.shape == (16, 20, 3)
    jitter = transforms.Compose([transforms.RandomColorJitter(0.2, 0.2, 0.2, 0.1),
                                 transforms.RandomLighting(0.1)])
    mx.random.seed(3)
    first = jitter(x).asnumpy()
    mx.random.seed(3)
    np.testing.assert_array_equal(jitter(x).asnumpy(), first)


def test_worker_errors_reach_the_caller() -> None:
    def broken(x):
        raise ValueError("bad sample")
    loader = DataLoader(SimpleDataset(list(range(6))).transform(broken), batch_size=2,
                        num_workers=2)
    with pytest.raises(ValueError, match="bad sample"):
        list(loader)


def test_a_worker_past_its_timeout_is_reported() -> None:
    release = threading.Event()

    def stuck(x):
        release.wait(30)
        return x
    loader = DataLoader(SimpleDataset([1, 2]).transform(stuck), batch_size=1,
                        num_workers=1, timeout=0.01)
    try:
        with pytest.raises(WorkerTimeout, match="timed out"):
            list(loader)
    finally:
        release.set()


@pytest.mark.parametrize("make,error,match", [
    (lambda: DataLoader(SimpleDataset([1])), InputError, "batch_size must be specified"),
    (lambda: DataLoader(SimpleDataset([1]), batch_size=1, shuffle=True,
                        sampler=SequentialSampler(1)), InputError, "shuffle must not"),
    (lambda: DataLoader(SimpleDataset([1]), batch_size=1, batch_sampler=[[0]]), InputError,
     "must not be specified if batch_sampler"),
    (lambda: DataLoader(SimpleDataset([1]), batch_size=1, timeout=0), InputError, "timeout"),
    (lambda: BatchSampler(SequentialSampler(3), 2, "drop"), InputError, "last_batch"),
    (lambda: BatchSampler(SequentialSampler(3), 0), InputError, "batch_size"),
    (lambda: ArrayDataset(np.zeros(3), np.zeros(4)), InputError, "same length"),
    (lambda: ArrayDataset(), InputError, "at least 1"),
    (lambda: SimpleDataset([1, 2]).shard(2, 2), InputError, "shard index"),
    (lambda: SimpleDataset([1, 2]).sample([0, 1]), InputError, "Invalid sampler"),
    (lambda: transforms.RandomRotation((10, -10)), InputError, "ordered"),
    (lambda: transforms.RandomRotation((-10, 10), rotate_with_proba=2), InputError,
     "between 0 and 1"),
    (lambda: transforms.Rotate(10)(mx.nd.zeros((4, 4, 3), dtype="uint8")), DTypeError,
     "only supports float32"),
    (lambda: ImageFolderDataset(str(HERE / "no-such-folder")), DataFileError,
     "no-such-folder: No such file"),
    (lambda: list(DataLoader(SimpleDataset([[1, 2], [3]]), batch_size=2)), InputError,
     "do not stack into one array"),
    (lambda: DataLoader(iter([1, 2]), batch_size=1), InputError,
     "must have a length and items by index"),
], ids=["no-batch-size", "shuffle-and-sampler", "batch-sampler-and-size", "timeout",
        "last-batch", "batch-size", "lengths", "no-arrays", "shard", "sampler-type",
        "angle-order", "probability", "rotate-uint8", "no-folder", "ragged", "iterator"])
def test_bad_arguments_are_refused_with_a_clear_error(make, error, match) -> None:
    with pytest.raises(error, match=match) as caught:
        make()
    assert isinstance(caught.value, MinimxError)


def test_a_dataloader_feeds_int8_calibration_as_its_arrays_do() -> None:
    # A Gluon script calibrates with a DataLoader of (image, label) batches.
    sym = small_cnn()
    rng = np.random.default_rng(0)
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(4, 3, 8, 8))[0],
                      strict=True))
    args = {n: mx.nd.array(rng.normal(0, 0.5, s)) for n, s in shapes.items() if n != "data"}
    auxs = {n: mx.nd.array(np.full(s, 0.5 if "var" in n else 0.1))
            for n, s in zip(sym.list_auxiliary_states(),
                            sym.infer_shape(data=(4, 3, 8, 8))[2], strict=True)}
    images = rng.uniform(-1, 1, (12, 3, 8, 8)).astype(np.float32)
    loader = DataLoader(ArrayDataset(images, np.arange(12)), batch_size=4)
    ranges = []
    for calib in (loader, [images[i:i + 4] for i in range(0, 12, 4)]):
        qsym, _, _ = mx.contrib.quantization.quantize_model(
            sym, args, auxs, calib_mode="naive", calib_data=calib, label_names=None,
            quantized_dtype="uint8")
        ranges.append({name: attrs for name, attrs in qsym.attr_dict().items()
                       if "min_calib_range" in attrs})
    assert ranges[0] and ranges[0] == ranges[1]


def test_an_evaluation_loop_as_gluoncv_scripts_write_it() -> None:
    # transforms, a folder dataset, a threaded DataLoader, split_and_load and a
    # metric around an exported model; the same predictions as one forward of
    # the whole preprocessed set.
    gluon = FIXTURES / "gluon"
    net = mx.gluon.nn.SymbolBlock.imports(str(gluon / "cnn-symbol.json"), ["data"],
                                          str(gluon / "cnn-0000.params"))
    net.hybridize(static_alloc=True, static_shape=True)
    preprocess = transforms.Compose([transforms.Resize((8, 8)), transforms.ToTensor(),
                                     transforms.Normalize((0.485, 0.456, 0.406),
                                                          (0.229, 0.224, 0.225))])
    dataset = _folder().transform_first(preprocess)
    loader = DataLoader(dataset, batch_size=4, num_workers=2)
    metric = mx.metric.Accuracy()
    predictions = []
    for batch in loader:
        data = mx.gluon.utils.split_and_load(batch[0], ctx_list=[mx.cpu()], batch_axis=0)
        label = mx.gluon.utils.split_and_load(batch[1], ctx_list=[mx.cpu()], batch_axis=0)
        outputs = [net(x) for x in data]
        metric.update(label, outputs)
        predictions += outputs[0].asnumpy().argmax(1).tolist()
    whole = mx.nd.stack(*[dataset[i][0] for i in range(len(dataset))])
    labels = np.array([dataset[i][1] for i in range(len(dataset))])
    want = net(whole).asnumpy().argmax(1)
    assert predictions == want.tolist()
    assert metric.get() == ("accuracy", float(np.mean(want == labels)))


def test_worker_threads_read_a_record_file_each_record_whole(tmp_path) -> None:
    # The workers share one reader: a seek and its read must not interleave.
    writer = mx.recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"),
                                           "w")
    for i in range(200):
        writer.write_idx(i, (b"%d|" % i) * (1000 + i))
    writer.close()
    dataset = mx.gluon.data.RecordFileDataset(str(tmp_path / "a.rec"))
    loader = DataLoader(dataset, batch_size=1, num_workers=4, batchify_fn=lambda b: b[0])
    for _ in range(3):
        assert [record.split(b"|")[0] for record in loader] == [b"%d" % i for i in range(200)]
