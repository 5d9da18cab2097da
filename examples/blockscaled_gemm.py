"""The persistent block-scaled GEMM, ``D = (A * SFA) (B * SFB)^T`` on sm_100a (MXF8 / NVFP4, cta_group 1 and 2),
lives in pycute/kernels/blockscaled_gemm (docs/blockscaled-gemm.md, docs/kernels.md). No Blackwell GPU exists here,
so this prints each configuration's plans and sm_100a SASS counts and runs a small one whole on the CPU.

    PYTHONPATH=. python examples/blockscaled_gemm.py
"""
import numpy as np

from pycute.kernels.blockscaled_gemm import BlockScaledGemm
from pycute.kernels.blockscaled_gemm.check import run_whole

if __name__ == "__main__":
    for kind, group in (("mxf8", 1), ("nvfp4", 2)):
        gemm = BlockScaledGemm(kind, group, m=300, n=520, k=1024, sms=4)
        print(f"== {gemm!r}: {gemm.tiles} tiles, {gemm.k_blocks} k-blocks, {gemm.operands.stages} stages, "
              f"{gemm.smem_bytes} B shared, {gemm.alloc.columns} TMEM columns")
        print(gemm.operands.explain(), gemm.mainloop.explain(), gemm.epilogue.explain(), sep="\n\n")
        sass = gemm.compile("sm_100a").histogram()
        print("sm_100a SASS:", {op: c for op, c in sorted(sass.items())
                                if op.startswith(("UTMA", "UBLKCP", "UTCCP", "UTC", "LDTM"))}, end="\n\n")
    got, want = run_whole(BlockScaledGemm("nvfp4", 2, m=200, n=136, k=256, sms=2))
    print("nvfp4 pair, 200 x 136 x 256, whole on the CPU:", "equal" if np.array_equal(got, want) else "DIFFERENT")
