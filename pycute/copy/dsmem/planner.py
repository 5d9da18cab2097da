"""make_dsmem_copy: plan the bulk copies that move a shared tile into the same-shaped shared tile of another CTA of
the cluster. The chunks follow the bytes on both sides (each side's swizzle applied to its addresses, never the
unswizzled view) and each is checked for 16-byte alignment and size (PTX ISA, cp.async.bulk)."""
from __future__ import annotations

from ...arch.sm90.bulk import BULK_ALIGN
from ...arch.sm90.tma import TX_LIMIT
from ...atoms.bulk import bulk_atom
from ...errors import PlanError
from ...tensor.smem import SmemTensor
from ...tensor.tile import byte_runs, mode_extents, tile_elements
from ..bulk.plan import BulkChunk
from ..bulk.planner import check_chunks
from ...tensor.stages import smem_stages
from .plan import DsmemPlan

__all__ = ["make_dsmem_copy"]


def make_dsmem_copy(dst: SmemTensor, src: SmemTensor) -> DsmemPlan:
    """Plan the copy of the shared tile ``src`` (this CTA) into ``dst`` (the same CTA-local tile of a peer CTA):
    the same extent per mode, any layouts and swizzles; the fewest 16-byte-aligned chunks. PlanError names the
    broken rule."""
    if not (isinstance(dst, SmemTensor) and isinstance(src, SmemTensor)):
        raise TypeError(f"make_dsmem_copy: both tensors are shared tiles (make_smem_tensor), got "
                        f"{type(dst).__name__} <- {type(src).__name__}")
    where = f"\n  src: {src!r}\n  dst: {dst!r}"
    if src.dtype != dst.dtype or src.dtype.bits % 8:
        raise PlanError(f"make_dsmem_copy: a bulk copy moves whole bytes unchanged: {src.dtype.name} and "
                        f"{dst.dtype.name}{where}")
    names = {d.name for d in src.dynamic} & {d.name for d in dst.dynamic}
    if names:
        raise PlanError(f"make_dsmem_copy: run-time index {', '.join(sorted(names))} names both tiles; give each "
                        f"its own name{where}")
    src_stages, dst_stages = (smem_stages(t, BULK_ALIGN, "make_dsmem_copy") for t in (src, dst))
    src, dst = (t.at(**{d.name: 0 for d in t.dynamic}) if t.dynamic else t for t in (src, dst))
    tile = mode_extents(src.layout)
    if mode_extents(dst.layout) != tile:
        raise PlanError(f"make_dsmem_copy: the tiles' extents differ ({tile} and {mode_extents(dst.layout)}); mode i "
                        f"of one is mode i of the other{where}")
    order = tuple(range(len(tile)))
    _, src_bytes = tile_elements(src, order)
    _, dst_bytes = tile_elements(dst, order)
    for t in (src, dst):
        if t.base_align % BULK_ALIGN:
            raise PlanError(f"make_dsmem_copy: a buffer aligned to {t.base_align} B; bulk copies need "
                            f"{BULK_ALIGN}{where}")
    chunks = [BulkChunk(d, s, n) for d, s, n in byte_runs(dst_bytes, src_bytes, src.bits // 8)]
    check_chunks(chunks, "make_dsmem_copy", ("shared", "the peer's shared"), where)
    plan = DsmemPlan(bulk_atom("dsmem"), src, dst, tuple(chunks), src_stages, dst_stages)
    if plan.expect_tx > TX_LIMIT:
        raise PlanError(f"make_dsmem_copy: the tile is {plan.expect_tx} B; an mbarrier phase counts at most "
                        f"{TX_LIMIT} transaction bytes (split the tile){where}")
    return plan
