"""Tensor memory (PTX ISA #tensor-memory): 128 lanes x 512 columns of 32-bit cells per CTA, and its addresses.

TMEM layouts in pycute use two named basis axes: ``TLane`` (the lane) and ``TCol`` (the column, counted in
elements of the tensor's dtype, so one 32-bit column holds ``32 // bits`` elements).
"""
from __future__ import annotations

from ...basis import E
from ...errors import PlanError
from ...int_tuple import as_int

__all__ = ["TLane", "TCol", "LANES", "COLUMNS", "CELL_BITS", "QUADRANT_LANES", "ALLOC_COLUMNS", "LANE_SHIFT",
           "tmem_address", "split_address", "check_alloc_columns", "alloc_columns_for", "lane_quadrant", "CTA_GROUPS",
           "check_cta_group"]

TLane = E("TLane")
TCol = E("TCol")

LANES = 128
COLUMNS = 512
CELL_BITS = 32
QUADRANT_LANES = 32                        # warp w % 4 may tcgen05.ld/st lanes 32w..32w+31 (access restrictions)
ALLOC_COLUMNS = (32, 64, 128, 256, 512)   # tcgen05.alloc: a power of two in [32, 512] [V-PTX]
LANE_SHIFT = 16                            # address bits 31-16: lane; bits 15-0: column (#tensor-memory-addressing)


def tmem_address(lane: int, column: int) -> int:
    """The 32-bit TMEM address of (lane, column); also a lane/column *offset* added to an allocation's base."""
    if not 0 <= lane < LANES or not 0 <= column < COLUMNS:
        raise PlanError(f"TMEM (lane {lane}, column {column}) is outside {LANES} lanes x {COLUMNS} columns")
    return lane << LANE_SHIFT | column


def split_address(taddr: int) -> tuple[int, int]:
    """``(lane, column)`` of a TMEM address."""
    return taddr >> LANE_SHIFT, taddr & ((1 << LANE_SHIFT) - 1)


def check_alloc_columns(ncols: int) -> int:
    """``ncols`` if tcgen05.alloc accepts it (a power of two in [32, 512]), else a PlanError."""
    ncols = as_int(ncols, "TMEM allocation columns")
    if ncols not in ALLOC_COLUMNS:
        raise PlanError(f"TMEM allocation of {ncols!r} columns is illegal: tcgen05.alloc takes a power of two in "
                        f"[32, 512] ({', '.join(map(str, ALLOC_COLUMNS))})")
    return ncols


def alloc_columns_for(columns: int) -> int:
    """The smallest legal tcgen05.alloc size holding ``columns`` 32-bit columns."""
    columns = as_int(columns, "alloc_columns_for: columns")
    if not 0 < columns <= COLUMNS:
        raise PlanError(f"{columns} TMEM columns cannot be allocated (at most {COLUMNS})")
    return max(ALLOC_COLUMNS[0], 1 << (columns - 1).bit_length())


def lane_quadrant(warp: int) -> range:
    """The lanes warp ``warp`` may access with tcgen05.ld/st: ``32*(warp%4)`` to ``+31`` (PTX access restrictions)."""
    q = warp % (LANES // QUADRANT_LANES)
    return range(QUADRANT_LANES * q, QUADRANT_LANES * (q + 1))


#: A tcgen05 instruction acts for one CTA or for the CTA pair of a cluster (PTX ISA #tcgen05-cta-group); every
#: tcgen05 instruction of a kernel uses the same one.
CTA_GROUPS = (1, 2)


def check_cta_group(cta_group: object) -> int:
    """``cta_group`` as an int if it is 1 or 2 (a bool is a TypeError), else a PlanError."""
    cta_group = as_int(cta_group, "cta_group")
    if cta_group not in CTA_GROUPS:
        raise PlanError(f"cta_group must be 1 or 2, got {cta_group!r}")
    return cta_group
