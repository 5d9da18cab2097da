"""Canonical tensors: K-major shared-memory tiles (PTX "canonical layouts")."""
from __future__ import annotations

from ..arch.sm100.swizzle_modes import SwizzleLabel, SwizzleMode
from ..dtypes import DTypeLike, dtype as as_dtype
from ..errors import DescriptorError, PlanError
from ..layout import Layout
from ..swizzle import ComposedLayout
from .smem import SmemTensor, make_smem_tensor

__all__ = ["kmajor_smem_tensor", "SWIZZLE_PITCH"]

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
    rows_t = max(rows, 8)
    if rows_t % 8:
        raise PlanError(f"a K-major tile has whole 8-row core groups; {rows} rows given")
    k_t = -(-max(k, pe) // pe) * pe
    inner = Layout(((8, rows_t // 8), (pe, k_t // pe)), ((pe, 8 * pe), (1, rows_t * pe)))
    sw = mode.element_swizzle(dt.bits)
    return make_smem_tensor(dt, inner if sw is None else ComposedLayout(sw, 0, inner))
