"""A tcgen05 GEMM's mainloop as a plan (``make_mma_mainloop``): the operand pipeline that TMA and bulk loads fill,
the MMA that drains it (with the scale factors' ``tcgen05.cp`` into TMEM for a block-scaled kind), and the
accumulator pipeline the MMA fills and the epilogue drains -- composed into the functions each warp role calls per
output tile, so that a kernel's roles are a loop over its scheduler's tiles (docs/pipelines.md section 2).

Per tile of the CTA (``pycute_tile``: ``m``, ``n`` from the scheduler), for ``k_blocks`` k-blocks:

* ``<name>_load_tile`` (the producer warp): for each k-block, the warp acquires the next stage (every lane waits
  for its release, one arms it) and one elected lane issues every load of it; a load's coordinates come from
  ``modes`` (per array mode: the tile's ``m``, its ``n``, the k-block ``k``, or ``-`` for a mode of one tile), the
  MMA's B tile in a CTA pair being the CTA's half of N;
* ``<name>_mma_tile`` (the MMA warp): acquires the next accumulator, then per k-block waits for the stage, copies
  its scale factors into the stage's TMEM regions, issues the k-block's MMAs and releases the stage with
  ``tcgen05.commit``; commits the filled accumulator. In the odd CTA of a pair it relays each landed stage instead;
* ``<name>_start`` / ``<name>_finish`` (every thread): the barriers' initialisation, the TMEM allocation and its
  release, between the tcgen05 fences and the CTA / cluster barrier the allocation needs.

Every count, column, byte offset and parity in the generated text is a plan's (``pycute.codegen.mainloop``).
"""
from __future__ import annotations

from typing import Any, ClassVar, Mapping

import attrs

from ..arch.convention import Convention
from ..arch.sm100.tmem import CELL_BITS
from ..arch.sm90.warp import WARP_THREADS
from ..copy.bulk.plan import BulkPlan
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..copy.tma.plan import TmaPlan
from ..basis import basis_get
from ..errors import PlanError
from ..int_tuple import as_int
from ..mma.operand import UmmaDescriptor
from ..mma.plan import MmaPlan
from ..mma.scale import check_scale_factor_copy
from ..tensor.alloc import TmemAllocation
from ..tensor.tile import mode_extents
from ..tensor.tmem import TmemTensor
from ..views import view
from .plan import PipelineFunction, PipelinePlan
from .rings import STAGE_INDEX

__all__ = ["MmaMainloop", "make_mma_mainloop", "MODE_LETTERS"]

#: What a load's array mode follows: the tile's M index, its N index, the k-block, or nothing (one tile: index 0).
MODE_LETTERS = {"m": "the tile's m", "n": "the tile's n", "k": "the k-block", "-": "0 (one tile)"}
_MAX_THREADS = 1024


