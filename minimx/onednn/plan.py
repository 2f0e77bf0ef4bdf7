"""Plan: a list of primitives over a set of memory slots, run by one C call.

Build a plan by declaring inputs (plain buffers given on each run), constants
(memories such as reordered weights), and steps (a Primitive with a slot per
argument); mark outputs; run. Each step checks that every slot it binds has
exactly the layout the primitive chose, which is what makes a run safe: the
C side never sees a buffer of the wrong size. One scratchpad serves all steps.

A plan may run its first steps once per part of the batch (`batch_loop`), so
that a large batch's early, activation-heavy layers work on data that stays
in the caches: those steps read their inputs' parts (`batch_part`) and write
parts of whole-batch temporaries, which the later steps read whole.

Slots between steps (temporaries) get their buffers when the plan compiles.
The plan does not decide which of them may share one: `schedule` describes
the steps by slot, for the caller to plan with minimx's one memory planner
(`graph.plan_memory`, a layer above this binding), and `compile` takes that
plan. Without one, every temporary has a buffer of its own.

    plan = Plan()
    x = plan.input((1, 3, 8, 8))
    op = conv((1, 3, 8, 8), (4, 3, 3, 3), pad=1, post_ops=[PostOp.eltwise("relu")])
    w = plan.constant(constant(op, "weights", weights))   # reordered once
    y = plan.add(op, src=plan.reorder(x, op.desc("src")), weights=w)
    plan.output(y)
    (out,) = plan.run([data])
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from ..base import BackendError
from ._loader import native
from .nhwc import nhwc_input, nhwc_input_supports
from .primitives import Primitive, SrcLike, reorder
from .runtime import FLOAT32, Memory, MemoryDesc, as_dtype, check, check_array, engine

# Primitives that oneDNN documents as working with dst == src.
IN_PLACE_KINDS = frozenset({"eltwise", "batch_norm", "binary"})


class Slot:
    """One memory of a plan: an input, an output, a constant, a temporary, a
    view of a temporary's bytes, or a part of the batch (`Plan.batch_loop`)."""

    __slots__ = ("plan", "name", "desc", "kind", "memory", "written", "base", "offset")

    def __init__(self, plan: Plan, name: str, desc: MemoryDesc, kind: str,
                 memory: Memory | None = None, base: Slot | None = None,
                 offset: int = 0) -> None:
        self.plan = plan
        self.name = name
        self.desc = desc
        self.kind = kind
        self.memory = memory
        self.written = kind in ("input", "constant") or base is not None
        self.base = base  # a view's: the temporary whose bytes it reads
        self.offset = offset  # a view's: where in base's bytes it starts

    @property
    def whole(self) -> bool:
        """A view of all of its temporary's bytes (a reshape or a retype, not a part)."""
        return (self.base is not None and self.offset == 0
                and self.desc.nbytes == self.base.desc.nbytes)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.desc.shape

    def bound_memory(self) -> Memory:
        """The slot's memory; compiling the plan binds one to every slot."""
        if self.memory is None:
            raise BackendError(f"{self.name}: no memory bound (the plan is not compiled)")
        return self.memory

    def __repr__(self) -> str:
        return f"<{self.kind} {self.name} {self.desc.brief}>"


