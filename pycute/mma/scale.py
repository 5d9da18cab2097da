"""Scale factors where ``tcgen05.mma ... block_scale`` reads them (PTX #tcgen05-block-scaling; the lane/column
figures are images, so the placement follows the three codebases that agree: CuTe's ``tmem_sf_frg``, TVM TIRx's
``sf_tmem_layout`` and DeepGEMM; docs/tcgen05-mma-operands.md section 8):

  SF ``j`` of operand row ``r`` in MMA ``i`` of a k-block: lanes ``r % 32 + 32 q`` (replicated in all four quadrants),
  column ``r // 32`` (4 columns per 128 rows), byte ``(i * VS + j) % 4`` of the 32-bit cell -- the MMA's SF id --
  and, once a cell's four bytes are used, the next ``rows / 32`` columns.

``scale_factor_tensor`` is that TMEM tensor (u8 elements); ``check_scale_factor_copy`` proves a tcgen05.cp plan
writes each SF there, or refuses naming the first (row, k-block slot, byte) it puts elsewhere.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..arch.sm100.mma import MMA_KINDS, SF_CELL_BYTES, SF_REPLICA, scale_factor_layout
from ..arch.sm100.swizzle_modes import UNIT_BYTES
from ..arch.sm100.tmem import QUADRANT_LANES, check_cta_group
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..tensor.values import layout_values
from ..tensor.smem import SmemTensor, make_smem_tensor
from ..tensor.tmem import TmemTensor, make_tmem_tensor
from ..dtypes import u8
from ..errors import PlanError
from ..int_tuple import as_int, idx2crd
from ..layout import Layout

__all__ = ["scale_factor_tensor", "scale_factor_smem", "check_scale_factor_copy", "ScaleFactorTensor"]

_BYTES = SF_CELL_BYTES


@attrs.frozen(repr=False)
class ScaleFactorTensor:
    """The SFs of ``mmas`` consecutive MMAs for ``rows`` operand rows: ``tensor`` (coordinate (row, slot), slot
    ``i * scale_vec + j``) and, per MMA, the SF id and column its instruction must name."""

    tensor: TmemTensor
    kind: str
    rows: int
    scale_vec: int
    mmas: int
    cta_group: int = 1

    def sf_id(self, mma: int) -> int:
        """The SF id (byte in the cell) of MMA ``mma``: the instruction descriptor's SFA / SFB id."""
        return (as_int(mma, "mma") * self.scale_vec) % _BYTES

    def column(self, mma: int) -> int:
        """The first column, from the tensor's, MMA ``mma``'s SFs sit in (its SF TMEM address' column)."""
        return (as_int(mma, "mma") * self.scale_vec) // _BYTES * (self.rows // QUADRANT_LANES)

    def __repr__(self) -> str:
        pair = ", cta_group::2" if self.cta_group == 2 else ""
        return (f"ScaleFactorTensor(kind::{self.kind}, {self.rows} rows, scale_vec::{self.scale_vec}X, {self.mmas} "
                f"MMA(s){pair}: {self.tensor!r})")


def scale_factor_tensor(kind: str, rows: int, mmas: int = 1, scale_vec: int | None = None,
                        columns: int | None = None, cta_group: int = 1) -> ScaleFactorTensor:
    """The TMEM tensor the SFs of ``mmas`` consecutive block-scaled MMAs (``kind``, ``rows`` = M for SFA or N for
    SFB, ``scale_vec`` 1/2/4X) occupy where the MMA reads them, replicated to the four lane quadrants. For a
    ``cta_group=2`` MMA (M 256) it is one CTA's: SFA of its 128 rows of A, SFB of all N columns, placed as for
    cta_group::1 in each CTA (CuTe's 4x1 SF duplication; docs/mma.md)."""
    k = MMA_KINDS.get(kind) if isinstance(kind, str) else None
    if k is None or not k.block_scaled:
        raise PlanError(f"scale factors are for the block-scaled kinds "
                        f"({', '.join(n for n, v in MMA_KINDS.items() if v.block_scaled)}), not {kind!r}")
    rows, mmas = as_int(rows, "scale_factor_tensor: rows"), as_int(mmas, "scale_factor_tensor: mmas")
    cta_group = check_cta_group(cta_group)
    vs = k.scale_vecs[0] if scale_vec is None else as_int(scale_vec, "scale_factor_tensor: scale_vec")
    if vs not in k.scale_vecs:
        raise PlanError(f"kind::{kind} takes scale_vec {k.scale_vecs}, not {vs}")
    if rows <= 0 or rows % QUADRANT_LANES or rows > 256:
        raise PlanError(f"scale factors for {rows} rows: a multiple of 32 up to 256 (M or N of one MMA)")
    slots = mmas * vs
    if mmas < 1 or (slots > _BYTES and slots % _BYTES):
        raise PlanError(f"{mmas} MMA(s) of scale_vec::{vs}X fill {slots} SF bytes a row; more than one cell takes "
                        f"whole cells of 4")
    width = rows // QUADRANT_LANES * -(-slots // _BYTES)
    cols = columns if columns is not None else max(32, 1 << (width - 1).bit_length())
    tensor = make_tmem_tensor(u8, scale_factor_layout(rows, slots), replica=SF_REPLICA, columns=cols)
    return ScaleFactorTensor(tensor, kind, rows, vs, mmas, cta_group)


