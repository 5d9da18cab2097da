"""make_tiled_copy: plan a shared-memory -> TMEM copy with the fewest ``tcgen05.cp`` instructions.

  1. the candidates: the one atom ``shape=``/``multicast=`` name, or all six forms widest first
     (``atoms.cp_candidates``);
  2. the envelope, once per copy (``joint.prepare``): tensor kinds, equal element widths (no decompression), an
     allocation, equal region shapes, the buffer's swizzle, the joint modes and the region offsets;
  3. per candidate, the rules of ``rules`` in their order; the first candidate that meets them all is the plan;
  4. one instruction per middle coordinate; the descriptor template is shared, only its start address moves.
"""
from __future__ import annotations

import itertools
from typing import Any

import attrs

from ...arch.sm100.tcgen05_cp import FP4_DECOMPRESSION, FP6_DECOMPRESSION, FP6_REFUSAL
from ...arch.sm100.descriptor import SmemDescriptor
from ...arch.sm100.tmem import CELL_BITS, LANE_SHIFT
from ...atoms.tcgen05_cp import Tcgen05CpAtom, cp_candidates
from ...arch.sm100.tmem import check_cta_group
from ...basis import E, ScaledBasis, basis_get
from ...errors import PlanError
from ...layout import Layout, _mk
from ...memo import memo
from . import rules
from .decompress import unpadded_source
from .joint import Prepared, decompress_refusal, prepare, where
from .plan import Tcgen05CpPlan, DynamicCoord
from ..protocol import Rejection
from ...tensor.smem import SmemTensor
from ...tensor.tmem import TmemTensor

__all__ = ["make_tiled_copy", "Smem"]

Smem = E("Smem")   # shared-memory bytes (pre-swizzle), the third axis of a plan's partition layouts


def _partition_layout(steps) -> Layout:
    """Steps as one layout on (TLane, TCol, Smem)."""
    if not steps:
        return Layout(1, 0)
    strides = tuple(ScaledBasis(tuple((axis, v) for axis, v in (("Smem", s.smem), ("TCol", s.col),
                                                                ("TLane", s.lane)) if v)) for s in steps)
    shape = tuple(s.extent for s in steps)
    return _mk(shape[0], strides[0]) if len(steps) == 1 else _mk(shape, strides)


