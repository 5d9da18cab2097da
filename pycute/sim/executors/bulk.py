"""The bulk-copy executor: flat ``cp.async.bulk`` loads, stores and DSMEM copies, byte for byte (PTX ISA
#data-movement-and-conversion-instructions-cp-async-bulk). Addresses not 16-byte aligned, sizes that are not whole
16-byte units and a DSMEM copy to the issuing CTA itself (all undefined in PTX) are refused."""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ...arch.sm90.bulk import BULK_ALIGN
from ...atoms.bulk import BulkIssue
from ...errors import EmulationError
from ..machine import Machine

__all__ = ["BulkExecutor", "decode", "CLUSTER_WINDOW"]

#: Where this model places CTA ``r``'s window among shared::cluster addresses (``mapa`` of an address ``a`` to CTA
#: ``r`` is ``r * CLUSTER_WINDOW + a``); only the PTX interpreter and its decoder use it.
CLUSTER_WINDOW = 1 << 24


def _check(issue: BulkIssue) -> None:
    if issue.size <= 0 or issue.size % BULK_ALIGN or issue.dst % BULK_ALIGN or issue.src % BULK_ALIGN:
        raise EmulationError(f"bulk copy of {issue.size} B from {issue.src:#x} to {issue.dst:#x}: both addresses "
                             f"{BULK_ALIGN}-byte aligned and the size a positive multiple of {BULK_ALIGN} (PTX: "
                             f"undefined otherwise)")


class BulkExecutor(Machine):
    """Flat bulk copies between a global byte array and the CTAs' shared memories."""

    def _smem_range(self, cta: int, address: int, size: int) -> tuple[np.ndarray, int]:
        c = self.ctas[self._cta(cta)]
        lo = address - c.smem_base
        if lo < 0 or lo + size > c.smem.size:
            raise EmulationError(f"bulk copy touches CTA {cta}'s shared [{address:#x}, {address + size:#x}), outside "
                                 f"[{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        return c.smem, lo

    @staticmethod
    def _gmem_range(gmem: np.ndarray, offset: int, size: int) -> None:
        if offset < 0 or offset + size > gmem.size:
            raise EmulationError(f"bulk copy touches global +{offset:#x}..+{offset + size:#x}, outside the "
                                 f"{gmem.size}-byte array (a bulk copy has no bounds check)")

    def bulk_load(self, gmem: np.ndarray, issue: BulkIssue, cta: int = 0) -> int:
        """Global ``issue.src`` (an offset into ``gmem``) to shared ``issue.dst``; the bytes the mbarrier gets."""
        _check(issue)
        self._gmem_range(gmem, issue.src, issue.size)
        smem, lo = self._smem_range(cta, issue.dst, issue.size)
        smem[lo:lo + issue.size] = gmem[issue.src:issue.src + issue.size]
        return issue.size

    def bulk_store(self, gmem: np.ndarray, issue: BulkIssue, cta: int = 0) -> None:
        """Shared ``issue.src`` to global ``issue.dst`` (an offset into ``gmem``, written in place)."""
        _check(issue)
        self._gmem_range(gmem, issue.dst, issue.size)
        smem, lo = self._smem_range(cta, issue.src, issue.size)
        gmem[issue.dst:issue.dst + issue.size] = smem[lo:lo + issue.size]

    def dsmem_copy(self, issue: BulkIssue, cta: int = 0) -> int:
        """CTA ``cta``'s shared ``issue.src`` into CTA ``issue.peer``'s shared ``issue.dst``; the bytes the peer's
        mbarrier gets."""
        _check(issue)
        if issue.peer is None or issue.peer == cta:
            raise EmulationError(f"DSMEM copy from CTA {cta} to CTA {issue.peer}: the destination is another CTA of "
                                 f"the cluster (PTX: strictly remote)")
        src, s = self._smem_range(cta, issue.src, issue.size)
        dst, d = self._smem_range(issue.peer, issue.dst, issue.size)
        dst[d:d + issue.size] = src[s:s + issue.size]
        return issue.size


def decode(op: str, args: list, value: Callable[[str], int]) -> BulkIssue:
    """A compiled flat ``cp.async.bulk`` as its issue record: ``[dst], [src], size{, [mbar]}``; a DSMEM copy's
    shared::cluster destination split into the peer's rank and its CTA-local address."""
    if len(args) < 3:
        raise EmulationError(f"{op}: expected [dst], [src], size, got {args}")
    dst, src = (value(re.sub(r"[\[\]\s]", "", a)) for a in args[:2])
    size = value(args[2]) & 0xFFFFFFFF
    if ".shared::cluster.shared::cta" in op:
        return BulkIssue(op, dst % CLUSTER_WINDOW, src & 0xFFFFFFFF, size, dst // CLUSTER_WINDOW)
    if op.startswith("cp.async.bulk.global"):
        return BulkIssue(op, dst, src & 0xFFFFFFFF, size)
    return BulkIssue(op, dst & 0xFFFFFFFF, src, size)
