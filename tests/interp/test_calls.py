"""printf and assert in kernels run on the CPU: printf's arguments are read from the buffer the caller packed
(ints, long longs, doubles, strings, chars, widths and precisions), the lines come back in order, and a failed assert
stops the run with CUDA's message."""
import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.interp import run_kernel

SOURCE = r'''
extern "C" __global__ void report(const int* x, const float* y) {
  if (threadIdx.x < 2)
    printf("t%d x=%d y=%.2f %s %lld [%5.1e] [%-4u] %c %x\n", threadIdx.x, x[threadIdx.x], y[0], "ok", -5ll,
           1234.5, 7u, 'z', 255u);
  assert(x[threadIdx.x] >= 0);
}
'''


@pytest.fixture(scope="module")
def kernel():
    return compile_cuda(SOURCE, arch="sm_90a")


def test_printf_formats_each_threads_arguments_in_order(kernel, capsys):
    run = run_kernel(kernel, block=4, args=[np.array([1, 2, 3, 4], dtype=np.int32), np.array([2.5], np.float32)])
    want = [f"t{t} x={t + 1} y=2.50 ok -5 [1.2e+03] [7   ] z ff\n" for t in range(2)]
    assert list(run.printed) == want and capsys.readouterr().out == "".join(want)


def test_a_failed_assert_stops_the_run_with_cudas_message(kernel):
    with pytest.raises(pc.EmulationError, match=r"pycute.cu:\d+: void report\(const int \*, const float \*\): block "
                                                r"\(0, 0, 0\), thread \(2, 0, 0\): Assertion `x\[threadIdx.x\] >= 0` "
                                                r"failed"):
        run_kernel(kernel, block=4, args=[np.array([1, 2, -3, 4], dtype=np.int32), np.array([2.5], np.float32)])
