"""The result of make_tmem_copy: the instructions each warp issues, the registers they fill, and the fragment."""
from __future__ import annotations

import functools
from typing import ClassVar

import attrs
import numpy as np

from ...arch.convention import Convention
from ...arch.sm90.warp import WARP_THREADS
from ...atoms.tcgen05_ldst import Tcgen05LdStIssue, TmemLoadAtom, TmemStoreAtom, atom_cells
from ...arch.sm100.tcgen05_ldst import LdStOp, register_lower_bound
from ...arch.sm100.tmem import CELL_BITS, LANE_SHIFT, QUADRANT_LANES, TCol, split_address
from ...errors import PlanError
from ...int_tuple import idx2crd
from ...layout import Layout
from ..protocol import Rejection
from ...views import view
from ...tensor.region import index_values
from ...tensor.tmem import TmemTensor
from ...tensor.rmem import RegisterFragment
from .cells import QuadrantBlock, fragment_layout, tensor_cells
from ...typing import IntTuple

__all__ = ["TmemLdStInstruction", "Tcgen05LdStPlan", "TmemCopyPlan", "WarpInstruction"]


@attrs.frozen
class ColumnStage:
    """A run-time index of the TMEM tensor (``acc[:, dynamic("chunk")]``): value ``v`` in ``[0, extent)`` moves
    every instruction ``v * columns`` 32-bit columns; the generated function takes it as ``unsigned <name>``."""

    name: str
    extent: int
    columns: int


@attrs.frozen
class TmemLdStInstruction:
    """One instruction of a warp's list: the atom, its lane base in the quadrant (0 or 16), its first column from
    the warp's first, the first register of the thread's array it fills, and ``.16x32bx2``'s immHalfSplitoff (an
    address offset, ``lane << 16 | column``)."""

    atom: TmemLoadAtom | TmemStoreAtom
    lane: int
    column: int
    register: int
    half_offset: int | None = None

    @property
    def ptx(self) -> str:
        return self.atom.ptx

    @property
    def registers(self) -> range:
        return range(self.register, self.register + self.atom.registers)


@attrs.frozen
class WarpInstruction:
    """An instruction as warp ``warp`` issues it: ``tmem_offset`` from the allocation base (lane << 16 | column)."""

    warp: int
    ptx: str
    tmem_offset: int
    half_offset: int | None
    registers: range


