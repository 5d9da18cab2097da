"""A probe of the split-K / stream-K scheduler's generated code, fixup included: every CTA of a persistent grid walks
its work items and their pieces with ``<name>_first`` / ``_next`` / ``_piece_first`` / ``_piece_next``; for each
piece every thread of each part accumulates, in f32 from zero, one pseudo-random value per k-block and accumulator
register (``value``, the same integer hash on both sides); a piece of a shared unit stores its partial, arrives, and
the last arrival sums the unit's partials (``_partial_store`` / ``_arrive`` / ``_reduce``); a whole unit or the last
arrival writes the result and counts the unit done. ``expected`` folds the same values in numpy in the plan's order
(the pieces in K order, f32 additions left to right), so the bits must agree for any grid, residency and CTA order.
Run through ``pycute.interp.run_kernel`` (CPU) or on a GPU."""
from __future__ import annotations

import attrs
import numpy as np

from ..compile.nvrtc import Compiled, compile_cuda
from ..pipeline.split_k import SplitKScheduler

__all__ = ["SplitKProbe", "value"]

_MUL = 2654435761


def value(unit: np.ndarray | int, kb: np.ndarray | int, lane: np.ndarray | int, reg: np.ndarray | int) -> np.ndarray:
    """The probe's f32 value of k-block ``kb`` of unit ``unit`` in accumulator register ``reg`` of thread ``lane``
    (its index among the CTA's part threads, rank-major), exactly as the generated kernel computes it: an integer
    hash's top 24 bits as a multiple of 2^-22 in [-2, 2)."""
    u = [np.asarray(x, dtype=np.uint64) for x in (unit, kb, lane, reg)]
    h = ((u[0] * 1000003 + u[1] * 7919 + u[2] * 131 + u[3]) * _MUL) & 0xFFFFFFFF
    h ^= h >> 15
    h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
    h ^= h >> 12
    return ((h >> 8).astype(np.int64) - (1 << 23)).astype(np.float32) * np.float32(2.0 ** -22)


@attrs.frozen
class SplitKProbe:
    """The probe kernel ``split_k_probe`` of ``plan`` (run-time scheduler) at its problem ``model`` (``plan.at(...)``):
    launched with ``parts x part_threads`` threads per CTA; ``out`` holds every (unit, cluster CTA, part, thread,
    register) result, ``done`` each (unit, CTA)'s count of results written."""

    plan: SplitKScheduler

    def source(self) -> str:
        n, p = self.plan.name, self.plan
        cs = p.cluster_size
        cluster = f" __cluster_dims__({cs}, 1, 1)" if cs > 1 else ""
        rank = "pycute_cluster_ctarank()" if cs > 1 else "0u"
        return p.cuda() + f"""
__device__ __forceinline__ float probe_value(unsigned unit, unsigned kb, unsigned lane, unsigned reg) {{
  unsigned h = (unit * 1000003u + kb * 7919u + lane * 131u + reg) * {_MUL}u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return (float)((int)(h >> 8) - (1 << 23)) * 0x1p-22f;
}}

extern "C" __global__ void __launch_bounds__({p.parts * p.part_threads}){cluster}
split_k_probe(unsigned tiles_m, unsigned tiles_n, unsigned kblocks, unsigned dp, unsigned workers, float* ws,
              unsigned* counters, float* out, unsigned* done) {{
  const {n}_problem p = {{tiles_m, tiles_n, kblocks, dp, workers}};
  const unsigned part = threadIdx.x / {p.part_threads}u, thread = threadIdx.x % {p.part_threads}u;
  const unsigned rank = {rank}, lane = (rank * {p.parts}u + part) * {p.part_threads}u + thread;
  for (unsigned item = {n}_first(); item < {n}_items(p); item = {n}_next(item)) {{
    {n}_piece pc;
    for (bool more = {n}_piece_first(item, p, pc); more; more = {n}_piece_next(p, pc)) {{
      float acc[{p.registers}];
#pragma unroll
      for (unsigned r = 0; r < {p.registers}u; ++r) acc[r] = 0.0f;
      for (unsigned kb = pc.kb_begin; kb < pc.kb_end; ++kb) {{
#pragma unroll
        for (unsigned r = 0; r < {p.registers}u; ++r) acc[r] += probe_value(pc.unit, kb, lane, r);
      }}
      if (pc.count > 1u) {{
        {n}_partial_store(ws, pc, part, thread, acc);
        if (!{n}_arrive(counters, pc, part, thread, 1u + part)) continue;
        {n}_reduce(ws, pc, part, thread, acc);
      }}
      float* dst = out + ((size_t)pc.unit * {cs * p.parts * p.part_threads}u + lane) * {p.registers}u;
#pragma unroll
      for (unsigned r = 0; r < {p.registers}u; ++r) dst[r] = acc[r];
      if (threadIdx.x == 0u) atomicAdd(done + pc.unit * {cs}u + rank, 1u);
    }}
  }}
}}
"""

    def compile(self, arch: str = "sm_90a") -> Compiled:
        return compile_cuda(self.source(), arch=arch)

    def args(self, model: SplitKScheduler) -> dict:
        """The kernel's arguments for ``model`` (the plan at a problem): the problem, a workspace of NaN, zeroed
        counters, ``out`` of NaN and zeroed ``done``."""
        p = model
        assert p.tiles is not None and p.kblocks is not None and p.split is not None
        lanes = p.cluster_size * p.parts * p.part_threads
        return dict(tiles_m=p.tiles[0], tiles_n=p.tiles[1], kblocks=p.kblocks, dp=p.split.dp,
                    workers=p.split.workers,
                    ws=np.full(max(1, p.workspace_bytes // 4), np.nan, np.float32),
                    counters=np.zeros(max(1, p.counters), np.uint32),
                    out=np.full(p.units * lanes * p.registers, np.nan, np.float32),
                    done=np.zeros(p.units * p.cluster_size, np.uint32))

    def expected(self, model: SplitKScheduler) -> np.ndarray:
        """``out`` as the plan says: each unit's pieces in K order, each accumulated in f32 from zero, summed in
        f32 left to right."""
        p = model
        lanes = p.cluster_size * p.parts * p.part_threads
        lane, reg = np.meshgrid(np.arange(lanes), np.arange(p.registers), indexing="ij")
        out = np.empty((p.units, lanes, p.registers), np.float32)
        for u in range(p.units):
            total = None
            for piece in p.unit_pieces(u):
                acc = np.zeros((lanes, p.registers), np.float32)
                for kb in range(piece.kb_begin, piece.kb_end):
                    acc = acc + value(u, kb, lane, reg)
                total = acc if total is None else total + acc
            out[u] = total
        return out.reshape(-1)
