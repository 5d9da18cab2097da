"""A Hopper GEMM from pycute plans, ``D = scale * A B^T`` (bf16 D, f32 accumulation): A is M x K and B is N x K,
both K-major, bf16 or fp8 e4m3 (per-tensor scale), any M, N and K whose rows are 16-byte aligned. The kernel is
``wgmma`` (sm_90a) fed by TMA, and everything between the instructions comes from plans:

* ``mainloop`` (``pc.make_pipeline``): a ring of stages filled by the TMA loads of an A and a B tile (B multicast
  over a cluster of CTAs that compute neighbouring M tiles), its barriers, counts, bytes and phases;
* ``mma`` (``pc.make_mma`` with a register accumulator): the k-block's ``wgmma.mma_async`` per warpgroup;
* ``store_d`` (``pc.make_epilogue``): 64 x 64 f32 chunks of the accumulator -> bf16 -> a 128B-swizzled ring of
  two shared tiles per warpgroup (stmatrix) -> proxy fence -> named barrier -> TMA store;
* ``sched`` (``pc.make_tile_scheduler``): persistent CTAs walking the output tiles in L2-friendly bands, the tile
  counts given at run time, so one compiled kernel serves every problem.

Warp roles: warpgroup 0 produces (one elected thread issues the loads; the warpgroup gives registers back with
``setmaxnreg``); warpgroups 1 and 2 consume: "cooperative", both on one tile (64 rows each), or "pingpong", each on
its own tile in turn (the pipeline hands them the turn), so that one's epilogue overlaps the other's MMAs. The
kernel body below is the only hand-written CUDA: 53 lines (55 for ping-pong) between the kernel's braces, counted
as issue 34 counts (blank, comment and lone-brace lines not), none of them an address, a count, a parity or a
register grouping (``HANDWRITTEN_LINES``; a test keeps it honest).

``python examples/hopper_gemm.py`` prints the plans and each candidate's sm_90a SASS counts; tools/hopper_gemm_h200.py
times the candidates beside cuBLAS (``torch.matmul``), Triton and ``torch._scaled_mm`` on the H200
(docs/hopper-gemm.md has the numbers).
"""
from __future__ import annotations

import functools
from typing import Literal

import attrs

import pycute as pc
from pycute import Layout
from pycute.compile.nvrtc import Compiled, compile_cuda

Dtype = Literal["bf16", "e4m3"]
Mode = Literal["cooperative", "pingpong"]
DTYPES = {"bf16": pc.bf16, "e4m3": pc.f8e4m3}
#: The plans are made for arrays this large (the kernel text does not depend on the problem: the tensor maps are
#: encoded per call from plans of the real arrays, checked to issue the same boxes).
TEMPLATE = 1 << 16
CHUNK = 64          # columns of D per epilogue store: one 128-byte swizzle row of bf16
SM_SHARED = 233472  # one SM's shared memory (228 KiB); each resident CTA also takes 1 KiB (CUDA Programming Guide)


