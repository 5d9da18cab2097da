"""A load-only stream built from a TMA load plan and a pipeline: persistent CTAs walk the tiles of a 2-D array, one
producer thread loads each into a ring of stages, and four consumer warps read every word and fold it into a
position-weighted checksum, then release the stage (one arrival per warp). The checksum (sum of ``word ^ index``
over the array) proves every word arrived at its place."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tma.plan import TmaPlan
from ..errors import CompileError
from ..pipeline import Consumer, PipelinePlan, make_pipeline

__all__ = ["TmaLoadStream", "position_checksum"]

CONSUMERS = 128


def position_checksum(words: np.ndarray) -> int:
    """The kernel's checksum of a uint32 array: the sum of ``word ^ index`` modulo 2**64."""
    index = np.arange(words.size, dtype=np.uint64)
    return int(np.sum(words.astype(np.uint64) ^ index, dtype=np.uint64))


@attrs.frozen
class TmaLoadStream:
    """Read a 2-D 4-byte-element array tile by tile with ``load`` (a plain row-major shared tile), ``stages``
    buffers per CTA, ``ctas_per_sm`` persistent CTAs per SM."""

    load: TmaPlan
    stages: int = 4
    ctas_per_sm: int = 1

    def __attrs_post_init__(self) -> None:
        if self.load.direction != "load" or len(self.load.tile_shape) != 2 or self.load.elem_bytes != 4:
            raise CompileError("TmaLoadStream: a TMA load plan of a 2-D array of 4-byte elements")
        rows, cols = self.load.tile_shape
        if self.load.smem.swizzle is not None or self.load.smem.layout(0, 1) != 1 or self.load.smem.layout(1, 0) != cols:
            raise CompileError("TmaLoadStream: the shared tile is plain row-major (the consumers read it in order)")

    @property
    def pipeline(self) -> PipelinePlan:
        """The ring: the load over ``stages`` stages, one producer thread, four consumer warps."""
        return make_pipeline({"ld": self.load}, consumer=Consumer("warp", CONSUMERS // 32), stages=self.stages,
                             name="feed")

    @property
    def tile_bytes(self) -> int:
        return self.pipeline.stage_bytes[0][2]

    @property
    def tiles(self) -> tuple[int, ...]:
        shape = self.load.gmem.layout.shape
        return tuple(-(-n // t) for n, t in zip(shape, self.load.tile_shape))

    def source(self) -> str:
        rows, cols = self.load.tile_shape
        width = self.load.gmem.layout.shape[1]
        return self.pipeline.cuda() + f"""
extern "C" __global__ void __launch_bounds__({CONSUMERS + 32}) tma_load_stream(const pycute_tensor_map* map,
                                                                              unsigned long long* checksum,
                                                                              int tiles0, int tiles1) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[feed_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned* words = reinterpret_cast<const unsigned*>(raw + (base - pycute_smem_address(raw)));
  if (threadIdx.x == 0) feed_init(b);
  __syncthreads();
  const int total = tiles0 * tiles1, g0 = (int)blockIdx.x, step = (int)gridDim.x;
  const int n = total > g0 ? (total - g0 + step - 1) / step : 0;
  if (threadIdx.x == {CONSUMERS}) {{                 // the producer: one thread of the fifth warp
    pycute_tensormap_acquire(map);
    feed_state st = feed_producer_start();
    for (int k = 0; k < n; ++k, st.advance()) {{
      const int g = g0 + k * step;
      feed_ld(map, base, feed_producer_acquire(b, st), g / tiles1, g % tiles1, st.index);
    }}
    return;
  }}
  if (threadIdx.x > {CONSUMERS}) return;
  unsigned long long sum = 0;
  feed_state st = feed_consumer_start();
  for (int k = 0; k < n; ++k, st.advance()) {{
    feed_consumer_wait(b, st);
    const int g = g0 + k * step;
    const unsigned long long origin = (unsigned long long)(g / tiles1) * {rows}ull * {width}ull
                                      + (unsigned long long)(g % tiles1) * {cols}ull;
    const unsigned* tile = words + st.index * {self.tile_bytes // 4}u;
    for (unsigned i = threadIdx.x; i < {rows * cols}u; i += {CONSUMERS}u)
      sum += tile[i] ^ (origin + (i / {cols}u) * {width}ull + i % {cols}u);
    feed_consumer_release(b, st);
  }}
  atomicAdd(checksum, sum);
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def run(self, gpu: Gpu, src: Any, repeats: int = 5, arch: str = "sm_90a") -> tuple[float, int]:
        """Read device buffer ``src`` (the array the plan describes) ``repeats`` times after a warm-up: the fastest
        run's milliseconds and the last run's checksum."""
        gpu = check_gpu(gpu)
        if any(n % t for n, t in zip(self.load.gmem.layout.shape, self.load.tile_shape)):
            raise CompileError("TmaLoadStream: the array is whole tiles (the checksum counts every element once)")
        tmap = gpu.upload(np.frombuffer(tensor_map_bytes(self.load.tensor_map.encode(int(src.handle))),
                                        dtype=np.uint8))
        kernel = gpu.kernel(self.compile(arch), "tma_load_stream")
        grid, smem = gpu.multiprocessors() * self.ctas_per_sm, self.stages * self.tile_bytes + 1024
        checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
        args = (tmap, checksum, np.int32(self.tiles[0]), np.int32(self.tiles[1]))
        gpu.launch(kernel, *args, grid=grid, block=CONSUMERS + 32, dynamic_smem=smem)
        best = float("inf")
        for _ in range(repeats):
            checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
            args = (tmap, checksum, args[2], args[3])
            best = min(best, float(gpu.launch(kernel, *args, grid=grid, block=CONSUMERS + 32, dynamic_smem=smem,
                                              events=True) or 0.0))
        return best, int(gpu.download(checksum, np.uint64, 1)[0])
