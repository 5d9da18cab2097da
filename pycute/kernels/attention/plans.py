"""The plans of one attention configuration for one problem: every address, count, byte total and phase the kernel
uses comes from these.

* ``q``, ``k``, ``v`` (``make_pipeline``, placed one after another in the buffer): Q's ring (a tile of
  ``block_m`` rows per work tile, its stage released once the tile's O has been stored out of it), K's and V's
  rings (``block_n`` keys per step), each filled by TMA from the load warp and read by every consumer warpgroup;
  K is released once S = Q K^T has read it, V once O += P V has.
* ``qk`` (``make_mma``, A and B in shared memory): S = Q K^T, 64 rows per consumer warpgroup.
* ``pv`` (``make_mma``, A in registers): O += P V, P the warpgroup's probabilities as wgmma's A fragment and V
  read MN-major from K-major rows (the head dim is V's contiguous mode).
* ``store_o`` (``make_epilogue``): each warpgroup's 64 x head_dim O -> bf16 / f16 -> its half of the tile's Q
  stage (stmatrix) -> one TMA store.
* ``sched`` (``make_tile_scheduler``): persistent CTAs over (query block, batch x head) work tiles, a head's
  query blocks consecutive (its K and V stay in L2).
* ``turns`` (``make_turns``): the consumer warpgroups take turns at the tensor cores.

Arrays are ``(rows, head_dim, heads, batch)`` views of torch's ``(batch, seqlen, heads, head_dim)`` tensors (any
strides with a contiguous head dim); a tile is ``(rows, head_dim, 1, 1)``, placed by tile index per mode.
"""
from __future__ import annotations

from typing import Any, Protocol

import attrs

from ...copy import EpiloguePlan, make_epilogue, make_tma_copy
from ...dtypes import bf16, f16, f32
from ...layout import Layout
from ...mma import WgmmaPlan, make_mma, wgmma_a_fragment, wgmma_accumulator
from ...pipeline import (Consumer, PipelinePlan, Producer, TileScheduler, TurnsPlan, make_pipeline,
                         make_tile_scheduler, make_turns)
from ...swizzle import ComposedLayout
from ...tensor import dynamic, kmajor_smem_tensor, make_fragment, make_global_tensor, make_smem_tensor, make_stages

__all__ = ["Problem", "AttentionPlans", "Tiling", "TEMPLATE"]

DTYPES = {"bf16": bf16, "f16": f16}
#: The compiled kernel's plans are made for arrays this large (the text does not depend on the problem: tensor maps
#: are encoded per call from plans of the real arrays, checked to issue the same boxes).
TEMPLATE = 1 << 15
#: Named barriers: each consumer warpgroup's epilogue takes 1 + its index, the turns the ids after them.
EPILOGUE_BARRIER = 1


class Tiling(Protocol):
    """What the plans read of a configuration (``AttentionConfig``)."""

    @property
    def dtype(self) -> str: ...

    @property
    def head_dim(self) -> int: ...

    @property
    def varlen(self) -> bool: ...

    @property
    def block_m(self) -> int: ...

    @property
    def block_n(self) -> int: ...

    @property
    def consumers(self) -> int: ...

    @property
    def q_stages(self) -> int: ...

    @property
    def kv_stages(self) -> int: ...

    @property
    def turns(self) -> bool: ...


