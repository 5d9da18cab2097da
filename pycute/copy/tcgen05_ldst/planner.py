"""make_tmem_copy: plan TMEM <-> register moves (``tcgen05.ld`` / ``tcgen05.st``), the copy family's tmem-local
variant, with the fewest instructions under a register cap.

  1. the tensor's cells, one rectangle per lane quadrant (``tmem_cells``); warp ``w`` reaches only quadrant
     ``w % 4`` (PTX #tcgen05-tensor-memory-ld-st-access-restrictions), so every occupied quadrant needs a warp and
     every warp a quadrant; with more than four warps the warps of one quadrant split its columns;
  2. per shape, the block's columns as powers-of-two ``.num`` (PTX Table 49) with at most ``max_registers`` (and
     128) registers per instruction, largest first; the shape with the fewest instructions wins (ties: 32x32b, the
     16-lane shapes widest first, then .16x32bx2);
  3. or, with ``fragment=``, the instructions that realise exactly that register layout, matched register run by
     register run, refusing at the first (thread, register) no shape puts where the fragment wants.
"""
from __future__ import annotations

import attrs

from ...arch.sm100.tcgen05_ldst import (HALF_SPLIT_SHAPE, LDST_NUMS, LDST_SHAPES, MAX_REGISTERS, PACK_BITS, SHAPE_ORDER,
                                        LdStOp)
from ...arch.sm100.tmem import CELL_BITS, LANE_SHIFT, QUADRANT_LANES
from ...atoms.tcgen05_ldst import ldst_atom
from ...basis import basis_get
from ...errors import PlanError
from ...int_tuple import as_int
from ...layout import Layout
from ..protocol import Reject, Rejection
from ...tensor.tmem import TmemTensor
from .cells import QuadrantBlock, TensorCells, tensor_cells
from .match import match_fragment
from .plan import ColumnStage, Tcgen05LdStPlan, TmemLdStInstruction

__all__ = ["make_tmem_copy"]

