"""Several TMEM tensors in one ``tcgen05.alloc``: placement, alignment and the allocation's size.

``TmemAllocation(cta_group)`` places tensors side by side, as CuTe's ``TMEM::Allocator1Sm/2Sm`` and
``find_tmem_tensor_col_offset`` do: ``add`` puts a tensor at an explicit column or at the next free one, and
``columns`` is the operand ``tcgen05.alloc`` takes (a power of two, 32 to 512; PTX
#tcgen05-instructions-tcgen05-alloc-dealloc-relinquish-alloc-permit). A placed tensor is an ordinary
``TmemTensor`` whose offset is its real column, so every planner rule sees where it is.
"""
from __future__ import annotations

import numpy as np

from ..arch.sm100.swizzle_modes import UNIT_BITS
from ..arch.sm100.tmem import CELL_BITS, COLUMNS, LANES, TCol, alloc_columns_for
from ..arch.sm100.tmem import check_cta_group
from ..errors import PlanError
from ..int_tuple import as_int
from ..dtypes import DTypeLike
from ..layout import Layout
from .values import layout_values
from .tmem import TmemPlacement, TmemTensor, make_tmem_tensor

__all__ = ["TmemAllocation", "PLACEMENT_ALIGN"]

#: Columns a placed tensor starts on: tcgen05.cp's TMEM column address is 128-bit aligned (a multiple of 4 columns).
PLACEMENT_ALIGN = UNIT_BITS // CELL_BITS


def _footprint(tensor: TmemTensor) -> tuple[int, int, int, int]:
    """``(first column, end column, first lane, end lane)`` a tensor at offset 0 occupies (32-bit columns)."""
    cols = layout_values(tensor.layout, "TCol") * tensor.bits // CELL_BITS
    lanes = layout_values(tensor.layout, "TLane")
    reps = np.zeros(1, dtype=np.int64) if tensor.replica is None else layout_values(tensor.replica, "TLane")
    all_lanes = (lanes[:, None] + reps[None, :]).ravel()
    return int(cols.min()), int(cols.max()) + 1, int(all_lanes.min()), int(all_lanes.max()) + 1


class TmemAllocation:
    """One TMEM allocation of ``cta_group`` 1 or 2 (for 2, the same columns in both CTAs of the pair), filled by
    ``add``; ``columns`` is its ``tcgen05.alloc`` size."""

    def __init__(self, cta_group: int = 1):
        self.cta_group = check_cta_group(cta_group)
        self.tensors: list[TmemTensor] = []
        self.placements: list[TmemPlacement] = []   # tensors[i].placement, typed as never None

    @property
    def columns(self) -> int:
        """The ``tcgen05.alloc`` operand: the smallest legal size (32 to 512, a power of two) holding every tensor."""
        end = max((q.end for q in self.placements), default=1)
        return alloc_columns_for(end)

    @property
    def used(self) -> int:
        """One past the last column any placed tensor occupies."""
        return max((q.end for q in self.placements), default=0)

    def add(self, dtype: DTypeLike, layout: Layout, replica: Layout | None = None, column: int | None = None,
            name: str | None = None) -> TmemTensor:
        """Place a tensor (``layout`` on TLane/TCol elements, optional multicast ``replica``) at 32-bit ``column``
        or, without one, at the first free column that is a multiple of 4; returns the placed ``TmemTensor``."""
        name = f"tensor{len(self.tensors)}" if name is None else name
        if not isinstance(name, str):
            raise TypeError(f"TmemAllocation.add: name must be a string, got {name!r}")
        if any(q.name == name for q in self.placements):
            raise PlanError(f"TmemAllocation: a tensor named {name!r} is already placed")
        probe = make_tmem_tensor(dtype, layout, replica=replica)
        lo, hi, lane_lo, lane_hi = _footprint(probe)
        if lo < 0 or lane_lo < 0 or lane_hi > LANES:
            raise PlanError(f"TmemAllocation: {name!r} {layout!r} reaches columns [{lo}, {hi}) and lanes "
                            f"[{lane_lo}, {lane_hi}), outside TMEM's {LANES} lanes from column 0")
        width = hi
        if column is None:
            column = self._first_fit(width, (lane_lo, lane_hi))
        else:
            column = self._check_column(column, name)
        end = column + width
        if end > COLUMNS:
            placed = ", ".join(repr(q) for q in self.placements) or "nothing else"
            raise PlanError(f"TmemAllocation: {name!r} ({width} columns at column {column}) ends at column {end}, "
                            f"past TMEM's {COLUMNS} columns (placed: {placed})")
        for q in self.placements:
            if column < q.end and q.column < end and lane_lo < q.lanes[1] and q.lanes[0] < lane_hi:
                raise PlanError(f"TmemAllocation: {name!r} at columns [{column}, {end}), lanes [{lane_lo}, {lane_hi}) "
                                f"overlaps {q.name!r} at columns [{q.column}, {q.end}), lanes "
                                f"[{q.lanes[0]}, {q.lanes[1]})")
        placement = TmemPlacement(name, column, width, (lane_lo, lane_hi), self.cta_group)
        elements = column * CELL_BITS // probe.bits
        tensor = TmemTensor(probe.dtype, probe.layout, probe.replica, alloc_columns_for(end),
                            TCol * elements if elements else 0, (), placement)
        self.tensors.append(tensor)
        self.placements.append(placement)
        return tensor

    def _check_column(self, column, name: str) -> int:
        column = as_int(column, "TmemAllocation.add: column")
        if not 0 <= column < COLUMNS:
            raise PlanError(f"TmemAllocation: {name!r} at column {column} is outside TMEM's {COLUMNS} columns")
        if column % PLACEMENT_ALIGN:
            raise PlanError(f"TmemAllocation: {name!r} at column {column} is misaligned: tensors start on a multiple "
                            f"of {PLACEMENT_ALIGN} columns (tcgen05.cp's TMEM column address is 128-bit aligned)")
        return column

    def _first_fit(self, width: int, lanes: tuple) -> int:
        for column in range(0, COLUMNS, PLACEMENT_ALIGN):
            end = column + width
            if all(not (column < q.end and q.column < end and lanes[0] < q.lanes[1] and q.lanes[0] < lanes[1])
                   for q in self.placements):
                return column
        return COLUMNS      # no room: add refuses it naming the tensors placed

    def __iter__(self):
        return iter(self.tensors)

    def __getitem__(self, name: str) -> TmemTensor:
        for t, q in zip(self.tensors, self.placements):
            if q.name == name:
                return t
        raise KeyError(name)

    def __repr__(self) -> str:
        placed = ", ".join(repr(t.placement) for t in self.tensors)
        return f"TmemAllocation(cta_group={self.cta_group}, {self.columns} columns: {placed or 'empty'})"
