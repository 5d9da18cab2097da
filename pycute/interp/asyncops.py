"""Asynchronous copies in a whole-kernel run: TMA loads and stores, flat bulk copies, DSMEM copies, ``st.async``
and cp.async, moved by the emulator's executors (``sim.executors``) at the completion point PTX defines.

A copy that completes transaction bytes on an mbarrier is in flight from its issue until the scheduler lands it,
which it does only when no thread can run (the latest moment the ISA allows): then its bytes are written and its
mbarrier's tx-count drops. A bulk-group copy (a TMA or bulk store) completes at its thread's
``cp.async.bulk.wait_group``; a cp.async at its thread's ``cp.async.wait_group`` or
``cp.async.mbarrier.arrive``. While in flight, the bytes a copy writes (reads) are marked: another access to them
is an error naming the copy, its barrier and its phase (``shadow``).
"""
from __future__ import annotations

import re
from typing import Callable

import attrs
import numpy as np

from .ctabase import CtaBase
from ..atoms.bulk import BulkIssue
from ..errors import EmulationError
from ..sim.executors.tma import _box_addresses
from ..sim.executors.bulk import CLUSTER_WINDOW
from ..arch.sm100.tma_modes import GATHER_ROWS, W128_GROUP, W128_PIXELS
from ..copy.tma.plan import DTYPE_BYTES
from .operands import MASK
from .rtemit_sync import KERNEL_EXECUTORS
from .shadow import RaceError, stamp_of

__all__ = ["AsyncOp", "AsyncMixin", "land"]

_CTA_MASK = MASK[16]          # a multicast's ctaMask: one bit per CTA of a cluster of up to 16


@attrs.define(eq=False)
class AsyncOp:
    """One asynchronous operation in flight: what it is, who issued it where, the bytes it writes and reads
    (``(cta, shadow, indices, write, mbarrier or None)``), the data movement to do when it lands, and the
    mbarriers it completes transaction bytes on."""

    id: int
    what: str
    issuer: object
    line: int
    text: str
    footprint: list = attrs.field(factory=list)
    apply: Callable[[], None] | None = None
    targets: list = attrs.field(factory=list)

    def describe(self) -> str:
        bars = "; ".join(f"completing {n} B on mbarrier {b.name} of {b.cta.name} (phase {b.phase}: {b.pending} of "
                         f"{b.count} arrivals and {b.tx} B pending)" for b, n in self.targets)
        return (f"the {self.what} issued by {self.issuer!r} at PTX line {self.line} ({self.text!r})"
                + (f", {bars}" if bars else ""))


def _bytes(addresses: np.ndarray, elem: int) -> np.ndarray:
    return (addresses[:, None] + np.arange(elem)[None, :]).reshape(-1)


def _span(lo: int, n: int) -> np.ndarray:
    return np.arange(lo, lo + n, dtype=np.int64)


