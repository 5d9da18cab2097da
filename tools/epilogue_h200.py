"""Record the epilogue on the GPU present (docs/epilogue.md): every case in its own child process, one JSON line
each, a summary table last.

    PYTHONPATH=. python3 tools/epilogue_h200.py [OUT.jsonl] [--only roundtrip,convert,bank,stream] [--jobs 6]
                                                        [--bank-every N] [--bank-ops st,ld]

* roundtrip: every fragment kind x output type x order x swizzle of tests/copy/smem_ldst/cases.py: registers ->
  (convert) -> swizzled shared (stmatrix / st.shared) -> TMA store -> global, and ldmatrix / ld.shared back,
  against the emulator bit for bit (the shared image, the array, the loaded registers);
* convert: every packing conversion (bf16x2, f16x2 with and without .satfinite, e4m3x2, e5m2x2) on every special
  value pair, 1M random bit patterns and 1M values near each range, against pycute.sim.convert;
* bank: each round trip's store and load plan alone in a kernel under ``ncu --clock-control none``: shared
  wavefronts and bank conflicts (st, ld and, where this ncu has them, the ldsm / stsm metrics) beside the plan's
  predicted wavefronts (and the instructions executed beside the planned count);
* stream: the write-only epilogue stream (perf/gpu_epilogue.py) over every configuration, against the same run's
  cuMemsetD32Async; target >= 90%.

The default output is $OUT/epilogue-h200.jsonl (or ./epilogue-h200.jsonl without $OUT).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = pathlib.Path(__file__).resolve().parents[1]
SECTIONS = ("roundtrip", "convert", "bank", "stream")
WANTED = re.compile(r"^(l1tex__data_bank_conflicts_pipe_lsu_mem_shared|l1tex__data_pipe_lsu_wavefronts_mem_shared)"
                    r"(_op_(ld|st|ldsm|stsm))?$|^smsp__sass_inst_executed_op_(shared_ld|shared_st|ldsm|stsm)$")
FALLBACK = ["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld", "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld"]
BATCH = 28


def child(args: list[str], timeout: int, prefix: list[str] | None = None) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        run = subprocess.run([*(prefix or []), sys.executable, "-m", "tests.gpu.epilogue_probe", *args], cwd=ROOT,
                             env=env, capture_output=True, text=True, timeout=timeout)
        return run.returncode, run.stdout, run.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


def roundtrips(jobs: int) -> list[dict]:
    from tests.gpu.epilogue_probe import ROUNDTRIPS

    def one(case):
        start = time.time()
        rc, out, err = child(["roundtrip", case[0]], 180)
        got = last_json(out) if rc == 0 else None
        row = got or {"section": "roundtrip", "case": case[0], "error": err[-1500:] or f"exit {rc}"}
        row["seconds"] = round(time.time() - start, 2)
        return row
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, ROUNDTRIPS))


def conversions() -> list[dict]:
    rc, out, err = child(["convert"], 300)
    got = last_json(out) if rc == 0 else None
    return [got or {"section": "convert", "error": err[-1500:] or f"exit {rc}"}]


def ncu_path() -> str | None:
    return shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu")
                                        if os.path.exists(p)), None)


def metrics(ncu: str) -> list[str]:
    """The shared-memory wavefront, bank-conflict and instruction metrics this ncu knows (the fallback four when
    it cannot list them)."""
    try:
        listing = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return FALLBACK
    names = sorted({m.group(0) for line in listing.splitlines() for word in line.split()[:1]
                    if (m := WANTED.match(word))})
    return names or FALLBACK


def parse_ncu(text: str) -> dict[str, dict[str, float]]:
    """Kernel name -> metric -> value from ``ncu --csv`` (one row per kernel and metric)."""
    rows = [line for line in text.splitlines() if line.startswith('"')]
    out: dict[str, dict[str, float]] = {}
    for row in csv.DictReader(io.StringIO("\n".join(rows))):
        name, metric, value = row.get("Kernel Name", ""), row.get("Metric Name", ""), row.get("Metric Value", "")
        try:
            out.setdefault(name.split("(")[0], {})[metric] = float(value.replace(",", ""))
        except ValueError:
            continue
    return out


def bank_batch(ncu: str, names: list[str], specs: list[str]) -> list[dict]:
    flags = ["--clock-control", "none", "--csv", "--print-units", "base", "--metrics",
             ",".join(f"{n}.sum" for n in names), "-k", "regex:^bank_"]
    rc, out, err = child(["bank", *specs], 600, prefix=[ncu, *flags])
    launched = last_json(out)
    if rc != 0 or launched is None:
        first = bank_batch(ncu, names, specs[:1]) if len(specs) > 1 else None
        if first is not None and "error" not in first[0]:   # the batch, not ncu, failed: isolate each plan
            return first + [r for s in specs[1:] for r in bank_batch(ncu, names, [s])]
        return [{"section": "bank", "plan": s, "error": (err or out)[-1500:]} for s in specs]
    measured = parse_ncu(out)
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


def banks(every: int = 1, ops: tuple[str, ...] = ("st", "ld")) -> list[dict]:
    """``every``: profile every n-th store / load plan of the matrix (ncu replays each kernel several times);
    ``ops``: the plans profiled (``st``, ``ld``)."""
    from tests.gpu.epilogue_probe import ROUNDTRIPS
    ncu = ncu_path()
    if ncu is None:
        return [{"section": "bank", "error": "ncu not found (PATH, /usr/local/cuda/bin)"}]
    names = metrics(ncu)
    specs = [f"{op}:{c[0]}" for c in ROUNDTRIPS for op in ("st", "ld")]
    specs = [s for s in specs[0::2][::every] + specs[1::2][::every] if s.split(":")[0] in ops]  # alike
    rows = [{"section": "bank-metrics", "ncu": ncu, "metrics": names}]
    for k in range(0, len(specs), BATCH):
        rows += bank_batch(ncu, names, specs[k:k + BATCH])
    return rows


STREAM = """
import json
from pycute.compile import runtime
from perf.gpu_epilogue import sweep
print(json.dumps({"section": "stream", **sweep(runtime.Gpu())}, default=str))
"""


def streams() -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        run = subprocess.run([sys.executable, "-c", STREAM], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=540)
        got = last_json(run.stdout) if run.returncode == 0 else None
        return [got or {"section": "stream", "error": run.stderr[-1500:]}]
    except subprocess.TimeoutExpired:
        return [{"section": "stream", "error": "timed out after 540 s"}]


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", nargs="?", default=os.path.join(os.environ.get("OUT", "."), "epilogue-h200.jsonl"))
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--jobs", type=int, default=6, help="round-trip children at once")
    parser.add_argument("--bank-every", type=int, default=1, help="profile every n-th plan of the bank matrix")
    parser.add_argument("--bank-ops", default="st,ld", help="the bank section's plans: st, ld or both")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {SECTIONS}")
    rows: list[dict] = []
    with open(args.out, "w") as out:
        for section, run in (("roundtrip", lambda: roundtrips(args.jobs)), ("convert", conversions),
                             ("bank", lambda: banks(args.bank_every, tuple(args.bank_ops.split(",")))),
                             ("stream", streams)):
            if section not in only:
                continue
            start = time.time()
            got = run()
            for r in got:
                out.write(json.dumps(r, default=str) + "\n")
            out.flush()
            rows += got
            print(f"{section}: {len(got)} line(s) in {time.time() - start:.0f} s", flush=True)
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
