"""How fast is the Hopper GEMM beside cuBLAS, Triton and torch._scaled_mm, at 8192^3 and over a sweep of shapes?

    PYTHONPATH=. python -m tools gemm_speed --check --ok ok.json   # every variant, small shapes, each in a child
    PYTHONPATH=. python -m tools gemm_speed --quick --ok ok.json   # the timed run (docs/runs/gemm/hopper-gemm-h200.jsonl)
    PYTHONPATH=. python -m tools gemm_speed --dry                  # on the CPU: every variant compiled

Every timed result is checked against an f32 reference first (relative Frobenius error, NaN-poisoned output); the
launches are the benchmarks' (perf/gpu_gemm.py: the plans of each problem, then the package's launcher).
"""
from __future__ import annotations

import argparse
import json
import os

from pycute import PlanError
from pycute.kernels.hopper_gemm import HopperGemm, candidates
from tools._common import run_question


def variants() -> list[HopperGemm]:
    """The candidates (bf16 and e4m3) and five more configurations timed beside them."""
    return candidates() + candidates("e4m3") + [
        HopperGemm(cluster=1), HopperGemm(BN=128, m_blocks=2, mode="pingpong", stages=4),
        HopperGemm(BN=128, m_blocks=2, mode="pingpong", cluster=1),
        HopperGemm(BN=192), HopperGemm(BN=256, m_blocks=1, mode="pingpong", stages=3)]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools gemm_speed", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gemm_speed.jsonl"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--check", action="store_true", help="correctness only, small shapes, every variant, each in "
                    "a child process (a fault loses that variant); the passing ones listed in --ok")
    ap.add_argument("--ok", default=None, help="the file of variants that passed --check (time only those)")
    ap.add_argument("--variant", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--dry", action="store_true", help="on the CPU: compile every variant")
    args = ap.parse_args(argv)
    if args.dry:
        for g in variants():
            h = g.compile().histogram()
            print(g, {k: v for k, v in sorted(h.items()) if "GMMA" in k or k.startswith(("LDL", "STL", "UTMA"))})
        return 0
    import torch

    from perf.gpu_gemm import TRITON_CONFIGS, Launch, bench, inputs, reference, rel_err, run_ours, triton_mm
    if args.check and args.variant is None:
        ok = []
        for i, g in enumerate(variants()):
            child = run_question("gemm_speed", ["--check", "--variant", str(i)], timeout=120)
            out, rc = child.stdout + child.stderr[-1500:], (child.rc if child.rc is not None else -1)
            if child.rc is None:
                out = "timed out after 120 s (a hang)"
            print(out if rc or "BAD" in out else out.strip().splitlines()[-1] if out.strip() else "", flush=True)
            if rc == 0 and "BAD" not in out:
                ok.append(repr(g))
            else:
                print(f"check FAILED {g!r} (rc {rc})", flush=True)
        if args.ok:
            with open(args.ok, "w") as f:
                json.dump(ok, f)
        return 0
    if args.check:
        for g in [variants()[args.variant]]:
            launch = Launch(g)
            for (M, N, K) in [(128, 256, 64), (256, 512, 128), (1000, 1000, 528), (300, 520, 4096), (64, 8, 16),
                              (700, 1304, 1040), (333, 520, 1001), (1, 8, 1), (2048, 2048, 8192), (333, 517, 64)]:
                a, b = inputs(M, N, K, g.dtype)
                try:
                    d, _ = run_ours(g, launch, a, b, 0.5)
                except PlanError as e:                 # D's rows must be whole 16-byte units (TMA stores)
                    print(f"check refused {g!r} {(M, N, K)}: {str(e).splitlines()[0][:100]}", flush=True)
                    continue
                err = rel_err(d, reference(a, b, 0.5))
                print(f"check {'ok ' if err < 1e-2 else 'BAD'} {g!r} {(M, N, K)} err {err:.3e}", flush=True)
        return 0
    rows = []

    def record(**row):
        rows.append(row)
        with open(args.out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)

    launches: dict = {}

    def launch_of(g):
        if g not in launches:
            launches[g] = Launch(g)
        return launches[g]

    def ours(g, a, b, ref, scale=1.0, tol=1e-2):
        """(TFLOP/s, error) of variant g on a, b; NaN speed when wrong."""
        launch = launch_of(g)
        d, prep = run_ours(g, launch, a, b, scale)
        err = rel_err(d, ref)
        ms = bench(lambda: launch(prep)) if err < tol else float("nan")
        return 2 * a.shape[0] * b.shape[0] * a.shape[1] / ms / 1e9, err

    def triton_best(a, b, ref):
        best = (0.0, None, None)
        c = torch.empty(a.shape[0], b.shape[0], device="cuda", dtype=torch.bfloat16)
        for cfg in TRITON_CONFIGS[:3]:
            triton_mm(a, b, c, cfg)
            err = rel_err(c, ref)
            ms = bench(lambda: triton_mm(a, b, c, cfg))
            tf = 2 * a.shape[0] * b.shape[0] * a.shape[1] / ms / 1e9
            if tf > best[0]:
                best = (tf, cfg, err)
        return best

    # 1. every variant at 8192^3, bf16 and fp8, beside cuBLAS / torch._scaled_mm and Triton
    M = N = K = 8192
    flops = 2 * M * N * K
    a, b = inputs(M, N, K, "bf16")
    ref = reference(a, b)
    t = bench(lambda: torch.matmul(a, b.t()))
    cublas = flops / t / 1e9
    record(kind="cublas", dtype="bf16", shape=[M, N, K], ms=t, tflops=cublas, err=rel_err(torch.matmul(a, b.t()), ref))
    passed = None if args.ok is None else set(json.load(open(args.ok)))
    timed = [g for g in variants() if g.dtype == "bf16" and (passed is None or repr(g) in passed)]
    for g in timed:
        try:
            tf, err = ours(g, a, b, ref)
            record(kind="pycute", variant=repr(g), shape=[M, N, K], tflops=tf, err=err, of_cublas=tf / cublas)
        except Exception as e:  # noqa: BLE001
            record(kind="pycute", variant=repr(g), error=str(e)[:500])
    tf, cfg, err = triton_best(a, b, ref)
    record(kind="triton", cfg=cfg, shape=[M, N, K], tflops=tf, err=err)
    del a, b, ref
    a8, b8 = inputs(M, N, K, "e4m3")
    ref8 = reference(a8, b8, 0.5)
    one = torch.tensor(1.0, device="cuda")
    half = torch.tensor(0.5, device="cuda")
    t = bench(lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=half, out_dtype=torch.bfloat16))
    out = torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=half, out_dtype=torch.bfloat16)
    scaled = flops / t / 1e9
    record(kind="scaled_mm", dtype="e4m3", shape=[M, N, K], ms=t, tflops=scaled, err=rel_err(out, ref8))
    for g in [g for g in candidates("e4m3")[:3] if passed is None or repr(g) in passed]:
        try:
            tf, err = ours(g, a8, b8, ref8, 0.5, tol=2e-2)
            record(kind="pycute", variant=repr(g), shape=[M, N, K], tflops=tf, err=err, of_scaled_mm=tf / scaled)
        except Exception as e:  # noqa: BLE001
            record(kind="pycute", variant=repr(g), error=str(e)[:500])
    del a8, b8, ref8
    # 2. the sweep: every candidate per shape (the best and each recorded), cuBLAS, Triton's best config
    shapes = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (3000, 5000, 4096),
              (16384, 1024, 1024), (64, 8192, 8192), (1000, 1000, 8192), (8192, 1024, 8192), (777, 4104, 2056)]
    if not args.quick:
        shapes.append((16384, 16384, 16384))
    for (M, N, K) in shapes:
        flops = 2 * M * N * K
        a, b = inputs(M, N, K, "bf16")
        ref = reference(a, b)
        per = {}
        for g in [g for g in candidates() if passed is None or repr(g) in passed]:
            per[repr(g)] = ours(g, a, b, ref)
        tc = flops / bench(lambda: torch.matmul(a, b.t())) / 1e9
        tt, cfg, _ = triton_best(a, b, ref)
        best = max(per, key=lambda k: per[k][0] if per[k][0] == per[k][0] else 0)
        record(kind="sweep", shape=[M, N, K], variant=best, tflops=per[best][0], err=per[best][1], cublas=tc,
               triton=tt, triton_cfg=cfg, all={k: v[0] for k, v in per.items()})
        del a, b, ref
    print("\nsummary")
    for r in rows:
        if "tflops" in r:
            print(f"{r['kind']:10} {str(r.get('variant', r.get('cfg', r.get('dtype', ''))))[:70]:72} "
                  f"{str(r['shape']):22} {r['tflops']:8.1f} TFLOP/s err {r.get('err', 0):.2e}"
                  + (f" cublas {r['cublas']:.1f} triton {r['triton']:.1f}" if r["kind"] == "sweep" else ""))
    return 0
