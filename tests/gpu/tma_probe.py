"""Run one TMA case on the GPU in this (child) process and print a JSON verdict: ``python -m tests.gpu.tma_probe
NAME``. A faulting case kills only this process's CUDA context."""
import json
import sys

import attrs
import numpy as np

from pycute.atoms.tma import tma_atom

from pycute.compile import runtime
from pycute.errors import PlanError
from pycute.copy.tma import make_tma_copy
from pycute.harness.tma import TmaRoundTrip

from tests.copy.tma.cases import CASES, CONVERTING, ELEMENT, MULTICAST, NAN_FILL, REDUCE


def first_difference(got, want):
    bad = np.argwhere(got != want)
    return None if not bad.size else {"byte": int(bad[0][0]), "got": int(got[bad[0][0]]),
                                      "want": int(want[bad[0][0]]), "count": int(bad.size),
                                      "bytes": [int(b) for b in bad[:48, 0]]}


def multicast(name: str) -> dict:
    _, g, s, ctas, tiles = next(c for c in MULTICAST if c[0] == name)
    rt = TmaRoundTrip(make_tma_copy(s, g, multicast=ctas), None)
    gpu = runtime.Gpu()
    out = {"case": name, "ctas": ctas, "tiles": []}
    for tile in tiles:
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"])})
    return out


def reduction(name: str) -> dict:
    _, g, s, op, tiles = next(c for c in REDUCE if c[0] == name)
    rt = TmaRoundTrip(make_tma_copy(s, g), make_tma_copy(g, s, reduce=op))
    gpu = runtime.Gpu()
    out = {"case": name, "reduce": op, "tiles": []}
    for tile in tiles:
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"]),
                             "array": first_difference(*r["array"])})
    return out


def nan_fill(name: str) -> dict:
    _, g, s, tiles = next(c for c in NAN_FILL if c[0] == name)
    rt = TmaRoundTrip(make_tma_copy(s, g, oob_fill="nan"), None)
    gpu = runtime.Gpu()
    out = {"case": name, "tiles": []}
    for tile in tiles:
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"])})
    return out


def element(name: str) -> dict:
    """Each origin loaded with the element-coordinate plan (and stored back where the store plan allows it)."""
    import pycute as pc
    _, g, s, origins = next(c for c in ELEMENT if c[0] == name)
    at = (pc.dynamic("r"), pc.dynamic("c"))
    load, store = make_tma_copy(s, g, origin=at), make_tma_copy(g, s, origin=at)
    gpu = runtime.Gpu()
    out = {"case": name, "tiles": []}
    for origin in origins:
        stores = all(p.holds(dict(zip(("r", "c"), origin))[p.name]) for p in store.preconditions)
        r = TmaRoundTrip(load, store if stores else None).run(gpu, origin, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(origin), "stored": stores, "spins": r["spins"],
                             "smem": first_difference(*r["smem"]),
                             "array": first_difference(*r["array"]) if stores else None})
    return out


def converting(name: str) -> dict:
    """A load through an FTZ / TF32 map (partly out of bounds) against the emulator's rounding and flush."""
    from pycute import Layout
    import pycute as pc
    _, d, ftz, fill = next(c for c in CONVERTING if c[0] == name)
    g = pc.make_global_tensor(d, Layout((40, 64), (64, 1)))
    load = make_tma_copy(pc.make_smem_tensor(d, Layout((64, 32), (32, 1))), g, oob_fill=fill, ftz=ftz)
    rt, gpu = TmaRoundTrip(load, None), runtime.Gpu()
    out = {"case": name, "data_type": load.tensor_map.data_type, "tiles": []}
    for tile in ((0, 0), (0, 1)):
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "spins": r["spins"], "smem": first_difference(*r["smem"])})
    return out


def main(name: str, grid_constant: bool = False) -> dict:
    if any(c[0] == name for c in ELEMENT):
        return element(name)
    if any(c[0] == name for c in CONVERTING):
        return converting(name)
    if any(c[0] == name for c in NAN_FILL):
        return nan_fill(name)
    if any(c[0] == name for c in MULTICAST):
        return multicast(name)
    if any(c[0] == name for c in REDUCE):
        return reduction(name)
    _, g, s, tiles = next(c for c in CASES if c[0] == name)
    load = make_tma_copy(s, g)
    try:
        store, refused = make_tma_copy(g, s), None
    except PlanError as e:       # a refused store still runs, forced, to hold the emulator's model of it
        store, refused = None, str(e).splitlines()[0]
    gpu = runtime.Gpu()
    out = {"case": name, "store_refused": refused, "grid_constant": grid_constant, "tiles": []}
    for tile in tiles:
        # a tile past the store's bounds (its box reaching a row's partial 16-byte unit) is stored forced, too
        planned = store is not None and all(p.holds(dict(zip(load.coordinate_names, tile))[p.name])
                                            for p in store.preconditions)
        rt = TmaRoundTrip(load, store if planned else forced_store(load), grid_constant)
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "forced": not planned, "spins": r["spins"],
                             "smem": first_difference(*r["smem"]), "array": first_difference(*r["array"])})
    return out


def forced_store(load):
    """The store the planner refused: the load's boxes issued as stores (for the evidence only)."""
    atom = tma_atom("store", load.atom.rank)
    return attrs.evolve(load, direction="store", atom=atom,
                        instructions=tuple(attrs.evolve(i, ptx=atom.ptx) for i in load.instructions))


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], "--grid-constant" in sys.argv[2:])))
