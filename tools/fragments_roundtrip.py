"""Do fragment coordinates, row reductions and the accumulator -> A operand conversion run on the GPU as pycute says?

Three kinds of round trip (pycute/harness/fragments.py, pycute/harness/fragment_chain.py; docs/fragments.md), each
case in its own child process (a fault or a hang loses one case, not the run), one JSON line per case and a table
last:

* ``coords/*``: every thread writes ``<name>_row`` / ``_col`` / ``_for_each`` / ``_row_slot`` for each of its
  values; they must be ``fragment_coords``' tables (wgmma accumulators and A fragments, tcgen05.ld fragments: the
  helpers are arithmetic, so these run on sm_90a too);
* ``reduce/*``: every thread runs the six reduction functions on values from 2^-20 to 2^20 with +-0, +-inf and NaN
  among them; the results must be ``ReducePlan.reference``'s bits (NaN as NaN);
* ``chain/*``: S = Q K^T (wgmma), S -> P (the conversion plan), O = P V (wgmma, A in registers); S must be the
  emulator's and exact, P the conversion's reference of the GPU's S, O the emulator's from that P and exactly
  ``round(S) V`` -- bf16, f16, e4m3 shuffled and permuted, e5m2, M 64 and 128, N up to 256.

Every kernel's SASS is checked for local memory (``LDL`` / ``STL``: 0). Needs compute capability 9.0 (sm_90a).

    PYTHONPATH=. python -m tools fragments_roundtrip [OUT.jsonl]     (default $OUT/fragments_roundtrip.jsonl)
    PYTHONPATH=. python -m tools fragments_roundtrip --dry           (no GPU: every case compiled and run whole on
                                                                      the CPU through pycute.interp.run_kernel)
    PYTHONPATH=. python -m tools fragments_roundtrip --only coords,reduce
"""
from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

import numpy as np

from tools._common import JsonLines, last_json, out_path, run_question

QUESTION = "fragments_roundtrip"
LIMIT_S = 240
SEED = 7


def _coords_cases() -> dict[str, Any]:
    import pycute as pc
    acc = pc.mma_accumulator(pc.f32, 128, 64)
    return {"wgmma D f32 64x256": pc.wgmma_accumulator(pc.f32, 64, 256),
            "wgmma D f32 128x64": pc.wgmma_accumulator(pc.f32, 128, 64),
            "wgmma D f16 64x64": pc.wgmma_accumulator(pc.f16, 64, 64),
            "wgmma A bf16 64x64": pc.wgmma_a_fragment(pc.bf16, 64, 64),
            "wgmma A e4m3 128x128": pc.wgmma_a_fragment(pc.f8e4m3, 128, 128),
            "wgmma A tf32 64x32": pc.wgmma_a_fragment(pc.tf32, 64, 32),
            "tcgen05.ld 4 warps 128x64": pc.make_tmem_copy(acc, "ld", warps=4),
            "tcgen05.ld 8 warps 128x64": pc.make_tmem_copy(acc, "ld", warps=8)}


def _reduce_cases() -> dict[str, Any]:
    import pycute as pc
    column = pc.make_fragment(pc.f32, 64, pc.Layout(((32, 2), 4), ((1, 128), 32)), shape=(32, 8))
    return {"wgmma D 64x256 rows": (pc.wgmma_accumulator(pc.f32, 64, 256), "row"),
            "wgmma D 128x64 rows": (pc.wgmma_accumulator(pc.f32, 128, 64), "row"),
            "wgmma D 64x24 rows": (pc.wgmma_accumulator(pc.f32, 64, 24), "row"),
            "tcgen05.ld 4 warps 128x64 rows": (pc.make_tmem_copy(pc.mma_accumulator(pc.f32, 128, 64), "ld",
                                                                 warps=4), "row"),
            "a warp's columns 32x8": (column, "col")}


def cases() -> list[tuple[str, str]]:
    """(kind, name) of every case, in run order."""
    from pycute.harness.fragment_chain import CHAIN_CASES
    return ([("coords", n) for n in _coords_cases()] + [("reduce", n) for n in _reduce_cases()]
            + [("chain", c.name) for c in CHAIN_CASES])


def roundtrip(kind: str, name: str) -> Any:
    import pycute as pc
    from pycute.harness.fragment_chain import CHAIN_CASES
    from pycute.harness.fragments import CoordsRoundTrip, ReduceRoundTrip
    if kind == "coords":
        return CoordsRoundTrip(pc.fragment_coords(_coords_cases()[name]))
    if kind == "reduce":
        return ReduceRoundTrip(pc.make_reduction(*_reduce_cases()[name]))
    return next(c for c in CHAIN_CASES if c.name == name).roundtrip()


def _local(rt: Any) -> int:
    from pycute.compile.sass import function_instructions, opcode_histogram
    compiled = rt.compile()
    h = opcode_histogram(next(iter(function_instructions(compiled.sass()).values())))
    return sum(v for k, v in h.items() if k.startswith(("LDL", "STL")))


