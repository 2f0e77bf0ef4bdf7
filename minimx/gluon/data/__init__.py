"""`mx.gluon.data`: datasets, samplers and the DataLoader of MXNet 1.9.1's Gluon,
for evaluation and calibration loops; `vision` holds image datasets and transforms."""
from . import vision
from .dataloader import DataLoader, default_batchify_fn
from .dataset import ArrayDataset, Dataset, RecordFileDataset, SimpleDataset
from .sampler import BatchSampler, FilterSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["ArrayDataset", "BatchSampler", "DataLoader", "Dataset", "FilterSampler",
           "RandomSampler", "RecordFileDataset", "Sampler", "SequentialSampler",
           "SimpleDataset", "default_batchify_fn", "vision"]
