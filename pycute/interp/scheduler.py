"""Threads, warps, CTAs and clusters, and the scheduler that runs them (docs/interpreter.md, "Scheduling").

Every thread has its own program counter and registers. The scheduler runs one thread at a time until it waits (a
barrier, an mbarrier phase, a warp-collective instruction its warp has not all reached), exits, or has run a slice
of blocks; then the next ready thread runs. A warp-collective instruction completes when every live lane of its
member mask has reached one, so divergent lanes reconverge there. When no thread can run, the asynchronous
operations in flight land (their bytes are written and their mbarriers complete transactions), which may wake
threads; when none are in flight either and some thread still waits, that is a deadlock, reported by barrier.
"""
from __future__ import annotations

import random
import time
from collections import deque

import numpy as np

from ..errors import EmulationError
from .asyncops import AsyncMixin, land
from .calls import CallsMixin
from .translate import Program, statement_error
from .memory import GlobalMemory, MemoryMixin
from .report import DeadlockError, deadlock_report, describe_thread
from .shadow import SLOT_BITS, Clocks, Shadow
from .sync import ClusterBarrier, SyncMixin
from .tensormaps import check_acquired, map_index
from .tensorcore import TensorMixin
from .warp import Warp, WarpMixin
from .regpool import RegisterPoolMixin
from .warpgroup import WarpgroupMixin

__all__ = ["Thread", "Cta", "Cluster", "World", "run", "READY", "WAITING", "EXITED", "UNLAUNCHED", "CANCELLED",
           "TRAPPED"]

READY, WAITING, EXITED = 0, 1, 2
UNLAUNCHED, CANCELLED = 3, 4           # a cluster waiting for a resident slot; one clusterlaunchcontrol cancelled
TRAPPED = 5                            # executed trap: the kernel ends once its warp's other lanes have run
_DIMS = "xyz"


class Thread:
    """One thread: registers ``R``, program counter, its clock, and what it waits for."""

    def __init__(self, cta: "Cta", tid: tuple[int, int, int], linear: int, slot: int, vc: np.ndarray, size: int):
        self.cta, self.tid, self.linear = cta, tid, linear
        self.lane, self.warp = linear % 32, linear // 32
        self.R: list = [0] * size
        self.pc, self.state = 0, READY
        self.waiting: object = None
        self.slot, self.vc = slot, vc
        self.vcm = vc.data
        self.stamp = 0
        self.tick()
        self.local = bytearray(cta.world.local_bytes)
        self.cc = 0
        self.cp_pending: list = []
        self.cp_groups: list = []
        self.bulk_pending: list = []
        self.bulk_groups: list = []
        self.waits: dict = {}
        self.cluster_arrived: int | None = None
        self.tc_slot: int | None = None
        self.tc_ops: list = []
        self.commits = 0
        self.calls: set[int] = set()
        self.wg_pending: list = []                     # wgmma: uncommitted operations, groups, the last fence
        self.wg_groups: list = []
        self.wg_fence: list | None = None
        self.wg_written: dict = {}
        self.map_acquired: dict = {}                   # fence.proxy.tensormap acquires: address -> (clock, line)
        self.reg_seq = 0                               # setmaxnreg instructions executed

    def tick(self) -> None:
        """A release: later accesses of this thread are not ordered before what the release publishes."""
        self.vc[self.slot] += 1
        self.stamp = int(self.vc[self.slot]) << SLOT_BITS | self.slot

    def acquire_slot(self, slot: int, epoch: int) -> None:
        """Ordered after what the agent ``slot`` did up to ``epoch`` (a completed wgmma)."""
        if self.vc[slot] < epoch:
            self.vc[slot] = epoch

    def acquire(self, clock: np.ndarray | None) -> None:
        if clock is not None:
            np.maximum(self.vc, clock, out=self.vc)

    def clock(self, bits: int) -> int:
        return self.cta.world.steps & ((1 << bits) - 1)

    def __repr__(self) -> str:
        return describe_thread(self)


