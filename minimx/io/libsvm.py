"""`LibSVMIter`: MXNet 1.9.1's iterator over LibSVM files hands out its data as
CSRNDArrays (stype 'csr'; its labels too when `label_libsvm` is given). minimx has no
sparse storage, so the iterator is refused when it is made, rather than give dense
batches: a LibSVM file's rows are as wide as its features (often millions), and a
sparse model reads the arrays' `indices` and `indptr`, which dense ones lack.
"""
from __future__ import annotations

from typing import Any

from ..base import MinimxError
from .protocol import MXDataIter


class LibSVMIter(MXDataIter):
    """MXNet's LibSVM iterator (`data_libsvm`, `data_shape`, `label_libsvm`,
    `label_shape`, `batch_size`, ...): refused, see above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise MinimxError(
            "LibSVMIter: MXNet 1.9.1's LibSVMIter gives its batches as CSRNDArrays (stype "
            "'csr'), and minimx has no sparse storage; read the file into dense arrays "
            "(e.g. sklearn.datasets.load_svmlight_file(path, zero_based=True)) and batch "
            "them with mx.io.NDArrayIter")
