"""The emulators: the machine with the executors of a generation's instruction families, bit-exact and strict.

Written from the PTX ISA (facts and their tags in docs/ptx-tcgen05.md and docs/tcgen05-ld-st.md). Policies marked
[inferred] follow the notes' inferences (TVM's B200 round trips, CUTLASS usage), not PTX text:
  * base offset must be 0 and LBO mode must be 0 for cp; the 128B-with-32B-atom swizzle is refused for cp;
  * the TMEM column field must be a multiple of 4 (128-bit aligned);
  * an 8-row swizzled core group must stay inside one swizzle period, so no row crosses its swizzle row;
  * cta_group::2 is issued from the even CTA; each CTA copies its own shared memory into its own TMEM.
"""
from __future__ import annotations

from .executors import (BulkExecutor, CpAsyncExecutor, SmemLdStExecutor, Tcgen05CpExecutor, Tcgen05LdStExecutor,
                        Tcgen05MmaExecutor, TmaExecutor, TmaModesExecutor, WgmmaExecutor)
from .machine import CtaState

__all__ = ["Sm90Emulator", "Sm100Emulator", "CtaState"]


class Sm90Emulator(TmaExecutor, TmaModesExecutor, BulkExecutor, CpAsyncExecutor, SmemLdStExecutor, WgmmaExecutor):
    """The CTAs of a cluster with shared memory at ``smem_base``: TMA loads (multicast too) and stores, flat bulk
    copies and DSMEM copies between the CTAs, cp.async with its groups, against a global byte array; a warp's
    register <-> shared moves (stmatrix / ldmatrix, ld/st.shared) with the packing conversions; and
    wgmma.mma_async of a warpgroup, reading its shared memory and given registers."""

    MAX_CTAS = 16
    CTAS_WHY = "a cluster of up to 16 CTAs, the non-portable maximum on the H100/H200"


class Sm100Emulator(Tcgen05CpExecutor, Tcgen05LdStExecutor, Tcgen05MmaExecutor, TmaExecutor, TmaModesExecutor,
                    BulkExecutor, CpAsyncExecutor, SmemLdStExecutor):
    """CTAs with shared memory at ``smem_base`` and TMEM; issue ``cp``, ``commit``, then read back with ``ld`` (or
    ``st`` then ``ld``).

    ``fill_tmem`` is the value unallocated-then-allocated TMEM holds (alloc does not clear it; tests use a marker).
    """
