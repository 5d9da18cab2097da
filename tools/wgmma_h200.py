"""Record wgmma.mma_async on the GPU present (an H200, sm_90a; docs/wgmma.md): every case of
``pycute.harness.wgmma.WGMMA_CASES`` in its own child process (a fault or a hang loses one case, not the run), one
JSON line per case -- the D registers the GPU writes back against the emulator's, bit for bit, and D through the
accumulator fragment against the reference MMA of the elements (exact values: no rounding anywhere) -- and a summary
table last.

    PYTHONPATH=. python3 tools/wgmma_h200.py [out.jsonl]   # default $OUT/wgmma-h200.jsonl, else ./wgmma-h200.jsonl
    PYTHONPATH=. python3 tools/wgmma_h200.py --cpu         # no GPU: every case compiled for sm_90a, SASS checked

A case passes when both counts are 0 and D is not all zeros. A failing case's line names its first differing
elements and which simple misreading (no MMA, scale-d inverted, f16 halves swapped) D matches, if any.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

LIMIT_S = 180


def one(index: int) -> dict:
    from pycute.compile import runtime
    from pycute.harness.wgmma import WGMMA_CASES, case_record
    info = runtime.device_info()
    if info is None or info[1] != (9, 0):
        raise SystemExit(f"wgmma (sm_90a) runs on compute capability 9.0; this device is {info}")
    start = time.time()
    record = case_record(WGMMA_CASES[index], runtime.Gpu(), seed=7)
    return {"index": index, **record, "device": info[0], "seconds": round(time.time() - start, 2)}


def child(index: int, name: str) -> dict:
    try:
        run = subprocess.run([sys.executable, __file__, "--one", str(index)], capture_output=True, text=True,
                             timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"index": index, "case": name, "error": f"timed out after {LIMIT_S} s"}
    if run.returncode:
        return {"index": index, "case": name, "error": (run.stderr or run.stdout)[-1500:]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def passed(r: dict) -> bool:
    return "error" not in r and r["differ_emulator"] == 0 and r["differ_reference"] == 0 and r["nonzero"] > 0


def table(records: list[dict]) -> str:
    rows = [f"{'#':>3}  {'case':<52} {'SASS':<18} {'emulator':>9} {'reference':>9}  result"]
    for r in records:
        if "error" in r:
            rows.append(f"{r['index']:>3}  {r['case']:<52} {'':<18} {'':>9} {'':>9}  ERROR {r['error'][-60:]!r}")
            continue
        verdict = "ok" if passed(r) else "FAIL " + "; ".join(r.get("diagnosis", [])) + (" (D all zero)" if not
                                                                                        r["nonzero"] else "")
        rows.append(f"{r['index']:>3}  {r['case']:<52} {r['sass']:<18} {r['differ_emulator']:>9} "
                    f"{r['differ_reference']:>9}  {verdict}")
    ok = sum(passed(r) for r in records)
    return "\n".join(rows + [f"{ok} of {len(records)} cases equal the emulator and the reference bit for bit"])


def cpu() -> int:
    """Every case's kernel compiled for sm_90a in one NVRTC call: its wgmma count, no local memory."""
    from pycute.compile.sass import opcode_histogram
    from pycute.harness.wgmma import WGMMA_CASES, compile_cases
    sass, bad = compile_cases(), 0
    for case in WGMMA_CASES:
        h = opcode_histogram(sass[case.name])
        mmas = sum(v for k, v in h.items() if k.startswith(case.sass + "."))
        local = sum(v for k, v in h.items() if k.startswith(("LDL", "STL")))
        want = len(case.plan().instructions)
        ok = mmas == want and not local
        bad += not ok
        print(f"{case.name:<52} {case.sass:<18} {mmas}/{want} wgmma, {local} local  {'ok' if ok else 'FAIL'}")
    print(f"{len(WGMMA_CASES) - bad} of {len(WGMMA_CASES)} cases compile to their planned wgmma count, no local memory")
    return 1 if bad else 0


def main(path: str) -> int:
    from pycute.compile import runtime
    from pycute.harness.wgmma import WGMMA_CASES
    info = runtime.device_info()
    if info is None or info[1] != (9, 0):
        print(f"wgmma (sm_90a) runs on compute capability 9.0; this machine has {info or 'no GPU'} "
              f"(--cpu checks the build)")
        return 2
    records = []
    with open(path, "w") as out:
        for i, case in enumerate(WGMMA_CASES):
            record = child(i, case.name)
            records.append(record)
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(json.dumps(record), flush=True)
    print(table(records))
    print(f"wrote {path}")
    return 0 if all(passed(r) for r in records) else 1


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        print(json.dumps(one(int(sys.argv[2]))))
    elif len(sys.argv) > 1 and sys.argv[1] == "--cpu":
        sys.exit(cpu())
    else:
        default = os.path.join(os.environ["OUT"], "wgmma-h200.jsonl") if os.environ.get("OUT") else "wgmma-h200.jsonl"
        sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else default))
