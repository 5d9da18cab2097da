"""Record where the CPU interpreter's floating-point instructions and the GPU differ (docs/interpreter.md): every
instruction of ``pycute.harness.float_probe`` on the same operand bit patterns, on the GPU (in a child process, so a
fault loses nothing but that run) and on the CPU. One JSON line per instruction: the inputs, how many results
differ (bit for bit, and apart from NaN payloads), the first difference, and for the ``.approx`` instructions the largest distance in ulps; a summary table
last.

    PYTHONPATH=. python3 tools/interp_h200.py [docs/interpreter-h200.jsonl]     (default: $OUT/interpreter-h200.jsonl)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

N = 8192


def gpu_rows(path: str) -> None:
    """The child: run the probe on the GPU and save its rows to ``path`` (.npy)."""
    from pycute.compile import runtime
    from pycute.harness.float_probe import FloatProbe
    np.save(path, FloatProbe(n=N).run_gpu(runtime.Gpu()))


def compare(gpu: np.ndarray, cpu: np.ndarray) -> list[dict]:
    from pycute.harness.float_probe import APPROX_OPS, LIBRARY_OPS, FloatProbe, same_values, ulp_distance
    probe = FloatProbe(n=N)
    operands = probe.operands()
    out = []
    for k, (name, kinds, result, fmt, _) in enumerate(probe.ops):
        bad = np.nonzero(gpu[k] != cpu[k])[0]
        row = {"op": name, "inputs": N, "differ": int(bad.size),
               "approx": any(name == o[0] for o in APPROX_OPS + LIBRARY_OPS),
               "differ_but_nan": int((~same_values(gpu[k], cpu[k], fmt)).sum())}
        if bad.size:
            i = int(bad[0])
            row["first"] = {"operands": [hex(int(operands[j][i])) for j in range(len(kinds))],
                            "gpu": hex(int(gpu[k][i])), "cpu": hex(int(cpu[k][i]))}
        if row["approx"] and result in ("f", "d"):
            row["max_ulp"] = int(ulp_distance(gpu[k], cpu[k], fmt).max())
        out.append(row)
    return out


def main(path: str) -> None:
    from pycute.harness.float_probe import FloatProbe
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "gpu.npy")
        run = subprocess.run([sys.executable, __file__, "--gpu", npy], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            print(json.dumps({"error": run.stderr[-2000:]}))
            sys.exit(1)
        gpu = np.load(npy)
    rows = compare(gpu, FloatProbe(n=N).run_cpu())
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(f"{'instruction':32} {'differ':>8} {'but NaNs':>9} {'max ulp':>8}")
    for row in rows:
        print(f"{row['op']:32} {row['differ']:>8} {row['differ_but_nan']:>9} {row.get('max_ulp', ''):>8}")
    exact = [r for r in rows if not r["approx"]]
    print(f"\nexact instructions whose values differ: {sum(1 for r in exact if r['differ_but_nan'])} of {len(exact)}; "
          f"whose NaN bits differ: {sum(1 for r in exact if r['differ'] and not r['differ_but_nan'])}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--gpu":
        gpu_rows(sys.argv[2])
    else:
        default = os.path.join(os.environ.get("OUT", "."), "interpreter-h200.jsonl")
        main(sys.argv[1] if len(sys.argv) > 1 else default)
