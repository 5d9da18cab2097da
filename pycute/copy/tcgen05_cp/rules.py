"""The rules a candidate atom must meet, one function each, in the order the planner checks them:

  1. replica: the TMEM tensor's multicast replica is the form's (``replica_mismatch``);
  2. row: a row's ``bits`` lie in consecutive TMEM columns and in whole 16-byte shared-memory units; the two
     units of an unswizzled 256-bit row may sit apart (that distance is the LBO) (``row_units``);
  3. lanes: the rows follow the form's row -> lane pattern (``match_lanes``);
  4. core groups: rows come in 8-row groups whose row pitch selects the swizzle mode, which must be the buffer's;
     the groups' distance is the SBO (``core_groups``), and LBO / SBO fit the descriptor (``leading_offset``);
  5. middle: every remaining mode steps shared memory by 16-byte multiples and TMEM columns by 128 bits
     (``middle_steps``);
  6. bounds: the copy stays inside the 128 lanes and the allocation (``check_bounds``);
  7. start addresses: each instruction starts 16-byte aligned, and swizzled rows stay in their swizzle period
     (``issue_order``).

A broken rule raises ``Reject``; the planner then tries the next (narrower) form.
"""
from __future__ import annotations

import attrs

from ...arch.sm100.descriptor import LBO, SBO
from ...arch.sm100.swizzle_modes import UNIT_BITS, UNIT_BYTES, SwizzleMode
from ...arch.sm100.tmem import CELL_BITS, LANES, tmem_address
from ...atoms.tcgen05_cp import Tcgen05CpAtom
from ...basis import basis_get
from ...int_tuple import product
from ...layout import Layout, _mk, merge_modes
from .joint import JointMode, Prepared
from .plan import CpInstruction
from ..protocol import Reject

__all__ = ["Reject", "Step", "RowUnits", "CoreGroups", "replica_mismatch", "row_units", "match_lanes", "core_groups",
           "leading_offset", "middle_steps", "check_bounds", "issue_order"]


@attrs.frozen
class Step:
    """A partition mode: ``extent`` coordinates stepping shared memory by ``smem`` bytes, TMEM by ``lane`` lanes
    and ``col`` column elements."""

    extent: int
    smem: int
    lane: int = 0
    col: int = 0


@attrs.frozen
class RowUnits:
    """Rule 2's result: the row's column modes ``(extent, smem elements)``, the column modes left for the middle,
    and the bytes between the row's 16-byte units (16 when adjacent or when there is one)."""

    taken: tuple[tuple[int, int], ...]
    rest: tuple[tuple[int, int], ...]
    unit_gap: int


@attrs.frozen
class CoreGroups:
    """Rule 4's result: the swizzle mode, the row pitch inside an 8-row group, and the groups' distance (SBO)."""

    mode: SwizzleMode
    pitch: int
    sbo: int


def _to_bytes(elements: int, bits: int, what: str) -> int:
    if (elements * bits) % 8:
        raise Reject(f"{what} of {elements} elements is not a whole number of bytes")
    return elements * bits // 8


# -- rule 1 ---------------------------------------------------------------------------------------------------
def replica_mismatch(p: Prepared, atom: Tcgen05CpAtom) -> Reject | None:
    """The rule returned rather than raised: inference tries every form, and most differ from the copy here. Forms
    write their replica coalesced, ``prepare`` coalesces the tensor's, so equal maps compare equal."""
    return None if atom.replica == p.replica else _ReplicaMismatch(atom, p.dst.replica)


class _ReplicaMismatch(Reject):
    """Rule 1's reason, worded only when read."""

    def __init__(self, atom: Tcgen05CpAtom, declared: Layout | None):
        Exception.__init__(self, atom.name)
        self.atom, self.declared = atom, declared

    def __str__(self) -> str:
        want, have = self.atom.replica, self.declared
        does = "does not replicate" if want is None else f"replicates at {want!r}"
        declares = "declares no replica" if have is None else f"declares replica {have!r}"
        return f"replica mismatch: {self.atom.name} {does}, the TMEM tensor {declares}"


