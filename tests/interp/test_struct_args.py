"""A kernel parameter passed by value that holds pointers (a ``__grid_constant__`` struct): ``StructArg`` places
its arrays in global memory and writes their addresses at their offsets, so the kernel reads and writes them."""
import numpy as np
import pytest

from pycute.compile import compile_cuda
from pycute.interp import StructArg, run_kernel
from pycute.errors import EmulationError

SOURCE = """
struct args { const float* x; float* y; float alpha; };
extern "C" __global__ void axpy(const __grid_constant__ args a, int n) {
  const int i = threadIdx.x;
  if (i < n) a.y[i] = a.alpha * a.x[i] + a.y[i];
}
"""


def test_a_structs_arrays_are_placed_and_its_numbers_written():
    x, y = np.arange(40, dtype=np.float32), np.ones(40, dtype=np.float32)
    run_kernel(compile_cuda(SOURCE, arch="sm_90a"), "axpy", block=64,
               args=[StructArg(((0, x), (8, y), (16, np.float32(0.5).tobytes()))), 40])
    assert np.array_equal(y, 0.5 * np.arange(40, dtype=np.float32) + 1)


def test_a_field_past_the_struct_is_refused():
    with pytest.raises(EmulationError, match=r"a field of 8 B at offset 20 is outside its 24 bytes"):
        run_kernel(compile_cuda(SOURCE, arch="sm_90a"), "axpy", block=32,
                   args=[StructArg(((20, np.zeros(4, np.float32)),)), 4])
