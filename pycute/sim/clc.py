"""An emulation of cluster launch control under a ``ClcScheduler`` plan: a grid's clusters launch in order while
``resident`` fit on the machine; a running cluster computes its own work unit, then runs the generated protocol --
every CTA arms its response mbarrier with 16 bytes, rank 0 issues ``try_cancel`` (multicast to the cluster), the
16-byte response lands and completes the bytes on each CTA's barrier, each CTA waits for the phase its state names
and decodes the response -- and computes the cancelled cluster's unit, until a response says none was left (after
which it requests no more: a further request is undefined, PTX ISA
#parallel-synchronization-and-communication-instructions-clusterlaunchcontrol). Which ready cluster runs next is
drawn from ``seed``. Responses use ``arch.sm100.clc``'s encoding (ptxas's decode [I]; never run: no Blackwell GPU
was available)."""
from __future__ import annotations

import random
from collections import deque

from ..arch.sm100.clc import RESPONSE_BYTES, decode_response, encode_response
from ..arch.sm90.mbarrier import phase_completes, wait_passes
from ..errors import EmulationError
from ..pipeline.scheduler import ClcScheduler

__all__ = ["run_clc_schedule"]


class _Cta:
    """One CTA's response buffer, response mbarrier (completed phases, pending arrivals, tx-count) and state."""

    def __init__(self) -> None:
        self.response = 0
        self.barrier = [0, 1, 0]
        self.phase = 0

    def arm(self) -> None:
        self.barrier[2] += RESPONSE_BYTES
        self._arrive()

    def land(self, response: int) -> None:
        self.response = response
        self.barrier[2] -= RESPONSE_BYTES
        self._settle()

    def _arrive(self) -> None:
        if self.barrier[1] == 0:
            raise EmulationError("an arrival on the response mbarrier beyond its count of 1")
        self.barrier[1] -= 1
        self._settle()

    def _settle(self) -> None:
        if phase_completes(self.barrier[1], self.barrier[2]):
            self.barrier = [self.barrier[0] + 1, 1, 0]

    def answer(self) -> tuple[bool, tuple[int, int, int]]:
        if not wait_passes(self.barrier[0], self.phase):
            raise EmulationError(f"the answer waits for parity {self.phase} on a response mbarrier that has completed "
                                 f"{self.barrier[0]} phase(s): it would wait forever")
        self.phase ^= 1
        return decode_response(self.response)


def run_clc_schedule(plan: ClcScheduler, resident: int, seed: int = 0) -> dict[int, list[tuple[int, int] | None]]:
    """The tiles each launched CTA (by ``blockIdx.x``) computes when ``resident`` clusters fit at once: its own
    unit's, then those of the clusters it cancelled, in order."""
    if not isinstance(plan, ClcScheduler):
        raise TypeError(f"run_clc_schedule: expected a ClcScheduler (make_clc_scheduler), got {type(plan).__name__}")
    if not isinstance(resident, int) or resident < 1:
        raise EmulationError(f"run_clc_schedule: resident={resident!r}: at least one cluster fits")
    cs, rng = plan.cluster_size, random.Random(seed)
    queue = deque(range(plan.units))                # clusters not yet launched, in launch order
    running: dict[int, tuple[list[_Cta], list[int]]] = {}   # cluster -> (its CTAs, units to compute)
    done: dict[int, list[tuple[int, int] | None]] = {}
    failed: set[int] = set()

    def launch() -> None:
        while queue and len(running) < resident:
            c = queue.popleft()
            running[c] = ([_Cta() for _ in range(cs)], [c])

    launch()
    while running:
        c = rng.choice(sorted(running))
        ctas, units = running[c]
        for rank in range(cs):                       # compute the pending unit
            done.setdefault(c * cs + rank, []).append(plan.tile(units[-1], rank))
        if c in failed:
            raise EmulationError(f"cluster {c} requests again after a failed response (undefined)")
        for cta in ctas:                             # <name>_request: every CTA arms, rank 0 issues
            cta.arm()
        response = encode_response(True, (queue.popleft() * cs, 0, 0)) if queue else encode_response(False)
        for cta in ctas:
            cta.land(response)
        answers = [cta.answer() for cta in ctas]     # <name>_answer in every CTA
        if len({a for a in answers}) != 1:
            raise EmulationError(f"cluster {c}'s CTAs decoded different answers {answers}")
        canceled, (x, _, _) = answers[0]
        if canceled:
            units.append(x // cs)
        else:
            failed.add(c)
            del running[c]
            launch()
    return done
