"""Every box the hardware copies, and im2col, on the GPU (issue 32, items 3 and 5): each case of
``python -m tools tma_every_box`` in its own child process (a fault or a hang loses that case only): the real copies equal the
emulator bit for bit in every CTA, im2col tiles equal numpy's, each mbarrier completes with the plan's expect_tx, the
cluster's rank order is pycute's, and the driver takes the maps pycute plans. Needs a GPU with TMA (sm_90 or newer).
The same run as one command with a JSON record: ``PYTHONPATH=. python -m tools tma_every_box``."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime
from tools import tma_every_box as PROBE

ROOT = pathlib.Path(__file__).resolve().parents[2]

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "TMA needs a CUDA GPU of compute capability 9.0 or newer"
NAMES = PROBE.case_names()
#: What pycute's plans rely on the driver taking (True) or refusing (False); other encode cases are evidence only.
ENCODES = {"stride-0": True, "overlapping-stride-64B": True, "narrow-64B-box-in-128B-swizzle": True,
           "narrow-48B-box-in-64B-swizzle": True, "im2col-rank4-corners-at-limits": True,
           "im2col-rank5-corners-at-limits": True, "im2col-narrow-32B-channels-in-128B": True,
           "im2col-rank4-corner-past-limit": False, "im2col-empty-box": False,
           **{f"l2-promotion-{p}": True for p in ("none", "64B", "128B", "256B")},
           **{f"rank1-{d}-box{b}": False for d in ("f32", "u8") for b in (16, 256)}, "rank2-f32-1000x4-box32x2": True}


def _run(name: str) -> dict:
    run = subprocess.run([sys.executable, "-m", "tools", "tma_every_box", "--one", name],
                         capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith(("encode/", "interleave/"))])
def test_every_box_and_im2col_tile_lands_as_the_emulator_says(name):
    verdict = _run(name)
    assert verdict["ok"], verdict


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("encode/") and n.split("/", 1)[1] in ENCODES])
def test_the_driver_takes_the_maps_pycute_plans_and_refuses_the_rest(name):
    assert _run(name)["encoded"] == ENCODES[name.split("/", 1)[1]]

