"""PROTOTYPE (being turned into plans): a Hopper wgmma GEMM, D = scale * A B^T, A M x K and B N x K both K-major."""
from __future__ import annotations

from typing import Literal

import attrs

from pycute.compile.nvrtc import Compiled, compile_cuda

Dtype = Literal["bf16", "e4m3"]
Mode = Literal["cooperative", "pingpong"]
SMEM_CAPACITY = 232448     # dynamic shared memory of one CTA (227 KB)
SM_SHARED = 233472         # one SM's shared memory (228 KB), 1 KB of it reserved per resident CTA
REGISTERS = 65536


@attrs.frozen
class HopperGemm:
    dtype: Dtype = "bf16"
    BN: int = 256
    m_blocks: int = 1          # 64-row wgmma blocks per consumer warpgroup
    consumers: int = 2         # consumer warpgroups
    mode: Mode = "cooperative"
    stages: int = 4
    cluster: int = 2           # CTAs per cluster along M, sharing B by multicast
    group: int = 8             # raster: cluster-rows of tiles per band

    @property
    def esize(self) -> int:
        return 2 if self.dtype == "bf16" else 1

    @property
    def BK(self) -> int:
        return 128 // self.esize            # one 128-byte swizzle row of K

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
    def stage_bytes(self) -> int:
        return (self.BM + self.BN) * 128

    @property
    def epi_bytes(self) -> int:           # per buffer: wg_rows x 64 columns of bf16
        return self.wg_rows * 128

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.stage_bytes + 2 * self.consumers * self.epi_bytes + 1024

    @property
    def ctas_per_sm(self) -> int:
        by_smem = SM_SHARED // (self.smem_bytes + 16 * self.stages + 1024)
        by_regs = REGISTERS // (self.threads * (self.m_blocks * self.BN // 2 + 48))
        return max(1, min(by_smem, by_regs, 2))

    @property
    def consumer_registers(self) -> int:
        per_cta = REGISTERS // self.ctas_per_sm
        per_thread = min(255, per_cta // self.threads) // 8 * 8
        return min(240, (per_thread * self.threads - 40 * 128) // (128 * self.consumers) // 8 * 8)

    def source(self) -> str:
        n, mb = self.BN, self.m_blocks
        regs = n // 2
        d_ops = ", ".join(f"%{i}" for i in range(regs))
        d_cons = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
        if self.dtype == "bf16":
            wg_ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16"
            wg_tail = f"%{regs}, %{regs + 1}, p, 1, 1, 0, 0"
        else:
            wg_ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k32.f32.e4m3.e4m3"
            wg_tail = f"%{regs}, %{regs + 1}, p, 1, 1"
        cl, S = self.cluster, self.stages
        stage_a, stage_b = self.BM * 128, self.BN * 128
        b_rows = self.BN // cl
        ksteps = 128 // (16 * 2)
        coop = self.mode == "cooperative"
        arrivals = 4 * (self.consumers if coop else 1) * cl
        cluster_attr = f"__cluster_dims__({cl}, 1, 1)" if cl > 1 else ""
        if cl > 1:
            load_b = (f"pycute_tma_load_multicast_2d(&map_b, sb + rank * {b_rows * 128}u, fb, 0x{(1 << cl) - 1:x}, "
                      f"kb * {self.BK}, n0 + (int)rank * {b_rows});")
        else:
            load_b = f"pycute_tma_load_2d(&map_b, sb, fb, kb * {self.BK}, n0);"
        # consumer c's rows of the CTA tile (cooperative) and the tile walk of its warpgroup
        row0 = f"cw * {self.wg_rows}u" if coop else "0u"
        first_tile, tile_step = ("0", "1") if coop else ("(int)cw", "2")
        it0 = "0u" if coop else "cw * (unsigned)kblocks"
        it_skip = "" if coop else "it += (unsigned)kblocks;"
        return f"""#include "pycute/tma.cuh"
#include "pycute/bulk.cuh"

__device__ __forceinline__ void wgmma_tile(float (&d)[{regs}], unsigned long long da, unsigned long long db, int acc) {{
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
               "{wg_ptx} {{{d_ops}}}, {wg_tail};\\n}}"
               : {d_cons} : "l"(da), "l"(db), "r"(acc));
}}
__device__ __forceinline__ void wgmma_fence() {{ asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }}
__device__ __forceinline__ void wgmma_commit() {{ asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }}
template <int N> __device__ __forceinline__ void wgmma_wait() {{
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}}
template <int R> __device__ __forceinline__ void reg_alloc() {{ asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R)); }}
template <int R> __device__ __forceinline__ void reg_dealloc() {{ asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R)); }}
__device__ __forceinline__ void named_sync(unsigned id, unsigned n) {{ asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(n) : "memory"); }}
__device__ __forceinline__ unsigned pack_bf16(float lo, float hi) {{
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
}}
__device__ __forceinline__ void stsm_x4(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned e) {{
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {{%1, %2, %3, %4}};" :: "r"(addr), "r"(a), "r"(b), "r"(c), "r"(e) : "memory");
}}
__device__ __forceinline__ void wait_cta(unsigned mbar, unsigned parity) {{
  unsigned done;
  do {{
    asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}}"
                 : "=r"(done) : "r"(mbar), "r"(parity) : "memory");
  }} while (!done);
}}
__device__ __forceinline__ void arrive_cta_in(unsigned mbar, unsigned rank) {{
  asm volatile("mbarrier.arrive.release.cta.shared::cluster.b64 _, [%0];" :: "r"(pycute_mapa(mbar, rank)) : "memory");
}}
__device__ __forceinline__ unsigned long long sw128_desc(unsigned addr) {{
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}}
struct Tile {{ int m0, n0; }};
__device__ __forceinline__ Tile tile_of(int ct, int tiles_n, int ctiles_m, unsigned rank) {{
  const int per = {self.group} * tiles_n, first = (ct / per) * {self.group};
  const int gm = min({self.group}, ctiles_m - first), in = ct % per;
  return Tile{{((first + in % gm) * {cl} + (int)rank) * {self.BM}, (in / gm) * {self.BN}}};
}}

extern "C" __global__ void __launch_bounds__({self.threads}, {self.ctas_per_sm}) {cluster_attr}
gemm(const __grid_constant__ pycute_tensor_map map_a, const __grid_constant__ pycute_tensor_map map_b,
     const __grid_constant__ pycute_tensor_map map_d, int M, int N, int K, float scale) {{
  extern __shared__ __align__(1024) unsigned char raw[];
  __shared__ __align__(8) unsigned long long full[{S}], empty[{S}];
  const unsigned base = (pycute_smem_address(raw) + 1023u) & ~1023u;
  const unsigned smem_a = base, smem_b = base + {S * stage_a}u, smem_d = smem_b + {S * stage_b}u;
  const unsigned warp = pycute_warp_index(), wg = warp / 4u;
  const unsigned rank = pycute_cluster_ctarank();
  if (threadIdx.x == 0) {{
    for (int i = 0; i < {S}; ++i) {{
      pycute_mbarrier_init(pycute_smem_address(&full[i]), 1);
      pycute_mbarrier_init(pycute_smem_address(&empty[i]), {arrivals});
    }}
  }}
  pycute_cluster_sync();
  const int tiles_m = (M + {self.BM - 1}) / {self.BM}, tiles_n = (N + {self.BN - 1}) / {self.BN};
  const int ctiles_m = (tiles_m + {cl - 1}) / {cl};
  const int ctiles = ctiles_m * tiles_n;
  const int nclusters = (int)gridDim.x / {cl}, cid = (int)blockIdx.x / {cl};
  const int kblocks = (K + {self.BK - 1}) / {self.BK};
  if (wg == 0) {{
    reg_dealloc<40>();
    if (warp == 0 && pycute_elect_one_sync()) {{
      unsigned it = 0;
      for (int ct = cid; ct < ctiles; ct += nclusters) {{
        const Tile t = tile_of(ct, tiles_n, ctiles_m, rank);
        const int m0 = t.m0, n0 = t.n0;
        for (int kb = 0; kb < kblocks; ++kb, ++it) {{
          const unsigned s = it % {S}u, ph = (it / {S}u) & 1u;
          wait_cta(pycute_smem_address(&empty[s]), ph ^ 1u);
          const unsigned fb = pycute_smem_address(&full[s]);
          pycute_mbarrier_arrive_expect_tx(fb, {stage_a + stage_b}u);
          pycute_tma_load_2d(&map_a, smem_a + s * {stage_a}u, fb, kb * {self.BK}, m0);
          const unsigned sb = smem_b + s * {stage_b}u;
          {load_b}
        }}
      }}
    }}
  }} else {{
    reg_alloc<{self.consumer_registers}>();
    const unsigned cw = wg - 1u, lane = threadIdx.x % 32u, w4 = warp % 4u;
    float d[{mb}][{regs}];
    unsigned it = {it0}, epi = 0;
    for (int ct = cid + {first_tile} * nclusters; ct < ctiles; ct += {tile_step} * nclusters) {{
      const Tile t = tile_of(ct, tiles_n, ctiles_m, rank);
      const int m0 = t.m0 + (int)({row0}), n0 = t.n0;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {{
        const unsigned s = it % {S}u, ph = (it / {S}u) & 1u;
        wait_cta(pycute_smem_address(&full[s]), ph);
        const unsigned long long db = sw128_desc(smem_b + s * {stage_b}u);
        wgmma_fence();
        #pragma unroll
        for (int mi = 0; mi < {mb}; ++mi) {{
          const unsigned long long da = sw128_desc(smem_a + s * {stage_a}u + ({row0}) * 128u + mi * {64 * 128}u);
          #pragma unroll
          for (int k = 0; k < {ksteps}; ++k) wgmma_tile(d[mi], da + 2ull * k, db + 2ull * k, (kb | k) != 0);
        }}
        wgmma_commit();
        wgmma_wait<1>();
        if (kb > 0 && lane < {cl}u) arrive_cta_in(pycute_smem_address(&empty[(it - 1u) % {S}u]), lane);
      }}
      wgmma_wait<0>();
      if (lane < {cl}u) arrive_cta_in(pycute_smem_address(&empty[(it - 1u) % {S}u]), lane);
      {it_skip}
      // epilogue: {self.BN // 64} chunks of 64 columns through a double-buffered swizzled tile per warpgroup
      #pragma unroll
      for (int c = 0; c < {self.BN // 64}; ++c, ++epi) {{
        const unsigned buf = smem_d + (cw * 2u + (epi & 1u)) * {self.epi_bytes}u;
        if (threadIdx.x % 128u == 0) pycute_bulk_wait_group_read<1>();
        named_sync(1u + cw, 128u);
        #pragma unroll
        for (int mi = 0; mi < {mb}; ++mi) {{
          #pragma unroll
          for (int j = 0; j < 4; ++j) {{
            const int c0 = c * 8 + 2 * j;      // 8-column block of the accumulator
            const unsigned q = lane / 8u, row = mi * 64u + w4 * 16u + lane % 8u + 8u * (q % 2u);
            const unsigned col = 16u * j + 8u * (q / 2u);
            const unsigned addr = buf + row * 128u + (((col / 8u) ^ (row % 8u)) * 16u);
            stsm_x4(addr, pack_bf16(d[mi][4 * c0] * scale, d[mi][4 * c0 + 1] * scale),
                    pack_bf16(d[mi][4 * c0 + 2] * scale, d[mi][4 * c0 + 3] * scale),
                    pack_bf16(d[mi][4 * c0 + 4] * scale, d[mi][4 * c0 + 5] * scale),
                    pack_bf16(d[mi][4 * c0 + 6] * scale, d[mi][4 * c0 + 7] * scale));
          }}
        }}
        pycute_fence_proxy_async_shared();
        named_sync(1u + cw, 128u);
        if (threadIdx.x % 128u == 0) {{
          pycute_tma_store_2d(&map_d, buf, n0 + c * 64, m0);
          pycute_bulk_commit_group();
        }}
      }}
    }}
    if (threadIdx.x % 128u == 0) pycute_bulk_wait_group<0>();
  }}
  __syncwarp();
  pycute_cluster_sync();
}}
"""

    def compile(self) -> Compiled:
        return compile_cuda(self.source(), arch="sm_90a")


def candidates(dtype: Dtype = "bf16") -> list[HopperGemm]:
    return [HopperGemm(dtype=dtype),                                               # 128 x 256 cooperative
            HopperGemm(dtype=dtype, BN=128, m_blocks=2, mode="pingpong", stages=4),  # 128 x 128 per warpgroup
            HopperGemm(dtype=dtype, BN=128, stages=6),                              # 128 x 128 cooperative
            HopperGemm(dtype=dtype, BN=128, consumers=1, stages=3),                 # 64 x 128, 2 CTAs / SM
            HopperGemm(dtype=dtype, BN=64, consumers=1, stages=5, cluster=1)]       # 64 x 64, 2 CTAs / SM


if __name__ == "__main__":
    for g in candidates() + candidates("e4m3"):
        c = g.compile()
        h = c.histogram()
        print(g, g.BM, g.smem_bytes, g.ctas_per_sm, g.consumer_registers,
              {k: v for k, v in h.items() if "GMMA" in k or k.startswith(("LDL", "STL", "STSM", "UTMA"))})
