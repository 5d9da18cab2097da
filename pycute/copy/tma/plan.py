"""The result of make_tma_copy: the tensor map's parameters in the driver's order, the boxes, their coordinates
and shared-memory offsets, and the bytes each mbarrier phase must expect."""
from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ...arch.sm100.tma_pair import PAIR_CTAS, TMA_PAIR_TARGETS
from ...arch.sm90.tma import (DATA_TYPES, INTERLEAVE_NONE, L2_PROMOTION_128B, OOB_FILL_NONE, TMA_TARGETS, TmaDirection,
                              TmaSwizzle)
from ...atoms.tma import TmaAtom, TmaIssue, tma_atom
from ...errors import PlanError
from ...dtypes import dtype
from ...int_tuple import as_int, product
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...views import view
from ..protocol import ArrayTilePlan, Rejection
from ...tensor.stages import SmemStage, stage_offset
from ...tensor.tile import mode_extents
from ...int_tuple import flatten
from ...arch.sm80.cache import CachePolicy
from ...arch.sm90.tma import L2_PROMOTIONS
from .multicast import Multicast, TmaMulticast
from .view import TmaTileCoord

__all__ = ["TensorMapParams", "TmaInstruction", "TmaMulticast", "TmaStage", "TmaTileCoord", "TmaPlan", "Multicast"]


@attrs.frozen
class TensorMapParams:
    """``cuTensorMapEncodeTiled``'s arguments but the address, dimension 0 (the contiguous one) first:
    ``global_dims`` in elements, ``global_strides`` in bytes for dims 1.., ``box`` in elements."""

    dtype: str
    data_type: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: TmaSwizzle
    interleave: int = INTERLEAVE_NONE
    l2_promotion: int = L2_PROMOTION_128B
    oob_fill: int = OOB_FILL_NONE

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def box_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype] * product(self.box)

    def encode(self, global_address: int) -> Any:
        """The ``CUtensorMap`` for an array at ``global_address`` (a device pointer), through the CUDA driver's
        ``cuTensorMapEncodeTiled``; a machine without a driver gets a CompileError."""
        from ...compile.runtime import encode_tensor_map
        return encode_tensor_map(self, as_int(global_address, "tensor_map: global_address"))


_L2_NAMES = {v: k for k, v in L2_PROMOTIONS.items()}


