#ifndef ${guard}
#define ${guard}
#if defined(PYCUTE_SOFT_TCGEN05)
// Row -> TMEM lane offsets of ${ptx} (rows x replicas), for the software model.
static __device__ const unsigned char ${helper}_lanes[${rows} * ${replicas}] = ${lane_table};
#endif
// ${ptx}: ${rows} rows x ${bits} bits from the descriptor's matrix into TMEM at taddr.
__device__ __forceinline__ void ${helper}(unsigned taddr, unsigned long long desc) {
#if defined(PYCUTE_SOFT_TCGEN05)
  pycute_soft_tcgen05_cp(${rows}, ${units}, ${replicas}, ${helper}_lanes, ${cta_group}, taddr, desc, ${fp4});
#else
  asm volatile("${ptx} [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");
#endif
}
#endif  // ${guard}
