"""wgmma.mma_async on the GPU: every case of ``pycute.harness.wgmma.WGMMA_CASES`` (bf16 / f16 / tf32 / e4m3 / e5m2 /
s8 / u8; f32, f16 and s32 accumulators; N 8 to 256 with odd legal N; every swizzle; K- and MN-major 16-bit operands;
A in registers; two warpgroups; a run-time stage; overwriting and accumulating) runs a plan's generated function on
exact operands, and every thread's D registers equal the emulator's bit for bit and, through the accumulator
fragment, the reference MMA's. Needs compute capability 9.0 (sm_90a code); runs in a child process (a fault kills
the CUDA context), which prints one JSON line per case so that a crash names the case it died in.
python -m tools wgmma records the same matrix, one child per case."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1] == (9, 0) else "wgmma (sm_90a) needs a GPU of compute capability 9.0"
ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = """
import json
from pycute.compile import runtime
from pycute.harness.wgmma import WGMMA_CASES, case_record
gpu = runtime.Gpu()
for case in WGMMA_CASES:
    print(json.dumps(case_record(case, gpu, seed=11)), flush=True)
"""


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_every_planned_wgmma_leaves_the_d_the_emulator_and_the_reference_say():
    from pycute.harness.wgmma import WGMMA_CASES
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=600)
    records = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    if run.returncode:
        done = records[-1]["case"] if records else "none"
        pytest.fail(f"the child died after {len(records)} case(s) (last passed: {done}; next: "
                    f"{WGMMA_CASES[len(records)].name if len(records) < len(WGMMA_CASES) else '-'}):\n"
                    f"{run.stderr[-2000:]}")
    assert len(records) == len(WGMMA_CASES)
    failed = [r for r in records if r["differ_emulator"] or r["differ_reference"] or not r["nonzero"]]
    assert not failed, json.dumps(failed, indent=1)
