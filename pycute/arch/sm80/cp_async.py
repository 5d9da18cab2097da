"""``cp.async`` (LDGSTS) as data: the sizes, cache operators and L2 prefetch sizes a copy takes, its completion
mechanisms, the instruction spellings and the SASS they assemble to (PTX ISA
#data-movement-and-conversion-instructions-cp-async; docs/cp-async-bulk-dsmem.md records what ran on the H200)."""
from __future__ import annotations

from typing import Literal

from .cache import CACHE_HINT

__all__ = ["CP_ASYNC_SIZES", "CG_SIZE", "L2_PREFETCH_SIZES", "CP_ASYNC_TARGETS", "CpAsyncCache", "CpAsyncCompletion",
           "L2Prefetch", "cp_async_ptx", "COMMIT_GROUP_PTX", "WAIT_GROUP_PTX", "ARRIVE_NOINC_PTX", "WAIT_ALL_PTX",
           "MBARRIER_ARRIVE_PTX", "MIN_SOURCE_WINDOW", "CP_ASYNC_SASS"]

#: Bytes one cp.async moves, widest first; source and destination are aligned to the size (PTX ISA: undefined
#: otherwise).
CP_ASYNC_SIZES = (16, 8, 4)
#: ``.cg`` (cache in L2 only) takes 16 bytes and nothing else (ptxas: "expected to be 16"); ``.ca`` takes all three.
CG_SIZE = 16
L2Prefetch = Literal[64, 128, 256]
#: ``.L2::64B`` / ``.L2::128B`` / ``.L2::256B``: L2 may fetch that much around the source (a hint).
L2_PREFETCH_SIZES: tuple[L2Prefetch, ...] = (64, 128, 256)

CpAsyncCache = Literal["ca", "cg"]
#: ``group``: cp.async.commit_group, then the caller waits with cp.async.wait_group; ``arrive``: each thread's
#: copies arrive on an mbarrier (``cp.async.mbarrier.arrive.noinc``: the barrier's count includes the threads).
CpAsyncCompletion = Literal["group", "arrive"]

#: The targets that have cp.async (sm_80 and later).
CP_ASYNC_TARGETS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a",
                    "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a")

COMMIT_GROUP_PTX = "cp.async.commit_group"
WAIT_GROUP_PTX = "cp.async.wait_group"
ARRIVE_NOINC_PTX = "cp.async.mbarrier.arrive.noinc.shared::cta.b64"
#: ``cp.async.commit_group`` then ``cp.async.wait_group 0`` in one: every earlier cp.async of the thread landed.
WAIT_ALL_PTX = "cp.async.wait_all"
#: A thread that also made generic shared stores (the residue) waits for its own copies and arrives itself with
#: ``mbarrier.arrive`` (release semantics, so those stores and its landed copies are seen by whoever waits on the
#: phase; PTX ISA #parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait lists what a
#: completed phase makes visible): one arrival, as the others' .noinc. The form without ``.noinc`` (pending count
#: raised by one first) would keep the count too, but compute-sanitizer's synccheck stops it as a "barrier
#: overflow" on the H200 (docs/sanitizer.md).
MBARRIER_ARRIVE_PTX = "mbarrier.arrive.shared::cta.b64"

#: The narrowest source window a cp.async has (its smallest cp-size): bytes of an array past its last whole 4-byte
#: word (1 to 3, from an array whose end is not 4-byte aligned) cannot be read by any cp.async whose source window
#: stays inside the allocation, since the window is cp-size bytes at a cp-size-aligned address.
MIN_SOURCE_WINDOW = min(CP_ASYNC_SIZES)


def cp_async_ptx(cache: CpAsyncCache, l2_prefetch: L2Prefetch | None = None, cache_hint: bool = False) -> str:
    """The opcode of a cp.async with ``cache`` (``ca``: L1 and L2, ``cg``: L2 only), an optional L2 prefetch size
    and an optional L2 policy; its operands are ``[dst], [src], cp-size, src-size{, policy}`` (the zero-filling
    form; ``.L2::cache_hint`` comes before the prefetch size, PTX ISA #data-movement-and-conversion-instructions-
    cp-async)."""
    return (f"cp.async.{cache}.shared.global" + (CACHE_HINT if cache_hint else "")
            + (f".L2::{l2_prefetch}B" if l2_prefetch else ""))


#: SASS opcode prefix every cp.async assembles to (LDGSTS.E, .64, .128, with .BYPASS for .cg and .ZFILL).
CP_ASYNC_SASS = "LDGSTS"
