"""Memory planning: storage ids by liveness, with best-fit reuse and in-place sharing.

Needs: a linear schedule of `Step`s (the entries each reads and writes, and
which (read, write) pairs its operator lets share storage), the bytes of every
entry, and the entries that own their storage (arguments, auxiliary states,
graph outputs and, in training, head and argument gradients). `graph_steps`
makes the forward schedule of a Graph; `gradient.BackwardGraph.steps` appends
the backward one, so that a training bind plans both together and forward
entries that backward reads stay alive.

Guarantees: every other entry that a step writes gets a storage id (a block).
An entry is live from the step that writes it to the last step that reads it;
two entries that are live at the same step never share a block, except an
in-place output that takes over its input's block at that input's last read.
Each block is as large as the largest entry it ever holds. Nothing is
allocated here: the runner allocates one buffer per block.

The algorithm is tinygrad's: walk the schedule; a new entry takes the free
block that fits it best (MXNet's rule: the smallest block at least as large,
within 16x; else the largest smaller one, grown); an entry whose last reader
has run returns its block to the free pool.
"""
from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .indexed import Graph

EXTERNAL = -1    # the entry owns its storage (argument, aux state, output, gradient array)
UNUSED = -2      # no step writes the entry (an unneeded head gradient, say)
MATCH_RANGE = 16  # MXNet's GraphAllocator: reuse blocks within 16x of the request


@dataclass(frozen=True)
class Step:
    """One scheduled operation, by entry ids."""

    name: str
    reads: tuple[int, ...]
    writes: tuple[int, ...]
    inplace: tuple[tuple[int, int], ...] = ()  # (position in reads, position in writes)


@dataclass
class MemoryPlan:
    """Where every entry lives, and what that costs."""

    storage: list[int]          # per entry: block id, EXTERNAL or UNUSED
    block_bytes: list[int]      # per block
    entry_bytes: list[int]      # per entry
    inplace: list[tuple[int, int]] = field(default_factory=list)  # (input, output) shared
    lower_bound: int = 0        # the largest total of planned entries live at one step

    @property
    def naive_bytes(self) -> int:
        """Bytes if every planned entry had a block of its own."""
        return sum(b for b, s in zip(self.entry_bytes, self.storage, strict=True) if s >= 0)

    @property
    def planned_bytes(self) -> int:
        return sum(self.block_bytes)

    @property
    def external_bytes(self) -> int:
        return sum(b for b, s in zip(self.entry_bytes, self.storage, strict=True)
                   if s == EXTERNAL)

    def summary(self) -> str:
        """Three figures on one line, tinygrad-style."""
        return (f"memory reduced from {_mb(self.naive_bytes)} to {_mb(self.planned_bytes)} "
                f"in {len(self.block_bytes)} blocks (lower bound {_mb(self.lower_bound)}, "
                f"{len(self.inplace)} in-place; {_mb(self.external_bytes)} external)")

    def __str__(self) -> str:
        holders: list[list[int]] = [[] for _ in self.block_bytes]
        for eid, sid in enumerate(self.storage):
            if sid >= 0:
                holders[sid].append(eid)
        lines = [self.summary()]
        for sid, (size, eids) in enumerate(zip(self.block_bytes, holders, strict=True)):
            lines.append(f"  block {sid}: {size} bytes <- entries {', '.join(map(str, eids))}")
        return "\n".join(lines)


def _mb(n: int) -> str:
    """Bytes in the largest binary unit that keeps the figure at least 1."""
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def graph_steps(graph: Graph) -> list[Step]:
    """The forward schedule of `graph`: one step per operator node, in order."""
    return [Step(node.name, tuple(graph.input_entry_ids(nid)),
                 tuple(graph.output_entry_ids(nid)), tuple(node.opdef.inplace))
            for nid, node in enumerate(graph.nodes) if not node.is_variable]


class _Pool:
    """Free blocks sorted by size, for best-fit lookups."""

    def __init__(self) -> None:
        self.free: list[tuple[int, int]] = []  # (bytes, block id)

    def take(self, size: int, block_bytes: list[int]) -> int:
        i = bisect.bisect_left(self.free, (size, -1))
        if i < len(self.free) and self.free[i][0] <= size * MATCH_RANGE:
            return self.free.pop(i)[1]
        # Growing the largest smaller block costs less than a new block of `size`.
        if i > 0 and self.free[i - 1][0] * MATCH_RANGE >= size:
            sid = self.free.pop(i - 1)[1]
            block_bytes[sid] = size
            return sid
        block_bytes.append(size)
        return len(block_bytes) - 1

    def give(self, sid: int, block_bytes: list[int]) -> None:
        bisect.insort(self.free, (block_bytes[sid], sid))


def plan_memory(entry_bytes: Sequence[int], steps: Sequence[Step], external: Iterable[int],
                enable_inplace: bool = True, reuse: bool = True) -> MemoryPlan:
    """Storage ids for every entry that `steps` write and that is not `external`.

    ``reuse=False`` turns planning off (a block per entry, no in-place): the
    reference the planned runs are tested against.
    """
    enable_inplace = enable_inplace and reuse
    external = set(external)
    storage = [EXTERNAL if e in external else UNUSED for e in range(len(entry_bytes))]
    last_read = [-1] * len(entry_bytes)
    for t, step in enumerate(steps):
        for e in step.reads:
            last_read[e] = t
    plan = MemoryPlan(storage, [], list(entry_bytes))
    pool = _Pool()
    holders: list[int] = []  # per block: how many live entries sit on it
    live = 0
    for t, step in enumerate(steps):
        donated: set[int] = set()
        for k, e in enumerate(step.writes):
            if storage[e] != UNUSED:
                if storage[e] >= 0:
                    raise ValueError(f"step {t} ({step.name}) writes entry {e} a second time")
                continue
            src = _inplace_source(step, k, t, enable_inplace, storage, last_read,
                                  holders, plan.block_bytes, entry_bytes, donated)
            if src is not None:
                donated.add(src)
                storage[e] = storage[src]
                plan.inplace.append((src, e))
            else:
                storage[e] = pool.take(entry_bytes[e], plan.block_bytes)
                holders += [0] * (len(plan.block_bytes) - len(holders))
            holders[storage[e]] += 1
            live += entry_bytes[e]
        plan.lower_bound = max(plan.lower_bound, live)
        for e in {*step.reads, *step.writes}:
            if storage[e] >= 0 and last_read[e] <= t:
                live -= entry_bytes[e]
                holders[storage[e]] -= 1
                if holders[storage[e]] == 0 and reuse:
                    pool.give(storage[e], plan.block_bytes)
    for e, sid in enumerate(storage):
        if sid == UNUSED and last_read[e] >= 0 and e not in external:
            raise ValueError(f"entry {e} is read by step {last_read[e]} "
                             f"({steps[last_read[e]].name}) but no step writes it")
    return plan


def _inplace_source(step: Step, k: int, t: int, enable: bool, storage: list[int],
                    last_read: list[int], holders: list[int], block_bytes: list[int],
                    entry_bytes: Sequence[int], donated: set[int]) -> int | None:
    """The input whose block output `k` of `step` may take over, if any."""
    if not enable:
        return None
    for i, j in step.inplace:
        if j != k:
            continue
        src = step.reads[i]
        sid = storage[src]
        # Only a planned block that nothing reads after this step, and that no
        # other live entry sits on, can be overwritten by the output.
        if (sid >= 0 and src not in donated and last_read[src] == t and holders[sid] == 1
                and src not in step.writes and block_bytes[sid] >= entry_bytes[step.writes[k]]):
            return src
    return None
