"""An epilogue from plans alone (``make_epilogue``): registers -> (convert) -> a swizzled shared tile ->
``fence.proxy.async.shared::cta`` -> a barrier over the fragment's threads -> one thread's TMA store of the tile,
completed as a bulk group. Every shared address and conversion comes from the register -> shared plan, every box
from the TMA store plan of the same tile; the composition checks that the boxes cover exactly the tile.

The generated function takes the output tile's origin in element coordinates, one per array mode (row ``m0``,
column ``n0``); the TMA store plan takes tile indices today, so the origin is divided by the tile's extents on the
way (``tma_arguments``: the one place that knows the TMA plan's convention)."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ...errors import PlanError
from ...int_tuple import as_int, product
from ...tensor.gmem import GlobalTensor
from ...tensor.region import Dynamic
from ...tensor.rmem import RegisterFragment
from ...tensor.smem import SmemTensor
from ...views import view
from ..tma.plan import TmaPlan
from ..tma.planner import make_tma_copy
from .plan import SmemCopyPlan
from .planner import make_smem_copy

__all__ = ["EpiloguePlan", "make_epilogue", "tma_arguments"]

#: Named barriers are 0-15; 0 is __syncthreads'.
MAX_BARRIER_ID = 15


@attrs.frozen(repr=False, eq=False)
class EpiloguePlan:
    """``store`` (registers -> shared, with the conversion) and ``tma`` (the shared tile -> global memory), joined by
    the proxy fence and named barrier ``barrier_id`` over the fragment's threads."""

    store: SmemCopyPlan
    tma: TmaPlan
    barrier_id: int | Dynamic = 1       # a run-time id (pc.dynamic) when warpgroups share the code

    @property
    def in_flight(self) -> int:
        """TMA stores of the ring that may still be reading when a slot is written again: the ring's slots less
        one (slots written in turn), 0 without a ring."""
        return product(tuple(s.extent for s in self.store.stages)) - 1 if self.store.stages else 0

    VARIANT: ClassVar[str] = "epilogue"

    @property
    def threads(self) -> int:
        return self.store.threads

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return self.tma.tile_shape

    def tma_arguments(self, origin: tuple[int, ...]) -> tuple[int, ...]:
        """The TMA store plan's tile arguments for the output tile at element ``origin``."""
        return tma_arguments(self.tma, origin)

    def cuda(self, name: str = "pycute_epilogue") -> str:
        """``name(map, smem, thread, frag, c0, c1, ...)`` (every thread of the fragment), ``name_wait(thread)``
        (before ``smem`` is written again) and the two plans' functions ``name_store`` and ``name_tma``."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate registers -> shared -> global for two output tiles and compare the array with the layouts."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        return "\n".join([
            f"epilogue: {self.store.fragment!r} -> {self.store.smem!r} -> {self.tma.gmem!r}",
            f"  1. every thread of the {self.threads}: {self.store!r}",
            "  2. fence.proxy.async.shared::cta (the generic proxy's shared writes, visible to the TMA store)",
            f"  3. bar.sync {_barrier_text(self.barrier_id)}, {self.threads} (every thread's writes done)",
            f"  4. thread 0: {self.tma!r}, then cp.async.bulk.commit_group",
            f"  before the tile is written again: thread 0 waits cp.async.bulk.wait_group.read {self.in_flight} (the "
            f"ring's slots written in turn), then the barrier",
            "", self.store.explain(), "", self.tma.explain()])

    def __repr__(self) -> str:
        return f"EpiloguePlan({self.store!r}; {self.tma!r})"


def _barrier_text(barrier_id: int | Dynamic) -> str:
    return f"<{barrier_id.name}, at run time>" if isinstance(barrier_id, Dynamic) else str(barrier_id)


def tma_arguments(tma: TmaPlan, origin: tuple[int, ...]) -> tuple[int, ...]:
    """The TMA store plan's arguments for the tile whose first element is at array coordinate ``origin``: each a
    whole multiple of the tile's extent along its mode."""
    if len(origin) != len(tma.tile_shape):
        raise PlanError(f"the output tile's origin has {len(origin)} coordinates; the array has "
                        f"{len(tma.tile_shape)} modes")
    out = []
    for k, (c, n) in enumerate(zip(origin, tma.tile_shape)):
        c = as_int(c, f"origin coordinate {k}")
        if c % n or c < 0:
            raise PlanError(f"origin coordinate {k} is {c}: a TMA store of this tile starts at a multiple of its "
                            f"extent {n} along mode {k}")
        out.append(c // n)
    return tuple(out)


def make_epilogue(fragment: RegisterFragment, tile: SmemTensor, array: GlobalTensor, arch: str | None = None,
                  satfinite: bool | None = None, barrier_id: int | Dynamic = 1,
                  form: str | None = None) -> EpiloguePlan:
    """Plan the epilogue of ``fragment`` (a thread-value layout of the output tile) through the shared ``tile``
    (any swizzle TMA has; a run-time stage index for a ring of tiles) into the global ``array``: the
    register -> shared plan (``make_smem_copy``, converting f32 to the tile's type) and the TMA store of the tile
    (``make_tma_copy``), checked to move the same tile. ``barrier_id`` names the bar.sync the fragment's threads
    share (1-15), or ``pc.dynamic(name)`` for an id the caller passes at run time (warpgroups that run the same
    code on their own tiles each take their own barrier). ``form`` pins the register -> shared instruction
    (``make_smem_copy``'s: ``"stmatrix.x4.trans"``, ``"st.shared.v4.b32"``, ...)."""
    if not isinstance(fragment, RegisterFragment) or not isinstance(tile, SmemTensor) or \
            not isinstance(array, GlobalTensor):
        raise TypeError(f"make_epilogue: a register fragment, a shared tile and a global array, got "
                        f"{type(fragment).__name__}, {type(tile).__name__}, {type(array).__name__}")
    if not isinstance(barrier_id, Dynamic):
        barrier_id = as_int(barrier_id, "make_epilogue: barrier_id")
    if not isinstance(barrier_id, Dynamic) and not 1 <= barrier_id <= MAX_BARRIER_ID:
        raise PlanError(f"make_epilogue: barrier_id {barrier_id}: named barriers 1-{MAX_BARRIER_ID} (0 is "
                        f"__syncthreads', which every thread of the CTA must reach)")
    if array.dtype != tile.dtype:
        raise PlanError(f"make_epilogue: the tile holds {tile.dtype.name} and the array {array.dtype.name}; the TMA "
                        f"store moves bytes unchanged (convert in the register -> shared step)")
    store = make_smem_copy(tile, fragment, arch, satfinite, form)
    tma = make_tma_copy(array, tile)
    boxes = tma.tensor_map.box_bytes * len(tma.instructions)
    held = tile.layout.size() * tile.bits // 8
    if boxes != held:
        raise PlanError(f"make_epilogue: the TMA boxes move {boxes} B, the tile holds {held} B; the store must "
                        f"move exactly the tile\n  tile: {tile!r}\n  {tma!r}")
    if not store.covers:
        raise PlanError(f"make_epilogue: the fragment holds {len(set(store.table.ravel().tolist()))} of the tile's "
                        f"{tile.layout.size()} elements; the TMA store would write the rest unset")
    return EpiloguePlan(store, tma, barrier_id)
