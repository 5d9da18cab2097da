"""cp.async, bulk and DSMEM plans in the emulator against the two layouts alone: after the copy (and only after its
completion: a cp.async lands at its thread's wait), each tile element of the destination holds the source's
element at the same coordinate (a cp.async element outside the array: zeros), every other byte is untouched, and
an mbarrier receives what the plan says."""
from __future__ import annotations

import numpy as np

from ..arch.sm80.cp_async import MIN_SOURCE_WINDOW
from ..atoms.cp_async import CpAsyncResidue
from ..copy.bulk.plan import BulkPlan
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.dsmem.plan import DsmemPlan
from ..errors import EmulationError
from ..tensor.tile import tile_elements
from ..tensor.values import smem_bytes_needed
from .emulator import Sm90Emulator

__all__ = ["verify_cp_async", "verify_bulk", "verify_dsmem"]

_MARKER = 0xA5


def _compare(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if not np.array_equal(got, want):
        k = int(np.argwhere(got != want)[0][0])
        raise EmulationError(f"{what}: byte {k} is {got[k]:#04x}, the layouts say {want[k]:#04x} "
                             f"({int((got != want).sum())} bytes differ)")


def _cp_async_tiles(plan: CpAsyncPlan) -> list[tuple[int, ...]]:
    last = tuple(-(-n // t) - 1 for (n, _), t in zip(plan.array_modes, plan.tile_shape))
    return [tuple(0 for _ in last), last, tuple(x + 1 for x in last)]


def _array_bytes(modes: list, elem: int) -> int:
    return (sum((n - 1) * d for n, d in modes) + 1) * elem


def _cp_async_once(plan: CpAsyncPlan, tile: tuple, rng: np.random.Generator, values: dict) -> None:
    elem = plan.elem_bytes
    nbytes = smem_bytes_needed(plan.smem) + sum((s.extent - 1) * s.smem_step for s in plan.stages)
    gmem = rng.integers(0, 256, _array_bytes(plan.array_modes, elem), dtype=np.uint8)
    emu = Sm90Emulator(smem_bytes=nbytes)
    emu.write_smem(0, np.full(nbytes, _MARKER, dtype=np.uint8))
    early = np.full(nbytes, _MARKER, dtype=np.uint8)          # only a residue's generic stores land before the wait
    for t in range(plan.threads):
        for issue in plan.stream(0, *tile, thread=t, **values):
            emu.cp_async(gmem, issue, thread=t)
            if isinstance(issue, CpAsyncResidue):
                early[issue.smem:issue.smem + MIN_SOURCE_WINDOW] = 0
                early[issue.smem:issue.smem + issue.src_size] = gmem[issue.gmem:issue.gmem + issue.src_size]
        if plan.completion == "group":
            emu.cp_async_commit(thread=t)
    _compare(emu.ctas[0].smem, early, f"tile {tile} before the wait")
    for t in range(plan.threads):
        if plan.completion == "group":
            emu.cp_async_wait(0, thread=t)
        else:
            emu.cp_async_arrive_noinc(0, thread=t)
    if plan.completion == "arrive" and emu.ctas[0].arrivals.get(0) != plan.arrivals:
        raise EmulationError(f"tile {tile}: the mbarrier received {emu.ctas[0].arrivals.get(0)} arrivals, the plan "
                             f"says {plan.arrivals}")
    want = np.full(nbytes, _MARKER, dtype=np.uint8)
    coords, smem = tile_elements(plan.smem, plan.order)
    smem = smem + sum(v * s.smem_step for s, v in zip(plan.stages, (values[s.name] for s in plan.stages)))
    for c, s in zip(coords, smem):
        g = [t * n + x for t, n, x in zip(tile, plan.tile_shape, c)]
        inside = all(0 <= x < n for x, (n, _) in zip(g, plan.array_modes))
        off = sum(x * d for x, (_, d) in zip(g, plan.array_modes)) * elem
        want[s:s + elem] = gmem[off:off + elem] if inside else 0
    _compare(emu.ctas[0].smem, want, f"tile {tile}, shared memory")


def verify_cp_async(plan: CpAsyncPlan, seed: int = 0) -> None:
    """Emulate every thread of a cp.async plan for its first, last and past-the-end tiles (the first and last
    value of each run-time index) and compare with the layouts; raises EmulationError at the first difference, or
    at a copy whose source window leaves the array (the emulator's array is exactly the array's bytes)."""
    if not isinstance(plan, CpAsyncPlan):
        raise TypeError(f"verify_cp_async: expected a CpAsyncPlan (make_cp_async_copy), got {type(plan).__name__}")
    rng = np.random.default_rng(seed)
    for values in ({s.name: 0 for s in plan.stages}, {s.name: s.extent - 1 for s in plan.stages}):
        for tile in _cp_async_tiles(plan):
            _cp_async_once(plan, tile, rng, values)


def verify_bulk(plan: BulkPlan, seed: int = 0) -> None:
    """Emulate a bulk plan for its first and last tiles and compare with the layouts; EmulationError names the
    first difference."""
    if not isinstance(plan, BulkPlan):
        raise TypeError(f"verify_bulk: expected a BulkPlan (make_bulk_copy), got {type(plan).__name__}")
    rng = np.random.default_rng(seed)
    elem, modes = plan.elem_bytes, plan.array_modes
    nbytes = smem_bytes_needed(plan.smem) + sum((s.extent - 1) * s.smem_step for s in plan.stages)
    coords, smem = tile_elements(plan.smem, tuple(range(len(modes))))
    for tile in (tuple(0 for _ in modes), tuple(n - 1 for n in plan.tiles)):
        values = {s.name: s.extent - 1 for s in plan.stages}
        shift = sum((s.extent - 1) * s.smem_step for s in plan.stages)
        gmem = rng.integers(0, 256, _array_bytes(modes, elem), dtype=np.uint8)
        image = rng.integers(0, 256, nbytes, dtype=np.uint8)
        emu = Sm90Emulator(smem_bytes=nbytes)
        emu.write_smem(0, image)
        want_smem, want_gmem = image.copy(), gmem.copy()
        for c, s in zip(coords, smem + shift):
            off = sum((t * n + x) * d for t, n, x, (_, d) in zip(tile, plan.tile_shape, c, modes)) * elem
            want_smem[s:s + elem] = gmem[off:off + elem]
            want_gmem[off:off + elem] = image[s:s + elem]
        received = 0
        for issue in plan.stream(0, *tile, **values):
            if plan.direction == "load":
                received += emu.bulk_load(gmem, issue)
            else:
                emu.bulk_store(gmem, issue)
        if plan.direction == "load":
            _compare(emu.ctas[0].smem, want_smem, f"tile {tile}, shared memory")
            if received != plan.expect_tx:
                raise EmulationError(f"tile {tile}: the mbarrier receives {received} B, the plan expects "
                                     f"{plan.expect_tx} B")
        else:
            _compare(gmem, want_gmem, f"tile {tile}, the array")


def verify_dsmem(plan: DsmemPlan, seed: int = 0) -> None:
    """Emulate a DSMEM plan from CTA 0 into CTA 1 and compare CTA 1's shared memory with the layouts."""
    if not isinstance(plan, DsmemPlan):
        raise TypeError(f"verify_dsmem: expected a DsmemPlan (make_dsmem_copy), got {type(plan).__name__}")
    rng = np.random.default_rng(seed)
    values = {s.name: s.extent - 1 for s in plan.stages}
    order = tuple(range(len(plan.src.layout.shape) if isinstance(plan.src.layout.shape, tuple) else 1))
    _, src = tile_elements(plan.src, order)
    _, dst = tile_elements(plan.dst, order)
    src = src + sum((s.extent - 1) * s.smem_step for s in plan.src_stages)
    dst = dst + sum((s.extent - 1) * s.smem_step for s in plan.dst_stages)
    nbytes = max(smem_bytes_needed(plan.src) + int(src.max()), smem_bytes_needed(plan.dst) + int(dst.max()))
    emu = Sm90Emulator(smem_bytes=nbytes, ctas=2)
    images = [rng.integers(0, 256, nbytes, dtype=np.uint8) for _ in range(2)]
    for cta, image in enumerate(images):
        emu.write_smem(0, image, cta=cta)
    received = sum(emu.dsmem_copy(issue, cta=0) for issue in plan.stream(0, 0, peer=1, cta=0, **values))
    want = images[1].copy()
    elem = plan.src.bits // 8
    for s, d in zip(src, dst):
        want[d:d + elem] = images[0][s:s + elem]
    _compare(emu.ctas[1].smem, want, "the peer's shared memory")
    _compare(emu.ctas[0].smem, images[0], "the sender's shared memory")
    if received != plan.expect_tx:
        raise EmulationError(f"the peer's mbarrier receives {received} B, the plan expects {plan.expect_tx} B")