@attrs.frozen
class Problem:
    """One call's shapes: ``batch`` sequences (varlen: one packed sequence of ``seqlen_q`` / ``seqlen_k`` rows,
    the total), ``heads`` query heads and ``kv_heads`` key / value heads, and each array's strides in elements
    (row, head, batch), the head dim contiguous."""

    batch: int
    seqlen_q: int
    seqlen_k: int
    heads: int
    kv_heads: int
    q_strides: tuple[int, int, int]
    k_strides: tuple[int, int, int]
    v_strides: tuple[int, int, int]
    o_strides: tuple[int, int, int]

    @classmethod
    def dense(cls, batch: int, seqlen_q: int, seqlen_k: int, heads: int, kv_heads: int, head_dim: int) -> "Problem":
        """Contiguous ``(batch, seqlen, heads, head_dim)`` arrays."""
        q = (heads * head_dim, head_dim, seqlen_q * heads * head_dim)
        k = (kv_heads * head_dim, head_dim, seqlen_k * kv_heads * head_dim)
        return cls(batch, seqlen_q, seqlen_k, heads, kv_heads, q, k, k, q)

    @property
    def group(self) -> int:
        """Query heads per key / value head."""
        return self.heads // self.kv_heads


def _array(dtype: Any, rows: int, head_dim: int, heads: int, batch: int, strides: tuple[int, int, int]) -> Any:
    row, head, seq = strides
    return make_global_tensor(dtype, Layout((rows, head_dim, heads, batch), (row, 1, head, seq)))


def _relaid(tile: Any, layout: Layout) -> Any:
    """The bytes of ``tile`` (under its swizzle) read through ``layout``."""
    return make_smem_tensor(tile.dtype, layout if tile.swizzle is None else ComposedLayout(tile.swizzle, 0, layout))


def _tile(dtype: Any, rows: int, head_dim: int) -> Any:
    """A K-major ``rows x head_dim`` tile under the 128-byte swizzle (as TMA writes it), with the array's head and
    batch modes once each."""
    t = kmajor_smem_tensor(dtype, rows, head_dim, "128B")
    return _relaid(t, Layout((*t.layout.shape, 1, 1), (*t.layout.stride, 0, 0)))


def _transposed(tile: Any) -> Any:
    """A ``rows x cols`` shared tile read as ``cols x rows`` (V's rows of keys as wgmma's MN-major B: N = the head
    dim, K = the keys)."""
    return _relaid(tile, Layout(tile.layout.shape[::-1], tile.layout.stride[::-1]))


