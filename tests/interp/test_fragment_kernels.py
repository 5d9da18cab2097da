"""The register-fragment round trips (pycute/harness/fragments.py) run whole on the CPU: every thread's coordinate
helpers give ``fragment_coords``' tables; every reduction function leaves the numpy reference's bits; S = Q K^T
converted to P feeds O = P V equal to the exact product (shuffled and permuted e4m3 included), and a conversion of
special values leaves the coordinates' reference."""
import numpy as np
import pytest

import pycute as pc
from pycute.compile import compile_cuda
from pycute.harness.fragment_chain import CHAIN_CASES
from pycute.harness.fragments import CoordsRoundTrip, ReduceRoundTrip, same_floats
from pycute.mma.reduce import make_reduction
from pycute.interp import run_kernel

COORDS = {
    "wgmma D f32 128x24": pc.wgmma_accumulator(pc.f32, 128, 24),
    "wgmma A e4m3 64x64": pc.wgmma_a_fragment(pc.f8e4m3, 64, 64),
    "tcgen05.ld 8 warps 128x64": pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld", warps=8),
}


@pytest.mark.parametrize("name", list(COORDS))
def test_each_threads_helpers_give_the_tables(name):
    rt = CoordsRoundTrip(pc.fragment_coords(COORDS[name]))
    out = np.zeros(rt.out_words, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.threads, args=[np.zeros(4, dtype=np.uint8), out])
    assert np.array_equal(rt.got(out), rt.expected())


REDUCTIONS = {
    "wgmma D f32 128x64 rows": (pc.wgmma_accumulator(pc.f32, 128, 64), "row"),
    "wgmma D f32 64x24 rows": (pc.wgmma_accumulator(pc.f32, 64, 24), "row"),
    "tcgen05.ld 4 warps 128x32 rows": (pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 32), "ld", warps=4), "row"),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_every_reduction_function_leaves_the_references_bits(name):
    rt = ReduceRoundTrip(make_reduction(*REDUCTIONS[name]))
    out = np.zeros(rt.out_words, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.threads, args=[rt.input(3).view(np.float32), out])
    assert same_floats(rt.got(out), rt.expected(3)).all()


CHAINS = [c for c in CHAIN_CASES if c.name in {"bf16 m64 n64 d64 dv64 same", "f16 m64 n128 d64 dv64 same",
                                                 "f8e4m3 m64 n64 d32 dv64 same", "f8e4m3 m64 n64 d32 dv64 permuted"}]


@pytest.mark.parametrize("case", CHAINS, ids=lambda c: c.name)
def test_s_converted_to_p_feeds_o_equal_to_the_exact_product(case):
    rt = case.roundtrip()
    out = np.zeros(rt.out_words, dtype=np.uint32)
    run_kernel(rt.compile(), block=rt.threads, smem=rt.smem_bytes, args=[rt.input(0), out])
    check = rt.check(out)
    assert check["s_rounded"] > 0                               # P's type rounded some of S
    assert all(v == 0 for k, v in check.items() if k not in ("s_rounded", "elements")), check


@pytest.mark.parametrize("dtype", [pc.bf16, pc.f16, pc.f8e4m3, pc.f8e5m2])
def test_a_conversion_of_special_values_leaves_the_references_registers(dtype):
    p = pc.make_fragment_convert(pc.wgmma_a_fragment(dtype, 64, 32), pc.wgmma_accumulator(pc.f32, 64, 32))
    kernel = p.cuda("conv") + f"""extern "C" __global__ void k(const float* in, unsigned* out) {{
  float s[16]; unsigned d[{p.dst_registers}];
  for (int i = 0; i < 16; ++i) s[i] = in[threadIdx.x * 16 + i];
  conv(s, d);
  for (int i = 0; i < {p.dst_registers}; ++i) out[threadIdx.x * {p.dst_registers} + i] = d[i];
}}"""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((128, 16)) * np.exp2(rng.integers(-30, 30, (128, 16)))).astype(np.float32)
    x[:, ::5] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, 65520.0, 449.0], np.float32), (128, 4))
    out = np.zeros(128 * p.dst_registers, dtype=np.uint32)
    run_kernel(compile_cuda(kernel, arch="sm_90a"), block=128, args=[x, out])
    assert np.array_equal(out.reshape(128, -1), p.reference(x))
