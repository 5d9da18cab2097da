"""``tcgen05.ld`` / ``tcgen05.st`` shapes (PTX #tcgen05-instructions-tcgen05-ld, -st, Table 49/50): how many
registers and columns one ``.x1`` moves, the largest ``.xN``, which (lane, column) each thread's register holds, and
the SASS ptxas assembles each to (docs/tcgen05-ld-st.md sections 2, 3 and 8).

The (thread ``t``, register ``j`` of one ``.x1``) -> (lane offset within the warp's quadrant, column offset) maps
are CUTLASS's ``SM100_TMEM_LOAD_*`` DstLayouts written as closed forms; TVM's GPU tests pin the same maps. For
``.16x32bx2`` threads 16-31 add the instruction's ``immHalfSplitoff`` to the whole address (lane field included).

``.pack::16b`` (ld) / ``.unpack::16b`` (st) keep the register count and double the column footprint: the 16-bit
halves of register ``j`` are the low halves of two adjacent columns, low half = lower column. PTX states this only
in figures; the column order is inferred [I] (docs/tcgen05-ld-st.md section 4).
"""
from __future__ import annotations

from typing import Callable, Literal

import attrs

__all__ = ["LdStShape", "LDST_SHAPES", "LDST_NUMS", "MAX_REGISTERS", "HALF_SPLIT_SHAPE", "PACK_BITS", "SHAPE_ORDER",
           "register_lower_bound", "LdStOp"]

#: ``.num`` values PTX allows (per shape, up to ``max_num``).
LDST_NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
#: Registers per thread one tcgen05.ld/st may move, for every shape (Table 49).
MAX_REGISTERS = 128
#: The shape whose second half (threads 16-31) is addressed at ``taddr + immHalfSplitoff``.
HALF_SPLIT_SHAPE = "16x32bx2"
#: ``.pack::16b`` / ``.unpack::16b`` move 16-bit values: two to a register, one to a column.
PACK_BITS = 16


@attrs.frozen
class LdStShape:
    name: str
    lanes: int              # lanes of the warp's quadrant one instruction touches
    registers: int          # 32-bit registers per thread for .x1
    columns: int            # TMEM columns the warp touches for .x1 (per half for .16x32bx2)
    max_num: int            # the largest legal .xN
    sass_variants: tuple    # LDTM / STTM suffixes, one per SASS op (.16x32bx2 is two ops, one per half)
    cell: Callable = attrs.field(eq=False, repr=False)   # (t, j) -> (lane offset, column offset) within one .x1

    @property
    def half_split(self) -> bool:
        return self.name == HALF_SPLIT_SHAPE

    def nums(self) -> tuple:
        return tuple(n for n in LDST_NUMS if n <= self.max_num)


LDST_SHAPES = {s.name: s for s in (
    LdStShape("32x32b", 32, 1, 1, 128, ("",), lambda t, j: (t, 0)),
    LdStShape("16x64b", 16, 1, 2, 128, (".16dp64bit",), lambda t, j: ((t >> 2) + 8 * (t & 1), (t >> 1) & 1)),
    LdStShape("16x128b", 16, 2, 4, 64, (".16dp128bit",), lambda t, j: ((t >> 2) + 8 * (j & 1), t & 3)),
    LdStShape("16x256b", 16, 4, 8, 32, (".16dp256bit",),
              lambda t, j: ((t >> 2) + 8 * ((j >> 1) & 1), (j & 1) + 2 * (t & 3))),
    LdStShape("16x32bx2", 16, 1, 1, 128, (".16dp32bit_t0_t15", ".16dp32bit_t16_t31"), lambda t, j: (t & 15, 0)),
)}


#: tcgen05.ld (TMEM -> registers) or tcgen05.st (registers -> TMEM).
LdStOp = Literal["ld", "st"]

#: Shapes in preference order: 32 data paths first (CUTLASS: higher throughput), then 16-lane shapes widest first.
SHAPE_ORDER = ("32x32b", "16x256b", "16x128b", "16x64b", HALF_SPLIT_SHAPE)


def register_lower_bound(registers: int, cap: int) -> int:
    """Fewest instructions moving ``registers`` per thread when each moves a power of two at most ``cap``: the
    binary digits of the remainder after as many ``cap``-sized ones as fit (every shape's register count is a
    power of two; PTX Table 49)."""
    big = 1 << (min(cap, MAX_REGISTERS).bit_length() - 1)
    return registers // big + bin(registers % big).count("1")
