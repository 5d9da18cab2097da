"""tcgen05.mma atoms (A and B in shared memory): one per kind, cta_group and scale-vector size (PTX ISA
#tcgen05-mma), and the issue record a plan streams, the emulator executes and the PTX interpreter reads back."""
from __future__ import annotations

from typing import NamedTuple

import attrs

from ..arch.sm100.mma import MMA_KINDS, mma_ptx
from ..arch.sm100.tmem import check_cta_group
from ..errors import PlanError

__all__ = ["MmaAtom", "MmaIssue"]


class MmaIssue(NamedTuple):
    """One issued MMA: its PTX, the accumulator's TMEM address, the A and B descriptors (``a_desc`` A's TMEM
    address when ``a_tmem``), the instruction descriptor, whether D is accumulated into (enable-input-d), and the
    SF TMEM addresses (block-scaled)."""

    ptx: str
    d: int
    a_desc: int
    b_desc: int
    idesc: int
    accumulate: bool
    sfa: int | None = None
    sfb: int | None = None
    a_tmem: bool = False


@attrs.frozen
class MmaAtom:
    """``tcgen05.mma.cta_group::<cta_group>.kind::<kind>`` with a B descriptor and A's descriptor, or with
    ``a_tmem`` A's TMEM address (``[a-tmem]``); ``.block_scale`` with its ``scale_vec`` for the block-scaled
    kinds; ``ws`` the weight-stationary ``tcgen05.mma.ws``."""

    kind: str
    cta_group: int = 1
    scale_vec: int | None = None
    a_tmem: bool = False
    ws: bool = False

    def __attrs_post_init__(self) -> None:
        if self.kind not in MMA_KINDS:
            raise PlanError(f"unknown tcgen05.mma kind {self.kind!r}; one of {', '.join(MMA_KINDS)}")
        check_cta_group(self.cta_group)
        scaled = MMA_KINDS[self.kind].block_scaled
        if scaled and self.scale_vec not in MMA_KINDS[self.kind].scale_vecs:
            raise PlanError(f"kind::{self.kind} takes scale_vec {MMA_KINDS[self.kind].scale_vecs}, not "
                            f"{self.scale_vec}")
        if not scaled and self.scale_vec is not None:
            raise PlanError(f"kind::{self.kind} has no scale factors")
        if self.ws and (scaled or self.cta_group != 1):
            raise PlanError(f"tcgen05.mma.ws is cta_group::1 with a dense kind, not kind::{self.kind} cta_group::"
                            f"{self.cta_group} (PTX #tcgen05-mma-instructions-mma-ws)")

    @property
    def block_scaled(self) -> bool:
        return MMA_KINDS[self.kind].block_scaled

    @property
    def ptx(self) -> str:
        return mma_ptx(self.kind, self.cta_group, self.scale_vec, self.ws)
