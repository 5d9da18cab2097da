"""Does wgmma.mma_async on the GPU write D as pycute's emulator and the reference MMA say, for every planned case?

Every case of ``pycute.harness.wgmma.WGMMA_CASES`` in its own child process (a fault or a hang loses one case, not
the run), one JSON line per case -- the D registers the GPU writes back against the emulator's, bit for bit, and D
through the accumulator fragment against the reference MMA of the elements (exact values: no rounding anywhere) --
and a table last (docs/wgmma.md). Needs compute capability 9.0 (sm_90a).

    PYTHONPATH=. python -m tools wgmma [OUT.jsonl]    (default $OUT/wgmma.jsonl)
    PYTHONPATH=. python -m tools wgmma --dry          (no GPU: every case compiled for sm_90a, SASS checked)

A case passes when both counts are 0 and D is not all zeros. A failing case's line names its first differing
elements and which simple misreading (no MMA, scale-d inverted, f16 halves swapped) D matches, if any.
"""
from __future__ import annotations

import argparse
import json
import time

from tools._common import JsonLines, last_json, out_path, run_question

LIMIT_S = 180


def one(index: int) -> dict:
    """Case ``index`` on this process's GPU."""
    from pycute.compile import runtime
    from pycute.harness.wgmma import WGMMA_CASES, case_record
    info = runtime.device_info()
    if info is None or info[1] != (9, 0):
        raise SystemExit(f"wgmma (sm_90a) runs on compute capability 9.0; this device is {info}")
    start = time.time()
    record = case_record(WGMMA_CASES[index], runtime.Gpu(), seed=7)
    return {"index": index, **record, "device": info[0], "seconds": round(time.time() - start, 2)}


def child(index: int, name: str) -> dict:
    run = run_question("wgmma", ["--one", str(index)], LIMIT_S)
    verdict = last_json(run.stdout) if run.ok else None
    return verdict or {"index": index, "case": name, "error": run.error()}


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


def dry() -> int:
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools wgmma", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/wgmma.jsonl)")
    parser.add_argument("--dry", action="store_true", help="no GPU: compile every case, check its SASS")
    parser.add_argument("--one", type=int, metavar="INDEX", help="run one case in this process (what each child does)")
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.one)))
        return 0
    if args.dry:
        return dry()
    from pycute.compile import runtime
    from pycute.harness.wgmma import WGMMA_CASES
    info = runtime.device_info()
    if info is None or info[1] != (9, 0):
        print(f"wgmma (sm_90a) runs on compute capability 9.0; this machine has {info or 'no GPU'} (--dry checks "
              f"the build)")
        return 2
    path = out_path("wgmma", args.out)
    with JsonLines(path, echo=True) as out:
        for i, case in enumerate(WGMMA_CASES):
            out.write(child(i, case.name))
    print(table(out.rows))
    print(f"wrote {path}")
    return 0 if all(passed(r) for r in out.rows) else 1
