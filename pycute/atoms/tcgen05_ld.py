"""``tcgen05.ld`` / ``tcgen05.st`` atoms: warp-collective TMEM <-> register moves used to read copies back.

Thread ``t`` of the warp and register ``j`` map to a (lane offset within the warp's quadrant, column offset) as
the shape table ``arch.sm100.LDST_SHAPES`` says.
"""
from __future__ import annotations

from typing import ClassVar

import attrs

from ..arch.sm100.ldst_shapes import LDST_SHAPES
from ..errors import PlanError
from ..int_tuple import as_int

__all__ = ["TmemLoadAtom", "TmemStoreAtom", "TMEM_LDST_SHAPES"]

#: shape -> (registers per .x1, columns per .x1, largest legal .xN)
TMEM_LDST_SHAPES = {name: (s.registers, s.columns, s.max_num) for name, s in LDST_SHAPES.items()}


@attrs.frozen(repr=False)
class _TmemLdSt:
    shape: str
    num: int = 1

    OP: ClassVar[str] = ""

    def __attrs_post_init__(self):
        object.__setattr__(self, "num", as_int(self.num, f"tcgen05.{self.OP} .num"))
        if not isinstance(self.shape, str) or self.shape not in LDST_SHAPES:
            raise PlanError(f"unknown tcgen05.{self.OP} shape {self.shape!r}; legal: {', '.join(LDST_SHAPES)}")
        cap = LDST_SHAPES[self.shape].max_num
        if self.num not in [1 << k for k in range(8)] or self.num > cap:
            raise PlanError(f"tcgen05.{self.OP}.{self.shape}.x{self.num} is illegal: .xN takes a power of two up to "
                            f"{cap} for this shape")

    @property
    def ptx(self) -> str:
        return f"tcgen05.{self.OP}.sync.aligned.{self.shape}.x{self.num}.b32"

    @property
    def registers(self) -> int:
        """32-bit registers per thread."""
        return LDST_SHAPES[self.shape].registers * self.num

    @property
    def columns(self) -> int:
        """TMEM columns the warp touches."""
        return LDST_SHAPES[self.shape].columns * self.num

    @property
    def sass(self) -> str:
        op = "LDTM" if self.OP == "ld" else "STTM"
        suffix = f".x{self.num}" if self.num > 1 else ""      # .x1 has no suffix (LDTM, LDTM.16dp256bit)
        return f"{op}{LDST_SHAPES[self.shape].sass_variant}{suffix}"

    def cell(self, thread: int, reg: int) -> tuple[int, int]:
        """``(lane offset in the quadrant, column offset)`` that register ``reg`` of ``thread`` holds."""
        s = LDST_SHAPES[self.shape]
        block, j = divmod(reg, s.registers)
        lane, col = s.cell(thread, j)
        return lane, col + s.columns * block

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape!r}, x{self.num})  # {self.ptx}"


@attrs.frozen(repr=False)
class TmemLoadAtom(_TmemLdSt):
    """``tcgen05.ld.sync.aligned.<shape>.x<N>.b32``: TMEM -> registers (complete after ``tcgen05.wait::ld``)."""

    OP: ClassVar[str] = "ld"


@attrs.frozen(repr=False)
class TmemStoreAtom(_TmemLdSt):
    """``tcgen05.st.sync.aligned.<shape>.x<N>.b32``: registers -> TMEM (complete after ``tcgen05.wait::st``)."""

    OP: ClassVar[str] = "st"
