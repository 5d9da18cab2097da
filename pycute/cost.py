"""The static cost of a plan's generated code, read from the SASS of the cubins NVRTC builds.

Issue cost: the non-UTCCP SASS instructions that calling a plan's device function adds to a kernel, per copy:
``(probe kernel - the same kernel without the call - UTCCPs) / UTCCPs``, all instructions but NOPs counted. In the
probe every lane of a one-warp block calls the function (the warp convention). This is the measure the CuTe DSL
comparison of the code-generation issue used; the same harness reproduces the figures that comparison reported
for pycute's earlier code exactly.

Lower bound argued for a warp-uniform call that issues N copies (``ISSUE_FLOOR``): electing the issuing lane and
keeping the others from issuing (2), the inputs as the probe provides them (the buffer's shared address, which
ptxas forms from the CTA id and an offset: 3; the TMEM base parameter: 1), the descriptor in a register pair (its
constant high word: 1; its low word, derived from the address: at least 1), and for each further copy one add,
since no tcgen05.cp form takes a descriptor offset (copies with the same start address could share one).

Copy times are a MODEL (shared-memory bandwidth of 128 B per clock per SM on B200, docs/ptx-tcgen05.md section 12),
not measurements: no sm_100 GPU has run them.
"""
from __future__ import annotations

from typing import Sequence

import statistics

import attrs

from .atoms.tcgen05_cp import cp_candidates
from .harness.tcgen05_cp import RoundTrip
from .codegen.probe import ldst_probe_source, no_call_probe_source, probe_entry, probe_source
from .compile.elf import kernel_resources
from .compile.nvrtc import compile_cuda
from .compile.sass import disassemble, function_instructions, utccp_instructions
from .copy.tcgen05_cp.planner import make_tiled_copy
from .errors import PlanError
from .atoms.tcgen05_cp import Tcgen05CpAtom
from .copy.tcgen05_cp.plan import Tcgen05CpPlan
from .copy.tcgen05_ldst.plan import Tcgen05LdStPlan

__all__ = ["IssueCost", "issue_costs", "issue_floor", "ISSUE_FLOOR", "CopyCost", "copy_cost", "widest_legal_atom",
           "median_per_copy", "SMEM_BYTES_PER_CLOCK", "ASSUMED_CLOCK_GHZ", "StageCost", "stage_costs", "LdStCost",
           "ldst_costs"]

SMEM_BYTES_PER_CLOCK = 128     # B200 shared-memory read bandwidth per SM (inferred, not an NVIDIA specification)
ASSUMED_CLOCK_GHZ = 1.9        # for the nanosecond column only

#: The fewest non-UTCCP instructions of a warp-uniform issue of one copy in the probe kernel, by what they do.
ISSUE_FLOOR = {
    "elect one lane and keep the others from issuing": 2,
    "the buffer's shared address (CTA id, offset, combine) and the TMEM base": 4,
    "the descriptor's constant high word and its low word from the address": 2,
}
_BASELINE = "pycute_no_call"


def issue_floor(copies: int) -> int:
    """The lower bound on the non-UTCCP instructions issuing ``copies`` copies with distinct start addresses."""
    return sum(ISSUE_FLOOR.values()) + copies - 1


@attrs.frozen
class IssueCost:
    """What calling one plan's device function (warp convention) adds to the probe kernel."""

    label: str
    atom: str
    copies: int       # instructions planned
    utccp: int        # UTCCP instructions in the SASS
    other: int        # non-UTCCP instructions the call adds

    @property
    def per_copy(self) -> float:
        return self.other / self.utccp

    @property
    def bound_per_copy(self) -> float:
        return issue_floor(self.copies) / self.copies

    @property
    def ratio(self) -> float:
        """Measured over argued lower bound (1.0 = at the bound)."""
        return self.other / issue_floor(self.copies)


def _counted(instructions) -> list[str]:
    return [i for i in instructions if i and i.split()[0] != "NOP"]


def issue_costs(labeled_plans: Sequence[tuple[str, Tcgen05CpPlan]], arch: str = "sm_100a") -> list[IssueCost]:
    """The issue cost of every ``(label, plan)``: their probe kernels and the no-call baseline compile as one
    translation unit, and each kernel's SASS is counted on its own."""
    names = [f"p{k}" for k in range(len(labeled_plans))]
    source = no_call_probe_source(_BASELINE) + "".join(probe_source(plan, n) for n, (_, plan) in
                                                      zip(names, labeled_plans))
    functions = function_instructions(disassemble(compile_cuda(source, arch=arch).cubin))
    baseline = len(_counted(functions[probe_entry(_BASELINE)]))
    out = []
    for name, (label, plan) in zip(names, labeled_plans):
        counted = _counted(functions[probe_entry(name)])
        utccp = len(utccp_instructions(counted))
        out.append(IssueCost(label, plan.atom.name, len(plan.instructions), utccp, len(counted) - baseline - utccp))
    return out


@attrs.frozen
class StageCost:
    """What a run-time stage adds to one call: non-UTCCP SASS of the staged plan's call minus the static plan's."""

    label: str
    staged: int
    static: int

    @property
    def extra(self) -> int:
        return self.staged - self.static


