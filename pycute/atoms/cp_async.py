"""cp.async atoms: one per vector width and cache operator (PTX ISA #data-movement-and-conversion-instructions-
cp-async), and the issue record a plan streams, the emulator executes and the PTX interpreter reads back."""
from __future__ import annotations

from typing import NamedTuple

import attrs

from ..arch.sm80.cache import CachePolicy
from ..arch.sm80.cp_async import CG_SIZE, CP_ASYNC_SIZES, L2_PREFETCH_SIZES, CpAsyncCache, L2Prefetch, cp_async_ptx
from ..errors import PlanError

__all__ = ["CpAsyncAtom", "CpAsyncIssue", "CpAsyncResidue", "cp_async_atom"]


class CpAsyncIssue(NamedTuple):
    """One thread's cp.async: its PTX, the shared byte address written, the global byte address read (from the
    array's base in a plan's stream; absolute when read back from compiled code), the bytes copied (cp-size) and
    the bytes read (src-size; the rest of cp-size is zero-filled)."""

    ptx: str
    smem: int
    gmem: int
    size: int
    src_size: int
    policy: CachePolicy | None = None        # the L2 policy of a .L2::cache_hint form


class CpAsyncResidue(NamedTuple):
    """One thread's copy of an array's last ``src_size`` bytes (1 to 3, past its last whole 4-byte word), which no
    cp.async can read without its source window crossing the allocation's end: a zero ``st.shared.b32`` at the
    4-byte-aligned shared address ``smem``, then ``src_size`` byte loads from global ``gmem`` stored over it. Generic
    stores, visible at once to the thread (not only at its wait)."""

    smem: int
    gmem: int
    src_size: int


@attrs.frozen
class CpAsyncAtom:
    """``cp.async.{ca,cg}.shared.global`` of ``size`` bytes per thread (16 for ``.cg``)."""

    size: int
    cache: CpAsyncCache
    l2_prefetch: L2Prefetch | None = None
    cache_hint: bool = False            # .L2::cache_hint: a createpolicy operand last

    def __attrs_post_init__(self) -> None:
        if self.size not in CP_ASYNC_SIZES:
            raise PlanError(f"cp.async moves {', '.join(map(str, CP_ASYNC_SIZES))} bytes, not {self.size}")
        if self.cache not in ("ca", "cg"):
            raise PlanError(f"cp.async caches .ca or .cg, not {self.cache!r}")
        if self.cache == "cg" and self.size != CG_SIZE:
            raise PlanError(f"cp.async.cg moves {CG_SIZE} bytes only (ptxas refuses {self.size}); use .ca")
        if self.l2_prefetch is not None and self.l2_prefetch not in L2_PREFETCH_SIZES:
            raise PlanError(f"the L2 prefetch size is one of {', '.join(map(str, L2_PREFETCH_SIZES))} bytes, not "
                            f"{self.l2_prefetch!r}")

    @property
    def ptx(self) -> str:
        return cp_async_ptx(self.cache, self.l2_prefetch, self.cache_hint)


def cp_async_atom(size: int, cache: CpAsyncCache | None = None, l2_prefetch: L2Prefetch | None = None,
                  cache_hint: bool = False) -> CpAsyncAtom:
    """The atom of a ``size``-byte cp.async: ``.cg`` (bypassing L1) for 16 bytes unless ``cache`` says otherwise,
    ``.ca`` for 4 and 8 (``cache_hint``: with an L2 policy)."""
    return CpAsyncAtom(size, cache or ("cg" if size == CG_SIZE else "ca"), l2_prefetch, cache_hint)
