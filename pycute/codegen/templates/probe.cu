${function}
// Issue-only probe: every lane of a one-warp block calls the generated function (the warp convention), for SASS
// and PTX-level checks and the issue-cost measurement.
extern "C" __global__ void ${name}_probe(unsigned tmem_base${params}) {
  extern __shared__ __align__(1024) unsigned char ${shared_symbol}[];
  ${call}
}
