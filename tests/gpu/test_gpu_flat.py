"""cp.async, bulk and DSMEM on the GPU: every case of tests/copy/flat_cases.py runs pycute's generated code for
real (LDGSTS, UBLKCP, clusters of 2 and 4 for DSMEM) and leaves shared memory (and for bulk stores the array)
equal to the emulator's bit for bit, with every mbarrier completing. Each case runs in a child process, so a
fault kills only that case. Needs a GPU of compute capability 9.0 or newer (clusters, bulk copies)."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

from tests.copy.flat_cases import BULK, CP_ASYNC, DSMEM

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "bulk copies and clusters need compute capability 9.0+"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def verdict(name: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "tests.gpu.flat_probe", name], capture_output=True, text=True,
                         cwd=ROOT, timeout=180)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [c[0] for c in CP_ASYNC + BULK + DSMEM])
def test_the_hardware_leaves_the_bytes_the_emulator_says(name):
    for run in verdict(name)["runs"]:
        assert run["smem"] is None and run.get("array") is None, run
        assert run["spins"] < 1 << 26, f"{run}: an mbarrier never completed"
