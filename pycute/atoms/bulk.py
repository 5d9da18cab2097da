"""Bulk-copy atoms: ``cp.async.bulk`` global <-> shared and shared -> another CTA's shared memory (DSMEM), one per
direction (PTX ISA #data-movement-and-conversion-instructions-cp-async-bulk), and their issue record."""
from __future__ import annotations

from typing import NamedTuple

import attrs

from ..arch.sm80.cache import CachePolicy
from ..arch.sm90.bulk import BULK_SASS, BulkDirection, bulk_ptx
from ..errors import PlanError

__all__ = ["BulkAtom", "BulkIssue", "bulk_atom"]


class BulkIssue(NamedTuple):
    """One bulk copy: its PTX, the destination and source byte addresses (shared addresses are shared-window
    addresses of the CTA named by ``cta``'s role: the receiver for a DSMEM copy's destination; global ones are
    offsets from the array's base in a plan's stream), the bytes, and for a DSMEM copy the receiving CTA's rank
    (None otherwise)."""

    ptx: str
    dst: int
    src: int
    size: int
    peer: int | None = None
    policy: CachePolicy | None = None        # the L2 policy of a .L2::cache_hint form


@attrs.frozen
class BulkAtom:
    """``cp.async.bulk`` in one direction: ``load`` (global -> shared, mbarrier), ``store`` (shared -> global,
    bulk group) or ``dsmem`` (shared -> a peer CTA's shared memory, the peer's mbarrier)."""

    direction: BulkDirection
    cache_hint: bool = False            # .L2::cache_hint: a createpolicy operand last (loads and stores)

    def __attrs_post_init__(self) -> None:
        if self.direction not in ("load", "store", "dsmem"):
            raise PlanError(f"a bulk copy loads, stores or copies to a peer CTA (dsmem), not {self.direction!r}")

    @property
    def ptx(self) -> str:
        return bulk_ptx(self.direction, self.cache_hint)

    @property
    def sass(self) -> str:
        return BULK_SASS[self.direction]


def bulk_atom(direction: BulkDirection, cache_hint: bool = False) -> BulkAtom:
    """The atom of a bulk copy in ``direction`` (``cache_hint``: with an L2 policy)."""
    return BulkAtom(direction, cache_hint)
