"""The result of make_tma_copy: the tensor map's parameters in the driver's order, the boxes, their coordinates
and shared-memory offsets, and the bytes each mbarrier phase must expect."""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from ...arch.convention import Convention
from ...arch.sm100.tma_pair import PAIR_CTAS, TMA_PAIR_TARGETS
from ...arch.sm90.tma import BOX_START_UNIT, COORD_MAX, COORD_MIN, TMA_TARGETS, TmaDirection
from ...atoms.tma import TmaAtom, TmaIssue, tma_atom
from ...errors import PlanError
from ...dtypes import dtype
from ...int_tuple import as_int
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import contiguous_mode
from ...views import view
from ..protocol import ArrayTilePlan, Rejection
from .origin import TmaOrigin, TmaPrecondition, inner_unit_why, origin_value, step_why
from .params import DTYPE_BYTES, TensorMapParams, smem_capacity
from ...tensor.stages import SmemStage, stage_offset
from ...tensor.tile import mode_extents
from ...int_tuple import flatten
from ...arch.sm80.cache import CachePolicy
from ...arch.sm90.tma import L2_PROMOTIONS
from .multicast import Multicast, TmaMulticast
from .view import TmaTileCoord

__all__ = ["TensorMapParams", "DTYPE_BYTES", "TmaInstruction", "TmaMulticast", "TmaStage", "TmaTileCoord",
           "TmaOrigin", "TmaPrecondition", "TmaPlan", "smem_capacity", "Multicast"]

_L2_NAMES = {v: k for k, v in L2_PROMOTIONS.items()}


#: A run-time index of the shared tile (``tile[:, :, dynamic("stage")]``): value ``v`` moves every box ``v *
#: smem_step`` bytes; the generated function takes it as ``unsigned <name>`` (the record every variant shares).
TmaStage = SmemStage


@attrs.frozen
class TmaInstruction:
    """One box: its PTX, its coordinates relative to the tile's (dim 0 first) and the shared-memory byte offset
    of the box from the tile's buffer base."""

    ptx: str
    coords: tuple[int, ...]
    smem_offset: int