@attrs.frozen(repr=False)
class MmaMainloop:
    """A validated mainloop: the ``operands`` pipeline (its loads over rings, released by the MMA's commit), the
    ``accumulators`` pipeline (filled by the MMA's commit), the ``mma`` plan over the operand rings writing stage 0
    of ``accumulator`` (the placed TMEM ring, one run-time index), the scale factors' copies (``sf_copies``:
    ``("sfa", plan)``, ``("sfb", plan)``, each over its load's ring and a TMEM ring of as many stages), each
    load's ``modes``, which load is the MMA's B (``b_load``), the TMEM allocation's ``tmem_columns`` and the CTA's
    ``threads``."""

    name: str
    operands: PipelinePlan
    accumulators: PipelinePlan
    mma: MmaPlan
    accumulator: TmemTensor
    sf_copies: tuple[tuple[str, Tcgen05CpPlan], ...]
    modes: tuple[tuple[str, str], ...]
    b_load: str
    tmem_columns: int
    threads: int

    VARIANT: ClassVar[str] = "mma_mainloop"

    @property
    def cta_group(self) -> int:
        return self.mma.atom.cta_group

    @property
    def accumulator_columns(self) -> int:
        """32-bit TMEM columns from one accumulator of the ring to the next."""
        return _column_step(self.accumulator)

    def sf_column(self, which: str) -> tuple[int, int]:
        """``(column of stage 0, columns per stage)`` of the TMEM ring the ``which`` ("sfa" / "sfb") copy fills:
        the SF address the MMA of stage ``s`` reads is ``tmem + column + s * step``."""
        plan = dict(self.sf_copies)[which]
        return _column(plan.dst), plan.dynamic[0].tmem_step

    def coordinates(self, load: str, tile: tuple[int, int], k_block: int, rank: int = 0) -> tuple[int, ...]:
        """The tile indices ``<name>_load_tile`` passes load ``load`` for the CTA's output tile ``tile`` (m, n),
        k-block ``k_block``, in the CTA of cluster rank ``rank`` (the model the generated code follows)."""
        out = []
        for letter in dict(self.modes)[load]:
            if letter == "m":
                out.append(tile[0])
            elif letter == "n":
                out.append(tile[1] * 2 + rank % 2 if self.splits(load) else tile[1])
            else:
                out.append(k_block if letter == "k" else 0)
        return tuple(out)

    def splits(self, load: str) -> bool:
        """Whether ``load`` is the MMA's B in a CTA pair: each CTA loads its half of the tile's N rows."""
        return load == self.b_load and self.cta_group == 2

    @property
    def functions(self) -> tuple[PipelineFunction, ...]:
        n, warp = self.name, Convention("warp", WARP_THREADS)
        cta = Convention("threads", self.threads)
        return (PipelineFunction(f"{n}_start", "every thread", cta, "initialises both pipelines' barriers (thread "
                                 "0), allocates TMEM (the warp that passes allocates = true) and returns its "
                                 "address after the tcgen05 fences and the CTA / cluster barrier"),
                PipelineFunction(f"{n}_finish", "every thread", cta, "after every role's last tile: the tcgen05 "
                                 "fence, the CTA / cluster barrier, and the allocating warp frees TMEM"),
                PipelineFunction(f"{n}_load_tile", "producer", warp, "for each k-block of the tile, the warp "
                                 "acquires the next stage and one lane issues its loads; every lane advances the "
                                 "state"),
                PipelineFunction(f"{n}_mma_tile", "consumer", warp, "acquires the next accumulator, then per "
                                 "k-block waits for the stage, copies its scale factors into TMEM, issues the MMAs "
                                 "and releases the stage by tcgen05.commit; commits the accumulator"
                                 + ("; in the odd CTA of the pair, relays each landed stage instead"
                                    if self.cta_group == 2 else "")))

    def cuda(self) -> str:
        """Both pipelines' code, the MMA's and the SF copies' functions (``<name>_mma``, ``<name>_copy_sfa``, ...)
        and the roles' functions (``functions``), each under its convention line."""
        return str(view("cuda", self))

    def explain(self) -> str:
        lines = [f"mainloop {self.name!r}: {self.operands!r} -> {self.mma!r} -> {self.accumulators!r}",
                 f"  accumulators {self.accumulators.stages} x {self.accumulator_columns} TMEM columns "
                 f"({self.accumulator!r}); TMEM allocation {self.tmem_columns} columns, cta_group::{self.cta_group}"]
        for load, modes in self.modes:
            parts = ", ".join(("the tile's n x 2 + the CTA's half" if c == "n" and self.splits(load) else
                               MODE_LETTERS[c]) for c in modes)
            lines.append(f"  load {load:<8} coordinates ({parts})")
        for which, plan in self.sf_copies:
            column, step = self.sf_column(which)
            lines.append(f"  {which}          {len(plan.instructions)} x {plan.atom.ptx} per stage into TMEM column "
                         f"{column} + stage x {step}")
        lines += [f"  {f.name:<22} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"MmaMainloop({self.name!r}, {self.operands.stages} operand stages, {self.accumulators.stages} "
                f"accumulators, {self.mma!r})")


def _column(t: TmemTensor) -> int:
    """The 32-bit column a placed TMEM tensor starts at."""
    return t.col_offset * t.bits // CELL_BITS


def _column_step(t: TmemTensor) -> int:
    """32-bit columns one step of the tensor's run-time index moves it."""
    return int(basis_get(t.dynamic[0].stride, "TCol")) * t.bits // CELL_BITS


def _check_pipelines(operands: PipelinePlan, accumulators: PipelinePlan, mma: MmaPlan) -> None:
    g = mma.atom.cta_group
    c, p = operands.consumer, accumulators.producer
    if operands.producer.kind != "tma" or c.release != "commit" or c.caller != "warp" or c.cta_group != g:
        raise PlanError(f"make_mma_mainloop: the operand pipeline is filled by TMA / bulk loads and released by the "
                        f"MMA warp's commit (Consumer('warp', 1, 'commit', cta_group={g})), not {operands!r} with "
                        f"{operands.consumer!r}")
    if operands.producer.caller != "warp":
        # the load warp waits converged: one lane waiting while the others sit at __syncwarp cost the same TMA
        # producer 5% of its rate on the H200 (docs/pipelines.md section 5)
        raise PlanError(f"make_mma_mainloop: the operand pipeline's producer is the load warp (every lane waits, one "
                        f"issues): make_pipeline(..., producer=Producer('tma', 'warp')), not {operands.producer!r}")
    if accumulators.loads or p.kind != "commit" or p.caller != "warp" or p.cta_group != g or \
            accumulators.consumer.release != "arrive":
        raise PlanError(f"make_mma_mainloop: the accumulator pipeline is filled by the MMA warp's commit "
                        f"(Producer('commit', 'warp', cta_group={g}), no loads) and released by the epilogue's "
                        f"arrivals, not {accumulators!r} with {p!r}")
    if operands.ctas != accumulators.ctas:
        raise PlanError(f"make_mma_mainloop: the operand pipeline spans {operands.ctas} CTA(s), the accumulator "
                        f"pipeline {accumulators.ctas}")


def _ring_load(operands: PipelinePlan, desc: Any, what: str) -> str:
    """The load whose ring the MMA operand ``desc`` describes (the same bytes and stage step)."""
    if not isinstance(desc, UmmaDescriptor):
        raise PlanError(f"make_mma_mainloop: the MMA's {what} is in TMEM; the mainloop's MMA reads A and B from the "
                        f"operand rings")
    if [(s.name, s.extent) for s in desc.stages] != [(STAGE_INDEX, operands.stages)]:
        raise PlanError(f"make_mma_mainloop: the MMA's {what} takes run-time indices {list(desc.stages)}; plan it "
                        f"over the pipeline's ring (pipeline.ring(load), index {STAGE_INDEX!r} of "
                        f"{operands.stages} stages)")
    for load, offset, step in operands.stage_bytes:
        if offset == desc.start_offset and step == desc.stages[0].smem_step:
            return load
    raise PlanError(f"make_mma_mainloop: the MMA's {what} ({desc.tensor!r}) is no load's ring of "
                    f"{operands!r} (rings at {[(n, o) for n, o, _ in operands.stage_bytes]})")


def _check_accumulator(accumulator: Any, accumulators: PipelinePlan, mma: MmaPlan) -> None:
    if not isinstance(accumulator, TmemTensor) or accumulator.placement is None:
        raise TypeError(f"make_mma_mainloop: the accumulator is a placed TMEM ring (TmemAllocation.add of "
                        f"make_stages(mma_accumulator(...), stages), sliced with a run-time index), got "
                        f"{accumulator!r}")
    if len(accumulator.dynamic) != 1 or accumulator.dynamic[0].extent != accumulators.stages:
        raise PlanError(f"make_mma_mainloop: the accumulator ring {accumulator!r} takes one run-time index over the "
                        f"accumulator pipeline's {accumulators.stages} stages")
    first = accumulator.at(**{accumulator.dynamic[0].name: 0})
    if first.layout != mma.dst.layout or _column(first) != mma.d_column:
        raise PlanError(f"make_mma_mainloop: the MMA writes {mma.dst!r} (column {mma.d_column}), not stage 0 of the "
                        f"accumulator ring {first!r}")


def _check_sf(sf_copies: Mapping[str, Any], operands: PipelinePlan, mma: MmaPlan) -> tuple[tuple[str, Any], ...]:
    want = {"sfa": mma.sfa, "sfb": mma.sfb}
    if set(sf_copies) != {k for k, v in want.items() if v is not None}:
        raise PlanError(f"make_mma_mainloop: the MMA reads scale factors {[k for k, v in want.items() if v]}, and "
                        f"sf_copies gives {sorted(sf_copies)}: one tcgen05.cp plan per SF operand")
    rings = {offset: step for _, offset, step in operands.stage_bytes}
    out = []
    for which in ("sfa", "sfb"):
        plan = sf_copies.get(which)
        if plan is None:
            continue
        if not isinstance(plan, Tcgen05CpPlan):
            raise TypeError(f"make_mma_mainloop: sf_copies[{which!r}] is a tcgen05.cp plan, got {plan!r}")
        start = plan.src.offset * plan.src.bits // 8
        dyn = plan.dynamic
        if len(dyn) != 1 or dyn[0].name != STAGE_INDEX or dyn[0].extent != operands.stages or \
                rings.get(start) != dyn[0].smem_step:
            raise PlanError(f"make_mma_mainloop: sf_copies[{which!r}] ({plan!r}, from shared byte {start}) copies "
                            f"no load's ring stage by stage: plan it from pipeline.ring(load, view) to a TMEM ring "
                            f"of {operands.stages} stages, both indexed by {STAGE_INDEX!r}")
        sf = want[which]
        assert sf is not None                               # the keys were checked against the MMA's SFs
        for s in range(operands.stages):
            check_scale_factor_copy(plan.at(stage=s), sf)
        out.append((which, plan))
    return tuple(out)


def _check_modes(modes: Mapping[str, str], operands: PipelinePlan) -> tuple[tuple[str, str], ...]:
    out = []
    for name, plan in operands.loads:
        if name not in modes:
            raise PlanError(f"make_mma_mainloop: modes gives no coordinates for load {name!r} (one letter per array "
                            f"mode: {', '.join(f'{k} {v}' for k, v in MODE_LETTERS.items())})")
        letters = modes[name]
        if isinstance(plan, TmaPlan) and plan.origin:
            raise PlanError(f"make_mma_mainloop: load {name!r} takes element coordinates; the mainloop passes tile "
                            f"indices (plan it with origin='tile')")
        if not isinstance(plan, (TmaPlan, BulkPlan)):
            raise PlanError(f"make_mma_mainloop: load {name!r} is {plan!r}; the mainloop's loads are TMA or bulk")
        rank = len(mode_extents(plan.gmem.layout))
        if not isinstance(letters, str) or len(letters) != rank or set(letters) - set(MODE_LETTERS) or \
                letters.count("k") != 1:
            raise PlanError(f"make_mma_mainloop: modes[{name!r}] = {letters!r}: one letter of "
                            f"{''.join(MODE_LETTERS)} per array mode ({rank}), exactly one 'k'")
        out.append((name, letters))
    extra = set(modes) - {n for n, _ in operands.loads}
    if extra:
        raise PlanError(f"make_mma_mainloop: modes names {sorted(extra)}, which the operand pipeline does not load")
    return tuple(out)


def _source_load(operands: PipelinePlan, plan: Tcgen05CpPlan) -> str:
    """The load whose ring an SF copy reads (checked to be one in ``_check_sf``)."""
    start = plan.src.offset * plan.src.bits // 8
    return next(n for n, offset, _ in operands.stage_bytes if offset == start)


def _check_roles(modes: dict[str, str], operands: dict[str, str], sfs: dict[str, str]) -> None:
    """A's load and SFA's follow the tile's m, B's and SFB's its n, and A and B are different loads."""
    if operands["A"] == operands["B"]:
        raise PlanError(f"make_mma_mainloop: the MMA reads A and B from the same load {operands['A']!r}")
    for role, load in list(operands.items()) + [(w.upper(), n) for w, n in sfs.items()]:
        letter = "m" if role in ("A", "SFA") else "n"
        if letter not in modes[load]:
            raise PlanError(f"make_mma_mainloop: the MMA reads {role} from load {load!r}, whose modes "
                            f"{modes[load]!r} do not follow the tile's {letter} ({role}'s rows are "
                            f"{'M' if letter == 'm' else 'N'}'s)")


def _check_allocation(tmem: Any, mma: MmaPlan, tensors: list) -> None:
    if not isinstance(tmem, TmemAllocation):
        raise TypeError(f"make_mma_mainloop: tmem is the TmemAllocation that placed the accumulators, got {tmem!r}")
    if tmem.cta_group != mma.atom.cta_group:
        raise PlanError(f"make_mma_mainloop: {tmem!r} is for cta_group::{tmem.cta_group}, the MMA for "
                        f"cta_group::{mma.atom.cta_group}")
    for t in tensors:
        if t.placement not in tmem.placements:
            raise PlanError(f"make_mma_mainloop: {t!r} is not placed in {tmem!r}")


def make_mma_mainloop(operands: PipelinePlan, accumulators: PipelinePlan, mma: MmaPlan, *, accumulator: TmemTensor,
                      modes: Mapping[str, str], tmem: TmemAllocation, threads: int,
                      sf_copies: Mapping[str, Tcgen05CpPlan] | None = None, name: str = "mainloop") -> MmaMainloop:
    """The mainloop of a tcgen05 GEMM from its plans: ``operands`` (loads of A, B and any SFs, released by the MMA
    warp's commit), ``accumulators`` (no loads, filled by the MMA's commit, released by the epilogue), ``mma``
    (over ``operands.ring(...)``, D stage 0 of ``accumulator``, the placed TMEM ring), ``sf_copies`` (``{"sfa":
    plan, "sfb": plan}`` for a block-scaled kind: each ``make_tiled_copy`` of a TMEM ring from its load's ring
    ``operands.ring(load, scale_factor_smem(sf))``), ``modes`` (per load, a letter per array mode:
    ``MODE_LETTERS``), the TMEM allocation ``tmem`` that places the accumulators and SF regions, and the CTA's
    ``threads``. Refuses, naming the
    values, plans that do not fit together."""
    for what, value, cls in (("operands", operands, PipelinePlan), ("accumulators", accumulators, PipelinePlan),
                             ("mma", mma, MmaPlan)):
        if not isinstance(value, cls):
            raise TypeError(f"make_mma_mainloop: {what} is a {cls.__name__}, got {type(value).__name__}")
    _check_pipelines(operands, accumulators, mma)
    a_load, b_load = _ring_load(operands, mma.a, "A"), _ring_load(operands, mma.b, "B")
    if mma.atom.cta_group == 2 and 2 * mma.b.mn != mma.shape[1]:
        raise PlanError(f"make_mma_mainloop: a pair's MMA reads N / 2 = {mma.shape[1] // 2} of B's rows from each "
                        f"CTA; load {b_load!r} fills {mma.b.mn}")
    _check_accumulator(accumulator, accumulators, mma)
    copies = _check_sf(dict(sf_copies or {}), operands, mma)
    threads = as_int(threads, "make_mma_mainloop: threads")
    if threads % WARP_THREADS or not 2 * WARP_THREADS <= threads <= _MAX_THREADS:
        raise PlanError(f"make_mma_mainloop: threads={threads}: the CTA's whole warps, a producer and an MMA warp at "
                        f"least, at most {_MAX_THREADS}")
    _check_allocation(tmem, mma, [accumulator] + [p.dst for _, p in copies])
    if not isinstance(name, str) or not name.isidentifier():
        raise PlanError(f"make_mma_mainloop: name {name!r} is not a C identifier (it prefixes the functions)")
    checked = _check_modes(modes, operands)
    _check_roles(dict(checked), {"A": a_load, "B": b_load}, {w: _source_load(operands, p) for w, p in copies})
    return MmaMainloop(name, operands, accumulators, mma, accumulator, copies, checked, b_load, tmem.columns, threads)