def verdict(kind: str, rt: Any, out: np.ndarray) -> dict:
    """The comparisons of one run's output (0 everywhere when right)."""
    from pycute.harness.fragments import REDUCE_OUTPUTS, same_floats
    if kind == "coords":
        got = rt.got(out)
        return {"differ": int((got != rt.expected()).sum()), "words": int(got.size)}
    if kind == "reduce":
        ok = same_floats(rt.got(out), rt.expected(SEED))
        return {"differ": {k: int((~ok[:, i]).sum()) for i, k in enumerate(REDUCE_OUTPUTS)}, "words": int(ok.size)}
    return rt.check(out, SEED)


def passed(r: dict) -> bool:
    if "error" in r or r.get("local", 0):
        return False
    if r["kind"] == "chain":
        return all(v == 0 for k, v in r.items() if k in ("s_emulator", "s_exact", "p_reference", "p_emulated",
                                                         "o_emulator", "o_exact")) and r["s_rounded"] > 0
    d = r["differ"]
    return (sum(d.values()) if isinstance(d, dict) else d) == 0


def _run_cpu(kind: str, rt: Any) -> np.ndarray:
    from pycute.interp import run_kernel
    out = np.zeros(rt.out_words, dtype=np.uint32)
    if kind == "chain":
        run_kernel(rt.compile(), block=rt.threads, smem=rt.smem_bytes, args=[rt.input(SEED), out])
    elif kind == "reduce":
        run_kernel(rt.compile(), block=rt.threads, args=[rt.input(SEED).view(np.float32), out])
    else:
        run_kernel(rt.compile(), block=rt.threads, args=[np.zeros(4, dtype=np.uint8), out])
    return out


def _run_gpu(kind: str, rt: Any) -> np.ndarray:
    from pycute.compile import runtime
    gpu = runtime.Gpu()
    if kind == "coords":
        return rt.run(gpu).reshape(-1)
    if kind == "reduce":
        return rt.run(gpu, SEED).reshape(-1)
    return rt.run(gpu, SEED)


def one(kind: str, name: str, run: Callable[[str, Any], np.ndarray], device: str) -> dict:
    start = time.time()
    rt = roundtrip(kind, name)
    record = {"kind": kind, "case": name, "threads": rt.threads, "local": _local(rt)}
    record.update(verdict(kind, rt, run(kind, rt)))
    return {**record, "device": device, "seconds": round(time.time() - start, 2)}


def child(kind: str, name: str) -> dict:
    run = run_question(QUESTION, ["--one", kind, name], LIMIT_S)
    got = last_json(run.stdout) if run.ok else None
    return got or {"kind": kind, "case": name, "error": run.error()}


def table(records: list[dict]) -> str:
    rows = [f"{'kind':<7} {'case':<40} {'local':>5}  result"]
    for r in records:
        if "error" in r:
            rows.append(f"{r['kind']:<7} {r['case']:<40} {'':>5}  ERROR {r['error'][-70:]!r}")
            continue
        detail = {k: v for k, v in r.items() if k in ("differ", "s_emulator", "p_reference", "o_emulator",
                                                      "o_exact", "s_rounded")}
        rows.append(f"{r['kind']:<7} {r['case']:<40} {r['local']:>5}  {'ok' if passed(r) else 'FAIL'} {detail}")
    ok = sum(passed(r) for r in records)
    return "\n".join(rows + [f"{ok} of {len(records)} cases as pycute says, bit for bit, no local memory"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m tools {QUESTION}", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help=f"the JSON lines file (default $OUT/{QUESTION}.jsonl)")
    parser.add_argument("--dry", action="store_true", help="no GPU: compile every case, run it whole on the CPU")
    parser.add_argument("--only", help="kinds to run, comma-separated: coords, reduce, chain")
    parser.add_argument("--one", nargs=2, metavar=("KIND", "CASE"), help="run one case in this process")
    args = parser.parse_args(argv)
    if args.one is not None:
        from pycute.compile import runtime
        info = runtime.device_info()
        if info is None or info[1] != (9, 0):
            raise SystemExit(f"the round trips run on compute capability 9.0 (sm_90a); this device is {info}")
        print(json.dumps(one(*args.one, _run_gpu, info[0])))
        return 0
    todo = [c for c in cases() if not args.only or c[0] in args.only.split(",")]
    if args.dry:
        records = [one(kind, name, _run_cpu, "cpu (pycute.interp.run_kernel)") for kind, name in todo]
        print(table(records))
        return 0 if all(passed(r) for r in records) else 1
    from pycute.compile import runtime
    info = runtime.device_info()
    if info is None or info[1] != (9, 0):
        print(f"the round trips run on compute capability 9.0; this machine has {info or 'no GPU'} (--dry runs them "
              f"on the CPU)")
        return 2
    path = out_path(QUESTION, args.out)
    with JsonLines(path, echo=True) as out:
        for kind, name in todo:
            out.write(child(kind, name))
    print(table(out.rows))
    print(f"wrote {path}")
    return 0 if all(passed(r) for r in out.rows) else 1
