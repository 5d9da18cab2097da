"""CUDA's own device headers compile with no flags on a CPU-only machine (the nvidia-cuda-runtime wheel), and the
kernels that use their bf16 / f16 / fp8 arithmetic and conversions run whole on the CPU, bit for bit with
references computed here (numpy's float16, exact rationals rounded to nearest even, the fp8 code table)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from pycute.compile import compile_cuda
from pycute.compile.nvrtc import cuda_include_dir
from pycute.interp import run_kernel
from pycute.sim.operand import decode as code_values

from tests.interp.test_floats import round_f32

SOURCE = r'''
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
extern "C" __global__ void mix(const float* x, const float* y, __nv_bfloat16* bf, __half* h, unsigned short* f8,
                               float* f, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const __nv_bfloat16 a = __float2bfloat16_rn(x[i]), b = __float2bfloat16_rn(y[i]);
  bf[i] = __hfma(a, b, a);                                    // fma.rn.bf16
  h[i] = __hmul(__float2half_rn(x[i]), __float2half_rn(y[i]));  // mul.f16
  f8[i] = __nv_fp8x2_e4m3(make_float2(x[i], y[i])).__x;       // cvt.rn.satfinite.e4m3x2.f32 (y in the upper byte)
  f[i] = __fmaf_rn(x[i], y[i], 1.0f) + __bfloat162float(a);  // fma.rn.f32, cvt.f32.bf16
}
'''


def bf16(value: float) -> int:
    """Round to nearest even into bf16: 8 significant bits."""
    if value == 0:
        return 0
    m, e = math.frexp(value)
    return int(np.array(round(m * 256) * 2.0 ** (e - 8), dtype=np.float32).view(np.uint32)) >> 16


def bf16_value(bits: int) -> float:
    return float(np.array(bits << 16, dtype=np.uint32).view(np.float32))


def e4m3(value: float) -> int:
    codes = [(Fraction(float(v)), c) for c, v in enumerate(code_values(np.arange(256), "f8e4m3")) if np.isfinite(v)]
    v = Fraction(min(max(value, -448.0), 448.0))
    best = min(abs(c - v) for c, _ in codes)
    return min((code for c, code in codes if abs(c - v) == best), key=lambda code: (code & 1, code))


def test_nvrtc_finds_cudas_headers_without_flags():
    assert cuda_include_dir() is not None and (cuda_include_dir() / "cuda_fp8.h").is_file()


@pytest.fixture(scope="module")
def outputs():
    n = 96
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(n) * 3).astype(np.float32), (rng.standard_normal(n) * 50).astype(np.float32)
    out = {"bf": np.zeros(n, np.uint16), "h": np.zeros(n, np.float16), "f8": np.zeros(n, np.uint16),
           "f": np.zeros(n, np.float32)}
    run_kernel(compile_cuda(SOURCE, arch="sm_90a"), grid=2, block=64, args=[x, y, *out.values(), n])
    return x, y, out


def test_bf16_fma_from_cuda_bf16_h_rounds_once(outputs):
    x, y, out = outputs
    a, b = [bf16(float(v)) for v in x], [bf16(float(v)) for v in y]
    want = [bf16(bf16_value(p) * bf16_value(q) + bf16_value(p)) for p, q in zip(a, b)]
    assert list(out["bf"]) == want


def test_f16_multiply_from_cuda_fp16_h_is_ieee_half(outputs):
    x, y, out = outputs
    want = (x.astype(np.float16).astype(np.float64) * y.astype(np.float16).astype(np.float64)).astype(np.float16)
    assert np.array_equal(out["h"].view(np.uint16), want.view(np.uint16))


def test_the_e4m3x2_conversion_from_cuda_fp8_h_saturates_and_packs_y_high(outputs):
    x, y, out = outputs
    assert list(out["f8"]) == [(e4m3(float(q)) << 8) | e4m3(float(p)) for p, q in zip(x, y)]


def test_f32_fma_and_bf16_widening(outputs):
    x, y, out = outputs
    fma = np.array([round_f32(Fraction(float(p)) * Fraction(float(q)) + 1) for p, q in zip(x, y)], dtype=np.float32)
    widened = np.array([bf16_value(bf16(float(v))) for v in x], dtype=np.float32)
    assert np.array_equal(out["f"], fma + widened)
