"""TMA on the GPU: every case of tests/copy/tma/cases.py loads its tiles with pycute's plan (real TMA, tensor map
encoded by the driver), dumps shared memory, stores the tile back, and both images equal the emulator's bit for
bit. Each case runs in a child process, so a fault kills only that case. Needs a GPU with TMA (sm_90 or newer)."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

from tests.copy.tma.cases import CASES, MULTICAST, NAN_FILL, REDUCE

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "TMA needs a CUDA GPU of compute capability 9.0 or newer"
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_tma_round_trip_matches_the_emulator_bit_for_bit(name):
    run = subprocess.run([sys.executable, "-m", "tests.gpu.tma_probe", name], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    verdict = json.loads(run.stdout.strip().splitlines()[-1])
    if "rows-not-16B" in name or "K-not-atom" in name:     # the store pycute refuses, forced: the overwrite is real
        assert verdict["store_refused"] and "16-byte unit" in verdict["store_refused"]
    for t in verdict["tiles"]:
        assert t["smem"] is None and t["array"] is None, t
        assert t["spins"] < 1 << 26, f"tile {t['tile']}: the load's mbarrier never completed"


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [c[0] for c in MULTICAST] + [c[0] for c in NAN_FILL])
def test_a_multicast_load_fills_every_cta_of_the_cluster_as_the_emulator_says(name):
    run = subprocess.run([sys.executable, "-m", "tests.gpu.tma_probe", name], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    verdict = json.loads(run.stdout.strip().splitlines()[-1])
    for t in verdict["tiles"]:
        assert t["smem"] is None, t
        assert t["spins"] < 1 << 26, f"tile {t['tile']}: an mbarrier never completed (expect_tx off?)"


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_every_reduction_combines_as_the_emulator_says():
    """One child process for all reductions (each is a load and a reduce of two tiles)."""
    names = [c[0] for c in REDUCE]
    script = "import json; from tests.gpu.tma_probe import main; print(json.dumps([main(n) for n in %r]))" % names
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for verdict in json.loads(run.stdout.strip().splitlines()[-1]):
        for t in verdict["tiles"]:
            assert t["smem"] is None and t["array"] is None, (verdict["case"], t)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", ["bf16-kmajor-128B", "u8-5d", "f32-2d-plain"])
def test_tensor_maps_passed_as_grid_constant_parameters_load_and_store_the_same_bytes(name):
    """The maps as ``const __grid_constant__`` kernel parameters (runtime.tensor_map_arg through cuda.core's
    launch), no tensormap fence: the round trip equals the emulator as with maps in global memory."""
    run = subprocess.run([sys.executable, "-m", "tests.gpu.tma_probe", name, "--grid-constant"], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    verdict = json.loads(run.stdout.strip().splitlines()[-1])
    assert verdict["grid_constant"]
    for t in verdict["tiles"]:
        assert t["smem"] is None and t["array"] is None, t
