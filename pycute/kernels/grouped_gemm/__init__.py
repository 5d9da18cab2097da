"""The grouped GEMM for mixtures of experts (sm_90a): one launch over groups of ragged rows whose sizes live on the
device (``torch._grouped_mm``'s offsets, or a padded batch's counts): its configuration (``GroupedGemm``), plans,
body (``kernel.cuh``) and torch op (``op.grouped_mm``)."""
from .config import HANDWRITTEN_LINES, GroupedGemm, GroupedPlans, grouped_candidates, kernel_body_lines

__all__ = ["GroupedGemm", "GroupedPlans", "grouped_candidates", "HANDWRITTEN_LINES", "kernel_body_lines"]
