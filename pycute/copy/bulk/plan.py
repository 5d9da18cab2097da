"""The result of make_bulk_copy (and, between two CTAs' shared memories, of make_dsmem_copy): the chunks, each one
instruction, with their byte offsets on both sides and sizes, and the bytes a receiving mbarrier must expect."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ...arch.convention import Convention
from ...arch.sm80.cache import CachePolicy
from ...arch.sm90.bulk import BulkDirection
from ...atoms.bulk import BulkAtom, BulkIssue
from ...errors import PlanError
from ...int_tuple import as_int
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...views import view
from ..protocol import ArrayTilePlan, Rejection
from ...tensor.stages import SmemStage, stage_offset

__all__ = ["BulkChunk", "BulkPlan", "chunk_lines"]


@attrs.frozen
class BulkChunk:
    """One instruction: ``size`` bytes from ``src`` to ``dst`` (byte offsets from each side's buffer base, or for
    global memory from the tile's origin)."""

    dst: int
    src: int
    size: int


def chunk_lines(chunks: tuple[BulkChunk, ...], src: str, dst: str) -> list[str]:
    lines = [f"    {src} +{c.src:<8} -> {dst} +{c.dst:<8} {c.size} B" for c in chunks[:16]]
    return lines + ([f"    ... {len(chunks) - 16} more"] if len(chunks) > 16 else [])


@attrs.frozen(repr=False)
class BulkPlan(ArrayTilePlan):
    """A validated bulk copy of one tile between a global array and a shared tile: ``load`` (each chunk completes
    on the caller's mbarrier, which must expect ``expect_tx`` bytes) or ``store`` (one bulk group)."""

    direction: BulkDirection
    atom: BulkAtom
    gmem: GlobalTensor
    smem: SmemTensor
    instructions: tuple[BulkChunk, ...]
    stages: tuple[SmemStage, ...] = ()
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)
    cache_hint: CachePolicy | None = None    # the L2 policy every chunk is issued with (.L2::cache_hint)

    VARIANT: ClassVar[str] = "bulk"

    @property
    def completion(self) -> str:
        """``expect_tx`` for a load (the mbarrier counts its bytes), ``group`` for a store."""
        return "expect_tx" if self.direction == "load" else "group"


    @property
    def tiles(self) -> tuple[int, ...]:
        """Tiles per array mode (the tile index of mode i is in [0, tiles[i]))."""
        return tuple(n // t for (n, _), t in zip(self.array_modes, self.tile_shape))

    @property
    def expect_tx(self) -> int:
        """Bytes a load delivers to its mbarrier."""
        return sum(c.size for c in self.instructions) if self.direction == "load" else 0

    @property
    def lower_bound(self) -> int:
        """Fewest instructions: one, when the tile is one contiguous run on both sides."""
        return 1

    def origin(self, tile: tuple[int, ...]) -> int:
        """The tile's global byte offset from the array's base (every index in range: a bulk copy checks no
        bounds)."""
        if len(tile) != len(self.tile_shape):
            raise PlanError(f"the tile index has {len(tile)} entries; the array has {len(self.tile_shape)} modes")
        out = 0
        for k, (t, n, (_, d)) in enumerate(zip(tile, self.tiles, self.array_modes)):
            t = as_int(t, f"tile index of mode {k}")
            if not 0 <= t < n:
                raise PlanError(f"tile index {t} of mode {k} is outside [0, {n}): a bulk copy checks no bounds")
            out += t * self.tile_shape[k] * d
        return out * self.elem_bytes

    def stream(self, smem_base: int, *tile: int, **values: int) -> list[BulkIssue]:
        """``BulkIssue(ptx, dst, src, size)`` per chunk for the buffer at shared address ``smem_base`` and tile
        index ``tile`` (global addresses as byte offsets from the array's base)."""
        smem_base = self.smem_base(smem_base)
        g, s = self.origin(tile), smem_base + stage_offset(self.stages, values, "bulk plan: ")
        return [BulkIssue(self.atom.ptx, (s if self.direction == "load" else g) + c.dst,
                          (g if self.direction == "load" else s) + c.src, c.size, None, self.cache_hint)
                for c in self.instructions]

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: one elected thread."""
        return Convention("elected", 1)

    def cuda(self, name: str = "pycute_bulk_copy") -> str:
        """A ``__device__`` function one (elected) thread calls: ``name(const void* gmem, unsigned smem, unsigned
        mbar, int t0, ...)`` for a load, ``name(void* gmem, unsigned smem, int t0, ...)`` for a store."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the chunks for the first and last tiles and compare with the layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        n = len(self.instructions)
        sides = ("global", "shared") if self.direction == "load" else ("shared", "global")
        lines = [f"bulk {self.direction} plan: {self.src!r} -> {self.dst!r}",
                 f"  instruction {self.atom.ptx}",
                 f"  count       {n} chunk{'s' if n != 1 else ''} (16-byte aligned runs, whole 16-byte units); "
                 f"lower bound {self.lower_bound}",
                 "  completion  " + (f"the mbarrier expects {self.expect_tx} B per tile" if self.direction == "load"
                                      else "one bulk group (commit, then wait_group.read / wait_group)"),
                 f"  tiles       {self.tiles} per mode (no bounds check: the array is whole tiles)"]
        if self.cache_hint is not None:
            lines.append(f"  cache hint  .L2::cache_hint with createpolicy {self.cache_hint}")
        lines += [f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B shared memory" for s in self.stages]
        return "\n".join(lines + ["  chunks:"] + chunk_lines(self.instructions, *sides))

    def __repr__(self) -> str:
        return f"BulkPlan({self.direction}, {len(self.instructions)} chunks, {sum(c.size for c in self.instructions)} B)"
