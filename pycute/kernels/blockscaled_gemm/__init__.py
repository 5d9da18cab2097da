"""The persistent block-scaled GEMM, ``D = (A * SFA) (B * SFB)^T`` on sm_100a (tcgen05; MXF8 and NVFP4, cta_group
1 and 2): its configuration and plans (``BlockScaledGemm``), its body (``kernel.cuh``), its whole-kernel CPU run
(``check.run_whole``). No Blackwell GPU has run it; its soft build (pycute's tcgen05 model) ran on the H200."""
from .config import (FORMATS, HANDWRITTEN_LINES, BlockScaledGemm, BlockScaledPlans, Format, kernel_body_lines,
                     pack_scale_factors)

__all__ = ["BlockScaledGemm", "BlockScaledPlans", "Format", "FORMATS", "HANDWRITTEN_LINES", "kernel_body_lines",
           "pack_scale_factors"]
