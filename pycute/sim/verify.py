"""Emulate a plan (or the instruction stream its compiled code issues) and compare, bit for bit, with what the
tensors' layouts alone say the copy must produce (``copy.reference.expected_tmem`` for tcgen05.cp, the fragment
against the TMEM layout for tcgen05.ld/st). ``verify(plan)`` serves every variant through ``VERIFIERS``."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..arch.sm100.tmem import COLUMNS, LANES
from ..copy.tcgen05_cp.plan import Tcgen05CpPlan
from ..copy.tcgen05_ldst.plan import Tcgen05LdStPlan
from ..errors import EmulationError
from ..copy.tcgen05_cp.reference import expected_tmem, fill_pattern
from ..tensor.values import smem_bytes_needed, layout_values
from ..views import provides
from ..atoms.tcgen05_ldst import TmemLoadAtom
from ..copy.protocol import Plan
from .emulator import Sm100Emulator
from ..copy.tma.plan import TmaPlan
from .verify_tma import verify_tma
from .verify_tma_modes import verify_gather4, verify_im2col, verify_im2col_w
from ..copy.tma.im2col import Im2colPlan
from ..copy.tma.modes100 import Gather4Plan, Im2colWPlan
from .verify_flat import verify_bulk, verify_cp_async, verify_dsmem
from .verify_mma import verify_mma
from .verify_wgmma import verify_wgmma
from ..mma.plan import MmaPlan
from ..mma.wgmma_plan import WgmmaPlan
from ..copy.bulk.plan import BulkPlan
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.dsmem.plan import DsmemPlan
from ..copy.smem_ldst.plan import SmemCopyPlan
from .verify_smem import verify_epilogue, verify_smem_copy
from ..copy.smem_ldst.epilogue import EpiloguePlan

__all__ = ["verify", "verify_plan", "verify_tmem_copy", "verify_tma", "verify_cp_async", "verify_bulk", "verify_dsmem", "verify_mma",
           "verify_wgmma", "verify_smem_copy", "run_tmem_copy", "VERIFIERS"]


def verify_plan(plan: Tcgen05CpPlan, seed: int = 0, smem_base: int = 0,
                stream: Callable[[int, int], list[tuple[str, int, int]]] | None = None, **values: int) -> None:
    """Emulate ``plan`` (or an explicit instruction ``stream``) and compare every CTA's TMEM with
    ``expected_tmem``; raises EmulationError with the first differing cells. A plan with run-time coordinates is
    verified at the given values (``verify_plan(plan, stage=2)``)."""
    if not isinstance(plan, Tcgen05CpPlan):
        raise TypeError(f"verify_plan: expected a Tcgen05CpPlan (make_tiled_copy), got {type(plan).__name__}")
    plan = plan.at(**values)
    src, dst = plan.src, plan.dst
    ctas = plan.cta_group
    nbytes = smem_bytes_needed(src)
    marker = 0xA5A5A5A5
    emu = Sm100Emulator(smem_bytes=nbytes, smem_base=smem_base, ctas=ctas, fill_tmem=marker)
    images = []
    for c in range(ctas):
        img = fill_pattern(nbytes, seed * 2 + c)
        emu.write_smem(smem_base, img, cta=c)
        images.append(img)
    base_col = emu.alloc(dst.alloc_columns, cta_group=ctas)
    emu.run(plan.stream(smem_base, base_col) if stream is None else stream(smem_base, base_col))
    for c in range(ctas):
        want = expected_tmem(src, dst, images[c], np.full((LANES, COLUMNS), marker, dtype=np.uint32), base_col,
                             plan.decompress)
        got = emu.tmem_image(c)
        if not np.array_equal(got, want):
            diff = np.argwhere(got != want)[:5]
            cells = ", ".join(f"(lane {a}, col {b}): got {got[a, b]:#010x} want {want[a, b]:#010x}" for a, b in diff)
            raise EmulationError(f"CTA {c}: {int((got != want).sum())} TMEM cells differ from what the layouts "
                                 f"say the copy must produce: {cells}")


def _element_cells(tensor):
    """Per coordinate and quadrant: the (lane, column, bit shift) holding it in that quadrant's replica."""
    bits = tensor.bits
    lanes = tensor.lane_offset + layout_values(tensor.layout, "TLane")
    cols = tensor.col_offset + layout_values(tensor.layout, "TCol")
    reps = [0] if tensor.replica is None else layout_values(tensor.replica, "TLane").tolist()
    col32, shift = cols * bits // 32, (cols * bits) % 32
    by_quadrant: dict[int, dict[int, tuple[int, int, int]]] = {}
    for rep in reps:
        for i, lane in enumerate((lanes + rep).tolist()):
            by_quadrant.setdefault(lane // 32, {})[i] = (lane, int(col32[i]), int(shift[i]))
    return by_quadrant


def run_tmem_copy(emu: Sm100Emulator, plan: Tcgen05LdStPlan, tmem_base: int, registers: np.ndarray | None = None,
                  cta: int = 0) -> np.ndarray | None:
    """Issue every warp's instructions of a ``Tcgen05LdStPlan`` in ``emu``: an ld returns ``(32 * warps,
    registers)`` uint32; an st stores ``registers`` (the same shape)."""
    out = np.zeros((32 * plan.warps, plan.registers), dtype=np.uint32)
    for k, inst in enumerate(plan.instructions):
        atom = plan.per_warp[k % len(plan.per_warp)].atom
        rows, cols = slice(32 * inst.warp, 32 * inst.warp + 32), slice(inst.registers.start, inst.registers.stop)
        if isinstance(atom, TmemLoadAtom):
            out[rows, cols] = emu.ld(atom, inst.warp, tmem_base + inst.tmem_offset, cta, inst.half_offset)
        else:
            emu.st(atom, inst.warp, tmem_base + inst.tmem_offset, np.asarray(registers)[rows, cols], cta,
                   inst.half_offset)
    return out if plan.op == "ld" else None


def verify_tmem_copy(plan: Tcgen05LdStPlan, seed: int = 0) -> None:
    """Emulate a ``Tcgen05LdStPlan`` and check every register value against the TMEM tensor through the plan's
    fragment: for ld, each value is the element the tensor's layout puts at its coordinate; for st, each element of
    the tensor receives its register value and no other cell changes. EmulationError names the first difference."""
    if not isinstance(plan, Tcgen05LdStPlan):
        raise TypeError(f"verify_tmem_copy: expected a Tcgen05LdStPlan (make_tmem_copy), got {type(plan).__name__}")
    if plan.stages:                     # the first and the last value of each run-time column index
        for values in ({s.name: 0 for s in plan.stages}, {s.name: s.extent - 1 for s in plan.stages}):
            verify_tmem_copy(plan.at(**values), seed)
        return
    rng = np.random.default_rng(seed)
    emu = Sm100Emulator(smem_bytes=0, fill_tmem=0)
    emu.alloc(COLUMNS)
    emu.ctas[0].tmem[:] = rng.integers(0, 1 << 32, (LANES, COLUMNS), dtype=np.uint64).astype(np.uint32)
    before = emu.tmem_image()
    cells = _element_cells(plan.tensor)
    table, vpr = plan.table, plan.values_per_register
    vbits = 16 if plan.pack else (plan.tensor.bits if plan.per_cell > 1 else 32 if plan.tensor.bits == 32 else 16)
    vmask = (1 << min(vbits, plan.tensor.bits)) - 1
    registers = rng.integers(0, 1 << 32, (32 * plan.warps, plan.registers), dtype=np.uint64).astype(np.uint32)
    loaded = run_tmem_copy(emu, plan, 0, registers)
    registers = registers if loaded is None else loaded
    regs_of = {w: registers[32 * w:32 * w + 32] for w in range(plan.warps)}
    after = emu.tmem_image()
    touched = np.zeros((LANES, COLUMNS), dtype=bool)
    for w, regs in regs_of.items():
        for t in range(32):
            for v in range(table.shape[1]):
                lane, col, shift = cells[w % 4][int(table[32 * w + t, v])]
                got = (int(regs[t, v // vpr]) >> (vbits * (v % vpr))) & vmask
                source = before if plan.op == "ld" else after
                want = (int(source[lane, col]) >> shift) & vmask
                if got != want:
                    raise EmulationError(f"tcgen05.{plan.op}: warp {w} thread {t} value {v} (coordinate "
                                         f"{plan.coordinate(32 * w + t, v)}) is {got:#x} in the registers, "
                                         f"{want:#x} at lane {lane} column {col} bit {shift}")
                touched[lane, col] = True
    if plan.op == "st" and np.any((after != before) & ~touched):
        lane, col = np.argwhere((after != before) & ~touched)[0]
        raise EmulationError(f"tcgen05.st wrote lane {lane} column {col}, outside the tensor")


#: Plan variant -> its check in the emulator.
VERIFIERS: dict[str, Callable[..., None]] = {Tcgen05CpPlan.VARIANT: verify_plan, Tcgen05LdStPlan.VARIANT: verify_tmem_copy,
                                             TmaPlan.VARIANT: verify_tma, CpAsyncPlan.VARIANT: verify_cp_async,
                                             BulkPlan.VARIANT: verify_bulk, DsmemPlan.VARIANT: verify_dsmem,
                                             MmaPlan.VARIANT: verify_mma, WgmmaPlan.VARIANT: verify_wgmma,
                                             SmemCopyPlan.VARIANT: verify_smem_copy,
                                             EpiloguePlan.VARIANT: verify_epilogue, Im2colPlan.VARIANT: verify_im2col,
                                             Im2colWPlan.VARIANT: verify_im2col_w, Gather4Plan.VARIANT: verify_gather4}


def verify(plan: Plan, seed: int = 0, **values: int) -> None:
    """Check any copy plan in the emulator against what its tensors' layouts alone say (``VERIFIERS`` picks the
    check by the plan's variant); raises EmulationError naming the first difference."""
    check = VERIFIERS.get(str(getattr(plan, "VARIANT", "")))
    if check is None:
        raise TypeError(f"verify: expected a copy plan (make_tiled_copy, make_tmem_copy, copy_async), got "
                        f"{type(plan).__name__}")
    check(plan, seed, **values)


provides("verify", Tcgen05CpPlan)(verify_plan)
provides("verify", Tcgen05LdStPlan)(verify_tmem_copy)
provides("verify", TmaPlan)(verify_tma)
provides("verify", Im2colPlan)(verify_im2col)
provides("verify", Im2colWPlan)(verify_im2col_w)
provides("verify", Gather4Plan)(verify_gather4)
provides("verify", CpAsyncPlan)(verify_cp_async)
provides("verify", BulkPlan)(verify_bulk)
provides("verify", DsmemPlan)(verify_dsmem)
provides("verify", MmaPlan)(verify_mma)
provides("verify", WgmmaPlan)(verify_wgmma)
provides("verify", SmemCopyPlan)(verify_smem_copy)
provides("verify", EpiloguePlan)(verify_epilogue)
