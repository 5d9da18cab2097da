"""The MMA on the GPU: a make_mma plan's generated function issues one tile (bf16, f16, tf32 and fp8 operands,
128B / 64B swizzles, and block-scaled mxf8f6f4 with its SFs copied into TMEM by tcgen05.cp plans), every warp
reads D back, and D equals the emulator's bit for bit. On the H200 (sm_90) the
MMA is the header's software model (-DPYCUTE_SOFT_TCGEN05); on an sm_100 GPU the hardware's. Runs in a child
process; needs a GPU of compute capability 9.0 or newer (clusters, for the soft model's TMEM images)."""
import json
import pathlib
import subprocess
import sys

import pytest

from pycute.compile import runtime

INFO = runtime.device_info()
REASON = None if INFO is not None and INFO[1][0] >= 9 else "the MMA round trip needs a CUDA GPU of compute capability 9.0+"
ROOT = pathlib.Path(__file__).resolve().parents[2]

PROBE = """
import json, numpy as np, pycute as pc
from pycute.compile import runtime
from pycute.harness.mma import MmaRoundTrip
soft = runtime.device_info()[1][0] < 10
out = []
for name, k, swizzle, n in (("bf16", 64, "128B", 256), ("f16", 32, "64B", 256), ("tf32", 32, "128B", 128),
                            ("f8e4m3", 128, "128B", 128)):
    dtype = getattr(pc, name) if hasattr(pc, name) else name
    plan = pc.make_mma(pc.mma_accumulator(pc.f32, 128, n), pc.kmajor_smem_tensor(dtype, 128, k, swizzle),
                       pc.kmajor_smem_tensor(dtype, n, k, swizzle))
    got, want = MmaRoundTrip(plan).run(runtime.Gpu(), arch="sm_90a" if soft else "sm_100a", soft=soft)
    bad = np.argwhere(got != want)
    out.append({"case": name, "soft": soft, "differ": int(bad.shape[0]), "nonzero": bool(np.any(want != 0))})
sfa = pc.scale_factor_tensor("mxf8f6f4", rows=128, mmas=4)
sfb = pc.scale_factor_tensor("mxf8f6f4", rows=256, mmas=4)
plan = pc.make_mma(pc.mma_accumulator(pc.f32, 128, 256), pc.kmajor_smem_tensor("f8e4m3", 128, 128, "128B"),
                   pc.kmajor_smem_tensor("f8e4m3", 256, 128, "128B"), sfa=sfa, sfb=sfb)
got, want = MmaRoundTrip(plan).run(runtime.Gpu(), arch="sm_90a" if soft else "sm_100a", soft=soft)
out.append({"case": "mxf8f6f4 block-scaled, SFs by tcgen05.cp", "soft": soft, "differ": int((got != want).sum()),
            "nonzero": bool(np.any(want != 0))})
print(json.dumps(out))
"""


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_planned_mma_leaves_the_d_the_emulator_says():
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for case in json.loads(run.stdout.strip().splitlines()[-1]):
        assert case["differ"] == 0 and case["nonzero"], case
