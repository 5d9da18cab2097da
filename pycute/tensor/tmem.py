"""Tensor-memory (TMEM) tensors: a dtype and a layout whose strides are on the ``TLane`` / ``TCol`` axes (``TCol``
counted in elements), an optional multicast ``replica`` on ``TLane``, and the allocation's width in columns.
"""
from __future__ import annotations

import attrs

from ..arch.sm100.tmem import check_alloc_columns
from ..basis import ScaledBasis, basis_get
from ..dtypes import DType, DTypeLike, element_dtype
from ..errors import PlanError
from ..int_tuple import flatten
from ..layout import Layout
from .region import DynamicIndex, Region

__all__ = ["TmemTensor", "TmemPlacement", "make_tmem_tensor"]

@attrs.frozen(repr=False, cache_hash=True)   # a plan-cache key: hashed on every plan request
class TmemTensor(Region):
    """A region of TMEM: element ``c`` lives at ``offset + layout(c)`` on (TLane, TCol-in-elements), replicated at
    every lane offset of ``replica``; ``columns`` is the allocation size in 32-bit columns."""

    dtype: DType
    layout: Layout
    replica: Layout | None = None
    columns: int | None = None
    offset: object = 0
    dynamic: tuple[DynamicIndex, ...] = ()                      # DynamicIndex per run-time coordinate
    placement: "TmemPlacement | None" = None  # where a TmemAllocation placed it

    KIND = "TMEM tensor"
    SPACE = "tmem"

    @property
    def alloc_columns(self) -> int:
        """``columns``, which every plan's destination has (the planner refuses a tensor without one)."""
        if self.columns is None:
            raise PlanError(f"{self!r} has no allocation: pass columns= (the tcgen05.alloc size) to make_tmem_tensor")
        return self.columns

    @property
    def lane_offset(self) -> int:
        return basis_get(self.offset, "TLane")

    @property
    def col_offset(self) -> int:
        """Column offset in elements."""
        return basis_get(self.offset, "TCol")

    def __repr__(self) -> str:
        rep = f", replica {self.replica!r}" if self.replica is not None else ""
        cols = f", {self.columns} columns" if self.columns is not None else ""
        at = f" {self.placement!r}" if self.placement is not None else ""
        return f"tmem<{self.dtype.name}>[{self.offset!r} o {self.layout!r}{rep}{cols}]{self._dynamic_repr()}{at}"


@attrs.frozen
class TmemPlacement:
    """Where ``TmemAllocation.add`` put a tensor: its name, first 32-bit column and width in columns, its lanes,
    and the allocation's cta_group."""

    name: str
    column: int
    width: int
    lanes: tuple          # (first, last + 1)
    cta_group: int

    @property
    def end(self) -> int:
        return self.column + self.width

    def __repr__(self) -> str:
        return f"@{self.name}[columns {self.column}..{self.end - 1}, lanes {self.lanes[0]}..{self.lanes[1] - 1}]"


def make_tmem_tensor(dtype: DTypeLike, layout: Layout, replica: Layout | None = None, columns: int | None = None
                     ) -> TmemTensor:
    """A TMEM tensor: ``layout`` on TLane/TCol (elements), optional multicast ``replica`` on TLane, and the
    allocation size ``columns`` (32-bit columns, a legal tcgen05.alloc size)."""
    dt = element_dtype(dtype, "make_tmem_tensor")
    if not isinstance(layout, Layout):
        raise PlanError(f"TMEM layout must be a Layout with TLane/TCol strides, got {layout!r}")
    for d in flatten(layout.stride):
        if not (d == 0 or (isinstance(d, ScaledBasis) and set(d.as_dict()) <= {"TLane", "TCol"})):
            raise PlanError(f"TMEM layout {layout!r}: stride {d!r} is not on the TLane/TCol axes")
    if replica is not None:
        if not isinstance(replica, Layout):
            raise PlanError(f"replica must be a Layout on TLane, got {replica!r}")
        for d in flatten(replica.stride):
            if not (isinstance(d, ScaledBasis) and set(d.as_dict()) == {"TLane"}):
                raise PlanError(f"replica {replica!r}: stride {d!r} is not on the TLane axis")
    if columns is not None:
        try:
            columns = check_alloc_columns(columns)
        except PlanError as e:
            raise PlanError(f"TMEM tensor: {e}") from None
    return TmemTensor(dt, layout, replica, columns, 0)