#: Bytes per element of the types a tensor map names.
DTYPE_BYTES = {name: dtype(name).bits // 8 for name in DATA_TYPES}


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
    exactly what the generated code issues for tile index ``(t0, t1, ...)``; a load's mbarrier must expect
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

    def coords(self, tile: tuple[int, ...], cta: int = 0) -> list[tuple[int, ...]]:
        """Every instruction's tensor-map coordinates for tile index ``tile`` (one per global mode), as CTA ``cta``
        (its rank in the cluster) of a multicast issues them."""
        if len(tile) != len(self.tile_shape):
            raise PlanError(f"the tile index has {len(tile)} entries; the array has {len(self.tile_shape)} modes")
        origin = [0] * self.tensor_map.rank
        for k, value in enumerate(tile):
            if as_int(value, f"tile index of mode {k}") < 0:
                raise PlanError(f"tile index {value} of mode {k} is negative")
        for t in self.tile:
            origin[t.dim] += t.value(tile[t.mode])
        if self.multicast is not None:
            origin[self.multicast.dim] += self._slice(cta) * self.multicast.coord_step
        return [tuple(o + c for o, c in zip(origin, i.coords)) for i in self.instructions]

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
        """The static plan of one value of each run-time index: value 0's boxes moved by the indices' steps."""
        shift = self.stage_offset(**values)
        return attrs.evolve(self, smem=attrs.evolve(self.smem, offset=self.smem.offset + shift // self.elem_bytes),
                            stages=(),
                            instructions=tuple(attrs.evolve(i, smem_offset=i.smem_offset + shift)
                                               for i in self.instructions))

    def stream(self, smem_base: int, *tile: int, cta: int = 0, **values: int) -> list[TmaIssue]:
        """``TmaIssue(ptx, coords, smem, mask, policy)`` per instruction for the buffer at shared address
        ``smem_base``, tile index ``tile`` and the values of the run-time indices, as CTA rank ``cta`` of a
        multicast issues them."""
        smem_base = self.smem_base(smem_base)
        mc = self.multicast
        shift = (self._slice(cta) * mc.smem_step if mc else 0) + self.stage_offset(**values)
        mask = mc.spec.mask_of(cta) if mc else None
        return [TmaIssue(i.ptx, c, 0 if self.direction == "prefetch" else smem_base + shift + i.smem_offset, mask,
                         self.cache_hint)
                for i, c in zip(self.instructions, self.coords(tile, cta))]

    def prefetch(self) -> "TmaPlan":
        """The same boxes as an L2 prefetch (``cp.async.bulk.prefetch.tensor``: no shared memory, no completion),
        to warm L2 with a tile a later load reads."""
        if self.direction != "load" or self.multicast is not None:
            raise PlanError("prefetch: a prefetch is made from a load plan without multicast")
        atom = tma_atom("prefetch", self.atom.rank, cache_hint=self.atom.cache_hint)
        return attrs.evolve(self, direction="prefetch", atom=atom,
                            instructions=tuple(attrs.evolve(i, ptx=atom.ptx) for i in self.instructions))

    def cuda(self, name: str = "pycute_tma_copy") -> str:
        """A ``__device__`` function that issues the tile's boxes from the calling (elected) thread:
        ``name(const void* map, unsigned smem, unsigned mbar, int t0, ...)`` for a load (the caller arms ``mbar``
        with ``name_expect_tx`` bytes), ``name(const void* map, unsigned smem, int t0, ...)`` for a store (then
        commit and wait the bulk group)."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the plan for several tiles (one partly out of bounds) and compare with the two layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m = self.tensor_map
        n = len(self.instructions)
        kind = f"{self.reduce} reduction" if self.reduce else self.direction
        lines = [f"TMA {kind} plan: {self.src!r} -> {self.dst!r}",
                 *([f"  element     {self.element} widened to {m.dtype}: {self.gmem.bits // dtype(self.element).bits} "
                    f"per tensor-map element (same bytes, fewer elements per box)"] if self.element else []),
                 f"  instruction {self.atom.ptx}",
                 f"  tensor map  {m.dtype} (type {m.data_type}), dims {m.global_dims}, strides {m.global_strides} B, "
                 f"box {m.box}, element strides {m.element_strides}, swizzle {m.swizzle.name}, L2 promotion "
                 f"{_L2_NAMES[m.l2_promotion]}, OOB fill {'NaN' if m.oob_fill else 'zeros'}",
                 *([f"  row pitch   {m.swizzle.row_pitch(m.box[0] * self.elem_bytes)} B per box row of "
                    f"{m.box[0] * self.elem_bytes} B (a narrow row under the {m.swizzle.name} swizzle keeps a whole "
                    f"pattern row)"] if m.swizzle.row_pitch(m.box[0] * self.elem_bytes) != m.box[0] * self.elem_bytes
                   else []),
                 *([f"  cache hint  .L2::cache_hint with createpolicy {self.cache_hint}"] if self.cache_hint else []),
                 *[f"  view        {n}" for n in self.notes],
                 f"  count       {n} box{'es' if n != 1 else ''} of {m.box_bytes} B per tile; lower bound "
                 f"{self.lower_bound}"]
        if self.direction == "load":
            lines.append(f"  expect_tx   {self.expect_tx} B per tile (full boxes, out-of-bounds parts included)")
        if self.atom.pair:
            lines.append(f"  pair        .cta_group::2 ({', '.join(self.targets[:2])}, ...): each CTA of the pair loads "
                         f"its own tile; both complete on the even CTA's mbarrier, which expects the {self.expect_tx} B")
        if self.multicast is not None:
            mc = self.multicast
            lines.append(f"  multicast   {mc.spec.describe()}: the k-th CTA of a mask issues the boxes moved by k x "
                         f"{mc.coord_step} on dim {mc.dim} and k x {mc.smem_step} B, written to every CTA of the mask")
        if self.rejected:
            lines.append("  larger boxes refused:")
            lines += [f"    {r.candidate:<22} {r.reason}" for r in self.rejected]
        for s in self.stages:
            lines.append(f"  run-time    {s.name} in [0, {s.extent}): +{s.smem_step} B shared memory per unit (every "
                         f"value keeps the boxes aligned)")
        lines.append("  tile index -> coordinates: " + ", ".join(
            f"{t.formula()} on dim {t.dim}" for t in self.tile))
        lines.append("  boxes (coordinates from the tile's; shared-memory byte offset):")
        lines += [f"    {i.coords}  smem +{i.smem_offset}" for i in self.instructions[:16]]
        if n > 16:
            lines.append(f"    ... {n - 16} more")
        return "\n".join(lines)

    def __repr__(self) -> str:
        m = self.tensor_map
        kind = f"reduce.{self.reduce}" if self.reduce else self.direction + (".pair" if self.atom.pair else "")
        return (f"TmaPlan({kind}, {len(self.instructions)} x {m.rank}d box {m.box}, swizzle "
                f"{m.swizzle.name}, expect_tx {self.expect_tx} B)")
