"""What a TMEM tensor occupies, cell by cell, for the tcgen05.ld/st planner; and layouts recovered from tables.

A tensor's elements live in 32-bit cells (lane, column): ``32 // bits`` to a cell when dense, or one to a cell in
its low half (16-bit MMA accumulators, which ``.pack::16b`` reads two cells at a time). ``tensor_cells`` finds the
footprint from the layout's modes alone (each steps lanes or columns, so the cells are a product set: planning never
walks the elements); ``TensorCells.lookup`` maps cells to coordinates for fragments and checks;
``layout_of_table`` finds the layout whose values a table lists.
"""
from __future__ import annotations

import bisect

import attrs
import numpy as np

from ...arch.sm100.tmem import CELL_BITS, LANES, QUADRANT_LANES
from ...basis import basis_get
from ...errors import PlanError
from ...int_tuple import flatten
from ...layout import Layout, coalesce, make_layout
from ...tensor.values import layout_values
from ...tensor.tmem import TmemTensor

__all__ = ["TensorCells", "QuadrantBlock", "tensor_cells", "layout_of_table", "fragment_layout"]


@attrs.frozen
class QuadrantBlock:
    """The cells a tensor occupies in one lane quadrant: ``lanes`` lanes from quadrant-local ``lane`` (0 or 16, or
    all 32 from 0) by ``width`` 32-bit columns from ``column``."""

    quadrant: int
    lane: int
    lanes: int
    column: int
    width: int


@attrs.frozen(eq=False)
class TensorCells:
    """A tensor's footprint: ``per_cell`` elements per 32-bit cell (``dense`` when they fill it) and one
    ``QuadrantBlock`` per occupied lane quadrant; ``lookup()`` maps cells to coordinates."""

    tensor: TmemTensor
    per_cell: int
    dense: bool
    blocks: tuple[QuadrantBlock, ...]

    def lookup(self) -> np.ndarray:
        """``(LANES, 512, per_cell)`` coordinate index held at each cell position, -1 where the tensor has none."""
        return _lookup(self.tensor, self.per_cell)


