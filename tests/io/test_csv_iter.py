"""CSVIter: the batches, pads and epochs MXNet 1.9.1's CSVIter gives for the same
files (the expected row sequences were read off MXNet 1.9.1 in its venv)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minimx as mx


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str]:
    data, label = tmp_path / "d.csv", tmp_path / "l.csv"
    np.savetxt(data, np.arange(30).reshape(10, 3), delimiter=",")
    np.savetxt(label, np.arange(10), delimiter=",")
    return str(data), str(label)


def epochs(it: mx.io.CSVIter, count: int) -> list[list[tuple[list[int], int]]]:
    """Per epoch, each batch's rows (by the first data column) and pad."""
    seen = []
    for _ in range(count):
        seen.append([([int(v) // 3 for v in b.data[0].asnumpy()[:, 0]], b.pad) for b in it])
        it.reset()
    return seen


@pytest.mark.parametrize("batch_size, round_batch, want", [
    (4, True, [[([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)],
               [([2, 3, 4, 5], 0), ([6, 7, 8, 9], 0)],
               [([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)]]),
    (8, True, [[([0, 1, 2, 3, 4, 5, 6, 7], 0), ([8, 9, 0, 1, 2, 3, 4, 5], 6)],
               [([6, 7, 8, 9, 0, 1, 2, 3], 4)],
               [([4, 5, 6, 7, 8, 9, 0, 1], 2)]]),
    # Without round_batch MXNet leaves stale rows in the padding; minimx the first rows.
    (4, False, [[([0, 1, 2, 3], 0), ([4, 5, 6, 7], 0), ([8, 9, 0, 1], 2)]] * 3),
])
def test_batches_and_epochs_are_mxnets(files, batch_size, round_batch, want):
    data, label = files
    it = mx.io.CSVIter(data_csv=data, data_shape=(3,), label_csv=label, batch_size=batch_size,
                       round_batch=round_batch)
    assert epochs(it, 3) == want


def test_descriptions_labels_and_shapes(files):
    data, label = files
    it = mx.io.CSVIter(data_csv=data, data_shape=(1, 3), label_csv=label, batch_size=5)
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (5, 1, 3))]
    assert [(d.name, d.shape) for d in it.provide_label] == [("softmax_label", (5,))]
    batch = next(iter(it))
    np.testing.assert_array_equal(batch.label[0].asnumpy(), [0, 1, 2, 3, 4])
    assert batch.data[0].dtype == np.float32
    unlabelled = mx.io.CSVIter(data_csv=data, data_shape=(3,), batch_size=4)
    np.testing.assert_array_equal(next(iter(unlabelled)).label[0].asnumpy(), [0, 0, 0, 0])


def test_files_that_do_not_fit_are_named(files, tmp_path):
    data, label = files
    with pytest.raises(mx.ShapeError, match=r"has 3 values a row, but the shape \(2, 2\) "
                                            "holds 4"):
        mx.io.CSVIter(data_csv=data, data_shape=(2, 2), batch_size=2)
    with pytest.raises(mx.OperatorError, match="CSVIter: batch_size=0 must be a positive"):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), batch_size=0)
    short = tmp_path / "short.csv"
    np.savetxt(short, np.arange(4), delimiter=",")
    with pytest.raises(mx.ShapeError, match=r"10 rows in .*d.csv but 4 in .*short.csv"):
        mx.io.CSVIter(data_csv=data, data_shape=(3,), label_csv=str(short), batch_size=2)
