"""A streaming copy whose loads are cp.async: persistent CTAs of ``threads`` threads walk the tiles of a 2-D array,
every thread copying its part of each tile into a ring of shared-memory stages with the cp.async plan's function
(one group per tile), and one thread storing each landed tile with a TMA store plan. Built only from pycute plans
and header helpers; timed with CUDA events and checked bit for bit by the caller."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..codegen.cp_async import emit_cp_async_copy
from ..codegen.tma import emit_tma_copy
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError

__all__ = ["CpAsyncStream"]


@attrs.frozen
class CpAsyncStream:
    """Copy a 2-D array: ``load`` a cp.async plan and ``store`` a TMA store plan of the same shared tile, both with
    one run-time index (the stage) of extent ``stages``; ``ctas_per_sm`` persistent CTAs per SM."""

    load: CpAsyncPlan
    store: TmaPlan
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        if self.load.completion != "group" or self.store.direction != "store" or len(self.load.tile_shape) != 2:
            raise CompileError("CpAsyncStream: a cp.async plan completing in groups and a TMA store plan, 2-D")
        if len(self.load.stages) != 1 or self.load.stages != self.store.stages or self.stages < 2:
            raise CompileError("CpAsyncStream: both plans take the same one run-time index (the stage), extent >= 2")

    @property
    def stages(self) -> int:
        return self.load.stages[0].extent

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.load.stages[0].smem_step

    @property
    def tiles(self) -> tuple[int, int]:
        shape = self.load.gmem.layout.shape
        return tuple(-(-n // t) for n, t in zip(shape, self.load.tile_shape))

    def source(self) -> str:
        s, t = self.stages, self.load.threads
        return (emit_cp_async_copy(self.load, "ld") + "\n" + emit_tma_copy(self.store, "st") + f"""
__device__ __forceinline__ void stream_load(const void* src, unsigned base, int g, int tiles1, int n, int k) {{
  if (k < n) ld(src, base, threadIdx.x, g / tiles1, g % tiles1, (unsigned)(k % {s}));
  else pycute_cp_async_commit_group();            // an empty group keeps every thread's group count in step
}}

extern "C" __global__ void __launch_bounds__({t}) cp_async_stream(const void* src, const pycute_tensor_map* out_map,
                                                                 int tiles0, int tiles1) {{
  extern __shared__ unsigned char raw[];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  if (threadIdx.x == 0) pycute_tensormap_acquire(out_map);
  const int total = tiles0 * tiles1;
  const int n = total > (int)blockIdx.x ? (total - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x : 0;
  for (int k = 0; k < {s - 1}; ++k) stream_load(src, base, (int)blockIdx.x + k * (int)gridDim.x, tiles1, n, k);
  for (int k = 0; k < n; ++k) {{
    pycute_cp_async_wait_group<{s - 2}>();       // this thread's part of tile k has landed
    pycute_fence_proxy_async_shared();            // its writes, before the TMA store (async proxy) reads them
    __syncthreads();
    if (threadIdx.x == 0) {{
      const int g = (int)blockIdx.x + k * (int)gridDim.x;
      st(out_map, base, g / tiles1, g % tiles1, (unsigned)(k % {s}));
      pycute_bulk_wait_group_read<1>();           // tile k - 1's store has read its stage: refill it
    }}
    __syncthreads();
    stream_load(src, base, (int)blockIdx.x + (k + {s - 1}) * (int)gridDim.x, tiles1, n, k + {s - 1});
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
