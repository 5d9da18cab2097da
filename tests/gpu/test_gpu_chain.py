"""One chain on the GPU: global -> TMA -> shared -> tcgen05.cp -> TMEM -> tcgen05.ld -> global for K-major 128B
tiles. On the H200 the TMA load is real and tcgen05 runs the header's software model (-DPYCUTE_SOFT_TCGEN05); the
TMEM image equals the emulator's (TMA emulated, then the cp stream), which equals the array's tile (test_chain).
Runs in a child process; needs a GPU of compute capability 9.0 or newer."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "TMA needs a CUDA GPU of compute capability 9.0 or newer"
ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = """
import json, numpy as np, pycute as pc
from pycute import Layout, TCol, TLane
from pycute.compile import runtime
from pycute.harness.chain import TmaCpChain
out = []
for name, k in (("bf16", 64), ("u8", 128), ("f32", 32)):
    dtype = getattr(pc, name); elem = dtype.bits // 8
    array = pc.make_global_tensor(dtype, Layout((300, 2 * k), (2 * k, 1)))
    tile = pc.kmajor_smem_tensor(dtype, 128, k, "128B")
    tmem = pc.make_tmem_tensor(dtype, Layout((128, k), (TLane, TCol)), columns=max(32, k * elem // 4))
    chain = TmaCpChain(pc.make_tma_copy(tile, array), pc.make_tiled_copy(tmem, tile))
    soft = runtime.device_info()[1][0] < 10
    for tile_index in ((0, 0), (1, 1), (2, 1)):
        r = chain.run(runtime.Gpu(), tile_index, arch="sm_90a" if soft else "sm_100a", soft=soft)
        got, want = r["tmem"]
        out.append({"dtype": name, "tile": tile_index, "soft": soft, "equal": bool(np.array_equal(got, want)),
                    "spins": r["spins"]})
print(json.dumps(out))
"""


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_tma_loaded_tile_goes_through_tmem_and_back_as_the_emulator_says():
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for case in json.loads(run.stdout.strip().splitlines()[-1]):
        assert case["equal"] and case["spins"] < 1 << 26, case
