"""TMA on the GPU: every case of tests/copy/tma/cases.py loads its tiles with pycute's plan (real TMA, tensor map
encoded by the driver), dumps shared memory, stores the tile back, and both images equal the emulator's bit for
bit. Each case runs in a child process, so a fault kills only that case. Needs a GPU with TMA (sm_90 or newer)."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

from tests.copy.tma.cases import CASES, CONVERTING, ELEMENT, MULTICAST, NAN_FILL, REDUCE

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
        assert verdict["store_refused"] and "16-byte unit" in verdict["store_refused"] or \
            any(t["forced"] for t in verdict["tiles"])
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


def _probe(name: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "tests.gpu.tma_probe", name], capture_output=True, text=True,
                         cwd=ROOT, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [c[0] for c in ELEMENT])
def test_a_box_at_any_element_origin_loads_and_stores_as_the_emulator_says(name):
    """Negative, unaligned to the box (columns on the 16-byte unit: the H200 faults off it), partly and wholly
    outside origins: the shared image and the stored array equal the emulator bit for bit."""
    for t in _probe(name)["tiles"]:
        assert t["smem"] is None and t["array"] is None, t
        assert t["spins"] < 1 << 26, f"origin {t['tile']}: the load's mbarrier never completed"


#: A child's script: NaN-filling loads at negative rows (and columns on the 16-byte unit), each type, against the
#: emulator; prints [[type, origin, equal], ...].
NAN_ROWS = """
import json
import numpy as np
import pycute as pc
from pycute import Layout
from pycute.compile import runtime
from pycute.harness.tma import TmaRoundTrip
gpu, out = runtime.Gpu(), []
for d in (pc.f16, pc.bf16, pc.f32, pc.f64, pc.tf32):
    a = pc.make_global_tensor(d, Layout((40, 32), (32, 1)))
    load = pc.make_tma_copy(pc.make_smem_tensor(d, Layout((64, 32), (32, 1))), a,
                            origin=(pc.dynamic("r"), pc.dynamic("c")), oob_fill="nan")
    for origin in ((-9, 0), (-1, 16), (-70, 8)):
        r = TmaRoundTrip(load, None).run(gpu, origin)
        out.append([d.name, list(origin), bool(np.array_equal(*r["smem"]))])
print(json.dumps(out))
"""


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_nan_filling_load_at_negative_rows_fills_them_as_the_emulator_says():
    """Run 2 loaded negative rows through NaN-filling maps as the layouts say (nan/*/neg-row): pycute plans them."""
    run = subprocess.run([sys.executable, "-c", NAN_ROWS], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for name, origin, equal in json.loads(run.stdout.strip().splitlines()[-1]):
        assert equal, (name, origin)


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [c[0] for c in CONVERTING])
def test_a_converting_map_loads_as_the_emulators_rounding_and_flush_say(name):
    for t in _probe(name)["tiles"]:
        assert t["smem"] is None, t


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_the_grouped_example_loads_both_ways_and_writes_nothing_outside_a_group():
    """examples/grouped_tma.py on the device: groups at rows 0, 77, 300, 811; A's tiles through one map at element
    rows and through each CTA's retargeted map, C stored through its group maps (checked build too)."""
    script = ("import json; from examples.grouped_tma import GroupedTma; from pycute.compile import runtime; "
              "g = runtime.Gpu(); import numpy as np; out = []\n"
              "for checked in (False, True):\n"
              "    r = GroupedTma().run(g, seed=1, checked=checked)\n"
              "    out.append([bool(np.array_equal(*r['c']))] + [bool(np.array_equal(*x)) for x in r['one'] + r['group']])\n"
              "print(json.dumps(out))")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for equal in json.loads(run.stdout.strip().splitlines()[-1]):
        assert all(equal), equal