def _column_layout(taken: tuple, bits: int) -> Layout:
    """A row's elements: TCol steps and their shared-memory steps, in bytes, or in bits (the ``SmemBit`` axis)
    where an element is narrower than a byte."""
    modes, col = [], 1
    for n, s in taken:
        if (s * bits) % 8:
            modes.append((n, ScaledBasis.of({"TCol": col, "SmemBit": s * bits})))
        else:
            modes.append((n, ScaledBasis.of({"TCol": col, "Smem": s * bits // 8})))
        col *= n
    if len(modes) == 1:
        return _mk(*modes[0])
    return _mk(tuple(n for n, _ in modes), tuple(d for _, d in modes))


def _plan_with(p: Prepared, atom: Tcgen05CpAtom, rejected: tuple) -> Tcgen05CpPlan:
    """The plan ``atom`` makes of the copy (whose replica it matches), or ``rules.Reject`` naming the first rule
    it breaks; ``rejected`` are the wider forms tried before it."""
    row = rules.row_units(p, atom)
    rows, lane_rest = rules.match_lanes(p, atom)
    groups = rules.core_groups(p, atom, rows)
    lbo = rules.leading_offset(atom, row, groups)
    middle = rules.middle_steps(p, lane_rest, row.rest)
    rules.check_bounds(p, atom, middle)
    instructions = rules.issue_order(p, atom, middle, groups)
    period = groups.mode.period if groups.mode.byte_swizzle is not None else 1
    return Tcgen05CpPlan(atom, SmemDescriptor(0, lbo, groups.sbo, groups.mode), instructions, _partition_layout(rows),
                    _column_layout(row.taken, p.bits), _partition_layout(middle), p.src, p.dst, p.smem_end,
                    rejected, smem_start=p.smem_base - p.smem_base % period)


def _attempt(p: Prepared, atom: Tcgen05CpAtom, rejected: tuple) -> Tcgen05CpPlan | rules.Reject:
    """``atom``'s plan of the copy, or the Reject naming the first rule it breaks (the replica rule, which most
    forms of an inference break, without raising)."""
    mismatch = rules.replica_mismatch(p, atom)
    if mismatch is not None:
        return mismatch
    try:
        return _plan_with(p, atom, rejected)
    except rules.Reject as why:
        return why


def _check_kinds(dst, src) -> None:
    if not isinstance(src, SmemTensor):
        raise TypeError(f"make_tiled_copy: src must be a shared-memory tensor (make_smem_tensor), got {src!r}")
    if not isinstance(dst, TmemTensor):
        raise TypeError(f"make_tiled_copy: dst must be a TMEM tensor (make_tmem_tensor), got {dst!r}")


def _check_envelope(dst: TmemTensor, src: SmemTensor, decompress: str | None) -> None:
    if decompress == FP4_DECOMPRESSION:
        if src.bits != 4 or dst.bits != 8:
            raise PlanError(f".b8x16.b4x16_p64 expands 4-bit elements into 8-bit TMEM bytes; the copy is "
                            f"{src.dtype.name} -> {dst.dtype.name}{where(src, dst)}")
    elif src.bits != dst.bits:
        if src.bits == 4 and dst.bits == 8:
            raise PlanError(f"element widths differ: {src.dtype.name} -> {dst.dtype.name}; to expand each 4-bit "
                            f"element into a TMEM byte pass decompress='b4x16_p64' (the source then holds 16 elements "
                            f"and 8 bytes of padding per 16-byte unit){where(src, dst)}")
        if src.bits == 6 and dst.bits == 8:
            raise PlanError(f"{decompress_refusal(f'{src.dtype.name} -> {dst.dtype.name}')}{where(src, dst)}")
        raise PlanError(f"element widths differ: src {src.dtype.name} ({src.bits} bits) vs dst {dst.dtype.name} "
                        f"({dst.bits} bits); only same-width reinterpretation is allowed{where(src, dst)}")
    if dst.columns is None:
        raise PlanError(f"the TMEM tensor has no allocation: pass columns= (the tcgen05.alloc size) to "
                        f"make_tmem_tensor{where(src, dst)}")


def _deciding(rejected: list) -> str:
    """The rule that decided: the first reason of a form whose replica matched (a replica mismatch only says the
    copy is for another form)."""
    for _, why in rejected:
        if not str(why).startswith("replica mismatch"):
            return str(why)
    return str(rejected[0][1])


@memo
def _plan(dst, src, cta_group, shape, multicast, decompress=None):
    candidates = cp_candidates(cta_group, shape, multicast)
    _check_envelope(dst, src, decompress)
    prepared = prepare(unpadded_source(src, "tcgen05.cp .b8x16.b4x16_p64") if decompress else src, dst)
    rejected: list = []
    for atom in candidates:
        plan = _attempt(prepared, atom, tuple(rejected))
        if isinstance(plan, rules.Reject):
            rejected.append(Rejection(atom.name, plan))
            continue
        if decompress:
            plan = attrs.evolve(plan, src=src, decompress=decompress, instructions=tuple(
                attrs.evolve(i, ptx=f"{i.ptx}.{decompress}") for i in plan.instructions))
        return plan
    if len(candidates) == 1:
        raise PlanError(f"{candidates[0].ptx}: {rejected[0][1]}{where(src, dst)}")
    reasons = "\n".join(f"  {name:<22} {why}" for name, why in rejected)
    raise PlanError(f"no tcgen05.cp form fits this copy: {_deciding(rejected)}\n{reasons}{where(src, dst)}")


#: The most value combinations of run-time coordinates the planner checks one by one.
MAX_DYNAMIC_VALUES = 4096


def _coordinates(dst: TmemTensor, src: SmemTensor) -> list:
    """``[(name, extent)]`` of the run-time coordinates, source first; a name on both sides has one extent."""
    coords: dict = {}
    for d in src.dynamic + dst.dynamic:
        if coords.setdefault(d.name, d.extent) != d.extent:
            raise PlanError(f"run-time coordinate {d.name!r} has extent {coords[d.name]} in one tensor and {d.extent} "
                            f"in the other{where(src, dst)}")
    return list(coords.items())


def _step(tensor: SmemTensor | TmemTensor, name: str) -> Any:
    return next((d.stride for d in tensor.dynamic if d.name == name), 0)


def _steps(dst: TmemTensor, src: SmemTensor, name: str) -> tuple[int, int]:
    """Bytes of shared memory and the TMEM address delta one unit of ``name`` moves the copy by."""
    smem_bits = _step(src, name) * src.bits
    tstep = _step(dst, name)
    lanes, cols = basis_get(tstep, "TLane"), basis_get(tstep, "TCol") * dst.bits
    if smem_bits % 8 or cols % CELL_BITS:
        raise PlanError(f"run-time coordinate {name!r} steps shared memory by {smem_bits} bits and TMEM by {cols} "
                        f"bits of a lane; both must be whole bytes and whole 32-bit columns{where(src, dst)}")
    return smem_bits // 8, (lanes << LANE_SHIFT) + cols // CELL_BITS


def _shifted(base: Tcgen05CpPlan, other: Tcgen05CpPlan, smem: int, tmem: int) -> bool:
    return (other.atom == base.atom and other.descriptor == base.descriptor
            and len(other.instructions) == len(base.instructions)
            and all(o.smem_offset == b.smem_offset + smem and o.tmem_offset == b.tmem_offset + tmem
                    for o, b in zip(other.instructions, base.instructions)))


@memo
def _plan_dynamic(dst, src, cta_group, shape, multicast, decompress=None):
    """A plan whose run-time coordinates take every value of their extents: each value is planned statically and must
    be value 0's plan shifted by the coordinate's steps (one device function serves them all)."""
    coords = _coordinates(dst, src)
    total = 1
    for _, extent in coords:
        total *= extent
    if total > MAX_DYNAMIC_VALUES:
        raise PlanError(f"run-time coordinates {coords} take {total} value combinations; the planner checks each "
                        f"and takes at most {MAX_DYNAMIC_VALUES}{where(src, dst)}")
    steps = [_steps(dst, src, name) for name, _ in coords]
    names = [n for n, _ in coords]
    src_names, dst_names = {d.name for d in src.dynamic}, {d.name for d in dst.dynamic}
    base = None
    smem_start, smem_end, spans = None, 0, []
    for values in itertools.product(*(range(e) for _, e in coords)):
        at = dict(zip(names, values))
        label = ", ".join(f"{n}={v}" for n, v in at.items())
        try:
            plan = _plan(dst.at(**{k: v for k, v in at.items() if k in dst_names}),
                         src.at(**{k: v for k, v in at.items() if k in src_names}), cta_group, shape, multicast,
                         decompress)
        except PlanError as e:
            raise PlanError(f"at {label}: {e}") from None
        if base is None:
            base = plan
        else:
            smem = sum(v * s for v, (s, _) in zip(values, steps))
            tmem = sum(v * t for v, (_, t) in zip(values, steps))
            if not _shifted(base, plan, smem, tmem):
                raise PlanError(f"at {label} the copy is not value 0's copy moved by {smem} B and TMEM address "
                                f"{tmem:#x} ({plan.atom.name}, {len(plan.instructions)} instructions, "
                                f"{plan.descriptor!r}), so one device function cannot serve every value"
                                f"{where(src, dst)}")
        spans.append((plan.smem_start, plan.smem_end))
        smem_start = plan.smem_start if smem_start is None else min(smem_start, plan.smem_start)
        smem_end = max(smem_end, plan.smem_end)
    dynamic = tuple(DynamicCoord(n, e, s, t) for (n, e), (s, t) in zip(coords, steps))
    assert base is not None          # the loop ran: every extent is at least 1
    return attrs.evolve(base, src=src, dst=dst, dynamic=dynamic, smem_start=smem_start, smem_end=smem_end,
                        spans=tuple(spans))


def _decompression(decompress) -> str | None:
    """The .dst_fmt.src_fmt pair of ``decompress`` (``"b4x16_p64"`` or its full name), None for none."""
    if decompress is None:
        return None
    if not isinstance(decompress, str):
        raise TypeError(f"make_tiled_copy: decompress must be a string or None, got {decompress!r}")
    full = decompress if decompress.startswith("b8x16.") else f"b8x16.{decompress}"
    if full == FP4_DECOMPRESSION:
        return full
    if full == FP6_DECOMPRESSION:
        raise PlanError(f"decompress={decompress!r}: {FP6_REFUSAL}")
    raise PlanError(f"decompress={decompress!r}: tcgen05.cp decompresses {FP4_DECOMPRESSION.split('.')[1]} "
                    f"(and, refused, {FP6_DECOMPRESSION.split('.')[1]})")


def make_tiled_copy(dst: TmemTensor, src: SmemTensor, cta_group: int = 1, shape: str | None = None,
                    multicast: str | None = None, decompress: str | None = None) -> Tcgen05CpPlan:
    """Plan ``src`` (shared memory) -> ``dst`` (TMEM) with the fewest ``tcgen05.cp`` instructions.

    Without ``shape``, forms are tried widest first and the first that fits wins; ``multicast`` alone filters the
    candidates. ``decompress="b4x16_p64"`` expands each 4-bit element of a padded source (16 elements, then 8
    bytes of padding, per 16-byte unit) into a TMEM byte (``.b8x16.b4x16_p64``). Raises ``PlanError`` naming the
    broken rule, the values and both tensors. Repeated requests are served from a cache.
    """
    decompress = _decompression(decompress)
    cta_group = check_cta_group(cta_group)
    for name, value in (("shape", shape), ("multicast", multicast)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"make_tiled_copy: {name} must be a string or None, got {value!r}")
    _check_kinds(dst, src)                   # before the plan cache hashes them
    if dst.placement is not None and dst.placement.cta_group != cta_group:
        raise PlanError(f"the TMEM tensor {dst.placement.name!r} was placed in a cta_group::{dst.placement.cta_group} "
                        f"allocation, but the copy is cta_group::{cta_group} (all tcgen05 instructions of a kernel "
                        f"use one cta_group){where(src, dst)}")
    if src.dynamic or dst.dynamic:
        return _plan_dynamic(dst, src, cta_group, shape, multicast, decompress)
    return _plan(dst, src, cta_group, shape, multicast, decompress)
