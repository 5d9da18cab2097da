"""The epilogue over a ring of TMEM accumulators as a plan (``make_accumulator_epilogue``): the accumulator
pipeline's consumer side -- wait for a filled accumulator, read it chunk by chunk with ``tcgen05.ld``, give it back
to the MMA after the last read, and store every chunk through a ring of shared tiles with the TMA store epilogue
(``make_epilogue``: registers -> convert -> swizzled shared -> fence -> barrier -> TMA store).

The read plan takes two run-time indices, the chunk and the accumulator's stage; its fragment is the epilogue's.
The generated ``<name>_tile`` runs one output tile, ``<name>_finish`` waits for the last TMA stores before the
CTA exits (``pycute.codegen.accumulator``)."""
from __future__ import annotations

from typing import Any, ClassVar

import attrs

from ..arch.convention import Convention
from ..arch.sm90.warp import WARP_THREADS
from ..copy.smem_ldst.epilogue import EpiloguePlan, make_epilogue
from ..copy.tcgen05_ldst.plan import Tcgen05LdStPlan
from ..copy.tcgen05_ldst.planner import make_tmem_copy
from ..composition import composition
from ..errors import PlanError
from ..int_tuple import as_int
from ..layout import Layout
from ..tensor.gmem import GlobalTensor
from ..tensor.region import DynamicIndex, dynamic
from ..tensor.rmem import make_fragment
from ..tensor.smem import SmemTensor
from ..tensor.stages import make_stages
from ..tensor.tile import mode_extents
from ..tensor.tmem import TmemTensor
from ..views import view
from .plan import PipelineFunction, PipelinePlan

__all__ = ["AccumulatorEpilogue", "make_accumulator_epilogue", "CHUNK_INDEX", "SLOT_INDEX"]

#: The run-time indices of the read (the chunk of columns) and of the store's ring of shared tiles.
CHUNK_INDEX, SLOT_INDEX = "chunk", "slot"
#: tcgen05.ld moves lane quadrant ``warp % 4``: an accumulator of 128 lanes is read by four warps.
_WARPS = 4


