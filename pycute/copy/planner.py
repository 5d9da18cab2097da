"""make_tiled_copy: plan a shared-memory -> TMEM copy with the fewest ``tcgen05.cp`` instructions.

Steps (rules numbered as in the planner issue):
  1. resolve the candidate atoms (explicit ``shape=``/``multicast=``, or all six widest first);
  2. check the envelope (tensor kinds, equal element widths, allocation, cta_group, no decompression);
  3. build one joint mode list for the region: both layouts coalesced and cut at the union of their cumulative
     extents, so every mode steps both sides by a single stride; broadcast modes are dropped or refused;
  4. per candidate: replica, a row's TMEM columns and 16-byte units (LBO), the lane pattern and 8-row core groups
     (row pitch -> swizzle mode, SBO), the middle (everything else), alignment, lane space and allocation;
  5. emit one instruction per middle coordinate; the descriptor template is shared, only its start address moves.
"""
from __future__ import annotations

import functools

import attrs

from ..arch.sm100.descriptor import SmemDescriptor, SwizzleMode
from ..atoms.tcgen05_cp import LEGAL_MULTICASTS, Tcgen05CpAtom, cp_candidates, find_cp_atom
from ..basis import E, ScaledBasis, basis_get
from ..errors import LayoutError, PlanError
from ..int_tuple import flatten, is_int, product
from ..layout import Layout, _mk, coalesce, composition
from .plan import CopyPlan, CpInstruction
from .tensor import SmemTensor, TmemTensor

__all__ = ["make_tiled_copy", "Smem"]

Smem = E("Smem")   # shared-memory bytes (pre-swizzle), the third axis of a plan's partition layouts
_SWIZZLE_BY_BITS = {1: SwizzleMode.B32, 2: SwizzleMode.B64, 3: SwizzleMode.B128}
_UNIT_BITS = 128


def _decompress_refusal(what: str) -> PlanError:
    return PlanError(f"tcgen05.cp planner does not support decompress ({what}): the container bit placement of "
                     f".b8x16.b6x16_p32 / .b8x16.b4x16_p64 is not pinned down (the PTX figures are images, and the "
                     f"public sources disagree)")


class _Reject(Exception):
    """A candidate atom does not fit: the first rule it broke. The message is formatted only when read, because
    inference rejects several candidates per plan and nobody reads those reasons unless asked (explain, errors)."""

    def __init__(self, template: str, **values):
        super().__init__(template)
        self.template, self.values = template, values

    def __str__(self) -> str:
        return self.template.format(**self.values) if self.values else self.template


# ---------------------------------------------------------------------------------------------------------------
# Preparation: everything that does not depend on the candidate atom
# ---------------------------------------------------------------------------------------------------------------
class _Prepared:
    __slots__ = ("src", "dst", "bits", "lane_modes", "col_modes", "buffer_mode", "smem_base", "lane_base",
                 "col_base")


def _where(src, dst) -> str:
    return f"\n  src: {src!r}\n  dst: {dst!r}"


def _flat_coalesced(layout: Layout):
    c = coalesce(layout)
    return list(zip(flatten(c.shape), flatten(c.stride)))


