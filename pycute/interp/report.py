"""What a whole-kernel run reports: deadlocks (every waiting thread, grouped by what it waits on: the barrier, its
address and symbol, phase, pending arrivals and transaction bytes, the parity waited for), races (both accesses,
the bytes and their symbol, the copy and the mbarrier phase involved, and the waits the thread passed) and a CTA
that exits with copies in flight on its shared memory or TMEM still allocated."""
from __future__ import annotations

from ..errors import EmulationError
from .shadow import SLOT_BITS, SLOT_MASK

__all__ = ["DeadlockError", "deadlock_report", "describe_thread", "explain", "check_exit"]


class DeadlockError(EmulationError):
    """Every thread that has not exited waits, and nothing in flight can complete what they wait for."""


def _xyz(v: tuple[int, int, int]) -> str:
    return str(v[0]) if v[1:] == (0, 0) else f"({v[0]},{v[1]},{v[2]})"


def describe_thread(th) -> str:
    return f"{th.cta.name} thread {_xyz(th.tid)} (warp {th.warp} lane {th.lane})"


def _ranges(numbers: list[int]) -> str:
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _threads(threads: list) -> str:
    by_cta: dict = {}
    for th in threads:
        by_cta.setdefault(th.cta.ctaid, []).append(th.linear)
    return "; ".join(f"CTA {_xyz(c)} thread{'s' if len(ts) > 1 else ''} {_ranges(ts)}" for c, ts in by_cta.items())


def waits_hint(th) -> str:
    """The mbarrier waits ``th`` passed last (a wrong parity shows here: "passed at once")."""
    if th is None or not th.waits:
        return ""
    parts = []
    for name, ((kind, value), phase, ok) in th.waits.items():
        what = f"parity {value}" if kind == "parity" else f"state of phase {value}"
        note = "passed at once" if ok else "waited"
        if ok and kind == "parity" and phase == 0 and value == 1:
            note += " (at phase 0, parity 1 names the phase before it, which counts as complete)"
        parts.append(f"{name}: {what} while phase {phase} was in progress, {note}")
    return f"; {describe_thread(th)}'s last mbarrier waits: " + "; ".join(parts)


