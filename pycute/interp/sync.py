"""CTA barriers, the cluster barrier and mbarriers (PTX ISA #parallel-synchronization-and-communication-
instructions-bar, -barrier-cluster, -mbarrier).

An mbarrier has its expected arrival count, the pending arrivals and the transaction count of the phase in
progress, and its phase number. A phase completes when no arrival is pending and the tx-count is zero; then the
next phase starts with the expected count. ``try_wait.parity p`` / ``test_wait.parity p`` is satisfied once the
phase of parity ``p`` has completed: when the phase in progress has the other parity (so at phase 0, parity 1 is
satisfied at once: "the phase before"). A wait that is not satisfied suspends the thread until a phase completes
(on the GPU the thread would poll; nothing else differs). A phase that completes while copies that complete
transactions on it are still in flight means ``expect_tx`` was smaller than the bytes they bring: an error.
"""
from __future__ import annotations

import numpy as np

from .ctabase import CtaBase
from ..errors import EmulationError
from .operands import MASK

__all__ = ["SyncMixin", "Mbarrier", "NamedBarrier", "ClusterBarrier", "BarrierError", "BarrierConflictError"]

_MAX_COUNT = (1 << 20) - 1            # an mbarrier's expected count and its tx-count are 20-bit


class BarrierError(EmulationError):
    """An mbarrier used against the ISA's rules: uninitialised, more arrivals than expected, a phase completed
    with its copies still in flight (``expect_tx`` too small). The message names the barrier."""


class BarrierConflictError(BarrierError):
    """One named barrier id (with one thread count) used by two groups of warps whose arrivals can mix: a phase
    completed by warps of both, or two groups' phases not ordered by any synchronisation -- on the GPU the first
    ``count`` threads to arrive complete a phase, whichever group they belong to. The message names the barrier, the
    warps, the count and the PTX lines."""


class Mbarrier:
    """One initialised mbarrier: ``count`` expected arrivals, ``pending`` and ``tx`` of the phase in progress."""

    def __init__(self, cta, addr: int, count: int, name: str, slot: int):
        self.cta, self.addr, self.name, self.slot = cta, addr, name, slot
        self.count = self.pending = count
        self.tx, self.phase = 0, 0
        self.armed = self.delivered = 0                   # this phase's expect_tx and complete_tx bytes
        self.acc = cta.cluster.clocks.vector()
        self.done: dict[int, np.ndarray] = {}
        self.waiters: list = []
        self.inflight: set[int] = set()

    def describe(self) -> str:
        return (f"mbarrier {self.name} (shared {self.addr:#x} of {self.cta.name}): phase {self.phase} in "
                f"progress, {self.pending} of {self.count} arrivals pending, tx-count {self.tx} B")

    def issued_bytes(self, world) -> int:
        """The transaction bytes of this phase's copies: those completed and those still in flight."""
        return self.delivered + sum(n for i in self.inflight for bar, n in world.ops[i].targets if bar is self)

    def satisfied(self, parity: bool, value: int) -> tuple[bool, int]:
        """Whether a wait on ``value`` (a parity, or a state token = the phase it was taken in) is satisfied, and
        the phase it observes (-1: the phase before phase 0)."""
        if parity:
            p = value & 1
            if (self.phase & 1) == p:
                return False, self.phase
            return True, self.phase - 1
        return self.phase > value, value

    def complete(self, world) -> None:
        if self.inflight:
            raise BarrierError(f"{self.describe()}: the phase completes while {world.ops[min(self.inflight)].describe()} "
                               f"is still in flight: expect_tx armed {self.armed} B, but the copies issued for this "
                               f"phase bring {self.issued_bytes(world)} B")
        self.acc[self.slot] = self.phase + 1
        self.done[self.phase] = self.acc
        self.done.pop(self.phase - 2, None)
        self.acc = self.cta.cluster.clocks.vector()
        self.phase += 1
        self.pending, self.tx = self.count, 0
        self.armed = self.delivered = 0
        still = []
        for th, parity, value, dslot, nxt in self.waiters:
            ok, seen = self.satisfied(parity, value)
            if not ok:
                still.append((th, parity, value, dslot, nxt))
                continue
            th.acquire(self.done.get(seen))
            if dslot is not None:
                th.R[dslot] = True
            th.cta.wake(th, nxt)
        self.waiters = still

    def check(self, world) -> None:
        if self.pending == 0 and self.tx == 0:
            self.complete(world)


