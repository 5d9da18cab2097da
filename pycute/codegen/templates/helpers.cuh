#ifndef PYCUTE_SM100_HELPERS
#define PYCUTE_SM100_HELPERS
// True in exactly one lane of the calling warp, which must be converged (all 32 lanes call). elect.sync elects
// the same lane for the same member mask every time (PTX ISA, elect.sync), so a later call picks the lane that
// issued the copies: the lane that must commit them.
__device__ __forceinline__ bool pycute_elect_one_sync() {
  unsigned elected;
  asm volatile("{\n\t.reg .pred p;\n\telect.sync _|p, 0xFFFFFFFF;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(elected));
  return elected != 0;
}

// The shared-memory matrix descriptor of a buffer: the template (start address 0) with its start-address field
// (bits ${start_lo}-${start_hi}: the shared-window address in ${start_unit}-byte units) set to the buffer's address.
__device__ __forceinline__ unsigned long long pycute_smem_desc(unsigned long long desc_template, const void* smem_buffer) {
  return desc_template | ((static_cast<unsigned>(__cvta_generic_to_shared(smem_buffer)) >> ${start_shift}) & ${start_mask}u);
}

// The descriptor ``units`` ${start_unit}-byte units further on: one 64-bit add (one UIADD3.64 on sm_100). The start field never
// carries into the next field: a plan's footprint lies in the CTA's shared memory (at most ${smem_max} B, pycute
// refuses more), so the buffer's offset plus the copy's offset stays below 2^${start_bits} B.
__device__ __forceinline__ unsigned long long pycute_smem_desc_add(unsigned long long desc, unsigned long long units) {
  asm("add.u64 %0, %0, %1;" : "+l"(desc) : "l"(units));
  return desc;
}
#endif  // PYCUTE_SM100_HELPERS
