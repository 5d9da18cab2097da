"""Pictures of layouts and shared-memory tensors, as SVG (``Svg``; Jupyter displays them).

``draw_layout`` draws the grid ``print_layout`` prints, each cell labelled with its value and coloured by it (or
by row, column, shared-memory bank or 16-byte chunk). ``draw_smem`` draws a shared-memory tensor's bytes in
128-byte rows of 16-byte chunks (the unit a descriptor swizzle moves), each chunk coloured and labelled by the
logical row and column of its first element: unswizzled on the left, as stored (swizzled) on the right.
"""
from __future__ import annotations

from typing import Any, Callable, Literal, Union

import zlib

from ..basis import ScaledBasis
from ..tensor.smem import SmemTensor
from ..layout import Layout, is_layout
from ..swizzle import ComposedLayout
from .svg import CELL, Svg, color, text_width
from .text import _label, cell_value, grid_shape, is_tmem

__all__ = ["draw_layout", "draw_smem", "MAX_LABELLED_CELLS"]

MAX_LABELLED_CELLS = 4096        # beyond this a grid is drawn without per-cell labels (the picture says so)
MAX_SIDE = 128                   # and beyond this many rows or columns, only the first ones are drawn
ROW_BYTES, CHUNK_BYTES = 128, 16
_COLOR_BY = ("index", "row", "col", "bank", "chunk")
#: How draw_layout colours cells: by one of _COLOR_BY, or by a function of the cell's value.
ColorBy = Union[Literal["index", "row", "col", "bank", "chunk"], Callable[[Any], Any]]


def _stable(key) -> int:
    return key if isinstance(key, int) else zlib.crc32(repr(key).encode())


