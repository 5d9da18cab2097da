"""Every kernel's torch operation, registered with ``torch.library`` on import (namespace ``pycute``):
``import pycute.kernels.ops`` makes ``torch.ops.pycute.gemm`` and ``torch.ops.pycute.blockscaled_gemm`` exist.
Importing it imports torch; ``import pycute.kernels`` alone does not (its ``gemm`` / ``blockscaled_mm`` import
their op's module when first asked for)."""
from .blockscaled_gemm.op import blockscaled_mm
from .hopper_gemm.op import gemm

__all__ = ["gemm", "blockscaled_mm"]