def _cut(modes, bounds):
    """Split ``[(n, stride)]`` (cumulative extents dividing ``bounds``) into one piece per bound interval."""
    out = []
    it = iter(modes)
    n, d = next(it)
    start, end = 1, n          # cumulative extent before / after the current mode
    prev = 1
    for b in bounds:
        while b > end:
            n, d = next(it)
            start, end = end, end * n
        out.append((b // prev, d * (prev // start)))
        prev = b
    return out


def _joint_modes(src: SmemTensor, dst: TmemTensor):
    fs, ft = _flat_coalesced(src.layout), _flat_coalesced(dst.layout)
    cum_s, cum_t = [], []
    for modes, cum in ((fs, cum_s), (ft, cum_t)):
        acc = 1
        for n, _ in modes:
            acc *= n
            cum.append(acc)
    bounds = sorted(set(cum_s) | set(cum_t))
    prev = 1
    for b in bounds:
        if b % prev:
            raise PlanError(f"the shared-memory and TMEM layouts split the region incompatibly: cumulative extents "
                            f"{cum_s} and {cum_t} do not nest (union cut at {prev} and {b}){_where(src, dst)}")
        prev = b
    return zip(_cut(fs, bounds), _cut(ft, bounds))


def _merge(modes):
    """Jointly coalesce ``[(n, smem, step)]`` sorted by step: merge where both sides continue contiguously."""
    out = []
    for n, s, x in modes:
        if out:
            pn, ps, px = out[-1]
            if pn * px == x and pn * ps == s:
                out[-1] = (pn * n, ps, px)
                continue
        out.append((n, s, x))
    return out


def _buffer_mode(src: SmemTensor, dst: TmemTensor) -> SwizzleMode:
    sw = src.swizzle
    if sw is None or sw.bits == 0:
        return SwizzleMode.NONE
    m = (_UNIT_BITS // src.bits).bit_length() - 1
    if sw.shift < 0:
        raise PlanError(f"mirrored swizzle {sw!r} (negative shift) is refused: the descriptor's swizzle XORs the "
                        f"high address bits into the low ones, so this buffer would be copied wrong silently"
                        f"{_where(src, dst)}")
    if sw.shift != 3 or sw.base != m or sw.bits not in _SWIZZLE_BY_BITS:
        raise PlanError(f"swizzle family mismatch: {sw!r} on {src.dtype.name} element offsets; tcgen05 descriptors "
                        f"swizzle as Sw<b,{m},3> for b = 1, 2, 3 (32B, 64B, 128B){_where(src, dst)}")
    mode = _SWIZZLE_BY_BITS[sw.bits]
    if src.base_align % mode.period:
        raise PlanError(f"the buffer base is aligned to {src.base_align} B but the {mode.name} swizzle repeats every "
                        f"{mode.period} B; the descriptor (base offset 0) needs a period-aligned base"
                        f"{_where(src, dst)}")
    return mode


def _prepare(src: SmemTensor, dst: TmemTensor) -> _Prepared:
    bits = src.bits
    if bits not in (4, 8, 16, 32):
        raise PlanError(f"{_decompress_refusal(f'{src.dtype.name} elements of {bits} bits')}{_where(src, dst)}")
    ssz = tuple(product(m.shape) for m in (src.layout if src.layout.rank() > 1 else [src.layout]))
    tsz = tuple(product(m.shape) for m in (dst.layout if dst.layout.rank() > 1 else [dst.layout]))
    if ssz != tsz:
        raise PlanError(f"region shapes differ: src {src.layout.shape!r} (mode sizes {ssz}) vs dst "
                        f"{dst.layout.shape!r} (mode sizes {tsz}){_where(src, dst)}")
    p = _Prepared()
    p.src, p.dst, p.bits = src, dst, bits
    p.buffer_mode = _buffer_mode(src, dst)
    lane_modes, col_modes = [], []
    for (n, s), (_, t) in _joint_modes(src, dst):
        lane, col = basis_get(t, "TLane"), basis_get(t, "TCol")
        if lane == 0 and col == 0:
            if s == 0:
                continue    # the same element for every coordinate of this mode: nothing to copy twice
            raise PlanError(f"{n} shared-memory elements (stride {s}) land in one TMEM cell: the copy is "
                            f"ambiguous{_where(src, dst)}")
        if s == 0:
            raise PlanError(f"one shared-memory element is copied to {n} TMEM cells (TMEM stride {t!r}); declare the "
                            f"copies as the TMEM tensor's multicast replica instead{_where(src, dst)}")
        if lane and col:
            raise PlanError(f"a mode of {n} elements steps both TMEM lanes and columns ({t!r}){_where(src, dst)}")
        if min(lane, col, s) < 0:
            raise PlanError(f"negative strides are not supported (smem {s}, TMEM {t!r}){_where(src, dst)}")
        if lane:
            lane_modes.append((n, s, lane))
        else:
            col_modes.append((n, s, col))
    p.lane_modes = _merge(sorted(lane_modes, key=lambda m: m[2]))
    p.col_modes = _merge(sorted(col_modes, key=lambda m: m[2]))
    # Region offsets.
    if (src.offset * bits) % 8:
        raise PlanError(f"the shared-memory region starts at element {src.offset}, which is not on a byte"
                        f"{_where(src, dst)}")
    p.smem_base = src.offset * bits // 8
    p.lane_base = dst.lane_offset
    col_bits = dst.col_offset * bits
    if col_bits % _UNIT_BITS:
        raise PlanError(f"TMEM column offset {dst.col_offset} ({col_bits} bits) is not provably 128b-aligned: "
                        f"tcgen05.cp's column address must be a multiple of 4{_where(src, dst)}")
    p.col_base = col_bits // 32
    if p.lane_base < 0 or p.lane_base >= 128:
        raise PlanError(f"TMEM lane offset {p.lane_base} overflows the 128-lane space{_where(src, dst)}")
    return p


# ---------------------------------------------------------------------------------------------------------------
# Per-candidate validation
# ---------------------------------------------------------------------------------------------------------------
def _take_columns(col_modes, count):
    """Split off the first ``count`` elements along TCol, which must be contiguous columns from stride 1."""
    taken, rest = [], []
    need, expect = count, 1
    for n, s, c in col_modes:
        if need == 1:
            rest.append((n, s, c))
            continue
        if c != expect:
            raise _Reject(f"a row's {count} elements are not in consecutive TMEM columns (TCol steps "
                          f"{[m[2] for m in col_modes]} elements, {count} contiguous needed)")
        if n <= need:
            if need % n:
                raise _Reject(f"a TMEM column run of {n} elements does not divide a row of {count}")
            taken.append((n, s))
            need //= n
            expect = c * n
        else:
            if n % need:
                raise _Reject(f"a TMEM column run of {n} elements is not a multiple of a row of {count}")
            taken.append((need, s))
            rest.append((n // need, s * need, c * need))
            need = 1
    if need != 1:
        have = count // need
        raise _Reject(f"the region has {have} contiguous TMEM column elements per lane; a row needs {count}")
    return taken, rest


def _match_lanes(lane_modes, pattern: Layout):
    """Split the modes realising ``pattern`` (row -> lane) out of ``lane_modes``.

    A pattern mode (``p`` rows at lane stride ``q``) may be covered by a run of lane modes whose lane strides
    continue one another (their shared-memory strides need not). Returns ``([(rows, lane stride, smem stride)] in
    row order, remaining lane modes)``.
    """
    pool = list(lane_modes)
    pattern_c = coalesce(pattern)
    matched = []
    for p, q in zip(flatten(pattern_c.shape), flatten(pattern_c.stride)):
        q = basis_get(q, "TLane")
        need, at = p, q
        while need > 1:
            for k, (n, s, lane) in enumerate(pool):
                if lane <= at < n * lane and at % lane == 0:
                    break
            else:
                have = ", ".join(f"{n}x{lane}" for n, _, lane in lane_modes) or "none"
                raise _Reject(f"TMEM lanes do not match the lane pattern {pattern!r}: the region's lane modes are "
                              f"[{have}] (extent x lane stride); {need} rows at lane stride {at} are missing")
            lo = at // lane
            avail = n // lo
            if n % lo or (avail > need and avail % need) or (avail < need and need % avail):
                raise _Reject(f"TMEM lanes step {lane} x {n}, which does not tile the lane pattern {pattern!r} "
                              f"({need} rows at lane stride {at} needed)")
            take = min(avail, need)
            pieces = []
            if lo > 1:
                pieces.append((lo, s, lane))
            if avail > take:
                pieces.append((avail // take, s * lo * take, at * take))
            pool[k:k + 1] = pieces
            matched.append((take, at, s * lo))
            need //= take
            at *= take
    return matched, sorted(pool, key=lambda m: m[2])


def _to_bytes(elements: int, bits: int, what: str) -> int:
    if (elements * bits) % 8:
        raise _Reject(f"{what} of {elements} elements is not a whole number of bytes")
    return elements * bits // 8


def _single(layout: Layout, what: str):
    """``(extent, stride)`` of a layout that must coalesce to one mode."""
    c = coalesce(layout)
    if not is_int(c.shape):
        raise _Reject(f"{what} is {c!r}, not a single stride")
    return c.shape, c.stride


def _validate(p: _Prepared, atom: Tcgen05CpAtom):
    src, dst, bits = p.src, p.dst, p.bits
    # Rule 3: replica.
    want = atom.replica
    have = dst.replica
    if want != have and ((want is None) != (have is None) or coalesce(want) != coalesce(have)):
        raise _Reject("replica mismatch: {name} replicates at {want!r}, the TMEM tensor declares {have!r}",
                      name=atom.name, want=want, have=have)
    # Rule 5: a row's columns and 16-byte units.
    per_row = atom.bits // bits
    unit = _UNIT_BITS // bits
    col_taken, col_rest = _take_columns(p.col_modes, per_row)
    units = coalesce(_mk(tuple(n for n, _ in col_taken), tuple(s for _, s in col_taken)))
    whole_row = _mk(per_row, 1)
    if atom.units == 1 or units == whole_row:
        if units != whole_row:
            raise _Reject(f"a row's shared-memory elements {units!r} are not one contiguous 16-byte unit")
        unit_gap = 16
    else:
        if not (units.rank() == 2 and units[0] == _mk(unit, 1) and units.shape[1] == 2):
            raise _Reject(f"a row's shared-memory elements {units!r} are not whole 16-byte units")
        unit_gap = _to_bytes(units.stride[1], bits, "the distance between a row's 16-byte units")
    # Rules 4-5: lanes and 8-row core groups.
    rows_matched, lane_rest = _match_lanes(p.lane_modes, atom.lane_pattern)
    row_steps = [(n, _to_bytes(s, bits, "a row step"), q) for n, q, s in rows_matched]
    rows = _mk(tuple(n for n, _, _ in row_steps), tuple(b for _, b, _ in row_steps))
    try:
        if atom.rows >= 8:
            _, pitch = _single(composition(rows, _mk(8, 1)), "the row spacing inside an 8-row core group")
            _, sbo = _single(composition(rows, _mk(atom.rows // 8, 8)), "the spacing of 8-row core groups")
        else:
            _, pitch = _single(composition(rows, _mk(atom.rows, 1)), "the row spacing of the 4-row group")
            sbo = 0
    except LayoutError as e:
        raise _Reject(f"rows do not form 8-row core groups: {e}") from None
    if pitch not in (16, 32, 64, 128):
        raise _Reject(f"rows are {pitch} B apart in shared memory; a core group needs 16 B (no swizzle) or "
                      f"32/64/128 B (the swizzled row pitch)")
    mode = SwizzleMode.from_row_pitch(pitch)
    if mode is not p.buffer_mode:
        buf = f"swizzled {src.swizzle!r} ({p.buffer_mode.name})" if p.buffer_mode is not SwizzleMode.NONE \
            else "not swizzled"
        raise _Reject(f"swizzle mismatch: rows {pitch} B apart select {mode.name}, but the buffer is {buf}")
    if sbo % 16:
        raise _Reject(f"the 8-row core-group stride (SBO) {sbo} B is not 16B-aligned")
    if mode is not SwizzleMode.NONE and atom.rows > 8 and sbo % mode.period:
        raise _Reject(f"core groups are {sbo} B apart, not a multiple of the {mode.period} B {mode.name} period")
    if mode is SwizzleMode.NONE:
        lbo = unit_gap if atom.units == 2 else 0
        if lbo % 16:
            raise _Reject(f"the two 16-byte units of a row are {lbo} B apart (LBO), not 16B-aligned")
    else:
        if atom.units == 2 and unit_gap != 16:
            raise _Reject(f"the two 16-byte units of a 256-bit row are {unit_gap} B apart; under a swizzle they "
                          f"must be adjacent")
        lbo = 16   # unused when swizzled; PTX: "assumed to be 1"
    if max(lbo, sbo) >= 1 << 18:
        raise _Reject(f"LBO {lbo} B / SBO {sbo} B do not fit the descriptor's 18-bit byte fields")
    # Rule 4: the middle (which instruction; lane tiling steps for regions taller than one atom).
    middle = [(n, _to_bytes(s, bits, "a middle step"), lane, 0) for n, s, lane in lane_rest] + \
             [(n, _to_bytes(s, bits, "a middle step"), 0, c) for n, s, c in col_rest]
    steps = []                                  # the middle with TMEM columns in 32-bit units
    for n, sb, lane, col in middle:
        if sb % 16:
            raise _Reject(f"a middle step of {sb} B in shared memory is not 16B-aligned")
        if (col * bits) % _UNIT_BITS:
            raise _Reject(f"a middle step of {col} TMEM column elements is not provably 128b-aligned")
        steps.append((n, sb, lane, col * bits // 32))
    # Rule 7: lane space, allocation, start addresses.
    max_lane = p.lane_base + sum((n - 1) * lane for n, _, lane, _ in steps) + atom.max_lane
    if max_lane >= 128:
        raise _Reject(f"overflows the 128-lane space: lane offset {p.lane_base} plus the copy's lanes reach lane "
                      f"{max_lane}")
    max_col = p.col_base + sum((n - 1) * col for n, _, _, col in steps) + atom.columns
    if max_col > dst.columns:
        raise _Reject(f"columns up to {max_col} exceed the TMEM allocation of {dst.columns} columns")
    instructions = _enumerate(p, atom, steps, mode, pitch)
    descriptor = SmemDescriptor(0, lbo, sbo, mode)
    return CopyPlan(atom, descriptor, instructions, _partition_layout([(n, b, q, 0) for n, b, q in row_steps]),
                    _column_layout(col_taken, bits), _partition_layout(middle), src, dst)


def _cumulative(ns):
    out, acc = [], 1
    for n in ns:
        out.append(acc)
        acc *= n
    return out


def _column_layout(col_taken, bits: int):
    """A row's elements: TCol steps and their shared-memory steps, in bytes, or in bits (the ``SmemBit`` axis)
    where an element is narrower than a byte."""
    modes, cols = [], _cumulative([n for n, _ in col_taken])
    for (n, s), c in zip(col_taken, cols):
        if (s * bits) % 8:
            modes.append((n, ScaledBasis.of({"TCol": c, "SmemBit": s * bits})))
        else:
            modes.append((n, ScaledBasis.of({"TCol": c, "Smem": s * bits // 8})))
    if len(modes) == 1:
        return _mk(*modes[0])
    return _mk(tuple(n for n, _ in modes), tuple(d for _, d in modes))


def _partition_layout(modes):
    """``[(extent, smem bytes, lane step, column-element step)]`` as one layout on (TLane, TCol, Smem)."""
    if not modes:
        return Layout(1, 0)
    strides = tuple(ScaledBasis(tuple((axis, v) for axis, v in (("Smem", sb), ("TCol", col), ("TLane", lane)) if v))
                    for _, sb, lane, col in modes)
    shape = tuple(m[0] for m in modes)
    return _mk(shape[0], strides[0]) if len(modes) == 1 else _mk(shape, strides)


def _enumerate(p: _Prepared, atom, steps, mode: SwizzleMode, pitch: int):
    """One instruction per middle coordinate (first middle mode fastest), with the start-address checks."""
    out = []
    in_group = min(atom.rows, 8)
    for ls, cs, ss in _colex(steps):
        smem = p.smem_base + ss
        if smem % 16:
            raise _Reject(f"instruction start +{smem} B is not 16B-aligned")
        if mode is not SwizzleMode.NONE and (smem % mode.period) + (in_group - 1) * pitch + 16 * atom.units > \
                mode.period:
            raise _Reject(f"instruction start +{smem} B is not aligned to the {mode.name} swizzle atom: its rows "
                          f"would cross the {mode.period} B swizzle period")
        out.append(CpInstruction(atom.ptx, (p.lane_base + ls) << 16 | (p.col_base + cs), smem))
    return tuple(out)


def _colex(steps):
    """Middle coordinates in colexicographic order (the first middle mode varies fastest)."""
    total = product(tuple(n for n, _, _, _ in steps)) if steps else 1
    for flat in range(total):
        ls = cs = ss = 0
        rest = flat
        for n, sb, lane, col in steps:
            k = rest % n
            rest //= n
            ls += k * lane
            cs += k * col
            ss += k * sb
        yield ls, cs, ss


# ---------------------------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------------------------
def _candidates(shape, multicast, cta_group):
    if cta_group not in (1, 2):
        raise PlanError(f"cta_group must be 1 or 2, got {cta_group!r}")
    if shape is not None:
        if shape not in LEGAL_MULTICASTS:
            raise PlanError(f"unknown tcgen05.cp shape {shape!r}; legal shapes: {', '.join(LEGAL_MULTICASTS)}")
        legal = LEGAL_MULTICASTS[shape]
        if multicast is None:
            if len(legal) > 1:
                raise PlanError(f"tcgen05.cp shape {shape!r} requires an explicit multicast: "
                                f"{' or '.join(repr(m) for m in legal)}")
            multicast = legal[0]
        return [find_cp_atom(shape, multicast, cta_group)]
    atoms = list(cp_candidates(cta_group))
    if multicast is not None:
        known = {m for ms in LEGAL_MULTICASTS.values() for m in ms}
        if multicast not in known:
            raise PlanError(f"unknown multicast {multicast!r}; legal: {', '.join(repr(m) for m in sorted(known))}")
        atoms = [a for a in atoms if a.multicast == multicast]
    return atoms


@functools.lru_cache(maxsize=4096)
def _plan(dst, src, cta_group, shape, multicast):
    candidates = _candidates(shape, multicast, cta_group)
    if not isinstance(src, SmemTensor):
        raise PlanError(f"src must be a shared-memory tensor (make_smem_tensor), got {src!r}")
    if not isinstance(dst, TmemTensor):
        raise PlanError(f"dst must be a TMEM tensor (make_tmem_tensor), got {dst!r}")
    if src.bits != dst.bits:
        if src.bits in (4, 6) and dst.bits == 8:
            raise PlanError(f"{_decompress_refusal(f'{src.dtype.name} -> {dst.dtype.name}')}{_where(src, dst)}")
        raise PlanError(f"element widths differ: src {src.dtype.name} ({src.bits} bits) vs dst {dst.dtype.name} "
                        f"({dst.bits} bits); only same-width reinterpretation is allowed{_where(src, dst)}")
    if dst.columns is None:
        raise PlanError(f"the TMEM tensor has no allocation: pass columns= (the tcgen05.alloc size) to "
                        f"make_tmem_tensor{_where(src, dst)}")
    prepared = _prepare(src, dst)
    rejected = []
    for atom in candidates:
        try:
            plan = _validate(prepared, atom)
        except _Reject as why:
            rejected.append((atom.name, why))
            continue
        return attrs.evolve(plan, rejected=tuple(rejected))
    if len(candidates) == 1:
        raise PlanError(f"{candidates[0].ptx}: {rejected[0][1]}{_where(src, dst)}")
    reasons = "\n".join(f"  {name:<22} {why}" for name, why in rejected)
    raise PlanError(f"no tcgen05.cp form fits this copy:\n{reasons}{_where(src, dst)}")


def make_tiled_copy(dst, src, cta_group: int = 1, shape: str | None = None, multicast: str | None = None,
                    decompress: str | None = None) -> CopyPlan:
    """Plan ``src`` (shared memory) -> ``dst`` (TMEM) with the fewest ``tcgen05.cp`` instructions.

    Without ``shape``, forms are tried widest first and the first that fits wins; ``multicast`` alone filters the
    candidates. Raises ``PlanError`` naming the broken rule, the values and both tensors. Repeated requests are
    served from a cache.
    """
    if decompress is not None:
        raise _decompress_refusal(repr(decompress))
    try:
        return _plan(dst, src, cta_group, shape, multicast)
    except TypeError as e:
        if "unhashable" in str(e):
            raise PlanError(f"make_tiled_copy: arguments must be tensors and strings ({e})") from None
        raise
