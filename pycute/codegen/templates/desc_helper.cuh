#ifndef PYCUTE_SM100_DESC_HELPER
#define PYCUTE_SM100_DESC_HELPER
// Patch the 14-bit start-address field (bits 0-13) of a tcgen05 shared-memory matrix descriptor with a
// start address given in 16-byte units (shared-window byte address >> 4); every other field stays as
// encoded in the template: (desc & ~${start_mask}) | ((address >> 4) & ${start_mask}).
__device__ __forceinline__ unsigned long long pycute_smem_desc(unsigned long long desc_template, unsigned start_16B) {
  return (desc_template & ~${start_mask}ull) | (unsigned long long)(start_16B & ${start_mask}u);
}
#endif  // PYCUTE_SM100_DESC_HELPER
