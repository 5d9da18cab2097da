"""``tcgen05.ld`` / ``tcgen05.st`` atoms: warp-collective TMEM <-> register moves (PTX #tcgen05-instructions-tcgen05-ld,
-st), one per (shape, ``.num``, pack), built from the shape table ``arch.sm100.LDST_SHAPES``.

Register ``reg`` of thread ``t`` (lane ``t`` of the warp) holds the 32-bit cell ``cells(t, reg)`` names: a (lane
offset within the warp's quadrant, column offset) pair, or with ``.pack::16b`` / ``.unpack::16b`` the two cells
whose low 16-bit halves form the register's low and high halves. For ``.16x32bx2`` threads 16-31 address
``taddr + immHalfSplitoff``, which is the instruction's, not the atom's.
"""
from __future__ import annotations

import functools
from typing import ClassVar, NamedTuple

import attrs
import numpy as np

from ..arch.sm100.tcgen05_ldst import LDST_NUMS, LDST_SHAPES, LdStShape
from ..errors import PlanError
from ..int_tuple import as_int
from ..memo import register_clear

__all__ = ["TmemLoadAtom", "TmemStoreAtom", "tmem_ldst_atoms", "ldst_atom", "atom_cells", "Tcgen05LdStIssue"]


class Tcgen05LdStIssue(NamedTuple):
    """One issued ``tcgen05.ld`` / ``tcgen05.st``, as a plan streams it and as the PTX interpreter reads it back from
    compiled code: the opcode as PTX spells it, the TMEM address, ``.16x32bx2``'s immHalfSplitoff (else None) and
    the registers per thread it moves."""

    ptx: str
    taddr: int
    half_offset: int | None
    registers: int


@attrs.frozen(repr=False)
class _TmemLdSt:
    shape: str
    num: int = 1
    pack: bool = False

    OP: ClassVar[str] = ""
    PACK: ClassVar[str] = ""

    def __attrs_post_init__(self):
        object.__setattr__(self, "num", as_int(self.num, f"tcgen05.{self.OP} .num"))
        if not isinstance(self.shape, str) or self.shape not in LDST_SHAPES:
            raise PlanError(f"unknown tcgen05.{self.OP} shape {self.shape!r}; legal: {', '.join(LDST_SHAPES)}")
        if not isinstance(self.pack, bool):
            raise TypeError(f"tcgen05.{self.OP} pack must be a bool, got {self.pack!r}")
        cap = LDST_SHAPES[self.shape].max_num
        if self.num not in LDST_NUMS or self.num > cap:
            raise PlanError(f"tcgen05.{self.OP}.{self.shape}.x{self.num} is illegal: .xN takes a power of two up to "
                            f"{cap} for this shape (PTX Table 49)")

    @property
    def form(self) -> LdStShape:
        return LDST_SHAPES[self.shape]

    @property
    def half_split(self) -> bool:
        """True for ``.16x32bx2``, whose threads 16-31 address ``taddr + immHalfSplitoff``."""
        return self.form.half_split

    @property
    def ptx(self) -> str:
        pack = f".{self.PACK}" if self.pack else ""
        return f"tcgen05.{self.OP}.sync.aligned.{self.shape}.x{self.num}{pack}.b32"

    @property
    def registers(self) -> int:
        """32-bit registers per thread."""
        return self.form.registers * self.num

    @property
    def columns(self) -> int:
        """TMEM columns the warp touches (per half for ``.16x32bx2``); pack doubles them."""
        return self.form.columns * self.num * (2 if self.pack else 1)

    @property
    def lanes(self) -> int:
        """Lanes of the quadrant touched at the address's lane field (both halves: 32 for ``.16x32bx2`` at an
        immediate of 16 lanes)."""
        return self.form.lanes

    @property
    def sass_ops(self) -> tuple:
        """The SASS opcodes of one instruction (``.16x32bx2`` assembles to two, one per half)."""
        op = "LDTM" if self.OP == "ld" else "STTM"
        num = f".x{self.num}" if self.num > 1 else ""      # .x1 has no suffix (LDTM, LDTM.16dp256bit)
        pack = (".PACK16BIT" if self.OP == "ld" else ".EXPAND16BIT") if self.pack else ""
        return tuple(f"{op}{variant}{num}{pack}" for variant in self.form.sass_variants)

    @property
    def sass(self) -> str:
        return " + ".join(self.sass_ops)

    def cell(self, thread: int, reg: int) -> tuple[int, int]:
        """``(lane offset in the quadrant, column offset)`` of register ``reg`` of ``thread`` (without pack)."""
        s = self.form
        block, j = divmod(reg, s.registers)
        lane, col = s.cell(thread, j)
        return lane, col + s.columns * block

    def cells(self, thread: int, reg: int) -> tuple:
        """The 32-bit cells register ``reg`` of ``thread`` holds: one, or with pack the two whose low halves are
        its low and high halves."""
        lane, col = self.cell(thread, reg)
        return ((lane, 2 * col), (lane, 2 * col + 1)) if self.pack else ((lane, col),)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape!r}, x{self.num}{', pack' if self.pack else ''})  # {self.ptx}"


@attrs.frozen(repr=False)
class TmemLoadAtom(_TmemLdSt):
    """``tcgen05.ld.sync.aligned.<shape>.x<N>[.pack::16b].b32``: TMEM -> registers (valid after
    ``tcgen05.wait::ld``)."""

    OP: ClassVar[str] = "ld"
    PACK: ClassVar[str] = "pack::16b"


@attrs.frozen(repr=False)
class TmemStoreAtom(_TmemLdSt):
    """``tcgen05.st.sync.aligned.<shape>.x<N>[.unpack::16b].b32``: registers -> TMEM (complete after
    ``tcgen05.wait::st``)."""

    OP: ClassVar[str] = "st"
    PACK: ClassVar[str] = "unpack::16b"


def tmem_ldst_atoms(op: str) -> tuple:
    """Every legal atom of ``op`` ("ld" or "st"): shape x .num x pack."""
    cls = TmemLoadAtom if op == "ld" else TmemStoreAtom
    return tuple(cls(name, n, pack) for name, s in LDST_SHAPES.items() for n in s.nums() for pack in (False, True))


@functools.lru_cache(maxsize=None)
def ldst_atom(op: str, shape: str, num: int, pack: bool) -> "TmemLoadAtom | TmemStoreAtom":
    """The atom of ``tcgen05.<op>.<shape>.x<num>`` (one instance per form: plans compare and hash atoms)."""
    return (TmemLoadAtom if op == "ld" else TmemStoreAtom)(shape, num, pack)


@functools.lru_cache(maxsize=None)
def atom_cells(atom: TmemLoadAtom | TmemStoreAtom) -> np.ndarray:
    """``(32, registers, cells per register, 2)``: the (lane, column) offsets each register of ``atom`` moves."""
    return np.array([[atom.cells(t, j) for j in range(atom.registers)] for t in range(32)], dtype=np.int64)


register_clear(ldst_atom.cache_clear)
