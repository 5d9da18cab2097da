"""Call sites checked against generated functions' calling conventions: a kernel built with -lineinfo says which
inlined function each instruction came from, so an elected-thread function called by a whole warp, or a warp
function called by part of one, is a ConventionError naming the function and the lanes."""
from types import SimpleNamespace

import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.interp import ConventionError, run_kernel

SOURCE = r'''
#include "pycute/common.cuh"
__device__ __forceinline__ void store_one(unsigned* p, unsigned v) { p[0] = v; }
__device__ __forceinline__ void warp_sum(unsigned* p, unsigned v) {
  const unsigned s = __reduce_add_sync(0xffffffffu, v);
  if (pycute_elect_one_sync()) p[1] = s;
}
extern "C" __global__ void good(unsigned* p) {
  if (pycute_elect_one_sync()) store_one(p, 7u);
  warp_sum(p, threadIdx.x);
}
extern "C" __global__ void every_lane_stores(unsigned* p) { store_one(p, threadIdx.x); }
extern "C" __global__ void one_lane_sums(unsigned* p) {
  if (threadIdx.x == 0u) warp_sum(p, 1u);
}
'''
CONVENTIONS = {"store_one": SimpleNamespace(caller="elected", threads=1),
               "warp_sum": SimpleNamespace(caller="warp", threads=32)}


@pytest.fixture(scope="module")
def kernels():
    return compile_cuda(SOURCE, arch="sm_90a", options=("-lineinfo",))


def test_calls_that_follow_their_conventions_pass(kernels):
    out = np.zeros(2, dtype=np.uint32)
    run_kernel(kernels, "good", block=32, args=[out], conventions=CONVENTIONS)
    assert list(out) == [7, sum(range(32))]


def test_an_elected_function_called_by_every_lane_is_named(kernels):
    with pytest.raises(ConventionError, match=r"store_one \(its convention: called by one elected thread\) is called "
                                              r"by lanes 0 and 1 of warp 0 of CTA 0"):
        run_kernel(kernels, "every_lane_stores", block=32, args=[np.zeros(2, dtype=np.uint32)],
                   conventions=CONVENTIONS)


def test_a_warp_function_called_by_one_lane_is_named(kernels):
    with pytest.raises(ConventionError, match=r"warp_sum \(its convention: called by warp\) was called by lanes 0 of "
                                              r"warp 0 of CTA 0, not all 32"):
        run_kernel(kernels, "one_lane_sums", block=32, args=[np.zeros(2, dtype=np.uint32)],
                   conventions=CONVENTIONS)


def test_conventions_need_line_information_and_functions_the_kernel_inlines():
    plain = compile_cuda(SOURCE, arch="sm_90a")
    with pytest.raises(pc.CompileError, match="compile with options=\\('-lineinfo',\\)"):
        run_kernel(plain, "good", block=32, args=[np.zeros(2, dtype=np.uint32)], conventions=CONVENTIONS)
    with pytest.raises(pc.CompileError, match="conventions name missing_fn, from none of which an instruction of good "
                                              "comes"):
        run_kernel(compile_cuda(SOURCE, arch="sm_90a", options=("-lineinfo",)), "good", block=32,
                   args=[np.zeros(2, dtype=np.uint32)], conventions={"missing_fn": CONVENTIONS["warp_sum"]})
