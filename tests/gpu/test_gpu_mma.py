"""The MMA on the GPU: a make_mma plan's generated function issues one tile (bf16, f16, tf32 and fp8 operands,
128B / 64B swizzles; an A in TMEM; .ws M 64 (Layout E) and M 64 (Layout F); block-scaled mxf8f6f4, mxf4 and NVFP4 (mxf4nvf4, UE4M3) with their SFs, and an
A in TMEM, copied into TMEM by tcgen05.cp plans), every warp
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
from pycute.arch.sm100.datapath import data_path
from pycute.compile import runtime
from pycute.harness.mma import MmaRoundTrip
soft = runtime.device_info()[1][0] < 10

def tmem_a(dtype, k):
    alloc = pc.TmemAllocation()
    d = alloc.add(pc.f32, pc.mma_accumulator(pc.f32, 128, 256).layout, name="d")
    return d, alloc.add(dtype, data_path(128, 1, False).layout(k, 1), name="a")

def scaled(kind, dtype, k, vec, scale_type, a_in_tmem=False):
    d, a = tmem_a(dtype, k) if a_in_tmem else (pc.mma_accumulator(pc.f32, 128, 256),
                                               pc.kmajor_smem_tensor(dtype, 128, k, "128B"))
    return pc.make_mma(d, a, pc.kmajor_smem_tensor(dtype, 256, k, "128B"), kind=kind, scale_type=scale_type,
                       sfa=pc.scale_factor_tensor(kind, 128, 4, vec), sfb=pc.scale_factor_tensor(kind, 256, 4, vec))

cases = []
for name, k, swizzle, n in (("bf16", 64, "128B", 256), ("f16", 32, "64B", 256), ("tf32", 32, "128B", 128),
                            ("f8e4m3", 128, "128B", 128)):
    dtype = getattr(pc, name) if hasattr(pc, name) else name
    cases.append((name, pc.make_mma(pc.mma_accumulator(pc.f32, 128, n), pc.kmajor_smem_tensor(dtype, 128, k, swizzle),
                                    pc.kmajor_smem_tensor(dtype, n, k, swizzle))))
d, a = tmem_a(pc.bf16, 64)
cases.append(("bf16, A in TMEM (tcgen05.cp'd)", pc.make_mma(d, a, pc.kmajor_smem_tensor(pc.bf16, 256, 64, "128B"))))
cases.append(("bf16 .ws M64 N128 (Layout E)", pc.make_mma(pc.mma_accumulator(pc.f32, 64, 128, ws=True),
    pc.kmajor_smem_tensor(pc.bf16, 64, 64), pc.kmajor_smem_tensor(pc.bf16, 128, 64), ws=True)))
cases.append(("f8 M64 (Layout F)", pc.make_mma(pc.mma_accumulator(pc.f32, 64, 128),
    pc.kmajor_smem_tensor("f8e4m3", 64, 128), pc.kmajor_smem_tensor("f8e4m3", 128, 128))))
cases.append(("mxf8f6f4 block-scaled, SFs by tcgen05.cp", scaled("mxf8f6f4", "f8e4m3", 128, 1, None)))
cases.append(("mxf4nvf4 UE4M3 4X (NVFP4)", scaled("mxf4nvf4", "f4e2m1", 256, 4, "ue4m3")))
cases.append(("mxf4 UE8M0 2X", scaled("mxf4", "f4e2m1", 256, 2, None)))
cases.append(("mxf4nvf4 UE4M3 4X, A in TMEM", scaled("mxf4nvf4", "f4e2m1", 256, 4, "ue4m3", a_in_tmem=True)))
out = []
for name, plan in cases:
    got, want = MmaRoundTrip(plan).run(runtime.Gpu(), arch="sm_90a" if soft else "sm_100a", soft=soft)
    out.append({"case": name, "soft": soft, "differ": int((got != want).sum()), "nonzero": bool(np.any(want != 0))})
print(json.dumps(out))
"""


@pytest.mark.gpu
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_planned_mma_leaves_the_d_the_emulator_says():
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    for case in json.loads(run.stdout.strip().splitlines()[-1]):
        assert case["differ"] == 0 and case["nonzero"], case
