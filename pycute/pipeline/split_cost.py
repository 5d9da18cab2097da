"""The cost model split-K / stream-K partitions are chosen by (``pipeline.split_k``): a cluster's time as its
pieces' k-blocks, fills and stores, and a shared unit's partial writes and reads (``SplitCost``), in closed form per
worker (``modelled_time``), and the partition modelled to finish first (``choose_k_split``), which a tuner refines by
measurement."""
from __future__ import annotations

import attrs
import numpy as np

from ..int_tuple import as_int
from .split_k import KSplit, SplitKScheduler

__all__ = ["SplitCost", "modelled_time", "choose_k_split"]


@attrs.frozen
class SplitCost:
    """The cost model ``choose_k_split`` weighs partitions with, in nanoseconds of one cluster's time:
    ``kblock`` per k-block of a tile, ``piece`` per piece (the pipeline's fill and the epilogue), ``partial`` to
    write a tile's f32 partial and ``reduce`` to read one back. ``from_rate`` derives them from a measured
    whole-chip rate; a tuner refines them by measurement."""

    kblock: float
    piece: float
    partial: float
    reduce: float

    @classmethod
    def from_rate(cls, tflops: float, tile: tuple[int, int, int], clusters: int, cluster_ctas: int = 1,
                  l2_bytes_per_ns: float = 6000.0) -> "SplitCost":
        """A tile ``(BM, BN, BK)``'s k-block at the chip's ``tflops`` shared by ``clusters x cluster_ctas`` CTAs;
        a partial's write / read at the CTA's share of ``l2_bytes_per_ns`` (H100 / H200 L2: a few TB/s); a piece
        costs a pipeline fill of 2 k-blocks and a store of the tile's bf16 output."""
        bm, bn, bk = tile
        ctas = clusters * cluster_ctas
        kblock = 2 * bm * bn * bk / (tflops * 1e3 / ctas)
        per_cta = l2_bytes_per_ns / ctas
        partial = bm * bn * 4 / per_cta
        return cls(kblock, 2 * kblock + bm * bn * 2 / per_cta, partial, partial)


def modelled_time(plan: SplitKScheduler, clusters: int, cost: SplitCost) -> float:
    """The makespan of ``plan`` (at a problem) on ``clusters`` persistent clusters under ``cost``: each cluster's
    items in turn -- a whole unit ``kblocks x kblock + piece``; a worker its k-blocks, a ``piece`` per unit it
    touches and a ``partial`` per shared piece --, and each shared unit's reduction (``count x reduce``) charged to
    the worker holding the unit's first k-blocks, the one that reaches them last (a worker walks its range in K
    order). In closed form per worker (numpy), so that a problem of thousands of units costs milliseconds."""
    kb, s = plan._problem()
    g = as_int(clusters, "clusters")
    if not s.workers:                       # whole units only: the busiest cluster runs ceil(dp / g) of them
        return float(-(-s.dp // g) * (kb * cost.kblock + cost.piece))
    per_cta = np.bincount(np.arange(s.dp) % g, minlength=g) * (kb * cost.kblock + cost.piece)
    if s.workers:
        iters, w = plan.iterations(), np.arange(s.workers, dtype=np.int64)
        start = w * iters // s.workers
        end = (w + 1) * iters // s.workers
        first_unit, last_unit = start // kb, (end - 1) // kb

        def count(u: np.ndarray) -> np.ndarray:   # the pieces of stream unit u: its workers' span
            return ((u + 1) * kb * s.workers - 1) // iters - (u * kb * s.workers + s.workers - 1) // iters + 1

        head, tail = count(first_unit), count(last_unit)
        shared = (head > 1).astype(np.int64) + ((last_unit != first_unit) & (tail > 1))
        t = (end - start) * cost.kblock + (last_unit - first_unit + 1) * cost.piece + shared * cost.partial
        finishes = (start % kb == 0) & (head > 1)                 # the unit's first k-blocks are this worker's
        t = t + np.where(finishes, head * cost.reduce, 0.0)
        crossing = (last_unit != first_unit) & (tail > 1)         # and the next unit's, at the end of its range
        t = t + np.where(crossing, tail * cost.reduce, 0.0)
        per_cta = per_cta + np.bincount((s.dp + w) % g, weights=t, minlength=g)
    return float(per_cta.max())


def choose_k_split(plan: SplitKScheduler, tiles: tuple[int, int], kblocks: int, clusters: int, cost: SplitCost,
                   max_splits: int = 8, margin: float = 0.03) -> KSplit:
    """The partition of ``tiles`` tiles of ``kblocks`` k-blocks on ``clusters`` persistent clusters that
    ``modelled_time`` finishes first -- data-parallel, split-K by 2..``max_splits`` (at most 8 waves of pieces),
    stream-K over the clusters, and whole waves then stream-K over the last one or two -- where it beats
    data-parallel by more than ``margin`` (a fraction of its time: the model's error)."""
    base = plan.at(tiles, kblocks)
    units, iters = base.units, base.units * kblocks
    whole = KSplit.data_parallel(units)
    candidates = [KSplit.split(units, s) for s in range(2, max_splits + 1)
                  if s <= kblocks and units * s <= 8 * clusters]
    candidates.append(KSplit.stream(min(clusters, iters)))
    waves = units // clusters
    for dp in {max(0, (waves - 1) * clusters), waves * clusters}:
        if 0 < dp < units:
            candidates.append(KSplit.stream(min(clusters, (units - dp) * kblocks), dp))
    times = {s: modelled_time(plan.at(tiles, kblocks, s), clusters, cost) for s in candidates}
    best = min(candidates, key=lambda s: (times[s], s.workers))
    return best if times[best] < (1 - margin) * modelled_time(base, clusters, cost) else whole
