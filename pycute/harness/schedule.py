"""A probe of a static tile scheduler's generated code: every CTA of a persistent grid walks its work units with
``<name>_first`` / ``_next`` / ``_tile`` and writes a hash of its tile list and their count, which ``expected``
recomputes from the plan's Python model (``TileScheduler.tiles_of``). Run on a GPU, or through the PTX
interpreter one CTA at a time."""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..pipeline.scheduler import TileScheduler

__all__ = ["ScheduleProbe", "tile_hash"]

#: The hash's multiplier: each tile (or an edge block's missing one, 0) folded in as ``h * MULTIPLIER + code``.
MULTIPLIER = 1000003


def tile_hash(tiles: list) -> int:
    """The probe's hash of one CTA's tiles, in order, modulo 2**64 (``m * 65536 + n + 1`` per tile, 0 for none)."""
    h = 0
    for t in tiles:
        h = (h * MULTIPLIER + (0 if t is None else t[0] * 65536 + t[1] + 1)) % (1 << 64)
    return h


@attrs.frozen
class ScheduleProbe:
    """The probe kernel ``schedule_probe(unsigned long long* out)`` of ``plan``: CTA ``c`` writes ``out[2c]`` (the
    hash) and ``out[2c + 1]`` (the work units it walked)."""

    plan: TileScheduler
    tiles: tuple[int, int] | None = None     # a run-time scheduler's problem (the kernel's arguments)

    @property
    def model(self) -> TileScheduler:
        """The plan over the probe's tiles (a run-time scheduler modelled ``at`` them)."""
        return self.plan.at(self.tiles) if self.plan.runtime and self.tiles is not None else self.plan

    def source(self) -> str:
        cs = self.plan.cluster_size
        n = self.plan.name
        counts, args = ((", unsigned tiles_m, unsigned tiles_n", ", tiles_m, tiles_n") if self.plan.runtime
                        else ("", ""))
        units = f"{n}_units(tiles_m, tiles_n)" if self.plan.runtime else f"{n}_units"
        return self.plan.cuda() + f"""
extern "C" __global__ void __launch_bounds__(32){f" __cluster_dims__({cs}, 1, 1)" if cs > 1 else ""}
schedule_probe(unsigned long long* out{counts}) {{
  unsigned long long hash = 0, count = 0;
  for (unsigned w = {n}_first(); w < {units}; w = {n}_next(w)) {{
    pycute_tile t;
    const bool inside = {n}_tile(w, t{args});
    hash = hash * {MULTIPLIER}ull + (inside ? (unsigned long long)(t.m * 65536 + t.n + 1) : 0ull);
    ++count;
  }}
  if (threadIdx.x == 0) {{
    out[2 * blockIdx.x] = hash;
    out[2 * blockIdx.x + 1] = count;
  }}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def expected(self, grid: int) -> np.ndarray:
        """``(grid, 2)``: every CTA's hash and count from the plan's model."""
        return np.array([(tile_hash(t), len(t)) for t in (self.model.tiles_of(c, grid) for c in range(grid))],
                        dtype=np.uint64)

    def run(self, gpu: Gpu, ctas_per_sm: int = 1, arch: str = "sm_90a") -> tuple[np.ndarray, np.ndarray]:
        """``(what the CTAs wrote, expected)`` for the grid ``plan.grid(SMs, ctas_per_sm)``."""
        gpu = check_gpu(gpu)
        grid = self.model.grid(gpu.multiprocessors(), ctas_per_sm)
        out = gpu.upload(np.zeros(2 * grid, dtype=np.uint64))
        counts = tuple(np.uint32(t) for t in self.tiles) if self.plan.runtime and self.tiles else ()
        gpu.launch(gpu.kernel(self.compile(arch), "schedule_probe"), out, *counts, grid=grid, block=32)
        return gpu.download(out, np.uint64, 2 * grid).reshape(grid, 2), self.expected(grid)
