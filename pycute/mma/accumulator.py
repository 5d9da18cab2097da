"""``mma_accumulator``: the TMEM tensor in which ``tcgen05.mma`` writes D, so an epilogue plans its loads from the
MMA's own layout (``arch.sm100.datapath``)."""
from __future__ import annotations

from ..arch.sm100.datapath import DATA_PATHS, data_path
from ..arch.sm100.tmem import CELL_BITS, alloc_columns_for
from ..arch.sm100.tmem import check_cta_group
from ..dtypes import DTypeLike, dtype as as_dtype
from ..errors import PlanError
from ..int_tuple import as_int
from ..layout import Layout
from ..tensor.tmem import TmemTensor, make_tmem_tensor

__all__ = ["mma_accumulator", "accumulator_layout"]

_BITS = (16, 32)     # f32 / s32 accumulators, and 16-bit ones written one value per 32-bit cell


def accumulator_layout(bits: int, m: int, n: int, cta_group: int = 1, ws: bool = False) -> Layout:
    """The ``(rows per CTA, N)`` layout on TLane/TCol (TCol in elements of ``bits``) of the MMA's D."""
    path = data_path(m, cta_group, ws)
    if path is None:
        known = ", ".join(f"M={k[0]} cta_group::{k[1]}{' .ws' if k[2] else ''}" for k in DATA_PATHS)
        raise PlanError(f"no tcgen05.mma data-path layout for M={m}, cta_group::{cta_group}{', .ws' if ws else ''} "
                        f"(PTX #tcgen05-data-path-layout-organization has {known})")
    if path.row_modes is None:
        raise PlanError(f"the accumulator of {path.mma} is Layout {path.letter}, whose lane/column map the sources do "
                        f"not pin down ({path.grade}); pycute refuses it rather than guess")
    if path.column_halves and n % 2:
        raise PlanError(f"Layout {path.letter} folds N in halves over lanes +64; N={n} is odd")
    return path.layout(n, CELL_BITS // bits)   # a 16-bit value sits alone in its 32-bit cell: 2 per column


def mma_accumulator(dtype: DTypeLike, m: int, n: int, cta_group: int = 1, ws: bool = False, columns: int | None = None
                    ) -> TmemTensor:
    """The TMEM tensor ``(rows per CTA, N)`` where ``tcgen05.mma`` (M, N, cta_group, ``.ws``) writes D: element
    (r, c) of this CTA's rows at the lane and column its data-path layout says. ``columns`` is the allocation
    (default: the smallest holding it); place it in a ``TmemAllocation`` with ``alloc.add(dtype, tensor.layout)``."""
    dt = as_dtype(dtype)
    m, n = as_int(m, "mma_accumulator: M"), as_int(n, "mma_accumulator: N")
    cta_group = check_cta_group(cta_group)
    if not isinstance(ws, bool):
        raise TypeError(f"mma_accumulator: ws must be a bool, got {ws!r}")
    if dt.bits not in _BITS:
        raise PlanError(f"an MMA accumulator holds 32-bit or 16-bit values, not {dt.name} ({dt.bits} bits)")
    step = 8 if cta_group == 1 else 16
    if not (step <= n <= 256 and n % step == 0):
        raise PlanError(f"N={n} is not an MMA width for cta_group::{cta_group}: {step} to 256 in steps of {step} "
                        f"(docs/tcgen05-mma-operands.md section 7)")
    layout = accumulator_layout(dt.bits, m, n, cta_group, ws)     # refuses an unknown data path
    path = data_path(m, cta_group, ws)
    width = n // 2 if path is not None and path.column_halves else n
    return make_tmem_tensor(dt, layout, columns=alloc_columns_for(width) if columns is None else columns)
