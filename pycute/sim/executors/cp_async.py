"""The cp.async executor: per-thread copies of 4, 8 or 16 bytes from a global byte array into shared memory (PTX ISA
#data-movement-and-conversion-instructions-cp-async). A copy lands only when its thread waits for its group
(``cp.async.wait_group``) or arrives on an mbarrier (``cp.async.mbarrier.arrive.noinc``): shared memory read
before then still holds the old bytes, as a missing wait would on the hardware. Misaligned addresses and src-size
above cp-size (undefined in PTX) are refused. A plan's residue (an array's last 1 to 3 bytes, ``CpAsyncResidue``)
is a generic store: it lands at once."""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ...arch.sm80.cache import CACHE_HINT, policy_of_token
from ...arch.sm80.cp_async import CP_ASYNC_SIZES, MIN_SOURCE_WINDOW
from ...atoms.cp_async import CpAsyncIssue, CpAsyncResidue
from ...errors import EmulationError
from ..machine import Machine

__all__ = ["CpAsyncExecutor", "decode"]


class CpAsyncExecutor(Machine):
    """cp.async copies, their groups and their mbarrier arrivals, per CTA and thread."""

    def cp_async(self, gmem: np.ndarray, issue: CpAsyncIssue | CpAsyncResidue, thread: int = 0, cta: int = 0) -> None:
        """Issue one copy (``issue.gmem`` a byte offset into ``gmem``); it lands at the thread's wait (a residue's
        generic stores at once)."""
        c = self.ctas[self._cta(cta)]
        if isinstance(issue, CpAsyncResidue):
            self._residue(c, gmem, issue)
            return
        if issue.size not in CP_ASYNC_SIZES or not 0 <= issue.src_size <= issue.size:
            raise EmulationError(f"cp.async of {issue.size} B reading {issue.src_size} B: cp-size is 4, 8 or 16 and "
                                 f"src-size at most cp-size (PTX: undefined otherwise)")
        if issue.smem % issue.size or (issue.src_size and issue.gmem % issue.size):
            raise EmulationError(f"cp.async of {issue.size} B at shared {issue.smem:#x}, global +{issue.gmem:#x}: "
                                 f"both addresses must be aligned to the size (PTX: undefined otherwise)")
        lo = issue.smem - c.smem_base
        if lo < 0 or lo + issue.size > c.smem.size:
            raise EmulationError(f"cp.async writes shared [{issue.smem:#x}, {issue.smem + issue.size:#x}), outside "
                                 f"[{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        if issue.src_size and (issue.gmem < 0 or issue.gmem + issue.src_size > gmem.size):
            raise EmulationError(f"cp.async reads global +{issue.gmem:#x}..+{issue.gmem + issue.src_size:#x}, outside "
                                 f"the {gmem.size}-byte array")
        if issue.gmem < 0 or issue.gmem + issue.size > gmem.size:
            raise EmulationError(f"cp.async's source window +{issue.gmem:#x}..+{issue.gmem + issue.size:#x} (its "
                                 f"cp-size, whatever its src-size {issue.src_size}) leaves the {gmem.size}-byte array: "
                                 f"compute-sanitizer memcheck reports that read")
        data = np.zeros(issue.size, dtype=np.uint8)
        data[:issue.src_size] = gmem[issue.gmem:issue.gmem + issue.src_size]
        c.cp_async_pending.setdefault(thread, []).append((lo, data))

    def cp_async_commit(self, thread: int = 0, cta: int = 0) -> None:
        """``cp.async.commit_group``: the thread's uncommitted copies become its newest group."""
        c = self.ctas[self._cta(cta)]
        c.cp_async_groups.setdefault(thread, []).append(c.cp_async_pending.pop(thread, []))

    def cp_async_wait(self, n: int, thread: int = 0, cta: int = 0) -> None:
        """``cp.async.wait_group n``: every group of the thread but the newest ``n`` lands."""
        c = self.ctas[self._cta(cta)]
        groups = c.cp_async_groups.get(thread, [])
        keep = len(groups) if n >= len(groups) else n
        for group in groups[:len(groups) - keep]:
            self._land(c, group)
        c.cp_async_groups[thread] = groups[len(groups) - keep:]

    def cp_async_arrive_noinc(self, mbar: int, thread: int = 0, cta: int = 0) -> None:
        """``cp.async.mbarrier.arrive.noinc``: once every earlier copy of the thread has landed, one arrival."""
        c = self.ctas[self._cta(cta)]
        for group in c.cp_async_groups.pop(thread, []):
            self._land(c, group)
        self._land(c, c.cp_async_pending.pop(thread, []))
        c.arrivals[mbar] = c.arrivals.get(mbar, 0) + 1

    @staticmethod
    def _residue(c, gmem: np.ndarray, issue: CpAsyncResidue) -> None:
        lo = issue.smem - c.smem_base
        if issue.smem % MIN_SOURCE_WINDOW or not 0 < issue.src_size < MIN_SOURCE_WINDOW:
            raise EmulationError(f"residue of {issue.src_size} B at shared {issue.smem:#x}: 1 to "
                                 f"{MIN_SOURCE_WINDOW - 1} bytes into a {MIN_SOURCE_WINDOW}-byte-aligned word")
        if lo < 0 or lo + MIN_SOURCE_WINDOW > c.smem.size or issue.gmem < 0 \
                or issue.gmem + issue.src_size > gmem.size:
            raise EmulationError(f"residue reads global +{issue.gmem:#x}..+{issue.gmem + issue.src_size:#x} of "
                                 f"{gmem.size} B into shared {issue.smem:#x}: outside")
        c.smem[lo:lo + MIN_SOURCE_WINDOW] = 0
        c.smem[lo:lo + issue.src_size] = gmem[issue.gmem:issue.gmem + issue.src_size]

    @staticmethod
    def _land(c, copies: list) -> None:
        for lo, data in copies:
            c.smem[lo:lo + data.size] = data


def decode(op: str, args: list, value: Callable[[str], int]) -> CpAsyncIssue:
    """A compiled ``cp.async.{ca,cg}.shared.global [smem], [gmem], cp-size{, src-size}{, policy}`` as its issue
    record (the global address absolute; a policy read back as the ``CachePolicy`` createpolicy made)."""
    if len(args) < 3:
        raise EmulationError(f"{op}: expected [dst], [src], cp-size{{, src-size}}, got {args}")
    policy = policy_of_token(value(args.pop())) if CACHE_HINT in op else None
    smem, gmem = (value(re.sub(r"[\[\]\s]", "", a)) for a in args[:2])
    size = value(args[2])
    src_size = value(args[3]) & 0xFFFFFFFF if len(args) > 3 else size
    return CpAsyncIssue(op, smem & 0xFFFFFFFF, gmem, size, src_size, policy)
