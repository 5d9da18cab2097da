"""A streaming copy whose loads are cp.async: persistent CTAs of ``threads`` threads walk the tiles of a 2-D array,
every thread copying its part of each tile into a ring of shared-memory stages with the cp.async plan's function
(each thread's copies arrive on the stage's full barrier as they land: a pipeline), and one thread storing each
landed tile with a TMA store plan and releasing the stage once the store has read it. Built only from pycute plans
and header helpers; timed with CUDA events and checked bit for bit by the caller."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..codegen.tma import emit_tma_copy
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError
from ..pipeline import Consumer, PipelinePlan, make_pipeline

__all__ = ["CpAsyncStream"]


@attrs.frozen
class CpAsyncStream:
    """Copy a 2-D array: ``load`` a cp.async plan completing by ``arrive`` and ``store`` a TMA store plan of the
    same shared tile, both with one run-time index (the stage) of extent ``stages``; ``ctas_per_sm`` persistent
    CTAs per SM."""

    load: CpAsyncPlan
    store: TmaPlan
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        if self.load.completion != "arrive" or self.store.direction != "store" or len(self.load.tile_shape) != 2:
            raise CompileError("CpAsyncStream: a cp.async plan completing by 'arrive' (each thread's copies arrive on "
                               "the stage's barrier) and a TMA store plan, 2-D")
        if len(self.load.stages) != 1 or self.load.stages != self.store.stages or self.stages < 2:
            raise CompileError("CpAsyncStream: both plans take the same one run-time index (the stage), extent >= 2")

    @property
    def stages(self) -> int:
        return self.load.stages[0].extent

    @property
    def pipeline(self) -> PipelinePlan:
        """The ring: every thread produces (cp.async arrivals), one thread consumes (the TMA store)."""
        return make_pipeline({"ld": self.load}, consumer=Consumer("elected"), name="cps")

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.load.stages[0].smem_step

    @property
    def tiles(self) -> tuple[int, ...]:
        shape = self.load.gmem.layout.shape
        return tuple(-(-n // t) for n, t in zip(shape, self.load.tile_shape))

    def source(self) -> str:
        s, t = self.stages, self.load.threads
        return (self.pipeline.cuda() + "\n" + emit_tma_copy(self.store, "st") + f"""
extern "C" __global__ void __launch_bounds__({t}) cp_async_stream(const void* src, const pycute_tensor_map* out_map,
                                                                 int tiles0, int tiles1) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[cps_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  if (threadIdx.x == 0) {{
    pycute_tensormap_acquire(out_map);
    cps_init(b);
  }}
  __syncthreads();
  const int total = tiles0 * tiles1, g0 = (int)blockIdx.x, step = (int)gridDim.x;
  const int n = total > g0 ? (total - g0 + step - 1) / step : 0;
  cps_state load = cps_producer_start(), store = cps_consumer_start(), done = cps_consumer_start();
  // iteration k: thread 0 stores tile k - {s - 1} (and releases the stage tile k - {s} held, which its store has
  // read), then every thread loads tile k into the stage that release freed
  for (int k = 0; k < n + {s - 1}; ++k) {{
    const int j = k - {s - 1};
    if (threadIdx.x == 0 && j >= 0) {{
      cps_consumer_wait(b, store);
      pycute_fence_proxy_async_shared();          // the landed cp.async writes, before the TMA store reads them
      const int g = g0 + j * step;
      st(out_map, base, g / tiles1, g % tiles1, store.index);
      store.advance();
      if (j >= 1) {{
        pycute_bulk_wait_group_read<1>();
        cps_consumer_release(b, done);
        done.advance();
      }}
    }}
    if (k < n) {{
      const int g = g0 + k * step;
      cps_ld(src, base, threadIdx.x, g / tiles1, g % tiles1, load.index, cps_producer_acquire(b, load));
      load.advance();
    }}
  }}
  if (threadIdx.x == 0) pycute_bulk_wait_group<0>();
}}
""")

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def run(self, gpu: Gpu, src: Any, dst: Any, repeats: int = 5, arch: str = "sm_90a") -> float:
        """Copy device buffer ``src`` to ``dst`` ``repeats`` times after a warm-up; the fastest run's ms."""
        gpu = check_gpu(gpu)
        tmap = gpu.upload(np.frombuffer(tensor_map_bytes(self.store.tensor_map.encode(int(dst.handle))),
                                        dtype=np.uint8))
        kernel = gpu.kernel(self.compile(arch), "cp_async_stream")
        grid, smem = gpu.multiprocessors() * self.ctas_per_sm, self.smem_bytes + 1024
        args = (src, tmap, np.int32(self.tiles[0]), np.int32(self.tiles[1]))
        gpu.launch(kernel, *args, grid=grid, block=self.load.threads, dynamic_smem=smem)
        return min(float(gpu.launch(kernel, *args, grid=grid, block=self.load.threads, dynamic_smem=smem,
                                    events=True) or 0.0) for _ in range(repeats))
