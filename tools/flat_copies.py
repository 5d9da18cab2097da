"""Do the cp.async, bulk and DSMEM copies pycute plans leave the GPU's memory as the emulator says, byte for byte?

Every case of tests/copy/flat_cases.py (1/2/4/8-byte elements, plain and swizzled tiles on either side, partial
tiles, clusters of 2 and 4) in its own child process (``python -m tests.gpu.flat_probe NAME``: a fault kills only
that case): the generated function compiled for sm_90a and run for real (LDGSTS, UBLKCP, mapa + bulk copies), shared
memory (and for bulk stores the array) dumped and compared with the emulator running the plan's stream on the same
bytes, every mbarrier completing. ``dsmem-to-self`` records what the GPU does with a DSMEM copy to the issuing CTA,
which pycute refuses (docs/cp-async-bulk-dsmem.md).

    PYTHONPATH=. python -m tools flat_copies [OUT.jsonl] [--only PREFIX]    (default $OUT/flat_copies.jsonl)
    PYTHONPATH=. python -m tools flat_copies --dry                           (no GPU: every case's kernel compiled)
"""
from __future__ import annotations

import argparse

from tools._common import JsonLines, last_json, out_path, run_child

LIMIT_S = 120


def case_names() -> list[str]:
    from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM
    return [c[0] for c in CP_ASYNC + BULK + DSMEM] + ["dsmem-to-self"]


def round_trip(name: str):
    """The round trip ``tests.gpu.flat_probe`` runs for case ``name`` (the first cluster size of a DSMEM case)."""
    from pycute.copy.bulk import make_bulk_copy
    from pycute.copy.cp_async import make_cp_async_copy
    from pycute.copy.dsmem import make_dsmem_copy
    from pycute.harness.bulk import BulkRoundTrip, DsmemRoundTrip
    from pycute.harness.cp_async import CpAsyncRoundTrip
    from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM
    if name == "dsmem-to-self":
        return DsmemRoundTrip(make_dsmem_copy(DSMEM[0][2], DSMEM[0][1]), 2)
    for case in CP_ASYNC:
        if case[0] == name:
            _, gm, sm, options, _ = case
            return CpAsyncRoundTrip(make_cp_async_copy(sm, gm, **options))
    for case in BULK:
        if case[0] == name:
            _, gm, sm, _ = case
            return BulkRoundTrip(make_bulk_copy(sm, gm), make_bulk_copy(gm, sm))
    _, src, dst, clusters = next(c for c in DSMEM if c[0] == name)
    return DsmemRoundTrip(make_dsmem_copy(dst, src), clusters[0])


def passed(row: dict) -> bool:
    """Every run equal to the emulator (``dsmem-to-self`` is evidence: it passes once it ran)."""
    if "error" in row:
        return False
    return all(r.get("smem") is None and r.get("array") is None for r in row.get("runs", []))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools flat_copies", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/flat_copies.jsonl)")
    parser.add_argument("--only", default="", help="the cases whose name starts with this")
    parser.add_argument("--dry", action="store_true", help="no GPU: build and compile every case's kernel")
    args = parser.parse_args(argv)
    names = [n for n in case_names() if n.startswith(args.only)]
    if args.dry:
        for name in names:
            round_trip(name).compile()
        print(f"dry: {len(names)} cases' kernels compiled for sm_90a")
        return 0
    path = out_path("flat_copies", args.out)
    with JsonLines(path, echo=True) as out:
        for name in names:
            run = run_child(["-m", "tests.gpu.flat_probe", name], LIMIT_S)
            verdict = last_json(run.stdout) if run.ok else None
            out.write(verdict or {"case": name, "error": run.error()})
    ok = [r for r in out.rows if passed(r)]
    for r in out.rows:
        print(f"{r['case']:<44} {'equal' if r in ok else 'DIFFERS: ' + str(r.get('error') or r.get('runs'))[:120]}")
    print(f"{len(ok)} of {len(out.rows)} cases equal the emulator; wrote {path}")
    return 0 if len(ok) == len(out.rows) else 1
