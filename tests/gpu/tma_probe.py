"""Run one TMA case on the GPU in this (child) process and print a JSON verdict: ``python -m tests.gpu.tma_probe
NAME``. A faulting case kills only this process's CUDA context."""
import json
import sys

import numpy as np

from pycute.compile import runtime
from pycute.copy.tma import make_tma_copy
from pycute.harness.tma import TmaRoundTrip

from tests.copy.tma.cases import CASES


def first_difference(got, want):
    bad = np.argwhere(got != want)
    return None if not bad.size else {"byte": int(bad[0][0]), "got": int(got[bad[0][0]]),
                                      "want": int(want[bad[0][0]]), "count": int(bad.size)}


def main(name: str) -> dict:
    _, g, s, tiles = next(c for c in CASES if c[0] == name)
    rt = TmaRoundTrip(make_tma_copy(s, g), make_tma_copy(g, s))
    gpu = runtime.Gpu()
    out = {"case": name, "tiles": []}
    for tile in tiles:
        r = rt.run(gpu, tile, seed=len(out["tiles"]))
        out["tiles"].append({"tile": list(tile), "spins": r["spins"],
                             "smem": first_difference(*r["smem"]), "array": first_difference(*r["array"])})
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
