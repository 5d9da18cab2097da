"""Does the GPU copy the boxes pycute used to refuse (one-CTA masks, merged modes, equal strides) as the emulator says?

    PYTHONPATH=. python -m tools tma_boxes [OUT.jsonl] [--only PREFIX] [--timeout SECONDS]
                                           (default $OUT/tma_boxes.jsonl)
    PYTHONPATH=. python -m tools tma_boxes --dry [--only PREFIX]   (no GPU: the kernels run whole on the CPU)

The cases (tests/copy/tma/cases_legal.py; docs/tma.md, section 8):

* ``one-cta/*``: a multicast whose mask names one CTA (or one CTA per line along an axis), planned as a plain load
  by that CTA: its shared memory equal to the emulator's, every other CTA's untouched, every receiving mbarrier
  complete with the plan's expect_tx.
* ``merged/*``: rows packed narrower than a swizzle's row, and rows under 16 B, through a map with contiguous modes
  merged: the loaded image and the stored array equal to the emulator's.
* ``partial-row/*``: stores (and an ``add`` reduction) into rows that end inside a 16-byte unit, whose boxes end at
  or before that unit (one ends exactly at it): the whole array equal, the bytes past each row untouched.
* ``equal-strides/*``: arrays with two modes of one stride (the driver encodes them): loads, and stores whose tile
  addresses each element once (each element to its own address).
* ``nested/*``: hierarchical modes whose sub-modes, a few bytes apart, coalesce into one dimension.
* ``overwrite/*``: the store pycute refuses, forced (the load's box issued as a store at a tile reaching the row's
  last, partial unit): the bytes past the row overwritten, as the emulator models it.

Each case runs in its own child process with a time limit (a fault or a hang loses that case, never the run); one
JSON line per case, a table last. ``--dry`` runs the same kernels whole on the CPU (pycute.interp.run_kernel) in
place of the GPU, against the same emulator.
"""
from __future__ import annotations

import argparse
import json
import time

from tools._common import JsonLines, last_json, out_path, run_question

SPIN = 1 << 26
GROUPS = {"one-cta": "ONE_CTA", "merged": "MERGED", "partial-row": "PARTIAL_ROW", "equal-strides": "EQUAL_STRIDES",
          "nested": "NESTED"}
#: Stores pycute refuses, forced: (case of cases_legal.py whose load is issued as a store, the tile reaching the
#: row's partial unit, the reduction or None). The load fills the unit's bytes past the row with zeros, so the
#: reduction is ``min`` (an ``add`` of zeros would leave them as they were).
OVERWRITE = {"bf16-box-over-the-partial-unit": ("bf16-store-before-the-partial-unit", (0, 64), None),
             "u32-min-box-over-the-partial-unit": ("u32-add-before-the-partial-unit", (0, 16), "min")}


def _diff(got, want) -> dict | None:
    import numpy as np
    bad = np.flatnonzero(np.asarray(got) != np.asarray(want))
    if not bad.size:
        return None
    k = int(bad[0])
    return {"byte": k, "got": int(got[k]), "want": int(want[k]), "count": int(bad.size)}


def _launch(rt, tile: tuple, seed: int, gpu) -> dict:
    """The round trip's kernel at ``tile`` on the GPU, or (``gpu`` None) whole on the CPU through the PTX
    interpreter: ``{"smem", "array", "spins"}`` as ``TmaRoundTrip.launch`` returns them."""
    import numpy as np
    if gpu is not None:
        return rt.launch(gpu, tile, seed)
    from pycute.interp import run_kernel, tensor_map
    a, b = rt.arrays(seed)
    dump, status = np.zeros(rt.ctas * rt.smem_bytes, dtype=np.uint8), np.zeros(rt.ctas, dtype=np.uint32)
    run_kernel(rt.compile(), grid=rt.cluster, block=128, cluster=rt.cluster, smem=rt.smem_bytes + 1024,
               args=[tensor_map(rt.load, a), tensor_map(rt.store or rt.load, b), dump, status, *tile])
    return {"smem": dump, "array": b, "spins": int(status.max())}


