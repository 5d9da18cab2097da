"""make_bulk_copy: plan the flat bulk copies (``cp.async.bulk``) that move one tile between a global array and a
shared tile. The chunks follow the bytes: the maximal runs over which the shared address (the swizzle applied) and
the global address both advance element by element; every chunk must start 16-byte aligned on both sides and be
a whole number of 16-byte units (PTX ISA, cp.async.bulk: otherwise undefined, and nothing reports it)."""
from __future__ import annotations

import numpy as np

from ...arch.sm80.cache import CachePolicy, cache_policy
from ...arch.sm90.bulk import BULK_ALIGN, BulkDirection
from ...arch.sm90.tma import TX_LIMIT
from ...atoms.bulk import bulk_atom
from ...errors import PlanError
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import byte_runs, mode_extents, tile_elements, whole_array_modes
from ...tensor.stages import smem_stages
from ..protocol import load_or_store
from .plan import BulkChunk, BulkPlan

__all__ = ["make_bulk_copy", "check_chunks"]


def _operands(dst: object, src: object) -> tuple[BulkDirection, GlobalTensor, SmemTensor]:
    direction, gmem, smem = load_or_store(dst, src, "make_bulk_copy")
    if gmem.dtype != smem.dtype or gmem.dtype.bits % 8:
        raise PlanError(f"make_bulk_copy: a bulk copy moves whole bytes unchanged: {gmem.dtype.name} and "
                        f"{smem.dtype.name}")
    return direction, gmem, smem


def check_chunks(chunks: list[BulkChunk], who: str, sides: tuple[str, str], where: str) -> None:
    """Every chunk 16-byte aligned on both sides and a whole number of 16-byte units, else the first that is not."""
    for c in chunks:
        if c.dst % BULK_ALIGN or c.src % BULK_ALIGN or c.size % BULK_ALIGN:
            raise PlanError(f"{who}: the run of {c.size} B from {sides[0]} +{c.src} to {sides[1]} +{c.dst} is not a "
                            f"16-byte-aligned whole number of 16-byte units, which every bulk copy must be (PTX ISA, "
                            f"cp.async.bulk: undefined otherwise){where}")


def _check_array(modes: list, tile: tuple, gmem: GlobalTensor, elem: int, where: str) -> None:
    if len(tile) != len(modes):
        raise PlanError(f"make_bulk_copy: the tile has {len(tile)} modes and the array {len(modes)}{where}")
    for k, ((n, d), t) in enumerate(zip(modes, tile)):
        if n % t:
            raise PlanError(f"make_bulk_copy: array mode {k} ({n}) is not a whole number of tiles ({t}); a bulk copy "
                            f"checks no bounds (TMA and cp.async zero-fill partial tiles){where}")
        if n > t and (t * d * elem) % BULK_ALIGN:
            raise PlanError(f"make_bulk_copy: the tiles of array mode {k} start {t * d * elem} B apart, not a multiple "
                            f"of {BULK_ALIGN}, so some tile's chunks would be misaligned{where}")
    if gmem.base_align % BULK_ALIGN:
        raise PlanError(f"make_bulk_copy: the array's base is aligned to {gmem.base_align} B; bulk copies need "
                        f"{BULK_ALIGN}{where}")


def make_bulk_copy(dst: GlobalTensor | SmemTensor, src: GlobalTensor | SmemTensor,
                   cache_hint: str | CachePolicy | None = None) -> BulkPlan:
    """Plan a bulk load (``src`` a whole global array, ``dst`` the shared tile) or store (the reverse) of one tile
    as the fewest flat copies: mode ``i`` of the tile is a window of mode ``i`` of the array, the array is whole
    tiles, and the generated code takes a tile index per mode; ``cache_hint`` (``"evict_first"``, ... or a
    ``CachePolicy``) issues every chunk with that L2 policy. PlanError names the broken rule."""
    direction, gmem, smem = _operands(dst, src)
    hint = cache_policy(cache_hint, "make_bulk_copy")
    where = f"\n  global: {gmem!r}\n  shared: {smem!r}"
    elem = gmem.dtype.bits // 8
    modes = whole_array_modes(gmem, "make_bulk_copy")
    stages = smem_stages(smem, BULK_ALIGN, "make_bulk_copy")
    smem = smem.at(**{d.name: 0 for d in smem.dynamic}) if smem.dynamic else smem
    tile = mode_extents(smem.layout)
    _check_array(modes, tile, gmem, elem, where)
    coords, smem_bytes = tile_elements(smem, tuple(range(len(tile))))
    gmem_bytes = coords @ np.array([d for _, d in modes], dtype=np.int64) * elem
    if direction == "store" and np.unique(gmem_bytes).size != gmem_bytes.size:
        raise PlanError(f"make_bulk_copy: two tile elements are the same array element; a store would race{where}")
    if smem.base_align % BULK_ALIGN:
        raise PlanError(f"make_bulk_copy: the shared buffer is aligned to {smem.base_align} B; bulk copies need "
                        f"{BULK_ALIGN}{where}")
    if direction == "load":
        chunks = [BulkChunk(d, s, n) for d, s, n in byte_runs(smem_bytes, gmem_bytes, elem)]
        check_chunks(chunks, "make_bulk_copy", ("global", "shared"), where)
    else:
        chunks = [BulkChunk(d, s, n) for d, s, n in byte_runs(gmem_bytes, smem_bytes, elem)]
        check_chunks(chunks, "make_bulk_copy", ("shared", "global"), where)
    plan = BulkPlan(direction, bulk_atom(direction, hint is not None), gmem, smem, tuple(chunks), stages,
                    cache_hint=hint)
    if plan.expect_tx > TX_LIMIT:
        raise PlanError(f"make_bulk_copy: one tile is {plan.expect_tx} B; an mbarrier phase counts at most {TX_LIMIT} "
                        f"transaction bytes (split the tile){where}")
    return plan
