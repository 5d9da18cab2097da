"""The result of make_mma for Hopper: one ``wgmma.mma_async`` per k-step of a warpgroup's 64-row slice, each with
A's and B's descriptor start advance (or the 4 registers of an A in registers it reads); D is the accumulator's
register fragment. Every warpgroup of the tile issues the same instructions on its own slice of A and D."""
from __future__ import annotations

from typing import ClassVar

import attrs

from ..arch.sm90.wgmma import A_REGISTERS, WGMMA_M
from ..atoms.wgmma import WgmmaAtom, WgmmaIssue
from ..errors import PlanError
from ..int_tuple import as_int
from ..layout import Layout
from ..tensor.rmem import RegisterFragment
from ..views import view
from .gmma_operand import GmmaDescriptor
from .wgmma_fragment import fragment_shape, values_per_register

__all__ = ["WgmmaInstruction", "WgmmaPlan"]


@attrs.frozen
class WgmmaInstruction:
    """K-step ``k``: A's and B's descriptor starts advanced by ``a_offset`` / ``b_offset`` bytes (``a_offset`` None
    for an A in registers, whose ``a_registers`` it reads instead)."""

    k: int
    a_offset: int | None
    b_offset: int
    a_registers: tuple[int, ...] = ()


@attrs.frozen(repr=False)
class WgmmaPlan:
    """``D (+)= A B^T`` over the k-steps of one M x N x K tile: ``instructions`` in K order, issued by each of the
    ``M / 64`` warpgroups on its rows (A's slice ``a_rows[g]`` bytes into A's tile)."""

    atom: WgmmaAtom
    d: RegisterFragment
    a: GmmaDescriptor | RegisterFragment
    b: GmmaDescriptor
    instructions: tuple[WgmmaInstruction, ...]
    a_rows: tuple[int, ...] = ()

    VARIANT: ClassVar[str] = "wgmma"

    @property
    def src(self) -> tuple[GmmaDescriptor | RegisterFragment, GmmaDescriptor]:
        return self.a, self.b

    @property
    def dst(self) -> RegisterFragment:
        return self.d

    @property
    def rejected(self) -> tuple:
        return ()

    @property
    def lower_bound(self) -> int:
        """One instruction per k-step (32 bytes of K) per warpgroup: K / k."""
        return self.shape[2] // self.atom.k

    @property
    def shape(self) -> tuple[int, int, int]:
        """(M, N, K) of the tile."""
        m, n = fragment_shape(self.d)
        return m, n, self.b.k

    @property
    def warpgroups(self) -> int:
        return self.shape[0] // WGMMA_M

    @property
    def fragment(self) -> Layout:
        """D's ``(thread, value) -> row + M * col`` layout (``wgmma_accumulator``), for the epilogue planners."""
        assert self.d.layout is not None
        return self.d.layout

    @property
    def fragment_tensor(self) -> RegisterFragment:
        """D, the register fragment the plan writes (``fragment_coords`` reads it)."""
        return self.d

    @property
    def a_in_registers(self) -> bool:
        return isinstance(self.a, RegisterFragment)

    @property
    def d_registers(self) -> int:
        """32-bit registers of D per thread (N / 2 for f32 / s32, N / 4 for f16)."""
        return self.shape[1] // 2 // values_per_register(self.d.dtype.bits)

    @property
    def a_register_count(self) -> int:
        """32-bit registers of an A in registers per thread (4 per k-step), else 0."""
        return A_REGISTERS * len(self.instructions) if self.a_in_registers else 0

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The shared operands' run-time indices, as the generated function takes them (sorted)."""
        descs = [self.b] + ([] if isinstance(self.a, RegisterFragment) else [self.a])
        return tuple(sorted({s.name for d in descs for s in d.stages}))

    def _values(self, desc: GmmaDescriptor, values: dict) -> dict:
        return {s.name: values[s.name] for s in desc.stages if s.name in values}

    def stream(self, smem_a: int | None, smem_b: int, scale_d: bool = False, warpgroup: int = 0,
               **values: int) -> list[WgmmaIssue]:
        """``WgmmaIssue`` per k-step warpgroup ``warpgroup`` issues, A's and B's buffers at shared addresses
        ``smem_a`` (None for an A in registers) / ``smem_b``, the run-time indices at ``values``; the first takes
        ``scale_d`` (False overwrites D), the later ones accumulate."""
        g = as_int(warpgroup, "stream: warpgroup")
        if not 0 <= g < self.warpgroups:
            raise PlanError(f"stream: warpgroup {g} of a {self.shape[0]}-row tile (0..{self.warpgroups - 1})")
        if self.a_in_registers != (smem_a is None):
            want = "None for an A in registers" if self.a_in_registers else "A's buffer address"
            raise PlanError(f"stream: smem_a is {want}, got {smem_a!r}")
        atom, out = self.atom, []
        for inst in self.instructions:
            a = None if isinstance(self.a, RegisterFragment) else \
                self.a.encode(as_int(smem_a, "stream: smem_a"), inst.k, WGMMA_M * g, **self._values(self.a, values))
            out.append(WgmmaIssue(
                atom.ptx, a, self.b.encode(smem_b, inst.k, **self._values(self.b, values)), bool(scale_d) or inst.k > 0,
                1 if atom.negates else None, 1 if atom.negates else None,
                (None if atom.a_registers else int(atom.trans_a)) if atom.transposes else None,
                int(atom.trans_b) if atom.transposes else None, inst.a_registers, tuple(range(self.d_registers))))
        return out

    def cuda(self, name: str = "pycute_wgmma", wait: int | None = None, commit: bool = False,
             warpgroup_arg: bool = False) -> str:
        """A ``__device__`` function all 128 threads of a warpgroup call: ``name(unsigned smem_a | const unsigned
        (&a)[...], unsigned smem_b, <D> (&d)[...], unsigned scale_d[, unsigned warpgroup], <stages>)``, one
        wgmma.mma_async per k-step. It issues only: the caller fences before, commits and waits after
        (``pycute/wgmma.cuh``), unless ``commit`` asks the function to fence and commit its group itself (the
        caller waits: several groups in flight) or ``wait`` N to fence, commit and ``wait_group<N>``.
        ``warpgroup_arg``: take ``warpgroup`` even when the tile is one warpgroup's (it is then 0), so that a kernel
        whose configurations have tiles of one or more warpgroups calls the function alike."""
        return view("cuda", self, name, wait=wait, commit=commit, warpgroup_arg=warpgroup_arg)

    def verify(self, seed: int = 0) -> None:
        """Emulate every warpgroup's instructions on operands whose products and sums are exact and compare D with
        the reference MMA of the layouts' elements, bit for bit (overwriting and accumulating)."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m, n, k = self.shape
        a = f"registers, {self.a_register_count} per thread ({self.a!r})" if self.a_in_registers else repr(self.a)
        lines = [f"wgmma plan: D {self.d!r} (+)= A B^T, M {m} N {n} K {k}",
                 f"  instruction {self.atom.ptx} ({self.atom.sass}): {len(self.instructions)} per warpgroup "
                 f"(one per {self.atom.k}-element k-step), {self.warpgroups} warpgroup(s) of 64 rows",
                 f"  A           {a}", f"  B           {self.b!r}",
                 f"  D           {self.d_registers} register(s) per thread; fence before, commit and wait after"]
        if self.a_rows and len(self.a_rows) > 1:
            lines.append(f"  warpgroups  A's slices at +{list(self.a_rows)} B")
        for i in self.instructions:
            a_at = f"A regs {list(i.a_registers)}" if i.a_offset is None else f"A +{i.a_offset} B"
            lines.append(f"    k-step {i.k}: {a_at}, B +{i.b_offset} B")
        return "\n".join(lines)

    def __repr__(self) -> str:
        m, n, k = self.shape
        return f"WgmmaPlan({self.atom.ptx}, M{m} N{n} K{k}, {len(self.instructions)} instruction(s) per warpgroup)"