@attrs.frozen
class AttentionPlans:
    """The plans of ``config`` for ``problem`` (see the module docstring)."""

    config: Tiling
    q: PipelinePlan
    k: PipelinePlan
    v: PipelinePlan
    qk: WgmmaPlan
    pv: WgmmaPlan
    store_o: EpiloguePlan
    sched: TileScheduler
    turns: TurnsPlan | None

    @classmethod
    def of(cls, config: Tiling, problem: Problem) -> "AttentionPlans":
        c, p = config, problem
        dt, d = DTYPES[c.dtype], c.head_dim
        batch = 1 if c.varlen else p.batch
        q_array = _array(dt, p.seqlen_q, d, p.heads, batch, p.q_strides)
        k_array = _array(dt, p.seqlen_k, d, p.kv_heads, batch, p.k_strides)
        v_array = _array(dt, p.seqlen_k, d, p.kv_heads, batch, p.v_strides)
        o_array = _array(dt, p.seqlen_q, d, p.heads, batch, p.o_strides)
        everyone = Consumer("warpgroup", c.consumers)
        warp = Producer("tma", "warp")
        q = make_pipeline({"q": make_tma_copy(_tile(dt, c.block_m, d), q_array)}, consumer=everyone,
                             producer=warp, stages=c.q_stages, name="q")
        k = make_pipeline({"k": make_tma_copy(_tile(dt, c.block_n, d), k_array)}, consumer=everyone,
                             producer=warp, stages=c.kv_stages, name="k", after=q)
        v = make_pipeline({"v": make_tma_copy(_tile(dt, c.block_n, d), v_array)}, consumer=everyone,
                             producer=warp, stages=c.kv_stages, name="v", after=(q, k))
        q_rows = kmajor_smem_tensor(dt, c.block_m, d, "128B")
        k_rows = kmajor_smem_tensor(dt, c.block_n, d, "128B")
        qk = make_mma(wgmma_accumulator(f32, c.block_m, c.block_n), q.ring("q", q_rows, "q_stage"),
                         k.ring("k", k_rows, "k_stage"))
        pv = make_mma(wgmma_accumulator(f32, 64, d), wgmma_a_fragment(dt, 64, c.block_n),
                         v.ring("v", _transposed(k_rows), "v_stage"))
        # each warpgroup's 64 x head_dim O, staged in its half (third) of the tile's Q stage, one TMA store
        o_tiles = make_stages(_tile(dt, 64, d), c.consumers)
        o_staged = q.ring("q", o_tiles, "q_stage")[:, :, :, :, dynamic("wg")]
        # (the accumulator's layout over the tile's (rows, head dim) modes; the array's head and batch modes are
        # the tile's size-1 modes)
        o_values = make_fragment(f32, 128, wgmma_accumulator(f32, 64, d).layout)
        store_o = make_epilogue(o_values, o_staged, o_array, barrier_id=dynamic("bar"))
        sched = make_tile_scheduler(None, raster="n", swizzle=1)
        turns = make_turns(c.consumers, barrier=EPILOGUE_BARRIER + c.consumers, name="mma") \
            if c.turns and c.consumers > 1 else None
        return cls(c, q, k, v, qk, pv, store_o, sched, turns)

    @classmethod
    def template(cls, config: Tiling) -> "AttentionPlans":
        """The plans the compiled kernel is generated from."""
        return cls.of(config, Problem.dense(4, TEMPLATE, TEMPLATE, 8, 8, config.head_dim))

    @staticmethod
    def maps_of(config: Tiling, problem: Problem) -> tuple[Any, Any, Any, Any]:
        """The tensor-map parameters of Q, K, V and O for ``problem`` alone (the four TMA copies planned over the
        kernel's tiles; the rings, MMAs and schedule do not depend on the problem): what a launch encodes."""
        c, p = config, problem
        dt, d = DTYPES[c.dtype], c.head_dim
        batch = 1 if c.varlen else p.batch
        q_tile, kv_tile = _tile(dt, c.block_m, d), _tile(dt, c.block_n, d)
        return (make_tma_copy(q_tile, _array(dt, p.seqlen_q, d, p.heads, batch, p.q_strides)).tensor_map,
                make_tma_copy(kv_tile, _array(dt, p.seqlen_k, d, p.kv_heads, batch, p.k_strides)).tensor_map,
                make_tma_copy(kv_tile, _array(dt, p.seqlen_k, d, p.kv_heads, batch, p.v_strides)).tensor_map,
                make_tma_copy(_array(dt, p.seqlen_q, d, p.heads, batch, p.o_strides), _tile(dt, 64, d)).tensor_map)

    def maps(self) -> tuple[Any, Any, Any, Any]:
        """The tensor-map parameters of Q, K, V and O (``TensorMapParams``: ``.encode(address)``)."""
        return (self.q.load("q").tensor_map, self.k.load("k").tensor_map, self.v.load("v").tensor_map,
                self.store_o.tma.tensor_map)

    def issues_as(self, kernel: "AttentionPlans") -> bool:
        """Whether these plans issue what ``kernel``'s (the compiled kernel's) do: the same boxes, swizzles and
        instructions, so that their tensor maps drive that kernel."""
        def shape(m: Any) -> tuple:
            return (m.dtype, m.box, m.swizzle, m.element_strides)
        def coords(plan: Any) -> list:
            return [i.coords for i in plan.instructions]
        mine = (self.q.load("q"), self.k.load("k"), self.v.load("v"), self.store_o.tma)
        theirs = (kernel.q.load("q"), kernel.k.load("k"), kernel.v.load("v"), kernel.store_o.tma)
        return all(shape(x) == shape(y) for x, y in zip(self.maps(), kernel.maps())) and all(
            coords(x) == coords(y) for x, y in zip(mine, theirs))
