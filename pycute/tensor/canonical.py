"""Canonical tensors: K-major and MN-major shared-memory tiles (PTX "canonical layouts")."""
from __future__ import annotations

from ..arch.sm100.swizzle_modes import SwizzleLabel, SwizzleMode
from ..dtypes import DTypeLike, dtype as as_dtype
from ..int_tuple import as_int
from ..errors import DescriptorError, PlanError
from ..layout import Layout
from ..swizzle import ComposedLayout
from .smem import SmemTensor, make_smem_tensor

__all__ = ["kmajor_smem_tensor", "kmajor_smem_buffer", "mnmajor_smem_tensor", "SWIZZLE_PITCH"]

#: swizzle label -> row pitch in bytes, for the modes tcgen05.cp uses
SWIZZLE_PITCH = {m.label: m.row_pitch for m in (SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128)}


def kmajor_smem_tensor(dtype: DTypeLike, rows: int, k: int, swizzle: SwizzleLabel = "128B") -> SmemTensor:
    """A K-major ``rows`` x ``k`` tile: 8-row core groups at the swizzle's row pitch, row groups stacked first,
    then K blocks of one swizzle row each (cuTe's ``tile_to_shape`` of the swizzle atom, column-major).

    Unswizzled (``"none"``) it is the interleaved canonical layout: 16-byte rows, SBO 128 B, and K units
    ``16 * rows`` bytes apart (the LBO).
    """
    dt = as_dtype(dtype)
    try:
        mode = SwizzleMode.from_label(swizzle)
    except DescriptorError as e:
        raise PlanError(str(e)) from None
    pe = mode.row_pitch * 8 // dt.bits          # elements in one swizzle row
    if rows < 8 or rows % 8:
        raise PlanError(f"a K-major tile has whole 8-row core groups; {rows} rows given")
    if k < pe or k % pe:
        narrower = [f"{m.label!r} ({m.row_pitch * 8 // dt.bits} per row)" for m in reversed(SwizzleMode)
                    if m.row_pitch < mode.row_pitch and k % (m.row_pitch * 8 // dt.bits) == 0]
        raise PlanError(f"kmajor_smem_tensor: a {mode.label!r} K-major row holds {pe} {dt.name} elements; {k} is not "
                        f"a multiple (the tile would be {-(-k // pe) * pe} wide). Ask for a multiple of {pe}"
                        + (f", or use {' or '.join(narrower)}" if narrower else ""))
    inner = Layout(((8, rows // 8), (pe, k // pe)), ((pe, 8 * pe), (1, rows * pe)))
    sw = mode.element_swizzle(dt.bits)
    return make_smem_tensor(dt, inner if sw is None else ComposedLayout(sw, 0, inner))


def kmajor_smem_buffer(dtype: DTypeLike, rows: int, k: int, swizzle: SwizzleLabel = "128B") -> SmemTensor:
    """The smallest whole-atom K-major buffer that holds a ``rows`` x ``k`` tile: rows rounded up to 8-row core
    groups and K to whole swizzle rows (slice the tile out of it: ``kmajor_smem_buffer(...)[0:rows, 0:k]``, as a
    4-row tcgen05.cp source or a K slice of a wider swizzle row needs)."""
    dt = as_dtype(dtype)
    try:
        pe = SwizzleMode.from_label(swizzle).row_pitch * 8 // dt.bits
    except DescriptorError as e:
        raise PlanError(str(e)) from None
    rows, k = as_int(rows, "kmajor_smem_buffer: rows"), as_int(k, "kmajor_smem_buffer: k")
    if rows < 1 or k < 1:
        raise PlanError(f"kmajor_smem_buffer: a tile has at least one row and one column, not {rows} x {k}")
    return kmajor_smem_tensor(dt, -(-rows // 8) * 8, -(-k // pe) * pe, swizzle)


def mnmajor_smem_tensor(dtype: DTypeLike, mn: int, k: int, swizzle: SwizzleLabel = "128B") -> SmemTensor:
    """An MN-major ``mn`` x ``k`` tile (MN contiguous: a transposed MMA operand): atoms of one swizzle row of MN
    elements by 8 rows of K (``"none"``: 16 bytes of MN by 8 K rows, the interleaved core matrix), MN atoms stacked
    first (LBO, or SBO unswizzled, one atom apart), then the K groups of 8 (cuTe's MN-major ``tile_to_shape``)."""
    dt = as_dtype(dtype)
    try:
        mode = SwizzleMode.from_label(swizzle)
    except DescriptorError as e:
        raise PlanError(str(e)) from None
    mn, k = as_int(mn, "mnmajor_smem_tensor: mn"), as_int(k, "mnmajor_smem_tensor: k")
    per = mode.row_pitch * 8 // dt.bits          # MN elements in one swizzle row (16 bytes unswizzled)
    if mn < per or mn % per:
        raise PlanError(f"mnmajor_smem_tensor: a {mode.label!r} MN-major atom is {per} {dt.name} elements of MN; "
                        f"{mn} is not a multiple")
    if k < 8 or k % 8:
        raise PlanError(f"mnmajor_smem_tensor: an MN-major tile has whole groups of 8 K rows; {k} given")
    inner = Layout(((per, mn // per), (8, k // 8)), ((1, 8 * per), (per, 8 * mn)))
    sw = mode.element_swizzle(dt.bits)
    return make_smem_tensor(dt, inner if sw is None else ComposedLayout(sw, 0, inner))
