"""Tensor memory (PTX ISA #tensor-memory): 128 lanes x 512 columns of 32-bit cells per CTA.

TMEM layouts in pycute use two named basis axes: ``TLane`` (the lane) and ``TCol`` (the column, counted in
elements of the tensor's dtype, so one 32-bit column holds ``32 // bits`` elements).
"""
from __future__ import annotations

from ...basis import E
from ...errors import PlanError

__all__ = ["TLane", "TCol", "LANES", "COLUMNS", "tmem_address", "split_address", "check_alloc_columns",
           "lane_quadrant", "ALLOC_COLUMNS", "alloc_columns_for"]

TLane = E("TLane")
TCol = E("TCol")

LANES = 128
COLUMNS = 512
ALLOC_COLUMNS = (32, 64, 128, 256, 512)   # tcgen05.alloc: a power of two in [32, 512] [V-PTX]


def tmem_address(lane: int, column: int) -> int:
    """The 32-bit TMEM address: lane in bits 31-16, column in bits 15-0 (PTX #tensor-memory-addressing)."""
    if not 0 <= lane < LANES or not 0 <= column < COLUMNS:
        raise PlanError(f"TMEM (lane {lane}, column {column}) is outside {LANES} lanes x {COLUMNS} columns")
    return lane << 16 | column


def split_address(taddr: int) -> tuple[int, int]:
    """``(lane, column)`` of a TMEM address."""
    return taddr >> 16, taddr & 0xFFFF


def check_alloc_columns(ncols: int) -> int:
    """``ncols`` if tcgen05.alloc accepts it (a power of two in [32, 512]), else a PlanError."""
    if ncols not in ALLOC_COLUMNS:
        raise PlanError(f"TMEM allocation of {ncols!r} columns is illegal: tcgen05.alloc takes a power of two in "
                        f"[32, 512] ({', '.join(map(str, ALLOC_COLUMNS))})")
    return ncols


def alloc_columns_for(columns: int) -> int:
    """The smallest legal tcgen05.alloc size holding ``columns`` 32-bit columns."""
    if not 0 < columns <= COLUMNS:
        raise PlanError(f"{columns} TMEM columns cannot be allocated (at most {COLUMNS})")
    return max(ALLOC_COLUMNS[0], 1 << (columns - 1).bit_length())


def lane_quadrant(warp: int) -> range:
    """The lanes warp ``warp`` may access with tcgen05.ld/st: ``32*(warp%4)`` to ``+31`` (PTX access restrictions)."""
    q = warp % 4
    return range(32 * q, 32 * q + 32)