class AsyncMixin(CtaBase):
    """Issuing and completing asynchronous copies (mixed into ``scheduler.Cta``)."""

    def new_op(self, th, what: str, site) -> AsyncOp:
        world = self.world
        op = AsyncOp(world.next_op, what, th, site.line, site.text)
        world.next_op += 1
        world.ops[op.id] = op
        return op

    def touch(self, op: AsyncOp, th, cta, idx: np.ndarray, write: bool, bar=None, unwritten: bool = False) -> None:
        """Record that ``op`` writes (reads) bytes ``idx`` of ``cta``'s shared memory: checked now against
        everything the issuer has synchronised with, marked in flight until it lands."""
        idx = idx.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= cta.smem.size):
            raise EmulationError(f"{op.describe()}: shared bytes [{int(idx.min()):#x}, {int(idx.max()) + 1:#x}) "
                                 f"are outside {cta.name}'s {cta.smem.size} B")
        own = tuple(s for s in (th.slot, th.tc_slot) if s is not None)
        hit = cta.shadow.first_conflict(idx, th.vc, own, write, frozenset(o.id for o in th.tc_ops))
        if hit is not None:
            raise RaceError(cta.shadow.explain(hit[0], op, hit[1], hit[2]))
        if unwritten and self.world.check_unwritten and (b := cta.shadow.unwritten(idx)) is not None:
            raise RaceError(cta.shadow.explain("read-unwritten", op, b, -1))
        cta.shadow.begin(idx, op.id, write)
        op.footprint.append((cta, cta.shadow, idx, write, bar))

    def finish(self, op: AsyncOp, stamp: int | None = None) -> None:
        """``op`` has completed: its bytes take the stamp of its barrier's phase (or ``stamp``)."""
        for cta, shadow, idx, write, bar in op.footprint:
            shadow.finish(idx, op.id, write, stamp if bar is None else stamp_of(bar.slot, bar.phase + 1))
        self.world.ops.pop(op.id, None)

    def issue(self, th, site, R: list) -> None:
        execute, _ = KERNEL_EXECUTORS[site.kind]
        execute(self, th, site.decode(R), site, R)

    def mbarrier_for(self, addr: int, cta=None):
        """The mbarrier a copy completes on: a shared::cluster address, or an offset in ``cta``."""
        if cta is None:
            cta, addr = self.shared_target(addr & 0xFFFF_FFFF, True)
        return cta.mbarrier_at("shared", addr % CLUSTER_WINDOW, "a copy's complete_tx")

    # -- cp.async ------------------------------------------------------------------------------------------------
    def cp_async_commit(self, th) -> None:
        self.cluster.machine.cp_async_commit(th.linear, self.rank)
        th.cp_groups.append(th.cp_pending)
        th.cp_pending = []

    def cp_async_wait(self, th, n: int) -> None:
        self.cluster.machine.cp_async_wait(n, th.linear, self.rank)
        keep = min(n, len(th.cp_groups))
        for group in th.cp_groups[:len(th.cp_groups) - keep]:
            for op in group:
                self.finish(op, th.stamp)
        th.cp_groups = th.cp_groups[len(th.cp_groups) - keep:]

    def cp_async_arrive(self, th, addr: int, noinc: bool) -> None:
        bar = self.mbarrier_for(addr, self)
        self.cluster.machine.cp_async_arrive_noinc(addr, th.linear, self.rank)
        for op in [op for group in th.cp_groups for op in group] + th.cp_pending:
            self.finish(op, th.stamp)
        th.cp_groups, th.cp_pending = [], []
        np.maximum(bar.acc, th.vc, out=bar.acc)
        th.tick()
        if noinc:
            self.arrive_on(bar, 1, f"{th!r} (cp.async.mbarrier.arrive.noinc)")

    # -- bulk groups -----------------------------------------------------------------------------------------------
    def bulk_commit(self, th) -> None:
        th.bulk_groups.append(th.bulk_pending)
        th.bulk_pending = []

    def bulk_wait(self, th, n: int, read: bool) -> None:
        keep = min(n, len(th.bulk_groups))
        for group in th.bulk_groups[:len(th.bulk_groups) - keep]:
            for op in group:
                if op.apply is not None:
                    op.apply()
                self.finish(op, th.stamp)
        th.bulk_groups = th.bulk_groups[len(th.bulk_groups) - keep:]

    # -- st.async ----------------------------------------------------------------------------------------------------
    def st_async(self, th, addr: int, n: int, values: tuple, mbar: int, line: int) -> None:
        from .rtemit_sync import Site
        cta, off = self.shared_target(addr & 0xFFFF_FFFF, True)
        bar = self.mbarrier_for(mbar)
        op = self.new_op(th, "st.async", Site("st.async", (), (), line, "st.async"))
        data = b"".join((v & ((1 << (8 * n)) - 1)).to_bytes(n, "little") for v in values)
        self.touch(op, th, cta, _span(off, len(data)), True, bar)
        op.apply = lambda: cta.smem_view.__setitem__(slice(off, off + len(data)), data)
        self._in_flight(op, [(bar, len(data))])

    def _in_flight(self, op: AsyncOp, targets: list) -> None:
        op.targets = targets
        for bar, _ in targets:
            bar.inflight.add(op.id)


