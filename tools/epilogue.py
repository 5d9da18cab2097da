"""Does the epilogue (registers -> shared -> global, and back) run on the GPU as pycute's plans and models say?

Every case in its own child process, one JSON line each, a summary table last (docs/epilogue.md section 8):

* ``roundtrip``: every fragment kind x output type x order x swizzle of tests/copy/smem_ldst/cases.py: registers ->
  (convert) -> swizzled shared (stmatrix / st.shared) -> TMA store -> global, and ldmatrix / ld.shared back,
  against the emulator bit for bit (the shared image, the array, the loaded registers);
* ``convert``: every packing conversion (bf16x2, f16x2 with and without .satfinite, e4m3x2, e5m2x2) on every special
  value pair, 1M random bit patterns and 1M values near each range, against pycute.sim.convert;
* ``bank``: each round trip's store and load plan alone in a kernel under ``ncu --clock-control none``: shared
  wavefronts and bank conflicts (st, ld and, where this ncu has them, the ldsm / stsm metrics) beside the plan's
  predicted wavefronts (and the instructions executed beside the planned count);
* ``stream``: the write-only epilogue stream (perf/gpu_epilogue.py) over every configuration, against the same run's
  cuMemsetD32Async; target >= 90%.

    PYTHONPATH=. python -m tools epilogue [OUT.jsonl] [--only roundtrip,convert,bank,stream] [--jobs 6]
                                          [--bank-every N] [--bank-ops st,ld]   (default $OUT/epilogue.jsonl)
    PYTHONPATH=. python -m tools epilogue --dry [--only ...]                    (no GPU: every kernel compiled)
"""
from __future__ import annotations

import argparse
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

from tools._common import JsonLines, last_json, ncu_metrics, ncu_path, out_path, parse_ncu, run_child, run_question

SECTIONS = ("roundtrip", "convert", "bank", "stream")
WANTED = re.compile(r"^(l1tex__data_bank_conflicts_pipe_lsu_mem_shared|l1tex__data_pipe_lsu_wavefronts_mem_shared)"
                    r"(_op_(ld|st|ldsm|stsm))?$|^smsp__sass_inst_executed_op_(shared_ld|shared_st|ldsm|stsm)$")
FALLBACK = ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld"]
BATCH = 28


def probe(args: list[str], timeout: int, prefix: tuple[str, ...] = ()) -> tuple[dict | None, str]:
    """``python -m tests.gpu.epilogue_probe args`` in a child: its verdict (None on failure) and why it failed."""
    run = run_child(["-m", "tests.gpu.epilogue_probe", *args], timeout, prefix)
    return (last_json(run.stdout) if run.ok else None), ("" if run.ok else run.error())


def roundtrips(jobs: int) -> list[dict]:
    from tests.gpu.epilogue_probe import ROUNDTRIPS

    def one(case: tuple) -> dict:
        start = time.time()
        got, error = probe(["roundtrip", case[0]], 180)
        row = got or {"section": "roundtrip", "case": case[0], "error": error}
        row["seconds"] = round(time.time() - start, 2)
        return row
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, ROUNDTRIPS))


def conversions() -> list[dict]:
    got, error = probe(["convert"], 300)
    return [got or {"section": "convert", "error": error}]


def metrics(ncu: str) -> list[str]:
    """The shared-memory wavefront, bank-conflict and instruction metrics this ncu knows (the fallback four when
    it cannot list them)."""
    return sorted(m for m in ncu_metrics(ncu) if WANTED.match(m)) or FALLBACK


