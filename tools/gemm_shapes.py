"""Does pycute's GEMM run at vendor speed on the shapes LLMs run, in bf16, grouped and fp8?

Parts, each in its own child process (a fault or a hang loses that part, never the run):

* ``bf16``: M in 1 .. 16384 by (N, K) of common model widths, and the shapes docs/hopper-gemm.md found behind
  cuBLAS: ``pycute.kernels.gemm`` as ``choose_split`` picks it (whole tiles, split-K or stream-K) beside
  ``torch.matmul``; where the tiles fill less than two waves, the other partitions too (calibrating the cost model);
* ``grouped``: mixtures of experts (8 to 256 experts, ragged tokens per expert, empty experts included):
  ``pycute.kernels.grouped_mm`` beside ``torch._grouped_mm`` (offsets), and the padded form (counts);
* ``fp8``: DeepSeek-V3 block scales (1 x 128 on A, 128 x 128 on B), ``pycute.kernels.scaled_gemm`` beside torch's
  blockwise scaled matmul (``F.scaled_mm`` / ``torch._scaled_mm``, whichever the installed torch has), errors
  against float64; per-tensor scales at K up to 16384: promoted (every k-block) beside ``_scaled_mm``'s default and
  unpromoted beside its fast accumulation, errors and speed.

Every timed result is checked first against a float64 reference (pycute's outputs written into NaN-filled buffers;
huge outputs on a sample of rows). Timing: ``triton.testing.do_bench_cudagraph`` (median of CUDA-graph replays),
every contender on the same inputs in the same process. JSON lines to ``$OUT/gemm_shapes.jsonl`` and a table.

    PYTHONPATH=. python -m tools gemm_shapes [--quick] [--part bf16|grouped|fp8 ...] [--jobs 16] [OUT.jsonl]
    PYTHONPATH=. python -m tools gemm_shapes --profile 1000x1000x8192     (ncu: pycute's kernel and cuBLAS's)
    PYTHONPATH=. python -m tools gemm_shapes --dry                        (CPU: tiny cases through the interpreter)
"""
from __future__ import annotations

import argparse
import json
import time

from tools._common import JsonLines, json_rows, ncu_path, out_path, parse_ncu, run_child, run_question

PARTS = ("bf16", "grouped", "fp8")
LIMIT_S = 240
M_VALUES = (1, 16, 64, 128, 512, 1024, 2048, 4096, 8192, 16384)
WIDTHS = ((4096, 4096), (4096, 14336), (14336, 4096), (7168, 18432), (18432, 7168), (7168, 2048))
ODD = ((1000, 1000, 8192), (777, 4104, 2056), (1024, 1024, 1024), (64, 8192, 8192))
#: (experts, routed rows, N, K): Mixtral-like 8 experts, 64 mid-sized, DeepSeek-V3's 256 (up and down projections),
#: and a decode step's few rows per expert.
MOE = ((8, 16384, 14336, 4096), (8, 16384, 4096, 14336), (64, 16384, 2816, 2048), (256, 32768, 4096, 7168),
       (256, 32768, 7168, 2048), (256, 2048, 4096, 7168))
#: DeepGEMM's normal-GEMM table's (N, K) at three M.
BLOCK = tuple((m, n, k) for m in (128, 1024, 4096) for n, k in ((2112, 7168), (24576, 1536), (7168, 16384),
                                                                  (4096, 7168), (7168, 2048)))
TENSOR_K = (1024, 4096, 16384)
TENSOR_MN = 4096
#: The padded form (experts, rows each, N, K).
PADDED = (32, 512, 4096, 2048)
SAMPLE_ROWS = 512


def bf16_shapes(quick: bool) -> list[tuple[int, int, int]]:
    ms = (1, 64, 1024, 8192) if quick else M_VALUES
    widths = WIDTHS[:3] if quick else WIDTHS
    return [(m, n, k) for m in ms for n, k in widths] + list(ODD)