def land(world) -> bool:
    """Land every copy in flight that completes on an mbarrier, oldest first; whether any did."""
    ops = [op for op in world.ops.values() if op.targets]
    for op in sorted(ops, key=lambda o: o.id):
        if op.apply is not None:
            op.apply()
        op.issuer.cta.finish(op)
        for bar, nbytes in op.targets:
            bar.inflight.discard(op.id)
            if bar.pending == 0 and 0 < bar.tx < nbytes:       # the phase completes part-way through the copy
                from .sync import BarrierError
                raise BarrierError(f"{bar.describe()}: the phase completes part-way through {op.describe()}: "
                                   f"expect_tx armed {bar.armed} B, but the copies issued for this phase bring "
                                   f"{bar.issued_bytes(world) + nbytes} B")
            bar.tx -= nbytes
            bar.delivered += nbytes
            bar.check(world)
    return bool(ops)


def _tensor_map_operand(text: str) -> str:
    m = re.match(r"\[\s*([^,\s\]]+)", text)
    if m is None:
        raise EmulationError(f"tensor operand {text!r} is not [map, {{coordinates}}]")
    return m.group(1)


def _mode(op_text: str) -> str:
    """The TMA mode of an opcode: ``tile``, ``im2col`` (sm_90), ``im2col_w`` (``::w``, ``::w::128``), ``gather4`` /
    ``scatter4`` (sm_100a)."""
    if ".im2col::w" in op_text:
        return "im2col_w"
    return next((m for m in ("im2col", "gather4", "scatter4") if f".{m}." in op_text or f"::{m}." in op_text),
                "tile")


