"""The rings of a pipeline: each load re-planned over a ring of stages it lays out in the buffer (its own origin and
map type kept), or the rings the loads already have; the stage count from the shared-memory budget."""
from __future__ import annotations

from typing import Any

import attrs

from ..arch.sm90.mbarrier import MBARRIER_BYTES
from ..arch.sm90.tma import FTZ_DATA_TYPE_CODES, L2_PROMOTIONS, OOB_FILL_NAN
from ..copy.bulk.plan import BulkPlan
from ..copy.bulk.planner import make_bulk_copy
from ..copy.cp_async.planner import make_cp_async_copy
from ..copy.dsmem.plan import DsmemPlan
from ..copy.tma.plan import TmaPlan
from ..copy.tma.planner import make_tma_copy
from ..errors import PlanError
from ..int_tuple import product
from ..tensor.region import dynamic
from ..tensor.smem import SmemTensor
from ..tensor.stages import STAGE_ALIGN, make_stages
from ..tensor.values import layout_values

__all__ = ["STAGE_INDEX", "lay_out_rings", "check_capacity", "tile_of", "tile_bytes", "stages_of", "ring_view",
           "rename_stage"]

#: The run-time index a restaged load takes the stage by (the generated code passes ``state.index``).
STAGE_INDEX = "stage"


def tile_of(plan: Any) -> SmemTensor:
    return plan.dst if isinstance(plan, DsmemPlan) else plan.smem


def stages_of(plan: Any) -> tuple:
    return plan.dst_stages if isinstance(plan, DsmemPlan) else plan.stages


def tile_bytes(tile: SmemTensor) -> int:
    """The bytes a stage's copies write: the tile's elements."""
    return product(tile.layout.shape) * tile.bits // 8


