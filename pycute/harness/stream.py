"""A streaming copy built only from pycute plans and header helpers: persistent CTAs walk the tiles of a 2-D array,
loading each with a TMA load plan into a ring of shared-memory stages (one mbarrier per stage) and storing it with
the matching TMA store plan; one elected thread per CTA issues everything. Timed with CUDA events beside the
driver's device-to-device memcpy of the same bytes, and checked bit for bit."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..codegen.tma import emit_tma_copy
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError

__all__ = ["TmaStream"]


@attrs.frozen
class TmaStream:
    """Copy a 2-D array tile by tile: ``load`` / ``store`` plans of one tile, ``stages`` shared buffers per CTA,
    ``ctas_per_sm`` persistent CTAs per SM."""

    load: TmaPlan
    store: TmaPlan
    stages: int = 4
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        if self.load.direction != "load" or self.store.direction != "store" or self.load.smem != self.store.smem:
            raise CompileError("TmaStream: a load plan and a store plan of the same shared tile")
        if len(self.load.tile_shape) != 2:
            raise CompileError("TmaStream: a 2-D array")

    @property
    def tile_bytes(self) -> int:
        """Bytes of one stage (the tile, rounded to the 1024-byte swizzle repeat)."""
        return -(-self.load.expect_tx // 1024) * 1024

    @property
    def tiles(self) -> tuple[int, int]:
        shape = self.load.gmem.layout.shape
        rows, cols = (-(-n // t) for n, t in zip(shape, self.load.tile_shape))
        return rows, cols

    def source(self) -> str:
        s = self.stages
        return (emit_tma_copy(self.load, "stream_ld") +
                emit_tma_copy(self.store, "stream_st").replace('#include "pycute/tma.cuh"\n', "") + f"""
__device__ __forceinline__ void stream_issue_load(const void* map, unsigned base, unsigned full, int k, int tiles1) {{
  pycute_mbarrier_arrive_expect_tx(full, stream_ld_expect_tx);
  stream_ld(map, base, full, k / tiles1, k % tiles1);
}}

extern "C" __global__ void __launch_bounds__(32) tma_stream(const pycute_tensor_map* in_map,
                                                             const pycute_tensor_map* out_map, int tiles0, int tiles1) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[{s}];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  if (threadIdx.x != 0) return;                     // one thread issues every copy of the CTA
  pycute_tensormap_acquire(in_map);
  pycute_tensormap_acquire(out_map);
  for (int i = 0; i < {s}; ++i) pycute_mbarrier_init(pycute_smem_address(&full[i]), 1);
  const int total = tiles0 * tiles1;
  const int n = total > (int)blockIdx.x ? (total - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x : 0;
  for (int k = 0; k < n && k < {s}; ++k)
    stream_issue_load(in_map, base + k * {self.tile_bytes}u, pycute_smem_address(&full[k]),
                      (int)blockIdx.x + k * (int)gridDim.x, tiles1);
  for (int k = 0; k < n; ++k) {{
    const int st = k % {s};
    pycute_mbarrier_wait_parity(pycute_smem_address(&full[st]), (k / {s}) & 1);
    const int g = (int)blockIdx.x + k * (int)gridDim.x;
    stream_st(out_map, base + st * {self.tile_bytes}u, g / tiles1, g % tiles1);
    if (k >= 1 && k - 1 + {s} < n) {{                // refill the stage tile k-1 used once its store has read it
      pycute_bulk_wait_group_read<1>();
      const int prev = (k - 1) % {s};
      stream_issue_load(in_map, base + prev * {self.tile_bytes}u, pycute_smem_address(&full[prev]),
                        (int)blockIdx.x + (k - 1 + {s}) * (int)gridDim.x, tiles1);
    }}
  }}
  pycute_bulk_wait_group<0>();
}}
""")

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
