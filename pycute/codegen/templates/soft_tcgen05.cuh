#if defined(PYCUTE_SOFT_TCGEN05)
// ---- Software model of the tcgen05 instructions (for GPUs without them; see pycute.codegen.kernels) ----------
// TMEM image: 128 lanes x PYCUTE_TMEM_COLS words in dynamic shared memory, at the same offset in every CTA.
__shared__ unsigned pycute_soft_tmem_addr;   // shared-window address of this CTA's image

// Per descriptor swizzle code (arch.sm100.SwizzleMode): core-group row pitch, byte swizzle source mask and shift.
${swizzle_tables}

__device__ __forceinline__ unsigned pycute_cluster_rank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ unsigned pycute_mapa(unsigned addr, unsigned rank) {
  unsigned r; asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank)); return r;
}
__device__ __forceinline__ unsigned pycute_ld_cluster(unsigned addr) {
  unsigned v; asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory"); return v;
}
__device__ __forceinline__ void pycute_st_cluster(unsigned addr, unsigned v) {
  asm volatile("st.shared::cluster.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}

// tcgen05.cp semantics (ptx-tcgen05.md sections 4 and 6): K-major canonical walk of 8-row core groups, the
// swizzle on absolute address bits, each row written to the lanes its form's table lists (lanes, rows x
// replicas, row-major); cta_group 2 copies each CTA's shared memory into its own TMEM.
__device__ void pycute_soft_tcgen05_cp(int rows, int units, int replicas, const unsigned char* lanes,
                                       int cta_group, unsigned taddr, unsigned long long desc) {
  const unsigned start = ${desc_start};
  const unsigned lbo = ${desc_lbo};
  const unsigned sbo = ${desc_sbo};
  const unsigned sw = ${desc_swizzle};
  const unsigned pitch = pycute_soft_pitch[sw], mask = pycute_soft_swizzle_mask[sw];
  const int shift = pycute_soft_swizzle_shift[sw];
  const unsigned lane0 = taddr >> ${lane_shift}, col0 = taddr & ${column_mask}u;
  const unsigned window_hi = pycute_soft_tmem_addr & ~${window_mask}u;   // the CTA's shared-window high bits
  const unsigned self = pycute_cluster_rank();
  const unsigned first = cta_group == 2 ? (self & ~1u) : self, last = cta_group == 2 ? (self | 1u) : self;
  for (unsigned cta = first; cta <= last; ++cta) {
    for (int r = 0; r < rows; ++r) {
      for (unsigned u = 0; u < unsigned(units); ++u) {
        const unsigned lin = start + (r % 8) * pitch + (r / 8) * sbo + u * (sw == ${code_none} ? lbo : 16u);
        const unsigned phys = lin ^ (shift >= 0 ? (lin & mask) >> shift : (lin & mask) << -shift);
        for (unsigned k = 0; k < 4; ++k) {          // the 16-byte unit's four 32-bit words, in column order
          const unsigned word = pycute_ld_cluster(pycute_mapa(window_hi | (phys + 4u * k), cta));
          for (int l = 0; l < replicas; ++l) {
            const unsigned lane = lane0 + lanes[r * replicas + l];
            const unsigned cell = pycute_soft_tmem_addr + 4u * (lane * PYCUTE_TMEM_COLS + col0 + 4u * u + k);
            pycute_st_cluster(pycute_mapa(cell, cta), word);
          }
        }
      }
    }
  }
}
#endif
