"""A probe of the grouped scheduler's generated code: every CTA of a persistent grid walks its units with the
forward cursor (``<name>_start`` / ``_seek`` / ``_tile``) over the group bounds in device memory, and writes a hash
of its tiles (group, tile, first row, rows) and their count, which ``expected`` recomputes from the plan's Python
model (``GroupedScheduler.tiles_of``). Run through the PTX interpreter or on a GPU."""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..pipeline.grouped import GroupedScheduler, GroupTile

__all__ = ["GroupedProbe", "group_tile_hash"]

MULTIPLIER = 1000003


def group_tile_hash(tiles: list[GroupTile | None]) -> int:
    """The probe's hash of one CTA's tiles in order, modulo 2**64 (0 for a tile outside its group's tiles)."""
    h = 0
    for t in tiles:
        code = 0 if t is None else ((((t.group * 4096 + t.m) * 4096 + t.n) * 65536 + t.row0) * 65536 + t.rows + 1)
        h = (h * MULTIPLIER + code) % (1 << 64)
    return h


@attrs.frozen
class GroupedProbe:
    """The probe kernel ``grouped_probe(groups, count, extent, tiles_n, out)`` of ``plan``: CTA ``c`` writes
    ``out[2c]`` (the hash) and ``out[2c + 1]`` (the units it walked)."""

    plan: GroupedScheduler

    def source(self) -> str:
        n, cs = self.plan.name, self.plan.cluster_size
        return self.plan.cuda() + f"""
extern "C" __global__ void __launch_bounds__(32){f" __cluster_dims__({cs}, 1, 1)" if cs > 1 else ""}
grouped_probe(const int* groups, unsigned count, unsigned extent, unsigned tiles_n, unsigned long long* out) {{
  unsigned long long hash = 0, walked = 0;
  {n}_cursor c = {n}_start(groups, count, extent, tiles_n);
  for (unsigned u = {n}_first(); {n}_seek(c, u, groups, count, extent, tiles_n); u = {n}_next(u)) {{
    pycute_tile t;
    const bool inside = {n}_tile(u, c, t, tiles_n);
    const unsigned long long code = ((((unsigned long long)c.group * 4096ull + t.m) * 4096ull + t.n) * 65536ull
                                     + c.row0) * 65536ull + c.rows + 1ull;
    hash = hash * {MULTIPLIER}ull + (inside ? code : 0ull);
    ++walked;
  }}
  if (threadIdx.x == 0) {{
    out[2 * blockIdx.x] = hash;
    out[2 * blockIdx.x + 1] = walked;
  }}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def device_groups(self, model: GroupedScheduler) -> np.ndarray:
        """The int32 array the kernel reads: cumulative ends (offsets form) or rows per group (counts form)."""
        rows = np.array(model.group_rows or (), np.int32)
        return np.cumsum(rows, dtype=np.int32) if model.form == "offsets" else rows

    def expected(self, model: GroupedScheduler, grid: int) -> np.ndarray:
        """``(grid, 2)``: every CTA's hash and unit count from the model."""
        return np.array([(group_tile_hash(t), len(t)) for t in (model.tiles_of(c, grid) for c in range(grid))],
                        dtype=np.uint64)