def bank_batch(ncu: str, names: list[str], specs: list[str]) -> list[dict]:
    """The plans ``specs`` (``st:CASE`` / ``ld:CASE``) in one child under ncu: measured against predicted."""
    flags = ("--clock-control", "none", "--csv", "--print-units", "base", "--metrics",
             ",".join(f"{n}.sum" for n in names), "-k", "regex:^bank_")
    run = run_child(["-m", "tests.gpu.epilogue_probe", "bank", *specs], 600, prefix=(ncu, *flags))
    launched = last_json(run.stdout)
    if not run.ok or launched is None:
        first = bank_batch(ncu, names, specs[:1]) if len(specs) > 1 else None
        if first is not None and "error" not in first[0]:   # the batch, not ncu, failed: isolate each plan
            return first + [r for s in specs[1:] for r in bank_batch(ncu, names, [s])]
        return [{"section": "bank", "plan": s, "error": run.error()} for s in specs]
    measured = parse_ncu(run.stdout)
    rows = []
    for k in launched["kernels"]:
        got = measured.get(k["kernel"], {})
        # the plan's own operation's metric: the kernel's total also counts one wavefront per warp of its other
        # shared traffic (the H200 run of 2026-12-02: total = op_st + 4 for 4 warps, in every plan)
        op = "st" if k["plan"].startswith("st:") else "ld"
        waves = got.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
        conflicts = got.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum", 0.0)
        rows.append({"section": "bank", "plan": k["plan"], "predicted_wavefronts": k["wavefronts"],
                     "ideal_wavefronts": k["ideal"], "predicted_conflicts": k["wavefronts"] - k["ideal"],
                     "measured_conflicts": conflicts, "planned_instructions": k["instructions"],
                     "measured": got, "measured_wavefronts": waves, "equal": waves == k["wavefronts"],
                     "repr": k["repr"]})
    return rows


def bank_specs(every: int = 1, ops: tuple[str, ...] = ("st", "ld")) -> list[str]:
    """Every ``every``-th store and load plan of the round-trip matrix (ncu replays each kernel several times), of
    the operations ``ops``."""
    from tests.gpu.epilogue_probe import ROUNDTRIPS
    specs = [f"{op}:{c[0]}" for c in ROUNDTRIPS for op in ("st", "ld")]
    return [s for s in specs[0::2][::every] + specs[1::2][::every] if s.split(":")[0] in ops]   # alike


def banks(every: int = 1, ops: tuple[str, ...] = ("st", "ld")) -> list[dict]:
    ncu = ncu_path()
    if ncu is None:
        return [{"section": "bank", "error": "ncu not found (PATH, /usr/local/cuda/bin)"}]
    names, specs = metrics(ncu), bank_specs(every, ops)
    rows = [{"section": "bank-metrics", "ncu": ncu, "metrics": names}]
    for k in range(0, len(specs), BATCH):
        rows += bank_batch(ncu, names, specs[k:k + BATCH])
    return rows


def stream() -> dict:
    """The stream's sweep in this process (the child ``--one stream`` runs it)."""
    from perf.gpu_epilogue import sweep
    from pycute.compile import runtime
    return {"section": "stream", **sweep(runtime.Gpu())}


def streams() -> list[dict]:
    run = run_question("epilogue", ["--one", "stream"], 540)
    got = last_json(run.stdout) if run.ok else None
    return [got or {"section": "stream", "error": run.error()}]


def dry(only: list[str], every: int, ops: tuple[str, ...]) -> int:
    """Every kernel the sections launch, built and compiled for sm_90a (no device)."""
    from perf.gpu_epilogue import configs, stream as epilogue_stream
    from pycute.compile.nvrtc import compile_cuda
    from pycute.harness.epilogue import ConversionProbe
    from tests.gpu.epilogue_probe import ROUNDTRIPS, bank_source, roundtrip
    built = 0
    if "roundtrip" in only:
        built += sum(1 for case in ROUNDTRIPS if roundtrip(case[0]).compile())
    if "convert" in only:
        built += bool(compile_cuda(ConversionProbe().source(), arch="sm_90a"))
    if "bank" in only:
        specs = bank_specs(every, ops)
        built += sum(1 for k in range(0, len(specs), BATCH)
                     if compile_cuda(bank_source(specs[k:k + BATCH]), arch="sm_90a"))
    if "stream" in only:
        built += sum(1 for c in configs() if epilogue_stream(*c).compile())
    print(f"dry: {built} kernels compiled for sm_90a ({', '.join(only)})")
    return 0


