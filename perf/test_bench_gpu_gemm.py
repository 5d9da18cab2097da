"""The Hopper GEMM on the GPU (pytest-benchmark): bf16 and e4m3 at 8192^3 with ``choose``'s configuration, each
checked against an f32 reference first, the rate and its ratio to the same run's cuBLAS (``torch.matmul``) /
``torch._scaled_mm`` recorded. Skipped without an sm_90 GPU and torch (docs/hopper-gemm.md has the whole sweep)."""
import pytest

from pycute.compile import runtime

INFO = runtime.device_info()
torch = pytest.importorskip("torch") if INFO is not None else None
REASON = None if INFO is not None and INFO[1] == (9, 0) else "needs an sm_90 GPU (wgmma is sm_90a)"
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), pytest.mark.gpu]

N = 8192


@pytest.mark.parametrize("dtype, scale, target", [("bf16", 1.0, 0.90), ("e4m3", 0.5, 0.85)])
def test_hopper_gemm(benchmark, dtype, scale, target):
    from pycute.kernels.hopper_gemm import choose

    from .gpu_gemm import Launch, bench, inputs, reference, rel_err, run_ours
    a, b = inputs(N, N, N, dtype)
    g = choose(N, N, N, dtype)
    launch = Launch(g)
    d, prep = run_ours(g, launch, a, b, scale)
    assert rel_err(d, reference(a, b, scale)) < 2e-2

    def run():
        launch(prep)
        torch.cuda.synchronize()
    benchmark.pedantic(run, rounds=5, warmup_rounds=1)
    flops = 2 * N ** 3
    ours = flops / bench(lambda: launch(prep)) / 1e9
    if dtype == "bf16":
        base = flops / bench(lambda: torch.matmul(a, b.t())) / 1e9
    else:
        sa, sb = torch.tensor(1.0, device="cuda"), torch.tensor(scale, device="cuda")
        base = flops / bench(lambda: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)) / 1e9
    benchmark.group = "hopper gemm"
    benchmark.extra_info.update({"config": repr(g), "TFLOPs": round(ours, 1), "vs_baseline": round(ours / base, 4)})
    assert ours / base >= target
