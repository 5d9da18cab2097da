"""Bulk copies (``cp.async.bulk``, no tensor map) and DSMEM, as data: alignment and size rules, the instruction
spellings of each direction, ``mapa`` and the cluster sizes (PTX ISA #data-movement-and-conversion-instructions-cp-
async-bulk, #data-movement-and-conversion-instructions-mapa; CUDA Programming Guide, "Thread Block Clusters")."""
from __future__ import annotations

from typing import Literal

from ...errors import PlanError
from ..sm80.cache import CACHE_HINT

__all__ = ["BULK_ALIGN", "BulkDirection", "bulk_ptx", "BULK_SASS", "MAPA_PTX", "MAX_CLUSTER", "PORTABLE_CLUSTER",
           "cluster_rank", "cluster_coord"]

#: Both addresses 16-byte aligned and the size a multiple of 16 (PTX ISA: undefined otherwise; no error is raised).
BULK_ALIGN = 16
#: A cluster holds up to 8 CTAs portably, 16 on the H100/H200 with the non-portable size attribute.
PORTABLE_CLUSTER = 8
MAX_CLUSTER = 16


def cluster_rank(cluster: tuple[int, int, int], coord: tuple[int, int, int]) -> int:
    """``%cluster_ctarank`` of the CTA at ``%cluster_ctaid`` ``coord`` in a cluster of shape ``cluster``: x fastest,
    then y, then z [inferred from the CUDA Programming Guide's block rank; ``python -m tools tma_every_box``
    records it]."""
    x, y, z = coord
    return x + cluster[0] * (y + cluster[1] * z)


def cluster_coord(cluster: tuple[int, int, int], rank: int) -> tuple[int, int, int]:
    """The inverse of ``cluster_rank``."""
    return rank % cluster[0], rank // cluster[0] % cluster[1], rank // (cluster[0] * cluster[1])

BulkDirection = Literal["load", "store", "dsmem"]

_PTX = {
    # global -> shared, completing on the destination CTA's mbarrier (the issuing CTA's window is part of the
    # cluster's, so a CTA-local address names the executing CTA).
    "load": "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
    # shared -> global, completing in the issuing thread's bulk group.
    "store": "cp.async.bulk.global.shared::cta.bulk_group",
    # shared -> another CTA's shared memory, completing on the receiver's mbarrier (strictly remote, PTX 9.0).
    "dsmem": "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes",
}


def bulk_ptx(direction: BulkDirection, cache_hint: bool = False) -> str:
    """The opcode of a flat bulk copy in ``direction`` (``cache_hint``: with a createpolicy operand last; a DSMEM
    copy touches no global memory and takes none)."""
    if cache_hint and direction == "dsmem":
        raise PlanError("a DSMEM copy takes no L2 cache hint (PTX ISA: .L2::cache_hint needs a global side)")
    return _PTX[direction] + (CACHE_HINT if cache_hint else "")


#: SASS each direction assembles to (ptxas 13, sm_90a and sm_100a).
BULK_SASS = {"load": "UBLKCP.S.G", "store": "UBLKCP.G.S", "dsmem": "UBLKCP.S.S"}
#: A CTA-local shared address to the same offset in CTA ``rank`` of the cluster, as a 32-bit shared::cluster
#: address (the form the bulk copy's shared::cluster operands take).
MAPA_PTX = "mapa.shared::cluster.u32"
