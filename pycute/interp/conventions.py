"""Checking call sites against the calling convention of each generated function (``// pycute: called by ...``).

A kernel compiled with ``-lineinfo`` tells, for every instruction, the chain of inlined functions it came from
(``.loc ... function_name, inlined_at``, PTX ISA #debugging-directives-loc). An instruction with an effect outside
its thread (a store, an atomic, a copy or tcgen05 issue, an mbarrier operation, a warp-collective instruction)
belongs to generated function ``F`` when ``F`` is in its chain (its own, or a helper inlined into ``F``). The run records which threads executed
such instructions of each function; afterwards each function's callers must be what its convention says: one lane
per warp for ``elected``, every lane of each calling warp for ``warp``, whole warpgroups for ``warpgroup``, the
plan's thread count for ``threads`` (``any`` constrains nothing). Code the compiler hoisted out of a call (address
arithmetic, loads) is not counted, so speculation is not mistaken for a call.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

from ..errors import CompileError, EmulationError
from .front import Entry, Instr

__all__ = ["ConventionError", "Convention", "attribute", "check_conventions", "EFFECTS"]

#: Opcode bases whose execution counts as calling the function they belong to.
EFFECTS = frozenset({"st", "atom", "red", "cp", "tcgen05", "mbarrier", "elect", "shfl", "vote", "match", "redux"})


class Convention(Protocol):
    """What the check reads of a convention (``pycute.arch.convention.Convention``): the caller and how many
    threads call together."""

    caller: str
    threads: int


class ConventionError(EmulationError):
    """A generated function was called by threads other than its convention names."""


def attribute(entry: Entry, names: list[str]) -> list[str | None]:
    """For each instruction with an effect, the innermost generated function of ``names`` whose call it is part
    of (None for the others)."""
    if not any(ins.origin is not None for ins in entry.instrs):
        raise CompileError("checking calling conventions needs line information: compile with "
                           "options=('-lineinfo',)")
    seen = {f for ins in entry.instrs for f in ins.functions}
    if not seen & set(names):                  # a kernel may leave some of a module's functions unused, not all
        raise CompileError(f"conventions name {', '.join(names)}, from none of which an instruction of {entry.name} "
                           f"comes (functions inlined into it: {', '.join(sorted(seen)) or 'none'})")

    def owner(ins: Instr) -> str | None:
        if ins.op.split(".")[0] not in EFFECTS:
            return None
        return next((f for f in ins.functions if f in names), None)
    return [owner(ins) for ins in entry.instrs]


def _lanes(lanes: set[int]) -> str:
    from .report import _ranges as runs
    return runs(sorted(lanes))


def _check(name: str, conv: Any, cta, calls: dict[int, set[int]]) -> str | None:
    """The violation of ``conv`` by the lanes of each warp of ``cta`` that called ``name`` (None if none)."""
    what = f"{name} (its convention: called by {conv.caller}"
    what += f", {conv.threads} threads)" if conv.caller in ("warps", "threads") else ")"
    for w, lanes in sorted(calls.items()):
        live = set(cta.warps[w].lanes)
        if conv.caller == "elected" and len(lanes) != 1:
            return f"{what} was called by lanes {_lanes(lanes)} of warp {w} of {cta.name}"
        if conv.caller in ("warp", "warps", "warpgroup") and lanes != live:
            return f"{what} was called by lanes {_lanes(lanes)} of warp {w} of {cta.name}, not all {len(live)}"
    if conv.caller == "warps" and len(calls) * 32 != conv.threads:
        return f"{what} was called by {len(calls)} warp(s) of {cta.name}"
    if conv.caller == "warpgroup":
        groups = {w // 4 for w in calls}
        if any({4 * g + k for k in range(4)} - set(calls) for g in groups):
            return f"{what} was called by warps {sorted(calls)} of {cta.name}, not whole warpgroups"
    if conv.caller == "threads" and sum(len(v) for v in calls.values()) != conv.threads:
        return f"{what} was called by {sum(len(v) for v in calls.values())} threads of {cta.name}"
    return None


def check_conventions(world, conventions: Mapping[str, Any]) -> None:
    """After a run: every generated function was called as its convention says; ConventionError otherwise."""
    ids = {name: k for k, name in enumerate(conventions)}
    for cta in world.ctas:
        for name, gid in ids.items():
            calls: dict[int, set[int]] = {}
            for th in cta.threads:
                if gid in th.calls:
                    calls.setdefault(th.warp, set()).add(th.lane)
            if calls:
                problem = _check(name, conventions[name], cta, calls)
                if problem is not None:
                    raise ConventionError(problem)