@attrs.frozen
class HopperGemm:
    """One kernel configuration: the tile (BN columns; ``m_blocks`` 64-row wgmma blocks per consumer warpgroup),
    the consumers and how they share the tiles, the stages (None: as many as fit), the cluster (CTAs along M that
    share B by multicast) and the raster's band height."""

    dtype: Dtype = "bf16"
    BN: int = 256
    m_blocks: int = 1
    consumers: int = 2
    mode: Mode = "cooperative"
    stages: int | None = None
    cluster: int = 2
    group: int = 8

    @property
    def BK(self) -> int:
        return 128 * 8 // DTYPES[self.dtype].bits          # one 128-byte swizzle row of K

    @property
    def wg_rows(self) -> int:
        return 64 * self.m_blocks

    @property
    def BM(self) -> int:
        return self.wg_rows * (self.consumers if self.mode == "cooperative" else 1)

    @property
    def threads(self) -> int:
        return 128 * (1 + self.consumers)

    @property
    def epilogue_bytes(self) -> int:
        """Each consumer's ring of two 64 x 64 bf16 tiles."""
        return self.consumers * 2 * 64 * CHUNK * 2

    @functools.cached_property
    def plans(self) -> "GemmPlans":
        return GemmPlans.of(self, TEMPLATE, TEMPLATE, TEMPLATE)

    @property
    def smem_bytes(self) -> int:
        """Dynamic shared memory: the rings, the epilogue's tiles and 1 KiB to align the buffer."""
        return self.plans.mainloop.smem_bytes + self.epilogue_bytes + 1024

    @property
    def ctas_per_sm(self) -> int:
        by_smem = SM_SHARED // (self.smem_bytes + 1024 + 8 * self.plans.mainloop.stages * 2)
        return max(1, min(2, by_smem, 1 if self.threads > 256 else 2))

    @property
    def consumer_registers(self) -> int:
        """setmaxnreg's budget for a consumer thread: the CTA's share of the register file less the producer's 40."""
        per_thread = min(255, 65536 // self.ctas_per_sm // self.threads) // 8 * 8
        return min(240, (per_thread * self.threads - 40 * 128) // (128 * self.consumers) // 8 * 8)

    def source(self) -> str:
        p = self.plans
        coop = self.mode == "cooperative"
        mb, regs = self.m_blocks, self.BN // 2
        cluster = f" __cluster_dims__({self.cluster}, 1, 1)" if self.cluster > 1 else ""
        slice_of = ("" if p.mma.warpgroups == 1 else ", cw" if coop else ", mi")   # the MMA plan's 64-row slice
        row = f"cw * {self.wg_rows}" if coop else "mi * 64"       # D's rows of this chunk within the tile
        first, step = ("0u", "1u") if coop else ("cw", "2u")
        turn_wait = "" if coop else "\n      if (n > 0u) mainloop_turn_wait(cw);"
        turn_pass = "" if coop else "\n      if (sched_next(w) < units) mainloop_turn_pass(cw);"
        return "\n".join([p.mainloop.cuda(), p.mma.cuda("mma"), p.store_d.cuda("store_d"), p.sched.cuda(), f"""
extern "C" __global__ void __launch_bounds__({self.threads}, {self.ctas_per_sm}){cluster}
gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
     const __grid_constant__ pycute_tensor_map map_d, int M, int N, int K, float scale) {{
  extern __shared__ unsigned char raw[];
  __shared__ __align__(8) unsigned long long bars[mainloop_barrier_words];
  const unsigned smem = (pycute_smem_address(raw) + 1023u) & ~1023u, b = pycute_smem_address(bars);
  const unsigned tiles_m = (M + {self.BM - 1}) / {self.BM}, tiles_n = (N + {self.BN - 1}) / {self.BN};
  const unsigned kblocks = (K + {self.BK - 1}) / {self.BK}, units = sched_units(tiles_m, tiles_n), wg = pycute_warpgroup_index();
  if (threadIdx.x == 0) mainloop_init(b);
  pycute_cluster_sync();
  if (wg == 0) {{
    pycute_setmaxnreg_dec<40>();
    if (pycute_warp_index() == 0) {{           // the load warp: every lane waits, one issues
      mainloop_state st = mainloop_producer_start();
      for (unsigned w = sched_first(); w < units; w = sched_next(w)) {{
        pycute_tile t;
        sched_tile(w, t, tiles_m, tiles_n);
        for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {{
          const unsigned full = mainloop_producer_acquire(b, st);
          if (pycute_elect_one_sync()) {{
            mainloop_a(&map_a, smem, full, t.m, kb, st.index);
            mainloop_b(&map_b, smem, full, t.n, kb, st.index);
          }}
        }}
      }}
    }}
  }} else {{
    pycute_setmaxnreg_inc<{self.consumer_registers}>();
    const unsigned cw = wg - 1u, thread = pycute_warpgroup_thread(), epi = smem + mainloop_smem_bytes + cw * 16384u;
    float d[{mb}][{regs}];
    unsigned stored = 0;
    mainloop_state st = mainloop_consumer_start(), done = st;
    st.advance({first} * kblocks);
    for (unsigned w = sched_first(), n = 0; w < units; w = sched_next(w), ++n) {{
      pycute_tile t;
      sched_tile(w, t, tiles_m, tiles_n);
      if (n % {step} != {first}) continue;{turn_wait}
      for (unsigned kb = 0; kb < kblocks; ++kb, st.advance()) {{
        mainloop_consumer_wait(b, st);
        pycute_wgmma_fence();
#pragma unroll
        for (unsigned mi = 0; mi < {mb}u; ++mi) mma(smem, smem, d[mi], kb > 0u{slice_of}, st.index);
        pycute_wgmma_commit_group();
        pycute_wgmma_wait_group<1>();
        if (kb > 0u) mainloop_consumer_release(b, done);
        done = st;
      }}{turn_pass}
      pycute_wgmma_wait_group<0>();
      mainloop_consumer_release(b, done);
      st.advance(({step} - 1u) * kblocks);
#pragma unroll
      for (unsigned c = 0; c < {self.BN // CHUNK * mb}u; ++c, ++stored) {{
        const unsigned mi = c / {self.BN // CHUNK}u, j = c % {self.BN // CHUNK}u;
        float frag[32];
#pragma unroll
        for (unsigned i = 0; i < 32u; ++i) frag[i] = d[mi][32u * j + i] * scale;
        store_d_wait(thread, 1u + cw);
        store_d(&map_d, epi, thread, frag, t.m * {self.BM} + {row}, t.n * {self.BN} + {CHUNK} * j, stored % 2u, 1u + cw);
      }}
    }}
    if (thread == 0u) pycute_bulk_wait_group<0>();
  }}
  __syncwarp();
  pycute_cluster_sync();
}}
"""])

    def compile(self) -> Compiled:
        return compile_cuda(self.source(), arch="sm_90a", options=("-std=c++17",))


@attrs.frozen
class GemmPlans:
    """The plans of one configuration for one problem (``M x K`` A, ``N x K`` B, ``M x N`` D)."""

    mainloop: pc.PipelinePlan
    mma: pc.WgmmaPlan
    store_d: object
    sched: pc.TileScheduler

    @classmethod
    def of(cls, g: HopperGemm, M: int, N: int, K: int, lda: int | None = None, ldb: int | None = None,
           ldd: int | None = None) -> "GemmPlans":
        """``ld*``: the arrays' row pitches in elements (their rows' bytes must be whole 16-byte units: TMA)."""
        dt = DTYPES[g.dtype]
        a = pc.make_global_tensor(dt, Layout((M, K), (lda or K, 1)))
        b = pc.make_global_tensor(dt, Layout((N, K), (ldb or K, 1)))
        d = pc.make_global_tensor(pc.bf16, Layout((M, N), (ldd or N, 1)))
        load_a = pc.make_tma_copy(pc.kmajor_smem_tensor(dt, g.BM, g.BK, "128B"), a)
        load_b = pc.make_tma_copy(pc.kmajor_smem_tensor(dt, g.BN, g.BK, "128B"), b,
                                  multicast=g.cluster if g.cluster > 1 else None)
        # cooperative: every consumer warpgroup reads each stage; ping-pong: one does, the warpgroups taking turns
        consumer = pc.Consumer("warpgroup", g.consumers) if g.mode == "cooperative" else \
            pc.Consumer("warpgroup", 1, turns=g.consumers)
        mainloop = pc.make_pipeline({"a": load_a, "b": load_b}, consumer=consumer, producer=pc.Producer("tma", "warp"),
                                    stages=g.stages, reserve=g.epilogue_bytes + 1024, name="mainloop")
        acc_rows = g.BM if g.mode == "cooperative" else g.wg_rows
        mma = pc.make_mma(pc.wgmma_accumulator(pc.f32, acc_rows, g.BN), mainloop.ring("a"), mainloop.ring("b"))
        ring_d = pc.make_stages(pc.kmajor_smem_tensor(pc.bf16, 64, CHUNK, "128B"), 2)[:, :, pc.dynamic("slot")]
        store_d = pc.make_epilogue(pc.wgmma_accumulator(pc.f32, 64, CHUNK), ring_d, d, barrier_id=pc.dynamic("bar"))
        sched = pc.make_tile_scheduler(None, cluster=(g.cluster, 1), swizzle=g.group)
        return cls(mainloop, mma, store_d, sched)


    def maps(self) -> tuple[object, object, object]:
        """The tensor-map parameters of A, B and D (``TensorMapParams``: ``.encode(address)``)."""
        loads = dict(self.mainloop.loads)
        return loads["a"].tensor_map, loads["b"].tensor_map, self.store_d.tma.tensor_map

    def issues_as(self, kernel: "GemmPlans") -> bool:
        """Whether these plans issue what ``kernel``'s (the compiled kernel's) do: the same boxes, swizzles and
        instructions, so that their tensor maps drive that kernel."""
        def shape(m: object) -> tuple:
            return (m.dtype, m.box, m.swizzle, m.element_strides)                   # type: ignore[attr-defined]
        loads, kernel_loads = dict(self.mainloop.loads), dict(kernel.mainloop.loads)
        return all(shape(x) == shape(y) for x, y in zip(self.maps(), kernel.maps())) and all(
            [i.coords for i in loads[n].instructions] == [i.coords for i in kernel_loads[n].instructions]
            for n in loads)


def candidates(dtype: Dtype = "bf16") -> list[HopperGemm]:
    """The configurations timed on the H200 (tools/hopper_gemm_h200.py): 128 x 256 cooperative, 128 x 128 per
    warpgroup ping-pong, 128 x 128 cooperative, and 64-row tiles with one consumer for small problems."""
    return [HopperGemm(dtype=dtype),
            HopperGemm(dtype=dtype, BN=128, m_blocks=2, mode="pingpong"),
            HopperGemm(dtype=dtype, BN=128),
            HopperGemm(dtype=dtype, BN=128, consumers=1, stages=3),
            HopperGemm(dtype=dtype, BN=64, consumers=1, stages=5, cluster=1)]


#: TFLOP/s of each candidate on the whole H200 at 8192^3 bf16 (docs/runs/gemm/hopper-gemm-h200.jsonl, the run of
#: docs/hopper-gemm.md): what ``choose`` weighs the waves of tiles with.
MEASURED_TFLOPS = {(128, 256, "cooperative"): 699.0, (128, 128, "pingpong"): 664.0, (128, 128, "cooperative"): 656.0,
                   (64, 128, "cooperative"): 496.0, (64, 64, "cooperative"): 334.0}


def choose(M: int, N: int, K: int, dtype: Dtype = "bf16", sms: int = 132) -> HopperGemm:
    """The candidate that should finish ``M x N x K`` first: its tiles in waves of ``sms x ctas_per_sm`` CTAs, each
    CTA at its share of the candidate's measured whole-chip rate (tile quantisation and occupancy, no split-K)."""
    def time(g: HopperGemm) -> float:
        per_sm = g.ctas_per_sm
        tiles = -(-M // g.BM) * -(-N // g.BN)
        waves = -(-tiles // (sms * per_sm))
        rate = MEASURED_TFLOPS[(g.BM, g.BN, g.mode)] / (sms * per_sm)
        return waves * 2 * g.BM * g.BN * K / rate
    return min(candidates(dtype), key=time)


def kernel_body_lines(source: str) -> int:
    """The hand-written lines: the kernel's, between its braces (blank, comment and lone-brace lines not counted,
    as issue 34 counts them)."""
    body = source[source.index('extern "C" __global__'):]
    body = body[body.index("{") + 1:body.rindex("}")]
    return sum(1 for line in body.splitlines() if line.strip() and not line.strip().startswith("//")
               and line.strip().strip("{}") != "")


HANDWRITTEN_LINES = {"cooperative": 53, "pingpong": 55}


if __name__ == "__main__":
    g = HopperGemm()
    print(g.plans.mainloop.explain(), g.plans.mma.explain(), g.plans.store_d.explain(), g.plans.sched.explain(),
          sep="\n\n")
    for c in candidates() + candidates("e4m3"):
        h = c.compile().histogram()
        print(c, f"BM {c.BM}, {c.plans.mainloop.stages} stages, {c.smem_bytes} B, {c.ctas_per_sm}/SM:",
              {k: v for k, v in sorted(h.items()) if "GMMA" in k or k.startswith(("LDL", "STL", "STSM", "UTMA"))})
