#define PYCUTE_SMEM_BYTES ${smem_bytes}u
#define PYCUTE_TMEM_COLS ${tmem_cols}u
#define PYCUTE_ELEMS ${elements}u
#define PYCUTE_ELEM_BYTES ${element_bytes}u
${soft_model}
${soft_wrapper}
${function}
${src_offset}

// Round trip: fill -> alloc -> zero TMEM -> copy -> commit/wait -> tcgen05.ld -> global. ${threads} threads.
extern "C" __global__ void __launch_bounds__(128, 1)${cluster} ${name}_roundtrip(const unsigned char* __restrict__ values,
                                                                          unsigned* __restrict__ out) {
  extern __shared__ __align__(1024) unsigned char pycute_dynamic_smem[];
  __shared__ unsigned tmem_slot;
  __shared__ __align__(8) unsigned long long mbarrier_word;
  // The warp index read from lane 0 is provably warp-uniform, so ptxas knows the issuing warp is converged at the
  // generated function's elect.sync (otherwise it adds a diverged-warp copy of the issue code).
  const unsigned tid = threadIdx.x, warp = __shfl_sync(0xFFFFFFFFu, tid / 32u, 0), lane = tid % 32u;
  unsigned cta = 0;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(cta));
  // The buffer is aligned to 1024 B in the shared window (every swizzle period divides 1024).
  const unsigned dyn = static_cast<unsigned>(__cvta_generic_to_shared(pycute_dynamic_smem));
  unsigned char* buffer = pycute_dynamic_smem + ((1024u - (dyn & 1023u)) & 1023u);
  const unsigned mbar = static_cast<unsigned>(__cvta_generic_to_shared(&mbarrier_word));
#if defined(PYCUTE_SOFT_TCGEN05)
  unsigned* soft_tmem = reinterpret_cast<unsigned*>(buffer + PYCUTE_SMEM_BYTES);
  if (tid == 0) pycute_soft_tmem_addr = static_cast<unsigned>(__cvta_generic_to_shared(soft_tmem));
#endif

  // 1. Fill shared memory through the source layout (zero first: bytes the layout never names stay 0).
  for (unsigned b = tid; b < PYCUTE_SMEM_BYTES; b += blockDim.x) buffer[b] = 0;
  __syncthreads();
  for (unsigned i = tid; i < PYCUTE_ELEMS; i += blockDim.x) {
    const unsigned off = pycute_src_byte_offset(i);
    for (unsigned k = 0; k < PYCUTE_ELEM_BYTES; ++k) buffer[off + k] = values[(cta * PYCUTE_ELEMS + i) * PYCUTE_ELEM_BYTES + k];
  }
  // 2. Allocate TMEM (one warp per CTA) and set up the completion mbarrier.
  if (warp == 0) {
#if defined(PYCUTE_SOFT_TCGEN05)
    if (lane == 0) tmem_slot = 0;
#else
    const unsigned slot = static_cast<unsigned>(__cvta_generic_to_shared(&tmem_slot));
    asm volatile("tcgen05.alloc.cta_group::${cta_group}.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(slot), "r"(PYCUTE_TMEM_COLS) : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::${cta_group}.sync.aligned;" ::: "memory");
#endif
  }
  if (tid == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(mbar) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  __syncthreads();
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif
  const unsigned taddr = tmem_slot;
  const unsigned warp_taddr = taddr + ((${quadrant_lanes}u * (warp % 4u)) << ${lane_shift});

  // 3. Zero this warp's TMEM quadrant: alloc does not clear TMEM.
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += ${chunk}u) {
#if defined(PYCUTE_SOFT_TCGEN05)
    for (unsigned k = 0; k < ${chunk}u; ++k) soft_tmem[(${quadrant_lanes}u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k] = 0u;
#else
    asm volatile("${st_ptx} [%0], {${st_regs}};" :: "r"(warp_taddr + c), "r"(0u) : "memory");
#endif
  }
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
#endif
  // 4. Make the generic-proxy fill visible to the async proxy that tcgen05.cp reads through, then sync.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  ${sync}
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif

  // 5. Warp 0 ${issuer}calls the generated function (it elects one lane, which issues the copies); the same lane
  //    (elect.sync elects it again) commits them to the mbarrier.
#if defined(PYCUTE_TIME_COPY)
  const long long t_issue = clock64();
#endif
  if (warp == 0 && ${is_issuer}) {
    ${name}(buffer, taddr);
    if (pycute_elect_one_sync()) {
#if defined(PYCUTE_SOFT_TCGEN05)
      ${soft_commit}
#else
      ${commit}
#endif
    }
  }

  // 6. Wait for the copy, then read this warp's lane quadrant back.
  asm volatile("{\n\t.reg .pred done;\n\tWAIT_%=:\n\t"
               "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], 0;\n\t"
               "@!done bra WAIT_%=;\n\t}" :: "r"(mbar) : "memory");
#if defined(PYCUTE_TIME_COPY)
  // Clocks from the issue to the mbarrier completion of the copy, as the issuing thread sees them.
  if (tid == 0) {
    const long long cycles = clock64() - t_issue;
    out[${ctas} * 128u * PYCUTE_TMEM_COLS + 2u * cta] = unsigned(cycles);
    out[${ctas} * 128u * PYCUTE_TMEM_COLS + 2u * cta + 1u] = unsigned(cycles >> 32);
  }
#endif
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
#endif
  for (unsigned c = 0; c < PYCUTE_TMEM_COLS; c += ${chunk}u) {
    unsigned v[${chunk}];
#if defined(PYCUTE_SOFT_TCGEN05)
    for (unsigned k = 0; k < ${chunk}u; ++k) v[k] = soft_tmem[(${quadrant_lanes}u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k];
#else
    asm volatile("${ld_ptx} {${ld_regs}}, [%${chunk}];" : ${ld_outs} : "r"(warp_taddr + c) : "memory");
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
#endif
    for (unsigned k = 0; k < ${chunk}u; ++k)
      out[(cta * 128u + ${quadrant_lanes}u * (warp % 4u) + lane) * PYCUTE_TMEM_COLS + c + k] = v[k];
  }

  // 7. Free TMEM once every warp has read it.
#if !defined(PYCUTE_SOFT_TCGEN05)
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
#endif
  ${sync}
#if !defined(PYCUTE_SOFT_TCGEN05)
  if (warp == 0) asm volatile("tcgen05.dealloc.cta_group::${cta_group}.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(PYCUTE_TMEM_COLS) : "memory");
#endif
}
