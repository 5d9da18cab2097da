"""``selp.f32`` (what a C ``cond ? x : y`` of floats compiles to) picks one operand's bits, -0.0 and infinities
included."""
import numpy as np

from pycute.compile import compile_cuda
from pycute.interp import run_kernel

SOURCE = """
extern "C" __global__ void pick(const float* x, const float* y, float* out) {
  const int i = threadIdx.x;
  const float a = x[i] * 2.0f, b = y[i] + 1.0f;
  out[i] = a > 0.0f ? a : b;
}
"""


def test_selp_f32_picks_the_bits_of_the_chosen_operand():
    x = np.array([1.5, -2.0, 0.0, np.inf, -0.0, 3.0, -1e30, 7.0] * 4, dtype=np.float32)
    y = np.array([0.5, -1.0, np.inf, 2.0, -np.inf, -4.0, 1.0, -1.0] * 4, dtype=np.float32)
    out = np.zeros(32, dtype=np.float32)
    run_kernel(compile_cuda(SOURCE, arch="sm_90a"), "pick", block=32, args=[x, y, out])
    a, b = x * np.float32(2), y + np.float32(1)
    assert np.array_equal(out.view(np.uint32), np.where(a > 0, a, b).astype(np.float32).view(np.uint32))