def _lookup(tensor: TmemTensor, per_cell: int) -> np.ndarray:
    bits = tensor.bits
    lanes = tensor.lane_offset + layout_values(tensor.layout, "TLane")
    cols = tensor.col_offset + layout_values(tensor.layout, "TCol")
    reps = [0] if tensor.replica is None else layout_values(tensor.replica, "TLane").tolist()
    slot = ((cols * bits) % CELL_BITS) // bits
    out = np.full((LANES, 512, per_cell), -1, dtype=np.int64)
    idx = np.arange(lanes.size)
    for rep in reps:
        out[lanes + rep, (cols * bits) // CELL_BITS, slot] = idx
    return out


def _axis_values(tensor: TmemTensor, where: str) -> tuple[list, list]:
    """The lanes and element columns the tensor occupies: every mode steps one axis, so its cells are the
    product of the two sets (checked one-to-one)."""
    lanes, cols = [tensor.lane_offset], [tensor.col_offset]
    for n, d in zip(flatten(tensor.layout.shape), flatten(tensor.layout.stride)):
        lane, col = basis_get(d, "TLane"), basis_get(d, "TCol")
        if n == 1:
            continue
        if lane and col:
            raise PlanError(f"{where}: a mode of {n} steps both lanes and columns ({d!r}); tcgen05.ld/st moves "
                            f"rectangles of lanes x columns")
        if lane:
            lanes = [v + k * lane for k in range(n) for v in lanes]
        else:
            cols = [v + k * col for k in range(n) for v in cols]
    if tensor.replica is not None:
        lanes = [v + r for r in layout_values(tensor.replica, "TLane").tolist() for v in lanes]
    if len(set(lanes)) != len(lanes) or len(set(cols)) != len(cols):
        raise PlanError(f"{where}: the layout is not one-to-one (two coordinates share a lane or a column element)")
    return lanes, cols


def _quadrant_blocks(lanes: list, cols32: list, where: str) -> tuple:
    """``lanes`` sorted; one block per quadrant they touch."""
    if lanes[0] < 0 or lanes[-1] >= LANES:
        raise PlanError(f"{where}: the tensor reaches lanes {lanes[0]}..{lanes[-1]}, outside TMEM's {LANES}")
    c0, ncols = cols32[0], cols32[-1] - cols32[0] + 1
    if len(cols32) != ncols:
        raise PlanError(f"{where}: the tensor's columns {cols32[0]}..{cols32[-1]} are not consecutive "
                        f"({len(cols32)} of {ncols}); tcgen05.ld/st moves rectangles of lanes x columns")
    out, start = [], 0
    for q in range(LANES // QUADRANT_LANES):
        stop = bisect.bisect_left(lanes, QUADRANT_LANES * (q + 1), start)
        mine, start = [l - QUADRANT_LANES * q for l in lanes[start:stop]], stop
        if not mine:
            continue
        lane0 = mine[0]
        if mine != list(range(lane0, lane0 + len(mine))):
            raise PlanError(f"{where}: in lane quadrant {q} the tensor holds lanes {mine[0]}..{mine[-1]} with gaps; "
                            f"tcgen05.ld/st moves runs of 32, or 16 from lane base 0 or 16")
        if (lane0, len(mine)) not in ((0, 32), (0, 16), (16, 16)):
            raise PlanError(f"{where}: in lane quadrant {q} the tensor occupies lanes {lane0}..{lane0 + len(mine) - 1}"
                            f" of the quadrant; tcgen05.ld/st reaches all 32 lanes or the 16 at lane base 0 or 16 "
                            f"(other lane bases are undefined in the PTX text: docs/tcgen05-ld-st.md section 15)")
        out.append(QuadrantBlock(q, lane0, len(mine), c0, ncols))
    return tuple(out)


def tensor_cells(tensor: TmemTensor, where: str = "tcgen05.ld/st") -> TensorCells:
    """The footprint of ``tensor`` (its offset, layout and every replica), checked to be one rectangle per quadrant
    with the same number of elements in every cell."""
    bits = tensor.bits
    if CELL_BITS % bits:
        raise PlanError(f"{where}: {tensor.dtype.name} elements ({bits} bits) do not tile a 32-bit TMEM cell")
    lanes, cols = _axis_values(tensor, where)
    per = CELL_BITS // bits
    cells = sorted({c // per for c in cols})
    n, ragged = divmod(len(cols), len(cells))
    # The columns are distinct, so every cell holds exactly n of them iff none sits at a position >= n.
    if ragged or (per > 1 and max(c % per for c in cols) >= n):
        raise PlanError(f"{where}: the tensor's {len(cols)} column elements fill {len(cells)} cells unevenly, or a value "
                        f"alone in its cell is not in the low half; every cell must hold the same elements from bit 0")
    return TensorCells(tensor, n, n == per, _quadrant_blocks(sorted(set(lanes)), cells, where))


def _linear_modes(values: np.ndarray) -> list | None:
    """``[(extent, stride)]`` with ``values[i] == sum(digit_k(i) * stride_k)``, coarsest first-fit; None if none."""
    n = values.size
    if values[0] != 0:
        return None
    modes, prefix = [], 1
    while prefix < n:
        stride = int(values[prefix])
        best = 0
        for extent in range(n // prefix, 1, -1):
            if (n // prefix) % extent:
                continue
            block = values[:prefix * extent].reshape(extent, prefix)
            if np.array_equal(block, block[:1] + stride * np.arange(extent)[:, None]):
                best = extent
                break
        if not best:
            return None
        modes.append((best, stride))
        prefix *= best
    return modes


def layout_of_table(values: np.ndarray) -> Layout | None:
    """The (coalesced) layout ``L`` with ``L(i) == values[i]`` for every i, or None when no layout lists them."""
    modes = _linear_modes(np.asarray(values, dtype=np.int64))
    if modes is None:
        return None
    if not modes:
        return Layout(1, 0)
    shape, stride = tuple(e for e, _ in modes), tuple(s for _, s in modes)
    return coalesce(Layout(shape[0], stride[0]) if len(modes) == 1 else Layout(shape, stride))


def fragment_layout(table: np.ndarray) -> Layout | None:
    """The thread-value layout ``(thread, value) -> coordinate index`` of a ``(threads, values)`` table, or None."""
    threads, values = layout_of_table(table[:, 0]), layout_of_table(table[0, :])
    if threads is None or values is None:
        return None
    expect = table[:, :1] + table[:1, :] - table[0, 0]
    if not np.array_equal(table, expect):
        return None
    return make_layout(threads, values)
