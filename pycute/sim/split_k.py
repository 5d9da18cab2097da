"""A model checker of the split-K / stream-K fixup (``pipeline.split_k``): ``check_fixup`` explores every order in
which a grid's clusters take their steps -- with every cluster resident, or only ``resident`` at a time, the others
launching in grid order as clusters exit (a GPU shared with other work, MPS, a grid larger than fits) -- and proves
for that problem and grid that every cluster finishes (no deadlock), that a unit's reduction reads each of its
partials only after that partial was stored and released, that every unit's result is written exactly once, that
the counters end at zero (the next launch starts clean), and that every order gives the same bits, equal to the
plan's fold (the pieces in K order, left to right in f32).

Protocols: ``"last"`` is pycute's (each piece stores its partial and arrives; the last arrival reduces: no CTA waits
for another); ``"serial"`` is the flag-ordered fixup (piece ``j`` waits until the unit's flag reads ``j``, adds its
partial into the running one, raises the flag), which deadlocks when the clusters holding the GPU all wait for a
piece of a cluster not yet launched; ``"atomic"`` adds partials into the output with float atomics in arrival
order, which finishes but gives different bits in different orders. ``mutation`` breaks pycute's protocol the ways a
hand-written fixup can (``"arrive_before_store"``, ``"no_reset"``) so tests can see each one reported."""
from __future__ import annotations

import random
from typing import Callable, Literal

import attrs
import numpy as np

from ..errors import EmulationError
from ..pipeline.split_k import Piece, SplitKScheduler

__all__ = ["FixupError", "FixupCheck", "check_fixup", "Protocol"]

Protocol = Literal["last", "serial", "atomic"]
Mutation = Literal["arrive_before_store", "no_reset"]


class FixupError(EmulationError):
    """A fixup failure the model found: ``what`` (``deadlock``, ``early read``, ``twice``, ``counter``,
    ``nondeterministic``), the unit it concerns, and the steps that led to it."""

    def __init__(self, message: str, what: str, unit: int | None = None, trace: tuple[str, ...] = ()):
        tail = "\n  after: " + "\n         ".join(trace[-8:]) if trace else ""
        super().__init__(message + tail)
        self.what, self.unit, self.trace = what, unit, trace


@attrs.frozen
class FixupCheck:
    """What ``check_fixup`` explored and found: the distinct states, whether every order was explored (else
    ``schedules`` random complete runs), and each unit's result bits (the same in every order)."""

    protocol: str
    grid: int
    resident: int
    states: int
    exhaustive: bool
    schedules: int
    results: tuple[int, ...]

    def __str__(self) -> str:
        how = "every order" if self.exhaustive else f"{self.states} states, then {self.schedules} random runs"
        return (f"fixup {self.protocol!r}: {self.grid} cluster(s), {self.resident} resident, {how}: no deadlock, no "
                f"early read, each unit once, counters zero, the same bits")


def _partial(piece: Piece) -> np.float32:
    """A piece's partial: one pseudo-random f32 per k-block (exponents spread over 2^-16..2^15), summed from zero in
    order."""
    acc = np.float32(0.0)
    for kb in range(piece.kb_begin, piece.kb_end):
        h = ((piece.unit * 1000003 + kb * 7919 + 17) * 2654435761) & 0xFFFFFFFF
        h ^= h >> 15
        scale = 2.0 ** ((h & 31) - 16)                  # spread exponents, so that the order of a sum shows
        acc = np.float32(acc + np.float32(((h >> 8) - (1 << 23)) * 2.0 ** -22 * scale))
    return acc


def _bits(x: np.float32) -> int:
    return int(np.float32(x).view(np.uint32))


@attrs.frozen
class _State:
    pcs: tuple             # per cluster: (piece index, step index)
    launched: int          # clusters launched so far (in grid order)
    counters: tuple        # per unit: arrivals (last) or flag (serial)
    slots: tuple           # per slot: the bits of the partial stored, or None
    released: tuple        # per slot: whether an arrival released it
    results: tuple         # per unit: result bits or None (atomic: the running sum's bits)
    writes: tuple          # per unit: results written


