"""tcgen05 in a whole-kernel run (PTX ISA #tcgen05-instructions): ``alloc`` / ``dealloc`` by a warp (for
cta_group::2 by one warp of each CTA of the pair, once for both), ``tcgen05.ld`` / ``st`` by a warp (all 32 lanes
together, through the emulator's executor), ``tcgen05.cp`` and ``tcgen05.mma`` by one thread, ``tcgen05.commit``.

A thread's cp and mma form its tcgen05 pipeline: they execute in issue order (a pipelined pair, #tcgen05-memory-
consistency-model-pipelined-instructions) at issue, and stay in flight until the thread's next ``tcgen05.commit``,
whose mbarrier arrival releases them: the shared memory they read and the TMEM they write are marked in flight till
then, and ordered after the commit's mbarrier phase afterwards. ``ld`` / ``st`` complete at issue (``wait::ld`` /
``wait::st`` are not checked).
"""
from __future__ import annotations

import re

import numpy as np

from .ctabase import CtaBase
from ..arch.sm100.descriptor import SmemDescriptor
from ..arch.sm100.tcgen05_ldst import LDST_SHAPES
from ..arch.sm100.tmem import COLUMNS, LANES, split_address
from ..atoms.tcgen05_cp import parse_cp_ptx
from ..atoms.tcgen05_ldst import ldst_atom
from ..errors import EmulationError, PlanError
from ..sim.executors.bulk import CLUSTER_WINDOW
from ..sim.executors.tcgen05_cp import source_units
from .rtemit_sync import KERNEL_EXECUTORS
from .shadow import RaceError, stamp_of

__all__ = ["TensorMixin"]

_UNIT = 16
_MASK32 = (1 << 32) - 1


def _atom(op: str):
    mods = op.split(".")
    shape = next((m for m in mods if m in LDST_SHAPES), None)
    num = next((int(m[1:]) for m in mods if re.fullmatch(r"x\d+", m)), None)
    if shape is None or num is None:
        raise EmulationError(f"{op}: no tcgen05.ld/st shape and .num")
    return ldst_atom("ld" if mods[1] == "ld" else "st", shape, num, any(m in ("pack::16b", "unpack::16b") for m in mods))


class TensorMixin(CtaBase):
    """tcgen05 instructions of a CTA's threads (mixed into ``scheduler.Cta``)."""

    def tc_agent(self, th) -> int:
        if th.tc_slot is None:
            th.tc_slot = self.cluster.clocks.slot(("tcgen05", id(th)), f"the tcgen05 pipeline of {th!r}")
        return th.tc_slot

    def tc_touch_tmem(self, op, th, cta, cells: np.ndarray, write: bool) -> None:
        own = (th.slot, self.tc_agent(th))
        hit = cta.tmem_shadow.first_conflict(cells, th.vc, own, write, frozenset(o.id for o in th.tc_ops))
        if hit is not None:
            raise RaceError(cta.tmem_shadow.explain(hit[0], op, hit[1], hit[2]))
        cta.tmem_shadow.begin(cells, op.id, write)
        op.footprint.append((cta, cta.tmem_shadow, cells, write, None))

    def tc_commit(self, th, site, group: int, space: str, addr: int, mask: int | None) -> None:
        """``tcgen05.commit``: the thread's tcgen05 operations since its last commit complete, and the mbarrier
        (each CTA's of ``mask`` at the same offset) gets one arrival."""
        slot = self.tc_agent(th)
        th.commits += 1
        for op in th.tc_ops:
            self.finish(op, stamp_of(slot, th.commits))
        th.tc_ops = []
        if mask is not None:
            bars = [c.mbarrier_at("shared", addr % CLUSTER_WINDOW, "tcgen05.commit") for c in self.cluster.ctas
                    if mask >> c.rank & 1]
        else:
            bars = [self.mbarrier_for(addr) if space == "cluster" else self.mbarrier_at(space, addr, "tcgen05.commit")]
        for bar in bars:
            np.maximum(bar.acc, th.vc, out=bar.acc)
            bar.acc[slot] = max(int(bar.acc[slot]), th.commits)
        th.tick()
        for bar in bars:
            self.arrive_on(bar, 1, f"the tcgen05.commit of {th!r}")

    # -- warp-collective: alloc, dealloc, ld, st -------------------------------------------------------------------
    def tc_collective(self, warp, site, group: dict) -> None:
        lanes = sorted(group)
        first = group[lanes[0]][0]
        kind = site.kind
        if kind in ("tcgen05.alloc", "tcgen05.dealloc"):
            values = {v for _, _, v, _ in group.values()}
            if len(values) != 1:
                raise EmulationError(f"{site.text!r}: the lanes of warp {warp.index} give different operands {values}")
            (address, ncols), cta_group = values.pop(), 2 if "cta_group::2" in site.mods else 1
            (self._alloc if kind == "tcgen05.alloc" else self._dealloc)(first, address, ncols, cta_group)
            return
        records = {lane: v[0] for lane, (_, _, v, _) in group.items()}
        rec = records[lanes[0]]
        if any((r.taddr, r.half_offset) != (rec.taddr, rec.half_offset) for r in records.values()):
            raise EmulationError(f"{site.text!r}: the lanes of warp {warp.index} give different TMEM addresses")
        if len(lanes) != 32:
            raise EmulationError(f"{site.text!r}: every lane of the warp executes tcgen05.ld/st (.sync.aligned); "
                                 f"lanes {sorted(set(range(32)) - set(lanes))} did not")
        atom = _atom(rec.ptx)
        machine = self.cluster.machine
        cells = machine._ldst_cells(machine.ctas[self.rank], atom, warp.index, rec.taddr, rec.half_offset)
        flat = cells[..., 0] * COLUMNS + cells[..., 1]
        for lane in lanes:
            th = group[lane][0]
            self._tmem_access(th, flat[lane].reshape(-1), kind == "tcgen05.st", site)
        if kind == "tcgen05.ld":
            values = machine.ld(atom, warp.index, rec.taddr, self.rank, rec.half_offset)
            for lane in lanes:
                th, s, _, _ = group[lane]
                for slot, v in zip(s.dests, values[lane]):
                    if slot is not None:
                        th.R[slot] = int(v)
            return
        regs = np.array([[group[lane][1].value(group[lane][2][1], r) & _MASK32
                          for r in site.args[-1].strip("{}").split(",")] for lane in lanes], dtype=np.uint64)
        machine.st(atom, warp.index, rec.taddr, regs, self.rank, rec.half_offset)

    def _tmem_access(self, th, cells: np.ndarray, write: bool, site) -> None:
        shadow = self.tmem_shadow
        hit = shadow.first_conflict(cells, th.vc, (th.slot,), write)
        if hit is not None:
            raise RaceError(shadow.explain(hit[0], th, hit[1], hit[2]))
        if write:
            shadow.W[cells], shadow.R1[cells], shadow.R2[cells] = th.stamp, -1, -1
        else:
            shadow.R2[cells] = np.where(shadow.R1[cells] >= 0, shadow.R1[cells], shadow.R2[cells])
            shadow.R1[cells] = th.stamp

    def _alloc(self, th, address: int, ncols: int, cta_group: int) -> None:
        machine = self.cluster.machine
        if cta_group == 2 and len(self.cluster.ctas) != 2:
            raise EmulationError("tcgen05.alloc.cta_group::2 in a cluster that is not a CTA pair")
        pending = self.cluster.pair_allocs
        if cta_group == 2 and pending:
            column = pending.pop(0)
        else:
            try:
                column = machine.alloc(ncols, cta_group)
            except EmulationError as e:
                raise EmulationError(f"tcgen05.alloc of {ncols} columns by {th!r}: {e}") from None
            if cta_group == 2:
                pending.append(column)
        self.shadow.write(th, address, 4)
        self.smem_view[address:address + 4] = column.to_bytes(4, "little")

    def _dealloc(self, th, taddr: int, ncols: int, cta_group: int) -> None:
        pending = self.cluster.pair_deallocs
        if cta_group == 2 and taddr in pending:
            pending.remove(taddr)
            return
        self.cluster.machine.dealloc(taddr, ncols, cta_group)
        if cta_group == 2:
            pending.append(taddr)