def scale_factor_smem(sf: ScaleFactorTensor, stages: int | None = None) -> SmemTensor:
    """The shared-memory staging of ``sf`` that tcgen05.cp ``32x128b.warpx4`` copies into place (one 16-byte line
    per lane): units of 32 lines, row ``32 i + l`` of a unit's 128 rows at byte ``16 l + 4 i`` with its SF cell's 4
    slots inside, units for each 128 rows, then for each further cell of slots, then ``stages`` whole copies
    (a ``(rows, slots[, stages])`` u8 tensor). It is the blocked SF layout of CUTLASS and cuBLAS, so a packed global
    SF array fills a stage with one flat copy."""
    if not isinstance(sf, ScaleFactorTensor):
        raise TypeError(f"scale_factor_smem: expected a ScaleFactorTensor (scale_factor_tensor), got {sf!r}")
    per_line = UNIT_BYTES // _BYTES                      # row groups of 32 sharing a lane's line
    unit = QUADRANT_LANES * UNIT_BYTES
    if sf.rows % (QUADRANT_LANES * per_line):
        raise PlanError(f"scale_factor_smem: {sf.rows} rows are not whole {QUADRANT_LANES * per_line}-row units")
    units, slots = sf.rows // (QUADRANT_LANES * per_line), sf.mmas * sf.scale_vec
    if slots % _BYTES:
        raise PlanError(f"scale_factor_smem: {sf!r} has {slots} SF slot(s) a row; tcgen05.cp moves whole {_BYTES}-slot "
                        f"cells, so stage the SFs of MMAs whose slots fill them (mmas * scale_vec a multiple of "
                        f"{_BYTES})")
    rows = Layout((QUADRANT_LANES, per_line, units), (UNIT_BYTES, _BYTES, unit))
    cells = Layout(slots, 1) if slots == _BYTES else Layout((_BYTES, slots // _BYTES), (1, unit * units))
    modes = [rows, cells] + ([Layout(as_int(stages, "scale_factor_smem: stages"), unit * units * slots // _BYTES)]
                             if stages is not None else [])
    return make_smem_tensor(u8, Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes)))


def _positions(t: TmemTensor) -> np.ndarray:
    """(coordinates, replicas, 2): every coordinate's (lane, column element) in every replica."""
    lanes = t.lane_offset + layout_values(t.layout, "TLane")
    cols = t.col_offset + layout_values(t.layout, "TCol")
    reps = np.zeros(1, np.int64) if t.replica is None else layout_values(t.replica, "TLane")
    return np.stack(np.broadcast_arrays(lanes[:, None] + reps[None, :], cols[:, None] + 0 * reps[None, :]), axis=-1)


def check_scale_factor_copy(plan: Tcgen05CpPlan, sf: ScaleFactorTensor) -> None:
    """Every SF the copy writes lands where ``tcgen05.mma ... block_scale`` reads it: the plan's destination, as
    placed (its offset is the SF tensor's base), is ``sf``'s placement coordinate for coordinate and replica for
    replica. Refuses naming the first (row, k-block slot, byte) the copy puts elsewhere."""
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"check_scale_factor_copy: expected a Tcgen05CpPlan, got {type(plan).__name__}")
    if not isinstance(sf, ScaleFactorTensor):
        raise TypeError(f"check_scale_factor_copy: expected a ScaleFactorTensor (scale_factor_tensor), got {sf!r}")
    dst = plan.dst
    if dst.bits != 8 or dst.layout.size() != sf.tensor.layout.size():
        raise PlanError(f"the copy writes {dst.layout.size()} {dst.dtype.name} elements; {sf!r} holds "
                        f"{sf.tensor.layout.size()} one-byte SFs")
    placed = attrs.evolve(sf.tensor, offset=dst.offset)
    have, want = _positions(dst), _positions(placed)
    key = lambda p: np.sort(p[..., 0] * (1 << 20) + p[..., 1], axis=1)    # noqa: E731  (replica order is free)
    bad = np.argwhere(key(have) != key(want))
    if bad.size:
        i = int(bad[0, 0])
        row, slot = idx2crd(i, sf.tensor.shape)
        r = row if isinstance(row, int) else row[0] + QUADRANT_LANES * row[1]
        s = slot if isinstance(slot, int) else slot[0] + _BYTES * slot[1]
        (hl, hc), (wl, wc) = have[i, 0], want[i, 0]
        raise PlanError(f"scale factor of row {r}, k-block slot {s}: the copy writes lane {hl} column {hc // _BYTES} "
                        f"byte {hc % _BYTES}, but kind::{sf.kind} reads it at lane {wl} column {wc // _BYTES} byte "
                        f"{wc % _BYTES} (SF id {sf.sf_id(s // sf.scale_vec)})")