def _thread_of(cta, stamp: int):
    """The thread whose clock slot ``stamp`` carries (None for a barrier's or a pipeline's)."""
    slot = stamp & SLOT_MASK
    per = len(cta.threads)
    if stamp < 0 or slot >= per * len(cta.cluster.ctas):
        return None
    return cta.cluster.ctas[slot // per].threads[slot % per]


def _other(world, cta, stamp: int) -> str:
    slot, epoch = stamp & SLOT_MASK, stamp >> SLOT_BITS
    name = cta.cluster.clocks.names[slot]
    if name.startswith("mbarrier"):
        return f"the copies that completed on {name} in phase {epoch - 1}"
    if name.startswith("the tcgen05"):
        return f"{name} (released by its tcgen05.commit #{epoch})"
    return name


_HEADLINE = {
    "read": "reads {loc}, last written by {other}, without synchronising with that write",
    "read-inflight": "reads {loc} while {op} is still writing it (its mbarrier phase has not completed: a wait with "
                     "the wrong parity, or no wait)",
    "read-unwritten": "reads {loc}, which nothing has written yet (a wait that passed too early? run_kernel("
                      "check_unwritten=False) allows reading uninitialised shared memory)",
    "write-after-write": "overwrites {loc}, last written by {other}, without synchronising with that write: the "
                         "stage is overwritten before its consumers released it",
    "write-after-read": "overwrites {loc}, which {other} read and has not released to the writer: the stage is "
                        "overwritten before its release",
    "write-inflight": "writes {loc} while {op} is still writing it: the stage is overwritten before the copy into it "
                      "completed",
    "write-while-read": "writes {loc} while {op} is still reading it",
}


_TMEM_HEADLINE = {
    "write-after-read": "overwrites {loc}, which {other} read without synchronising with the writer (did the reader "
                        "wait for the MMAs it reads, and the writer for the reader?)",
    "write-after-write": "overwrites {loc}, last written by {other}, without synchronising with that write",
}


def explain(world, cta, where: str, kind: str, actor, index: int, stamp: int) -> str:
    """The message of a race found at byte (TMEM cell) ``index`` of ``cta``."""
    if where == "smem":
        loc = f"shared byte {index:#x} of {cta.name} ({world.name_of(index)})"
        headline = _HEADLINE[kind]
    else:
        loc = f"TMEM lane {index // 512} column {index % 512} of {cta.name}"
        headline = _TMEM_HEADLINE.get(kind, _HEADLINE[kind])
    op_id = stamp if kind == "write-while-read" else -(stamp + 2)
    op = world.ops.get(op_id)
    fields = {"loc": loc, "other": _other(world, cta, stamp) if stamp >= 0 and kind != "write-while-read" else "",
              "op": op.describe() if op is not None else f"operation {op_id}"}
    who = actor if hasattr(actor, "R") else actor.issuer
    other_thread = _thread_of(cta, stamp) if kind != "write-while-read" else None
    if other_thread is who:
        other_thread = None
    text = actor.describe() if not hasattr(actor, "R") else describe_thread(actor)
    return f"{text} {headline.format(**fields)}{waits_hint(who)}{waits_hint(other_thread)}"


def _waiting_line(world, w: tuple, threads: list) -> str:
    kind, cta, obj = w[0], w[1], w[2]
    n = len(world.program.entry.instrs)
    lines = sorted({world.program.entry.instrs[th.pc - 1].line for th in threads if 0 < th.pc <= n})
    at = f" at PTX line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}" if lines else ""
    if kind == "mbarrier":
        parity, value = w[3]
        what = f"parity {value & 1}" if parity else f"the phase after state {value}"
        return f"  {obj.describe()}: waited for {what} by {_threads(threads)}{at}"
    if kind == "bar":
        return f"  {obj.describe(cta)}: waited by {_threads(threads)}{at}"
    if kind == "cluster":
        return f"  {obj.describe()}: waited by {_threads(threads)}{at}"
    if kind == "setmaxnreg":
        return f"  {obj.describe(cta)}: waited by {_threads(threads)}{at}"
    if kind == "wgmma":
        return f"  {obj.describe()}: waited for (wgmma.wait_group) by {_threads(threads)}{at}"
    mask = w[3]
    at += world.convention_note(lines[0]) if lines else ""
    arrived = [th.lane for th in threads]
    missing = [lane for lane in range(32) if mask & obj.live >> lane & 1 and lane not in arrived]
    return (f"  warp {obj.index} of {cta.name} at a warp-collective instruction{at} (member mask "
            f"{mask:#x}): lanes {_ranges(arrived)} arrived, lanes {_ranges(missing)} are elsewhere")


def deadlock_report(world, waiting: list) -> str:
    groups: dict = {}
    for th in waiting:
        w = th.waiting
        key = (w[0], id(w[2]), w[3] if len(w) > 3 else None)
        groups.setdefault(key, (w, []))[1].append(th)
    lines = [_waiting_line(world, w, ts) for w, ts in groups.values()]
    exited = [th for th in world.threads if th.state == 2]
    tail = f"\n  exited: {_threads(exited)}" if exited else ""
    return ("deadlock: every thread that has not exited waits, and no copy in flight can complete what they wait "
            "for:\n" + "\n".join(lines) + tail)


def check_exit(world, cta) -> None:
    """A CTA's last thread exited: nothing may still be in flight on its shared memory, its TMEM is freed, and its
    warpgroups' warps executed the same setmaxnreg instructions."""
    cta.check_register_history()
    for op in list(world.ops.values()):
        if any(c is cta for c, *_ in op.footprint) and not op.what.startswith("tcgen05"):
            raise EmulationError(f"{cta.name} exits while {op.describe()} is still in flight on its shared "
                                 f"memory (no wait covers it)")
    allocated = cta.cluster.machine.ctas[cta.rank].allocated
    if allocated.any():
        cols = [int(c) for c in allocated.nonzero()[0]]
        raise EmulationError(f"{cta.name} exits with TMEM columns {cols[0]}..{cols[-1]} still allocated "
                             f"(tcgen05.dealloc is missing; PTX ISA #tcgen05-memory-alloc-manage)")
