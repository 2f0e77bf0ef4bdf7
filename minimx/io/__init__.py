"""`mx.io`: MXNet 1.x's data iterators - the `DataIter` / `DataBatch` / `DataDesc`
protocol that `Module`-style loops and calibration read, `NDArrayIter` over
arrays in memory, `CSVIter` over CSV files, `MNISTIter` over MNIST idx files,
`ImageRecordIter` over RecordIO files of images (decoded with the optional Pillow),
`ImageDetRecordIter` over those of images with object labels (these are `MXDataIter`s,
as MXNet's C++ iterators; MXNet's `LibSVMIter` is refused: its batches are sparse),
`ResizeIter` (a fixed number of batches per epoch) and `PrefetchingIter` (batches read
ahead on a thread).

>>> import minimx as mx, numpy as np
>>> it = mx.io.NDArrayIter(np.ones((10, 3)), batch_size=4, last_batch_handle="discard")
>>> [batch.data[0].shape for batch in it]
[(4, 3), (4, 3)]
"""
from .csv_iter import CSVIter
from .image_det_record import ImageDetRecordIter
from .image_record import (
    ImageRecordInt8Iter,
    ImageRecordIter,
    ImageRecordIter_v1,
    ImageRecordUInt8Iter,
    ImageRecordUInt8Iter_v1,
)
from .libsvm import LibSVMIter
from .mnist import MNISTIter
from .ndarray_iter import NDArrayIter
from .prefetch import PrefetchingIter
from .protocol import DataBatch, DataDesc, DataIter, MXDataIter
from .resize import ResizeIter

__all__ = ["CSVIter", "DataBatch", "DataDesc", "DataIter", "ImageDetRecordIter",
           "ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "LibSVMIter", "MNISTIter",
           "MXDataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter"]