class _Model:
    def __init__(self, plan: SplitKScheduler, grid: int, protocol: str, resident: int,
                 mutation: str | None):
        self.plan, self.protocol, self.resident, self.mutation = plan, protocol, resident, mutation
        cs = plan.cluster_size
        self.clusters = grid // cs
        self.pieces = [[p for i in plan.work(c * cs, grid) for p in plan.pieces(i)] for c in range(self.clusters)]
        self.units = plan.units
        self.nslots = max(1, plan.slots)
        self.trace: list[str] = []

    def steps(self, p: Piece) -> tuple[str, ...]:
        if p.count == 1:
            return ("whole",)
        if self.protocol == "last":
            return ("arrive", "store") if self.mutation == "arrive_before_store" else ("store", "arrive")
        if self.protocol == "serial":
            return ("wait", "add")
        return ("atomic",)

    def initial(self) -> _State:
        return _State(tuple((0, 0) for _ in range(self.clusters)), min(self.resident, self.clusters),
                      tuple(0 for _ in range(self.units)), tuple(None for _ in range(self.nslots)),
                      tuple(False for _ in range(self.nslots)),
                      tuple(None for _ in range(self.units)), tuple(0 for _ in range(self.units)))

    def enabled(self, st: _State, c: int) -> bool:
        if c >= st.launched:
            return False
        i, j = st.pcs[c]
        if i >= len(self.pieces[c]):
            return False
        p = self.pieces[c][i]
        step = self.steps(p)[j]
        return not (step == "wait" and st.counters[p.unit] != p.index)

    def step(self, st: _State, c: int) -> _State:
        i, j = st.pcs[c]
        p = self.pieces[c][i]
        step = self.steps(p)[j]
        counters, slots, released = list(st.counters), list(st.slots), list(st.released)
        results, writes = list(st.results), list(st.writes)
        u = p.unit
        self.trace.append(f"cluster {c}: {step} unit {u} piece {p.index} of {p.count} (k-blocks {p.kb_begin}.."
                          f"{p.kb_end})")

        def write(bits: int) -> None:
            writes[u] += 1
            if writes[u] > 1:
                raise FixupError(f"unit {u}'s result written twice (by cluster {c}, piece {p.index})", "twice", u,
                                 tuple(self.trace))
            results[u] = bits

        if step == "whole":
            write(_bits(_partial(p)))
        elif step == "store":
            assert p.slot is not None
            slots[p.slot] = _bits(_partial(p))
        elif step == "arrive":
            assert p.slot is not None
            released[p.slot] = slots[p.slot] is not None
            counters[u] += 1
            if counters[u] == p.count:                       # the last arrival: reduce in K order
                if self.mutation != "no_reset":
                    counters[u] = 0
                write(self._reduce(slots, released, u, c))
        elif step == "add":
            x = _partial(p)
            running = x if p.index == 0 else np.float32(np.uint32(results[u] or 0).view(np.float32) + x)
            if p.index + 1 < p.count:
                results[u], counters[u] = _bits(running), p.index + 1
            else:
                results[u], counters[u] = None, 0
                write(_bits(running))
        elif step == "atomic":
            x = _partial(p)
            now = x if results[u] is None else np.float32(np.uint32(results[u]).view(np.float32) + x)
            results[u] = _bits(now)
            counters[u] += 1
            if counters[u] == p.count:
                counters[u] = 0
                writes[u] += 1
        pcs = list(st.pcs)
        pcs[c] = (i, j + 1) if j + 1 < len(self.steps(p)) else (i + 1, 0)
        launched = st.launched
        if pcs[c][0] >= len(self.pieces[c]) and launched < self.clusters:
            launched += 1                                    # an exit frees a slot for the next cluster
        return _State(tuple(pcs), launched, tuple(counters), tuple(slots), tuple(released), tuple(results),
                      tuple(writes))

    def _reduce(self, slots: list, released: list, u: int, c: int) -> int:
        """Cluster ``c``'s reduction of unit ``u``: its partials in K order, each stored and released before."""
        total = None
        for q in self.plan.unit_pieces(u):
            assert q.slot is not None
            if slots[q.slot] is None or not released[q.slot]:
                why = "not stored yet" if slots[q.slot] is None else "stored after its arrival"
                raise FixupError(f"early read: cluster {c}'s reduction of unit {u} reads piece {q.index}'s partial "
                                 f"(slot {q.slot}), {why}", "early read", u, tuple(self.trace))
            x = np.uint32(slots[q.slot]).view(np.float32)
            total = x if total is None else np.float32(total + x)
        return _bits(np.float32(total))

    def finished(self, st: _State) -> bool:
        return all(st.pcs[c][0] >= len(self.pieces[c]) for c in range(self.clusters))

    def settle(self, st: _State) -> tuple[int, ...]:
        for u in range(self.units):
            if st.writes[u] != 1:
                raise FixupError(f"unit {u}'s result written {st.writes[u]} times", "twice", u, tuple(self.trace))
            if st.counters[u] != 0:
                raise FixupError(f"unit {u}'s counter ends at {st.counters[u]}, not 0: the next launch would count "
                                 f"from there", "counter", u, tuple(self.trace))
        return tuple(int(x) for x in st.results)

    def deadlock(self, st: _State) -> FixupError:
        waits = []
        for c in range(self.clusters):
            i, j = st.pcs[c]
            if i >= len(self.pieces[c]):
                continue
            p = self.pieces[c][i]
            state = (f"waits for unit {p.unit}'s flag to read {p.index} (it reads {st.counters[p.unit]})"
                     if c < st.launched else "is not launched: every resident cluster waits")
            waits.append(f"cluster {c} {state}")
        return FixupError(f"deadlock with {self.resident} cluster(s) resident: " + "; ".join(waits), "deadlock",
                          None, tuple(self.trace))


