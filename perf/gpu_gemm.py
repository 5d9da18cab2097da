"""The Hopper GEMM (pycute/kernels/hopper_gemm) timed on the GPU beside cuBLAS (``torch.matmul``), Triton's matmul
and ``torch._scaled_mm``, on the same inputs in the same run: the benchmarks' launch of pycute's kernel (the plans of
each problem made once, then the package's launcher on torch's stream), a Triton matmul (the tutorial's grouped
raster, written here), CUDA-graph timing, and the f32 reference every timed result is checked against. Needs torch
and triton (the GPU machine has them); nothing here runs in CI."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from pycute.compile.runtime import tensor_map_bytes
from pycute.kernels.hopper_gemm import GemmPlans, HopperGemm
from pycute.kernels.launcher import Launcher

__all__ = ["Launch", "triton_mm", "TRITON_CONFIGS", "bench", "rel_err", "inputs", "reference", "run_ours"]


# ---- launching a pycute kernel on torch's stream ----------------------------------------------------------------
class Launch:
    """A compiled configuration of the GEMM launched as the benchmarks always have: ``prepare`` makes the plans of
    the problem's arrays (checked to issue the compiled kernel's boxes) and encodes their tensor maps -- the host
    work of a first call, milliseconds -- and a call launches the prepared arguments through the package's launcher
    (torch's current stream, the cluster as a launch attribute), so that torch's events and CUDA graphs see it."""

    def __init__(self, gemm: HopperGemm):
        self.gemm = gemm
        torch.cuda.init()
        self.launcher = Launcher.of(gemm, torch.cuda.current_device())
        self.sms = torch.cuda.get_device_properties(0).multi_processor_count

    def prepare(self, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, scale: float = 1.0):
        """The launch's grid and arguments for ``d = scale * a @ b.T`` (row-major views with unit inner stride)."""
        g = self.gemm
        M, K = a.shape
        N = b.shape[0]
        plans = GemmPlans.of(g, M, N, K, a.stride(0), b.stride(0), d.stride(0))
        assert plans.issues_as(g.plans), "the problem's tensor maps differ from the compiled kernel's boxes"
        maps = [tensor_map_bytes(m.encode(t.data_ptr())) for m, t in zip(plans.maps(), (a, b, d))]
        model = g.plans.sched.at((-(-M // g.BM), -(-N // g.BN)), -(-K // g.BK))      # whole tiles
        grid = model.grid(self.sms, g.ctas_per_sm)
        # no workspace, no counters, every unit whole, no fp8 scales; the plain epilogue's empty struct
        return grid, (*maps, M, N, K, float(scale), 0, 0, model.split.dp, 0, 0, 0, b"\0")

    def __call__(self, prepared) -> None:
        grid, args = prepared
        self.launcher(grid, *args)


# ---- Triton's matmul (the tutorial's grouped-raster kernel, our own writing) ------------------------------------
@triton.jit
def _triton_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbn, sbk, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    pm = tl.cdiv(M, BM)
    pn = tl.cdiv(N, BN)
    per_group = GROUP * pn
    first = (pid // per_group) * GROUP
    gsize = min(pm - first, GROUP)
    pid_m = first + (pid % per_group) % gsize
    pid_n = (pid % per_group) // gsize
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + rk
        a = tl.load(a_ptr + rm[:, None] * sam + kk[None, :] * sak, mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * sbk + rn[None, :] * sbn, mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


TRITON_CONFIGS = [(128, 256, 64, 3, 8), (128, 128, 64, 4, 4), (256, 128, 64, 3, 8), (128, 128, 64, 3, 8),
                  (64, 128, 64, 4, 4)]


def triton_mm(a, b, c, cfg):
    BM, BN, BK, stages, warps = cfg
    M, K = a.shape
    N = b.shape[0]
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    _triton_mm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                     BM=BM, BN=BN, BK=BK, GROUP=8, num_stages=stages, num_warps=warps)


# ---- measuring ------------------------------------------------------------------------------------------------
def bench(fn) -> float:
    try:
        return float(triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median"))
    except Exception:
        return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    out = out.float()
    if torch.isnan(out).any():
        return float("nan")
    return float(torch.linalg.norm(out - ref) / torch.linalg.norm(ref))


def padded(rows: int, cols: int, dtype: torch.dtype, fill: float | None = None) -> torch.Tensor:
    """A ``rows x cols`` view of a buffer whose rows are whole 16-byte units (TMA's stride rule): contiguous when
    ``cols`` already is, else the first ``cols`` columns of a wider buffer."""
    unit = 16 // torch.empty(0, dtype=dtype).element_size()
    pitch = -(-cols // unit) * unit
    buf = torch.empty(rows, pitch, device="cuda", dtype=dtype) if fill is None else \
        torch.full((rows, pitch), fill, device="cuda", dtype=dtype)
    return buf[:, :cols]


def inputs(M, N, K, dtype):
    """Random A (M x K) and B (N x K) in ``dtype`` ("bf16" or "e4m3"), in 16-byte-aligned rows."""
    torch.manual_seed(M * 7 + N * 3 + K)
    kind = torch.bfloat16 if dtype == "bf16" else torch.float8_e4m3fn
    a, b = padded(M, K, kind), padded(N, K, kind)
    a.copy_(torch.randn(M, K, device="cuda").to(kind))
    b.copy_(torch.randn(N, K, device="cuda").to(kind))
    return a, b


def reference(a, b, scale=1.0):
    torch.backends.cuda.matmul.allow_tf32 = False
    return (a.float() @ b.float().t()) * scale


def run_ours(gemm: HopperGemm, launch: Launch, a, b, scale=1.0):
    M, N = a.shape[0], b.shape[0]
    d = padded(M, N, torch.bfloat16, float("nan"))
    prep = launch.prepare(a, b, d, scale)
    launch(prep)
    torch.cuda.synchronize()
    return d, prep
