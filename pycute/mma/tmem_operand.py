"""A in TMEM (``tcgen05.mma ... [d-tmem], [a-tmem], b-desc, ...``, PTX ISA #tcgen05-mma): the A operand read from
tensor memory instead of through a shared-memory descriptor, as attention's P x V does. A sits where the MMA's data
path puts its rows (``arch.sm100.datapath``: row r of this CTA's A in lane r for M 128 / cta_group::1 and M 256 /
cta_group::2, the layouts TVM TIRx's ``tmem_mma_operand_layout`` also gives), K along the columns with
``32 / bits`` elements packed into each 32-bit cell, lowest K in the low bits; K-major only (an A in TMEM is not
transposed). Each MMA reads 32 bytes of K: 8 columns further per k-block."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ..arch.sm100.datapath import data_path
from ..arch.sm100.mma import K_BYTES, Major
from ..arch.sm100.tmem import CELL_BITS
from ..errors import PlanError
from ..tensor.tmem import TmemTensor
from .operand import OperandShape

__all__ = ["TmemOperand", "make_tmem_operand"]


@attrs.frozen(repr=False)
class TmemOperand(OperandShape):
    """A in TMEM: ``tensor`` (this CTA's rows x K), ``column`` its first 32-bit column from the allocation base;
    k-block ``j`` starts ``k_offsets[j]`` columns further."""

    tensor: TmemTensor
    column: int
    k_per_mma: int
    k_offsets: tuple

    major: ClassVar[Major] = "K"          # an A in TMEM is never transposed
    stages: ClassVar[tuple] = ()

    def __repr__(self) -> str:
        return (f"TmemOperand({self.mn}x{self.k} {self.tensor.dtype.name} in TMEM at column +{self.column}, "
                f"{self.k_blocks} k-block(s) of {self.k_per_mma} at +{list(self.k_offsets)} columns)")


def make_tmem_operand(a: TmemTensor, m: int, cta_group: int) -> TmemOperand:
    """A (``rows x K`` of this CTA) in TMEM for an M x N x K MMA: exactly the data path's rows from lane 0, K
    packed along the columns, whole 32-byte k-blocks; PlanError names what differs."""
    path = data_path(m, cta_group, False)
    if path is None or path.letter not in ("A", "D"):
        raise PlanError(f"A in TMEM: pycute places it for M 128 (cta_group::1) and M 256 (cta_group::2), whose data "
                        f"paths hold one row per lane; not M {m} with cta_group::{cta_group}")
    bits, k = a.bits, a.layout[1].size() if len(a.layout.shape) == 2 else 0
    k_per_mma = 8 * K_BYTES // bits
    if CELL_BITS % bits or not k or k % k_per_mma:
        raise PlanError(f"A in TMEM {a!r}: (rows, K) of {bits}-bit elements that pack into 32-bit cells, K a "
                        f"multiple of {k_per_mma} (32 bytes per MMA)")
    want = path.layout(k, 1)
    if a.layout != want or a.lane_offset:
        raise PlanError(f"A in TMEM {a!r} is not where the M {m} data path reads it: {want!r} from lane 0 (row r in "
                        f"lane r, K packed {CELL_BITS // bits} to a column)")
    if (a.col_offset * bits) % CELL_BITS:
        raise PlanError(f"A in TMEM starts {a.col_offset} {a.dtype.name} elements into TMEM, not on a column")
    step = K_BYTES * 8 // CELL_BITS
    return TmemOperand(a, a.col_offset * bits // CELL_BITS, k_per_mma,
                       tuple(j * step for j in range(k // k_per_mma)))
