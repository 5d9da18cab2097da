"""``tcgen05.ld`` / ``tcgen05.st`` atoms: warp-collective TMEM <-> register moves used to read copies back.

Thread ``t`` of the warp and register ``j`` map to a (lane offset within the warp's quadrant, column offset)
per PTX Table 49 and CUTLASS's ``SM100_TMEM_LOAD_*`` traits (ptx-tcgen05.md section 10).
"""
from __future__ import annotations

import attrs

from ..errors import PlanError

__all__ = ["TmemLoadAtom", "TmemStoreAtom", "TMEM_LDST_SHAPES"]

# shape -> (registers per .x1, columns per .x1, largest legal .xN)
TMEM_LDST_SHAPES = {
    "32x32b": (1, 1, 128),
    "16x64b": (1, 2, 128),
    "16x128b": (2, 4, 64),
    "16x256b": (4, 8, 32),
}
_SASS = {"32x32b": "", "16x64b": ".16dp64bit", "16x128b": ".16dp128bit", "16x256b": ".16dp256bit"}


@attrs.frozen(repr=False)
class _TmemLdSt:
    shape: str
    num: int = 1

    OP = ""

    def __attrs_post_init__(self):
        if self.shape not in TMEM_LDST_SHAPES:
            raise PlanError(f"unknown tcgen05.{self.OP} shape {self.shape!r}; legal: {', '.join(TMEM_LDST_SHAPES)}")
        cap = TMEM_LDST_SHAPES[self.shape][2]
        if self.num not in [1 << k for k in range(8)] or self.num > cap:
            raise PlanError(f"tcgen05.{self.OP}.{self.shape}.x{self.num} is illegal: .xN takes a power of two up to "
                            f"{cap} for this shape")

    @property
    def ptx(self) -> str:
        return f"tcgen05.{self.OP}.sync.aligned.{self.shape}.x{self.num}.b32"

    @property
    def registers(self) -> int:
        """32-bit registers per thread."""
        return TMEM_LDST_SHAPES[self.shape][0] * self.num

    @property
    def columns(self) -> int:
        """TMEM columns the warp touches."""
        return TMEM_LDST_SHAPES[self.shape][1] * self.num

    @property
    def sass(self) -> str:
        op = "LDTM" if self.OP == "ld" else "STTM"
        return f"{op}{_SASS[self.shape]}" + (f".x{self.num}" if self.num > 1 or self.shape == "32x32b" else "")

    def cell(self, thread: int, reg: int) -> tuple[int, int]:
        """``(lane offset in the quadrant, column offset)`` that register ``reg`` of ``thread`` holds."""
        regs1, cols1, _ = TMEM_LDST_SHAPES[self.shape]
        block, j = divmod(reg, regs1)
        t = thread
        if self.shape == "32x32b":
            lane, col = t, 0
        elif self.shape == "16x64b":
            lane, col = (t >> 2) + 8 * (t & 1), (t >> 1) & 1
        elif self.shape == "16x128b":
            lane, col = (t >> 2) + 8 * (j & 1), t & 3
        else:
            lane, col = (t >> 2) + 8 * ((j >> 1) & 1), (j & 1) + 2 * (t & 3)
        return lane, col + cols1 * block

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.shape!r}, x{self.num})  # {self.ptx}"


@attrs.frozen(repr=False)
class TmemLoadAtom(_TmemLdSt):
    """``tcgen05.ld.sync.aligned.<shape>.x<N>.b32``: TMEM -> registers (complete after ``tcgen05.wait::ld``)."""

    OP = "ld"


@attrs.frozen(repr=False)
class TmemStoreAtom(_TmemLdSt):
    """``tcgen05.st.sync.aligned.<shape>.x<N>.b32``: registers -> TMEM (complete after ``tcgen05.wait::st``)."""

    OP = "st"
