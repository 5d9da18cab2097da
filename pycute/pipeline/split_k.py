"""Split-K and stream-K as a scheduler plan: several CTAs share one output tile's k-blocks, each computing a partial
tile over a contiguous range of them, and the partials are summed in a fixed order.

**The partition** (``KSplit(dp, workers)``). A problem has ``U`` work units (cluster blocks of tiles, in the swizzled
raster of ``make_tile_scheduler``) of ``KB`` k-blocks each. The first ``dp`` units in raster order are *whole*: one
CTA computes all of K (data-parallel). The other ``U - dp`` units' k-blocks, laid end to end unit after unit, are
``I = (U - dp) x KB`` iterations cut into ``workers`` contiguous ranges: worker ``w`` takes ``[s(w), s(w + 1))``
with ``s(w) = floor(w I / workers)``, ``floor(I / workers)`` or one more. A range cut at unit boundaries gives the
worker's *pieces* ``(unit, kb_begin, kb_end)``. Split-K by ``S`` is ``workers = (U - dp) x S`` (every range inside
one unit, ``S`` pieces per unit); stream-K is ``workers`` = the persistent grid's clusters (a range crosses units);
``dp`` = whole waves of units and stream-K over the rest is CUTLASS's hybrid. ``choose_k_split`` picks one with a
cost model (``split_cost``).

**Work items**: the ``dp`` units, then the workers; persistent cluster ``c`` of ``G`` takes items ``c, c + G, ...``.
The partition is the plan's, not the grid's: any grid computes the same pieces, so a tile's bits do not depend on
the CTA count, the order CTAs run in, or which CTA finishes the tile.

**The fixup**: last arrival reduces. Every piece of a unit with several pieces writes its f32 partial to its own
workspace slot, then arrives on the tile's counter (``atom.add.acq_rel.gpu``); the piece whose arrival completes the
count -- whichever CTA that is -- reads the tile's partials back in K order, sums them in that order (``p0 + p1 +
...`` in f32), runs the epilogue and sets the counter back to 0 for the next launch. No CTA ever waits for another,
so there is no residency assumption: a grid larger than what fits on the GPU, CTAs launched one at a time in any
order, still finishes (``pycute.sim.split_k.check_fixup`` explores the orders). The flag-ordered serial fixup
(CUTLASS's stream-K: piece ``j`` waits for piece ``j - 1``'s flag, adds into one running partial) needs one partial
per tile less but deadlocks when a waiting CTA holds the slot the CTA it waits for needs (the same checker shows it
with ``protocol="serial"``): it is correct only if every CTA is co-resident, which a launch cannot promise under MPS,
green contexts or a concurrent kernel.

Each tile's fixup is split in ``parts`` (the consumer warpgroups that each own rows of it: each part arrives and
reduces its own rows, so warpgroups never wait for each other). **Workspace**: a slot per worker for the piece that
holds its first k-block (``head``, slot ``w``) and, where a range crosses into a unit it does not finish, one for its
last piece (``tail``, slot ``workers + w``): ``slots x cluster CTAs x tile bytes`` (f32), and a ``u32`` counter per
(stream unit, CTA, part), zero before the first launch and left zero by every launch.
"""
from __future__ import annotations

from typing import ClassVar

import attrs

from ..errors import PlanError
from ..int_tuple import as_int
from ..views import view
from .scheduler import Raster, SchedulerFunction, _Raster, _raster_args, _tile_counts
from ..arch.convention import Convention

__all__ = ["KSplit", "Piece", "SplitKScheduler", "make_split_k_scheduler"]


@attrs.frozen
class KSplit:
    """How a problem's K is shared: the first ``dp`` units whole, the rest's k-blocks over ``workers`` ranges."""

    dp: int
    workers: int

    def __attrs_post_init__(self) -> None:
        if min(self.dp, self.workers) < 0:
            raise PlanError(f"KSplit(dp={self.dp}, workers={self.workers}): both at least 0")

    @classmethod
    def data_parallel(cls, units: int) -> "KSplit":
        """Every unit whole (no reduction)."""
        return cls(as_int(units, "units"), 0)

    @classmethod
    def split(cls, units: int, splits: int, dp: int = 0) -> "KSplit":
        """Split-K: each of the ``units - dp`` last units in ``splits`` pieces of (nearly) equal k-blocks."""
        return cls(dp, (as_int(units, "units") - dp) * as_int(splits, "splits"))

    @classmethod
    def stream(cls, workers: int, dp: int = 0) -> "KSplit":
        """Stream-K: the ``units - dp`` last units' k-blocks over ``workers`` (the persistent clusters) evenly."""
        return cls(dp, as_int(workers, "workers"))

    def describe(self, units: int, kblocks: int) -> str:
        stream = units - self.dp
        if self.workers == 0:
            return f"data-parallel: {units} whole units"
        if self.workers % stream == 0:
            kind = f"split-K by {self.workers // stream}"
        else:
            kind = f"stream-K over {self.workers} workers ({stream * kblocks / self.workers:.2f} k-blocks each)"
        return (f"{self.dp} whole unit(s), then " if self.dp else "") + f"{kind} of {stream} unit(s)"


