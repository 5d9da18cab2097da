"""The ``tcgen05.ld`` / ``tcgen05.st`` executor: warp-collective TMEM <-> register moves, refused where PTX says
the access is illegal or leaves it undefined (docs/tcgen05-ld-st.md)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...arch.sm100.tcgen05_ldst import PACK_BITS
from ...arch.sm100.tmem import COLUMNS, QUADRANT_LANES, lane_quadrant, split_address
from ...atoms.tcgen05_ldst import Tcgen05LdStIssue, TmemLoadAtom, TmemStoreAtom
from ...errors import EmulationError
from ...int_tuple import as_int
from ..machine import CtaState, Machine, tmem_operand

__all__ = ["Tcgen05LdStExecutor", "decode"]

_MASK32 = (1 << 32) - 1


class Tcgen05LdStExecutor(Machine):
    """``tcgen05.ld`` and ``tcgen05.st`` on a ``Machine`` (the emulator mixes this in)."""

    def _ldst_cells(self, c: CtaState, atom, warp: int, taddr: int, half_offset) -> np.ndarray:
        """``(32, registers, cells)`` (lane, column) pairs the warp's registers move; refused where PTX says
        the access is illegal or does not define it."""
        warp, taddr = as_int(warp, "warp"), as_int(taddr, f"{atom.ptx} taddr")
        if c.pending:
            raise EmulationError(f"{atom.ptx} before the issued tcgen05.cp were committed and waited for")
        if atom.half_split != (half_offset is not None):
            raise EmulationError(f"{atom.ptx}: immHalfSplitoff is {'required' if atom.half_split else 'not taken'}")
        lane_field, col0 = split_address(taddr)
        quadrant = lane_quadrant(warp)
        if lane_field // QUADRANT_LANES not in (0, quadrant.start // QUADRANT_LANES):
            raise EmulationError(f"warp {warp} may only access lanes {quadrant.start}..{quadrant.stop - 1}; its "
                                 f"address has lane field {lane_field}")
        base = lane_field % QUADRANT_LANES
        if base % atom.lanes:
            raise EmulationError(f"{atom.ptx}: lane base {base} within the quadrant; PTX defines 0"
                                 f"{' and 16' if atom.lanes == 16 else ''} (docs/tcgen05-ld-st.md section 15)")
        out = np.zeros((32, atom.registers, 2 if atom.pack else 1, 2), dtype=np.int64)
        for t in range(32):
            lane_t, col_t = quadrant.start + base, col0
            if half_offset is not None and t >= 16:
                dl, dc = split_address(as_int(half_offset, "immHalfSplitoff"))
                lane_t, col_t = lane_t + dl, col_t + dc
            for j in range(atom.registers):
                for k, (lo, co) in enumerate(atom.cells(t, j)):
                    lane, col = lane_t + lo, col_t + co
                    if lane not in quadrant:
                        raise EmulationError(f"{atom.ptx}: thread {t} would reach lane {lane}, outside warp "
                                             f"{warp}'s quadrant")
                    if col >= COLUMNS or not c.allocated[col]:
                        raise EmulationError(f"{atom.ptx}: column {col} is not allocated")
                    out[t, j, k] = (lane, col)
        return out

    def ld(self, atom: TmemLoadAtom, warp: int, taddr: int, cta: int = 0, half_offset: int | None = None) -> np.ndarray:
        """``tcgen05.ld`` by warp ``warp``: a ``(32 threads, registers)`` uint32 array. With pack each register
        is the low halves of its two cells, low half = lower column [I]."""
        c = self.ctas[self._cta(cta)]
        cells = self._ldst_cells(c, atom, warp, taddr, half_offset)
        words = c.tmem[cells[..., 0], cells[..., 1]].astype(np.uint64)
        if atom.pack:
            half = np.uint64((1 << PACK_BITS) - 1)
            return ((words[..., 0] & half) | ((words[..., 1] & half) << np.uint64(PACK_BITS))).astype(np.uint32)
        return words[..., 0].astype(np.uint32)

    def st(self, atom: TmemStoreAtom, warp: int, taddr: int, registers: np.ndarray, cta: int = 0, half_offset: int | None = None) -> None:
        """``tcgen05.st`` by warp ``warp`` of ``registers`` (32 threads x registers). With unpack each 16-bit half
        goes zero-extended into its cell [I]."""
        c = self.ctas[self._cta(cta)]
        regs = np.asarray(registers, dtype=np.uint64)
        if regs.shape != (32, atom.registers):
            raise EmulationError(f"{atom.ptx}: {regs.shape} registers given, (32, {atom.registers}) expected")
        cells = self._ldst_cells(c, atom, warp, taddr, half_offset)
        if atom.pack:
            half = np.uint64((1 << PACK_BITS) - 1)
            c.tmem[cells[..., 0, 0], cells[..., 0, 1]] = (regs & half).astype(np.uint32)
            c.tmem[cells[..., 1, 0], cells[..., 1, 1]] = (regs >> np.uint64(PACK_BITS)).astype(np.uint32)
        else:
            c.tmem[cells[..., 0, 0], cells[..., 0, 1]] = regs.astype(np.uint32)

    def ld_32x32b(self, warp: int, taddr: int, num: int, cta: int = 0) -> np.ndarray:
        """``tcgen05.ld.32x32b.x<num>``: thread t gets lane ``32*(warp%4)+t``, columns ``col..col+num-1``."""
        return self.ld(TmemLoadAtom("32x32b", num), warp, taddr, cta)


def decode(op: str, args: list, value: Callable[[str], int]) -> Tcgen05LdStIssue:
    """A compiled ``tcgen05.ld {regs}, [taddr][, imm]`` / ``tcgen05.st [taddr][, imm], {regs}`` statement as the
    issue record a plan streams (``value`` reads a register or immediate operand)."""
    regs = next(a for a in args if a.startswith("{")).strip("{}").split(",")
    address = next(a for a in args if a.startswith("["))
    rest = [a for a in args if not a.startswith(("{", "["))]
    return Tcgen05LdStIssue(op, tmem_operand(address, value, op), value(rest[0]) & _MASK32 if rest else None,
                            len(regs))
