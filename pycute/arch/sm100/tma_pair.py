"""Blackwell's TMA pair load (PTX ISA #data-movement-and-conversion-instructions-cp-async-bulk-tensor,
``.cta_group::2``, PTX 8.6, sm_100a and later): each CTA of a cta_group::2 pair loads its own box into its own
shared memory, and the complete-tx goes to an mbarrier in either CTA of the pair, so that one barrier (the even
CTA's, as CUTLASS's 2-SM loads use) counts both CTAs' bytes."""
from __future__ import annotations

from ..sm80.cache import CACHE_HINT
from ..sm90.tma import tma_ptx
from .targets import TCGEN05_TARGETS

__all__ = ["PAIR_SUFFIX", "TMA_PAIR_TARGETS", "tma_pair_ptx", "PAIR_CTAS"]

PAIR_SUFFIX = ".cta_group::2"
PAIR_CTAS = 2
#: ptxas refuses ``.cta_group::2`` below sm_100a ("Feature '.cta_group::2' not supported on .target 'sm_90a'").
TMA_PAIR_TARGETS = TCGEN05_TARGETS


def tma_pair_ptx(rank: int, multicast: bool = False, cache_hint: bool = False) -> str:
    """The tile-mode pair load of a ``rank``-dimensional box (``multicast``: to a CTA mask, each destination's
    bytes signalled on the barrier of the pair CTA whose parity is the barrier holder's; ``cache_hint``: with an
    L2 policy operand last)."""
    base = tma_ptx("load", rank, multicast)
    return base + PAIR_SUFFIX + (CACHE_HINT if cache_hint else "")
