"""Register <-> shared-memory atoms: the per-thread ``st.shared`` / ``ld.shared`` of 1 to 16 bytes
(``SmemVectorAtom``) and the warp-collective ``stmatrix`` / ``ldmatrix`` forms (``SmemMatrixAtom``), built from the
arch tables (``arch.sm90.shared``, ``arch.sm90.matrix``, ``arch.sm100.matrix``), and the issue record a plan streams
and the PTX interpreter reads back from compiled code."""
from __future__ import annotations

from typing import NamedTuple, Union

import attrs
import numpy as np

from ..arch.sm90.matrix import ROW_BYTES, MatrixForm, MatrixOp
from ..arch.sm90.shared import SHARED_SASS, SHARED_TARGETS, SHARED_WIDTHS, ld_shared_ptx, st_shared_ptx
from ..errors import PlanError

__all__ = ["SmemVectorAtom", "SmemMatrixAtom", "SmemAtom", "SmemIssue"]


class SmemIssue(NamedTuple):
    """One thread's register <-> shared instruction: its PTX and the shared address it gives (its own bytes for
    ld/st.shared; a matrix row's start for stmatrix / ldmatrix, or an address the instruction ignores); read back
    from compiled code, a store also carries its registers' values (``data``)."""

    ptx: str
    address: int
    data: tuple[int, ...] = ()


@attrs.frozen
class SmemVectorAtom:
    """``st.shared`` / ``ld.shared`` of ``width`` bytes per thread at a ``width``-aligned address."""

    op: MatrixOp
    width: int

    def __attrs_post_init__(self) -> None:
        if self.width not in SHARED_WIDTHS:
            raise PlanError(f"{self.op}.shared moves {', '.join(map(str, SHARED_WIDTHS))} bytes, not {self.width}")

    @property
    def ptx(self) -> str:
        return st_shared_ptx(self.width) if self.op == "st" else ld_shared_ptx(self.width)

    @property
    def sass(self) -> str:
        return SHARED_SASS[self.op][self.width]

    @property
    def targets(self) -> tuple[str, ...]:
        return SHARED_TARGETS

    @property
    def registers(self) -> int:
        """32-bit registers the thread moves (a narrower access moves part of one)."""
        return max(1, self.width // 4)

    @property
    def bytes_per_thread(self) -> int:
        return self.width

    def lane_bytes(self, addresses: np.ndarray) -> np.ndarray:
        """``(lanes, width)``: the shared byte each byte of each lane's access touches."""
        return addresses[:, None] + np.arange(self.width)[None, :]


@attrs.frozen
class SmemMatrixAtom:
    """A ``stmatrix`` / ``ldmatrix`` form (``form``): ``form.registers`` registers per lane, 8 rows of 16 bytes
    each."""

    form: MatrixForm

    @property
    def op(self) -> MatrixOp:
        return self.form.op

    @property
    def ptx(self) -> str:
        return self.form.ptx

    @property
    def sass(self) -> str:
        return self.form.sass

    @property
    def targets(self) -> tuple[str, ...]:
        return self.form.targets

    @property
    def registers(self) -> int:
        return self.form.registers

    @property
    def bytes_per_thread(self) -> int:
        return 4 * self.form.registers

    def row_of_lane(self) -> np.ndarray:
        """``(32,)``: the row whose address each lane gives (lanes past the form's rows repeat them: their
        address is ignored, and giving a real row's keeps the arithmetic one formula)."""
        lanes = self.form.row_lane()
        rows = np.empty(lanes.size, dtype=np.int64)
        rows[lanes] = np.arange(lanes.size)
        return rows[np.arange(32) % lanes.size]

    def row_bytes(self) -> int:
        return ROW_BYTES


SmemAtom = Union[SmemVectorAtom, SmemMatrixAtom]
