"""A DSMEM ring built from a DSMEM plan and a pipeline: in every cluster of ``ctas`` CTAs, each CTA sends its tile
to the next CTA's receive buffer, round after round (two stages: round ``i`` receives into stage ``i % 2`` and sends
from the other), each receiver arming its own full barrier with the plan's ``expect_tx`` before a cluster barrier
that also releases the stages. After ``rounds`` rounds CTA ``r`` holds the tile CTA ``r - rounds`` started with,
which the caller checks; the rate is bytes sent per second per SM."""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..compile.runtime import Gpu, check_gpu
from ..copy.dsmem.plan import DsmemPlan
from ..errors import CompileError
from ..pipeline import Consumer, PipelinePlan, Producer, make_pipeline

__all__ = ["DsmemRing"]


@attrs.frozen
class DsmemRing:
    """``plan`` copies stage ``send`` of a two-stage shared buffer into stage ``recv`` of the peer's."""

    plan: DsmemPlan
    ctas: int

    def __attrs_post_init__(self) -> None:
        names = [(s.name, s.extent) for s in self.plan.stages]
        steps = {s.smem_step for s in self.plan.stages}
        if names != [("send", 2), ("recv", 2)] or len(steps) != 1:
            raise CompileError("DsmemRing: a DSMEM plan between stage 'send' and stage 'recv' (extent 2) of one "
                               "buffer")
        if not 2 <= self.ctas <= 16:
            raise CompileError(f"DsmemRing: a cluster of 2 to 16 CTAs, not {self.ctas}")

    @property
    def stage_bytes(self) -> int:
        return self.plan.src_stages[0].smem_step

    @property
    def pipeline(self) -> PipelinePlan:
        """The ring: each CTA's DSMEM copy fills the next CTA's stage, the receiver arms its own barrier, and the
        cluster barrier of every round releases the stages."""
        return make_pipeline({"ring": self.plan}, consumer=Consumer("threads", 128, "sync"),
                             producer=Producer("dsmem", peer=1), ctas=self.ctas, name="dsmem")

    def source(self) -> str:
        n, b = self.ctas, self.stage_bytes
        return self.pipeline.cuda() + f"""
extern "C" __global__ void __launch_bounds__(128) dsmem_ring(const unsigned char* init, unsigned char* out,
                                                            int rounds) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[dsmem_barrier_words];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  unsigned char* buf = raw + (base - pycute_smem_address(raw));
  const unsigned rank = pycute_cluster_ctarank();
  if (threadIdx.x == 0) dsmem_init(b);
  __syncthreads();                            // the barriers set up before any other shared access (racecheck)
  for (unsigned i = threadIdx.x; i < {b}u; i += blockDim.x) buf[{b}u + i] = init[blockIdx.x * {b}ull + i];
  pycute_fence_proxy_async_shared();          // the tile's generic writes, before the DSMEM copy reads them
  dsmem_state arm = dsmem_producer_start(), recv = dsmem_consumer_start();
  for (int i = 0; i < rounds; ++i, arm.advance(), recv.advance()) {{
    unsigned m = 0;
    if (threadIdx.x == 0) m = dsmem_producer_acquire(b, arm);   // arm this CTA's barrier for the peer's copy
    pycute_cluster_sync();                      // armed, and last round's copies out of these buffers landed
    if (threadIdx.x == 0) dsmem_ring(base, base, m, (rank + 1u) % {n}u, recv.index ^ 1u, recv.index);
    dsmem_consumer_wait(b, recv);
  }}
  pycute_cluster_sync();
  for (unsigned i = threadIdx.x; i < {b}u; i += blockDim.x)
    out[blockIdx.x * {b}ull + i] = buf[((unsigned)(rounds + 1) & 1u) * {b}u + i];
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def expected(self, init: np.ndarray, clusters: int, rounds: int) -> np.ndarray:
        """Every CTA's final tile: the one CTA ``r - rounds`` of its cluster started with."""
        tiles = init.reshape(clusters, self.ctas, self.stage_bytes)
        return np.roll(tiles, rounds, axis=1).reshape(-1)

    def run(self, gpu: Gpu, rounds: int, repeats: int = 3, seed: int = 0, arch: str = "sm_90a"
            ) -> tuple[float, int, bool]:
        """``(fastest ms, CTAs, exact)`` for ``rounds`` rounds over as many clusters as the SMs hold."""
        gpu = check_gpu(gpu)
        clusters = gpu.multiprocessors() // self.ctas
        grid = clusters * self.ctas
        init = np.random.default_rng(seed).integers(0, 256, grid * self.stage_bytes, dtype=np.uint8)
        d_init, d_out = gpu.upload(init), gpu.upload(np.zeros(init.size, dtype=np.uint8))
        kernel = gpu.kernel(self.compile(arch), "dsmem_ring")
        smem = 2 * self.stage_bytes + 1024
        gpu.launch(kernel, d_init, d_out, np.int32(rounds), grid=grid, block=128, cluster=self.ctas, dynamic_smem=smem)
        ms = min(float(gpu.launch(kernel, d_init, d_out, np.int32(rounds), grid=grid, block=128, cluster=self.ctas,
                                  dynamic_smem=smem, events=True) or 0.0) for _ in range(repeats))
        exact = bool(np.array_equal(gpu.download(d_out, np.uint8, init.size), self.expected(init, clusters, rounds)))
        return ms, grid, exact