def _split(units: int, per_x1: int, cap: int, max_num: int, num: int | None) -> list:
    """``.num`` values, largest first, covering ``units`` ``.x1`` blocks with ``num * per_x1 <= cap`` registers."""
    if num is not None:
        if num * per_x1 > cap:
            raise Reject(f".x{num} moves {num * per_x1} registers per thread, above the cap of {cap}")
        if units % num:
            raise Reject(f"{units} .x1 blocks are not a multiple of .x{num}")
        return [num] * (units // num)
    biggest = min(max_num, cap // per_x1)
    if biggest < 1:
        raise Reject(f"one .x1 moves {per_x1} registers per thread, above the register cap of {cap}")
    biggest = 1 << (biggest.bit_length() - 1)
    out = [biggest] * (units // biggest)
    rest = units % biggest
    out += [1 << k for k in range(rest.bit_length() - 1, -1, -1) if rest >> k & 1]
    return out


@attrs.frozen
class _Layout:
    """How one shape covers a warp's block: the lane bases of its passes, the columns one ``.x1`` covers, the
    ``.num`` of each instruction of a pass, and ``.16x32bx2``'s half offset (the same for every instruction, so
    that the fragment stays a layout)."""

    shape: str
    lanes: tuple[int, ...]
    span: int
    nums: tuple[int, ...]
    half: int | None = None

    @property
    def count(self) -> int:
        return len(self.lanes) * len(self.nums)


def _layout(shape: str, block: QuadrantBlock, width: int, pack: bool, cap: int, num: int | None) -> _Layout:
    """How ``shape`` covers ``width`` columns of the block, or ``Reject`` naming why it cannot."""
    form = LDST_SHAPES[shape]
    span = form.columns * (2 if pack else 1)               # columns one .x1 covers (per half)
    half, cover = None, width
    lanes: tuple[int, ...]
    if shape == "32x32b":
        if block.lanes != QUADRANT_LANES:
            raise Reject("32x32b reaches all 32 lanes of the quadrant; the tensor holds 16 of them")
        lanes = (0,)
    elif shape == HALF_SPLIT_SHAPE and block.lanes == QUADRANT_LANES:
        lanes, half = (0,), 16 << LANE_SHIFT               # threads 16-31 take lanes 16-31 of the same columns
    elif shape == HALF_SPLIT_SHAPE:
        if width % 2:
            raise Reject(f"{width} columns do not split into the two halves .16x32bx2 moves")
        lanes, half, cover = (block.lane,), width // 2, width // 2   # threads 16-31 take the right half
    elif block.lanes == QUADRANT_LANES:
        lanes = (0, 16)                                    # a 16-lane shape at both lane bases
    else:
        lanes = (block.lane,)
    if cover % span:
        raise Reject(f"{cover} columns are not a multiple of the {span} one .x1 covers")
    return _Layout(shape, lanes, span, tuple(_split(cover // span, form.registers, cap, form.max_num, num)), half)


def _instructions(op: str, cover: _Layout, pack: bool) -> tuple:
    """One warp's instructions (quadrant-local lanes, columns from the block's first)."""
    out, reg = [], 0
    for lane in cover.lanes:
        column = 0
        for n in cover.nums:
            atom = ldst_atom(op, cover.shape, n, pack)
            out.append(TmemLdStInstruction(atom, lane, column, reg, cover.half))
            reg += atom.registers
            column += n * cover.span
    return tuple(out)


def _check_request(tensor, op, warps, max_registers, shape, num, pack):
    if not isinstance(tensor, TmemTensor):
        raise TypeError(f"make_tmem_copy: expected a TMEM tensor (make_tmem_tensor, mma_accumulator, "
                        f"TmemAllocation.add), got {tensor!r}")
    if op not in ("ld", "st"):
        raise PlanError(f"make_tmem_copy: op is 'ld' (TMEM -> registers) or 'st' (registers -> TMEM), got {op!r}")
    warps, cap = as_int(warps, "make_tmem_copy: warps"), as_int(max_registers, "make_tmem_copy: max_registers")
    if warps < 1 or (warps > 4 and warps % 4):
        raise PlanError(f"make_tmem_copy: warps={warps}: 1 to 4 warps, or a multiple of 4 (warpgroups)")
    if not 1 <= cap <= MAX_REGISTERS:
        raise PlanError(f"make_tmem_copy: max_registers={cap} is outside [1, {MAX_REGISTERS}] (tcgen05.ld/st moves at "
                        f"most {MAX_REGISTERS} registers per thread)")
    if shape is not None and shape not in LDST_SHAPES:
        raise PlanError(f"make_tmem_copy: unknown shape {shape!r}; one of {', '.join(LDST_SHAPES)}")
    if num is not None:
        num = as_int(num, "make_tmem_copy: num")
        if num not in LDST_NUMS:
            raise PlanError(f"make_tmem_copy: num={num} is not a legal .num: a power of two from 1 to 128 (PTX Table 49)")
    if pack is not None and not isinstance(pack, bool):
        raise TypeError(f"make_tmem_copy: pack must be True, False or None, got {pack!r}")
    return warps, cap, num


def _column_stages(tensor: TmemTensor) -> tuple[ColumnStage, ...]:
    """The tensor's run-time indices as whole 32-bit column steps (a lane step would move rows between warps)."""
    out = []
    for d in tensor.dynamic:
        lanes, elems = basis_get(d.stride, "TLane"), basis_get(d.stride, "TCol")
        if lanes or (elems * tensor.bits) % CELL_BITS:
            raise PlanError(f"make_tmem_copy: run-time index {d.name!r} moves the tensor by {d.stride!r}; a "
                            f"tcgen05.ld/st plan takes run-time column steps of whole 32-bit columns (a lane step "
                            f"would move rows to another warp's quadrant)")
        out.append(ColumnStage(d.name, d.extent, elems * tensor.bits // CELL_BITS))
    return tuple(out)


def _pack(cells: TensorCells, pack: bool | None, op: str) -> bool:
    word = "pack::16b" if op == "ld" else "unpack::16b"
    alone = cells.per_cell == 1 and not cells.dense
    if pack is None:
        return alone
    if pack and cells.tensor.bits != PACK_BITS:
        raise PlanError(f".{word} moves 16-bit values; the tensor holds {cells.tensor.dtype.name} "
                        f"({cells.tensor.bits} bits)")
    if pack and not alone:
        raise PlanError(f".{word} takes the low halves of two cells; this tensor keeps two 16-bit values per cell "
                        f"(load it without pack: one register holds both)")
    return pack


def _warp_blocks(cells: TensorCells, warps: int) -> tuple[QuadrantBlock, int]:
    quads = [b.quadrant for b in cells.blocks]
    serving = sorted({w % 4 for w in range(warps)})
    for q in quads:
        if q not in serving:
            raise PlanError(f"lanes {32 * q}-{32 * q + 31} (quadrant {q}) hold the tensor but no warp reaches them: "
                            f"warp w accesses lanes 32*(w%4)..+31 only, and warps={warps} serve quadrants {serving}")
    for q in serving:
        if q not in quads:
            raise PlanError(f"warp(s) of quadrant {q} would move nothing: the tensor occupies lane quadrants {quads}; "
                            f"plan it with warps={len(quads)} (or place the tensor in every quadrant)")
    first = cells.blocks[0]
    for b in cells.blocks[1:]:
        if (b.lane, b.lanes, b.column, b.width) != (first.lane, first.lanes, first.column, first.width):
            raise PlanError(f"quadrants {first.quadrant} and {b.quadrant} hold different blocks ({first} vs {b}); the "
                            f"warps of one tcgen05.ld/st plan move the same block of their own quadrant")
    groups = max(1, warps // 4)
    if first.width % groups:
        raise PlanError(f"{warps} warps split each quadrant's {first.width} columns {groups} ways; they do not divide")
    return first, groups


def make_tmem_copy(tensor: TmemTensor, op: LdStOp = "ld", warps: int = 4, max_registers: int = 32,
                   shape: str | None = None, num: int | None = None, pack: bool | None = None,
                   fragment: Layout | None = None) -> Tcgen05LdStPlan:
    """Plan ``tcgen05.ld`` (``op="ld"``: TMEM -> registers) or ``tcgen05.st`` of a TMEM tensor by ``warps`` warps
    (warp w moves lane quadrant w % 4), each instruction moving at most ``max_registers`` registers per thread.

    ``shape`` / ``num`` force a shape or ``.num``; ``pack`` (default: for 16-bit values alone in their cells)
    selects ``.pack::16b`` / ``.unpack::16b``; ``fragment`` (a ``(thread, value) -> coordinate index`` layout) asks
    for exactly that register layout. Raises ``PlanError`` naming the rule and values.
    """
    warps, cap, num = _check_request(tensor, op, warps, max_registers, shape, num, pack)
    if tensor.dynamic:
        stages = _column_stages(tensor)
        last = make_tmem_copy(tensor.at(**{d.name: d.extent - 1 for d in tensor.dynamic}), op, warps, max_registers,
                              shape, num, pack, fragment)     # the last value fits its allocation too
        plan = make_tmem_copy(tensor.at(**{d.name: 0 for d in tensor.dynamic}), op, warps, max_registers, shape,
                              num, pack, fragment)
        if last.per_warp != plan.per_warp:
            raise PlanError(f"make_tmem_copy: the run-time indices' values are planned differently ({tensor!r})")
        return attrs.evolve(plan, stages=stages)
    cells = tensor_cells(tensor, f"make_tmem_copy({op})")
    packed = _pack(cells, pack, op)
    block, groups = _warp_blocks(cells, warps)
    if tensor.columns is not None and block.column + block.width > tensor.columns:
        raise PlanError(f"the tensor's columns {block.column}..{block.column + block.width - 1} run past its "
                        f"{tensor.columns}-column allocation")
    width = block.width // groups
    if fragment is not None:
        return match_fragment(cells, op, warps, cap, packed, block, groups, fragment)
    rejected, covers = [], []
    for name in ([shape] if shape is not None else SHAPE_ORDER):
        try:
            covers.append(_layout(name, block, width, packed, cap, num))
        except Reject as why:
            rejected.append(Rejection(name, str(why)))
    if not covers:
        reasons = "\n".join(f"  {n:<9} {r}" for n, r in rejected)
        raise PlanError(f"no tcgen05.{op} shape moves this tensor:\n{reasons}\n  tensor: {tensor!r}")
    best = min(covers, key=lambda c: c.count)          # the first of the fewest: SHAPE_ORDER breaks ties
    others = tuple(rejected) + tuple(Rejection(c.shape, f"valid, {c.count} instructions") for c in covers
                                     if c is not best)
    return Tcgen05LdStPlan(op, tensor, warps, _instructions(op, best, packed), block, groups, cap, packed,
                        cells.per_cell, others)
