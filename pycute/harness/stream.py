"""A streaming copy built only from pycute plans: persistent CTAs walk the tiles of a 2-D array, loading each with
a TMA load plan into a ring of shared-memory stages (a pipeline: a full and an empty mbarrier per stage) and
storing it with the matching TMA store plan; one elected thread per CTA issues everything, and releases a stage
once the store that read it has. Timed with CUDA events beside the driver's device-to-device memcpy of the same
bytes, and checked bit for bit."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tma.plan import TmaPlan
from ..copy.tma.planner import make_tma_copy
from ..errors import CompileError
from ..pipeline import Consumer, PipelinePlan, make_pipeline

__all__ = ["TmaStream"]


@attrs.frozen
class TmaStream:
    """Copy a 2-D array tile by tile: ``load`` / ``store`` plans of one tile, ``stages`` shared buffers per CTA
    (at least two: a stage is refilled once the next tile's store is under way), ``ctas_per_sm`` persistent CTAs
    per SM."""

    load: TmaPlan
    store: TmaPlan
    stages: int = 4
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        if self.load.direction != "load" or self.store.direction != "store" or self.load.smem != self.store.smem:
            raise CompileError("TmaStream: a load plan and a store plan of the same shared tile")
        if len(self.load.tile_shape) != 2:
            raise CompileError("TmaStream: a 2-D array")
        if self.stages < 2:
            raise CompileError(f"TmaStream: stages={self.stages}: at least 2 (a stage is refilled while the next "
                               f"tile's store runs)")

    @property
    def pipeline(self) -> PipelinePlan:
        """The ring: the load over ``stages`` stages, one elected thread producing and consuming."""
        return make_pipeline({"ld": self.load}, consumer=Consumer("elected"), stages=self.stages, name="stream")

    @property
    def tile_bytes(self) -> int:
        """Bytes of one stage (the tile, rounded to the 1024-byte swizzle repeat)."""
        return self.pipeline.stage_bytes[0][2]

    @property
    def tiles(self) -> tuple[int, int]:
        shape = self.load.gmem.layout.shape
        rows, cols = (-(-n // t) for n, t in zip(shape, self.load.tile_shape))
        return rows, cols

    def source(self) -> str:
        pipe = self.pipeline
        store = make_tma_copy(self.store.gmem, pipe.ring("ld"))
        return pipe.cuda() + "\n" + store.cuda("stream_st").replace('#include "pycute/tma.cuh"\n', "") + """
extern "C" __global__ void __launch_bounds__(32) tma_stream(const pycute_tensor_map* in_map,
                                                             const pycute_tensor_map* out_map, int tiles0, int tiles1) {
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[stream_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  if (threadIdx.x != 0) return;                     // one thread issues every copy of the CTA
  pycute_tensormap_acquire(in_map);
  pycute_tensormap_acquire(out_map);
  stream_init(b);
  const int total = tiles0 * tiles1, g0 = (int)blockIdx.x, step = (int)gridDim.x;
  const int n = total > g0 ? (total - g0 + step - 1) / step : 0;
  stream_state load = stream_producer_start(), store = stream_consumer_start(), done = stream_consumer_start();
  for (int k = 0; k < n && k < (int)stream_stages; ++k, load.advance()) {
    const int g = g0 + k * step;
    stream_ld(in_map, base, stream_producer_acquire(b, load), g / tiles1, g % tiles1, load.index);
  }
  for (int k = 0; k < n; ++k, store.advance()) {
    stream_consumer_wait(b, store);
    const int g = g0 + k * step;
    stream_st(out_map, base, g / tiles1, g % tiles1, store.index);
    if (k >= 1) {                                   // tile k - 1's store has read its stage: release and refill it
      pycute_bulk_wait_group_read<1>();
      stream_consumer_release(b, done);
      done.advance();
      if (k - 1 + (int)stream_stages < n) {
        const int f = g0 + (k - 1 + (int)stream_stages) * step;
        stream_ld(in_map, base, stream_producer_acquire(b, load), f / tiles1, f % tiles1, load.index);
        load.advance();
      }
    }
  }
  pycute_bulk_wait_group<0>();
}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def run(self, gpu: Gpu, src: Any, dst: Any, repeats: int = 5, arch: str = "sm_90a") -> float:
        """Copy device buffer ``src`` to ``dst`` (the arrays the plans describe) ``repeats`` times after a warm-up;
        the fastest run's milliseconds."""
        gpu = check_gpu(gpu)
        maps = [gpu.upload(np.frombuffer(tensor_map_bytes(p.tensor_map.encode(int(b.handle))), dtype=np.uint8))
                for p, b in ((self.load, src), (self.store, dst))]
        kernel = gpu.kernel(self.compile(arch), "tma_stream")
        sms = gpu.multiprocessors()
        t0, t1 = self.tiles
        args = (maps[0], maps[1], np.int32(t0), np.int32(t1))
        grid, smem = sms * self.ctas_per_sm, self.stages * self.tile_bytes + 1024
        gpu.launch(kernel, *args, grid=grid, block=32, dynamic_smem=smem)
        return min(float(gpu.launch(kernel, *args, grid=grid, block=32, dynamic_smem=smem, events=True) or 0.0)
                   for _ in range(repeats))
