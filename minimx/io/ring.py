"""The ring of examples that MXNet's C++ iterators (CSVIter, ImageRecordIter)
batch with `round_batch`: a last batch short of examples takes the ring's next
ones from the start, and those are not read again in the next epoch."""
from __future__ import annotations

from ..base import ShapeError


def next_epoch_start(cursor: int, count: int, round_batch: bool) -> int:
    """Where the epoch after one that stopped at `cursor` (past the last of `count`
    examples) begins: after a wrapped batch, at the first example it did not take
    (so a wrap onto the last example leaves an empty epoch, as MXNet's batch
    loader does); else at the first."""
    return cursor - count if round_batch and cursor > count else 0


def check_one_wrap(real: int, count: int, batch_size: int, what: str) -> None:
    """Refuse, as MXNet does, a batch that would take the ring twice over: after its
    `real` examples before the end, more than all `count` from the start."""
    if batch_size - real > count:
        raise ShapeError(f"{what}: a batch of {batch_size} with round_batch needs "
                         f"{batch_size - real} examples from the start, but there are "
                         f"{count}: number of input must be bigger than batch size")
