"""`mx.gluon.data.vision`: image datasets (`ImageRecordDataset`,
`ImageFolderDataset`) and `transforms`."""
from . import transforms
from .datasets import ImageFolderDataset, ImageRecordDataset

__all__ = ["ImageFolderDataset", "ImageRecordDataset", "transforms"]