class Cta(MemoryMixin, SyncMixin, WarpMixin, AsyncMixin, TensorMixin, WarpgroupMixin, RegisterPoolMixin, CallsMixin):
    """A CTA: its shared memory (the emulator's image), threads, warps, barriers and mbarriers."""

    def __init__(self, world: "World", cluster: "Cluster", rank: int, ctaid: tuple[int, int, int], linear: int):
        self.world, self.cluster, self.rank, self.ctaid, self.linear = world, cluster, rank, ctaid, linear
        self.name = "CTA " + (str(ctaid[0]) if ctaid[1:] == (0, 0) else f"({ctaid[0]},{ctaid[1]},{ctaid[2]})")
        self.smem = cluster.machine.ctas[rank].smem
        self.smem_view = self.smem.data
        self.shadow = Shadow(self.smem.size, f"CTA {rank}'s shared memory", world.explain_smem(self))
        self.tmem_shadow = Shadow(128 * 512, f"CTA {rank}'s TMEM", world.explain_tmem(self))
        self.threads: list[Thread] = []
        self.warps: list[Warp] = []
        self.bars: dict = {}
        self.bar_groups: dict = {}                     # (barrier id, count) -> the last phase's warps, clock, lines
        self.mbarriers: dict = {}
        self.elected: dict = {}
        self.live = 0
        self.warpgroups: dict = {}                     # wgmma state by warpgroup
        self.clc_failed = False                        # received a failed clusterlaunchcontrol response
        self.reg_free, self.reg_held, self.reg_requests, self.reg_history = 0, {}, {}, {}   # setmaxnreg

    def exit(self, th: Thread) -> int:
        self.wg_on_exit(th)
        th.state = EXITED
        self.live -= 1
        self.cluster.live -= 1
        self.warps[th.warp].on_exit(th)
        self.on_exit(th)
        if self.live == 0:
            self.world.cta_exited(self)
        if self.cluster.live == 0:
            self.world.launch_next()
        return -2

    def trap(self, th: Thread, line: int, text: str) -> int:
        """``th`` stops; the run ends with an error once the other lanes of its warp that can run have run (a
        warp's lanes run together on the GPU: a lane that prints the reason before its own trap is not cut off by
        a sibling's earlier one)."""
        th.state = TRAPPED
        if self.world.trapped is None:
            self.world.trapped = (th, line, text)
        return -2

    def called(self, th: Thread, gid: int) -> None:
        """``th`` runs an effect of generated function ``gid``: a second lane of a warp calling an ``elected``
        function is an error at once (the others are checked when the run ends, ``conventions``)."""
        th.calls.add(gid)
        name = list(self.world.conventions)[gid]
        if self.world.conventions[name].caller == "elected":
            first = self.elected.setdefault((th.warp, gid), th.lane)
            if first != th.lane:
                from .conventions import ConventionError
                raise ConventionError(f"{name} (its convention: called by one elected thread) is called by lanes "
                                      f"{first} and {th.lane} of warp {th.warp} of {self.name}")

    def pause(self, th: Thread, nxt: int) -> int:
        th.pc = nxt
        self.world.ready.append(th)
        return -1

    def wake(self, th: Thread, nxt: int | None = None) -> None:
        if nxt is not None:
            th.pc = nxt
        th.state, th.waiting = READY, None
        self.world.ready.append(th)

    def suspend(self, th: Thread, nxt: int, waiting: object) -> int:
        th.pc, th.state, th.waiting = nxt, WAITING, waiting
        return -1

    def __repr__(self) -> str:
        return f"{self.name} (rank {self.rank} of cluster {self.cluster.index})"


class Cluster:
    """The CTAs of one cluster: the emulator that holds their shared memory and TMEM, the clocks, the cluster
    barrier."""

    def __init__(self, index: int, machine, threads: int):
        self.index, self.machine = index, machine
        self.ctas: list[Cta] = []
        self.clocks = Clocks(threads)
        self.barrier = ClusterBarrier(self)
        self.live = 0
        self.pair_allocs: list[int] = []
        self.flags: dict = {}                          # clocks released through addresses (strong accesses)
        self.pair_deallocs: list[int] = []


