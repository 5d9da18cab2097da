"""Who calls a generated function, as data: the one calling convention every pycute emitter states in a line of its
generated comment and records on its plan (``plan.convention``), so that a reader -- or an interpreter running the
kernel -- can check each call site against it.

The PTX ISA fixes the granularity of each instruction a generated function issues: TMA, bulk copies, ``tcgen05.cp``,
``tcgen05.mma`` and ``tcgen05.commit`` are issued by one thread; ``tcgen05.ld`` / ``st`` and ``elect.sync`` are
``.sync.aligned`` (every lane of the warp executes them together); ``wgmma`` is warpgroup-collective; ``cp.async`` is
per thread. Shared-memory operands of every generated function are 32-bit shared-window addresses (what
``cvta.to.shared`` / ``pycute_smem_address`` gives), the form the instructions take.
"""
from __future__ import annotations

import re
from typing import Literal

import attrs

from ..errors import PlanError
from .sm90.warp import WARP_THREADS

__all__ = ["Caller", "SharedOperands", "Convention", "WARPGROUP_WARPS", "WARPGROUP_THREADS", "CONVENTION_PREFIX",
           "parse_convention"]

#: ``any``: any thread, each on its own (a pure function, or a wait); ``elected``: the one thread the caller elected;
#: ``warp``: all 32 lanes of one warp, converged; ``warps``: all lanes of ``threads / 32`` warps; ``warpgroup``: all
#: 128 threads of a warpgroup (4 consecutive warps, the first a multiple of 4); ``threads``: each of ``threads``
#: threads, with its own index.
Caller = Literal["any", "elected", "warp", "warps", "warpgroup", "threads"]
#: ``address``: shared operands are 32-bit shared-window addresses; ``none``: the function takes none.
SharedOperands = Literal["address", "none"]

#: A warpgroup (PTX ISA #asynchronous-warpgroup-level-matrix-instructions): four consecutive warps.
WARPGROUP_WARPS = 4
WARPGROUP_THREADS = WARPGROUP_WARPS * WARP_THREADS

#: Every generated function's convention line starts so (``read_conventions`` finds them).
CONVENTION_PREFIX = "// pycute: called by "

_SHARED = {"address": "shared operands are 32-bit shared addresses", "none": "no shared operands"}
#: The callers whose thread count is fixed.
_FIXED = {"any": 1, "elected": 1, "warp": WARP_THREADS, "warpgroup": WARPGROUP_THREADS}


@attrs.frozen
class Convention:
    """Who calls a generated function (``caller``), how many threads call it together (``threads``: 1 for
    ``any`` / ``elected``, 32 for a warp, 128 for a warpgroup, the plan's count otherwise) and how it takes shared
    memory."""

    caller: Caller
    threads: int
    shared: SharedOperands = "address"

    def __attrs_post_init__(self) -> None:
        want = _FIXED.get(self.caller)
        if want is not None and self.threads != want:
            raise PlanError(f"Convention: a {self.caller!r} call is made by {want} thread(s), not {self.threads}")
        if self.caller == "warps" and (self.threads < WARP_THREADS or self.threads % WARP_THREADS):
            raise PlanError(f"Convention: 'warps' calls are made by whole warps, not {self.threads} threads")
        if self.caller == "threads" and self.threads < 1:
            raise PlanError(f"Convention: 'threads' calls are made by at least one thread, not {self.threads}")

    @property
    def who(self) -> str:
        """The caller in words: ``one elected thread``, ``all 32 lanes of a warp``, ..."""
        return {"any": "any thread", "elected": "one elected thread",
                "warp": f"all {WARP_THREADS} lanes of a warp",
                "warps": f"all {WARP_THREADS} lanes of each of {self.threads // WARP_THREADS} warps",
                "warpgroup": f"all {WARPGROUP_THREADS} threads of a warpgroup",
                "threads": f"each of {self.threads} threads"}[self.caller]

    def comment(self) -> str:
        """The generated comment line: ``// pycute: called by <who>; <shared operands>``."""
        return f"{CONVENTION_PREFIX}{self.who}; {_SHARED[self.shared]}"


_WHO = [("any", re.compile(r"any thread")), ("elected", re.compile(r"one elected thread")),
        ("warp", re.compile(rf"all {WARP_THREADS} lanes of a warp")),
        ("warps", re.compile(rf"all {WARP_THREADS} lanes of each of (\d+) warps")),
        ("warpgroup", re.compile(rf"all {WARPGROUP_THREADS} threads of a warpgroup")),
        ("threads", re.compile(r"each of (\d+) threads"))]


def parse_convention(line: str) -> Convention:
    """The convention a generated comment line states (the inverse of ``Convention.comment``)."""
    if not line.startswith(CONVENTION_PREFIX):
        raise PlanError(f"not a pycute convention line: {line!r}")
    who, _, shared = line[len(CONVENTION_PREFIX):].partition("; ")
    kinds = [k for k, v in _SHARED.items() if v == shared.strip()]
    for caller, pattern in _WHO:
        m = pattern.fullmatch(who)
        if m and kinds:
            n = int(m.group(1)) if m.groups() else 0
            threads = {"warps": WARP_THREADS * n, "threads": n}.get(caller) or _FIXED[caller]
            return Convention(caller, threads, kinds[0])  # type: ignore[arg-type]
    raise PlanError(f"convention line {line!r}: the caller or the shared operands are not one pycute states")