class NamedBarrier:
    """One of a CTA's 16 barriers: arrivals of the phase in progress and the threads waiting on it."""

    def __init__(self, index: int):
        self.index = index
        self.expected: int | None = None
        self.arrived = 0
        self.acc: np.ndarray | None = None
        self.waiters: list = []
        self.values: list = []
        self.warps: set[int] = set()                    # the warps whose threads arrived in this phase
        self.lines: set[int] = set()                    # and the PTX lines they arrived at
        self.first: np.ndarray | None = None             # the first arrival's clock

    def describe(self, cta) -> str:
        want = self.expected if self.expected is not None else cta.live
        return f"barrier {self.index} of {cta.name}: {self.arrived} of {want} threads arrived"


class ClusterBarrier:
    """The cluster's barrier: threads arrive (``barrier.cluster.arrive``) and wait for the phase to complete."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.phase = self.arrived = 0
        self.acc = cluster.clocks.vector()
        self.done: np.ndarray | None = None
        self.waiters: list = []

    def describe(self) -> str:
        return f"the cluster barrier of cluster {self.cluster.index}: {self.arrived} of {self.cluster.live} threads arrived"

    def check(self) -> None:
        if self.arrived < self.cluster.live or self.arrived == 0:
            return
        self.done, self.acc = self.acc, self.cluster.clocks.vector()
        self.phase += 1
        self.arrived = 0
        for th, nxt in self.waiters:
            th.acquire(self.done)
            th.cluster_arrived = None
            th.cta.wake(th, nxt)
        self.waiters = []


class SyncMixin(CtaBase):
    """Barrier and mbarrier instructions of a CTA's threads (mixed into ``scheduler.Cta``)."""

    # -- bar / barrier -------------------------------------------------------------------------------------------
    def _arrive_bar(self, th, index: int, count: int | None, line: int) -> NamedBarrier:
        bar = self.bars.setdefault(index, NamedBarrier(index))
        if count is not None:
            if count % 32 or count <= 0:
                raise EmulationError(f"barrier {index} with a thread count of {count}: a positive multiple of the "
                                     f"warp size (PTX ISA #parallel-synchronization-and-communication-"
                                     f"instructions-bar)")
            if bar.arrived and bar.expected != count:
                raise EmulationError(f"barrier {index} of {self.name}: this arrival expects {count} threads, "
                                     f"earlier ones {bar.expected if bar.expected is not None else 'all'}")
            bar.expected = count
        if bar.acc is None:
            bar.acc, bar.first = th.vc.copy(), th.vc.copy()
        else:
            np.maximum(bar.acc, th.vc, out=bar.acc)
        th.tick()
        bar.arrived += 1
        bar.warps.add(th.warp)
        bar.lines.add(line)
        return bar

    def _check_group(self, bar: NamedBarrier) -> None:
        """A phase of ``bar`` with an explicit count completed: its warps against the last phase's of that id and
        count (BarrierConflictError when the groups can mix; docs/interpreter.md, "Named barriers")."""
        if bar.expected is None:
            return
        key = (bar.index, bar.expected)
        last = self.bar_groups.get(key)
        self.bar_groups[key] = (frozenset(bar.warps), bar.acc, frozenset(bar.lines))
        if last is None or last[0] == bar.warps:
            return
        warps, acc, lines = last
        mixed = bool(warps & bar.warps)
        if not mixed and bar.first is not None and bool(np.all(bar.first >= acc)):
            return                                       # the earlier group's phase happened before this one began
        ranges = lambda ws: ", ".join(str(w) for w in sorted(ws))                      # noqa: E731
        at = ", ".join(str(n) for n in sorted(lines | bar.lines))
        why = (f"a phase completed by warps {ranges(bar.warps)} after one by warps {ranges(warps)}: the warps of two "
               f"groups mix in one phase" if mixed else
               f"warps {ranges(warps)} and warps {ranges(bar.warps)} use it as two groups, and nothing orders the "
               f"second group's arrivals after the first group's phase: their warps can mix")
        raise BarrierConflictError(f"barrier {bar.index} of {self.name} with a count of {bar.expected} threads: {why} "
                                   f"(the first {bar.expected} threads to arrive complete a phase, whichever group "
                                   f"they belong to; PTX lines {at}). Give each group its own barrier id (PTX ISA "
                                   f"#parallel-synchronization-and-communication-instructions-bar)")

    def _release_bar(self, bar: NamedBarrier, th) -> bool:
        want = bar.expected if bar.expected is not None else self.live
        if bar.arrived < want:
            return False
        if bar.arrived > want:
            raise EmulationError(f"{bar.describe(self)}: more arrivals than the {want} threads it counts")
        self._check_group(bar)
        popc = sum(1 for v in bar.values if v)
        result = {"popc": popc, "and": popc == len(bar.values), "or": popc > 0}
        for waiter, dslot, nxt, op in bar.waiters:
            waiter.acquire(bar.acc)
            if dslot is not None:
                waiter.R[dslot] = result[op] if op != "popc" else popc & MASK[32]
            if waiter is not th:
                self.wake(waiter, nxt)
        self.bars[bar.index] = NamedBarrier(bar.index)
        return True

    def bar_wait(self, th, site, index: int, count: int | None, value, dslot: int | None, nxt: int) -> int:
        """``bar.sync`` / ``barrier.sync`` / ``bar.red``: arrive, then wait for the phase to complete."""
        bar = self._arrive_bar(th, index, count, site.line)
        op = next((m for m in site.mods if m in ("popc", "and", "or")), "popc")
        bar.waiters.append((th, dslot, nxt, op))
        bar.values.append(value)
        if self._release_bar(bar, th):
            return nxt
        return self.suspend(th, nxt, ("bar", self, bar))

    def bar_arrive(self, th, site, index: int, count: int | None) -> None:
        self._release_bar(self._arrive_bar(th, index, count, site.line), th)

    # -- barrier.cluster -----------------------------------------------------------------------------------------
    def cluster_arrive(self, th, release: bool) -> None:
        barrier = self.cluster.barrier
        if th.cluster_arrived is not None:
            raise EmulationError(f"{th!r} arrives on the cluster barrier twice without waiting in between")
        th.cluster_arrived = barrier.phase
        if release:
            np.maximum(barrier.acc, th.vc, out=barrier.acc)
            th.tick()
        barrier.arrived += 1
        barrier.check()

    def cluster_wait(self, th, nxt: int) -> int:
        barrier = self.cluster.barrier
        if th.cluster_arrived is None:
            raise EmulationError(f"{th!r} waits on the cluster barrier without arriving on it first")
        if barrier.phase > th.cluster_arrived:
            th.acquire(barrier.done)
            th.cluster_arrived = None
            return nxt
        barrier.waiters.append((th, nxt))
        return self.suspend(th, nxt, ("cluster", self, barrier))

    # -- mbarrier ------------------------------------------------------------------------------------------------
    def mbarrier_at(self, space: str, addr: int, what: str) -> Mbarrier:
        """The initialised mbarrier an operand names (shared::cta, shared::cluster or a generic address)."""
        cta, off = self._shared_operand(space, addr)
        bar = cta.mbarriers.get(off)
        if bar is None:
            raise BarrierError(f"{what} on shared {off:#x} of {cta.name} ({self.world.name_of(off)}), which no "
                               f"mbarrier.init has initialised")
        return bar

    def _shared_operand(self, space: str, addr: int):
        if space == "generic":
            return self._resolve(None, "generic", addr, 8)[1:]
        return self.shared_target(addr & 0xFFFF_FFFF, space == "cluster")

    def mbar_init(self, th, site, space: str, addr: int, count: int) -> None:
        cta, off = self._shared_operand(space, addr)
        if not 1 <= count <= _MAX_COUNT:
            raise BarrierError(f"mbarrier.init of {self.world.name_of(off)} with count {count}: 1 to {_MAX_COUNT}")
        old = cta.mbarriers.get(off)
        if old is not None and old.waiters:
            raise BarrierError(f"mbarrier.init of {old.name} while threads wait on it")
        key = ("mbarrier", cta.rank, off)
        slot = self.cluster.clocks.slot(key, f"mbarrier {self.world.name_of(off)} of {cta.name}")
        cta.mbarriers[off] = Mbarrier(cta, off, count, self.world.name_of(off), slot)

    def mbar_inval(self, th, site, space: str, addr: int) -> None:
        cta, off = self._shared_operand(space, addr)
        cta.mbarriers.pop(off, None)

    def mbar_expect_tx(self, th, site, space: str, addr: int, tx: int) -> None:
        bar = self.mbarrier_at(space, addr, "mbarrier.expect_tx")
        bar.tx += tx
        bar.armed += tx

    def mbar_complete_tx(self, th, site, space: str, addr: int, tx: int) -> None:
        bar = self.mbarrier_at(space, addr, "mbarrier.complete_tx")
        bar.tx -= tx
        bar.delivered += tx
        bar.check(self.world)

    def mbar_arrive(self, th, site, space: str, addr: int, count: int, tx: int, release: bool, drop: bool,
                    no_complete: bool) -> int:
        bar = self.mbarrier_at(space, addr, "mbarrier.arrive")
        bar.tx += tx
        bar.armed += tx
        if release:
            np.maximum(bar.acc, th.vc, out=bar.acc)
            th.tick()
        token = bar.phase
        self.arrive_on(bar, count, f"{th!r}", th)
        if drop:
            bar.count -= count
        if no_complete and bar.phase != token:
            raise BarrierError(f"{bar.name}: an arrive.noComplete completed phase {token}")
        return token & MASK[64]

    def arrive_on(self, bar: Mbarrier, count: int, who: str, th=None) -> None:
        if count > bar.pending:
            from .report import waits_hint
            raise BarrierError(f"{who} arrives {count} time(s) on {bar.describe()}: more arrivals than the phase "
                               f"expects (a stage refilled before its previous fill completed?){waits_hint(th)}")
        bar.pending -= count
        bar.check(self.world)

    def mbar_wait(self, th, site, space: str, addr: int, value: int, parity: bool, dslot: int | None, nxt: int) -> int:
        """``mbarrier.try_wait`` / ``test_wait`` (``.parity`` or a state token): satisfied at once, or the thread
        waits for the phase (a wait that could never be satisfied is reported as a deadlock)."""
        bar = self.mbarrier_at(space, addr, f"mbarrier.{site.mods[0]}")
        ok, seen = bar.satisfied(parity, value)
        th.waits[bar.name] = (("parity", value & 1) if parity else ("token", value), bar.phase, ok)
        if ok:
            th.acquire(bar.done.get(seen))
            if dslot is not None:
                th.R[dslot] = True
            return nxt
        bar.waiters.append((th, parity, value, dslot, nxt))
        return self.suspend(th, nxt, ("mbarrier", self, bar, (parity, value)))

    def on_exit(self, th) -> None:
        """Barriers that count live threads may complete when one exits."""
        for bar in list(self.bars.values()):
            if bar.expected is None and bar.arrived:
                self._release_bar(bar, None)
        self.cluster.barrier.check()