@attrs.frozen(repr=False)
class Tcgen05LdStPlan:
    """A validated TMEM <-> register move by ``warps`` warps: each warp issues ``per_warp`` at its quadrant's lane
    base (and, past four warps, its group's column chunk)."""

    op: LdStOp
    tensor: TmemTensor
    warps: int
    per_warp: tuple[TmemLdStInstruction, ...]
    block: QuadrantBlock
    groups: int
    max_registers: int
    pack: bool
    per_cell: int
    rejected: tuple[Rejection, ...] = attrs.field(default=(), eq=False)
    stages: tuple[ColumnStage, ...] = ()       # the tensor's run-time column indices; ``tensor`` is their value 0

    VARIANT: ClassVar[str] = "tcgen05_ldst"

    def column_shift(self, **values: int) -> int:
        """Columns the run-time indices' values move every instruction (each in range, every one given)."""
        return sum(v * s.columns for s, v in zip(self.stages, index_values(self.stages, values, "tcgen05 plan: ")))

    def at(self, **values: int) -> "Tcgen05LdStPlan":
        """The static plan of one value of each run-time index: every instruction moved by its columns."""
        shift = self.column_shift(**values)
        elements = shift * CELL_BITS // self.tensor.bits
        return attrs.evolve(self, block=attrs.evolve(self.block, column=self.block.column + shift), stages=(),
                            tensor=attrs.evolve(self.tensor, offset=self.tensor.offset + elements * TCol))

    @property
    def fragment_tensor(self) -> RegisterFragment:
        """The register side of the copy: the threads of ``warps`` warps in the layout ``fragment`` names, over the
        tensor's shape (``fragment_coords`` reads it); no layout where the map is not one (read ``table``)."""
        layout = fragment_layout(self.table)
        return RegisterFragment(self.tensor.dtype, 32 * self.warps, layout,
                                None if layout is None else self.tensor.shape)

    @property
    def src(self) -> TmemTensor | RegisterFragment:
        """The TMEM tensor for ``ld``, the registers for ``st``."""
        return self.tensor if self.op == "ld" else self.fragment_tensor

    @property
    def dst(self) -> TmemTensor | RegisterFragment:
        """The registers for ``ld``, the TMEM tensor for ``st``."""
        return self.fragment_tensor if self.op == "ld" else self.tensor

    @property
    def registers(self) -> int:
        """32-bit registers per thread."""
        return sum(i.atom.registers for i in self.per_warp)

    @property
    def values_per_register(self) -> int:
        return 2 if self.pack else self.per_cell

    @property
    def chunk(self) -> int:
        """Columns between the column chunks of successive warpgroups."""
        return self.block.width // self.groups

    @property
    def lower_bound(self) -> int:
        """Fewest instructions any shape mix could use under the cap (each moves a power of two registers)."""
        return register_lower_bound(self.registers, self.max_registers)

    def warp_base(self, warp: int) -> int:
        """Warp ``warp``'s address offset: its quadrant's first lane and its group's first column."""
        q, g = warp % 4, (warp // 4) % self.groups
        return (QUADRANT_LANES * q << LANE_SHIFT) + self.block.column + g * self.chunk

    @property
    def instructions(self) -> tuple:
        """Every warp's instructions: ``WarpInstruction(warp, ptx, tmem_offset, half_offset, registers)``."""
        return tuple(WarpInstruction(w, i.ptx, self.warp_base(w) + (i.lane << LANE_SHIFT) + i.column, i.half_offset,
                                     i.registers) for w in range(self.warps) for i in self.per_warp)

    def stream(self, tmem_base: int, warp: int, **values: int) -> list[Tcgen05LdStIssue]:
        """``Tcgen05LdStIssue(ptx, taddr, half_offset, registers)`` per instruction warp ``warp`` issues for the
        allocation at ``tmem_base`` and the run-time indices' values (what the PTX interpreter reads back from
        compiled code)."""
        shift = self.column_shift(**values)
        return [Tcgen05LdStIssue(i.ptx, tmem_base + i.tmem_offset + shift, i.half_offset, len(i.registers))
                for i in self.instructions if i.warp == warp]

    def verify(self, seed: int = 0) -> None:
        """Run the plan in the emulator (a store, or a load of a tensor first written through the layout) and compare
        every register and cell with what the layout alone says; raises ``EmulationError`` at the first mismatch."""
        view("verify", self, seed=seed)

    @property
    def table(self) -> np.ndarray:
        """``(32 * warps, values)``: the tensor coordinate (index) register value v of thread t holds."""
        return _table(self)

    @property
    def fragment(self) -> Layout:
        """The ``(thread, value) -> coordinate index`` layout (CuTe's thread-value convention): value ``v`` of
        thread ``t`` (``32 * warp + lane``) is register ``v // values_per_register``, its ``v %
        values_per_register``-th value from the low bits; ``idx2crd(index, tensor.shape)`` is the coordinate."""
        layout = fragment_layout(self.table)
        if layout is None:
            raise PlanError("the plan's (thread, value) -> coordinate map is not a layout; read plan.table")
        return layout

    def coordinate(self, thread: int, value: int) -> IntTuple:
        """The tensor coordinate value ``value`` of ``thread`` holds."""
        return idx2crd(int(self.table[thread, value]), self.tensor.shape)

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: every lane of the plan's warps (``tcgen05.ld`` / ``st`` are
        ``.sync.aligned``), no shared operands."""
        return Convention("warp" if self.warps == 1 else "warps", WARP_THREADS * self.warps, "none")

    def cuda(self, name: str = "pycute_tcgen05_ld", wait: bool = True) -> str:
        """A ``__device__`` function every thread of the warps calls: ``name(unsigned tmem_base, unsigned
        (&regs)[registers])`` (``const`` for st), each warp at its own lane base, with ``tcgen05.wait::ld`` /
        ``wait::st`` unless ``wait=False``."""
        return view("cuda", self, name, wait=wait)

    def explain(self) -> str:
        b, n = self.block, len(self.per_warp)
        lines = [f"tcgen05.{self.op} plan: {self.tensor!r}",
                 f"  warps       {self.warps} (warp w: lanes 32*(w%4)..+31"
                 + (f", column chunk (w//4) x {self.chunk}" if self.groups > 1 else "") + ")",
                 f"  block       {b.lanes} lanes from quadrant lane {b.lane} x {b.width} columns from column "
                 f"{b.column}, {self.per_cell} value(s) per cell" + (", .pack::16b" if self.pack else ""),
                 f"  chosen      {self.per_warp[0].atom.shape}: {n} instruction{'s' if n != 1 else ''} per warp, "
                 f"{self.registers} registers per thread (cap {self.max_registers}); lower bound {self.lower_bound}"]
        if self.registers > 128:
            lines.append(f"  note        {self.registers} registers per thread are live at once; plan column slices "
                         f"(tensor[:, 0:32], ...) to keep fewer")
        if self.rejected:
            lines.append("  other shapes:")
            lines += [f"    {name:<9} {why}" for name, why in self.rejected]
        lines.append("  per warp (lane base, column, registers):")
        for i in self.per_warp:
            half = f", half at +{i.half_offset:#x}" if i.half_offset is not None else ""
            lines.append(f"    {i.ptx:<48} lane +{i.lane:<2} col +{i.column:<3} r{i.registers.start}.."
                         f"{i.registers.stop - 1}{half}")
        lines += [f"  run-time    {s.name} in [0, {s.extent}): +{s.columns} columns per unit (every value planned "
                  f"alike, the last inside the allocation)" for s in self.stages]
        return "\n".join(lines)

    def __repr__(self) -> str:
        atoms = ", ".join(f"{i.atom.shape}.x{i.atom.num}" for i in self.per_warp)
        return (f"Tcgen05LdStPlan({self.op}, {self.warps} warps x [{atoms}], {self.registers} registers per thread"
                f"{', pack' if self.pack else ''})")


@functools.lru_cache(maxsize=256)
def _table(plan: Tcgen05LdStPlan) -> np.ndarray:
    lookup = tensor_cells(plan.tensor).lookup()
    vpr = plan.values_per_register
    table = np.zeros((32 * plan.warps, plan.registers * vpr), dtype=np.int64)
    upper = np.arange(32) >= 16
    for w in range(plan.warps):
        base_lane, base_col = split_address(plan.warp_base(w))
        for inst in plan.per_warp:
            offs = atom_cells(inst.atom)
            lanes = base_lane + inst.lane + offs[..., 0]
            cols = base_col + inst.column + offs[..., 1]
            if inst.half_offset is not None:
                dl, dc = split_address(inst.half_offset)
                lanes = lanes + np.where(upper, dl, 0)[:, None, None]
                cols = cols + np.where(upper, dc, 0)[:, None, None]
            held = lookup[lanes, cols][..., :1] if plan.pack else lookup[lanes, cols]
            values = held.reshape(32, inst.atom.registers * vpr)
            if (values < 0).any():
                t, v = np.argwhere(values < 0)[0]
                raise PlanError(f"{inst.ptx}: warp {w} thread {t} register {inst.register + v // vpr} reads a cell "
                                f"outside the tensor")
            table[32 * w:32 * w + 32, inst.register * vpr:(inst.register + inst.atom.registers) * vpr] = values
    return table


#: The name this record had before the copy family had other plans; kept so that code written against it works.
TmemCopyPlan = Tcgen05LdStPlan
