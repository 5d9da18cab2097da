${function}
// Issue-only probe: the generated function alone, for SASS and PTX-level checks.
extern "C" __global__ void ${name}_probe(unsigned tmem_base) {
  extern __shared__ __align__(1024) unsigned char ${shared_symbol}[];
  ${name}(${shared_symbol}, tmem_base);
}
