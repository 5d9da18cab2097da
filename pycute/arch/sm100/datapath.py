"""Where ``tcgen05.mma`` writes its accumulator D in TMEM: the data-path layouts of PTX
#tcgen05-data-path-layout-organization (Layouts A-G; the figures are images, the maps below follow TVM TIRx's
``tmem_datapath_layout`` and its GPU tests, docs/tcgen05-ld-st.md section 9).

Each map sends accumulator row ``r`` (of the rows one CTA holds) and column ``c`` (of ``N``) to a TMEM (lane,
column): ``lanes`` and ``columns`` are ``(extent, lane stride, column stride)`` modes, first the row modes then the
column modes, read as a layout of ``(r, c)``; ``None`` marks a layout whose map the sources do not pin down.
"""
from __future__ import annotations

import attrs

from ...errors import PlanError
from ...layout import Layout, make_layout
from .tmem import TCol, TLane

__all__ = ["DataPath", "DATA_PATHS", "data_path", "FOLD_LANES"]

FOLD_LANES = 64       # Layouts B and E put the second half of the columns 64 lanes further


@attrs.frozen
class DataPath:
    letter: str
    mma: str                      # which MMA writes it
    rows: int                     # accumulator rows per CTA
    grade: str                    # how the map is known
    row_modes: tuple | None       # ((extent, lane stride), ...) of r
    column_halves: bool = False   # columns fold in halves over lanes +64 (Layouts B, E)

    def layout(self, n: int, per_cell: int) -> Layout:
        """``(rows, N)`` on TLane / TCol, TCol in elements of which ``per_cell`` fill one 32-bit column (a 16-bit
        accumulator value sits alone in its cell: 2)."""
        if self.row_modes is None:
            raise PlanError(f"Layout {self.letter}'s lane map is not known ({self.grade})")
        rows = [(e, s * TLane) for e, s in self.row_modes]
        row = Layout(*rows[0]) if len(rows) == 1 else Layout(tuple(e for e, _ in rows), tuple(d for _, d in rows))
        cols = Layout((n // 2, 2), (per_cell * TCol, FOLD_LANES * TLane)) if self.column_halves \
            else Layout(n, per_cell * TCol)
        return make_layout(row, cols)


#: (M, cta_group, ws) -> its data path.
DATA_PATHS = {
    (256, 2, False): DataPath("A", "M=256, cta_group::2", 128, "TVM docs", ((128, 1),)),
    (128, 2, False): DataPath("B", "M=128, cta_group::2, dense", 64, "TVM GPU tests", ((64, 1),), True),
    (128, 1, False): DataPath("D", "M=128, cta_group::1", 128, "TVM GPU tests", ((128, 1),)),
    (64, 1, True): DataPath("E", "M=64, .ws", 64, "TVM docs (as B)", ((64, 1),), True),
    (64, 1, False): DataPath("F", "M=64, cta_group::1", 64, "TVM GPU tests (sub-slab 0)", ((16, 1), (4, 32))),
    (32, 1, True): DataPath("G", "M=32, .ws", 32, "TVM docs; the column-quarter formula is inferred, not pinned",
                            None),
}


def data_path(m: int, cta_group: int, ws: bool) -> DataPath | None:
    return DATA_PATHS.get((m, cta_group, ws))