@attrs.frozen(repr=False)
class AccumulatorEpilogue:
    """A validated epilogue: the ``accumulators`` pipeline it drains, ``read`` (tcgen05.ld of one ``chunk``-column
    chunk of accumulator stage ``stage``), ``store`` (the TMA store epilogue of that chunk through a ring of
    ``slots`` shared tiles) and the CTA's output tile ``rows`` x ``columns`` (one accumulator)."""

    name: str
    accumulators: PipelinePlan
    read: Tcgen05LdStPlan
    store: EpiloguePlan
    rows: int
    columns: int
    chunk: int
    slots: int

    VARIANT: ClassVar[str] = "accumulator_epilogue"

    @property
    def chunks(self) -> int:
        return self.columns // self.chunk

    @property
    def threads(self) -> int:
        return self.store.threads

    @property
    def smem_bytes(self) -> int:
        """Bytes of the ring of shared tiles (from its 1024-byte aligned base)."""
        step = self.store.store.stages[0].smem_step
        return step * self.slots

    def origin(self, tile: tuple[int, int], chunk: int) -> tuple[int, int]:
        """The array coordinates of chunk ``chunk`` of output tile ``tile`` (m, n): what ``<name>_tile`` passes the
        store."""
        return tile[0] * self.rows, tile[1] * self.columns + chunk * self.chunk

    @property
    def functions(self) -> tuple[PipelineFunction, ...]:
        warps = Convention("warps", self.threads)
        return (PipelineFunction(f"{self.name}_tile", "consumer", warps, "waits for the next accumulator, reads it "
                                 "chunk by chunk (tcgen05.ld), releases it after the last read and stores each chunk "
                                 "through the ring of shared tiles by TMA"),
                PipelineFunction(f"{self.name}_finish", "consumer", warps, "after the last tile: thread 0 waits until "
                                 "its TMA stores are complete"))

    def cuda(self) -> str:
        """The read's and the store's functions (``<name>_read``, ``<name>_store``) and ``functions``."""
        return str(view("cuda", self))

    def explain(self) -> str:
        lines = [f"accumulator epilogue {self.name!r}: {self.rows} x {self.columns} per tile from "
                 f"{self.accumulators!r}, {self.chunks} chunk(s) of {self.chunk} columns, {self.slots} shared tiles",
                 f"  read        {self.read!r}", f"  store       {self.store!r}",
                 "  order       wait full -> tcgen05.fence::after -> per chunk: tcgen05.ld (after the last: "
                 "tcgen05.fence::before, release) -> wait for the slot's last TMA store -> the store epilogue"]
        lines += [f"  {f.name:<22} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"AccumulatorEpilogue({self.name!r}, {self.rows} x {self.columns} in {self.chunks} x {self.chunk} "
                f"columns, {self.slots} slots -> {self.store.tma.gmem!r})")


def _ring(accumulator: Any, accumulators: PipelinePlan) -> tuple[TmemTensor, DynamicIndex, int, int]:
    """Stage 0 of the accumulator ring, its run-time index, rows and columns."""
    if not isinstance(accumulator, TmemTensor) or len(accumulator.dynamic) != 1 or \
            accumulator.dynamic[0].extent != accumulators.stages:
        raise PlanError(f"make_accumulator_epilogue: the accumulator is a TMEM ring with one run-time index over the "
                        f"pipeline's {accumulators.stages} stages, got {accumulator!r}")
    if accumulator.dtype.name != "f32":
        raise PlanError(f"make_accumulator_epilogue: the accumulator holds {accumulator.dtype.name}; the epilogue "
                        f"converts f32 accumulators")
    extents = mode_extents(accumulator.layout)
    if len(extents) != 2:
        raise PlanError(f"make_accumulator_epilogue: the accumulator is (rows, columns), not {accumulator!r}")
    return accumulator, accumulator.dynamic[0], extents[0], extents[1]


def _chunked(accumulator: TmemTensor, index: DynamicIndex, rows: int, columns: int, chunk: int) -> TmemTensor:
    """The ring as (rows, chunk, chunks, stages), indexed at run time by the chunk and the stage."""
    ring = Layout(tuple(accumulator.layout.shape) + (index.extent,),
                  tuple(accumulator.layout.stride) + (index.stride,))
    split = Layout((rows, chunk, columns // chunk, index.extent), (1, rows, rows * chunk, rows * columns))
    whole = attrs.evolve(accumulator, layout=composition(ring, split), dynamic=())
    return whole[:, :, dynamic(CHUNK_INDEX), dynamic(index.name)]


def make_accumulator_epilogue(accumulators: PipelinePlan, accumulator: TmemTensor, array: GlobalTensor,
                              tile: SmemTensor, *, slots: int = 2, barrier_id: int = 1, arch: str | None = None,
                              name: str = "epilogue") -> AccumulatorEpilogue:
    """The epilogue that drains ``accumulators``: each ``(rows, columns)`` accumulator of ``accumulator`` (the placed
    TMEM ring the MMA fills, one run-time index) is read in chunks of ``tile``'s columns by four warps (lane quadrant
    ``warp % 4``) and stored through a ring of ``slots`` copies of ``tile`` (its rows the accumulator's, any swizzle
    TMA has, any type the conversion makes) into ``array`` (rows, columns) by TMA. ``barrier_id`` is the named
    barrier of the four warps."""
    if not isinstance(accumulators, PipelinePlan) or not isinstance(array, GlobalTensor) or \
            not isinstance(tile, SmemTensor):
        raise TypeError(f"make_accumulator_epilogue: a PipelinePlan, a TMEM ring, a global array and a shared tile, "
                        f"got {type(accumulators).__name__}, {type(accumulator).__name__}, {type(array).__name__}, "
                        f"{type(tile).__name__}")
    if accumulators.consumer.release != "arrive" or accumulators.producer.kind != "commit":
        raise PlanError(f"make_accumulator_epilogue: {accumulators!r} is not an accumulator pipeline (filled by the "
                        f"MMA's commit, released by the epilogue's arrivals)")
    if accumulators.consumer.convention.threads * accumulators.consumer.count != _WARPS * WARP_THREADS:
        raise PlanError(f"make_accumulator_epilogue: the accumulator pipeline's consumers are {_WARPS} warps (each "
                        f"reads its lane quadrant), not {accumulators.consumer!r}")
    accumulator, index, rows, columns = _ring(accumulator, accumulators)
    tile_rows, chunk = (mode_extents(tile.layout) + (0,))[:2]
    slots = as_int(slots, "make_accumulator_epilogue: slots")
    if tile.dynamic or tile.offset or len(mode_extents(tile.layout)) != 2 or tile_rows != rows or \
            not 0 < chunk <= columns or columns % chunk:
        raise PlanError(f"make_accumulator_epilogue: the shared tile is one whole chunk (rows {rows}, a divisor of "
                        f"the {columns} columns), not {tile!r}")
    if slots < 1 or (columns // chunk) % slots:
        raise PlanError(f"make_accumulator_epilogue: {slots} shared tile(s) for {columns // chunk} chunks per tile: "
                        f"chunk c writes slot c % slots, so the slots divide the chunks")
    if not isinstance(name, str) or not name.isidentifier():
        raise PlanError(f"make_accumulator_epilogue: name {name!r} is not a C identifier")
    read = make_tmem_copy(_chunked(accumulator, index, rows, columns, chunk), "ld", warps=_WARPS)
    fragment = make_fragment(accumulator.dtype, read.warps * WARP_THREADS, read.fragment, shape=(rows, chunk))
    ring = make_stages(tile, slots)[:, :, dynamic(SLOT_INDEX)]
    store = make_epilogue(fragment, ring, array, arch=arch, barrier_id=barrier_id)
    return AccumulatorEpilogue(name, accumulators, read, store, rows, columns, chunk, slots)