class World:
    """A launch being run: the program, the grid, global memory, parameters, the ready queue and the operations in
    flight."""

    def __init__(self, program: Program, gmem: GlobalMemory, params: bytearray, local_bytes: int,
                 check_unwritten: bool, max_steps: int, names: list):
        self.program, self.gmem, self.params = program, gmem, params
        self.local_bytes, self.check_unwritten, self.max_steps = local_bytes, check_unwritten, max_steps
        self.names = names
        self.ctas: list[Cta] = []
        self.clusters: list[Cluster] = []
        self.threads: list[Thread] = []
        self.ready: deque = deque()
        self.ops: dict = {}
        self.next_op = 0
        self.steps = 0
        self.tensor_maps: dict = {}
        self.owners: list = []
        self.printed: list[str] = []
        self.trapped: tuple | None = None              # (thread, PTX line, statement) of the first trap
        self.order: random.Random | None = None         # a seeded schedule's choices (None: thread order)
        self.conventions: dict = {}
        self.barrier_names: dict[str, tuple[str, ...]] = {}      # shared array -> the names of its 8-byte words
        self.seconds = 0.0
        self.registers: int | None = None              # per thread at launch (the cubin's), for setmaxnreg
        self.map_publish: dict = {}                    # a map's address -> its last publish: lanes' clocks, who, line
        self.pending: deque = deque()                  # clusters not launched yet (run_kernel(resident=...))
        self.cancelled: list = []                      # clusters clusterlaunchcontrol.try_cancel cancelled

    def explain_smem(self, cta: Cta):
        from .report import explain
        return lambda kind, th, byte, stamp: explain(self, cta, "smem", kind, th, byte, stamp)

    def explain_tmem(self, cta: Cta):
        from .report import explain
        return lambda kind, th, cell, stamp: explain(self, cta, "tmem", kind, th, cell, stamp)

    def launch_next(self) -> None:
        """A cluster exited: the next one not launched starts (grid order)."""
        if self.pending:
            for cta in self.pending.popleft().ctas:
                for th in cta.threads:
                    th.state = READY
                    self.ready.append(th)

    def cta_exited(self, cta: Cta) -> None:
        from .report import check_exit
        check_exit(self, cta)

    def owner_at(self, line: int) -> str | None:
        """The checked generated function the statement at PTX ``line`` belongs to (``conventions``)."""
        return next((o for ins, o in zip(self.program.entry.instrs, self.owners) if ins.line == line), None)

    def convention_note(self, line: int) -> str:
        """``, in load_a, whose convention ...`` for the statement at PTX ``line`` of a checked function."""
        owner = self.owner_at(line)
        if owner not in self.conventions:
            return ""
        return f", in {owner}, whose convention says it is called by {self.conventions[owner].caller}"

    def land(self) -> bool:
        return land(self)

    def name_of(self, off: int) -> str:
        """A shared address by its variable: ``full[1]`` for an array of 8-byte words (mbarriers), ``raw+0x400``."""
        for at, size, align, name, extern in self.names:
            if at <= off < at + size or (extern and off >= at):
                rel = off - at
                named = self.barrier_names.get(name, ())
                if rel % 8 == 0 and rel // 8 < len(named):
                    return named[rel // 8]
                if not extern and align == 8 and size % 8 == 0 and size > 8:
                    return f"{name}[{rel // 8}]" + (f"+{rel % 8}" if rel % 8 else "")
                return name if rel == 0 else f"{name}+{rel:#x}"
        return f"shared {off:#x}"

    def tensor_map_at(self, cta: Cta, th: Thread, addr: int):
        """The tensor map (a ``TensorMapArg``: parameters, array bytes, offset) whose 128-byte image is at generic
        address ``addr``; one a thread published during the run must have been acquired by ``th`` since."""
        kind, target, off = cta._resolve(th, "generic", addr, 128)
        if kind == "global":
            check_acquired(self, th, addr)
            buf, off = self.gmem.find(off, 128, "tensor-map read")
            image = bytes(buf.view[off:off + 128])
        else:
            image = bytes((target.smem_view if kind == "smem" else target)[off:off + 128])
        return self.tensor_maps[map_index(image, f"{addr:#x} (a TMA instruction's map)")]


def _run_thread(world: World, th: Thread, budget: int) -> int:
    """Run ``th`` for at most ``budget`` blocks; the number it ran."""
    nodes, R, m = world.program.nodes, th.R, th.cta
    pc, left = th.pc, budget
    try:
        while left:
            left -= 1
            pc = nodes[pc](R, th, m)
            if pc < 0:
                return budget - left
        th.pc = pc
        world.ready.append(th)
        return budget
    except EmulationError as e:
        raise statement_error(world.program, e) from None
    except (ArithmeticError, IndexError, KeyError, TypeError, ValueError) as e:
        raise statement_error(world.program, e) from e


def _end_with_trap(world: World, slice_blocks: int) -> None:
    """The trapping thread's warp runs on (its lanes that are ready, until they wait, exit or trap; others stop),
    then the error: the trap, and what the kernel printed before it (a checked build's reason)."""
    assert world.trapped is not None
    th, line, text = world.trapped
    same = [t for t in world.ready if t.cta is th.cta and t.warp == th.warp]
    for _ in range(world.max_steps // max(slice_blocks, 1)):
        lanes = [t for t in same if t.state == READY]
        if not lanes:
            break
        world.ready = deque(t for t in world.ready if t not in lanes)
        for t in lanes:
            _run_thread(world, t, slice_blocks)
        same = [t for t in world.ready if t.cta is th.cta and t.warp == th.warp]
    printed = "".join(world.printed)
    raise EmulationError(f"{describe_thread(th)} executed {text!r} (PTX line {line}): the kernel traps"
                         + (f"; it printed before: {printed.strip()}" if printed.strip() else ""))


def run(world: World, slice_blocks: int = 256) -> None:
    """Run every thread to its exit; DeadlockError when all that remain wait and nothing in flight can help."""
    t0 = time.perf_counter()
    world.ready.extend(th for th in world.threads if th.state == READY)
    order = world.order
    while True:
        while world.ready:
            if order is not None:                      # a seeded schedule: any ready thread, for any slice
                world.ready.rotate(-order.randrange(len(world.ready)))
            th = world.ready.popleft()
            if th.state != READY:
                continue
            world.steps += _run_thread(world, th, slice_blocks if order is None else order.randint(1, slice_blocks))
            if world.trapped is not None:
                _end_with_trap(world, slice_blocks)
            if world.steps > world.max_steps:
                raise EmulationError(f"the kernel ran more than {world.max_steps} blocks of statements without "
                                     f"finishing (an unbounded loop? raise max_steps)")
        if world.land():
            continue
        waiting = [t for t in world.threads if t.state == WAITING]
        if not waiting:
            break
        raise DeadlockError(deadlock_report(world, waiting))
    world.seconds = time.perf_counter() - t0
