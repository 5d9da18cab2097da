#if defined(PYCUTE_SOFT_TCGEN05)
// The software model stands in for ${ptx}: defining the wrapper's guard first keeps the generated
// function's own (real tcgen05) wrapper out of this translation unit.
#define ${guard}
__device__ const unsigned char ${helper}_lanes[${rows} * ${replicas}] = ${lane_table};
__device__ __forceinline__ void ${helper}(unsigned taddr, unsigned long long desc) {
  pycute_soft_tcgen05_cp(${rows}, ${units}, ${replicas}, ${helper}_lanes, ${cta_group}, taddr, desc);
}
#endif
