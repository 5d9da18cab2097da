
#ifndef ${guard}
#define ${guard}
// ${ptx}: ${rows} rows x ${bits} bits from the descriptor's matrix into TMEM at taddr.
__device__ __forceinline__ void ${helper}(unsigned taddr, unsigned long long desc) {
  asm volatile("${ptx} [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");
}
#endif  // ${guard}
