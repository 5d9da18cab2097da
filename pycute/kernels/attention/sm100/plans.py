"""The plans of one sm_100a attention configuration: every address, count, byte total, phase, TMEM column and register
grouping the kernel uses comes from these (the Hopper kernel's ``plans.py`` for the same arrays and tiles).

Shared memory, one buffer (``make_pipeline(..., after=)``), filled by the load warp with TMA:

* ``q``: Q's ring (``block_m`` = 128 rows of a work tile), released by the MMA warp's ``tcgen05.commit`` once the
  tile's last S = Q K^T has read it;
* ``k``, ``v``: K's and V's rings (``block_n`` keys per step), each released by the commit after the MMA that read it;
* ``store_o`` (``make_epilogue``): O's ``128 x 64`` chunks, converted, in a ring of two swizzled tiles after the rings,
  each stored by one TMA store.

Tensor memory, one allocation (``TmemAllocation``; PTX ISA #tensor-memory):

* ``s``: two ``128 x block_n`` f32 accumulators (S of one key block is read while the next is multiplied), a ring
  (``tmem_s``) filled by the MMA's commit and released by the softmax warps' arrivals;
* ``p``: P, ``128 x block_n`` of the element type where the TS-form MMA reads its A (``make_tmem_operand``'s data
  path: row r in lane r, two elements a column), written by ``tcgen05.st`` (``tmem_p``: filled by the softmax
  warps' arrivals, released by the commit after the P V that read it);
* ``o``: O, ``128 x head_dim`` f32, accumulated by every P V of a tile (``tmem_o``: the commit after the tile's last
  P V fills it, the softmax warps release it once they have read it out).

Why P goes to TMEM and not to shared memory: ``tcgen05.mma`` takes A from TMEM (``[a-tmem]``, PTX ISA #tcgen05-mma)
and pycute's MMA plan places that A (``make_mma(o, p, v)``: ``tests/mma/test_attention_pv.py`` holds that a
``tcgen05.st`` plan's P is exactly the A it reads), so P goes from the softmax registers to the tensor core with one
``tcgen05.st`` and no shared-memory round trip, fence or bank conflict (B must be in shared memory: V is).

MMAs (``make_mma``, ``tcgen05.mma.cta_group::1.kind::f16``, M 128):

* ``qk``: S = Q K^T, A = Q's ring, B = K's ring (both K-major under the 128-byte swizzle);
* ``pv``: O (+)= P V, A = P in TMEM, B = V's ring read as ``(head_dim, keys)`` MN-major (the head dim is V's
  contiguous mode), as the Hopper kernel reads it.

Register fragments (``make_tmem_copy``, 4 warps, warp w moving lane quadrant w % 4, PTX ISA #tcgen05-memory-layout):
``s_read`` (the whole S row of each thread: ``32x32b``), ``p_write`` (P, packed two a register), ``o_read`` /
``o_write`` (one 64-column chunk of O: its rescale and its store). The softmax reads the coordinates of ``s_read``'s
fragment (``fragment_coords``), never a register index."""
from __future__ import annotations

from typing import Any, Protocol

import attrs

from ....arch.sm100.datapath import data_path
from ....arch.sm100.smem import SMEM_MAX_BYTES
from ....composition import composition
from ....copy import EpiloguePlan, Tcgen05LdStPlan, make_epilogue, make_tma_copy, make_tmem_copy
from ....dtypes import f32
from ....errors import PlanError
from ....layout import Layout
from ....mma import MmaPlan, make_mma, mma_accumulator
from ....pipeline import Consumer, PipelinePlan, Producer, TileScheduler, make_pipeline, make_tile_scheduler
from ....tensor import (TmemAllocation, TmemTensor, dynamic, kmajor_smem_tensor, make_fragment, make_stages)
from ..plans import DTYPES, TEMPLATE, Problem, _array, _tile, _transposed

__all__ = ["Sm100Plans", "Tiling", "BLOCK_M", "O_CHUNK", "S_BUFFERS", "EPILOGUE_BARRIER", "SOFTMAX_WARPS"]