# -- rule 2 ---------------------------------------------------------------------------------------------------
def _take_columns(col_modes: tuple, count: int) -> tuple[list, list]:
    """Split off the first ``count`` elements along TCol, which must be contiguous columns from stride 1."""
    taken, rest = [], []
    need, expect = count, 1
    for m in col_modes:
        if need == 1:
            rest.append(m)
            continue
        if m.step != expect:
            raise Reject(f"a row's {count} elements are not in consecutive TMEM columns (TCol steps "
                         f"{[c.step for c in col_modes]} elements, {count} contiguous needed)")
        if m.extent <= need:
            if need % m.extent:
                raise Reject(f"a TMEM column run of {m.extent} elements does not divide a row of {count}")
            taken.append((m.extent, m.smem))
            need //= m.extent
            expect = m.step * m.extent
        else:
            if m.extent % need:
                raise Reject(f"a TMEM column run of {m.extent} elements is not a multiple of a row of {count}")
            taken.append((need, m.smem))
            rest.append(JointMode(m.extent // need, m.smem * need, m.step * need))
            need = 1
    if need != 1:
        raise Reject(f"the region has {count // need} contiguous TMEM column elements per lane; a row needs {count}")
    return taken, rest


def row_units(p: Prepared, atom: Tcgen05CpAtom) -> RowUnits:
    bits = p.bits
    per_row, unit = atom.bits // bits, UNIT_BITS // bits
    taken, rest = _take_columns(p.col_modes, per_row)
    first = taken[0][1] if taken else 1
    if first != 1:
        raise Reject("tcgen05.cp does not transpose: consecutive elements of a row are {first} elements apart in "
                     "shared memory, not 1; the source must be K-major (each row's elements contiguous in 16-byte "
                     "units)", first=first)
    shape, stride = merge_modes(tuple(n for n, _ in taken), tuple(s for _, s in taken))   # the row, coalesced
    whole_row = shape == per_row and stride == 1
    if atom.units == 1 or whole_row:
        if not whole_row:
            raise Reject(f"a row's shared-memory elements {_mk(shape, stride)!r} are not one contiguous 16-byte "
                         f"unit")
        return RowUnits(tuple(taken), tuple(rest), UNIT_BYTES)
    if not (type(shape) is tuple and shape == (unit, 2) and stride[0] == 1):
        raise Reject(f"a row's shared-memory elements {_mk(shape, stride)!r} are not whole 16-byte units")
    gap = _to_bytes(stride[1], bits, "the distance between a row's 16-byte units")
    return RowUnits(tuple(taken), tuple(rest), gap)


# -- rule 3 ---------------------------------------------------------------------------------------------------
def match_lanes(p: Prepared, atom: Tcgen05CpAtom) -> tuple[tuple, tuple]:
    """The row steps realising the form's lane pattern (in row order, smem in bytes) and the lane modes left.

    A pattern mode (``p`` rows at lane stride ``q``) may be covered by a run of lane modes whose lane strides
    continue one another (their shared-memory strides need not).
    """
    pool = list(p.lane_modes)
    pattern = atom.lane_pattern        # written coalesced (arch.sm100.tcgen05_cp)
    rows = []
    for extent, stride in zip(pattern.shape if isinstance(pattern.shape, tuple) else (pattern.shape,),
                              pattern.stride if isinstance(pattern.stride, tuple) else (pattern.stride,)):
        need, at = extent, basis_get(stride, "TLane")
        while need > 1:
            for k, m in enumerate(pool):
                if m.step <= at < m.extent * m.step and at % m.step == 0:
                    break
            else:
                have = ", ".join(f"{m.extent}x{m.step}" for m in p.lane_modes) or "none"
                raise Reject(f"TMEM lanes do not match the lane pattern {pattern!r}: the region's lane modes are "
                             f"[{have}] (extent x lane stride); {need} rows at lane stride {at} are missing")
            lo = at // m.step
            avail = m.extent // lo
            if m.extent % lo or (avail > need and avail % need) or (avail < need and need % avail):
                raise Reject(f"TMEM lanes step {m.step} x {m.extent}, which does not tile the lane pattern "
                             f"{pattern!r} ({need} rows at lane stride {at} needed)")
            take = min(avail, need)
            pieces = []
            if lo > 1:
                pieces.append(JointMode(lo, m.smem, m.step))
            if avail > take:
                pieces.append(JointMode(avail // take, m.smem * lo * take, at * take))
            pool[k:k + 1] = pieces
            rows.append(Step(take, _to_bytes(m.smem * lo, p.bits, "a row step"), lane=at))
            need //= take
            at *= take
    return tuple(rows), tuple(sorted(pool, key=lambda m: m.step))


# -- rule 4 ---------------------------------------------------------------------------------------------------
def _spacing(rows: tuple, count: int, every: int, what: str) -> int:
    """The one shared-memory distance between rows ``0, every, 2*every, ...`` (``count`` of them), or Reject. The
    row steps are the rows' mixed radix, first fastest; their extents are powers of two (``match_lanes`` cuts them
    from the forms' power-of-two patterns), so ``every`` and ``count`` fall on step boundaries or split a step."""
    skip, need = every, count
    extents, strides = [], []
    for s in rows:
        n, d = s.extent, s.smem
        if skip > 1:
            if n <= skip:
                skip //= n
                continue
            n, d, skip = n // skip, d * skip, 1
        if need == 1:
            break
        take = min(n, need)
        extents.append(take)
        strides.append(d)
        need //= take
    shape, stride = merge_modes(extents, strides)
    if type(shape) is tuple:
        raise Reject(f"{what} is {_mk(shape, stride)!r} (rows -> shared-memory bytes), not a single stride")
    return stride


def core_groups(p: Prepared, atom: Tcgen05CpAtom, rows: tuple) -> CoreGroups:
    if atom.rows >= 8:
        pitch = _spacing(rows, 8, 1, "the row spacing inside an 8-row core group")
        sbo = _spacing(rows, atom.rows // 8, 8, "the spacing of 8-row core groups")
    else:
        pitch = _spacing(rows, atom.rows, 1, "the row spacing of the 4-row group")
        sbo = 0
    if pitch not in (16, 32, 64, 128):
        raise Reject(f"rows are {pitch} B apart in shared memory; a core group needs 16 B (no swizzle) or "
                     f"32/64/128 B (the swizzled row pitch)")
    mode = SwizzleMode.from_row_pitch(pitch)
    if mode is not p.buffer_mode:
        buf = f"swizzled {p.src.swizzle!r} ({p.buffer_mode.name})" if p.buffer_mode is not SwizzleMode.NONE \
            else "not swizzled"
        raise Reject(f"swizzle mismatch: rows {pitch} B apart select {mode.name}, but the buffer is {buf}")
    if sbo % UNIT_BYTES:
        raise Reject(f"the 8-row core-group stride (SBO) {sbo} B is not 16B-aligned")
    if mode is not SwizzleMode.NONE and atom.rows > 8 and sbo % mode.period:
        raise Reject(f"core groups are {sbo} B apart, not a multiple of the {mode.period} B {mode.name} period")
    return CoreGroups(mode, pitch, sbo)


def leading_offset(atom: Tcgen05CpAtom, row: RowUnits, groups: CoreGroups) -> int:
    """The LBO: the distance of a 256-bit row's two units without a swizzle; 16 (unused, "assumed 1") with one."""
    if groups.mode is SwizzleMode.NONE:
        lbo = row.unit_gap if atom.units == 2 else 0
        if lbo % UNIT_BYTES:
            raise Reject(f"the two 16-byte units of a row are {lbo} B apart (LBO), not 16B-aligned")
    else:
        if atom.units == 2 and row.unit_gap != UNIT_BYTES:
            raise Reject(f"the two 16-byte units of a 256-bit row are {row.unit_gap} B apart; under a swizzle they "
                         f"must be adjacent")
        lbo = UNIT_BYTES
    if lbo >= LBO.limit or groups.sbo >= SBO.limit:
        raise Reject(f"LBO {lbo} B / SBO {groups.sbo} B do not fit the descriptor's 18-bit byte fields")
    return lbo


# -- rule 5 ---------------------------------------------------------------------------------------------------
def middle_steps(p: Prepared, lane_rest: tuple, col_rest: tuple) -> tuple:
    """Which instruction a coordinate belongs to; lane steps tile regions taller than one atom."""
    steps = [Step(m.extent, _to_bytes(m.smem, p.bits, "a middle step"), lane=m.step) for m in lane_rest] + \
            [Step(m.extent, _to_bytes(m.smem, p.bits, "a middle step"), col=m.step) for m in col_rest]
    for s in steps:
        if s.smem % UNIT_BYTES:
            raise Reject(f"a middle step of {s.smem} B in shared memory is not 16B-aligned")
        if (s.col * p.bits) % UNIT_BITS:
            raise Reject(f"a middle step of {s.col} TMEM column elements is not provably 128b-aligned")
    return tuple(steps)


# -- rule 6 ---------------------------------------------------------------------------------------------------
def check_bounds(p: Prepared, atom: Tcgen05CpAtom, middle: tuple) -> None:
    max_lane = p.lane_base + sum((s.extent - 1) * s.lane for s in middle) + atom.max_lane
    if max_lane >= LANES:
        raise Reject(f"overflows the 128-lane space: lane offset {p.lane_base} plus the copy's lanes reach lane "
                     f"{max_lane}")
    max_col = p.col_base + sum((s.extent - 1) * s.col * p.bits // CELL_BITS for s in middle) + atom.columns
    if max_col > p.dst.columns:
        raise Reject(f"columns up to {max_col} exceed the TMEM allocation of {p.dst.columns} columns")


# -- rule 7 ---------------------------------------------------------------------------------------------------
def issue_order(p: Prepared, atom: Tcgen05CpAtom, middle: tuple, groups: CoreGroups) -> tuple:
    """One instruction per middle coordinate (first middle mode fastest), each start address checked."""
    out = []
    in_group = min(atom.rows, 8)
    mode = groups.mode
    for flat in range(product(tuple(s.extent for s in middle)) if middle else 1):
        lane = col = smem = 0
        for s in middle:
            flat, k = divmod(flat, s.extent)
            lane, col, smem = lane + k * s.lane, col + k * s.col, smem + k * s.smem
        smem += p.smem_base
        if smem % UNIT_BYTES:
            raise Reject(f"instruction start +{smem} B is not 16B-aligned")
        if mode is not SwizzleMode.NONE and \
                (smem % mode.period) + (in_group - 1) * groups.pitch + UNIT_BYTES * atom.units > mode.period:
            raise Reject(f"instruction start +{smem} B is not aligned to the {mode.name} swizzle atom: its rows "
                         f"would cross the {mode.period} B swizzle period")
        if mode is not SwizzleMode.NONE and smem % mode.row_pitch + UNIT_BYTES * atom.units > mode.row_pitch:
            raise Reject(f"instruction start +{smem} B puts each {UNIT_BYTES * atom.units} B row across a "
                         f"{mode.row_pitch} B row of the {mode.name} swizzle; the PTX text does not define what "
                         f"tcgen05.cp reads there")
        column = p.col_base + col * p.bits // CELL_BITS
        out.append(CpInstruction(atom.ptx, tmem_address(p.lane_base + lane, column), smem))
    return tuple(out)