@attrs.frozen(repr=False)
class TmaPlan(ArrayTilePlan):
    """A validated TMA copy of one tile between a global array and a shared-memory tile. ``instructions`` is
    exactly what the generated code issues, their coordinates relative to the tile's origin: ``origin`` names it
    in the array's elements per mode (static or run-time ``int``: make_tma_copy's ``origin=``), or, when empty,
    the tile index ``(t0, t1, ...)`` does (origin ``t_i`` times the tile's extent). A load's mbarrier must expect
    ``expect_tx`` bytes (full boxes, out-of-bounds parts included)."""

    direction: TmaDirection
    atom: TmaAtom
    gmem: GlobalTensor
    smem: SmemTensor
    tensor_map: TensorMapParams
    tile: tuple[TmaTileCoord, ...]
    instructions: tuple[TmaInstruction, ...]
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)
    multicast: TmaMulticast | None = None
    stages: tuple[TmaStage, ...] = ()       # the shared tile's run-time indices; ``smem`` is their value 0
    element: str | None = None              # the tensors' own type when the map's element is wider (widen.py)
    cache_hint: CachePolicy | None = None   # the L2 policy every box is issued with (.L2::cache_hint)
    notes: tuple[str, ...] = attrs.field(default=(), eq=False)   # how the array became the map (view.py)
    origin: tuple[TmaOrigin, ...] = ()      # the box origin per array mode in elements; () = tile indices
    views: tuple[tuple[int, int], ...] = () # per tensor-map dimension: (array mode; -1 none, -2 a sub-mode or
    #                                         modes merged into one; step in map elements)
    limits: tuple[TmaPrecondition, ...] = ()  # bounds the planner derived (merged modes, a store's partial unit)

    VARIANT: ClassVar[str] = "tma"

    @property
    def completion(self) -> str | None:
        """``expect_tx`` for a load (the mbarrier counts its bytes), ``group`` for a store, None for a prefetch."""
        return {"load": "expect_tx", "store": "group"}.get(self.direction)

    @property
    def reduce(self) -> str | None:
        """The reduction a store applies (``add``, ``min``, ...), or None."""
        return self.atom.reduce

    @property
    def array_bytes(self) -> int:
        """Bytes from the array's base through its last element, in whole 16-byte units (TMA's store unit)."""
        last = sum((n - 1) * d for n, d in zip(flatten(self.gmem.layout.shape), flatten(self.gmem.layout.stride)))
        return -(-(last + 1) * self.elem_bytes // 16) * 16

    @property
    def array_extents(self) -> tuple[int, ...]:
        """The array's extent in each mode (a hierarchical mode's whole size)."""
        return mode_extents(self.gmem.layout)

    @property
    def expect_tx(self) -> int:
        """Bytes one tile delivers to each CTA's mbarrier (a load's ``arrive.expect_tx`` count): every box, with
        multicast every CTA's boxes, and for a pair load both CTAs' boxes on the even CTA's barrier."""
        ctas = self.multicast.ctas if self.multicast else 1
        return self.tensor_map.box_bytes * len(self.instructions) * ctas * (PAIR_CTAS if self.atom.pair else 1)

    @property
    def targets(self) -> tuple[str, ...]:
        """The compilation targets that have the plan's instruction (a pair load: sm_100a and later)."""
        return TMA_PAIR_TARGETS if self.atom.pair else TMA_TARGETS

    @property
    def lower_bound(self) -> int:
        """Fewest instructions any plan could use: one box (256 elements in each of five dimensions hold any tile
        a CTA's shared memory can)."""
        return 1

    @property
    def smem_reach(self) -> int:
        """Bytes of shared memory from the buffer base through the last byte any box of the plan touches, for
        every value of the run-time indices (and every CTA's slice of a multicast)."""
        m = self.tensor_map
        rows = m.box_bytes // (m.box[0] * self.elem_bytes)          # a narrow swizzled row takes a pattern row
        footprint = rows * m.swizzle.row_pitch(m.box[0] * self.elem_bytes)
        slices = self.multicast.ctas * self.multicast.smem_step if self.multicast else footprint
        last = max(i.smem_offset for i in self.instructions) + slices
        return last + sum((s.extent - 1) * s.smem_step for s in self.stages)

    @property
    def coordinates(self) -> Literal["tile", "element"]:
        """How the generated function places the tile: by tile index per array mode, or by element origin."""
        return "element" if self.origin else "tile"

    @property
    def coordinate_names(self) -> tuple[str, ...]:
        """The generated function's ``int`` coordinate parameters, in order: ``t0, t1, ...`` (tile indices), or
        the run-time element origins' names."""
        if not self.origin:
            return tuple(f"t{k}" for k in range(len(self.tile_shape)))
        return tuple(o.name for o in self.origin if o.name is not None)

    @property
    def preconditions(self) -> tuple[TmaPrecondition, ...]:
        """What the run-time coordinates must satisfy (stream and at check it; the generated code traps on it
        under ``-DPYCUTE_CHECKED``): along the contiguous mode the start on a 16-byte unit (the H200 faults
        otherwise: docs/tma.md); a store's start non-negative (PTX ISA #data-movement-and-conversion-instructions-
        tensor-copy-restrictions); an origin a multiple of the part the map views its mode in; and ``limits``."""
        out = []
        store = self.direction == "store"
        if not self.origin:
            return tuple(TmaPrecondition(f"t{k}", "at_least", 0, "a store's tile index is never negative "
                                         "(a store's coordinates are non-negative, PTX ISA)")
                         for k in range(len(self.tile_shape)) if store) + self.limits
        inner = self.views[0][0] if self.views else contiguous_mode(self.array_modes)   # dimension 0's mode
        for o in self.origin:
            if o.name is None:
                continue
            unit = self._inner_unit(o) if o.mode == inner else 1
            if o.step > 1 and (unit <= o.step or unit % o.step):      # a unit that is a multiple says it all
                out.append(TmaPrecondition(o.name, "multiple", o.step, step_why(o)))
            if unit > o.step:
                out.append(TmaPrecondition(o.name, "multiple", unit, inner_unit_why(unit)))
            if store:
                out.append(TmaPrecondition(o.name, "at_least", 0, "a store's coordinates are non-negative (PTX ISA "
                                           "#data-movement-and-conversion-instructions-tensor-copy-restrictions)"))
        return tuple(out) + self.limits

    def _inner_unit(self, o: TmaOrigin) -> int:
        """Elements of the tensors' type in one 16-byte unit along the contiguous mode."""
        return max(1, BOX_START_UNIT * o.unit // self.elem_bytes)

    def _split(self, args: tuple, values: dict, who: str) -> tuple[dict, dict]:
        """``(coordinate values by name, stage values)`` from positional coordinates and keyword values."""
        names = self.coordinate_names
        if len(args) > len(names):
            raise PlanError(f"{who}{len(args)} coordinates given; the plan takes {len(names)} "
                            f"({', '.join(names) or 'none: its origin is static'})")
        what = (lambda n: f"tile index of mode {n[1:]}") if not self.origin else (lambda n: f"coordinate {n}")
        coords = {n: as_int(v, f"{who}{what(n)}") for n, v in zip(names, args)}
        stage_names = {s.name for s in self.stages}
        for k, v in values.items():
            if k in names:
                if k in coords:
                    raise PlanError(f"{who}coordinate {k} given twice")
                coords[k] = as_int(v, f"{who}{what(k)}")
            elif k not in stage_names:
                raise PlanError(f"{who}no coordinate or run-time index named {k!r} (coordinates: "
                                f"{', '.join(names) or 'none'}; run-time indices: {', '.join(stage_names) or 'none'})")
        missing = [n for n in names if n not in coords]
        if missing:
            raise PlanError(f"{who}the coordinate(s) {', '.join(missing)} need a value")
        for n, v in coords.items():
            if not COORD_MIN <= v <= COORD_MAX:
                raise PlanError(f"{who}{n} = {v} is outside the signed 32-bit range of a TMA coordinate")
        return coords, {k: v for k, v in values.items() if k in stage_names}

    def coords(self, tile: tuple = (), cta: int = 0, **values: int) -> list[tuple[int, ...]]:
        """Every instruction's tensor-map coordinates (dim 0 first), as CTA ``cta`` of a multicast issues them:
        ``tile`` is the tile index (one per array mode) or, for an element-origin plan, the run-time origins in
        order (or by name in ``values``)."""
        if not isinstance(tile, tuple):
            raise TypeError(f"coords: the tile index or run-time origins form a tuple, got {tile!r}")
        if not self.origin and len(tile) != len(self.tile_shape):
            raise PlanError(f"the tile index has {len(tile)} entries; the array has {len(self.tile_shape)} modes")
        coords, _ = self._split(tile, {k: v for k, v in values.items() if k in self.coordinate_names}, "coords: ")
        base = [0] * self.tensor_map.rank
        for p in self.preconditions:
            p.check(coords[p.name], "coords: ")
        if not self.origin:
            for t in self.tile:
                value = coords[f"t{t.mode}"]
                if value < 0:
                    raise PlanError(f"tile index {value} of mode {t.mode} is negative")
                base[t.dim] += t.value(value)
        else:
            for o in self.origin:
                base[o.dim] += origin_value(o, coords) // o.step
        if self.multicast is not None:
            base[self.multicast.dim] += self._slice(cta) * (0 if self.multicast.plain else self.multicast.coord_step)
        return [tuple(o + c for o, c in zip(base, i.coords)) for i in self.instructions]

    def origin_elements(self, *args: int, **values: int) -> tuple[int, ...]:
        """The box origin per array mode, in the map's elements, for these coordinates (tile indices or run-time
        origins): what a reference reads the tile from."""
        coords, _ = self._split(args, values, "origin_elements: ")
        if not self.origin:
            return tuple(coords[f"t{k}"] * n for k, n in enumerate(self.tile_shape))
        return tuple(origin_value(o, coords) // o.unit for o in sorted(self.origin, key=lambda o: o.mode))


    def _slice(self, cta: int) -> int:
        """The slice of the tile CTA rank ``cta`` issues (0 without multicast)."""
        cta = as_int(cta, "cta")
        if self.multicast is None:
            if cta not in (0, 1) or (cta and not self.atom.pair):
                raise PlanError(f"CTA {cta}: the plan is issued by 1 CTA")
            return 0
        spec = self.multicast.spec
        if not 0 <= cta < spec.size or spec.mask_of(cta) is None:
            raise PlanError(f"CTA {cta}: the multicast is issued by the CTAs {spec.participants()} of the "
                            f"{spec.describe()}")
        return spec.slice_of(cta)

    def stage_offset(self, **values: int) -> int:
        """Bytes the run-time indices' values move every box (each value in range, every index given)."""
        return stage_offset(self.stages, values, "TMA plan: ")

    def at(self, **values: int) -> "TmaPlan":
        """The static plan of given values: run-time origins fixed (each checked against ``preconditions``) and,
        when the run-time indices are given, the boxes moved by their steps (every index needs a value then)."""
        names = set(self.coordinate_names) if self.origin else set()
        coords = {k: as_int(v, f"at: {k}") for k, v in values.items() if k in names}
        stage_values = {k: v for k, v in values.items() if k not in names}
        plan = self
        if coords:
            for k, v in coords.items():
                if not COORD_MIN <= v <= COORD_MAX:
                    raise PlanError(f"at: {k} = {v} is outside the signed 32-bit range of a TMA coordinate")
            for p in self.preconditions:
                if p.name in coords:
                    p.check(coords[p.name], "at: ")
            plan = attrs.evolve(self, origin=tuple(attrs.evolve(o, value=coords[o.name], name=None)
                                                   if o.name in coords else o for o in self.origin),
                                limits=tuple(p for p in self.limits if p.name not in coords))
            if not stage_values:
                return plan
        shift = self.stage_offset(**stage_values)
        return attrs.evolve(plan, smem=attrs.evolve(plan.smem, offset=plan.smem.offset + shift // self.elem_bytes),
                            stages=(), instructions=tuple(attrs.evolve(i, smem_offset=i.smem_offset + shift)
                                                          for i in plan.instructions))

    def stream(self, smem_base: int, *tile: int, cta: int = 0, **values: int) -> list[TmaIssue]:
        """``TmaIssue(ptx, coords, smem, mask, policy)`` per instruction for the buffer at shared address
        ``smem_base``, the coordinates ``tile`` (tile indices, or the run-time origins in order; by name in
        ``values`` too) and the values of the run-time indices, as CTA rank ``cta`` of a multicast issues them."""
        smem_base = self.smem_base(smem_base)
        _, stage_values = self._split(tile, values, "stream: ")
        mc = self.multicast
        shift = (self._slice(cta) * mc.smem_step if mc else 0) + self.stage_offset(**stage_values)
        coords = self.coords(tuple(tile), cta, **{k: v for k, v in values.items() if k not in stage_values})
        mask = mc.spec.mask_of(cta) if mc and not mc.plain else None
        return [TmaIssue(i.ptx, c, 0 if self.direction == "prefetch" else smem_base + shift + i.smem_offset, mask,
                         self.cache_hint)
                for i, c in zip(self.instructions, coords)]

    def prefetch(self) -> "TmaPlan":
        """The same boxes as an L2 prefetch (``cp.async.bulk.prefetch.tensor``: no shared memory, no completion),
        to warm L2 with a tile a later load reads."""
        if self.direction != "load" or self.multicast is not None:
            raise PlanError("prefetch: a prefetch is made from a load plan without multicast")
        atom = tma_atom("prefetch", self.atom.rank, cache_hint=self.atom.cache_hint)
        return attrs.evolve(self, direction="prefetch", atom=atom,
                            instructions=tuple(attrs.evolve(i, ptx=atom.ptx) for i in self.instructions))

    def retarget(self, group: GlobalTensor | None = None, *, extents: Any = None, strides: Any = None) -> Any:
        """The device-side edit that points this plan's tensor map at another array of the same type and mode
        order (a group of a grouped GEMM): ``copy.tma.retarget.TensorMapReplace``, its fields that differ (the
        global address always; dims and strides from ``group``'s layout, or per mode from ``extents`` /
        ``strides`` as ints or run-time ``pc.dynamic`` values) and the code that edits, publishes and acquires."""
        return view("retarget", self, group, extents, strides)

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: one elected thread (of each CTA of a multicast or pair)."""
        return Convention("elected", 1)

    def cuda(self, name: str = "pycute_tma_copy") -> str:
        """A ``__device__`` function that issues the tile's boxes from the calling (elected) thread:
        ``name(const void* map, unsigned smem, unsigned mbar, int ...)`` for a load (the caller arms ``mbar``
        with ``name_expect_tx`` bytes), ``name(const void* map, unsigned smem, int ...)`` for a store, which
        commits its boxes as one bulk group itself (the caller waits with ``pycute_bulk_wait_group_read<0>()``
        before reusing the tile and ``pycute_bulk_wait_group<0>()`` before reading the array). The ``int``
        parameters are ``coordinate_names`` (tile indices, or run-time element origins), then ``unsigned`` stage
        indices. Compiled with ``-DPYCUTE_CHECKED`` (``compile_cuda(checked=True)``) it traps, after a printf
        naming the rule, on coordinates that break ``preconditions``."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the plan for several tiles or origins (partly and wholly out of bounds, negative and unaligned
        where the plan allows them) and compare with the two layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m = self.tensor_map
        n = len(self.instructions)
        kind = f"{self.reduce} reduction" if self.reduce else self.direction
        fill = "NaN" if m.oob_fill else "zeros"
        lines = [f"TMA {kind} plan: {self.src!r} -> {self.dst!r}",
                 *([f"  element     {self.element} widened to {m.dtype}: {self.gmem.bits // dtype(self.element).bits} "
                    f"per tensor-map element (same bytes, fewer elements per box)"] if self.element else []),
                 f"  instruction {self.atom.ptx}",
                 f"  tensor map  {m.dtype} (type {m.data_type}), dims {m.global_dims}, strides {m.global_strides} B, "
                 f"box {m.box}, element strides {m.element_strides}, swizzle {m.swizzle.name}, L2 promotion "
                 f"{_L2_NAMES[m.l2_promotion]}, OOB fill {fill}",
                 *([f"  row pitch   {m.swizzle.row_pitch(m.box[0] * self.elem_bytes)} B per box row of "
                    f"{m.box[0] * self.elem_bytes} B (a narrow row under the {m.swizzle.name} swizzle keeps a whole "
                    f"pattern row)"] if m.swizzle.row_pitch(m.box[0] * self.elem_bytes) != m.box[0] * self.elem_bytes
                   else []),
                 *([f"  cache hint  .L2::cache_hint with createpolicy {self.cache_hint}"] if self.cache_hint else []),
                 *[f"  view        {n}" for n in self.notes],
                 f"  count       {n} box{'es' if n != 1 else ''} of {m.box_bytes} B per tile; lower bound "
                 f"{self.lower_bound}",
                 f"  shared      {self.smem_reach} B from the buffer base (of {smem_capacity(self.targets)[0]} B a "
                 f"CTA may have)"]
        if self.direction == "load":
            lines.append(f"  expect_tx   {self.expect_tx} B per tile (full boxes, out-of-bounds parts included)")
        if self.atom.pair:
            lines.append(f"  pair        .cta_group::2 ({', '.join(self.targets[:2])}, ...): each CTA of the pair loads "
                         f"its own tile; both complete on the even CTA's mbarrier, which expects the {self.expect_tx} B")
        if self.multicast is not None:
            lines.append(self._multicast_line())
        if self.rejected:
            lines.append("  larger boxes refused:")
            lines += [f"    {r.candidate:<22} {r.reason}" for r in self.rejected]
        for s in self.stages:
            lines.append(f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B shared memory per unit (every "
                         f"value keeps the boxes aligned)")
        if self.origin:
            lines.append("  origin (array elements) -> coordinates: " + ", ".join(
                f"mode {o.mode} at {o.label()}" + (f" / {o.step}" if o.step > 1 else "") + f" on dim {o.dim}"
                for o in self.origin))
            kept = " keeping the preconditions" if self.preconditions else ""
            lines.append(f"  any origin{kept} loads the array's elements there; elements outside it load as {fill}"
                         if self.direction != "store" else
                         f"  any origin{kept} stores the elements inside the array; the rest are dropped")
        else:
            lines.append("  tile index -> coordinates: " + ", ".join(
                f"{t.formula()} on dim {t.dim}" for t in self.tile))
        if self.preconditions:
            lines.append("  preconditions (checked by stream/at; the code traps on them under -DPYCUTE_CHECKED):")
            lines += [f"    {p.rule:<22} {p.why}" for p in self.preconditions]

        lines.append("  boxes (coordinates from the tile's; shared-memory byte offset):")
        lines += [f"    {i.coords}  smem +{i.smem_offset}" for i in self.instructions[:16]]
        if n > 16:
            lines.append(f"    ... {n - 16} more")
        return "\n".join(lines)

    def _multicast_line(self) -> str:
        """explain()'s line for a multicast: how the tile is split over the CTAs of a mask, or that each mask
        names its issuer alone (a plain load)."""
        mc = self.multicast
        assert mc is not None
        if mc.plain:
            who = (f"CTA rank {mc.spec.participants()[0]} loads the whole tile into its own shared memory and the "
                   f"others issue nothing" if mc.spec.mask is not None else "every CTA loads its own tile")
            return (f"  multicast   {mc.spec.describe()}: each mask names its issuer alone, so the load is a plain one "
                    f"(no .multicast::cluster): {who}")
        return (f"  multicast   {mc.spec.describe()}: the k-th CTA of a mask issues the boxes moved by k x "
                f"{mc.coord_step} on dim {mc.dim} and k x {mc.smem_step} B, written to every CTA of the mask")

    def __repr__(self) -> str:
        m = self.tensor_map
        kind = f"reduce.{self.reduce}" if self.reduce else self.direction + (".pair" if self.atom.pair else "")
        at = f", origin ({', '.join(o.label() for o in self.origin)})" if self.origin else ""
        tx = f", expect_tx {self.expect_tx} B" if self.direction == "load" else ""
        return (f"TmaPlan({kind}, {len(self.instructions)} x {m.rank}d box {m.box}, swizzle "
                f"{m.swizzle.name}{at}{tx})")
