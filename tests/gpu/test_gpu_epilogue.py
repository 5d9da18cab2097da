"""The epilogue on the GPU: fragments of each kind (the wgmma accumulator, a tcgen05.ld 32x32b fragment, a user's
TV layout) go registers -> (convert) -> swizzled shared (stmatrix / st.shared) -> TMA store -> global memory and
back through ldmatrix / ld.shared, and the shared image, the array and the loaded registers equal the emulator's
bit for bit; every packing conversion rounds as pycute.sim.convert models it. Each case runs in a child process
(a fault kills only that case). python -m tools epilogue runs every case, the ncu bank-conflict matrix and the
throughput sweep."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "stmatrix and TMA stores need compute capability 9.0+"
ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

#: One case per fragment kind x output type, each swizzle and order among them.
CASES = ["wgmma-bf16-row-128B", "wgmma-f16-col-64B", "wgmma-e4m3-row-64B", "wgmma-e5m2-col-32B",
         "wgmma-f32-row-32B", "wgmma-bf16-row-plain", "tmem32-bf16-row-64B", "tmem32-e4m3-row-32B",
         "tmem32-f32-col-128B", "tmem32-f16-col-plain", "user-bf16-col-32B", "user-f32-row-128B",
         "user-e5m2-row-plain"]


def verdict(*args: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "tests.gpu.epilogue_probe", *args], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", CASES)
def test_a_fragment_round_trips_through_shared_memory_and_tma_bit_for_bit(name):
    got = verdict("roundtrip", name)
    assert (got["smem"], got["array"], got["loaded"]) == (None, None, None), got


def test_every_packing_conversion_rounds_as_the_model_says():
    for form in verdict("convert")["forms"]:
        assert form["differ"] == 0, form
