"""The feed rate of a GEMM's mainloop: the producer and pipeline of a GEMM -- TMA loads of an A tile and a B tile per
k-block into a ring of stages, optionally with A multicast over a cluster of two CTAs that share its rows -- with a
consumer that only waits for each stage and releases it, as an MMA warp (or two warpgroups) would, reading no
data. Persistent CTAs walk the output tiles with the static tile scheduler. Beside it, ``MinimalFeed`` is the
hand-minimal kernel of the same loads: one thread per CTA, full barriers only, re-arming a stage the moment its
load has landed -- the best the TMA does for these tiles, which the pipeline's rate is held against.

A verification launch (``verify=1``) has one consumer lane fold the first 32-bit word of each stage's A and B tiles
into a checksum that ``expected_checksum`` recomputes from the arrays: every stage of every tile arrived where the
plans say. Timed launches read nothing."""
from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ..arch.sm100.swizzle_modes import SwizzleLabel
from ..arch.sm90.smem import SMEM_PER_SM, SMEM_RESERVED_PER_CTA
from ..arch.sm90.tma import L2Promotion
from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu, tensor_map_bytes
from ..copy.tma.plan import TmaPlan
from ..copy.tma.planner import make_tma_copy
from ..dtypes import DType
from ..errors import CompileError
from ..layout import Layout
from ..pipeline import (Consumer, PipelinePlan, Producer, Raster, TileScheduler, make_pipeline, make_tile_scheduler,
                        smem_capacity)
from ..tensor.canonical import kmajor_smem_tensor
from ..tensor.gmem import make_global_tensor

__all__ = ["FeedProblem", "FeedStream", "MinimalFeed", "expected_checksum", "feed_reserve", "ALIGN_SLACK"]