def _tc_cp(cta, th, rec, site, R: list) -> None:
    try:
        atom, _ = parse_cp_ptx(rec.ptx)
    except PlanError as e:
        raise EmulationError(str(e)) from None
    op = cta.new_op(th, "tcgen05.cp", site)
    cta.tc_agent(th)
    units = source_units(atom, SmemDescriptor.decode(rec.desc), rec.ptx).reshape(-1)
    lane0, col0 = split_address(rec.taddr)
    lanes = (lane0 + np.array(atom.lane_table, dtype=np.int64)).reshape(-1)
    cells = (lanes[:, None] * COLUMNS + col0 + np.arange(atom.columns)[None, :]).reshape(-1)
    pair = cta.cluster.ctas if atom.cta_group == 2 else [cta]
    for c in pair:
        smem = (units[:, None] - c.cluster.machine.ctas[c.rank].smem_base + np.arange(_UNIT)[None, :]).reshape(-1)
        cta.touch(op, th, c, smem, False, unwritten=True)
        cta.tc_touch_tmem(op, th, c, cells[cells < LANES * COLUMNS], True)
    cta.cluster.machine.cp(rec.ptx, rec.taddr, rec.desc, cta.rank)
    cta.cluster.machine.commit(cta.rank)
    th.tc_ops.append(op)


def _tc_mma(cta, th, rec, site, R: list) -> None:
    machine = cta.cluster.machine
    op = cta.new_op(th, "tcgen05.mma", site)
    cta.tc_agent(th)
    touched = machine.mma_footprint(rec, cta.rank)
    for rank, smem in touched["smem"].items():
        cta.touch(op, th, cta.cluster.ctas[rank], smem, False, unwritten=True)
    for rank, cells in touched["tmem_read"].items():
        cta.tc_touch_tmem(op, th, cta.cluster.ctas[rank], cells, False)
    for rank, cells in touched["tmem_write"].items():
        cta.tc_touch_tmem(op, th, cta.cluster.ctas[rank], cells, True)
    machine.mma(rec, cta.rank)
    th.tc_ops.append(op)


KERNEL_EXECUTORS.update({"tcgen05.cp": (_tc_cp, False), "tcgen05.mma": (_tc_mma, False),
                         "tcgen05.ld": (TensorMixin.tc_collective, True), "tcgen05.st": (TensorMixin.tc_collective, True)})