# ---- measuring ---------------------------------------------------------------------------------------------------
def rel_err(got, ref) -> float:
    import torch
    got = got.double()
    if not torch.isfinite(got).all():
        return float("inf")
    return float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref).clamp_min(1e-300))


def rows_of(M: int, device: str):
    """The rows a result is checked on: all, or a fixed sample of a large output."""
    import torch
    if M <= SAMPLE_ROWS:
        return torch.arange(M, device=device)
    return torch.randperm(M, generator=torch.Generator().manual_seed(M))[:SAMPLE_ROWS].sort().values.to(device)


def bench(fn) -> float:
    """Milliseconds per call: the median of CUDA-graph replays."""
    import triton.testing
    return float(triton.testing.do_bench_cudagraph(fn, rep=40, return_mode="median"))


def launch_ours(g, split, a, b, d, scale: float = 1.0, sa=None, sb=None) -> None:
    """Configuration ``g`` shared as ``split`` on ``a``, ``b`` into the caller's ``d`` (NaN-filled for a check)."""
    import torch
    from pycute.kernels.hopper_gemm.op import counters
    from pycute.kernels.hopper_gemm.runs import gemm_run
    from pycute.kernels.launcher import Launcher, current_stream, sm_count
    M, K = a.shape
    N = b.shape[0]
    run, dev = gemm_run(g), a.device.index
    launch = run.launch(M, N, K, split, sm_count(dev) * g.ctas_per_sm)
    ws = ctr = 0
    if launch.counters:
        ws = torch.empty(launch.workspace_bytes // 4, dtype=torch.float32, device=a.device).data_ptr()
        ctr = counters(dev, current_stream(dev), launch.counters).data_ptr()
    Launcher.of(g, dev)(launch.grid, run.map_a.encode(a), run.map_b.encode(b), run.map_d.encode(d), M, N, K, scale,
                        ws, ctr, split.dp, split.workers, 0 if sa is None else sa.data_ptr(),
                        0 if sb is None else sb.data_ptr(), b"\0")          # the plain epilogue's empty struct


def alternatives(M: int, N: int, K: int, dtype: str, sms: int) -> list:
    """Partitions beside ``choose_split``'s for a shape whose tiles fill less than two waves: ``choose``'s
    configuration whole, stream-K over its clusters, split-K by 2 and 4."""
    from pycute.kernels.hopper_gemm.config import choose, shared
    from pycute.pipeline.split_k import KSplit
    g = choose(M, N, K, dtype, sms)
    units = g.plans.sched.at((-(-M // g.BM), -(-N // g.BN)), -(-K // g.BK)).units
    clusters = sms * g.ctas_per_sm // g.cluster
    if units >= 2 * clusters:
        return []
    kb = -(-K // g.BK)
    out = [(g, KSplit.data_parallel(units)), (shared(g), KSplit.stream(min(clusters, units * kb)))]
    return out + [(shared(g), KSplit.split(units, s)) for s in (2, 4) if s <= kb]


# ---- the parts ---------------------------------------------------------------------------------------------------
def part_bf16(quick: bool, emit) -> None:
    import torch
    from pycute.kernels.hopper_gemm.op import config_for
    from pycute.kernels.launcher import sm_count
    sms = sm_count(0)
    for M, N, K in bf16_shapes(quick):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
        rows = rows_of(M, "cuda")
        ref = a[rows].double() @ b.double().T
        flops = 2 * M * N * K
        base = {"part": "bf16", "shape": [M, N, K]}
        c = torch.matmul(a, b.t())
        ms = bench(lambda: torch.matmul(a, b.t()))
        vendor = flops / ms / 1e9
        emit({**base, "contender": "cublas", "ms": ms, "tflops": vendor, "err": rel_err(c[rows], ref)})
        pick = config_for(M, N, K, "bf16", sms)
        for label, (g, split) in [("pycute", pick)] + [(f"alt:{s}", (g2, s)) for g2, s in
                                                       ([] if quick else alternatives(M, N, K, "bf16", sms))]:
            d = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
            launch_ours(g, split, a, b, d)
            err = rel_err(d[rows], ref)
            row = {**base, "contender": label, "config": repr(g), "split": [split.dp, split.workers], "err": err}
            if err < 1e-2:
                ms = bench(lambda: launch_ours(g, split, a, b, d))
                row.update(ms=ms, tflops=flops / ms / 1e9, of_vendor=flops / ms / 1e9 / vendor)
            emit(row)


def ragged(G: int, rows: int, seed: int):
    """Tokens per expert: a skewed draw (a Dirichlet's weights), some experts empty, summing to ``rows``."""
    import numpy as np
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.full(G, 0.6))
    w[rng.choice(G, max(1, G // 16), replace=False)] = 0
    counts = rng.multinomial(rows, w / w.sum())
    return counts


def part_grouped(quick: bool, emit) -> None:
    import torch
    import pycute.kernels
    for G, T, N, K in (MOE[::2] if quick else MOE):
        counts = torch.tensor(ragged(G, T, G + N), dtype=torch.int32)
        offs = counts.cumsum(0).to(torch.int32).cuda()
        a = torch.randn(T, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)
        ends = offs.tolist()
        starts = [0] + ends[:-1]
        check = [g for g in range(G) if counts[g] > 0][:8]                      # eight groups, every row
        refs = {g: a[starts[g]:ends[g]].double() @ b[g].double().T for g in check}
        flops = 2 * T * N * K
        base = {"part": "grouped", "shape": [G, T, N, K], "empty_groups": int((counts == 0).sum())}

        def err_of(d):
            return max(rel_err(d[starts[g]:ends[g]], refs[g]) for g in check)

        try:
            c = torch._grouped_mm(a, b.transpose(-2, -1), offs=offs)
            ms = bench(lambda: torch._grouped_mm(a, b.transpose(-2, -1), offs=offs))
            vendor = flops / ms / 1e9
            emit({**base, "contender": "torch._grouped_mm", "ms": ms, "tflops": vendor, "err": err_of(c)})
        except Exception as e:  # noqa: BLE001 - recorded, the run goes on
            vendor = float("nan")
            emit({**base, "contender": "torch._grouped_mm", "error": f"{type(e).__name__}: {str(e)[:300]}"})
        d = pycute.kernels.grouped_mm(a, b, offs)
        err = err_of(d)
        row = {**base, "contender": "pycute", "err": err}
        if err < 1e-2:
            ms = bench(lambda: pycute.kernels.grouped_mm(a, b, offs))
            row.update(ms=ms, tflops=flops / ms / 1e9, of_vendor=flops / ms / 1e9 / vendor)
        emit(row)
    G, M_max, N, K = PADDED                                                     # the padded form
    counts = torch.tensor(ragged(G, G * M_max // 2, 5), dtype=torch.int32).clamp(max=M_max).cuda()
    a = torch.randn(G, M_max, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(G, N, K, device="cuda", dtype=torch.bfloat16)
    d = pycute.kernels.grouped_mm(a, b, counts=counts)
    err = max(rel_err(d[g, :c], a[g, :c].double() @ b[g].double().T) for g, c in enumerate(counts.tolist()) if c)
    ms = bench(lambda: pycute.kernels.grouped_mm(a, b, counts=counts))
    emit({"part": "grouped", "shape": [G, M_max, N, K], "contender": "pycute counts", "err": err, "ms": ms,
          "tflops": 2 * int(counts.sum()) * N * K / ms / 1e9})


def part_fp8(quick: bool, emit) -> None:
    import torch
    import pycute.kernels
    from pycute.mma.fp8_scaling import make_fp8_scaling
    e4m3 = torch.float8_e4m3fn
    for M, N, K in (BLOCK[::3] if quick else BLOCK):
        plan = make_fp8_scaling("block", (128, 128))
        a32, b32 = torch.randn(M, K, device="cuda"), torch.randn(N, K, device="cuda")
        nb = -(-N // 128)                                       # N need not be whole 128-row blocks (2112)
        sa = a32.view(M, K // 128, 128).abs().amax(-1).T.contiguous() / 448 + 1e-12     # (K/128, M)
        padded = torch.nn.functional.pad(b32, (0, 0, 0, nb * 128 - N))
        sb = padded.view(nb, 128, K // 128, 128).abs().amax((1, 3)) / 448 + 1e-12       # (N/128, K/128)
        a = (a32 / sa.T.repeat_interleave(128, 1)).to(e4m3)
        b = (b32 / sb.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1)).to(e4m3)
        rows = rows_of(M, "cuda")
        fa = sa.T.repeat_interleave(128, 1)[rows].double()
        fb = sb.repeat_interleave(128, 0)[:N].repeat_interleave(128, 1).double()
        ref = (a[rows].double() * fa) @ (b.double() * fb).T
        flops = 2 * M * N * K
        base = {"part": "fp8-block", "shape": [M, N, K]}
        vendor = float("nan")
        try:
            call = torch_blockwise(a, b, sa, sb)
            c = call()
            ms = bench(call)
            vendor = flops / ms / 1e9
            emit({**base, "contender": f"torch {call.__name__}", "ms": ms, "tflops": vendor,
                  "err": rel_err(c[rows], ref)})
        except Exception as e:  # noqa: BLE001
            emit({**base, "contender": "torch blockwise", "error": f"{type(e).__name__}: {str(e)[:300]}"})
        d = pycute.kernels.scaled_gemm(a, b, sa, sb, "block", 1)
        err = rel_err(d[rows], ref)
        row = {**base, "contender": "pycute", "err": err}
        if err < 2e-2:
            ms = bench(lambda: pycute.kernels.scaled_gemm(a, b, sa, sb, "block", 1))
            row.update(ms=ms, tflops=flops / ms / 1e9, of_vendor=flops / ms / 1e9 / vendor)
        emit(row)
        assert plan.a_scales(M, K) == tuple(sa.shape) and plan.b_scales(N, K) == tuple(sb.shape)
    for K in TENSOR_K:
        M = N = TENSOR_MN
        a32, b32 = torch.randn(M, K, device="cuda"), torch.randn(N, K, device="cuda")
        sa, sb = (a32.abs().max() / 448).reshape(1), (b32.abs().max() / 448).reshape(1)
        a, b = (a32 / sa).to(e4m3), (b32 / sb).to(e4m3)
        rows = rows_of(M, "cuda")
        ref = (a[rows].double() * sa.double()) @ (b.double() * sb.double()).T
        flops = 2 * M * N * K
        for fast, promote in ((False, 1), (True, 0)):
            base = {"part": "fp8-tensor", "shape": [M, N, K], "fast_accum": fast, "promote": promote}
            vend = lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16,  # noqa: E731
                                            use_fast_accum=fast)
            ms_v = bench(vend)
            err_v = rel_err(vend()[rows], ref)
            emit({**base, "contender": "torch._scaled_mm", "ms": ms_v, "tflops": flops / ms_v / 1e9, "err": err_v})
            ours = lambda: pycute.kernels.scaled_gemm(a, b, sa, sb, "tensor", promote)  # noqa: E731
            err = rel_err(ours()[rows], ref)
            ms = bench(ours)
            emit({**base, "contender": "pycute", "ms": ms, "tflops": flops / ms / 1e9, "err": err,
                  "of_vendor": ms_v / ms, "err_of_vendor": err / err_v})


def torch_blockwise(a, b, sa, sb):
    """torch's 1 x 128 by 128 x 128 scaled matmul on pycute's scales (A's k-block-major ``(K/128, M)`` is the
    outer-dim-major ``(M, K/128)`` torch asks for; B's ``(N/128, K/128)`` transposed), in the form this torch
    has."""
    import torch
    import torch.nn.functional as F
    a_scale, b_scale = sa.T, sb.T
    if hasattr(F, "scaled_mm") and hasattr(F, "ScalingType"):
        def scaled_mm():
            return F.scaled_mm(a, b.t(), a_scale, F.ScalingType.BlockWise1x128, b_scale,
                               F.ScalingType.BlockWise128x128, output_dtype=torch.bfloat16)
        return scaled_mm

    def _scaled_mm():
        return torch._scaled_mm(a, b.t(), a_scale, b_scale, out_dtype=torch.bfloat16)
    return _scaled_mm


# ---- the CPU run -------------------------------------------------------------------------------------------------
def dry(emit, parts: tuple[str, ...]) -> None:
    """Each part's op on tiny ragged problems through the interpreter, checked against float64."""
    import torch
    import pycute.kernels
    from pycute.kernels.hopper_gemm import HopperGemm, op
    from pycute.kernels.hopper_gemm.config import shared
    from pycute.pipeline.split_k import KSplit
    g = torch.Generator().manual_seed(0)
    ints = lambda *s: torch.randint(-3, 4, s, generator=g).to(torch.bfloat16)  # noqa: E731
    if "bf16" in parts:
        a, b = ints(72, 200), ints(72, 200)
        d = op._gemm_cpu(a, b, 1.0, "acc", [], [], "bf16", shared(HopperGemm(BN=64, cluster=1)), KSplit.stream(2))
        emit({"part": "bf16", "contender": "pycute (CPU)", "err": rel_err(d, a.double() @ b.double().T)})
    if "grouped" in parts:
        a2, bg, offs = ints(72, 64), ints(3, 64, 64), torch.tensor([40, 40, 72], dtype=torch.int32)
        d = pycute.kernels.grouped_mm(a2, bg, offs)
        err = max(rel_err(d[s:e], a2[s:e].double() @ bg[i].double().T) for i, (s, e) in ((0, (0, 40)),
                                                                                            (2, (40, 72))))
        emit({"part": "grouped", "contender": "pycute (CPU)", "err": err})
    if "fp8" not in parts:
        return
    a8, b8 = ints(64, 256).to(torch.float8_e4m3fn), ints(128, 256).to(torch.float8_e4m3fn)
    sa, sb = torch.full((2, 64), 0.5), torch.full((1, 2), 2.0)
    d = pycute.kernels.scaled_gemm(a8, b8, sa, sb, "block", 1)
    emit({"part": "fp8", "contender": "pycute (CPU)", "err": rel_err(d, a8.double() @ b8.double().T)})


# ---- the run -----------------------------------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    out = [f"{'part':<11} {'shape':<24} {'contender':<34} {'TFLOP/s':>8} {'of vendor':>9} {'rel err':>9}"]
    for r in rows:
        if "error" in r:
            out.append(f"{r.get('part', '?'):<11} {str(r.get('shape', '')):<24} {r.get('contender', ''):<34} ERROR "
                       f"{r['error'][-70:]!r}")
            continue
        vs = f"{r['of_vendor']:.1%}" if r.get("of_vendor") == r.get("of_vendor") and "of_vendor" in r else ""
        out.append(f"{r['part']:<11} {'x'.join(map(str, r.get('shape', []))):<24} {r['contender'][:34]:<34} "
                   f"{r.get('tflops', float('nan')):>8.1f} {vs:>9} {r.get('err', float('nan')):>9.2e}")
    return "\n".join(out)


def profile(shape: str) -> list[dict]:
    """ncu's time and throughputs of pycute's kernel and cuBLAS's on one bf16 shape ``MxNxK``."""
    ncu = ncu_path()
    if ncu is None:
        return [{"part": "profile", "error": "ncu not found"}]
    metrics = ("gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,"
               "dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,"
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"
               "lts__t_sectors_op_red.sum,lts__t_bytes.sum")
    run = run_child(["-m", "tools", "gemm_shapes", "--one", "profile-run", "--shape", shape], LIMIT_S,
                    (ncu, "--csv", "--metrics", metrics, "--launch-skip", "2", "--launch-count", "40"))
    return [{"part": "profile", "shape": shape, "kernels": parse_ncu(run.stdout), "rc": run.rc}]


def profile_run(shape: str) -> None:
    import torch
    import pycute.kernels
    M, N, K = (int(x) for x in shape.split("x"))
    a, b = torch.randn(M, K, device="cuda").to(torch.bfloat16), torch.randn(N, K, device="cuda").to(torch.bfloat16)
    for _ in range(4):
        pycute.kernels.gemm(a, b)
        torch.matmul(a, b.t())
    torch.cuda.synchronize()


def prebuild(jobs: int) -> list[str]:
    """Compile every configuration the parts may launch, ``jobs`` at a time (NVRTC's disk cache keeps them); the
    failures, as text."""
    from concurrent.futures import ProcessPoolExecutor
    from pycute.kernels.grouped_gemm.config import grouped_candidates
    from pycute.kernels.hopper_gemm.config import candidates, shared
    from pycute.kernels.hopper_gemm.scaled import scaled_candidates
    configs = [c for g in candidates() for c in (g, shared(g))]
    configs += [c for g in scaled_candidates("block", 1) + scaled_candidates("tensor", 1) +
                scaled_candidates("tensor", None) for c in (g, shared(g))]
    configs += list(grouped_candidates("offsets")) + list(grouped_candidates("counts"))
    with ProcessPoolExecutor(jobs) as pool:
        return [e for e in pool.map(_compile, configs) if e]


def _compile(config) -> str:
    try:
        config.compile()
        return ""
    except Exception as e:  # noqa: BLE001 - a configuration that does not build is recorded; the parts go on
        return f"{config!r}: {type(e).__name__}: {str(e)[:500]}"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools gemm_shapes", description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=None)
    ap.add_argument("--quick", action="store_true", help="fewer shapes, no alternative partitions")
    ap.add_argument("--part", action="append", choices=PARTS, help="only these parts (repeatable)")
    ap.add_argument("--jobs", type=int, default=16, help="compiles at a time before the parts run")
    ap.add_argument("--dry", action="store_true", help="the CPU run: tiny cases through the interpreter")
    ap.add_argument("--profile", metavar="MxNxK", help="ncu on pycute's kernel and cuBLAS's for one bf16 shape")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--shape", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def emit(row: dict) -> None:
        print(json.dumps(row, default=str), flush=True)

    if args.one:
        if args.one == "profile-run":
            profile_run(args.shape)
        else:
            {"bf16": part_bf16, "grouped": part_grouped, "fp8": part_fp8}[args.one](args.quick, emit)
        return 0
    if args.dry:                                # no file: the CPU run's rows are printed
        rows: list[dict] = []
        dry(rows.append, tuple(args.part or PARTS))
        print(table(rows))
        return 0 if all(r["err"] < 1e-2 for r in rows) else 1
    with JsonLines(out_path("gemm_shapes", args.out)) as out:
        if args.profile:
            out.extend(profile(args.profile))
            print(json.dumps(out.rows, indent=1)[:4000])
            return 0
        start = time.time()
        failed = prebuild(args.jobs)
        out.write({"part": "build", "seconds": round(time.time() - start, 1), "failed": failed})
        for part in args.part or PARTS:
            child = run_question("gemm_shapes", ["--one", part] + (["--quick"] if args.quick else []), LIMIT_S)
            out.extend(json_rows(child.stdout))
            if not child.ok:
                out.write({"part": part, "error": child.error()})
        print(table([r for r in out.rows if r.get("part") != "build"]))
    return 0
