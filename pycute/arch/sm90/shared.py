"""Shared memory as the load/store pipe sees it, and the per-thread ``ld.shared`` / ``st.shared`` forms (PTX ISA
#data-movement-and-conversion-instructions-ld, -st): 32 banks of 4 bytes, so one wavefront moves at most 128 bytes;
a warp's request is served in phases of threads, and within a phase each bank serves one distinct 4-byte word per
wavefront (threads that touch the same word share it). The phases follow the access width: the whole warp for
accesses of 4 bytes or fewer, half-warps for 8-byte accesses, quarter-warps for 16-byte accesses [I: the common
model of the CUDA Programming Guide's bank-conflict section; ``python -m tools epilogue`` measures every planned case
with ncu and docs/epilogue.md records pycute's prediction beside the count]."""
from __future__ import annotations

from ...errors import PlanError

__all__ = ["BANKS", "BANK_BYTES", "WAVEFRONT_BYTES", "SHARED_WIDTHS", "SHARED_TARGETS", "phase_lanes",
           "st_shared_ptx", "ld_shared_ptx", "SHARED_SASS", "FENCE_PROXY_ASYNC_SHARED", "NAMED_BARRIER_PTX"]

BANKS = 32
BANK_BYTES = 4
#: Bytes one wavefront of the shared-memory pipe serves (every bank once).
WAVEFRONT_BYTES = BANKS * BANK_BYTES
#: Bytes one thread's ld.shared / st.shared moves, widest first (``.v4.b32``, ``.v2.b32``, ``.b32``, ``.b16``,
#: ``.b8``); the address is aligned to the width (PTX ISA: undefined otherwise).
SHARED_WIDTHS = (16, 8, 4, 2, 1)
#: Every target pycute compiles for has them.
SHARED_TARGETS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a",
                  "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a")

#: The generic proxy's shared-memory writes become visible to the async proxy (a TMA store that reads them): PTX ISA
#: #parallel-synchronization-and-communication-instructions-membar, required between st.shared / stmatrix and a
#: TMA store of the same bytes.
FENCE_PROXY_ASYNC_SHARED = "fence.proxy.async.shared::cta"
#: A barrier over a subset of the CTA's warps (``bar.sync id, threads``; id 0 is __syncthreads').
NAMED_BARRIER_PTX = "bar.sync"


def phase_lanes(width: int) -> int:
    """Consecutive lanes served together, for ``width``-byte accesses per thread (32, 16 or 8) [I]."""
    return 32 if width <= BANK_BYTES else 32 * BANK_BYTES // width


def _suffix(width: int) -> str:
    if width not in SHARED_WIDTHS:
        raise PlanError(f"ld/st.shared moves {', '.join(map(str, SHARED_WIDTHS))} bytes, not {width}")
    return {16: "v4.b32", 8: "v2.b32", 4: "b32", 2: "b16", 1: "b8"}[width]


def st_shared_ptx(width: int) -> str:
    """``st.shared.v4.b32`` ... ``st.shared.b8``."""
    return f"st.shared.{_suffix(width)}"


def ld_shared_ptx(width: int) -> str:
    """``ld.shared.v4.b32`` ... ``ld.shared.b8``."""
    return f"ld.shared.{_suffix(width)}"


#: SASS opcode of each width (nvdisasm 13, sm_90a and sm_100a), by direction.
SHARED_SASS = {"st": {16: "STS.128", 8: "STS.64", 4: "STS", 2: "STS.U16", 1: "STS.U8"},
               "ld": {16: "LDS.128", 8: "LDS.64", 4: "LDS", 2: "LDS.U16", 1: "LDS.U8"}}