class Plan:
    """A compiled sequence of oneDNN primitives run with one call per ``run``.

    Not re-entrant: runs of one plan are serialized by a lock; different plans
    run concurrently (each has its own stream and scratchpad).
    """

    def __init__(self, name: str = "plan", own_kernels: bool = True) -> None:
        self.name = name
        # Whether `reorder` may run a kernel of minimx's own where one is faster
        # than oneDNN's (`nhwc_input`).
        self.own_kernels = own_kernels
        self.slots: list[Slot] = []
        self.steps: list[tuple[Primitive, list[Slot]]] = []
        # What each step is part of (a graph node's name, for profiles): the
        # `owner` when the step was added.
        self.owner = ""
        self.step_owners: list[str] = []
        self.inputs: list[Slot] = []
        self.outputs: list[Slot] = []
        # The batch loop: the steps it repeats, how often, the slots it moves
        # along the batch, and the temporaries only its steps may read.
        self.loop_end = 0
        self.loop_count = 1
        self.loop_parts: list[Slot] = []
        self._loop_temps: set[int] = set()
        self._cplan = None
        self._lock = threading.Lock()

    # ---- building ----

    def _slot(self, prefix: str, desc: MemoryDesc, kind: str, memory: Memory | None = None,
              name: str | None = None, base: Slot | None = None, offset: int = 0) -> Slot:
        if self._cplan is not None:
            raise BackendError(f"plan {self.name!r} is already compiled")
        slot = Slot(self, name or f"{prefix}{len(self.slots)}", desc, kind, memory, base, offset)
        self.slots.append(slot)
        return slot

    def _own(self, slot: Slot, what: str) -> Slot:
        if not isinstance(slot, Slot) or slot.plan is not self:
            raise BackendError(f"{what}: {slot!r} is not a slot of plan {self.name!r}")
        return slot

    def input(self, shape: Sequence[int], name: str | None = None,
              dtype: object = FLOAT32) -> Slot:
        """A plain input (float32 unless ``dtype`` says otherwise); its array is
        given to each ``run``."""
        desc = MemoryDesc.plain(shape, as_dtype(dtype, "plan.input"))
        slot = self._slot("in", desc, "input", name=name)
        self.inputs.append(slot)
        return slot

    def constant(self, value: Memory | np.ndarray, name: str | None = None) -> Slot:
        """A memory that stays bound across runs (a numpy array is used without
        copy): weights, and the f32 scales of INT8 steps."""
        memory = value if isinstance(value, Memory) else Memory.from_numpy(value)
        return self._slot("c", memory.desc, "constant", memory, name)

    def add(self, op: Primitive, *, dst: Slot | None = None, **args: Slot) -> Slot:
        """Append ``op`` as a step reading the given slots; returns its dst slot.

        ``dst`` may name an existing temporary or constant slot to write into,
        and must when ``op`` has a sum post-op (the slot holds the addend).
        """
        if not isinstance(op, Primitive):
            raise BackendError(f"plan.add: expected a Primitive, got {type(op).__name__}")
        expected = [n for n in op.args if n != "dst"]
        if sorted(args) != sorted(expected):
            raise BackendError(f"plan.add({op.kind}): arguments {sorted(args)} given, "
                               f"{expected} expected")
        for name in expected:
            slot = self._own(args[name], f"plan.add({op.kind}) {name}")
            if name in op.extra_dsts:
                self._check_extra_dst(op, name, slot)
                continue
            if slot.desc != op.desc(name):
                raise BackendError(
                    f"plan.add({op.kind}): {name} slot {slot.name} has layout "
                    f"{slot.desc.brief} but the primitive expects "
                    f"{op.desc(name).brief}; insert plan.reorder")
            if not slot.written:
                raise BackendError(f"plan.add({op.kind}): {name} slot {slot.name} is read "
                                   "before any step writes it")
        if dst is None:
            if op.has_sum:
                raise BackendError(f"plan.add({op.kind}): a sum post-op needs dst= the slot "
                                   "holding the addend")
            dst = self._slot("t", op.desc("dst"), "temp")
        else:
            self._own(dst, f"plan.add({op.kind}) dst")
            # A sum may accumulate into a view of a whole temporary (its bytes
            # through another type or shape): the step reads and writes the
            # temporary, as a sum into the temporary itself does.
            summed_view = op.has_sum and dst.kind == "view" and dst.whole
            if dst.kind == "input" or (dst.kind == "view" and not summed_view):
                what = "an input" if dst.kind == "input" else "a view"
                raise BackendError(f"plan.add({op.kind}): dst {dst.name} is {what}, "
                                   "which steps only read; copy it with "
                                   "plan.reorder(slot, copy=True) first")
            if dst.desc != op.desc("dst"):
                raise BackendError(f"plan.add({op.kind}): dst slot {dst.name} has layout "
                                   f"{dst.desc.brief}, the primitive writes "
                                   f"{op.desc('dst').brief}")
            if op.has_sum and not dst.written:
                raise BackendError(f"plan.add({op.kind}): the sum addend {dst.name} was "
                                   "never written")
            if op.kind not in IN_PLACE_KINDS and any(
                    (args[n].base or args[n]) is (dst.base or dst) for n in expected):
                raise BackendError(f"plan.add({op.kind}): dst {dst.name} is also read by "
                                   "the step, which this primitive cannot do in place")
        if self._cplan is not None:
            raise BackendError(f"plan {self.name!r} is already compiled")
        bound = [dst if n == "dst" else args[n] for n in op.args]
        self.steps.append((op, bound))
        self.step_owners.append(self.owner)
        for slot in (dst, *(args[n] for n in op.extra_dsts)):
            slot.written = True
        return dst

    def temp(self, desc: MemoryDesc) -> Slot:
        """A new temporary for a step to write as one of its ``extra_dsts``."""
        return self._slot("t", desc, "temp")

    def _check_extra_dst(self, op: Primitive, name: str, slot: Slot) -> None:
        if slot.kind != "temp" or slot.written or slot.base is not None:
            raise BackendError(f"plan.add({op.kind}): {name} must be a new plan.temp(), "
                               f"got {slot!r}")
        if slot.desc != op.desc(name):
            raise BackendError(f"plan.add({op.kind}): {name} slot {slot.name} has layout "
                               f"{slot.desc.brief}, the primitive writes {op.desc(name).brief}")

    def reorder(self, src: Slot, desc: SrcLike | None = None, copy: bool = False) -> Slot:
        """``src`` converted to ``desc`` (default: plain, a shape: plain of src's
        data type). Without ``copy`` a slot already in that layout is returned
        as is. A three-channel NCHW input goes to NHWC by minimx's kernel
        (`nhwc_input`) unless the plan was made without ``own_kernels``."""
        self._own(src, "plan.reorder")
        target = (desc if isinstance(desc, MemoryDesc)
                  else MemoryDesc.plain(desc or src.shape, src.desc.dtype))
        if target == src.desc and not copy:
            return src
        if self.own_kernels and nhwc_input_supports(src.desc, target):
            return self.add(nhwc_input(src.shape, target.dtype), src=src)
        return self.add(reorder(src.desc, target), src=src)

    def view(self, slot: Slot, desc: MemoryDesc) -> Slot:
        """The bytes of the written temporary ``slot`` read through other strides
        of the same size (a reshape, strides that transpose, another type of the
        same size), no copy. Steps may read a view, not write it, but for a sum
        post-op accumulating into a view of all of ``slot``; it keeps ``slot`` alive."""
        if not (slot.desc.is_strided and desc.is_strided) or desc.nbytes != slot.desc.nbytes:
            raise BackendError(f"plan.view: {desc.brief} cannot view {slot.desc.brief} (a "
                               "strided slot viewed through strides of its size)")
        return self._view(slot, desc, "plan.view")

    def permute(self, slot: Slot, axes: Sequence[int]) -> Slot:
        """A view of ``slot`` with its axes in the order ``axes`` (a transpose)."""
        return self._view(slot, slot.desc.permuted(axes), "plan.permute")

    def part(self, slot: Slot, shape: Sequence[int], offsets: Sequence[int]) -> Slot:
        """A view of the part of ``slot`` of ``shape`` from ``offsets`` on (a slice)."""
        self._own(slot, "plan.part")
        desc, offset = slot.desc.part(shape, offsets)
        return self._view(slot, desc, "plan.part", offset)

    def _view(self, slot: Slot, desc: MemoryDesc, what: str, offset: int = 0) -> Slot:
        """A view of ``slot``'s bytes from ``offset`` on, through ``desc``."""
        self._own(slot, what)
        base = slot.base or slot
        if slot.kind == "part":
            raise BackendError(f"{what}: {slot.name} is a part of the batch loop's, which "
                               "only its steps read")
        if base.kind != "temp" or not base.written:
            raise BackendError(f"{what}: {slot.name} ({base.kind}, written: {base.written}) "
                               "is not a written temporary, the only kind a view may read "
                               "(copy it with plan.reorder first)")
        if desc.is_plain:
            # The same bytes through plain strides: oneDNN calls layouts equal that
            # differ only in the strides of size-1 dims, yet its binary by a scalar
            # (INT8 quantize) of a batch-1 transpose, (3, 1, 4) strided (4, 12, 1),
            # wrote wrong bytes.
            desc = MemoryDesc.plain(desc.shape, desc.dtype)
        return self._slot("v", desc, "view", base=base, offset=slot.offset + offset)

    def batch_part(self, slot: Slot, count: int) -> Slot:
        """Input ``slot`` in ``count`` equal parts along its batch (first) axis:
        a slot of one part's shape, through which each pass of the batch loop
        reads its own part (see `batch_loop`, which must follow)."""
        self._own(slot, "plan.batch_part")
        if slot.kind != "input" or count < 2 or slot.shape[0] % count:
            raise BackendError(f"plan.batch_part: {slot!r} is not an input whose batch "
                               f"splits into {count} parts")
        desc = MemoryDesc.plain((slot.shape[0] // count, *slot.shape[1:]), slot.desc.dtype)
        part = self._slot("p", desc, "part", base=slot)
        part.written = True
        return part

    def batch_loop(self, count: int, results: Sequence[Slot]) -> list[Slot]:
        """Make every step so far run ``count`` times, once per part of the
        batch, before the steps added later: they read inputs through
        `batch_part` slots and compute on one part's shapes. Each of
        ``results`` (temporaries they write, in a layout with the batch
        outermost) becomes the part of a new whole-batch temporary, returned
        in order, for the later steps to read; they may read nothing else the
        loop made. oneDNN kernels then work on one part's tensors, which stay
        in the caches where the whole batch's would not."""
        if self.loop_end or not self.steps or count < 2:
            raise BackendError(f"plan.batch_loop: plan {self.name!r} has a loop already, "
                               f"or no steps, or {count} is not a number of parts")
        for op, bound in self.steps:
            for slot in bound:
                if slot.kind == "input":
                    raise BackendError(f"plan.batch_loop: {op.kind} reads input {slot.name} "
                                       "whole; the loop's steps read parts (batch_part)")
        self._loop_temps = {id(s) for s in self.slots if s.kind == "temp"}
        for slot in results:
            self._own(slot, "plan.batch_loop")
            if not (slot.kind == "temp" and slot.base is None or slot.kind == "view"
                    and slot.whole and id(slot.base) in self._loop_temps):
                raise BackendError(f"plan.batch_loop: {slot!r} is not a temporary (or a "
                                   "view of all of one)")
        # Each result's temporary becomes the first part of a whole one, with its views.
        parts = list(dict.fromkeys(s.base or s for s in results))
        wholes = {id(p): self._slot("t", _whole_batch(p.desc, count), "temp") for p in parts}
        for s in self.slots:
            if s.base is not None and id(s.base) in wholes:
                s.base = wholes[id(s.base)]
        for p in parts:
            p.kind, p.base = "part", wholes[id(p)]
            p.base.written = True
        whole_ids = {id(w) for w in wholes.values()}
        self.loop_parts = [s for s in self.slots if s.kind == "part"
                           or s.base is not None and id(s.base) in whole_ids]
        self.loop_end, self.loop_count = len(self.steps), count
        out = []
        for s in results:
            whole = s.base
            assert whole is not None   # each result is a part, or a view of one, now
            out.append(whole if s.kind == "part" else
                       self._view(whole, _whole_batch(s.desc, count), "plan.batch_loop"))
        return out

    def output(self, slot: Slot, name: str | None = None) -> Slot:
        """Mark ``slot`` as an output, returned by (or written into the arrays
        given to) each run in plain layout. A plain temporary becomes the
        caller's buffer itself; anything else (a viewed one too) gets a final
        reorder."""
        self._own(slot, "plan.output")
        # A viewed temporary keeps a buffer of its own: the caller's changes each run.
        if (slot.kind != "temp" or not slot.desc.is_plain
                or any(s.base is slot for s in self.slots)):
            slot = self.reorder(slot, copy=True)
        slot.kind = "output"
        slot.name = name or f"out{len(self.outputs)}"
        self.outputs.append(slot)
        return slot

    # ---- compiling and running ----

    def compile(self, storage: Sequence[int] | None = None,
                block_bytes: Sequence[int] = ()) -> None:
        """Create the memories and the C plan (done by the first ``run`` if needed).

        `storage` is a memory plan of `schedule`: per slot, the index of its
        block in `block_bytes` (temporaries that share a block share its
        buffer), or a negative number (a buffer of its own, or the caller's).
        """
        # Under the lock: threads whose first runs race must share one C plan.
        with self._lock:
            if self._cplan is None:
                self._cplan = self._build(storage, block_bytes)

    def schedule(self) -> tuple[list[int], list[tuple], set[int]]:
        """The plan as a memory planner sees it, by slot index: each slot's bytes;
        per step ``(name, reads, writes, inplace)`` (`plan_memory.Step`'s fields:
        a step that writes into a slot written before, such as a sum post-op's
        addend, reads it instead; an in-place kind with dst laid out as src may
        write over src, unless it reads src as another argument too); and the
        slots that are not temporaries."""
        index = {id(s): k for k, s in enumerate(self.slots)}
        # The batch loop writes its results' whole temporaries part by part,
        # so they live from its first step on.
        wholes = {index[id(s.base)] for s in self.loop_parts
                  if s.base is not None and s.base.kind == "temp"}
        written: set[int] = set()
        steps = []
        for k, (op, bound) in enumerate(self.steps):
            dst_slot = bound[op.args.index("dst")]
            dst = index[id(dst_slot.base or dst_slot)]   # a summed view: its temporary
            names = [n for n in op.args if n != "dst"]
            reads = [index[id(s.base or s)] for n, s in zip(op.args, bound, strict=True)
                     if n != "dst" and n not in op.extra_dsts]
            extra = tuple(index[id(s)] for n, s in zip(op.args, bound, strict=True)
                          if n in op.extra_dsts)
            pairs: tuple[tuple[int, int], ...] = ()
            if dst in written:
                reads.append(dst)
            elif op.kind in IN_PLACE_KINDS and op.desc("src") == op.desc("dst"):
                src = names.index("src")
                # oneDNN may write over src only; a binary's src1 that is the
                # same tensor must not change under it (add(y, y)).
                if reads.count(reads[src]) == 1:
                    pairs = ((src, 0),)
            writes = (() if dst in written else (dst,)) + extra
            if k == 0:
                writes += tuple(sorted(wholes - {dst}))
                written |= wholes
            written.add(dst)
            steps.append((f"{op.kind} {self.slots[dst].name}", tuple(reads), writes, pairs))
        return ([0 if s.base else s.desc.nbytes for s in self.slots], steps,
                {k for k, s in enumerate(self.slots) if s.kind != "temp"})

    def _share(self, storage: Sequence[int], block_bytes: Sequence[int]) -> None:
        """Bind each planned temporary to its block of a planned memory."""
        if len(storage) != len(self.slots):
            raise BackendError(f"plan {self.name!r}: a memory plan for {len(storage)} slots, "
                               f"the plan has {len(self.slots)}")
        blocks = [_aligned(size) for size in block_bytes]
        for slot, sid in zip(self.slots, storage, strict=True):
            if slot.kind == "temp" and sid >= 0:
                block = blocks[sid]
                if block.nbytes < slot.desc.nbytes:
                    raise BackendError(f"plan {self.name!r}: block {sid} of {block.nbytes} "
                                       f"bytes cannot hold {slot.name} ({slot.desc.nbytes})")
                slot.memory = _over(slot.desc, block)

    def _build(self, storage: Sequence[int] | None, block_bytes: Sequence[int]):
        ffi, lib = native().ffi, native().lib
        if storage is not None:
            self._share(storage, block_bytes)
        viewed = {id(s.base) for s in self.slots if s.base is not None}
        for slot in self.slots:
            if slot.memory is None and slot.base is None:
                is_io = slot.kind in ("input", "output")
                slot.memory = (Memory.unbound(slot.desc) if is_io
                               else _own_buffer(slot.desc) if id(slot) in viewed
                               else Memory.allocate(slot.desc))
        for slot in self.slots:
            if slot.base is not None:   # a part of an input: the C loop points it
                slot.memory = (Memory.unbound(slot.desc) if slot.base.kind == "input" else
                               _over(slot.desc, slot.base.bound_memory().array, slot.offset))
        self._check_loop_reads()
        cplan = ffi.gc(lib.mmx_plan_new(), lib.mmx_plan_destroy)
        if cplan == ffi.NULL:
            raise BackendError("plan: out of memory")
        check(lib.mmx_plan_init(cplan, engine()), "plan creation")
        for op, bound in self.steps:
            mems = ffi.new("mmx_memory *[]", [s.bound_memory()._mem for s in bound])
            check(lib.mmx_plan_add_step(cplan, op._prim, mems), f"plan step {op.kind}")
        io = [s.bound_memory()._mem for s in self.inputs + self.outputs]
        check(lib.mmx_plan_set_io(cplan, len(io), ffi.new("mmx_memory *[]", io)),
              "plan io")
        if self.loop_end:
            parts = self.loop_parts
            bases = [s.base for s in parts if s.base is not None]
            check(lib.mmx_plan_set_loop(
                cplan, self.loop_end, self.loop_count, len(parts),
                ffi.new("mmx_memory *[]", [s.bound_memory()._mem for s in parts]),
                [self.inputs.index(b) if b.kind == "input" else -1 for b in bases],
                [b.desc.nbytes // self.loop_count for b in bases]), "plan batch loop")
        check(lib.mmx_plan_finalize(cplan), "plan scratchpad")
        # Looked up once: each run would otherwise pay for the loader's lock.
        self._calls = (ffi.from_buffer, lib.mmx_plan_run, ffi.NULL)
        return cplan

    def _check_loop_reads(self) -> None:
        """Refuse a step after the batch loop, or an output, that reads what only
        the loop's steps may: its parts, and its temporaries but its results."""
        parts = {id(s) for s in self.loop_parts}
        after = [(f"{op.kind} step", s) for op, bound in self.steps[self.loop_end:]
                 for s in bound] + [("output", s) for s in self.outputs]
        for what, slot in after:
            if id(slot) in parts or slot.kind == "part" or id(slot.base or slot) in \
                    self._loop_temps:
                raise BackendError(f"plan {self.name!r}: an {what} after the batch loop "
                                   f"reads {slot.name}, which holds one part of the batch")

    @property
    def scratchpad_nbytes(self) -> int:
        """Bytes of the one scratchpad shared by all steps (after compile)."""
        self.compile()
        return int(native().lib.mmx_plan_scratchpad_size(self._cplan))

    @property
    def step_runs(self) -> int:
        """How many steps a run executes: the loop's once per part."""
        return len(self.steps) + (self.loop_count - 1) * self.loop_end

    def run_names(self) -> list[tuple[str, str]]:
        """`step_names` per step run, in the order a run executes them (the
        loop's steps once per part): what a timed run's `times` describe."""
        names = self.step_names()
        return names[:self.loop_end] * self.loop_count + names[self.loop_end:]

    def step_names(self) -> list[tuple[str, str]]:
        """Per step, (its owner, the primitive and the kernel oneDNN chose:
        ``convolution[brg:avx512_core_amx]``)."""
        return [(owner, f"{op.kind}[{op.impl}]")
                for owner, (op, _) in zip(self.step_owners, self.steps, strict=True)]

    def run(self, inputs: Sequence[np.ndarray],
            outputs: Sequence[np.ndarray] | None = None,
            times: np.ndarray | None = None) -> list[np.ndarray]:
        """Run every step once, in one C call, and return the outputs.

        ``inputs`` and ``outputs`` follow the order of ``input``/``output``
        declarations: C-contiguous arrays of the declared shapes and types.
        Outputs are allocated when not given. `times`, an int64 array of two
        per step run (`step_runs`: the batch loop's steps run once per part),
        receives each run's start and end in the order of `run_names`
        (`time.perf_counter_ns`'s clock), measured in C, each step waited for.
        """
        if self._cplan is None:
            self.compile()
        ins, outs = self.inputs, self.outputs
        if len(inputs) != len(ins):
            raise BackendError(f"plan {self.name!r}: {len(ins)} inputs expected, "
                               f"{len(inputs)} given")
        if outputs is None:
            outputs = [np.empty(s.desc.shape, s.desc.dtype) for s in outs]
        elif len(outputs) != len(outs):
            raise BackendError(f"plan {self.name!r}: {len(outs)} outputs expected, "
                               f"{len(outputs)} given")
        from_buffer, run, null = self._calls
        handles = (_buffers(from_buffer, inputs, ins, False)
                   + _buffers(from_buffer, outputs, outs, True))
        clock = null if times is None else self._clock(times)
        with self._lock:
            status = run(self._cplan, len(handles), handles, clock)
        if status:
            check(status, f"plan {self.name!r} run")
        return list(outputs)

    def bind(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> BoundRun:
        """The plan's run on exactly these arrays (as ``run`` takes them), checked
        once: each call of the result is one C call that looks nothing up."""
        if self._cplan is None:
            self.compile()
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise BackendError(f"plan {self.name!r}: {len(self.inputs)} inputs and "
                               f"{len(self.outputs)} outputs expected, {len(inputs)} and "
                               f"{len(outputs)} given")
        from_buffer = self._calls[0]
        handles = (_buffers(from_buffer, inputs, self.inputs, False)
                   + _buffers(from_buffer, outputs, self.outputs, True))
        return BoundRun(self, [*inputs, *outputs], handles)

    def _clock(self, times: np.ndarray):
        """`times` as the C side's int64_t pointer, checked."""
        if times.dtype != np.int64 or times.shape != (2 * self.step_runs,) \
                or not times.flags.c_contiguous or not times.flags.writeable:
            raise BackendError(f"plan {self.name!r}: times must be a writable int64 array of "
                               f"shape ({2 * self.step_runs},), got {times.dtype} "
                               f"{times.shape}")
        return native().ffi.cast("int64_t *", times.ctypes.data)

    def __str__(self) -> str:
        lines = [f"Plan {self.name!r}: {len(self.steps)} steps"]
        if self.loop_end:
            lines.append(f"  steps 1-{self.loop_end} run once per part of the batch, "
                         f"{self.loop_count} parts")
        lines += [f"  {s.name} = {s.kind} {s.desc.brief}"
                  for s in self.slots if s.kind in ("input", "constant")]
        for op, bound in self.steps:
            reads = ", ".join(f"{n}={s.name}"
                              for n, s in zip(op.args, bound, strict=True) if n != "dst")
            dst = bound[op.args.index("dst")]
            lines.append(f"  {dst.name} = {op.kind}[{op.impl}]({reads}) "
                         f"-> {dst.desc.brief}")
        lines.append("  outputs: " + ", ".join(s.name for s in self.outputs))
        return "\n".join(lines)


class BoundRun:
    """A plan's run on arrays fixed by `Plan.bind`, which it keeps alive."""

    __slots__ = ("plan", "arrays", "_lock", "_served", "_args")

    def __init__(self, plan: Plan, arrays: list[np.ndarray], handles: list) -> None:
        ffi, lib = native().ffi, native().lib
        self.plan = plan
        self.arrays = arrays
        self._lock = plan._lock
        self._served = lib.mmx_plan_run_served
        self._args = (plan._cplan, len(handles), ffi.new("void *[]", handles), ffi.NULL)

    def served(self) -> bool:
        """Run the plan on the oneDNN worker thread (`mmx_worker_serve`, which its
        owner must have started) as a C job, so that no Python runs there. True
        when it ran; False when oneDNN failed (`Plan.run` on the same arrays
        fails the same way and says why)."""
        with self._lock:
            return self._served(*self._args) == 0


def _whole_batch(part: MemoryDesc, count: int) -> MemoryDesc:
    """The layout of ``count`` parts laid one after another along the batch
    (first) axis, each in the layout ``part`` (which must keep its batch
    outermost and dense)."""
    whole = (MemoryDesc.with_layout((part.shape[0] * count, *part.shape[1:]),
                                    part.layout, part.dtype)
             if part.layout.startswith("a") else None)
    if (whole is None or whole.nbytes != count * part.nbytes
            or MemoryDesc.with_layout(part.shape, part.layout, part.dtype) != part):
        raise BackendError(f"plan.batch_loop: the batch of {part.brief} is not its "
                           "outermost, dense axis")
    return whole


def _buffers(from_buffer: Callable, arrays: Sequence[np.ndarray], slots: list[Slot],
             writable: bool) -> list:
    """The arrays' buffers as cffi pointers, checked against their slots.

    The hot path of every run: dtype and shape are compared here, while
    contiguity and writability are left to the buffer protocol, which refuses
    a non-contiguous or (when asked for writing) read-only array by itself.
    Any refusal is explained by check_array.
    """
    handles = []
    for array, slot in zip(arrays, slots, strict=True):
        try:
            if array.dtype != slot.desc.dtype or array.shape != slot.desc.shape:
                raise ValueError
            handles.append(from_buffer(array, require_writable=writable))
        except (AttributeError, ValueError, TypeError, BufferError) as err:
            check_array(array, slot.desc.shape, slot.name, writable, slot.desc.dtype)
            raise BackendError(
                f"{slot.name}: cannot use the buffer of {type(array).__name__}") from err
    return handles


def _over(desc: MemoryDesc, buffer: np.ndarray | None, offset: int = 0) -> Memory:
    """A memory of `desc` over the bytes of `buffer` (a byte array) from
    `offset` on; it keeps them alive."""
    if buffer is None:
        raise BackendError(f"plan: no buffer to view as {desc.brief}")
    if offset:
        buffer = buffer[offset:]
    memory = Memory(desc, native().ffi.from_buffer(buffer), allocate=False)
    memory.array = buffer
    return memory


def _own_buffer(desc: MemoryDesc) -> Memory:
    """A memory with a buffer of its own that views can share."""
    return _over(desc, _aligned(desc.nbytes))


def _aligned(nbytes: int, alignment: int = 64) -> np.ndarray:
    """A byte buffer starting on an `alignment` boundary (what oneDNN kernels like)."""
    raw = np.empty(nbytes + alignment, np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + nbytes]
