#define PYCUTE_SMEM_BYTES ${smem_bytes}u
#define PYCUTE_TMEM_COLS ${tmem_cols}u
#define PYCUTE_ELEMS ${elements}u
#define PYCUTE_ELEM_BYTES ${element_bytes}u
${function}
${src_offset}

// Round trip: fill -> alloc -> zero TMEM -> copy -> commit/wait -> tcgen05.ld -> global. ${threads} threads.
// Every tcgen05 step is a pycute/sm100.cuh helper, so -DPYCUTE_SOFT_TCGEN05 runs it on a GPU without tcgen05.
extern "C" __global__ void __launch_bounds__(128, 1)${cluster} ${name}_roundtrip(const unsigned char* __restrict__ values,
                                                                          unsigned* __restrict__ out) {
  extern __shared__ __align__(1024) unsigned char pycute_dynamic_smem[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long mbarrier_word;
  const unsigned tid = threadIdx.x, warp = pycute_warp_index(), lane = tid % 32u;
  const unsigned cta = pycute_cluster_ctarank();
  // The buffer is aligned to 1024 B in the shared window (every swizzle period divides 1024).
  const unsigned dyn = pycute_smem_address(pycute_dynamic_smem);
  unsigned char* buffer = pycute_dynamic_smem + ((1024u - (dyn & 1023u)) & 1023u);
  const unsigned mbar = pycute_smem_address(&mbarrier_word);

  // 1. Allocate TMEM (one warp per CTA) and set up the completion mbarrier, then a barrier, before any thread fills
  //    shared memory (racecheck otherwise takes the mbarrier.init for a write to the fill's bytes: docs/sanitizer.md).
  if (warp == 0) {
    pycute_tmem_alloc<${cta_group}>(pycute_smem_address(&tmem_slot), PYCUTE_TMEM_COLS);
    pycute_tmem_relinquish_alloc_permit<${cta_group}>();
  }
  if (tid == 0) pycute_mbarrier_init(mbar, 1);
  pycute_tcgen05_fence_before_thread_sync();
  __syncthreads();
  pycute_tcgen05_fence_after_thread_sync();
  const unsigned taddr = tmem_slot;
  const unsigned warp_taddr = taddr + ((PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u)) << PYCUTE_TMEM_LANE_SHIFT);

  // 2. Fill shared memory through the source layout (zero first: bytes the layout never names stay 0).
  for (unsigned b = tid; b < PYCUTE_SMEM_BYTES; b += blockDim.x) buffer[b] = 0;
  __syncthreads();
  for (unsigned i = tid; i < PYCUTE_ELEMS; i += blockDim.x) {
    const unsigned off = ${name}_src_byte_offset(i);
    for (unsigned k = 0; k < PYCUTE_ELEM_BYTES; ++k) buffer[off + k] = values[(cta * PYCUTE_ELEMS + i) * PYCUTE_ELEM_BYTES + k];
  }

  // 3. Zero this warp's TMEM quadrant: alloc does not clear TMEM.
  const unsigned zeros[${chunk}] = {};
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += ${chunk}u) ${st}(warp_taddr + c, zeros);
  pycute_tcgen05_wait_st();
  // 4. Make the generic-proxy fill visible to the async proxy that tcgen05.cp reads through, then sync.
  pycute_fence_proxy_async_shared();
  pycute_tcgen05_fence_before_thread_sync();
  ${sync}
  pycute_tcgen05_fence_after_thread_sync();

  // 5. Warp 0 ${issuer}calls the generated function (it elects one lane, which issues the copies); the same lane
  //    (elect.sync elects it again) commits them to the mbarrier.
#if defined(PYCUTE_TIME_COPY)
  const long long t_issue = clock64();
#endif
  if (warp == 0 && ${is_issuer}) {
    ${name}(buffer, taddr);
    if (pycute_elect_one_sync()) pycute_tcgen05_commit<${cta_group}>(mbar);
  }

  // 6. Wait for the copy, then read this warp's lane quadrant back.
  pycute_mbarrier_wait_parity(mbar, 0);
#if defined(PYCUTE_TIME_COPY)
  // Clocks from the issue to the mbarrier completion of the copy, as the issuing thread sees them.
  if (tid == 0) {
    const long long cycles = clock64() - t_issue;
    out[${ctas} * 128u * PYCUTE_TMEM_COLS + 2u * cta] = unsigned(cycles);
    out[${ctas} * 128u * PYCUTE_TMEM_COLS + 2u * cta + 1u] = unsigned(cycles >> 32);
  }
#endif
  pycute_tcgen05_fence_after_thread_sync();
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += ${chunk}u) {
    unsigned v[${chunk}];
    ${ld}(warp_taddr + c, v);
    pycute_tcgen05_wait_ld();
    for (unsigned k = 0; k < ${chunk}u; ++k)
      out[(cta * 128u + PYCUTE_TMEM_QUADRANT_LANES * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k] = v[k];
  }

  // 7. Free TMEM once every warp has read it.
  pycute_tcgen05_fence_before_thread_sync();
  ${sync}
  if (warp == 0) pycute_tmem_dealloc<${cta_group}>(taddr, PYCUTE_TMEM_COLS);
}
#undef PYCUTE_SMEM_BYTES
#undef PYCUTE_TMEM_COLS
#undef PYCUTE_ELEMS
#undef PYCUTE_ELEM_BYTES
