"""Where do the CPU interpreter's floating-point instructions and the GPU differ?

Every instruction of ``pycute.harness.float_probe`` on the same operand bit patterns, on the GPU (in a child
process: a fault loses nothing but that run) and on the CPU (``pycute.interp.run_kernel``). One JSON line per
instruction: the inputs, how many results differ (bit for bit, and apart from NaN payloads), the first difference,
and for the ``.approx`` instructions and the CUDA math functions the largest distance in ulps; a table last
(docs/interpreter.md).

    PYTHONPATH=. python -m tools interpreter_floats [OUT.jsonl]     (default $OUT/interpreter_floats.jsonl; the
                                                                    GPU's results beside it, .gpu.npy)
    PYTHONPATH=. python -m tools interpreter_floats --dry           (no GPU: the probe compiled and run on the CPU)
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

from tools._common import JsonLines, out_path, run_question

N = 8192


def gpu_rows(path: str) -> None:
    """The child: the probe on the GPU, its rows saved to ``path`` (.npy)."""
    from pycute.compile import runtime
    from pycute.harness.float_probe import FloatProbe
    np.save(path, FloatProbe(n=N).run_gpu(runtime.Gpu()))


def compare(gpu: np.ndarray, cpu: np.ndarray) -> list[dict]:
    """One row per instruction: where the GPU's results (``gpu``) and the CPU's differ."""
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


def table(rows: list[dict]) -> str:
    lines = [f"{'instruction':32} {'differ':>8} {'but NaNs':>9} {'max ulp':>8}"]
    lines += [f"{r['op']:32} {r['differ']:>8} {r['differ_but_nan']:>9} {r.get('max_ulp', ''):>8}" for r in rows]
    exact = [r for r in rows if not r["approx"]]
    values = sum(1 for r in exact if r["differ_but_nan"])
    nans = sum(1 for r in exact if r["differ"] and not r["differ_but_nan"])
    lines.append(f"\nexact instructions whose values differ: {values} of {len(exact)}; whose NaN bits differ: {nans}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools interpreter_floats", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/interpreter_floats.jsonl)")
    parser.add_argument("--dry", action="store_true", help="no GPU: compile the probe and run a few inputs on the CPU")
    parser.add_argument("--gpu-rows", metavar="NPY", help=argparse.SUPPRESS)    # the child's own run
    args = parser.parse_args(argv)
    from pycute.harness.float_probe import FloatProbe
    if args.gpu_rows:
        gpu_rows(args.gpu_rows)
        return 0
    if args.dry:
        rows = FloatProbe(n=64).run_cpu()
        print(f"dry: {len(rows)} instructions compiled for sm_90a and run on the CPU over 64 operand triples")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        npy = os.path.join(tmp, "gpu.npy")
        child = run_question("interpreter_floats", ["--gpu-rows", npy], timeout=300)
        if not child.ok:
            print(f"error: the GPU run failed: {child.error()}")
            return 1
        gpu = np.load(npy)
    path = out_path("interpreter_floats", args.out)
    np.save(path.with_suffix(".gpu.npy"), gpu)     # every result, for questions the first difference leaves open
    with JsonLines(path) as out:
        out.extend(compare(gpu, FloatProbe(n=N).run_cpu()))
    print(table(out.rows))
    print(f"wrote {path}")
    return 0