@attrs.frozen
class Piece:
    """One range of a unit's k-blocks: ``[kb_begin, kb_end)`` of work unit ``unit``, the ``index``-th in K order of
    the unit's ``count`` pieces; ``slot``: the workspace slot its partial goes to (None when the unit is whole)."""

    unit: int
    kb_begin: int
    kb_end: int
    index: int
    count: int
    slot: int | None

    @property
    def kblocks(self) -> int:
        return self.kb_end - self.kb_begin


@attrs.frozen(repr=False)
class SplitKScheduler(_Raster):
    """A persistent scheduler whose work items are whole units and workers' ranges of k-blocks (module docstring).
    ``tiles`` / ``kblocks`` / ``split`` are None in the plan a kernel is generated from (run-time arguments of its
    functions); ``at(...)`` models one problem. The fixup is done in ``parts`` per tile (the consumer warpgroups that
    own its rows), each of ``part_threads`` threads holding ``registers`` f32 accumulator values. ``shared`` False:
    every unit is whole (the walk's code is the tile scheduler's; a kernel without the fixup)."""

    kblocks: int | None = None
    split: KSplit | None = None
    parts: int = 1
    part_threads: int = 128
    registers: int = 4
    shared: bool = True

    VARIANT: ClassVar[str] = "split-k"

    def at(self, tiles: tuple[int, int], kblocks: int | None = None,
           split: KSplit | None = None) -> "SplitKScheduler":
        """The plan at one problem: ``tiles`` output tiles of ``kblocks`` k-blocks, shared as ``split`` (default:
        data-parallel)."""
        t = _tile_counts(tiles, "at")
        kb = as_int(kblocks, "at: kblocks") if kblocks is not None else self.kblocks
        if kb is None or kb < 1:
            raise PlanError(f"at: kblocks={kb!r}: a problem has at least one k-block")
        plan = attrs.evolve(self, tiles=t, kblocks=kb, split=None)
        s = split if split is not None else self.split if self.split is not None else KSplit.data_parallel(plan.units)
        if not isinstance(s, KSplit):
            raise TypeError(f"at: split is a KSplit, got {s!r}")
        if s.dp > plan.units:
            raise PlanError(f"at: {s.dp} whole units of a problem of {plan.units}")
        if s.workers and not self.shared:
            raise PlanError(f"at: {s}: scheduler {self.name!r} keeps every unit whole (shared=False)")
        if s.dp < plan.units and s.workers == 0:
            raise PlanError(f"at: {plan.units - s.dp} unit(s) past the {s.dp} whole ones and no worker to take them")
        if plan.units * kb >= 1 << 32:
            raise PlanError(f"at: {plan.units} units x {kb} k-blocks: the iterations are 32-bit in the generated walk")
        if s.workers > plan.iterations(s):
            raise PlanError(f"at: {s.workers} workers for {plan.iterations(s)} k-blocks ({plan.units - s.dp} units x "
                            f"{kb}): every worker takes at least one k-block")
        return attrs.evolve(plan, split=s)

    # -- the model of one problem ---------------------------------------------------------------------------------
    def _problem(self) -> tuple[int, KSplit]:
        if self.kblocks is None or self.split is None:
            raise PlanError(f"scheduler {self.name!r}: the problem is run-time arguments; model one with "
                            f".at(tiles, kblocks, split)")
        return self.kblocks, self.split

    def iterations(self, split: KSplit | None = None) -> int:
        """The k-blocks the workers share: ``(units - dp) x kblocks``."""
        s = split if split is not None else self._problem()[1]
        return (self.units - s.dp) * self._problem_kb()

    def _problem_kb(self) -> int:
        if self.kblocks is None:
            raise PlanError(f"scheduler {self.name!r}: kblocks is a run-time argument; model a problem with .at()")
        return self.kblocks

    def start(self, worker: int) -> int:
        """Worker ``worker``'s first iteration ``floor(w I / workers)`` (``start(workers)`` is ``I``)."""
        _, s = self._problem()
        return worker * self.iterations() // s.workers

    def worker_of(self, iteration: int) -> int:
        """The worker whose range holds ``iteration``: the largest ``w`` with ``start(w) <= iteration``."""
        _, s = self._problem()
        return ((iteration + 1) * s.workers - 1) // self.iterations()

    @property
    def items(self) -> int:
        """Work items: the whole units, then the workers."""
        _, s = self._problem()
        return s.dp + s.workers

    @property
    def slots(self) -> int:
        """Workspace slots (per cluster CTA and part): a head per worker, and a tail per worker when some range
        crosses into a unit it does not finish."""
        kb, s = self._problem()
        if s.workers == 0:
            return 0
        crosses = any(self.start(w) // kb != (self.start(w + 1) - 1) // kb for w in range(s.workers))
        return 2 * s.workers if crosses else s.workers

    @property
    def counters(self) -> int:
        """``u32`` counters: one per (stream unit, cluster CTA, part)."""
        _, s = self._problem()
        return (self.units - s.dp) * self.cluster_size * self.parts if s.workers else 0

    @property
    def part_bytes(self) -> int:
        """One part's f32 partial."""
        return self.part_threads * self.registers * 4

    @property
    def workspace_bytes(self) -> int:
        """The partials' bytes: a part's partial per (slot, cluster CTA, part)."""
        return self.slots * self.cluster_size * self.parts * self.part_bytes

    def _unit_range(self, v: int) -> tuple[int, int]:
        """The workers holding stream unit ``v``'s first and last k-block."""
        kb = self._problem_kb()
        return self.worker_of(v * kb), self.worker_of((v + 1) * kb - 1)

    def _slot(self, worker: int, v: int) -> int:
        """The slot of ``worker``'s piece of stream unit ``v``: its head, or its tail when it started before."""
        _, s = self._problem()
        return worker + (s.workers if self.start(worker) < v * self._problem_kb() else 0)

    def pieces(self, item: int) -> list[Piece]:
        """Work item ``item``'s pieces in order."""
        kb, s = self._problem()
        item = as_int(item, "work item")
        if not 0 <= item < self.items:
            raise PlanError(f"work item {item} is outside [0, {self.items})")
        if item < s.dp:
            return [Piece(item, 0, kb, 0, 1, None)]
        w = item - s.dp
        out, it, end = [], self.start(w), self.start(w + 1)
        while it < end:
            v, k0 = divmod(it, kb)
            k1 = min(kb, k0 + end - it)
            first, last = self._unit_range(v)
            count = last - first + 1
            out.append(Piece(s.dp + v, k0, k1, w - first, count, self._slot(w, v) if count > 1 else None))
            it += k1 - k0
        return out

    def unit_pieces(self, unit: int) -> list[Piece]:
        """Every piece of ``unit`` in K order (what its reduction sums, in that order)."""
        kb, s = self._problem()
        unit = as_int(unit, "work unit")
        if not 0 <= unit < self.units:
            raise PlanError(f"work unit {unit} is outside [0, {self.units})")
        if unit < s.dp:
            return [Piece(unit, 0, kb, 0, 1, None)]
        first, last = self._unit_range(unit - s.dp)
        return [p for w in range(first, last + 1) for p in self.pieces(s.dp + w) if p.unit == unit]

    def grid(self, sms: int, occupancy: int = 1) -> int:
        """CTAs to launch: ``sms x occupancy`` rounded down to whole clusters, no more clusters than items."""
        sms, occupancy = as_int(sms, "grid: sms"), as_int(occupancy, "grid: occupancy")
        if sms < 1 or occupancy < 1:
            raise PlanError(f"grid: {sms} SMs x {occupancy} CTAs per SM: both at least 1")
        clusters = min(sms * occupancy // self.cluster_size, self.items)
        if clusters < 1:
            raise PlanError(f"grid: {sms} x {occupancy} CTAs hold no whole cluster of {self.cluster_size}")
        return clusters * self.cluster_size

    def work(self, cta: int, grid: int) -> list[int]:
        """The work items CTA ``cta`` of a ``grid``-CTA launch takes, in order."""
        cta, grid = as_int(cta, "cta"), as_int(grid, "grid")
        if grid < 1 or grid % self.cluster_size or not 0 <= cta < grid:
            raise PlanError(f"CTA {cta} of a grid of {grid}: the grid is whole clusters of {self.cluster_size}")
        return list(range(cta // self.cluster_size, self.items, grid // self.cluster_size))

    def schedule(self, grid: int) -> dict[int, list[Piece]]:
        """Every CTA's pieces, in order (a cluster's CTAs take the same pieces, each its own tile of the unit)."""
        return {cta: [p for i in self.work(cta, grid) for p in self.pieces(i)] for cta in range(grid)}

    # -- what the generated code is -------------------------------------------------------------------------------
    @property
    def functions(self) -> tuple[SchedulerFunction, ...]:
        any_thread = Convention("any", 1, "none")
        part = Convention("warpgroup" if self.part_threads == 128 else "warps", self.part_threads, "none")
        return (SchedulerFunction(f"{self.name}_first", any_thread, "this cluster's first work item"),
                SchedulerFunction(f"{self.name}_next", any_thread, "the work item after `item`: + the grid's "
                                                                   "clusters"),
                SchedulerFunction(f"{self.name}_piece_first", any_thread, "the first piece of work item `item`"),
                SchedulerFunction(f"{self.name}_piece_next", any_thread, "the item's piece after `pc`; false past "
                                                                         "the item's range"),
                SchedulerFunction(f"{self.name}_tile", any_thread, "this CTA's tile of work unit `unit`, and "
                                                                   "whether it lies inside the output"),
                SchedulerFunction(f"{self.name}_partial_store", part, "writes this part's f32 accumulator to the "
                                                                      "piece's workspace slot"),
                SchedulerFunction(f"{self.name}_arrive", part, "after every thread of the part stored: counts the "
                                                               "piece on the tile's counter; true in the last "
                                                               "arrival's part, which resets the counter"),
                SchedulerFunction(f"{self.name}_reduce", part, "the sum of the tile's partials in K order into the "
                                                               "accumulator"),
                SchedulerFunction(f"{self.name}_begin", any_thread, "this cluster's walk at its first piece (`more` "
                                                                    "false when it has none)"),
                SchedulerFunction(f"{self.name}_advance", any_thread, "the walk at its next piece: the item's next, "
                                                                      "else the next item's first"),
                SchedulerFunction(f"{self.name}_fixup", part, "for a piece of a shared tile: stores the part's "
                                                              "partial and arrives; the last arrival's part sums the "
                                                              "partials into `acc` and returns true, the others "
                                                              "false (whole tiles: true, nothing done)"))

    def cuda(self) -> str:
        """The constants, the problem and piece records, and the functions."""
        return str(view("cuda", self))

    def explain(self) -> str:
        if self.split is None or self.kblocks is None:
            head = (f"split-K / stream-K scheduler {self.name!r}: the tiles, k-blocks and partition are run-time "
                    f"arguments")
        else:
            head = (f"split-K / stream-K scheduler {self.name!r}: {self.units} units of {self.kblocks} k-blocks, "
                    f"{self.split.describe(self.units, self.kblocks)}; {self.items} work items, {self.slots} "
                    f"workspace slot(s), {self.counters} counter(s)")
        lines = [head] + self._describe()
        lines += ["  partition   the first dp units whole; the rest's k-blocks end to end, worker w takes "
                  "[floor(w I / workers), floor((w + 1) I / workers))",
                  "  persistent  cluster c of G takes work items c, c + G, ... (whole units, then workers)",
                  f"  fixup       each piece of a shared unit stores its f32 partial, arrives (acq_rel, gpu); the "
                  f"last arrival sums the partials in K order and resets the counter; nothing waits on another CTA",
                  f"  parts       {self.parts} per tile (each reduces its own rows), {self.part_threads} threads of "
                  f"{self.registers} f32 each: {self.part_bytes} B per partial"]
        lines += [f"  {f.name:<24} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        problem = "" if self.split is None else f", kblocks {self.kblocks}, {self.split}"
        return (f"SplitKScheduler({self.name!r}, tiles {self.tiles}{problem}, cluster {self.cluster}, swizzle "
                f"{self.swizzle} along {self.raster}, {self.parts} part(s))")


def make_split_k_scheduler(*, registers: int, parts: int = 1, part_threads: int = 128,
                           cluster: tuple[int, int] = (1, 1), swizzle: int = 1, raster: Raster = "m",
                           shared: bool = True, name: str = "sk") -> SplitKScheduler:
    """Plan a persistent split-K / stream-K scheduler over run-time problems: the fixup in ``parts`` per tile of
    ``part_threads`` threads holding ``registers`` f32 accumulator values each (a multiple of 4: they move as
    ``float4``), clusters of ``cluster`` CTAs, the units walked in bands of ``swizzle`` block rows along
    ``raster``; ``shared=False`` keeps every unit whole (the same walk, no partition arithmetic). Model a problem
    with ``plan.at(tiles, kblocks, split)``; ``choose_k_split`` picks ``split``."""
    who = "make_split_k_scheduler"
    args = _raster_args(name, None, cluster, swizzle, raster, who)
    parts, threads, regs = (as_int(parts, f"{who}: parts"), as_int(part_threads, f"{who}: part_threads"),
                            as_int(registers, f"{who}: registers"))
    if parts < 1:
        raise PlanError(f"{who}: parts={parts}: at least one per tile")
    if threads < 32 or threads % 32:
        raise PlanError(f"{who}: part_threads={threads}: whole warps (a named barrier counts warps)")
    if regs < 4 or regs % 4:
        raise PlanError(f"{who}: registers={regs}: a positive multiple of 4 (the partials move as float4)")
    return SplitKScheduler(*args, parts=parts, part_threads=threads, registers=regs, shared=bool(shared))
