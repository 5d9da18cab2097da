"""Whole kernels on the CPU: the block-scaled GEMM example (NVFP4, cta_group::2: four pairs, 8 CTAs x 192 threads,
a 256 x 128 tile per pair, 2 k-blocks) run by ``pycute.interp.run_kernel``, every thread, per round."""
from pycute.kernels.blockscaled_gemm import BlockScaledGemm
from pycute.kernels.blockscaled_gemm.check import run_whole


def test_whole_gemm_on_the_cpu(benchmark):
    gemm = BlockScaledGemm("nvfp4", 2, m=512, n=256, k=512)
    run_whole(gemm)                                              # the compile, cached
    benchmark.group = "interpreter"
    benchmark.extra_info["threads"] = gemm.grid * 192
    got, want = benchmark.pedantic(run_whole, args=(gemm,), rounds=2, iterations=1)
    assert (got == want).all()
