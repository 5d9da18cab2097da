"""``make_tmem_copy(..., fragment=)``: the tcgen05.ld/st instructions that realise a register layout the caller
requires (as TVM's and Triton's users give one), found register run by register run, or a refusal naming the first
(thread, register) no shape puts where the fragment wants it."""
from __future__ import annotations

import numpy as np

from ...arch.sm100.tcgen05_ldst import LDST_SHAPES, SHAPE_ORDER, LdStOp
from ...arch.sm100.tmem import LANE_SHIFT, QUADRANT_LANES
from ...errors import PlanError
from ...int_tuple import idx2crd
from ...layout import Layout
from ...tensor.values import layout_values
from .cells import QuadrantBlock, TensorCells
from .plan import Tcgen05LdStPlan, TmemLdStInstruction
from ...atoms.tcgen05_ldst import atom_cells, ldst_atom
from ..protocol import Rejection

__all__ = ["match_fragment"]


def _fragment_table(fragment, threads: int) -> np.ndarray:
    if not isinstance(fragment, Layout):
        raise TypeError(f"make_tmem_copy: fragment must be a Layout (thread, value) -> coordinate index, got "
                        f"{fragment!r}")
    if fragment.rank() != 2 or fragment[0].size() != threads:
        raise PlanError(f"make_tmem_copy: fragment {fragment!r} must be (threads, values) with {threads} threads "
                        f"(32 per warp)")
    values = fragment[1].size()
    return layout_values(fragment).reshape(values, threads).T


def _register_cells(cells: TensorCells, table: np.ndarray, vpr: int, pack: bool, warp: int) -> np.ndarray:
    """``(32, registers, 2)``: the first cell each register of warp ``warp`` must move, after checking that the
    values of one register are one register's bits."""
    tensor = cells.tensor
    lanes = tensor.lane_offset + layout_values(tensor.layout, "TLane")
    cols = tensor.col_offset + layout_values(tensor.layout, "TCol")
    reps = [0] if tensor.replica is None else layout_values(tensor.replica, "TLane").tolist()
    quadrant = warp % 4
    rep = next((r for r in reps if ((lanes + r) // QUADRANT_LANES == quadrant).all()), reps[0])
    bits = tensor.bits
    rows = table[32 * warp:32 * warp + 32]
    if (rows < 0).any() or (rows >= lanes.size).any():
        raise PlanError(f"fragment values of warp {warp} name coordinates outside the tensor's {lanes.size}")
    lane, col = (lanes + rep)[rows], (cols * bits // 32)[rows]
    slot = ((cols * bits) % 32 // bits)[rows]
    lane = lane.reshape(32, -1, vpr)
    col, slot = col.reshape(32, -1, vpr), slot.reshape(32, -1, vpr)
    want_col = col[..., :1] + (np.arange(vpr) if pack else 0)
    want_slot = 0 if pack else np.arange(vpr)
    bad = (lane != lane[..., :1]) | (col != want_col) | (slot != want_slot)
    if bad.any():
        t, r, _ = np.argwhere(bad)[0]
        crds = [idx2crd(int(i), tensor.shape) for i in rows[t, r * vpr:(r + 1) * vpr]]
        raise PlanError(f"fragment register {r} of thread {32 * warp + t} holds coordinates {crds}, which are not "
                        f"one register's {vpr} values (the {'low halves of two adjacent cells' if pack else 'bits of one cell, low first'})")
    return np.stack([lane[..., 0], col[..., 0]], axis=-1)


def _try(atom, want: np.ndarray, r0: int):
    """The instruction ``atom`` makes of registers ``r0..`` of ``want`` (32, R, 2), or (None, first mismatch)."""
    n = atom.registers
    offs = atom_cells(atom)[:, :, 0, :]            # first cell of each register
    got = want[:, r0:r0 + n]
    base = got[0, 0] - offs[0, 0]
    expect = base + offs
    half = None
    if atom.half_split:
        delta = got[16, 0] - base - offs[16, 0]
        expect[16:] += delta
        if delta[0] < 0 or delta[1] < 0:
            return None, (16, r0)
        half = (int(delta[0]) << LANE_SHIFT) + int(delta[1])
    diff = np.argwhere((expect != got).any(axis=-1))
    if diff.size:
        return None, tuple(int(x) for x in diff[0])
    lane_in_quadrant = int(base[0]) % QUADRANT_LANES
    if lane_in_quadrant % atom.lanes or (atom.lanes == 32 and lane_in_quadrant):
        return None, (0, r0)
    return (int(base[0]), int(base[1]), half), None


def match_fragment(cells: TensorCells, op: LdStOp, warps: int, cap: int, pack: bool, block: QuadrantBlock,
                   groups: int, fragment: Layout) -> Tcgen05LdStPlan:
    table = _fragment_table(fragment, 32 * warps)
    vpr = 2 if pack else cells.per_cell
    if table.shape[1] % vpr:
        raise PlanError(f"fragment has {table.shape[1]} values per thread, not a multiple of the {vpr} a register holds")
    want = _register_cells(cells, table, vpr, pack, 0)
    registers = want.shape[1]
    base_lane, base_col = 0, block.column           # warp 0 moves quadrant 0 from the block's first column
    per_warp, r0 = [], 0
    while r0 < registers:
        found, first_miss = None, None
        for shape in SHAPE_ORDER:
            for num in reversed(LDST_SHAPES[shape].nums()):
                atom = ldst_atom(op, shape, num, pack)
                if atom.registers > cap or r0 + atom.registers > registers:
                    continue
                hit, miss = _try(atom, want, r0)
                if hit is not None:
                    found = (atom, hit)
                    break
                first_miss = first_miss or (atom, miss)
            if found:
                break
        if found is None:
            if first_miss is None:
                raise PlanError(f"no tcgen05.{op} instruction fits {registers - r0} registers from register {r0} "
                                f"within max_registers={cap}")
            atom, (t, j) = first_miss
            r = r0 + j if j < registers - r0 else r0
            lane, col = want[t, r]
            raise PlanError(f"no tcgen05.{op} instruction realises the fragment from register {r0}: register {r} of "
                            f"thread {t} must move lane {lane}, column {col}, where {atom.ptx} (the widest tried) puts "
                            f"something else (registers {r0}.. under a cap of {cap})")
        atom, (lane, col, half) = found
        per_warp.append(TmemLdStInstruction(atom, lane - base_lane, col - base_col, r0, half))
        r0 += atom.registers
    plan = Tcgen05LdStPlan(op, cells.tensor, warps, tuple(per_warp), block, groups, cap, pack, cells.per_cell,
                        (Rejection("fragment", "the instructions realise the given fragment"),))
    mismatch = np.argwhere(plan.table != table)
    if mismatch.size:
        t, v = (int(x) for x in mismatch[0])
        raise PlanError(f"the fragment's warp {t // 32} does not move its quadrant as warp 0 does: thread {t} value {v} "
                        f"wants coordinate {idx2crd(int(table[t, v]), cells.tensor.shape)}, the instructions put "
                        f"{idx2crd(int(plan.table[t, v]), cells.tensor.shape)} there")
    return plan