def _rows_overwritten(plan, after, before) -> int:
    """Rows whose bytes past their end, up to the next 16-byte boundary, differ between two images of the array."""
    import numpy as np
    m, elem = plan.tensor_map, plan.elem_bytes
    row, pitch = m.global_dims[0] * elem, m.global_strides[0]
    rows = len(after) // pitch
    past = [np.asarray(x[:rows * pitch]).reshape(rows, pitch)[:, row:-(-row // 16) * 16] for x in (after, before)]
    return int((past[0] != past[1]).any(axis=1).sum())


def legal_case(group: str, name: str, gpu) -> dict:
    import pycute as pc
    from pycute.harness.tma import TmaRoundTrip
    from tests.copy.tma import cases_legal
    _, g, s, tiles, load_options, store_options = next(c for c in getattr(cases_legal, GROUPS[group]) if c[0] == name)
    load = pc.make_tma_copy(s, g, **load_options)
    store = None if store_options is None else pc.make_tma_copy(g, s, **store_options)
    rows = []
    for k, tile in enumerate(tiles):
        values = dict(zip(load.coordinate_names, tile))
        stores = store is not None and all(p.holds(values[p.name]) for p in store.preconditions)
        rt = TmaRoundTrip(load, store if stores else None)
        got = _launch(rt, tile, k, gpu)
        image, array = rt.emulate(tile, k)
        rows.append({"tile": list(tile), "stored": stores, "spins": got["spins"], "smem": _diff(got["smem"], image),
                     "array": _diff(got["array"], array) if stores else None})
    return {"plan": repr(load), "store": repr(store) if store is not None else None, "tiles": rows,
            "ok": all(r["smem"] is None and r["array"] is None and r["spins"] < SPIN for r in rows)}


def forced_store(name: str):
    """Overwrite case ``name``: (the load plan, the load's box issued as a store, the tile reaching the row's partial
    unit, the planner's refusal of that store (its first line) or None)."""
    import attrs
    import pycute as pc
    from pycute.atoms.tma import tma_atom
    from tests.copy.tma.cases_legal import PARTIAL_ROW
    source, tile, reduce = OVERWRITE[name]
    _, g, s, _, load_options, store_options = next(c for c in PARTIAL_ROW if c[0] == source)
    load = pc.make_tma_copy(s, g, **load_options)
    atom = tma_atom("store", load.atom.rank, reduce=reduce)
    forced = attrs.evolve(load, direction="store", atom=atom,
                          instructions=tuple(attrs.evolve(i, ptx=atom.ptx) for i in load.instructions))
    try:
        pc.make_tma_copy(g, s, **{**(store_options or {}), "reduce": reduce}).stream(0, *tile)
        refused = None
    except pc.PlanError as e:
        refused = str(e).splitlines()[0][:200]
    return load, forced, tile, refused


def overwrite_case(name: str, gpu) -> dict:
    from pycute.harness.tma import TmaRoundTrip
    load, forced, tile, refused = forced_store(name)
    rt = TmaRoundTrip(load, forced)
    got = _launch(rt, tile, 0, gpu)
    image, array = rt.emulate(tile, 0)
    _, before = rt.arrays(0)
    return {"tile": list(tile), "refused": refused, "spins": got["spins"], "smem": _diff(got["smem"], image),
            "array": _diff(got["array"], array), "rows_overwritten": _rows_overwritten(load, got["array"], before),
            "emulator_rows_overwritten": _rows_overwritten(load, array, before),
            "ok": _diff(got["array"], array) is None and _diff(got["smem"], image) is None}


def case_names() -> list[str]:
    from tests.copy.tma import cases_legal
    names = [f"{group}/{c[0]}" for group, attr in GROUPS.items() for c in getattr(cases_legal, attr)]
    return names + [f"overwrite/{n}" for n in OVERWRITE]


def one(name: str, dry: bool) -> dict:
    """Case ``name`` on the GPU, or with ``dry`` whole on the CPU."""
    from pycute.compile import runtime
    group, _, rest = name.partition("/")
    gpu = None if dry else runtime.Gpu()
    start = time.time()
    out = overwrite_case(rest, gpu) if group == "overwrite" else legal_case(group, rest, gpu)
    info = None if dry else runtime.device_info()
    return {"case": name, "device": info[0] if info else "cpu (pycute.interp)",
            "seconds": round(time.time() - start, 2), **out}


def _detail(v: dict) -> str:
    if v.get("error"):
        return str(v["error"]).strip().splitlines()[-1][:100]
    if "rows_overwritten" in v:
        return (f"forced store: {v['rows_overwritten']} rows overwritten past their end (emulator "
                f"{v['emulator_rows_overwritten']}; array {'equal' if v['array'] is None else 'DIFFERS'})")
    bad = next((t for t in v.get("tiles", []) if t["smem"] or t["array"] or t["spins"] >= SPIN), None)
    if bad:
        return f"tile {bad['tile']}: smem {bad['smem']} array {bad['array']} spins {bad['spins']}"
    return f"{len(v.get('tiles', []))} tiles equal ({sum(t['stored'] for t in v.get('tiles', []))} stored)"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools tma_boxes", description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="the JSON lines file (default $OUT/tma_boxes.jsonl)")
    parser.add_argument("--dry", action="store_true", help="run the kernels whole on the CPU (pycute.interp)")
    parser.add_argument("--only", default="", help="the cases whose name starts with this")
    parser.add_argument("--timeout", type=int, default=240, help="seconds per case before it counts as a hang")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.dry)))
        return 0
    with JsonLines(out_path("tma_boxes", args.out)) as out:
        for name in (n for n in case_names() if n.startswith(args.only)):
            child = run_question("tma_boxes", ["--one", name] + (["--dry"] if args.dry else []), args.timeout)
            verdict = last_json(child.stdout) if child.ok else None
            out.write(verdict or {"case": name, "ok": False, "error": child.error()})
    verdicts = out.rows
    width = max([len(v["case"]) for v in verdicts] + [4])
    print(f"{'case':<{width}}  ok   detail")
    for v in verdicts:
        print(f"{v['case']:<{width}}  {'yes' if v.get('ok') else 'NO ':<3}  {_detail(v)}")
    print(f"\n{len(verdicts)} cases, {sum(1 for v in verdicts if v.get('ok'))} ok -> {out.path}")
    return 0 if all(v.get("ok") for v in verdicts) else 1
