"""Text in buckets for language models, as MXNet 1.9.1's `mx.rnn` io:
`encode_sentences` turns tokens into integers, `BucketSentenceIter` batches
sentences of similar length (padded to their bucket's length) with the next
token as each step's label.

The iterator shuffles with Python's `random` and numpy's global generator,
as MXNet's does, so that seeding both gives MXNet's batches.

>>> import minimx as mx
>>> sents, vocab = mx.rnn.encode_sentences([["a", "b"], ["b", "c", "a"]], start_label=1,
...                                        invalid_label=0)
>>> sents
[[1, 2], [2, 3, 1]]
"""
from __future__ import annotations

import bisect
import logging
import random
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..base import MinimxError
from ..io import DataBatch, DataDesc, DataIter
from ..ndarray import NDArray, array


def encode_sentences(sentences: Iterable[Iterable[str]], vocab: dict[str, int] | None = None,
                     invalid_label: int = -1, invalid_key: str = "\n", start_label: int = 0,
                     unknown_token: str | None = None
                     ) -> tuple[list[list[int]], dict[str, int]]:
    """The sentences as lists of token numbers, and the vocabulary. Without a
    `vocab` one is built (numbers from `start_label`, skipping `invalid_label`,
    which `invalid_key` gets); with one, an unknown word is an error unless
    `unknown_token` names the entry that takes it."""
    new_vocab = vocab is None
    vocab = {invalid_key: invalid_label} if vocab is None else vocab
    idx = start_label
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise MinimxError(f"encode_sentences: unknown token {word!r} (give "
                                      "unknown_token to map unknown words)")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of `batch_size` sentences of one bucket: each sentence padded with
    `invalid_label` to the smallest bucket length that holds it (longer ones are
    dropped), the label the data moved one step left. `buckets` default to the
    lengths at least `batch_size` sentences have. `layout` 'NT' gives
    (batch, length) arrays, 'TN' (length, batch). Each batch carries its
    `bucket_key` (the bucket's length) and its own `provide_data` /
    `provide_label`; the iterator's are those of the longest bucket
    (`default_bucket_key`)."""

    def __init__(self, sentences: Sequence[Sequence[int]], batch_size: int,
                 buckets: Sequence[int] | None = None, invalid_label: int = -1,
                 data_name: str = "data", label_name: str = "softmax_label",
                 dtype: Any = "float32", layout: str = "NT") -> None:
        super().__init__(batch_size)
        if layout not in ("NT", "TN"):
            raise MinimxError(f"BucketSentenceIter: invalid layout {layout!r}: must be NT "
                              "(batch major) or TN (time major)")
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, count in enumerate(counts) if count >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise MinimxError(f"BucketSentenceIter: no bucket: no sentence length has "
                              f"batch_size={batch_size} sentences; give buckets")
        rows: list[list[np.ndarray]] = [[] for _ in buckets]
        discarded = 0
        for sentence in sentences:
            bucket = bisect.bisect_left(buckets, len(sentence))
            if bucket == len(buckets):
                discarded += 1
                continue
            row = np.full((buckets[bucket],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            rows[bucket].append(row)
        logging.warning("discarded %d sentences longer than the largest bucket.", discarded)
        self.buckets = [length for length, bucket in zip(buckets, rows, strict=True) if bucket]
        self.data = [np.asarray(bucket, dtype=dtype) for bucket in rows if bucket]
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self.layout = layout
        self.major_axis = layout.find("N")
        self.default_bucket_key = max(self.buckets)
        self.provide_data = [self._desc(data_name, self.default_bucket_key)]
        self.provide_label = [self._desc(label_name, self.default_bucket_key)]
        self.idx = [(i, j) for i, bucket in enumerate(self.data)
                    for j in range(0, len(bucket) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata: list[NDArray] = []
        self.ndlabel: list[NDArray] = []
        self.reset()

    def _desc(self, name: str, length: int) -> DataDesc:
        shape = (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)
        return DataDesc(name=name, shape=shape, layout=self.layout)

    def reset(self) -> None:
        """Shuffle the batches and the sentences within each bucket, and start over."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for bucket in self.data:
            np.random.shuffle(bucket)
        self.nddata, self.ndlabel = [], []
        for bucket in self.data:
            label = np.empty_like(bucket)
            label[:, :-1] = bucket[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(array(bucket, dtype=self.dtype))
            self.ndlabel.append(array(label, dtype=self.dtype))

    def next(self) -> DataBatch:
        """The next batch; StopIteration at the end of the epoch."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[self._desc(self.data_name, self.buckets[i])],
                         provide_label=[self._desc(self.label_name, self.buckets[i])])
