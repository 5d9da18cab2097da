"""Turns: groups of threads that read the same stages take turns issuing their tensor-core work.

Two consumer warpgroups of an attention kernel both read every K and V stage (each computes its own 64 rows), but
the tensor cores run one warpgroup's MMAs at a time: if both issue at once, both wait for their MMAs together and
then do their softmax together, leaving the tensor cores idle meanwhile. Taking turns (FlashAttention-3's
"ping-pong" of warpgroups) makes one group's MMAs run while the other computes its softmax: a group waits for its
turn before it issues an iteration's MMAs and passes the turn on once they are issued.

``make_turns(groups)`` plans that hand-over on named barriers (PTX ISA
#parallel-synchronization-and-communication-instructions-bar): group ``g`` waits (``bar.sync``) on barrier
``barrier + g``, which completes once the previous group has passed the turn (``bar.arrive`` by its threads on the
same barrier): each barrier counts both groups' threads. At the start, group 0 holds the first turn (it arrives on
its own barrier once, ``<name>_start``). Unlike a pipeline's ``Consumer(turns=...)``, whose groups take
different fills of the ring, these groups read the same stages and only order their issue.
"""
from __future__ import annotations

import re
from typing import ClassVar

import attrs

from ..arch.convention import Caller, Convention
from ..errors import PlanError
from ..int_tuple import as_int
from ..views import view
from .plan import caller_threads

__all__ = ["TurnFunction", "TurnsPlan", "make_turns", "NAMED_BARRIERS"]

#: Named barriers per CTA (PTX ISA #parallel-synchronization-and-communication-instructions-bar); 0 is
#: __syncthreads'.
NAMED_BARRIERS = 16
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@attrs.frozen
class TurnFunction:
    """A generated function: its name, calling convention and what it does."""

    name: str
    convention: Convention
    does: str


@attrs.frozen(repr=False)
class TurnsPlan:
    """``groups`` groups of ``caller`` (a warpgroup: 128 threads) taking turns on named barriers ``barrier`` ..
    ``barrier + groups - 1`` (``barriers``), each counting ``threads`` arrivals: the waiting group's and the passing
    group's."""

    name: str
    groups: int
    caller: Caller
    barrier: int

    VARIANT: ClassVar[str] = "turns"

    @property
    def group_threads(self) -> int:
        return caller_threads(self.caller)

    @property
    def threads(self) -> int:
        """Threads each barrier counts per turn: the waiting group's and the passing group's."""
        return 2 * self.group_threads

    @property
    def barriers(self) -> tuple[int, ...]:
        """The named barrier ids, group ``g``'s at ``g``."""
        return tuple(range(self.barrier, self.barrier + self.groups))

    def waits_on(self, group: int) -> int:
        return self.barriers[group]

    def passes_to(self, group: int) -> int:
        """The barrier group ``group`` arrives on when it passes the turn: the next group's."""
        return self.barriers[(group + 1) % self.groups]

    @property
    def functions(self) -> tuple[TurnFunction, ...]:
        who = Convention(self.caller, self.group_threads)
        n = self.name
        return (TurnFunction(f"{n}_start", who, "once, before the group's first wait: group 0 takes the first turn"),
                TurnFunction(f"{n}_wait", who, "waits until the previous group has passed the turn"),
                TurnFunction(f"{n}_pass", who, "passes the turn to the next group (once this group's work of the "
                                               "turn is issued)"))

    def cuda(self) -> str:
        """``<name>_start(group)``, ``<name>_wait(group)``, ``<name>_pass(group)`` and the constant
        ``<name>_groups``."""
        return str(view("cuda", self))

    def explain(self) -> str:
        lines = [f"turns {self.name!r}: {self.groups} groups of {self.group_threads} threads ({self.caller}) take "
                 f"turns, group 0 first",
                 f"  barriers    named barriers {list(self.barriers)}, {self.threads} threads each: group g waits "
                 f"(bar.sync) on {self.barrier} + g, the group before it arrives there (bar.arrive) to pass the turn"]
        lines += [f"  {f.name:<24} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"TurnsPlan({self.name!r}, {self.groups} x {self.caller}, barriers {list(self.barriers)})"


def make_turns(groups: int, *, caller: Caller = "warpgroup", barrier: int = 1, name: str = "turns") -> TurnsPlan:
    """Plan ``groups`` groups of ``caller`` (``warpgroup``, ``warp``) taking turns in order 0, 1, ..., on named
    barriers ``barrier`` .. ``barrier + groups - 1`` (1-15: 0 is __syncthreads'). Each group calls
    ``<name>_start(g)`` once, then ``<name>_wait(g)`` before the work of its turn and ``<name>_pass(g)`` after."""
    groups, barrier = as_int(groups, "make_turns: groups"), as_int(barrier, "make_turns: barrier")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise PlanError(f"make_turns: name {name!r} is not a C identifier (it prefixes the generated functions)")
    if groups < 2:
        raise PlanError(f"make_turns: groups={groups}: turns take at least 2 groups")
    if caller not in ("warp", "warpgroup"):
        raise PlanError(f"make_turns: caller {caller!r}: a group is a 'warp' or a 'warpgroup' (named barriers count "
                        f"whole warps)")
    if barrier < 1 or barrier + groups - 1 >= NAMED_BARRIERS:
        raise PlanError(f"make_turns: barriers {barrier}..{barrier + groups - 1}: named barriers 1-"
                        f"{NAMED_BARRIERS - 1} (0 is __syncthreads')")
    return TurnsPlan(name, groups, caller, barrier)
