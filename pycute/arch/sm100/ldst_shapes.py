"""``tcgen05.ld`` / ``tcgen05.st`` shapes (PTX #tcgen05-instructions-tcgen05-ld, Table 49): how many registers and
columns one ``.x1`` moves, the largest ``.xN``, and which (lane, column) each thread's register holds.

The (thread ``t``, register ``j`` of one ``.x1``) -> (lane offset within the warp's quadrant, column offset) maps
are CUTLASS's ``SM100_TMEM_LOAD_*`` DstLayouts written as closed forms (ptx-tcgen05.md section 10).
"""
from __future__ import annotations

from typing import Callable

import attrs

__all__ = ["LdStShape", "LDST_SHAPES"]


@attrs.frozen
class LdStShape:
    name: str
    registers: int          # 32-bit registers per thread for .x1
    columns: int            # TMEM columns the warp touches for .x1
    max_num: int            # the largest legal .xN
    sass_variant: str
    cell: Callable = attrs.field(eq=False, repr=False)   # (t, j) -> (lane offset, column offset) within one .x1


LDST_SHAPES = {s.name: s for s in (
    LdStShape("32x32b", 1, 1, 128, "", lambda t, j: (t, 0)),
    LdStShape("16x64b", 1, 2, 128, ".16dp64bit", lambda t, j: ((t >> 2) + 8 * (t & 1), (t >> 1) & 1)),
    LdStShape("16x128b", 2, 4, 64, ".16dp128bit", lambda t, j: ((t >> 2) + 8 * (j & 1), t & 3)),
    LdStShape("16x256b", 4, 8, 32, ".16dp256bit", lambda t, j: ((t >> 2) + 8 * ((j >> 1) & 1), (j & 1) + 2 * (t & 3))),
)}
