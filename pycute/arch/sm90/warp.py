"""Warps (PTX ISA "Programming Model" and elect.sync): 32 threads, and the member mask naming all of them."""
from __future__ import annotations

__all__ = ["WARP_THREADS", "FULL_WARP_MASK"]

WARP_THREADS = 32
#: elect.sync / shfl.sync member mask of a converged warp: one bit per lane.
FULL_WARP_MASK = (1 << WARP_THREADS) - 1