def _transfer(cta, params, rec, off: int, rank: int, array, offset: int, mode: str, store: bool = False) -> tuple:
    """What one box of ``mode`` moves in CTA ``rank``'s shared memory at ``off``: the bytes (for the race checks),
    the transaction bytes it delivers and the move (from / to ``array`` at byte ``offset``)."""
    machine, elem = cta.cluster.machine, DTYPE_BYTES[params.dtype]
    if mode == "tile":
        idx = _bytes(_box_addresses(params, rec.coords, off, store=store)[2], elem)
        return idx, params.box_bytes, lambda: machine.tma_load(params, array, rec.coords, off, rank, address=offset)
    if mode == "im2col_w":                  # the W pixels and the halo after each row (of 32 pixels: ::w::128)
        pixels = W128_PIXELS if params.mode == "w128" else params.pixels
        rows, width = pixels + rec.im2col[0] * (pixels // (W128_GROUP if params.mode == "w128" else pixels)), \
            params.channels
    else:
        rows, width = (params.pixels, params.channels) if mode == "im2col" else (GATHER_ROWS, params.box[0])
    idx = machine._rows(params.swizzle, width, elem, rows, off, rank).reshape(-1)
    view = array[offset:]
    if mode == "im2col":
        return idx, params.box_bytes, lambda: machine.tma_load_im2col(params, view, rec.coords, rec.im2col or (),
                                                                      off, rank)
    if mode == "im2col_w":
        return idx, rows * width * elem, lambda: machine.tma_load_im2col_w(params, view, rec.coords, rec.im2col, off,
                                                                           rank)
    if mode == "gather4":
        return idx, rows * width * elem, lambda: machine.tma_gather4(params, view, rec.coords, off, rank)
    return idx, 0, lambda: machine.tma_scatter4(params, view, rec.coords, off, rank)


def _tma(cta, th, rec, site, R: list) -> None:
    op_text = rec.ptx
    if ".prefetch." in op_text:
        return
    store = ".global.shared::cta" in op_text
    tmap = cta.world.tensor_map_at(cta, th, site.value(R, _tensor_map_operand(site.args[0 if store else 1])))
    params, array, offset, mode = tmap.params, tmap.array, tmap.offset, _mode(op_text)
    if store:
        reduce = next((r for r in ("add", "min", "max", "inc", "dec", "and", "or", "xor")
                       if f".{r}." in op_text), None) if op_text.startswith("cp.reduce") else None
        op = cta.new_op(th, "TMA store" if reduce is None else f"TMA reduce-{reduce}", site)
        idx, _, scatter = _transfer(cta, params, rec, rec.smem, cta.rank, array, offset, mode, store=True)
        cta.touch(op, th, cta, idx, False)
        op.apply = scatter if mode == "scatter4" else \
            (lambda: cta.cluster.machine.tma_store(params, array, rec.coords, rec.smem, cta.rank, reduce, offset))
        th.bulk_pending.append(op)
        return
    mbar = site.value(R, site.args[2])
    if rec.mask is not None:
        dests = [(cta.cluster.ctas[r], rec.smem % CLUSTER_WINDOW) for r in range(16) if rec.mask >> r & 1
                 and r < len(cta.cluster.ctas)]
        bars = [cta.mbarrier_for(mbar % CLUSTER_WINDOW, d) for d, _ in dests]
    else:
        dests = [cta.shared_target(rec.smem, True)]
        bars = [cta.mbarrier_for(mbar)]
    op = cta.new_op(th, "TMA load" if mode == "tile" else f"TMA {mode} load", site)
    moves, delivered = [], 0
    for (dcta, off), bar in zip(dests, bars):
        idx, delivered, move = _transfer(cta, params, rec, off, dcta.rank, array, offset, mode)
        cta.touch(op, th, dcta, idx, True, bar)
        moves.append(move)
    op.apply = lambda: [move() for move in moves]
    cta._in_flight(op, [(bar, delivered) for bar in bars])


def _bulk(cta, th, rec, site, R: list) -> None:
    machine, gmem = cta.cluster.machine, cta.world.gmem
    if rec.ptx.startswith("cp.async.bulk.global"):
        buf, goff = gmem.find(rec.dst, rec.size, "bulk store")
        op = cta.new_op(th, "bulk store", site)
        cta.touch(op, th, cta, _span(rec.src, rec.size), False)
        op.apply = lambda: machine.bulk_store(buf.data, rec._replace(dst=goff), cta.rank)
        th.bulk_pending.append(op)
        return
    if ".shared::cluster.shared::cta" in rec.ptx:
        dcta, doff = cta.shared_target(site.value(R, site.args[0]) & 0xFFFF_FFFF, True)
        bar = cta.mbarrier_for(site.value(R, site.args[3]))
        op = cta.new_op(th, "DSMEM copy", site)
        cta.touch(op, th, cta, _span(rec.src, rec.size), False, bar)
        cta.touch(op, th, dcta, _span(doff, rec.size), True, bar)
        issue = BulkIssue(rec.ptx, doff, rec.src, rec.size, dcta.rank)
        op.apply = lambda: machine.dsmem_copy(issue, cta.rank)
        cta._in_flight(op, [(bar, rec.size)])
        return
    buf, goff = gmem.find(rec.src, rec.size, "bulk load")
    mbar = site.value(R, site.args[3])
    if ".multicast::cluster" in rec.ptx:
        mask = site.value(R, site.args[4]) & _CTA_MASK
        dests = [(c, rec.dst % CLUSTER_WINDOW) for c in cta.cluster.ctas if mask >> c.rank & 1]
        bars = [cta.mbarrier_for(mbar % CLUSTER_WINDOW, d) for d, _ in dests]
    else:
        dests, bars = [cta.shared_target(rec.dst, True)], [cta.mbarrier_for(mbar)]
    op = cta.new_op(th, "bulk load", site)
    for (dcta, off), bar in zip(dests, bars):
        cta.touch(op, th, dcta, _span(off, rec.size), True, bar)

    def move() -> None:
        for dcta, off in dests:
            machine.bulk_load(buf.data, BulkIssue(rec.ptx, off, goff, rec.size), dcta.rank)
    op.apply = move
    cta._in_flight(op, [(bar, rec.size) for bar in bars])


def _cp_async(cta, th, rec, site, R: list) -> None:
    # the whole cp-size window must lie in one allocation whatever the src-size (memcheck counts it read); a copy
    # of src-size 0 addresses the array's base (pycute's plans) and reads nothing
    buf, goff = cta.world.gmem.find(rec.gmem, rec.size, "cp.async source window")
    data = buf.data
    op = cta.new_op(th, "cp.async", site)
    cta.touch(op, th, cta, _span(rec.smem, rec.size), True)
    cta.cluster.machine.cp_async(data, rec._replace(gmem=goff), th.linear, cta.rank)
    th.cp_pending.append(op)


KERNEL_EXECUTORS.update({
    "cp.async.bulk.tensor": (_tma, False), "cp.reduce.async.bulk.tensor": (_tma, False),
    "cp.async.bulk.prefetch.tensor": (_tma, False), "cp.async.ca": (_cp_async, False),
    "cp.async.cg": (_cp_async, False), "cp.async.bulk.shared::cluster": (_bulk, False),
    "cp.async.bulk.global": (_bulk, False)})
