"""The result of make_mma: one k-block of ``tcgen05.mma`` (A and B in shared memory, D in TMEM) as its
instructions, each with its operand descriptors' k-advance, its instruction descriptor (the SF ids of its
k-block) and its SF columns; the accumulate flag of the first comes from the caller."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ..arch.convention import Convention
from ..atoms.mma import MmaAtom, MmaIssue
from ..errors import PlanError
from ..int_tuple import as_int
from ..tensor.tmem import TmemTensor
from ..views import view
from .instr import InstrDescriptor
from .operand import UmmaDescriptor
from .scale import ScaleFactorTensor
from .tmem_operand import TmemOperand

__all__ = ["MmaInstruction", "MmaPlan"]


@attrs.frozen
class MmaInstruction:
    """K-block ``k``: A's and B's descriptor start advanced by ``a_offset`` / ``b_offset`` bytes (an A in TMEM:
    ``a_offset`` columns), the instruction descriptor ``idesc`` (its SF ids), and the SFs' first columns from each
    SF tensor's base (block-scaled)."""

    k: int
    a_offset: int
    b_offset: int
    idesc: int
    sfa_column: int | None = None
    sfb_column: int | None = None


@attrs.frozen(repr=False)
class MmaPlan:
    """``D (+)= A B^T`` over the k-blocks of one tile: ``instructions`` in K order, D at ``d_column`` columns from
    the TMEM allocation's base."""

    atom: MmaAtom
    d: TmemTensor
    a: UmmaDescriptor | TmemOperand
    b: UmmaDescriptor
    idesc: InstrDescriptor
    instructions: tuple[MmaInstruction, ...]
    d_column: int
    sfa: ScaleFactorTensor | None = None
    sfb: ScaleFactorTensor | None = None

    VARIANT: ClassVar[str] = "mma"

    @property
    def src(self) -> tuple[UmmaDescriptor | TmemOperand, UmmaDescriptor]:
        return self.a, self.b

    @property
    def dst(self) -> TmemTensor:
        return self.d

    @property
    def rejected(self) -> tuple:
        return ()

    @property
    def lower_bound(self) -> int:
        """One MMA per k-block: K / (32 bytes of K)."""
        return len(self.instructions)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, N, K) of the MMA (a pair's: twice each CTA's rows of A and of B)."""
        return self.a.mn * self.atom.cta_group, self.b.mn * self.atom.cta_group, self.a.k

    def _values(self, desc: UmmaDescriptor, values: dict) -> dict:
        return {s.name: values[s.name] for s in desc.stages if s.name in values}

    def stream(self, smem_a: int | None, smem_b: int, tmem_base: int, tmem_sfa: int = 0, tmem_sfb: int = 0,
               accumulate: bool = False, **values: int) -> list[MmaIssue]:
        """``MmaIssue`` per k-block for A's and B's buffers at shared addresses ``smem_a`` / ``smem_b`` (``smem_a``
        None for an A in TMEM: it is at its column of the allocation), the TMEM allocation at ``tmem_base``, the SF
        tensors at ``tmem_sfa`` / ``tmem_sfb``; the first accumulates into D when ``accumulate`` (the later ones
        always do)."""
        tmem_base = as_int(tmem_base, "stream: tmem_base")
        tmem_a = isinstance(self.a, TmemOperand)
        if tmem_a != (smem_a is None):
            raise PlanError(f"stream: smem_a is {'None for A in TMEM' if tmem_a else 'A buffer address'}, got "
                            f"{smem_a!r}")
        out = []
        for inst in self.instructions:
            if isinstance(self.a, TmemOperand):
                a = tmem_base + self.a.column + inst.a_offset
            else:
                a = self.a.encode(as_int(smem_a, "stream: smem_a"), inst.k, **self._values(self.a, values))
            b = self.b.encode(smem_b, inst.k, **self._values(self.b, values))
            sfa = None if inst.sfa_column is None else tmem_sfa + inst.sfa_column
            sfb = None if inst.sfb_column is None else tmem_sfb + inst.sfb_column
            out.append(MmaIssue(self.atom.ptx, tmem_base + self.d_column, a, b, inst.idesc,
                                bool(accumulate) or inst.k > 0, sfa, sfb, tmem_a))
        return out

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: one elected thread (of the even CTA of a pair)."""
        return Convention("elected", 1)

    def cuda(self, name: str = "pycute_mma") -> str:
        """A ``__device__`` function one (elected) thread calls: ``name([unsigned smem_a,] unsigned smem_b,
        unsigned tmem_base, [unsigned tmem_sfa, unsigned tmem_sfb,] unsigned accumulate, <stages>)`` (no ``smem_a``
        for an A in TMEM); commit with ``pycute_tcgen05_commit`` after it."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the MMAs on operands whose products and sums are exact and compare D with the reference MMA of
        the layouts' elements, bit for bit."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m, n, k = self.shape
        lines = [f"MMA plan: D {self.d!r} (+)= A B^T, M {m} N {n} K {k}",
                 f"  instruction {self.atom.ptx}: {len(self.instructions)} per tile (one per {self.a.k_per_mma}-element "
                 f"k-block)",
                 f"  A           {self.a!r}", f"  B           {self.b!r}", f"  idesc       {self.idesc!r}",
                 f"  D           columns +{self.d_column} of the allocation; the first MMA accumulates when asked"]
        if self.atom.cta_group == 2:
            lines.append(f"  pair        each CTA holds {self.a.mn} of A's {m} rows, {self.b.mn} of B's {n} (the even CTA's "
                         f"first) and D's rows of its A; the even CTA issues")
        for name, sf in (("SFA", self.sfa), ("SFB", self.sfb)):
            if sf is not None:
                lines.append(f"  {name}         {sf!r}")
        unit = " columns" if isinstance(self.a, TmemOperand) else " B"
        lines += [f"    k-block {i.k}: A +{i.a_offset}{unit}, B +{i.b_offset} B, idesc {i.idesc:#010x}"
                  + (f", SFA col +{i.sfa_column}, SFB col +{i.sfb_column}" if i.sfa_column is not None else "")
                  for i in self.instructions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        m, n, k = self.shape
        return f"MmaPlan({self.atom.ptx}, M{m} N{n} K{k}, {len(self.instructions)} instructions)"
