"""Hopper's warpgroup MMA in a whole-kernel run (PTX ISA #asynchronous-warpgroup-level-matrix-instructions):
``wgmma.mma_async`` of the 4 warps of a warpgroup, ``wgmma.fence``, ``commit_group`` and ``wait_group``.

``wgmma.mma_async`` is a warp-collective instruction (``.sync``: the warp's lanes meet there) of the whole warpgroup
(``.aligned``): the k-th one each warp of the warpgroup issues is one operation, which runs -- reading A and B
through their descriptors and D (and an A in registers) from the issuers' registers -- once all 4 warps have issued
it, the warpgroup's operations in order. It is asynchronous: from its issue until a ``wgmma.wait_group`` of the
issuing thread covers its group, the thread's D registers (and A registers) belong to the operation. Each of them
then holds an ``InFlight`` marker: any instruction that reads it is an error naming the operation (PTX: accessing
them before the wait is undefined), except a later ``wgmma.mma_async`` of the same thread, which chains through it
(the ISA's exception for accumulators); the wait writes D back, and a register a thread overwrote meanwhile is an
error too. ``wgmma.fence`` must separate the thread's own accesses to the registers from a ``wgmma.mma_async`` that
uses them: an operation that finds a register changed since the thread's last fence (and not written back by an
earlier wgmma) is an error.

Shared memory: the operation reads its A and B bytes as the agent "the wgmma of warpgroup g" at its sequence
number, checked against everything its 4 warps had synchronised with when they issued it (so a wait with the wrong
parity, or bytes a copy is still writing, are races); a thread whose ``wait_group`` covers the operation is ordered
after its reads, so a stage refilled before a consumer waited for the MMAs reading it is reported as overwritten
before its release.
"""
from __future__ import annotations

import operator
from typing import Any, NamedTuple

import numpy as np

from ..arch.sm90.wgmma import WARPGROUP_THREADS, WARPGROUP_WARPS, WGMMA_M, WGMMA_TYPES
from ..atoms.wgmma import parse_wgmma_ptx
from ..errors import CompileError, EmulationError, PlanError
from ..sim.operand import gmma_operand_bytes
from .translate import RUNTIME_EMITTERS, Code, KernelCtx
from .ctabase import CtaBase
from .front import Instr
from .operands import MASK, dst, src, vector
from .rtemit_sync import KERNEL_EXECUTORS, IssueSite
from .shadow import RaceError, stamp_of

__all__ = ["WgmmaError", "InFlight", "WgmmaOp", "WarpgroupMixin"]


class WgmmaError(EmulationError):
    """wgmma used against the ISA's rules: registers accessed while an operation owns them, a missing
    ``wgmma.fence``, the warps of a warpgroup issuing different operations, a thread that exits with groups not
    waited for."""


class LaneIssue(NamedTuple):
    """One lane's part of an operation: its thread, its D register values when its warp issued it (``None`` when
    they are all the D of the earlier operation ``chained``: the accumulator chain), its A register values, and the
    slots the operation owns."""

    thread: Any
    d: tuple | None
    chained: Any
    a: tuple
    slots: tuple[int, ...]


class WgmmaOp:
    """One warpgroup operation: its sequence number, the issuing lanes by warpgroup thread (``LaneIssue``), the
    joined clock of the issuers, the markers its D registers hold while it owns them and -- once run -- the D
    registers it leaves, ``(128, registers)``."""

    def __init__(self, state: "WarpgroupState", seq: int, site: Any, record: Any):
        self.state, self.seq, self.site, self.record = state, seq, site, record
        self.lanes: dict[int, LaneIssue] = {}
        self.warps: set[int] = set()
        self.vc: np.ndarray | None = None
        self.result: np.ndarray | None = None
        self.waiters: list = []
        self.names = tuple(vector(site.args[0])) + (tuple(vector(site.args[1])) if site.args[1].startswith("{")
                                                      else ())
        self.markers = tuple(InFlight(self, k, None, n) for k, n in enumerate(vector(site.args[0])))

    def describe(self) -> str:
        missing = sorted(set(range(WARPGROUP_WARPS)) - self.warps)
        state = "" if not missing else \
            f"; warps {', '.join(str(self.state.first_warp + w) for w in missing)} have not issued it"
        return (f"wgmma.mma_async #{self.seq + 1} of warpgroup {self.state.index} of {self.state.cta.name} (PTX line "
                f"{self.site.line}{state})")


