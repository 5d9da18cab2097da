"""What each instruction of a plan touches, as the emulator models it: the TMEM cells it writes (with the replica
each cell belongs to) and the shared-memory units it reads. The pictures draw these; ``verify_plan`` and the
picture tests check them against what the emulator writes."""
from __future__ import annotations

import attrs
import numpy as np

from ..arch.sm100.descriptor import SmemDescriptor
from ..arch.sm100.tmem import split_address
from ..atoms.tcgen05_cp import parse_cp_ptx
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from .executors.tcgen05_cp import source_units

__all__ = ["InstructionCells", "plan_footprint"]


@attrs.frozen
class InstructionCells:
    """Instruction ``index`` of a plan on CTA ``cta``: it writes columns ``col0 .. col0 + columns - 1`` of each lane
    in ``lanes`` (``replica[i]`` is the replica lane ``lanes[i]`` belongs to, 0 for the copied rows themselves) and
    reads the 16-byte shared-memory units at ``smem_units`` (byte offsets from the buffer base)."""

    index: int
    cta: int
    lanes: tuple[int, ...]
    replica: tuple[int, ...]
    col0: int
    columns: int
    smem_units: tuple[int, ...]

    def cells(self) -> set:
        """Every ``(lane, column)`` written."""
        return {(lane, c) for lane in self.lanes for c in range(self.col0, self.col0 + self.columns)}


def plan_footprint(plan: Tcgen05CpPlan) -> tuple:
    """``InstructionCells`` for every instruction of ``plan`` and every CTA it writes (TMEM columns from the
    allocation base, shared memory from the buffer base)."""
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"plan_footprint: expected a Tcgen05CpPlan, got {type(plan).__name__}")
    out = []
    for k, (ptx, taddr, desc) in enumerate(plan.stream(0, 0)):
        atom, _ = parse_cp_ptx(ptx)
        lane0, col0 = split_address(taddr)
        table = np.array(atom.lane_table, dtype=np.int64)             # rows x replicas
        lanes = (lane0 + table).reshape(-1)
        replica = np.broadcast_to(np.arange(table.shape[1]), table.shape).reshape(-1)
        units = source_units(atom, SmemDescriptor.decode(desc), ptx).reshape(-1)
        for cta in range(atom.cta_group):
            out.append(InstructionCells(k, cta, tuple(int(x) for x in lanes), tuple(int(x) for x in replica),
                                        col0, atom.columns, tuple(int(x) for x in units)))
    return tuple(out)