def summary(rows: list[dict]) -> str:
    lines = ["", "epilogue on the GPU: summary"]
    rt = [r for r in rows if r["section"] == "roundtrip"]
    if rt:
        ok = [r for r in rt if "error" not in r and not any(r.get(k) for k in ("smem", "array", "loaded"))]
        lines.append(f"  round trips      {len(ok)}/{len(rt)} bit for bit (shared image, array, loaded registers)")
        lines += [f"    WRONG {r['case']}: " + (r.get("error", "")[-200:].replace("\n", " ") or
                                                 json.dumps({k: r.get(k) for k in ("smem", "array", "loaded")})[:300])
                  for r in rt if r not in ok]
    for r in (r for r in rows if r["section"] == "convert"):
        if "error" in r:
            lines.append(f"  conversions      ERROR {r['error'][-200:]}")
        for f in r.get("forms", []):
            lines.append(f"  {f['ptx']:<32} {f['values'] - f['differ']}/{f['values']} equal the model"
                         + (f"  e.g. {f['examples'][:2]}" if f["differ"] else ""))
    bank = [r for r in rows if r["section"] == "bank"]
    if bank:
        eq = [r for r in bank if r.get("equal")]
        lines.append(f"  bank conflicts   {len(eq)}/{len(bank)} plans: ncu's shared wavefronts == pycute's prediction")
        lines += [f"    {r['plan']:<40} predicted {r.get('predicted_wavefronts')} measured "
                  f"{r.get('measured_wavefronts', r.get('error', '')[-120:])}" for r in bank if not r.get("equal")][:40]
    for r in (r for r in rows if r["section"] == "stream"):
        if "error" in r:
            lines.append(f"  stream           ERROR {r['error'][-300:]}")
            continue
        best = r["best"]
        wrong = [x["config"] for x in r["runs"] if not x["exact"]]
        lines.append(f"  memset           {r['memset_GBps']:.1f} GB/s (write-only roofline)")
        if best:
            lines.append(f"  epilogue stream  {best['GBps']:.1f} GB/s = {best['vs_memset']:.1%} of memset "
                         f"({'ok' if best['vs_memset'] >= r['target'] else 'MISSED'} >= {r['target']:.0%}), "
                         f"{best['config']}")
        lines.append(f"  stream configs   {len(r['runs'])} timed, " + ("all exact" if not wrong else f"WRONG {wrong}"))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools epilogue", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/epilogue.jsonl)")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--jobs", type=int, default=6, help="round-trip children at once")
    parser.add_argument("--bank-every", type=int, default=1, help="profile every n-th plan of the bank matrix")
    parser.add_argument("--bank-ops", default="st,ld", help="the bank section's plans: st, ld or both")
    parser.add_argument("--dry", action="store_true", help="no GPU: build and compile every kernel of the sections")
    parser.add_argument("--one", choices=["stream"], help="run the stream's sweep in this process (the child)")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(stream(), default=str))
        return 0
    only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {SECTIONS}")
    ops = tuple(args.bank_ops.split(","))
    if args.dry:
        return dry(only, args.bank_every, ops)
    runs = {"roundtrip": lambda: roundtrips(args.jobs), "convert": conversions,
            "bank": lambda: banks(args.bank_every, ops), "stream": streams}
    path = out_path("epilogue", args.out)
    with JsonLines(path) as out:
        for section in SECTIONS:
            if section in only:
                start = time.time()
                got = runs[section]()
                out.extend(got)
                print(f"{section}: {len(got)} line(s) in {time.time() - start:.0f} s", flush=True)
    print(summary(out.rows))
    print(f"wrote {path}")
    return 0