def _key(how, value, m, n, bits):
    if callable(how):
        return how(value)
    if how == "row":
        return m
    if how == "col":
        return n
    if isinstance(value, ScaledBasis):
        terms = value.as_dict()
        return terms.get("TLane", 0) * 1024 + terms.get("TCol", 0)
    if how == "bank":
        return (value * bits // 32) % 32
    if how == "chunk":
        return value * bits // (8 * CHUNK_BYTES)
    return value


def draw_layout(layout: Layout | ComposedLayout, color_by: ColorBy = "index", bits: int = 16,
                title: str | None = None) -> Svg:
    """The layout's grid (rank 2; other ranks grouped as ``print_layout`` groups them): row coordinates down,
    column coordinates across, each cell its value. ``color_by``: ``"index"`` (the value), ``"row"``, ``"col"``,
    ``"bank"`` / ``"chunk"`` (the 4-byte bank or 16-byte chunk of the value as an offset of ``bits``-wide
    elements), or a function of the value."""
    if not is_layout(layout):
        raise TypeError(f"draw_layout: expected a Layout or ComposedLayout, got {type(layout).__name__}")
    if not callable(color_by) and color_by not in _COLOR_BY:
        raise ValueError(f"draw_layout: color_by must be one of {', '.join(_COLOR_BY)} or a function, got "
                         f"{color_by!r}")
    all_rows, all_cols, note = grid_shape(layout)
    rows, cols = min(all_rows, MAX_SIDE), min(all_cols, MAX_SIDE)
    labelled = rows * cols <= MAX_LABELLED_CELLS
    cell = CELL if labelled else max(4, min(CELL, 1600 // max(rows, cols)))
    left, top = 40, 56
    heading = title or repr(layout)
    svg = Svg(max(left + cols * cell + 20, text_width(heading, 12) + 20), top + rows * cell + 30, heading)
    svg.text(8, 14, title or repr(layout), size=12, anchor="start", weight="bold")
    notes = [note] if note else []
    if (rows, cols) != (all_rows, all_cols):
        notes.append(f"showing rows 0..{rows - 1} of {all_rows} and columns 0..{cols - 1} of {all_cols}")
    if not labelled:
        notes.append(f"{rows * cols} cells: values as colours only (labels shown up to {MAX_LABELLED_CELLS})")
    svg.text(8, 32, "; ".join(notes) or f"colour: {color_by if not callable(color_by) else 'custom'}",
             size=10, anchor="start")
    step = 1 if labelled else max(1, 8 * 4 // cell)
    for n in range(0, cols, step):
        svg.text(left + n * cell + cell / 2, top - 8, n, size=8)
    for m in range(0, rows, step):
        svg.text(left - 6, top + m * cell + cell / 2, m, size=8, anchor="end")
    values = [[cell_value(layout, m, n) for n in range(cols)] for m in range(rows)]
    tmem = is_tmem(v for row in values for v in row)
    for m in range(rows):
        svg.group(0, top + m * cell, row=m)
        for n in range(cols):
            v = values[m][n]
            label = _label(v, tmem)
            svg.rect(left + n * cell, None, cell, cell, fill=color(_stable(_key(color_by, v, m, n, bits))),
                     sized=True, value=label)
            if labelled:
                svg.text(left + n * cell + cell / 2, cell / 2, label, size=7 if len(label) > 3 else 8)
        svg.end()
    return svg


def _chunks(tensor: SmemTensor, swizzled: bool) -> dict:
    """16-byte chunk -> (row, col) of the first element (in grid order) stored in it."""
    layout = tensor.layout
    rows, cols, _ = grid_shape(layout)
    out: dict = {}
    for m in range(rows):
        for n in range(cols):
            off = tensor.offset + cell_value(layout, m, n)
            if swizzled and tensor.swizzle is not None:
                off = tensor.swizzle(off)
            out.setdefault(off * tensor.bits // (8 * CHUNK_BYTES), (m, n))
    return out


def _chunk_panel(chunks: dict, first_row: int, nrows: int, heading: str) -> Svg:
    per_row = ROW_BYTES // CHUNK_BYTES
    w, h = 34, 16
    panel = Svg(max(60 + per_row * w, text_width(heading, 11) + 10), 40 + nrows * h)
    panel.text(4, 12, heading, size=11, anchor="start", weight="bold")
    for u in range(per_row):
        panel.text(56 + u * w + w / 2, 30, f"+{u * CHUNK_BYTES}", size=8)
    for r in range(nrows):
        panel.text(52, 40 + r * h + h / 2, f"{(first_row + r) * ROW_BYTES}", size=8, anchor="end")
        for u in range(per_row):
            chunk = (first_row + r) * per_row + u
            where = chunks.get(chunk)
            fill = color(where[0]) if where else "#f4f4f4"
            panel.rect(56 + u * w, 40 + r * h, w, h, fill=fill, sized=True, chunk=chunk,
                       element=f"{where[0]},{where[1]}" if where else "")
            if where:
                panel.text(56 + u * w + w / 2, 40 + r * h + h / 2, f"{where[0]},{where[1]}", size=7)
    return panel


def draw_smem(tensor: SmemTensor, max_rows: int = 256) -> Svg:
    """The tensor's bytes in 128-byte rows of 16-byte chunks, each chunk labelled ``row,col`` with the logical
    coordinates of its first element and coloured by that row: before the swizzle and as stored."""
    if not isinstance(tensor, SmemTensor):
        raise TypeError(f"draw_smem: expected a shared-memory tensor (make_smem_tensor), got {type(tensor).__name__}")
    plain, stored = _chunks(tensor, False), _chunks(tensor, True)
    per_row = ROW_BYTES // CHUNK_BYTES
    lo = min(min(plain), min(stored)) // per_row
    hi = max(max(plain), max(stored)) // per_row + 1
    shown = min(hi - lo, max_rows)
    sw = repr(tensor.swizzle) if tensor.swizzle is not None else "no swizzle"
    left = _chunk_panel(plain, lo, shown, "logical placement (before the swizzle)")
    right = _chunk_panel(stored, lo, shown, f"as stored ({sw})")
    note = f"bytes {lo * ROW_BYTES}..{hi * ROW_BYTES - 1} from the buffer base; cell = 16 B, label = row,col"
    if shown < hi - lo:
        note += f"; first {shown} of {hi - lo} rows shown"
    width = max(left.width + right.width + 30, text_width(repr(tensor), 12) + 20, text_width(note, 10) + 20)
    svg = Svg(width, 60 + left.height, repr(tensor))
    svg.text(8, 14, repr(tensor), size=12, anchor="start", weight="bold")
    svg.text(8, 32, note, size=10, anchor="start")
    svg.place(left, 0, 44)
    svg.place(right, left.width + 30, 44)
    return svg