class InFlight:
    """A register a wgmma operation owns (its ``index``-th; an A register keeps its ``value``): reading it is an
    error (PTX ISA #asynchronous-warpgroup-level-matrix-instructions-wgmma-wait-group: accessing the accumulator or
    A registers before the wait is undefined)."""

    __slots__ = ("op", "index", "value", "name")

    def __init__(self, op: WgmmaOp, index: int, value: int | None, name: str):
        self.op, self.index, self.value, self.name = op, index, value, name

    def _refuse(self, *_: Any) -> Any:
        raise WgmmaError(f"reads register {self.name} while {self.op.describe()} owns it: no wgmma.wait_group has "
                         f"covered that operation's group yet (PTX ISA #asynchronous-warpgroup-level-matrix-"
                         f"instructions-wgmma-wait-group: accessing it before the wait is undefined)")

    def __repr__(self) -> str:
        return f"<{self.name} owned by {self.op.describe()}>"


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and", "or", "xor"):
    setattr(InFlight, f"__{_name}__", InFlight._refuse)
    setattr(InFlight, f"__r{_name}__", InFlight._refuse)
for _name in ("neg", "pos", "abs", "invert", "int", "index", "float", "bool", "lt", "le", "gt", "ge", "eq", "ne",
              "hash", "round", "trunc", "floor", "ceil"):
    setattr(InFlight, f"__{_name}__", InFlight._refuse)


class WarpgroupState:
    """A warpgroup's operations in issue order and how many each of its warps has issued."""

    def __init__(self, cta: Any, index: int):
        self.cta, self.index = cta, index
        self.first_warp = WARPGROUP_WARPS * index
        self.ops: list[WgmmaOp] = []
        self.issued = [0] * WARPGROUP_WARPS
        self.run = 0                                   # operations run so far (they run in order)
        self.slot = cta.cluster.clocks.slot(("wgmma", cta.rank, index),
                                            f"the wgmma of warpgroup {index} of {cta.name}")


def _value(v: Any, t: int) -> int:
    """A register value an operation reads: a plain value, an A value an earlier operation also reads, or the D an
    earlier operation leaves there."""
    if type(v) is InFlight:
        if v.value is not None:
            return v.value
        if v.op.result is None:
            raise WgmmaError(f"{v.op.describe()} has not run before the operation that reads its D")
        return int(v.op.result[t, v.index])
    return int(v) & MASK[32]


