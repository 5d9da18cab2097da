"""A model checker of a pipeline plan's protocol: ``check_pipeline`` explores every interleaving of the roles over a
number of fills (identical callers of a role in a CTA grouped into at most ``group`` processes, each making its
share of the arrivals; the copies of one issue landing in one CTA together) and proves, for that many fills, that
the roles finish -- no deadlock --, that no consumer reads a stage before all of its fill has landed, that no
producer refills a stage before every consumer released it, and that every barrier ends with no arrival or byte
left over. A broken plan (a wrong parity, arrival count or ``expect_tx``: tests mutate them) is a
``PipelineError`` naming the barrier, the CTA, the stage and the fill. The model (``pipeline_model``) follows the
protocol a plan derives, not compiled code: the PTX interpreter runs whole kernels (a separate module).
"""
from __future__ import annotations

import random

import attrs

from ..errors import EmulationError
from ..pipeline.plan import PipelinePlan
from ..views import provides
from .pipeline_model import Checker, Model, PipelineError, State

__all__ = ["PipelineError", "PipelineCheck", "check_pipeline"]


@attrs.frozen
class PipelineCheck:
    """What ``check_pipeline`` explored: ``fills`` per role, the distinct states and transitions, whether every
    interleaving was explored (``exhaustive``; else ``schedules`` random complete runs were checked), and the
    processes the roles became."""

    name: str
    fills: int
    states: int
    transitions: int
    exhaustive: bool
    schedules: int
    processes: tuple[str, ...]

    def __str__(self) -> str:
        how = "every interleaving" if self.exhaustive else f"{self.states} states, then {self.schedules} random runs"
        return (f"pipeline {self.name!r}: {self.fills} fills, {len(self.processes)} processes, {how} "
                f"({self.states} states, {self.transitions} transitions): no deadlock, no early read, no overwrite")


def _explore(checker: Checker, start: State, max_states: int) -> tuple[int, int, bool]:
    """Depth first over every interleaving from ``start`` (each distinct state once): ``(states, transitions,
    exhaustive)``; raises the first PipelineError, with the events on the path to it."""
    path: list[str] = []

    def expand(st: State) -> list:
        moves = list(checker.moves(st))[::-1]          # popped from the end: the producer's steps first
        checker.trace = path[:]
        if not moves:
            if not checker.finished(st):
                raise checker.deadlock(st)
            checker.settle(st)
        return moves

    seen = {checker.canonical(start)}
    stack: list[tuple[State, list]] = [(start, expand(start))]
    transitions = 0
    while stack:
        st, moves = stack[-1]
        if not moves:
            stack.pop()
            if path:
                path.pop()
            continue
        checker.trace = path[:]
        nxt = checker.apply(st, moves.pop())
        transitions += 1
        key = checker.canonical(nxt)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > max_states:
            return len(seen), transitions, False
        path.append(checker.trace[-1])
        stack.append((nxt, expand(nxt)))
    return len(seen), transitions, True


def _sample(checker: Checker, start: State, schedules: int, seed: int) -> None:
    """``schedules`` complete runs from ``start``, each move drawn from ``seed``."""
    rng = random.Random(seed)
    for _ in range(schedules):
        st, trace = start, list[str]()
        while not checker.finished(st):
            moves = list(checker.moves(st))
            checker.trace = trace
            if not moves:
                raise checker.deadlock(st)
            st = checker.apply(st, rng.choice(moves))
            trace = checker.trace
        checker.settle(st)


def check_pipeline(plan: PipelinePlan, fills: int | None = None, group: int = 1, max_states: int = 100_000,
                   schedules: int = 200, seed: int = 0) -> PipelineCheck:
    """Explore every interleaving of ``plan``'s roles over ``fills`` fills (default ``2 * stages + 1``: every stage
    refilled twice) and return what was explored; a ``PipelineError`` names the first deadlock, early read,
    overwrite or barrier left unbalanced. Past ``max_states`` distinct states it checks ``schedules`` random
    complete runs instead and says so (``exhaustive=False``)."""
    if not isinstance(plan, PipelinePlan):
        raise TypeError(f"check_pipeline: expected a PipelinePlan (pc.make_pipeline), got {type(plan).__name__}")
    fills = 2 * plan.stages + 1 if fills is None else fills
    if not isinstance(fills, int) or fills < 1:
        raise EmulationError(f"check_pipeline: fills={fills!r}: at least one fill")
    model = Model(plan, fills, group)
    checker = Checker(model)
    start = checker.initial()
    states, transitions, exhaustive = _explore(checker, start, max_states)
    if not exhaustive:
        _sample(checker, start, schedules, seed)
    return PipelineCheck(plan.name, fills, states, transitions, exhaustive, 0 if exhaustive else schedules,
                         tuple(p.name for p in model.procs))


@provides("verify", PipelinePlan)
def _verify(plan: PipelinePlan, fills: int | None = None) -> PipelineCheck:
    return check_pipeline(plan, fills)