def _step(tile: SmemTensor) -> int:
    """A ring's stage step for ``tile`` (make_stages's: the footprint in whole KiB)."""
    footprint = (int(layout_values(tile.layout).max()) + 1) * tile.bits // 8
    return -(-footprint // STAGE_ALIGN) * STAGE_ALIGN


def _origin_of(plan: TmaPlan) -> Any:
    """``make_tma_copy``'s ``origin=`` that planned ``plan``: tile indices, or its element origin per array mode
    (each mode once, static or run-time), so that the staged load's function takes what the tile's did."""
    if not plan.origin:
        return "tile"
    by_mode = {o.mode: (dynamic(o.name) if o.name is not None else o.value) for o in plan.origin}
    return tuple(by_mode[m] for m in sorted(by_mode))


def _restage(name: str, plan: Any, stages: int, offset: int) -> tuple[Any, SmemTensor]:
    """``plan`` re-planned over a ring of ``stages`` copies of its tile at byte ``offset`` of the buffer, with the
    run-time index ``STAGE_INDEX``, and that staged tile."""
    tile = plan.smem
    if tile.offset:
        raise PlanError(f"make_pipeline: load {name!r}'s tile starts at element {tile.offset}; a load the pipeline "
                        f"stages is planned at the buffer's start (the pipeline places its ring)")
    ring = make_stages(tile, stages)
    ring = attrs.evolve(ring, offset=offset * 8 // tile.bits)
    rank = len(tile.layout.shape) if isinstance(tile.layout.shape, tuple) else 1
    staged = ring[(slice(None),) * rank + (dynamic(STAGE_INDEX),)]
    if isinstance(plan, TmaPlan):
        l2 = next(label for label, code in L2_PROMOTIONS.items() if code == plan.tensor_map.l2_promotion)
        out: Any = make_tma_copy(staged, plan.gmem, multicast=plan.multicast.spec if plan.multicast else None,
                                 oob_fill="nan" if plan.tensor_map.oob_fill == OOB_FILL_NAN else "zero",
                                 cta_group=2 if plan.atom.pair else 1, origin=_origin_of(plan),
                                 ftz=plan.tensor_map.data_type in FTZ_DATA_TYPE_CODES, l2_promotion=l2,
                                 cache_hint=plan.cache_hint)
        # The ring changes where the boxes land, never the map or how they are issued.
        if (out.tensor_map, out.cache_hint, out.multicast and out.multicast.spec) != \
                (plan.tensor_map, plan.cache_hint, plan.multicast and plan.multicast.spec):
            raise PlanError(f"make_pipeline: load {name!r} planned over the ring takes another tensor map, L2 policy "
                            f"or multicast than the tile's plan")
    elif isinstance(plan, BulkPlan):
        out = make_bulk_copy(staged, plan.gmem, cache_hint=plan.cache_hint)
    else:
        out = make_cp_async_copy(staged, plan.gmem, threads=plan.threads, cache=plan.atom.cache,
                                 l2_prefetch=plan.atom.l2_prefetch, completion=plan.completion)
    if len(out.instructions) != len(plan.instructions) or getattr(out, "expect_tx", 0) != getattr(plan, "expect_tx", 0):
        raise PlanError(f"make_pipeline: load {name!r} planned over the ring issues {len(out.instructions)} "
                        f"instruction(s) where the tile's plan issues {len(plan.instructions)}")
    return out, staged


def lay_out_rings(items: list[tuple[str, Any]], stages: int | None, capacity: int, reserve: int, barriers_per_stage: int,
           arch: str, start: int = 0
           ) -> tuple[list[tuple[str, Any]], int, list[tuple[str, int, int]], int, str, list[tuple[str, Any]]]:
    """The staged loads, the stage count, ``(load, offset, bytes per stage)`` per load, the rings' end from the
    buffer base, how the stage count was chosen and the rings the pipeline laid out. The rings begin ``start``
    bytes into the buffer (after another pipeline's rings); ``reserve`` counts every other byte the kernel keeps
    in shared memory."""
    staged = [bool(stages_of(p)) for _, p in items]
    if any(staged) and not all(staged):
        raise PlanError("make_pipeline: some loads take a run-time stage index and some do not: give every load "
                        "as planned for one tile (the pipeline builds the ring) or every one over its ring")
    if any(staged):
        given = _given_rings(items, stages)
        low = min(offset for _, offset, _ in given[2])
        if low < start:
            raise PlanError(f"make_pipeline: a load's ring starts at +{low} B, inside the rings of the pipelines it "
                            f"is placed after (they end at +{start} B)")
        return (*given, [])
    if any(isinstance(p, DsmemPlan) for _, p in items):
        raise PlanError("make_pipeline: a DSMEM load is given over its ring (make_dsmem_copy between staged tiles)")
    steps = [_step(p.smem) for _, p in items]
    per_stage = sum(steps) + barriers_per_stage * MBARRIER_BYTES
    held = reserve + start                      # bytes the kernel keeps besides these rings and their barriers
    if stages is None:
        stages = (capacity - held) // per_stage
        if stages < 1:
            raise PlanError(f"make_pipeline: not one stage fits: a stage takes {sum(steps)} B of rings and "
                            f"{barriers_per_stage * MBARRIER_BYTES} B of barriers, and {capacity - held} B are "
                            f"left ({capacity} B less the reserve {reserve} B"
                            + (f" and the {start} B of rings before these" if start else "") + ")")
        chosen = f"as many as fit: ({capacity} - {reserve} reserved" + (f" - {start} before" if start else "") \
            + f") // {per_stage} B per stage"
    else:
        chosen = "given"
        check_capacity(stages, start + stages * sum(steps), barriers_per_stage, reserve, capacity, arch, start)
    out, layout, rings, offset = [], [], [], start
    for (name, plan), step in zip(items, steps):
        restaged, ring = _restage(name, plan, stages, offset)
        out.append((name, restaged))
        rings.append((name, ring))
        layout.append((name, offset, step))
        offset += stages * step
    return out, stages, layout, offset, chosen, rings


def check_capacity(stages: int, ring_end: int, barriers_per_stage: int, reserve: int, capacity: int,
                    arch: str, start: int = 0) -> None:
    """The rings (ending ``ring_end`` bytes into the buffer, beginning at ``start``), their barriers and the
    ``reserve`` within ``capacity``."""
    used = ring_end + stages * barriers_per_stage * MBARRIER_BYTES + reserve
    if used > capacity:
        raise PlanError(f"make_pipeline: " + (f"{start} B of earlier rings + " if start else "")
                        + f"{stages} stages x {(ring_end - start) // stages} B + "
                        f"{stages * barriers_per_stage * MBARRIER_BYTES} B of barriers + {reserve} B reserved = {used} B, "
                        f"over {arch}'s {capacity} B of shared memory")


def _given_rings(items: list[tuple[str, Any]], stages: int | None
                 ) -> tuple[list[tuple[str, Any]], int, list[tuple[str, int, int]], int, str]:
    extents = {}
    layout, spans = [], []
    for name, plan in items:
        index = stages_of(plan)
        if len(index) != 1:
            raise PlanError(f"make_pipeline: load {name!r} takes {len(index)} run-time indices of its destination; "
                            f"a pipeline's load takes one, the stage")
        extents[name] = index[0].extent
        tile = tile_of(plan)
        start = tile.offset * tile.bits // 8
        layout.append((name, start, index[0].smem_step))
        spans.append((name, start, start + (index[0].extent - 1) * index[0].smem_step + _step(tile)))
    if len(set(extents.values())) > 1:
        raise PlanError(f"make_pipeline: the loads' rings hold different numbers of stages {extents}")
    extent = next(iter(extents.values()))
    if stages is not None and stages != extent:
        raise PlanError(f"make_pipeline: stages={stages}, but the loads' rings hold {extent} stages")
    for k, (a, lo, hi) in enumerate(spans):
        for b, lo2, hi2 in spans[k + 1:]:
            if lo < hi2 and lo2 < hi:
                raise PlanError(f"make_pipeline: load {a!r}'s ring [{lo}, {hi}) overlaps load {b!r}'s [{lo2}, {hi2})")
    return items, extent, layout, max(hi for _, _, hi in spans), "the loads' rings"


def ring_view(pipeline: str, name: str, ring: SmemTensor, tile: Any) -> SmemTensor:
    """``tile`` (a whole shared tile: offset 0, no run-time index) as the ring ``ring`` of load ``name``: the same
    stages at the same bytes, read through ``tile``'s layout -- refused unless ``tile`` holds exactly the bytes of
    one stage of the load (the same count and footprint, so the same stage step)."""
    if not isinstance(tile, SmemTensor):
        raise TypeError(f"pipeline {pipeline!r}: the view of ring {name!r} is a shared tile, got {type(tile).__name__}")
    if tile.offset or tile.dynamic:
        raise PlanError(f"pipeline {pipeline!r}: the view of ring {name!r} is a whole tile (offset 0, no run-time "
                        f"index), not {tile!r}")
    stage = ring.at(**{STAGE_INDEX: 0})
    one = attrs.evolve(stage, offset=0)
    if tile_bytes(tile) != tile_bytes(one) or _step(tile) != _step(one):
        raise PlanError(f"pipeline {pipeline!r}: {tile!r} holds {tile_bytes(tile)} B over a {_step(tile)} B stage, "
                        f"but a stage of load {name!r} holds {tile_bytes(one)} B over {_step(one)} B ({one!r})")
    start = stage.offset * stage.bits // 8
    staged = attrs.evolve(make_stages(tile, ring.dynamic[0].extent), offset=start * 8 // tile.bits)
    rank = len(tile.layout.shape) if isinstance(tile.layout.shape, tuple) else 1
    return staged[(slice(None),) * rank + (dynamic(STAGE_INDEX),)]


def rename_stage(ring: SmemTensor, name: str) -> SmemTensor:
    """``ring`` with its run-time stage index called ``name`` (a C identifier: the generated functions' parameter)."""
    new = dynamic(name).name
    if not any(d.name == STAGE_INDEX for d in ring.dynamic):
        raise PlanError(f"{ring!r} has no run-time index {STAGE_INDEX!r} to rename")
    if any(d.name == new for d in ring.dynamic):
        raise PlanError(f"{ring!r} already has a run-time index {new!r}")
    return attrs.evolve(ring, dynamic=tuple(attrs.evolve(d, name=new) if d.name == STAGE_INDEX else d
                                            for d in ring.dynamic))