@attrs.frozen
class FeedProblem:
    """A GEMM's operands as the feed moves them: A (m x k) and B (n x k), K-major, tiles of ``tile = (bm, bn, bk)``
    under the widest swizzle whose row the tile's K fills (128B for 128-byte rows, 64B for 64); the output's tiles
    walked in bands of ``swizzle`` block rows along ``raster``. ``l2_promotion`` and ``cache_hint`` are both loads'
    L2 options (``make_tma_copy``'s), the same for every kernel that moves the problem."""

    dtype: DType
    m: int
    n: int
    k: int
    tile: tuple[int, int, int]
    swizzle: int = 8
    raster: Raster = "m"
    l2_promotion: L2Promotion = "128B"
    cache_hint: str | None = None

    def __attrs_post_init__(self) -> None:
        bm, bn, bk = self.tile
        if self.m % bm or self.n % bn or self.k % bk:
            raise CompileError(f"feed: M {self.m}, N {self.n}, K {self.k} are whole tiles {self.tile}")

    @property
    def tiles(self) -> tuple[int, int]:
        return self.m // self.tile[0], self.n // self.tile[1]

    @property
    def k_blocks(self) -> int:
        return self.k // self.tile[2]

    def operand(self, rows: int) -> Any:
        return make_global_tensor(self.dtype, Layout((rows, self.k), (self.k, 1)))

    @property
    def smem_swizzle(self) -> SwizzleLabel:
        row = self.tile[2] * self.dtype.bits // 8
        spans: tuple[tuple[SwizzleLabel, int], ...] = (("128B", 128), ("64B", 64), ("32B", 32))
        return next((name for name, span in spans if row % span == 0), "none")

    def loads(self, multicast: int | None) -> dict[str, TmaPlan]:
        bm, bn, bk = self.tile
        sw = self.smem_swizzle
        return {"a": make_tma_copy(kmajor_smem_tensor(self.dtype, bm, bk, sw), self.operand(self.m),
                                   multicast=multicast, l2_promotion=self.l2_promotion, cache_hint=self.cache_hint),
                "b": make_tma_copy(kmajor_smem_tensor(self.dtype, bn, bk, sw), self.operand(self.n),
                                   l2_promotion=self.l2_promotion, cache_hint=self.cache_hint)}

    def scheduler(self, cluster: int = 1) -> TileScheduler:
        """The output tiles' walk, in clusters of ``cluster`` CTAs along N."""
        return make_tile_scheduler(self.tiles, cluster=(1, cluster), swizzle=self.swizzle, raster=self.raster,
                                   name="sched")

    def stage_bytes(self) -> int:
        bm, bn, bk = self.tile
        return (bm + bn) * bk * self.dtype.bits // 8

    def bytes_moved(self) -> int:
        """Bytes the loads deliver into shared memory over the whole problem (every tile's k-blocks)."""
        return self.tiles[0] * self.tiles[1] * self.k_blocks * self.stage_bytes()

    def arrays(self, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(seed)
        words = self.dtype.bits // 8
        return (rng.integers(0, 256, self.m * self.k * words, dtype=np.uint8),
                rng.integers(0, 256, self.n * self.k * words, dtype=np.uint8))


def expected_checksum(problem: FeedProblem, a: np.ndarray, b: np.ndarray) -> int:
    """The verification launch's checksum: over every output tile (m, n) and k-block kb, the first 32-bit word of
    A's tile (rows from m * bm, K from kb * bk) and of B's tile, summed modulo 2**64."""
    bm, bn, bk = problem.tile
    elem = problem.dtype.bits // 8
    a_words = a.view(np.uint8).reshape(problem.m, problem.k * elem)
    b_words = b.view(np.uint8).reshape(problem.n, problem.k * elem)
    kb = np.arange(problem.k_blocks) * bk * elem
    first_a = np.array([a_words[m * bm, kb[:, None] + np.arange(4)].view("<u4").ravel() for m in range(problem.tiles[0])],
                       dtype=np.uint64)
    first_b = np.array([b_words[n * bn, kb[:, None] + np.arange(4)].view("<u4").ravel() for n in range(problem.tiles[1])],
                       dtype=np.uint64)
    return (int(first_a.sum()) * problem.tiles[1] + int(first_b.sum()) * problem.tiles[0]) % (1 << 64)


#: The dynamic buffer's alignment slack: the kernels align its base to 1024 bytes by hand.
ALIGN_SLACK = 1024


def feed_reserve(ctas_per_sm: int, arch: str = "sm_90a") -> int:
    """The shared memory a pipeline leaves unused so that ``ctas_per_sm`` CTAs fit on an SM: the rest of the
    CTA's capacity beyond its share of the SM, plus the buffer's alignment slack."""
    share = SMEM_PER_SM // ctas_per_sm - SMEM_RESERVED_PER_CTA
    return max(smem_capacity(arch) - share, 0) + ALIGN_SLACK


def _launch_args(gpu: Gpu, loads: dict[str, TmaPlan], a_buf: Any, b_buf: Any) -> list:
    return [gpu.upload(np.frombuffer(tensor_map_bytes(loads[name].tensor_map.encode(int(buf.handle))),
                                     dtype=np.uint8)) for name, buf in (("a", a_buf), ("b", b_buf))]


def _time(gpu: Gpu, kernel: Any, args: tuple, grid: int, block: int, smem: int, repeats: int) -> float:
    gpu.launch(kernel, *args, grid=grid, block=block, dynamic_smem=smem)
    return min(float(gpu.launch(kernel, *args, grid=grid, block=block, dynamic_smem=smem, events=True) or 0.0)
               for _ in range(repeats))


@attrs.frozen
class FeedStream:
    """The GEMM-shaped feed: ``dtype`` operands A (``m x k``) and B (``n x k``), ``tile = (bm, bn, bk)``, a
    ``stages``-stage pipeline (as many as fit when None), ``consumer`` releasing each stage, ``multicast=2`` to
    share A over a cluster of two CTAs computing neighbouring N tiles, ``ctas_per_sm`` persistent CTAs per SM."""

    problem: FeedProblem
    stages: int | None = 4
    consumer: Consumer = Consumer("warp", 1)
    multicast: int | None = None
    ctas_per_sm: int = 1

    @classmethod
    def gemm(cls, dtype: DType, m: int, n: int, k: int, tile: tuple[int, int, int], **config: Any) -> "FeedStream":
        return cls(FeedProblem(dtype, m, n, k, tile), **config)

    def __attrs_post_init__(self) -> None:
        if self.multicast not in (None, 2):
            raise CompileError(f"FeedStream: multicast is None or 2 (A over a cluster of two), not {self.multicast!r}")
        if self.consumer.release != "arrive" or self.consumer.caller not in ("warp", "warpgroup"):
            raise CompileError(f"FeedStream: consumers are warps or warpgroups releasing by arrivals (what Hopper's "
                               f"consumers do), not {self.consumer!r}")
        if self.problem.tiles[1] % self.cluster:
            raise CompileError(f"FeedStream: {self.problem.tiles[1]} N tiles do not pair up for the cluster of "
                               f"{self.cluster}")

    @property
    def cluster(self) -> int:
        return self.multicast or 1

    @property
    def pipeline(self) -> PipelinePlan:
        return make_pipeline(self.problem.loads(self.multicast), consumer=self.consumer,
                             producer=Producer("tma", "warp"), stages=self.stages, name="feed",
                             reserve=feed_reserve(self.ctas_per_sm))

    @property
    def scheduler(self) -> TileScheduler:
        return self.problem.scheduler(self.cluster)

    @property
    def warps(self) -> int:
        """The producer warp and the consumers' warps."""
        return 1 + (4 if self.consumer.caller == "warpgroup" else 1) * self.consumer.count

    def source(self) -> str:
        pipe, cs = self.pipeline, self.cluster
        cluster = f" __cluster_dims__({cs}, 1, 1)" if cs > 1 else ""
        return pipe.cuda() + "\n" + self.scheduler.cuda() + f"""
extern "C" __global__ void __launch_bounds__({32 * self.warps}){cluster} feed_stream(
    const pycute_tensor_map* map_a, const pycute_tensor_map* map_b, unsigned long long* checksum, int verify) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[feed_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned warp = pycute_warp_index();
  if (threadIdx.x == 0) feed_init(b);
  {"pycute_cluster_sync();" if cs > 1 else "__syncthreads();"}
  if (warp == 0) {{                               // the producer warp: every lane waits, one issues
    pycute_tensormap_acquire(map_a);
    pycute_tensormap_acquire(map_b);
    feed_state st = feed_producer_start();
    for (unsigned w = sched_first(); w < sched_units; w = sched_next(w)) {{
      pycute_tile t;
      sched_tile(w, t);
      for (int kb = 0; kb < {self.problem.k_blocks}; ++kb, st.advance()) {{
        const unsigned full = feed_producer_acquire(b, st);
        if (pycute_elect_one_sync()) {{
          feed_a(map_a, base, full, t.m, kb, st.index);
          feed_b(map_b, base, full, t.n, kb, st.index);
        }}
      }}
    }}
  }} else {{                                      // the consumers: wait for each stage and release it
    unsigned long long sum = 0;
    feed_state st = feed_consumer_start();
    for (unsigned w = sched_first(); w < sched_units; w = sched_next(w)) {{
      for (int kb = 0; kb < {self.problem.k_blocks}; ++kb, st.advance()) {{
        feed_consumer_wait(b, st);
        if (verify && threadIdx.x == 32) {{
          sum += *reinterpret_cast<const unsigned*>(buf + {pipe.stage_bytes[0][1]}u + st.index * {pipe.stage_bytes[0][2]}u);
          sum += *reinterpret_cast<const unsigned*>(buf + {pipe.stage_bytes[1][1]}u + st.index * {pipe.stage_bytes[1][2]}u);
        }}
        feed_consumer_release(b, st);
      }}
    }}
    if (verify && threadIdx.x == 32) atomicAdd(checksum, sum);
  }}
  {"pycute_cluster_sync();                          // no CTA leaves while a peer may still arrive on its barriers" if cs > 1 else ""}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def grid(self, gpu: Gpu) -> int:
        return self.scheduler.grid(gpu.multiprocessors(), self.ctas_per_sm)

    def run(self, gpu: Gpu, a: Any, b: Any, repeats: int = 5, arch: str = "sm_90a") -> tuple[float, int]:
        """Launch once with ``verify=1`` (the checksum) and ``repeats`` times reading nothing: ``(fastest ms,
        checksum)`` over device buffers ``a`` and ``b`` holding the operands."""
        gpu = check_gpu(gpu)
        maps = _launch_args(gpu, self.problem.loads(self.multicast), a, b)
        kernel = gpu.kernel(self.compile(arch), "feed_stream")
        grid, block, smem = self.grid(gpu), 32 * self.warps, self.pipeline.smem_bytes + ALIGN_SLACK
        checksum = gpu.upload(np.zeros(1, dtype=np.uint64))
        gpu.launch(kernel, *maps, checksum, np.int32(1), grid=grid, block=block, dynamic_smem=smem)
        got = int(gpu.download(checksum, np.uint64, 1)[0])
        return _time(gpu, kernel, (*maps, checksum, np.int32(0)), grid, block, smem, repeats), got


@attrs.frozen
class MinimalFeed:
    """The hand-minimal kernel of the same loads (no multicast): one thread per CTA keeps ``stages`` loads in
    flight, waits for the oldest to land and reuses its stage at once; nothing else."""

    problem: FeedProblem
    stages: int = 4
    ctas_per_sm: int = 1

    @classmethod
    def gemm(cls, dtype: DType, m: int, n: int, k: int, tile: tuple[int, int, int], **config: Any) -> "MinimalFeed":
        return cls(FeedProblem(dtype, m, n, k, tile), **config)

    @property
    def scheduler(self) -> TileScheduler:
        return self.problem.scheduler()

    @property
    def pipeline(self) -> PipelinePlan:
        """Only its rings and the loads over them: the kernel's barrier code is hand-written, full barriers only."""
        return make_pipeline(self.problem.loads(None), consumer=Consumer("elected"), stages=self.stages,
                             name="mini", reserve=feed_reserve(self.ctas_per_sm))

    def source(self) -> str:
        pipe = self.pipeline
        kb = self.problem.k_blocks
        return pipe.cuda() + "\n" + self.scheduler.cuda() + f"""
__device__ __forceinline__ void mini_issue(const void* map_a, const void* map_b, unsigned base, unsigned full,
                                           unsigned load, unsigned stage) {{
  pycute_tile t;
  sched_tile(sched_first() + load / {kb}u * gridDim.x, t);
  pycute_mbarrier_arrive_expect_tx(full, {pipe.expect_tx}u);
  mini_a(map_a, base, full, t.m, int(load % {kb}u), stage);
  mini_b(map_b, base, full, t.n, int(load % {kb}u), stage);
}}

extern "C" __global__ void __launch_bounds__(32) minimal_feed(const pycute_tensor_map* map_a,
                                                             const pycute_tensor_map* map_b) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[mini_stages];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(full);
  if (threadIdx.x != 0) return;
  pycute_tensormap_acquire(map_a);
  pycute_tensormap_acquire(map_b);
  for (unsigned s = 0; s < mini_stages; ++s) pycute_mbarrier_init(b + 8u * s, 1u);
  const unsigned tiles = sched_first() < sched_units ? (sched_units - sched_first() + gridDim.x - 1u) / gridDim.x : 0u;
  const unsigned loads = tiles * {kb}u;
  mini_state st = mini_consumer_start();
  for (unsigned i = 0; i < loads && i < mini_stages; ++i, st.advance()) mini_issue(map_a, map_b, base, b + 8u * st.index, i, st.index);
  st = mini_consumer_start();
  for (unsigned i = 0; i < loads; ++i, st.advance()) {{
    pycute_mbarrier_wait_parity(b + 8u * st.index, st.phase);
    if (i + mini_stages < loads) mini_issue(map_a, map_b, base, b + 8u * st.index, i + mini_stages, st.index);
  }}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def run(self, gpu: Gpu, a: Any, b: Any, repeats: int = 5, arch: str = "sm_90a") -> float:
        """The fastest of ``repeats`` launches (after a warm-up), in milliseconds."""
        gpu = check_gpu(gpu)
        maps = _launch_args(gpu, self.problem.loads(None), a, b)
        kernel = gpu.kernel(self.compile(arch), "minimal_feed")
        grid = self.scheduler.grid(gpu.multiprocessors(), self.ctas_per_sm)
        return _time(gpu, kernel, tuple(maps), grid, 32, self.pipeline.smem_bytes + ALIGN_SLACK, repeats)
