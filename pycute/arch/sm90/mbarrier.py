"""The mbarrier (PTX ISA #parallel-synchronization-and-communication-instructions-mbarrier), as data and as the
rules a pipeline's barriers obey: its size, the arrival count and transaction-count ranges, what each kind of
arrival does, when a phase completes and which phase a parity wait names.

An mbarrier counts *pending arrivals* (reset to the ``mbarrier.init`` count when a phase completes) and a
*tx-count* (``expect_tx`` adds bytes, an asynchronous copy's ``complete_tx`` subtracts the bytes it delivered; it
may go below zero when a copy lands before the arm). The current phase completes when both reach zero; the barrier
then starts the next phase. ``mbarrier.try_wait.parity p`` succeeds once the phase of parity ``p`` -- the current
phase or the one before it -- has completed: on a fresh barrier (phase 0 in progress) a wait for parity 1 succeeds
at once, which is why a producer's first pass over the stages starts at phase bit 1.
"""
from __future__ import annotations

from typing import Literal

import attrs

from .tma import TX_LIMIT

__all__ = ["MBARRIER_BYTES", "MAX_ARRIVALS", "TX_LIMIT", "ArrivalKind", "ArrivalFact", "ARRIVALS",
           "wait_passes", "phase_completes"]

#: An mbarrier object: 64 bits of shared memory, 8-byte aligned.
MBARRIER_BYTES = 8
#: ``mbarrier.init``'s count: 1 to 2^20 - 1 arrivals per phase.
MAX_ARRIVALS = (1 << 20) - 1

#: How a role signals a barrier (the header helper in parentheses): ``expect_tx`` one arrival that also adds the
#: phase's bytes (``pycute_mbarrier_arrive_expect_tx``); ``complete_tx`` an asynchronous copy's bytes landing
#: (TMA, bulk, DSMEM), no arrival; ``arrive`` one arrival of the executing thread (``pycute_mbarrier_arrive``);
#: ``remote_arrive`` one arrival on the barrier at the same offset of another CTA of the cluster
#: (``pycute_mbarrier_arrive_remote``); ``cp_async`` one arrival per copying thread once its cp.async have landed
#: (``cp.async.mbarrier.arrive.noinc``, counted in the init); ``commit`` one arrival on each CTA of the mask once the
#: thread's earlier tcgen05 operations have completed (``tcgen05.commit...mbarrier::arrive::one``).
ArrivalKind = Literal["expect_tx", "complete_tx", "arrive", "remote_arrive", "cp_async", "commit"]


@attrs.frozen
class ArrivalFact:
    """One kind of signal: the arrivals it makes per executing thread, whether it moves the tx-count, whether it
    happens later than the instruction (asynchronously), and the PTX ISA section that says so."""

    arrivals: int
    tx: bool
    asynchronous: bool
    section: str


ARRIVALS: dict[ArrivalKind, ArrivalFact] = {
    "expect_tx": ArrivalFact(1, True, False, "#parallel-synchronization-and-communication-instructions-mbarrier-arrive"),
    "complete_tx": ArrivalFact(0, True, True, "#data-movement-and-conversion-instructions-cp-async-bulk-tensor"),
    "arrive": ArrivalFact(1, False, False, "#parallel-synchronization-and-communication-instructions-mbarrier-arrive"),
    "remote_arrive": ArrivalFact(1, False, False,
                                 "#parallel-synchronization-and-communication-instructions-mbarrier-arrive"),
    "cp_async": ArrivalFact(1, False, True, "#data-movement-and-conversion-instructions-cp-async-mbarrier-arrive"),
    "commit": ArrivalFact(1, False, True, "#tcgen05-instructions-tcgen05-commit"),
}


def phase_completes(pending: int, tx: int) -> bool:
    """Whether a phase with ``pending`` arrivals still to come and tx-count ``tx`` has completed."""
    return pending == 0 and tx == 0


def wait_passes(completed: int, parity: int) -> bool:
    """``mbarrier.try_wait.parity`` on a barrier that has completed ``completed`` phases: the phase of parity
    ``parity`` is the current one (incomplete: the wait fails) or the one before it (complete: it passes). A waiter
    two phases behind therefore waits forever -- the hang a wrong parity causes."""
    return (completed & 1) != (parity & 1)