#: Rows of Q per work tile: the M of one cta_group::1 MMA whose D is row r in TMEM lane r (PTX ISA
#: #tcgen05-data-path-layout-d).
BLOCK_M = 128
#: Columns of O per rescale and per store: one 128-byte swizzle atom of a 16-bit O row.
O_CHUNK = 64
#: S accumulators in TMEM: the next key block's S is multiplied while the softmax reads this one.
S_BUFFERS = 2
#: Shared tiles O's chunks are staged in, stored in turn.
O_SLOTS = 2
#: The softmax warps' named barrier (the store epilogue's).
EPILOGUE_BARRIER = 1
#: The softmax warps: warps 0..3, warp w reading TMEM lane quadrant w (PTX ISA #tcgen05-memory-layout: a warp
#: accesses the lanes of quadrant warpid % 4).
SOFTMAX_WARPS = 4


class Tiling(Protocol):
    """What the plans read of a configuration (``Sm100Config``)."""

    @property
    def dtype(self) -> str: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def block_n(self) -> int: ...

    @property
    def kv_stages(self) -> int: ...


def _chunks(tensor: TmemTensor, rows: int, columns: int, chunk: int) -> TmemTensor:
    """``tensor`` (rows x columns) as its ``chunk``-column chunks, the chunk a run-time index ``chunk``."""
    split = Layout((rows, chunk, columns // chunk), (1, rows, rows * chunk))
    return attrs.evolve(tensor, layout=composition(tensor.layout, split))[:, :, dynamic("chunk")]


@attrs.frozen
class Sm100Plans:
    """The plans of ``config`` for ``problem`` (see the module docstring)."""

    config: Tiling
    q: PipelinePlan
    k: PipelinePlan
    v: PipelinePlan
    tmem_s: PipelinePlan
    tmem_p: PipelinePlan
    tmem_o: PipelinePlan
    alloc: TmemAllocation
    qk: MmaPlan
    pv: MmaPlan
    s_read: Tcgen05LdStPlan
    p_write: Tcgen05LdStPlan
    o_read: Tcgen05LdStPlan
    o_write: Tcgen05LdStPlan
    store_o: EpiloguePlan
    sched: TileScheduler

    @classmethod
    def of(cls, config: Tiling, problem: Problem) -> "Sm100Plans":
        c, p = config, problem
        dt, d = DTYPES[c.dtype], c.head_dim
        q_array = _array(dt, p.seqlen_q, d, p.heads, p.batch, p.q_strides)
        k_array = _array(dt, p.seqlen_k, d, p.kv_heads, p.batch, p.k_strides)
        v_array = _array(dt, p.seqlen_k, d, p.kv_heads, p.batch, p.v_strides)
        o_array = _array(dt, p.seqlen_q, d, p.heads, p.batch, p.o_strides)
        alloc = TmemAllocation(cta_group=1)
        s = alloc.add(f32, make_stages(mma_accumulator(f32, BLOCK_M, c.block_n), S_BUFFERS).layout,
                      name="s")[:, :, dynamic("s")]
        o = alloc.add(f32, mma_accumulator(f32, BLOCK_M, d).layout, name="o")
        path = data_path(BLOCK_M, 1, False)           # where the M 128 cta_group::1 MMA reads an A in TMEM
        if path is None:
            raise PlanError(f"attention (sm_100a): no data path of M {BLOCK_M}, cta_group 1 is placed")
        p_tmem = alloc.add(dt, path.layout(c.block_n, 1), name="p")
        o_chunks = _chunks(o, BLOCK_M, d, O_CHUNK)
        s_read, p_write = make_tmem_copy(s, "ld"), make_tmem_copy(p_tmem, "st")
        o_read, o_write = make_tmem_copy(o_chunks, "ld"), make_tmem_copy(o_chunks, "st")
        o_values = make_fragment(f32, BLOCK_M, o_read.fragment)
        o_staged = make_stages(_tile(dt, BLOCK_M, O_CHUNK), O_SLOTS)[:, :, :, :, dynamic("slot")]
        store_o = make_epilogue(o_values, o_staged, o_array, barrier_id=EPILOGUE_BARRIER)
        # beside the rings: O's staging, the dynamic buffer's alignment slack, the static barriers and TMEM address
        reserve = O_SLOTS * store_o.store.stages[0].smem_step + 1024 + 256
        mma_warp, warp = Consumer("warp", 1, "commit"), Producer("tma", "warp")

        def ring(name: str, rows: int, array: Any, stages: int, after: Any) -> PipelinePlan:
            return make_pipeline({name: make_tma_copy(_tile(dt, rows, d), array)}, consumer=mma_warp, producer=warp,
                                 stages=stages, name=name, arch="sm_100a", reserve=reserve, after=after)
        q = ring("q", BLOCK_M, q_array, 1, ())
        k = ring("k", c.block_n, k_array, c.kv_stages, q)
        v = ring("v", c.block_n, v_array, c.kv_stages, (q, k))
        softmax = Consumer("warp", SOFTMAX_WARPS)
        tmem_s = make_pipeline(consumer=softmax, producer=Producer("commit", "warp"), stages=S_BUFFERS,
                               arch="sm_100a", name="tmem_s")
        tmem_p = make_pipeline(consumer=mma_warp, producer=Producer("arrive", "warp", SOFTMAX_WARPS), stages=1,
                               arch="sm_100a", name="tmem_p")
        tmem_o = make_pipeline(consumer=softmax, producer=Producer("commit", "warp"), stages=1, arch="sm_100a",
                               name="tmem_o")
        q_rows, k_rows = kmajor_smem_tensor(dt, BLOCK_M, d, "128B"), kmajor_smem_tensor(dt, c.block_n, d, "128B")
        qk = make_mma(s.at(s=0), q.ring("q", q_rows, "q_stage"), k.ring("k", k_rows, "k_stage"))
        pv = make_mma(o, p_tmem, v.ring("v", _transposed(k_rows), "v_stage"))
        sched = make_tile_scheduler(None, raster="n", swizzle=1)
        return cls(c, q, k, v, tmem_s, tmem_p, tmem_o, alloc, qk, pv, s_read, p_write, o_read, o_write, store_o,
                   sched)

    @classmethod
    def template(cls, config: Tiling) -> "Sm100Plans":
        """The plans the compiled kernel is generated from (the TMA boxes of any problem are the same:
        ``issues_as``)."""
        return cls.of(config, Problem.dense(4, TEMPLATE, TEMPLATE, 8, 8, config.head_dim))

    @property
    def staging_bytes(self) -> int:
        """Bytes of O's ring of shared tiles, after the K and V rings."""
        return O_SLOTS * self.store_o.store.stages[0].smem_step

    @property
    def smem_bytes(self) -> int:
        """The rings, O's staging and 1 KiB to align the dynamic buffer (the barriers are static)."""
        total = self.v.smem_bytes + self.staging_bytes + 1024
        if total > SMEM_MAX_BYTES:
            raise PlanError(f"attention (sm_100a): {self.v.smem_bytes} B of Q, K and V rings + {self.staging_bytes} B "
                            f"of O staging + 1024 B of alignment = {total} B, over sm_100a's {SMEM_MAX_BYTES} B "
                            f"per CTA")
        return total

    def maps(self) -> tuple[Any, Any, Any, Any]:
        """The tensor-map parameters of Q, K, V and O."""
        return (self.q.load("q").tensor_map, self.k.load("k").tensor_map, self.v.load("v").tensor_map,
                self.store_o.tma.tensor_map)

    def issues_as(self, kernel: "Sm100Plans") -> bool:
        """Whether these plans' TMA copies take the boxes, swizzles and instructions of ``kernel``'s (the compiled
        kernel's), so that their tensor maps drive it."""
        def shape(m: Any) -> tuple:
            return (m.dtype, m.box, m.swizzle, m.element_strides)
        mine = (self.q.load("q"), self.k.load("k"), self.v.load("v"), self.store_o.tma)
        theirs = (kernel.q.load("q"), kernel.k.load("k"), kernel.v.load("v"), kernel.store_o.tma)
        return all(shape(x) == shape(y) for x, y in zip(self.maps(), kernel.maps())) and all(
            [i.coords for i in x.instructions] == [i.coords for i in y.instructions] for x, y in zip(mine, theirs))
