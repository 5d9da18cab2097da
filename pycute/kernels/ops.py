"""Every kernel's torch operation, registered with ``torch.library`` on import (namespace ``pycute``):
``import pycute.kernels.ops`` makes ``torch.ops.pycute.gemm``, ``scaled_gemm``, ``grouped_mm``,
``blockscaled_gemm`` and the attention ops exist. Importing it imports torch; ``import pycute.kernels`` alone does
not (its ``gemm`` / ``scaled_gemm`` / ``grouped_mm`` / ``blockscaled_mm`` import their op's module when first asked
for)."""
from .attention.op import attention, attention_varlen
from .blockscaled_gemm.op import blockscaled_mm
from .grouped_gemm.op import grouped_mm
from .hopper_gemm.op import gemm
from .hopper_gemm.scaled import scaled_gemm

__all__ = ["gemm", "scaled_gemm", "grouped_mm", "blockscaled_mm", "attention", "attention_varlen"]
