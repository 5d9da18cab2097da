"""Record the block-scaled GEMM example's soft build on the GPU present (docs/blockscaled-gemm.md): every format x
cta_group x problem size in its own child process (a fault or a hang loses one case, not the run), one JSON line
per case: D against the reference, element by element.

    PYTHONPATH=. python3 tools/blockscaled_gemm_h200.py docs/blockscaled-gemm-h200.jsonl
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

SIZES = [(128, 256, 128), (200, 300, 416), (300, 520, 544), (520, 280, 1024)]
CASES = [(kind, g, *size) for size in SIZES for kind in ("mxf8", "nvfp4") for g in (1, 2)]


def one(kind: str, g: int, m: int, n: int, k: int) -> dict:
    import numpy as np

    from examples.blockscaled_gemm import BlockScaledGemm
    from pycute.compile import runtime
    info = runtime.device_info()
    gemm = BlockScaledGemm(kind, g, m, n, k)
    start = time.time()
    got, want = gemm.run(runtime.Gpu(), arch=f"sm_{info[1][0]}{info[1][1]}a", seed=7)
    return {"kind": kind, "cta_group": g, "m": m, "n": n, "k": k, "grid": list(gemm.grid), "k_blocks": gemm.k_blocks,
            "device": info[0], "soft": info[1][0] < 10, "seconds": round(time.time() - start, 2),
            "differ": int((got != want).sum()), "elements": int(got.size), "nonzero": int(np.count_nonzero(want))}


def main(path: str) -> None:
    with open(path, "w") as out:
        for case in CASES:
            try:
                run = subprocess.run([sys.executable, __file__, "--one", *map(str, case)], capture_output=True,
                                     text=True, timeout=240)
                line = run.stdout.strip().splitlines()[-1] if run.returncode == 0 else json.dumps(
                    {"case": case, "error": run.stderr[-1500:]})
            except subprocess.TimeoutExpired:
                line = json.dumps({"case": case, "error": "timed out after 240 s"})
            print(line, flush=True)
            out.write(line + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:7]))))
    else:
        main(sys.argv[1])
