"""The shared-memory swizzles Hopper introduced for TMA and wgmma, on byte addresses (PTX ISA
#tensor-swizzling-modes): 16-byte units XORed by the 128-byte row index, over 32, 64 or 128-byte rows (CuTe's
``Swizzle<B,4,3>``). Blackwell's tcgen05 descriptors use the same three."""
from __future__ import annotations

from ...swizzle import Swizzle

__all__ = ["SWIZZLE_32B", "SWIZZLE_64B", "SWIZZLE_128B"]

SWIZZLE_32B = Swizzle(1, 4, 3)
SWIZZLE_64B = Swizzle(2, 4, 3)
SWIZZLE_128B = Swizzle(3, 4, 3)
