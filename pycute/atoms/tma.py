"""TMA atoms: one tile-mode ``cp.async.bulk.tensor`` form per direction and rank (PTX ISA
#data-movement-and-conversion-instructions-cp-async-bulk-tensor), and the issue record a plan streams and the
emulator executes."""
from __future__ import annotations

from typing import NamedTuple

import attrs

from ..arch.sm80.cache import CachePolicy
from ..arch.sm100.tma_pair import tma_pair_ptx
from ..arch.sm90.tma import MAX_RANK, TMA_SASS, ReduceOp, TmaDirection, tma_ptx
from ..errors import PlanError

__all__ = ["TmaAtom", "TmaIssue", "tma_atom"]


class TmaIssue(NamedTuple):
    """One issued TMA instruction: its PTX, the tensor coordinates (element indices, dim 0 first), the
    shared-memory byte address of the box, the CTA mask of a multicast, the L2 policy of a cache hint and the
    im2col offsets of an im2col load."""

    ptx: str
    coords: tuple[int, ...]
    smem: int
    mask: int | None = None
    policy: CachePolicy | None = None
    im2col: tuple[int, ...] | None = None    # an im2col load's offsets (the W modes': wHalo, wOffset)


@attrs.frozen
class TmaAtom:
    """``cp.async.bulk.tensor.<rank>d`` in tile mode: a load (global -> shared, completing on an mbarrier) or a
    store (shared -> global, completing in a bulk group)."""

    direction: TmaDirection
    rank: int
    multicast: bool = False
    reduce: ReduceOp | None = None
    pair: bool = False                  # .cta_group::2 (sm_100a): the pair's bytes complete on one CTA's barrier
    cache_hint: bool = False            # .L2::cache_hint: a createpolicy operand last

    def __attrs_post_init__(self) -> None:
        if self.direction not in ("load", "store", "prefetch"):
            raise PlanError(f"a TMA atom loads, stores or prefetches, not {self.direction!r}")
        if not 1 <= self.rank <= MAX_RANK:
            raise PlanError(f"a TMA box has 1 to {MAX_RANK} dimensions, not {self.rank}")
        if self.multicast and self.direction != "load":
            raise PlanError("only TMA loads multicast (PTX ISA: .multicast::cluster)")
        if self.reduce is not None and self.direction != "store":
            raise PlanError("a TMA reduction goes from shared to global memory (a store direction)")
        if self.pair and self.direction != "load":
            raise PlanError("the .cta_group::2 form is a load's (PTX ISA: not stores or prefetches)")

    @property
    def ptx(self) -> str:
        if self.pair:
            return tma_pair_ptx(self.rank, self.multicast, self.cache_hint)
        return tma_ptx(self.direction, self.rank, self.multicast, self.reduce, self.cache_hint)

    @property
    def sass(self) -> str:
        """The SASS opcode the instruction assembles to (``UTMALDG`` / ``UTMASTG`` / ``UTMAREDG`` / ``UTMAPF``)."""
        return "UTMAREDG" if self.reduce is not None else TMA_SASS[self.direction]


def tma_atom(direction: TmaDirection, rank: int, multicast: bool = False, reduce: ReduceOp | None = None,
             pair: bool = False, cache_hint: bool = False) -> TmaAtom:
    """The atom of a ``rank``-dimensional tile-mode ``direction`` (``multicast``: to every CTA of a mask;
    ``reduce``: a store that reduces; ``pair``: a cta_group::2 load; ``cache_hint``: with an L2 policy)."""
    return TmaAtom(direction, rank, multicast, reduce, pair, cache_hint)