def check_fixup(plan: SplitKScheduler, grid: int, *, protocol: Protocol = "last", resident: int | None = None,
                mutation: Mutation | None = None, max_states: int = 100_000, schedules: int = 200,
                seed: int = 0) -> FixupCheck:
    """Explore every order of ``grid`` CTAs' fixup steps for ``plan`` at a problem (``plan.at(...)``), with
    ``resident`` clusters running at once (default all); a ``FixupError`` names the first deadlock, early read,
    double write, counter left non-zero, or difference in bits between two orders. Past ``max_states`` states it
    checks ``schedules`` random complete runs instead (``exhaustive=False``)."""
    if not isinstance(plan, SplitKScheduler):
        raise TypeError(f"check_fixup: expected a SplitKScheduler (make_split_k_scheduler), got {type(plan).__name__}")
    if protocol not in ("last", "serial", "atomic"):
        raise EmulationError(f"check_fixup: protocol={protocol!r}: 'last', 'serial' or 'atomic'")
    if mutation not in (None, "arrive_before_store", "no_reset"):
        raise EmulationError(f"check_fixup: mutation={mutation!r}: None, 'arrive_before_store' or 'no_reset'")
    if not isinstance(grid, int) or grid < 1 or grid % plan.cluster_size or grid // plan.cluster_size > plan.items:
        raise EmulationError(f"check_fixup: a grid of {grid} CTAs: whole clusters of {plan.cluster_size}, at most one "
                             f"per work item ({plan.items})")
    resident = grid // plan.cluster_size if resident is None else resident
    if not isinstance(resident, int) or resident < 1:
        raise EmulationError(f"check_fixup: resident={resident!r}: at least one cluster")
    model = _Model(plan, grid, protocol, resident, mutation)
    start = model.initial()
    results: set = set()

    def finish(st: _State) -> None:
        results.add(model.settle(st))
        if len(results) > 1:
            a, b = sorted(results)[:2]
            u = next(k for k in range(len(a)) if a[k] != b[k])
            raise FixupError(f"nondeterministic: unit {u} ends as 0x{a[u]:08X} in one order and 0x{b[u]:08X} in "
                             f"another", "nondeterministic", u, tuple(model.trace))

    states, exhaustive = _explore(model, start, max_states, finish)
    if not exhaustive:
        _sample(model, start, schedules, seed, finish)
    want = tuple(_bits(_fold(plan, u)) for u in range(plan.units))
    got = next(iter(results))
    if got != want:
        u = next(k for k in range(len(want)) if want[k] != got[k])
        raise FixupError(f"unit {u} ends as 0x{got[u]:08X}, the plan's fold in K order is 0x{want[u]:08X}",
                         "nondeterministic", u)
    return FixupCheck(protocol, grid, resident, states, exhaustive, 0 if exhaustive else schedules, got)


def _explore(model: _Model, start: _State, max_states: int, finish: Callable[[_State], None]) -> tuple[int, bool]:
    """Depth first over every order from ``start`` (each distinct state once): ``(states, exhaustive)``."""
    seen, stack = {start}, [start]
    while stack:
        st = stack.pop()
        moves = [c for c in range(model.clusters) if model.enabled(st, c)]
        if not moves:
            if not model.finished(st):
                raise model.deadlock(st)
            finish(st)
            continue
        for c in moves:
            model.trace = []
            nxt = model.step(st, c)
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
        if len(seen) > max_states:
            return len(seen), False
    return len(seen), True


def _sample(model: _Model, start: _State, schedules: int, seed: int, finish: Callable[[_State], None]) -> None:
    """``schedules`` complete runs from ``start``, each move drawn from ``seed``."""
    rng = random.Random(seed)
    for _ in range(schedules):
        st, model.trace = start, []
        while not model.finished(st):
            moves = [c for c in range(model.clusters) if model.enabled(st, c)]
            if not moves:
                raise model.deadlock(st)
            st = model.step(st, rng.choice(moves))
        finish(st)


def _fold(plan: SplitKScheduler, unit: int) -> np.float32:
    total = None
    for p in plan.unit_pieces(unit):
        x = _partial(p)
        total = x if total is None else np.float32(total + x)
    return np.float32(total)