class WarpgroupMixin(CtaBase):
    """wgmma of a CTA's warpgroups (mixed into ``scheduler.Cta``)."""

    warpgroups: dict

    def warpgroup(self, index: int) -> WarpgroupState:
        if index not in self.warpgroups:
            self.warpgroups[index] = WarpgroupState(self, index)
        return self.warpgroups[index]

    def wg_fence(self, th) -> None:
        """``wgmma.fence``: the thread's register accesses so far are ordered before its later wgmma."""
        th.wg_fence = list(th.R)

    def wg_commit(self, th) -> None:
        """``wgmma.commit_group``: the thread's uncommitted operations form a group (an empty one if none)."""
        th.wg_groups.append(th.wg_pending)
        th.wg_pending = []

    def wg_wait(self, th, n: int, here: int, nxt: int) -> int:
        """``wgmma.wait_group N``: all but the N most recent groups complete; the thread waits while one of their
        operations has not run (a warp of the warpgroup has not issued it yet), then executes the wait again."""
        done = th.wg_groups[:max(len(th.wg_groups) - n, 0)]
        for op in (op for group in done for op in group):
            if op.result is None:
                op.waiters.append(th)
                return self.suspend(th, here, ("wgmma", self, op))
        for op in (op for group in done for op in group):
            self._write_back(th, op)
        th.wg_groups = th.wg_groups[len(done):]
        return nxt

    def _write_back(self, th, op: WgmmaOp) -> None:
        """The thread's registers the completed ``op`` owned: D takes its result (unless a later operation of the
        chain owns it now), A its value again."""
        th.acquire_slot(op.state.slot, op.seq + 1)
        t = th.linear % WARPGROUP_THREADS
        R, written, result = th.R, th.wg_written, op.result
        assert result is not None                      # the wait runs only completed operations
        slots = op.lanes[t].slots
        n = len(op.markers)
        now = list(map(R.__getitem__, slots[:n]))
        if all(map(operator.is_, now, op.markers)):
            values = result[t].tolist()
            list(map(R.__setitem__, slots, values))
            written.update(zip(slots, values))
        elif not (now and type(now[0]) is InFlight and now[0].op.seq > op.seq
                  and all(map(operator.is_, now, now[0].op.markers))):      # a later operation of the chain owns D
            self._write_each(th, op, range(n))
        self._write_each(th, op, range(n, len(slots)))

    def _write_each(self, th, op: WgmmaOp, which: range) -> None:
        R, t, result = th.R, th.linear % WARPGROUP_THREADS, op.result
        assert result is not None
        for k in which:
            slot = op.lanes[t].slots[k]
            v = R[slot]
            if type(v) is InFlight and v.op is op:
                R[slot] = th.wg_written[slot] = int(result[t, k]) if v.value is None else v.value
            elif type(v) is not InFlight or v.op.seq < op.seq:
                raise WgmmaError(f"{th!r} wrote register {op.names[k]} while {op.describe()} owned it (PTX ISA "
                                 f"#asynchronous-warpgroup-level-matrix-instructions-wgmma-wait-group: accessing it "
                                 f"before the wait is undefined)")

    def wg_on_exit(self, th) -> None:
        pending = [op for group in th.wg_groups for op in group] + th.wg_pending
        if pending:
            raise WgmmaError(f"{th!r} exits with {pending[0].describe()} not waited for (wgmma.commit_group and "
                             f"wgmma.wait_group are missing; PTX ISA #asynchronous-warpgroup-level-matrix-instructions-"
                             f"wgmma-wait-group)")

    def wg_run(self, state: WarpgroupState) -> None:
        """Run the warpgroup's operations every warp has issued, in order, and wake the threads waiting on them."""
        while state.run < len(state.ops) and len(state.ops[state.run].warps) == WARPGROUP_WARPS:
            op = state.ops[state.run]
            self._execute(op)
            state.run += 1
            waiters, op.waiters = op.waiters, []
            for th in waiters:
                self.wake(th)

    def _execute(self, op: WgmmaOp) -> None:
        try:
            shape = parse_wgmma_ptx(op.record.ptx)
        except PlanError as e:
            raise WgmmaError(str(e)) from None
        self._read_operands(op, shape)
        d = np.empty((WARPGROUP_THREADS, len(op.markers)), dtype=np.uint32)
        for t in range(WARPGROUP_THREADS):
            lane = op.lanes[t]
            d[t] = lane.chained.result[t] if lane.d is None else [_value(v, t) for v in lane.d]
        a = None
        if op.record.a_desc is None:
            a = np.array([[_value(v, t) for v in op.lanes[t].a] for t in range(WARPGROUP_THREADS)], dtype=np.uint32)
        op.result = self.cluster.machine.wgmma(op.record, d, a, self.rank)

    def _read_operands(self, op: WgmmaOp, shape: Any) -> None:
        """A and B's shared bytes: checked against the issuers' joined clock, then read by the warpgroup's agent."""
        rec, state = op.record, op.state
        ta, tb = WGMMA_TYPES[shape.a], WGMMA_TYPES[shape.b]
        base = self.cluster.machine.ctas[self.rank].smem_base
        parts = [gmma_operand_bytes(rec.b_desc, "MN" if rec.trans_b else "K", shape.n, shape.k, tb.bits, base)]
        if rec.a_desc is not None:
            parts.append(gmma_operand_bytes(rec.a_desc, "MN" if rec.trans_a else "K", WGMMA_M, shape.k, ta.bits,
                                            base))
        width = max(ta.bits, tb.bits) // 8
        idx = np.concatenate([(p[:, None] + np.arange(max(width, 1))[None, :]).reshape(-1) for p in parts])
        shadow = self.shadow
        if idx.size and (idx.min() < 0 or idx.max() >= self.smem.size):
            raise WgmmaError(f"{op.describe()} reads shared bytes [{int(idx.min()):#x}, {int(idx.max()) + 1:#x}), "
                             f"outside {self.name}'s {self.smem.size} B")
        hit = shadow.first_conflict(idx, op.vc, (), False)
        if hit is not None:
            raise RaceError(shadow.explain(hit[0], _Issuer(op), hit[1], hit[2]))
        if self.world.check_unwritten and (b := shadow.unwritten(idx)) is not None:
            raise RaceError(shadow.explain("read-unwritten", _Issuer(op), b, -1))
        shadow.note_reads(idx, stamp_of(state.slot, op.seq + 1), op.vc, state.slot)


class _Issuer:
    """The warpgroup operation as the actor of a race report."""

    def __init__(self, op: WgmmaOp):
        self.op = op
        self.issuer = next(iter(op.lanes.values())).thread

    def describe(self) -> str:
        return self.op.describe()



def _fenced(th, slot: int) -> bool:
    """Whether the thread's register ``slot`` is as its last ``wgmma.fence`` (or an earlier wgmma) left it."""
    v = th.R[slot]
    if type(v) is InFlight:
        return True                                    # an earlier wgmma's register: the accumulator chain
    if slot in th.wg_written and th.wg_written[slot] == v:
        return True
    fence = th.wg_fence
    return fence is not None and type(fence[slot]) is not InFlight and fence[slot] == v


