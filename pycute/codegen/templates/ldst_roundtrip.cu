#define PYCUTE_SMEM_BYTES ${smem_bytes}u
#define PYCUTE_TMEM_COLS ${tmem_cols}u
#define PYCUTE_REGS ${registers}u
${functions}

// tcgen05.ld/st round trip, ${threads} threads per CTA: ${what}.
extern "C" __global__ void __launch_bounds__(${threads}, 1)${cluster} ${name}_ldst(const unsigned char* __restrict__ values,
                                                                              const unsigned* __restrict__ regs_in,
                                                                              unsigned* __restrict__ out) {
  extern __shared__ __align__(1024) unsigned char pycute_dynamic_smem[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long mbarrier_word;
  const unsigned tid = threadIdx.x, warp = pycute_warp_index(), cta = pycute_cluster_ctarank();
  const unsigned dyn = pycute_smem_address(pycute_dynamic_smem);
  unsigned char* buffer = pycute_dynamic_smem + ((1024u - (dyn & 1023u)) & 1023u);
  const unsigned mbar = pycute_smem_address(&mbarrier_word);
  // TMEM and the mbarrier first, then a barrier, before any thread fills shared memory (racecheck otherwise takes the
  // mbarrier.init for a write to the fill's bytes: docs/sanitizer.md).
  if (warp == 0) {
    pycute_tmem_alloc<${cta_group}>(pycute_smem_address(&tmem_slot), PYCUTE_TMEM_COLS);
    pycute_tmem_relinquish_alloc_permit<${cta_group}>();
  }
  if (tid == 0) pycute_mbarrier_init(mbar, 1);
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned taddr = tmem_slot;
  for (unsigned b = tid; b < PYCUTE_SMEM_BYTES; b += blockDim.x) buffer[b] = values[cta * PYCUTE_SMEM_BYTES + b];
  pycute_fence_proxy_async_shared();
  pycute_tcgen05_fence_before_thread_sync();
  ${sync}
  pycute_tcgen05_fence_after_thread_sync();
  unsigned regs[PYCUTE_REGS];
${body}
  for (unsigned i = 0; i < PYCUTE_REGS; ++i) out[(cta * blockDim.x + tid) * PYCUTE_REGS + i] = regs[i];
  pycute_tcgen05_fence_before_thread_sync();
  ${sync}
  if (warp == 0) pycute_tmem_dealloc<${cta_group}>(taddr, PYCUTE_TMEM_COLS);
}
