"""Does the block-scaled GEMM's soft build write the reference D on the GPU, for every format, group and size?

The persistent block-scaled GEMM's soft build on the GPU present (docs/blockscaled-gemm.md):
every format x cta_group at every problem size recorded before (one tile per CTA), the largest with four CTAs or
pairs walking its 9 to 15 tiles (both accumulators in turn, the accumulator pipeline wrapping), and bf16 D whose rows are not
whole 16 bytes (the padded pitch) -- each case in its own child process with a time limit (a fault or a hang loses
one case, not the run), one JSON line per case: D against the reference, element by element, and D's pad columns.

    PYTHONPATH=. python -m tools blockscaled_gemm_soft [OUT.jsonl] [--match TEXT]
    PYTHONPATH=. python -m tools blockscaled_gemm_soft --dry      # on the CPU: one small case run whole

The default output is $OUT/blockscaled_gemm_soft.jsonl (./blockscaled_gemm_soft.jsonl without $OUT); the summary
table comes last. ``--match`` keeps the cases whose label contains TEXT (``mxf8-cg2``, ``persistent``, ``bf16``).
"""
from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor

from tools._common import last_json, out_path, run_question

RECORDED = [(128, 256, 128), (200, 300, 416), (300, 520, 544), (520, 280, 1024)]   # the 2026-12-01 sizes
FORMATS = [(kind, g) for kind in ("mxf8", "nvfp4") for g in (1, 2)]
TIMEOUT_S = 420


def cases() -> list[dict]:
    """(label, kind, cta_group, m, n, k, d_type, sms): sms 0 launches a CTA (pair) per tile."""
    out = [dict(kind=k, g=g, m=m, n=n, k=kk, d_type="f32", sms=0) for (m, n, kk) in RECORDED for k, g in FORMATS]
    out += [dict(kind=k, g=g, m=520, n=280, k=1024, d_type="f32", sms=4) for k, g in FORMATS]  # 2-4 tiles per CTA
    out += [dict(kind=k, g=g, m=200, n=300, k=416, d_type="bf16", sms=1) for k, g in FORMATS]
    for c in out:
        c["label"] = (f"{c['kind']}-cg{c['g']}-{c['m']}x{c['n']}x{c['k']}-{c['d_type']}"
                      + ("-persistent" if c["sms"] else ""))
    return out


def one(kind: str, g: int, m: int, n: int, k: int, d_type: str, sms: int) -> dict:
    """One case in this process: the soft build's D against the reference."""
    import numpy as np

    from pycute.kernels.blockscaled_gemm import BlockScaledGemm
    from pycute.compile import runtime
    info = runtime.device_info()
    gemm = BlockScaledGemm(kind, g, m, n, k, d_type=d_type, sms=sms * g if sms else None)
    start = time.time()
    try:
        got, want = gemm.run(runtime.Gpu(), arch=f"sm_{info[1][0]}{info[1][1]}a", seed=7)
    except ValueError as why:                 # the pad columns of D hold something else than zeros
        return {"error": str(why)}
    units = gemm.sched.at(gemm.tiles).units
    return {"kind": kind, "cta_group": g, "m": m, "n": n, "k": k, "d_type": d_type, "ldd": gemm.ldd,
            "tiles": list(gemm.tiles), "ctas": gemm.grid, "tiles_per_cta": -(-units // (gemm.grid // g)),
            "k_blocks": gemm.k_blocks, "stages": gemm.operands.stages, "device": info[0], "soft": info[1][0] < 10,
            "seconds": round(time.time() - start, 2), "differ": int((got != want).sum()), "elements": int(got.size),
            "nonzero": int(np.count_nonzero(want)), "pad": "zeros"}


def dry() -> int:
    """One small case, cta_group 2, run whole on the CPU (the interpreter) against the reference."""
    import numpy as np

    from pycute.kernels.blockscaled_gemm import BlockScaledGemm
    from pycute.kernels.blockscaled_gemm.check import run_whole
    gemm = BlockScaledGemm("nvfp4", 2, 200, 136, 256, sms=2)
    got, want = run_whole(gemm, seed=7)
    differ = int((got != want).sum())
    print(json.dumps({"case": "dry nvfp4-cg2-200x136x256", "differ": differ, "elements": int(got.size)}))
    gemm.compile("sm_90a", soft=True)
    return 0 if differ == 0 else 1


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        a = argv[1:]
        print(json.dumps(one(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), a[5], int(a[6]))))
        return 0
    parser = argparse.ArgumentParser(prog="python -m tools blockscaled_gemm_soft", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", default=None)
    parser.add_argument("--dry", action="store_true", help="on the CPU: one small case run whole")
    parser.add_argument("--match", default="", help="only the cases whose label contains this text")
    parser.add_argument("--jobs", type=int, default=6, help="cases at once (each in its own process)")
    args = parser.parse_args(argv)
    if args.dry:
        return dry()

    def child(case: dict) -> dict:
        argv1 = [str(case[key]) for key in ("kind", "g", "m", "n", "k", "d_type", "sms")]
        run = run_question("blockscaled_gemm_soft", ["--one", *argv1], TIMEOUT_S)
        row = last_json(run.stdout) if run.ok else None
        return {"case": case["label"], **(row if row is not None else {"error": run.error()})}

    rows = []
    path = out_path("blockscaled_gemm_soft", args.out)
    with open(path, "w") as out, ThreadPoolExecutor(args.jobs) as pool:   # each case its own process
        for row in pool.map(child, [c for c in cases() if args.match in c["label"]]):
            rows.append(row)
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(json.dumps(row), flush=True)
    print(f"\n{'case':<44} {'CTAs':>4} {'tiles/CTA':>9} {'differ':>8} {'elements':>9} {'s':>6}  verdict")
    for r in rows:
        ok = "error" not in r and r["differ"] == 0 and r["nonzero"] > 0
        print(f"{r['case']:<44} {r.get('ctas', '-'):>4} {r.get('tiles_per_cta', '-'):>9} {r.get('differ', '-'):>8} "
              f"{r.get('elements', '-'):>9} {r.get('seconds', '-'):>6}  {'EQUAL' if ok else 'FAIL'}")
    passed = sum("error" not in r and r["differ"] == 0 and r["nonzero"] > 0 for r in rows)
    print(f"{passed} of {len(rows)} cases: D equals the reference bit for bit (pad columns zero)")
    return 0 if passed == len(rows) else 1
