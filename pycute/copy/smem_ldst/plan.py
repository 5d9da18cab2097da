"""The result of make_smem_copy: which instruction moves which of every thread's registers, the shared address each
thread gives, the conversion that packs the registers, and the wavefronts the shared-memory pipe takes."""
from __future__ import annotations

from typing import ClassVar, Literal

import attrs
import numpy as np

from ...arch.sm80.cvt import PackConversion
from ...atoms.smem_ldst import SmemIssue, SmemMatrixAtom
from ...errors import PlanError
from ...int_tuple import as_int, idx2crd
from ...tensor.rmem import RegisterFragment
from ...tensor.smem import SmemTensor
from ...tensor.stages import SmemStage, stage_offset
from ...typing import IntTuple
from ...views import view
from ..protocol import Rejection
from .address import AddressPlan, address_plan, byte_swizzle
from .banks import ideal_wavefronts
from .forms import Move

__all__ = ["SmemInstruction", "SmemCopyPlan", "Candidate"]


@attrs.frozen
class SmemInstruction:
    """One instruction every thread issues: its PTX and the values each of its registers holds (byte order, lowest
    first; for a store with a conversion, the cvt packs them), and its wavefronts summed over the warps."""

    ptx: str
    words: tuple[tuple[int, ...], ...]
    wavefronts: int


@attrs.frozen
class Candidate:
    """A form the planner weighed: instructions per thread and wavefronts (all warps), or why it cannot move the
    fragment."""

    name: str
    instructions: int | None
    wavefronts: int | None
    reason: str = ""
    bound: int | None = None            # the fewest wavefronts any plan of the form takes (<= wavefronts)


@attrs.frozen(repr=False, eq=False)
class SmemCopyPlan:
    """A validated register <-> shared-memory copy by ``fragment.threads`` threads: ``op`` ``"st"`` writes the
    fragment into ``smem`` (converting with ``conversion`` when the types differ), ``"ld"`` reads it back."""

    op: Literal["st", "ld"]
    fragment: RegisterFragment
    smem: SmemTensor                             # the tile at value 0 of its run-time indices
    conversion: PackConversion | None
    moves: tuple[Move, ...]
    table: np.ndarray = attrs.field(repr=False)  # (threads, values): the tile coordinate index each value is
    candidates: tuple[Candidate, ...] = ()
    stages: tuple[SmemStage, ...] = ()
    rejected: tuple[Rejection, ...] = ()
    covers: bool = True                          # every tile element is some thread's value
    source: SmemTensor | None = None             # an unpacking load's packed tile (``smem`` is its 8-bit view)
    pinned: str | None = None                    # the form the caller pinned (make_smem_copy's ``form``)

    VARIANT: ClassVar[str] = "smem_ldst"

    @property
    def src(self) -> RegisterFragment | SmemTensor:
        return self.fragment if self.op == "st" else (self.source or self.smem)

    @property
    def dst(self) -> RegisterFragment | SmemTensor:
        return self.smem if self.op == "st" else self.fragment

    @property
    def threads(self) -> int:
        return self.fragment.threads

    @property
    def warps(self) -> int:
        return self.fragment.threads // 32

    @property
    def values(self) -> int:
        """Values each thread holds."""
        return int(self.table.shape[1])

    @property
    def elem_bytes(self) -> int:
        return self.smem.bits // 8

    @property
    def instructions(self) -> tuple[SmemInstruction, ...]:
        return tuple(SmemInstruction(m.atom.ptx, m.words, m.wavefronts) for m in self.moves)

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets that have every instruction of the plan (and its conversion)."""
        sets = [set(m.atom.targets) for m in self.moves] + ([set(self.conversion.targets)] if self.conversion else [])
        first = self.moves[0].atom.targets
        return tuple(t for t in first if all(t in s for s in sets))

    @property
    def lower_bound(self) -> int:
        """Fewest instructions per thread any plan could use: its bytes in 16-byte moves."""
        return -(-self.values * self.elem_bytes // 16)

    @property
    def wavefronts(self) -> int:
        """Shared-memory wavefronts of the whole copy, every warp's instructions summed (what ncu counts)."""
        return sum(m.wavefronts for m in self.moves)

    @property
    def ideal_wavefronts(self) -> int:
        """The wavefronts if every instruction kept every bank busy: its bytes over 128, per warp."""
        return self.warps * sum(ideal_wavefronts(32 * m.atom.bytes_per_thread) for m in self.moves)

    @property
    def min_wavefronts(self) -> int:
        """A lower bound on the wavefronts of every plan of the forms weighed, whichever registers, form and
        matrices per instruction it takes: the fewest the search proved any reaches (the plan's, unless a form
        was pinned), or where the pairing search stopped, its bound."""
        return min(c.bound for c in self.candidates if c.bound is not None)

    def coordinate(self, thread: int, value: int) -> IntTuple:
        """The tile coordinate value ``value`` of ``thread`` holds."""
        return idx2crd(int(self.table[thread, value]), self.smem.layout.shape)

    def address_plan(self) -> AddressPlan:
        """The per-thread bases and per-instruction offsets the generated code computes."""
        return address_plan([m.addresses for m in self.moves], byte_swizzle(self.smem), self.smem.base_align,
                            f"{self.op}matrix/{self.op}.shared plan")

    def stream(self, smem_base: int, thread: int = 0, **values: int) -> list[SmemIssue]:
        """``SmemIssue(ptx, address)`` per instruction thread ``thread`` issues for the buffer at shared address
        ``smem_base`` and the run-time indices' values (what the PTX interpreter reads back)."""
        base = as_int(smem_base, "stream: smem_base")
        if base % self.smem.base_align:
            raise PlanError(f"stream: smem_base {base:#x} is not aligned to the {self.smem.base_align} B the plan "
                            f"assumes")
        thread = as_int(thread, "stream: thread")
        if not 0 <= thread < self.threads:
            raise PlanError(f"stream: thread {thread} is not one of the plan's {self.threads}")
        shift = base + stage_offset(self.stages, values, "smem plan: ")
        return [SmemIssue(m.atom.ptx, shift + int(m.addresses[thread])) for m in self.moves]

    def warp_addresses(self, move: int, warp: int, smem_base: int = 0, **values: int) -> np.ndarray:
        """``(32,)``: the addresses the lanes of ``warp`` give for instruction ``move``."""
        shift = smem_base + stage_offset(self.stages, values, "smem plan: ")
        return shift + self.moves[move].addresses[32 * warp:32 * warp + 32]

    def cuda(self, name: str = "pycute_smem_copy") -> str:
        """A ``__device__`` function every thread of the fragment calls: ``name(unsigned smem, unsigned thread,
        <registers>[, unsigned stage...])``; see the comment it starts with."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate every warp's instructions (and the conversion) and compare with the two layouts alone."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        from .explain import explain_plan
        return explain_plan(self)

    def __repr__(self) -> str:
        counts: dict[str, int] = {}
        for m in self.moves:
            counts[m.atom.ptx] = counts.get(m.atom.ptx, 0) + 1
        what = " + ".join(f"{n} x {p}" for p, n in counts.items())
        conv = f", {self.conversion.ptx}" if self.conversion else ""
        return (f"SmemCopyPlan({self.op}, {self.threads} threads: {what} per thread{conv}, {self.wavefronts} "
                f"wavefronts (ideal {self.ideal_wavefronts}))")


def is_matrix(move: Move) -> bool:
    return isinstance(move.atom, SmemMatrixAtom)
