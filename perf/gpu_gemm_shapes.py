"""The GEMM's rows of ``python -m perf.report --gpu`` on the shapes issue 42 names (docs/gemm-shapes.md): the bf16
shapes where whole tiles fell behind cuBLAS (``pycute.kernels.gemm``: ``choose_split``'s configuration and
partition), a mixture of experts (``grouped_mm`` beside ``torch._grouped_mm``) and DeepSeek-V3's block-scaled fp8
(``scaled_gemm`` beside torch's blockwise scaled matmul), each checked against float64 first. ``python -m tools
gemm_shapes`` runs the whole sweep."""
from __future__ import annotations

import torch

from .gpu_gemm import bench

__all__ = ["BF16_SHAPES", "TARGETS", "rows"]

BF16_SHAPES = ((1000, 1000, 8192), (777, 4104, 2056), (1024, 1024, 1024), (64, 8192, 8192), (16, 4096, 14336))
MOE = (8, 16384, 14336, 4096)                     # experts, routed rows, N, K
BLOCK = (4096, 7168, 2048)
TARGETS = {"bf16": 0.95, "grouped": 1.0, "fp8-block": 1.0}


def _err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))


def _row(part: str, shape, ours_ms: float, vendor_ms: float, err: float, flops: int, tol: float) -> dict:
    return {"part": part, "shape": list(shape), "tflops": flops / ours_ms / 1e9,
            "vendor_tflops": flops / vendor_ms / 1e9, "ratio": vendor_ms / ours_ms, "err": err,
            "ok": err < tol and vendor_ms / ours_ms >= TARGETS[part]}


def rows(out) -> list[dict]:
    """Measure and print the rows; what was measured, as dicts."""
    import pycute.kernels
    result = []
    for M, N, K in BF16_SHAPES:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        ref = a.double() @ b.double().T
        err = _err(pycute.kernels.gemm(a, b), ref)
        result.append(_row("bf16", (M, N, K), bench(lambda: pycute.kernels.gemm(a, b)),
                           bench(lambda: torch.matmul(a, b.t())), err, 2 * M * N * K, 1e-2))
    G, T, N, K = MOE
    counts = torch.distributions.Multinomial(T, torch.ones(G)).sample().to(torch.int32)
    offs = counts.cumsum(0).to(torch.int32).cuda()
    a = torch.randn(T, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)
    end = int(offs[0])
    err = _err(pycute.kernels.grouped_mm(a, b, offs)[:end], a[:end].double() @ b[0].double().T)
    result.append(_row("grouped", MOE, bench(lambda: pycute.kernels.grouped_mm(a, b, offs)),
                       bench(lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)), err, 2 * T * N * K, 1e-2))
    M, N, K = BLOCK
    a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
    sa, sb = torch.rand(K // 128, M, device="cuda") + 0.5, torch.rand(N // 128, K // 128, device="cuda") + 0.5
    fa, fb = sa.T.repeat_interleave(128, 1).double(), sb.repeat_interleave(128, 0).repeat_interleave(128, 1).double()
    ref = (a.double() * fa) @ (b.double() * fb).T
    err = _err(pycute.kernels.scaled_gemm(a, b, sa, sb, "block", 1), ref)
    import torch.nn.functional as F
    vendor = (lambda: F.scaled_mm(a, b.t(), sa.T, F.ScalingType.BlockWise1x128, sb.T,
                                  F.ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)) \
        if hasattr(F, "scaled_mm") else \
        (lambda: torch._scaled_mm(a, b.t(), sa.T, sb.T, out_dtype=torch.bfloat16))
    result.append(_row("fp8-block", BLOCK, bench(lambda: pycute.kernels.scaled_gemm(a, b, sa, sb, "block", 1)),
                       bench(vendor), err, 2 * M * N * K, 2e-2))
    print("\nThe GEMM on issue 42's shapes (CUDA-graph medians; vendor: torch.matmul, torch._grouped_mm, torch's "
          "blockwise scaled matmul)", file=out)
    for r in result:
        print(f"  {r['part']:<10} {'x'.join(map(str, r['shape'])):<20} {r['tflops']:8.1f} TFLOP/s  "
              f"{r['ratio']:7.1%} of {r['vendor_tflops']:.1f}  >= {TARGETS[r['part']]:.0%}  "
              f"{'ok' if r['ok'] else 'MISSED'}  err {r['err']:.1e}", file=out)
    return result
