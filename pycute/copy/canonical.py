"""Canonical tensors: K-major shared-memory tiles (PTX "canonical layouts") and TMEM tensors shaped for an atom."""
from __future__ import annotations

from ..arch.sm100.swizzle_modes import SwizzleMode
from ..arch.sm100.tmem import TCol
from ..atoms.tcgen05_cp import Tcgen05CpAtom
from ..dtypes import DTypeLike, dtype as as_dtype
from ..errors import DescriptorError, PlanError
from ..layout import Layout, make_layout
from ..swizzle import ComposedLayout
from .tensor import SmemTensor, TmemTensor, make_smem_tensor, make_tmem_tensor

__all__ = ["kmajor_smem_tensor", "atom_tmem_tensor", "SWIZZLE_PITCH"]

#: swizzle label -> row pitch in bytes, for the modes tcgen05.cp uses
SWIZZLE_PITCH = {m.label: m.row_pitch for m in (SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128)}


def kmajor_smem_tensor(dtype: DTypeLike, rows: int, k: int, swizzle: str = "128B") -> SmemTensor:
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


def atom_tmem_tensor(dtype: DTypeLike, atom: Tcgen05CpAtom, k: int, columns: int = 64) -> TmemTensor:
    """A TMEM tensor whose rows follow ``atom``'s lane pattern (and replica) and whose ``k`` elements per row sit in
    consecutive columns."""
    if not isinstance(atom, Tcgen05CpAtom):
        raise TypeError(f"atom_tmem_tensor: expected a tcgen05.cp atom (a Tcgen05CpAtom instance), got {atom!r}")
    return make_tmem_tensor(dtype, make_layout(atom.lane_pattern, Layout(k, TCol)), replica=atom.replica,
                            columns=columns)
