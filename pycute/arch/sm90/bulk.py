"""Bulk copies (``cp.async.bulk``, no tensor map) and DSMEM, as data: alignment and size rules, the instruction
spellings of each direction, ``mapa`` and the cluster sizes (PTX ISA #data-movement-and-conversion-instructions-cp-
async-bulk, #data-movement-and-conversion-instructions-mapa; CUDA Programming Guide, "Thread Block Clusters")."""
from __future__ import annotations

from typing import Literal

__all__ = ["BULK_ALIGN", "BulkDirection", "bulk_ptx", "BULK_SASS", "MAPA_PTX", "MAX_CLUSTER", "PORTABLE_CLUSTER"]

#: Both addresses 16-byte aligned and the size a multiple of 16 (PTX ISA: undefined otherwise; no error is raised).
BULK_ALIGN = 16
#: A cluster holds up to 8 CTAs portably, 16 on the H100/H200 with the non-portable size attribute.
PORTABLE_CLUSTER = 8
MAX_CLUSTER = 16

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


def bulk_ptx(direction: BulkDirection) -> str:
    """The opcode of a flat bulk copy in ``direction``."""
    return _PTX[direction]


#: SASS each direction assembles to (ptxas 13, sm_90a and sm_100a).
BULK_SASS = {"load": "UBLKCP.S.G", "store": "UBLKCP.G.S", "dsmem": "UBLKCP.S.S"}
#: A CTA-local shared address to the same offset in CTA ``rank`` of the cluster, as a 32-bit shared::cluster
#: address (the form the bulk copy's shared::cluster operands take).
MAPA_PTX = "mapa.shared::cluster.u32"
