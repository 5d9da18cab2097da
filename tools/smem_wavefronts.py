"""Does ncu count the shared wavefronts the bank model predicts for the searched pairings and the pinned forms?

The epilogue question's bank experiment (``python -m tools epilogue --only bank``: each plan alone in a kernel under
``ncu --clock-control none``, the plan's own operation's wavefronts and bank conflicts beside the prediction),
over the register <-> shared plans the recorded runs (docs/runs/epilogue/epilogue-bank-*.jsonl) did not cover:

* ``stmatrix .trans`` stores whose values the search pairs (tcgen05.ld ``16x128b.x8`` / ``16x64b.x16`` fragments
  into column-major tiles: cases.TRANSPOSED and their neighbours, conflict-free and conflicted), and the loads of the
  same tiles;
* pinned forms the planner never chose before: ``stmatrix`` / ``ldmatrix`` ``.x1`` and ``.x2``, with and without
  ``.trans``, conflict-free and conflicted (each 8-row matrix served on its own is the model's claim);
* the round trips (registers -> shared -> TMA store -> global, and back) of the new TMA-storable store plans, against
  the emulator bit for bit (the pairing's bytes land where the layouts say).

The 8-bit ``stmatrix.m16n8`` plans (sm_100a) cannot run on an sm_90 GPU: they are compiled and emulated in the
tests, never measured here.

    PYTHONPATH=. python -m tools smem_wavefronts [OUT.jsonl] [--only bank,roundtrip]   ($OUT/smem_wavefronts.jsonl)
    PYTHONPATH=. python -m tools smem_wavefronts --dry     (no GPU: every plan emulated, every kernel compiled)
"""
from __future__ import annotations

import argparse
import time

from tools._common import JsonLines, ncu_path, out_path
from tools.epilogue import BATCH, bank_batch, metrics, probe

SECTIONS = ("bank", "roundtrip")
#: ``st:CASE`` / ``ld:CASE`` (``@FORM``: that form pinned); CASE is ``<fragment>-<type>-<order>-<swizzle>``.
SPECS = [
    # stores the pairing search decides (the first two took twice the ideal with the nearest-partner pairing)
    "st:tmem16x128b-bf16-col-128B", "st:tmem16x64b-bf16-col-Sw<3,4,3>", "st:tmem16x128b-bf16-col-plain",
    "st:tmem16x128b-bf16-col-64B", "st:tmem16x64b-bf16-col-128B", "st:tmem16x64b-bf16-col-plain",
    "st:tmem16x128b-f16-col-32B", "st:tmem16x64b-f16-col-64B", "st:tmem16x64b-bf16-row-64B",
    # pinned forms: .x1 / .x2, .trans or not, conflict-free and conflicted
    "st:wgmma-bf16-row-128B@stmatrix.x1", "st:wgmma-bf16-row-plain@stmatrix.x2",
    "st:wgmma-bf16-col-64B@stmatrix.x2.trans", "st:tmem16x128b-bf16-col-128B@stmatrix.x1.trans",
    "st:wgmma-bf16-col-plain@stmatrix.x1.trans", "st:wgmma-bf16-row-128B@st.shared.b16",
    # the loads of the same tiles, and pinned loads
    "ld:tmem16x128b-bf16-col-128B", "ld:tmem16x64b-bf16-col-Sw<3,4,3>", "ld:tmem16x128b-bf16-col-plain",
    "ld:tmem16x64b-bf16-row-64B", "ld:wgmma-bf16-row-128B@ldmatrix.x1", "ld:wgmma-bf16-row-plain@ldmatrix.x2",
    "ld:wgmma-bf16-col-32B@ldmatrix.x2.trans", "ld:wgmma-bf16-col-plain@ldmatrix.x1.trans",
]
#: Round trips (a TMA store needs a TMA swizzle): the new store plans of the default forms.
ROUNDTRIPS = ["tmem16x128b-bf16-col-128B", "tmem16x128b-bf16-col-plain", "tmem16x64b-bf16-col-128B",
              "tmem16x128b-f16-col-32B"]


def banks() -> list[dict]:
    ncu = ncu_path()
    if ncu is None:
        return [{"section": "bank", "error": "ncu not found (PATH, /usr/local/cuda/bin)"}]
    names = metrics(ncu)
    rows = [{"section": "bank-metrics", "ncu": ncu, "metrics": names}]
    for k in range(0, len(SPECS), BATCH):
        rows += bank_batch(ncu, names, SPECS[k:k + BATCH])
    return rows


def roundtrips() -> list[dict]:
    rows = []
    for name in ROUNDTRIPS:
        start = time.time()
        got, error = probe(["roundtrip", name], 180)
        row = got or {"section": "roundtrip", "case": name, "error": error}
        row["seconds"] = round(time.time() - start, 2)
        rows.append(row)
    return rows


def dry(only: list[str]) -> int:
    """Every plan planned and emulated against its layouts, every kernel compiled for sm_90a (no device)."""
    from pycute.compile.nvrtc import compile_cuda
    from tests.gpu.epilogue_probe import bank_plan, bank_source, roundtrip
    built = 0
    if "bank" in only:
        for spec in SPECS:
            plan = bank_plan(spec)
            plan.verify()
            print(f"  {spec:<50} predicted {plan.wavefronts:4d} (ideal {plan.ideal_wavefronts})")
        built += sum(1 for k in range(0, len(SPECS), BATCH)
                     if compile_cuda(bank_source(SPECS[k:k + BATCH]), arch="sm_90a"))
    if "roundtrip" in only:
        for name in ROUNDTRIPS:
            rt = roundtrip(name)
            rt.epilogue.verify()
            built += bool(rt.compile())
    print(f"dry: {built} kernel sources compiled for sm_90a ({', '.join(only)})")
    return 0


def summary(rows: list[dict]) -> str:
    lines = ["", "shared-memory wavefronts of the searched and pinned plans: summary"]
    bank = [r for r in rows if r["section"] == "bank"]
    if bank:
        eq = [r for r in bank if r.get("equal")]
        lines.append(f"  bank model   {len(eq)}/{len(bank)} plans: ncu's wavefronts of the plan's operation == "
                     f"pycute's prediction")
        lines += [f"    {r['plan']:<50} predicted {r.get('predicted_wavefronts')} measured "
                  f"{r.get('measured_wavefronts', r.get('error', '')[-120:])}"
                  + ("" if r.get("equal") else "  DIFFERENT") for r in bank]
    rt = [r for r in rows if r["section"] == "roundtrip"]
    if rt:
        ok = [r for r in rt if "error" not in r and not any(r.get(k) for k in ("smem", "array", "loaded"))]
        lines.append(f"  round trips  {len(ok)}/{len(rt)} bit for bit (shared image, array, loaded registers)")
        lines += [f"    WRONG {r['case']}: {str(r.get('error') or r)[-300:]}" for r in rt if r not in ok]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools smem_wavefronts", description=__doc__.split("\n")[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/smem_wavefronts.jsonl)")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--dry", action="store_true", help="no GPU: plan, emulate and compile every case")
    args = parser.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {SECTIONS}")
    if args.dry:
        return dry(only)
    path = out_path("smem_wavefronts", args.out)
    runs = {"bank": banks, "roundtrip": roundtrips}
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
