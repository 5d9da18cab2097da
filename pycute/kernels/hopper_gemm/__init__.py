"""The Hopper GEMM, ``D = scale * A B^T`` on sm_90a (wgmma fed by TMA, a persistent tile scheduler): its frozen
configuration (``HopperGemm``, ``choose``), its plans (``GemmPlans``), its body (``kernel.cuh``)."""
from .config import HANDWRITTEN_LINES, MEASURED_TFLOPS, HopperGemm, Mode, candidates, choose, kernel_body_lines
from .plans import CHUNK, DTYPES, TEMPLATE, Dtype, GemmPlans

__all__ = ["HopperGemm", "GemmPlans", "candidates", "choose", "MEASURED_TFLOPS", "HANDWRITTEN_LINES",
           "kernel_body_lines", "Dtype", "Mode", "DTYPES", "CHUNK", "TEMPLATE"]
