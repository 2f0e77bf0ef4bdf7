"""The data-iterator protocol: DataDesc, DataBatch and DataIter as MXNet 1.9 defines them."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import minimx as mx
from minimx.base import DTypeError, OperatorError, ShapeError
from minimx.io import DataBatch, DataDesc, DataIter


def test_data_desc_is_a_name_shape_tuple_with_dtype_and_layout():
    desc = DataDesc("data", [8, 3, 32, 32], "float16", "NHWC")
    name, shape = desc
    assert (name, shape) == ("data", (8, 3, 32, 32))
    assert desc == ("data", (8, 3, 32, 32))          # as MXNet: the tuple compares
    assert (desc.dtype, desc.layout) == (np.dtype("float16"), "NHWC")
    assert repr(desc) == "DataDesc[data,(8, 3, 32, 32),float16,NHWC]"
    default = DataDesc("label", (8,))
    assert (default.dtype, default.layout) == (np.dtype("float32"), "NCHW")
    copy = pickle.loads(pickle.dumps(desc))
    assert (copy, copy.dtype, copy.layout) == (desc, desc.dtype, desc.layout)


@pytest.mark.parametrize("layout, axis", [(None, 0), ("NCHW", 0), ("TNC", 1), ("CHW", -1)])
def test_get_batch_axis(layout, axis):
    assert DataDesc.get_batch_axis(layout) == axis


def test_get_list_pairs_shapes_with_dtypes():
    descs = DataDesc.get_list([("data", (2, 3)), ("mask", (2,))],
                              [("mask", np.int32), ("data", "float64")])
    assert [(d.name, d.shape, d.dtype.name) for d in descs] == \
        [("data", (2, 3), "float64"), ("mask", (2,), "int32")]
    assert [d.dtype.name for d in DataDesc.get_list([("data", (2, 3))], None)] == ["float32"]


def test_data_desc_refuses_a_bad_shape_or_dtype():
    with pytest.raises(ShapeError, match="DataDesc 'data': shape .* negative dimension"):
        DataDesc("data", (2, -1))
    with pytest.raises(DTypeError, match="not a dtype"):
        DataDesc("data", (2,), "floaty")


def test_data_batch_holds_what_it_is_given():
    data, label = [mx.nd.zeros((4, 3))], [mx.nd.zeros((4,))]
    descs = [DataDesc("data", (4, 3))]
    batch = DataBatch(data, label, pad=1, index=np.arange(4), bucket_key=7,
                      provide_data=descs, provide_label=[])
    assert (batch.data, batch.label, batch.pad, batch.bucket_key) == (data, label, 1, 7)
    assert batch.index.tolist() == [0, 1, 2, 3]
    assert (batch.provide_data, batch.provide_label) == (descs, [])
    assert str(batch) == "DataBatch: data shapes: [(4, 3)] label shapes: [(4,)]"
    assert str(DataBatch(data)) == "DataBatch: data shapes: [(4, 3)] label shapes: None"


@pytest.mark.parametrize("kwargs, what", [({"data": mx.nd.zeros((2,))}, "data"),
                                          ({"data": [], "label": mx.nd.zeros((2,))}, "label")])
def test_data_batch_needs_lists(kwargs, what):
    with pytest.raises(OperatorError, match=f"DataBatch: {what} must be a list of NDArrays, "
                       "got NDArray"):
        DataBatch(**kwargs)


class Countdown(DataIter):
    """A user iterator in MXNet's style: iter_next and the getters, provide_* set."""

    def __init__(self, batches: int) -> None:
        super().__init__(batch_size=2)
        self.batches, self.left = batches, batches
        self.provide_data = [DataDesc("data", (2, 1))]
        self.provide_label = []

    def reset(self) -> None:
        self.left = self.batches

    def iter_next(self) -> bool:
        self.left -= 1
        return self.left >= 0

    def getdata(self) -> list:
        return [mx.nd.full((2, 1), self.left)]


def test_a_subclass_with_iter_next_and_getters_iterates():
    it = Countdown(3)
    got = [(b.data[0].asnumpy()[0, 0], b.label, b.pad, b.index) for b in it]
    assert got == [(2.0, None, None, None), (1.0, None, None, None), (0.0, None, None, None)]
    with pytest.raises(StopIteration):
        next(it)
    it.reset()
    assert len(list(it)) == 3
    assert (it.batch_size, it.provide_data[0].shape, it.provide_label) == (2, (2, 1), [])


def test_the_base_iterator_is_empty():
    it = DataIter()
    assert it.batch_size == 0 and list(it) == []
    assert (it.getdata(), it.getlabel(), it.getindex(), it.getpad()) == (None,) * 4


def test_mxnets_cpp_iterators_are_mx_data_iters(tmp_path):
    """MXNet 1.9.1 wraps every C++ iterator in an MXDataIter: after next() the get*
    accessors give the current batch (data and label as one NDArray each), iter_next()
    reads one, and debug_skip_load() makes next() repeat the current batch."""
    path = tmp_path / "d.csv"
    path.write_text("1,2\n3,4\n5,6\n7,8\n9,10\n")
    it = mx.io.CSVIter(data_csv=str(path), data_shape=(2,), batch_size=2)
    assert isinstance(it, mx.io.MXDataIter) and isinstance(it, DataIter)
    with pytest.raises(OperatorError, match="CSVIter: no current batch"):
        it.getdata()
    batch = it.next()
    assert it.getdata() is batch.data[0] and it.getlabel() is batch.label[0]
    assert it.getdata().asnumpy().tolist() == [[1, 2], [3, 4]]
    assert it.getpad() == 0 and it.getindex().tolist() == [0, 1]
    assert it.iter_next() and it.getdata().asnumpy().tolist() == [[5, 6], [7, 8]]
    it.debug_skip_load()
    assert [it.next().data[0].asnumpy()[:, 0].tolist() for _ in range(3)] == [[5, 7]] * 3
    it.reset()   # a new epoch reads its first batch, then repeats it
    assert [it.next().data[0].asnumpy()[:, 0].tolist() for _ in range(2)] == [[1, 3]] * 2


def test_libsvm_iter_is_refused_for_its_sparse_batches(tmp_path):
    path = tmp_path / "data.t"
    path.write_text("1.0 0:0.5 2:1.2\n-2.0\n")
    with pytest.raises(mx.MinimxError, match="CSRNDArrays .* no sparse storage"):
        mx.io.LibSVMIter(data_libsvm=str(path), data_shape=(3,), batch_size=2)