def _take(th, op: WgmmaOp, dslots: tuple, aslots: tuple) -> LaneIssue:
    """The lane's registers taken over by ``op`` (checked against its last ``wgmma.fence``)."""
    R = th.R
    d = list(map(R.__getitem__, dslots))
    prev = d[0].op if d and type(d[0]) is InFlight else None
    chained = prev is not None and len(prev.markers) == len(d) and all(map(operator.is_, d, prev.markers))
    if not chained:
        for slot, name in zip(dslots + aslots, op.names):
            if not _fenced(th, slot):
                why = "with no wgmma.fence before it" if th.wg_fence is None else \
                    ", which it changed after its last wgmma.fence"
                raise WgmmaError(f"{th!r} issues {op.describe()} on register {name}{' ' if why[0] == 'w' else ''}"
                                 f"{why} (PTX ISA #asynchronous-warpgroup-level-matrix-instructions-wgmma-fence: a "
                                 f"fence separates the thread's register accesses from a wgmma that uses them)")
    for s in aslots:
        if type(R[s]) is InFlight and R[s].value is None:
            R[s]._refuse()                             # an earlier operation's D, not yet waited for, as A
    a = tuple(_value(R[s], 0) for s in aslots)
    list(map(R.__setitem__, dslots, op.markers))
    for k, slot in enumerate(aslots):
        R[slot] = InFlight(op, len(dslots) + k, a[k], op.names[len(dslots) + k])
    return LaneIssue(th, None if chained else tuple(d), prev if chained else None, a, dslots + aslots)


def _mma_async(cta, warp, site, group: dict) -> None:
    """A warp's ``wgmma.mma_async``: its part of the warpgroup's next operation, run once all 4 warps issued it."""
    if len(group) != 32:
        raise WgmmaError(f"{site.text[:60]!r}: every lane of warp {warp.index} executes wgmma.mma_async "
                         f"(.sync.aligned); lanes {sorted(set(range(32)) - set(group))} did not")
    if len({g[2] for g in group.values()}) != 1:
        raise WgmmaError(f"{site.text[:60]!r}: the lanes of warp {warp.index} give different descriptors or scale-d "
                         f"{sorted({g[2] for g in group.values()})}")
    rec = site.decode(group[0][0].R)
    state = cta.warpgroup(warp.index // WARPGROUP_WARPS)
    w = warp.index % WARPGROUP_WARPS
    seq = state.issued[w]
    state.issued[w] += 1
    if seq == len(state.ops):
        state.ops.append(WgmmaOp(state, seq, site, rec))
    op = state.ops[seq]
    if op.site.line != site.line or op.record != rec:
        raise WgmmaError(f"warp {warp.index} issues PTX line {site.line} as its part of {op.describe()}, with "
                         f"{'other operands' if op.site.line == site.line else 'another instruction'} (.aligned: every "
                         f"warp of the warpgroup executes the same wgmma.mma_async)")
    aslots = tuple(site.reads[r][1] for r in op.names[len(op.markers):])
    for lane, (th, _, _, _) in group.items():
        op.lanes[32 * w + lane] = _take(th, op, site.dests, aslots)
        th.wg_pending.append(op)
        op.vc = th.vc.copy() if op.vc is None else np.maximum(op.vc, th.vc)
    op.warps.add(w)
    cta.wg_run(state)


def _wgmma(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    op, a = mods[0], ins.args
    if op == "mma_async" and "sp" in mods:
        raise CompileError("the sparse wgmma.mma_async.sp is outside the interpreted subset")
    if op == "mma_async":
        site = ctx.helper(IssueSite("wgmma.mma_async", ins, ctx, tuple(int(dst(ctx, r)[2:-1]) for r in vector(a[0]))),
                          "issue")
        values = ["None" if a[1].startswith("{") else src(ctx, a[1], 64), src(ctx, a[2], 64), src(ctx, a[3], 1)]
        return Code((f"return m.collective(th, {site}, ({', '.join(values)},), {{next}})",), "wait")
    if op == "fence":
        return Code(("m.wg_fence(th)",))
    if op == "commit_group":
        return Code(("m.wg_commit(th)",))
    if op == "wait_group":
        return Code((f"return m.wg_wait(th, {src(ctx, a[0], 32)}, {{here}}, {{next}})",), "wait")
    raise CompileError(f"wgmma.{op} is outside the interpreted subset")


RUNTIME_EMITTERS["wgmma"] = _wgmma
KERNEL_EXECUTORS["wgmma.mma_async"] = (_mma_async, True)