def stage_costs(cases: Sequence[tuple[str, Tcgen05CpPlan, Tcgen05CpPlan]], arch: str = "sm_100a") -> list[StageCost]:
    """``[(label, staged plan, static plan)]`` -> the SASS a run-time coordinate costs per call."""
    flat = [(f"{label} staged", staged) for label, staged, _ in cases] + \
           [(f"{label} static", static) for label, _, static in cases]
    costs = issue_costs(flat, arch)
    n = len(cases)
    return [StageCost(label, costs[k].other, costs[n + k].other) for k, (label, _, _) in enumerate(cases)]


@attrs.frozen
class LdStCost:
    """A tcgen05.ld/st plan's SASS: its LDTM/STTM ops against the argued lower bound, and the other instructions
    its call adds per tcgen05 instruction (a probe kernel minus the same kernel whose registers come from, or go
    to, an empty asm; global loads and stores of the registers are left out of both)."""

    label: str
    instructions: int       # planned per warp
    lower_bound: int
    sass_ops: int           # LDTM / STTM in the SASS
    planned_ops: int        # LDTM / STTM the plan predicts (two per .16x32bx2)
    other: int

    @property
    def other_per_instruction(self) -> float:
        return self.other / self.instructions


def _ldst_baseline(plan, name: str) -> str:
    n = plan.registers
    fake = (f'  for (unsigned i = 0; i < {n}u; ++i) asm volatile("" : "=r"(regs[i]));\n'
            f"  for (unsigned i = 0; i < {n}u; ++i) data[threadIdx.x * {n}u + i] = regs[i];" if plan.op == "ld" else
            f"  for (unsigned i = 0; i < {n}u; ++i) regs[i] = data[threadIdx.x * {n}u + i];\n"
            f'  for (unsigned i = 0; i < {n}u; ++i) asm volatile("" :: "r"(regs[i]));')
    return (f'extern "C" __global__ void __launch_bounds__({32 * plan.warps}, 1) {probe_entry(name)}(unsigned tmem_base, '
            f"unsigned* data) {{\n  unsigned regs[{n}];\n{fake}\n}}\n")


def ldst_costs(labeled_plans: Sequence[tuple[str, Tcgen05LdStPlan]], arch: str = "sm_100a") -> list[LdStCost]:
    """The SASS cost of every ``(label, Tcgen05LdStPlan)``, compiled as one translation unit."""
    source = "".join(ldst_probe_source(plan, f"l{k}") + _ldst_baseline(plan, f"b{k}")
                     for k, (_, plan) in enumerate(labeled_plans))
    functions = function_instructions(disassemble(compile_cuda(source, arch=arch).cubin))
    out = []
    for k, (label, plan) in enumerate(labeled_plans):
        # the harness's global loads (st) and stores (ld) are the registers' source and sink, not the call's cost
        probe, base = ([i for i in _counted(functions[probe_entry(f"{p}{k}")]) if not i.startswith(("LDG", "STG"))]
                       for p in "lb")
        ops = sum(1 for i in probe if i.startswith(("LDTM", "STTM")))
        planned = sum(len(i.atom.sass_ops) for i in plan.per_warp)
        out.append(LdStCost(label, len(plan.per_warp), plan.lower_bound, ops, planned, len(probe) - len(base) - ops))
    return out


def median_per_copy(costs: Sequence[IssueCost]) -> float:
    return statistics.median(c.per_copy for c in costs)


def widest_legal_atom(plan: Tcgen05CpPlan) -> Tcgen05CpAtom:
    """The widest tcgen05.cp form that can plan this copy (the plan's own atom when it was inferred)."""
    for atom in cp_candidates(plan.cta_group):
        try:
            make_tiled_copy(plan.dst, plan.src, cta_group=plan.cta_group, shape=atom.shape,
                            multicast=atom.multicast or None)
            return atom
        except PlanError:
            continue
    return plan.atom       # pragma: no cover - the plan itself is legal


@attrs.frozen
class CopyCost:
    """The static cost of one plan's generated code (see the module docstring for what is a model)."""

    atom: str
    instructions: int
    utccp_in_sass: int
    bytes: int
    lower_bound: int
    widest_legal: str
    issue: IssueCost
    probe_registers: int
    roundtrip_registers: int
    roundtrip_static_shared: int
    model_clocks: int
    model_ns: float


def copy_cost(plan: Tcgen05CpPlan, arch: str = "sm_100a") -> CopyCost:
    """Compile the plan's issue-only probe and round-trip kernels and measure their code statically."""
    widest = widest_legal_atom(plan)
    issue, = issue_costs([("copy", plan)], arch)
    probe = compile_cuda(probe_source(plan, "cost"), arch=arch)
    rt = RoundTrip(plan, "cost").compile(arch)
    rt_res = kernel_resources(rt.cubin)["cost_roundtrip"]
    clocks = -(-plan.bytes // SMEM_BYTES_PER_CLOCK)
    return CopyCost(
        atom=plan.atom.name, instructions=len(plan.instructions),
        utccp_in_sass=len(utccp_instructions(probe.instructions())), bytes=plan.bytes,
        lower_bound=-(-plan.bytes // widest.bytes), widest_legal=widest.name, issue=issue,
        probe_registers=kernel_resources(probe.cubin)[probe_entry("cost")]["registers"],
        roundtrip_registers=rt_res["registers"], roundtrip_static_shared=rt_res["static_shared_bytes"],
        model_clocks=clocks, model_ns=round(clocks / ASSUMED_CLOCK_GHZ, 1))
