"""Text grids of layouts, in CuTe's ``print_layout`` format (``cute/util/print_tensor.hpp``), so that a grid can be
diffed against CuTe's own output.

A rank-2 layout prints exactly as CuTe prints it: the layout, the column coordinates, then one row of cells per
row coordinate, each cell the layout's value right-aligned in ``digits(cosize) + 2`` characters. Extensions CuTe
does not have: a rank-1 layout prints as one column and a layout of rank 3 or more prints mode 0 down and the other
modes, flattened colexicographically, across (a line under the layout says so); a layout whose values are
scaled-basis points (TMEM layouts) shows each cell as ``lane,col`` (or its axes' coefficients).
"""
from __future__ import annotations

import sys
from typing import Any, Iterable, TextIO

from ..basis import ScaledBasis
from ..layout import ComposedBase, Layout, cosize, is_layout, size
from ..swizzle import ComposedLayout

__all__ = ["layout_grid", "print_layout", "grid_shape", "cell_value", "is_tmem"]

_DELIM = "+-----------------------"     # CuTe prints at most this many characters of a cell's border


def _digits(x: int) -> int:
    """CuTe's ``num_digits``: 1 below 10 (negative numbers included), then one more per power of ten."""
    n = 1
    while x >= 10 ** n:
        n += 1
    return n


def grid_shape(layout: Any) -> tuple[int, int, str]:
    """``(rows, cols, note)``: how a layout of any rank is laid out as a grid (``note`` is empty for rank 2)."""
    r = layout.rank()
    if r == 2:
        return size(layout[0]), size(layout[1]), ""
    if r == 1:
        return size(layout), 1, "rank 1: one column"
    rest = ", ".join(str(i) for i in range(1, r))
    return size(layout[0]), size(layout) // size(layout[0]), \
        f"rank {r}: mode 0 down, modes {rest} across (colexicographic)"


def cell_value(layout: Any, m: int, n: int) -> Any:
    """The layout's value at grid cell ``(m, n)``."""
    r = layout.rank()
    if r == 2:
        return layout(m, n)
    if r == 1:
        return layout(m)
    return layout(m + grid_shape(layout)[0] * n)


def _label(value, tmem: bool = False) -> str:
    """A cell's text: an int, ``lane,col`` for a TMEM point (``tmem``: the layout's values are TMEM points, so
    the point 0 is ``0,0``), or the basis terms."""
    terms = value.as_dict() if isinstance(value, ScaledBasis) else ({} if tmem and value == 0 else None)
    if terms is None:
        return str(value)
    if set(terms) <= {"TLane", "TCol"}:
        return f"{terms.get('TLane', 0)},{terms.get('TCol', 0)}"
    return ",".join(f"{c}@{a}" for a, c in value.terms)


def is_tmem(values: Iterable) -> bool:
    """True when the values are TMEM points (some are TLane/TCol scaled bases)."""
    return any(isinstance(v, ScaledBasis) and set(v.as_dict()) <= {"TLane", "TCol"} for v in values)


def _cosize(layout) -> int:
    """CuTe's ``cosize`` (1 + the sum of (extent - 1) * |stride|), of the inner layout for a composed one."""
    return cosize(layout.inner if isinstance(layout, ComposedBase) else layout)


def layout_grid(layout: Layout | ComposedLayout) -> str:
    """The text grid ``print_layout`` prints (ending in a newline)."""
    if not is_layout(layout):
        raise TypeError(f"layout_grid: expected a Layout or ComposedLayout, got {type(layout).__name__}")
    rows, cols, note = grid_shape(layout)
    values = [[cell_value(layout, m, n) for n in range(cols)] for m in range(rows)]
    if all(isinstance(v, int) for row in values for v in row):
        width = _digits(_cosize(layout)) + 2
        labels = [[str(v) for v in row] for row in values]
    else:
        tmem = is_tmem(v for row in values for v in row)
        labels = [[_label(v, tmem) for v in row] for row in values]
        width = max(len(t) for row in labels for t in row) + 2
    border = "    " + _DELIM[:width + 1] * cols + "+\n"
    out = [f"{layout!r}\n"] + ([f"  ({note})\n"] if note else [])
    out.append("    " + "".join(f"  {n:>{width - 2}} " for n in range(cols)) + "\n")
    for m in range(rows):
        out.append(border)
        out.append(f"{m:>2}  " + "".join(f"| {t:>{width - 2}} " for t in labels[m]) + "|\n")
    out.append(border)
    return "".join(out)


def print_layout(layout: Layout | ComposedLayout, file: TextIO | None = None) -> None:
    """Print ``layout`` as CuTe's ``print_layout`` does: a grid of its values with coordinates on the margins."""
    print(layout_grid(layout), end="", file=file or sys.stdout)
