"""A static cost model of a plan's generated code: what it issues, what that costs, and a bound to compare with.

Everything here is read from the plan, the cubin and its SASS. The copy time is a MODEL (shared-memory bandwidth
of 128 B per clock per SM on B200, ptx-tcgen05.md section 12), not a measurement: no sm_100 GPU has run it.
"""
from __future__ import annotations

import attrs

from .arch.sm100.tmem import CELL_BITS, tmem_address
from .atoms.tcgen05_cp import cp_candidates
from .basis import basis_get
from .codegen.emit import emit_helpers
from .codegen.kernels import RoundTrip, probe_entry, probe_source
from .compile.elf import kernel_resources
from .compile.nvrtc import compile_cuda
from .compile.sass import utccp_instructions
from .copy.planner import make_tiled_copy
from .errors import PlanError
from .int_tuple import flatten

__all__ = ["CopyCost", "copy_cost", "widest_legal_atom", "hand_written_issue_loop", "issue_overhead",
           "SMEM_BYTES_PER_CLOCK", "ASSUMED_CLOCK_GHZ"]

SMEM_BYTES_PER_CLOCK = 128     # B200 shared-memory read bandwidth per SM (inferred, not an NVIDIA specification)
ASSUMED_CLOCK_GHZ = 1.9        # for the nanosecond column only
_ELECT_LOOP = ("ELECT", "BRA.U.ANY", "PLOP3.LUT")


def widest_legal_atom(plan):
    """The widest tcgen05.cp form that can plan this copy (the plan's own atom when it was inferred)."""
    for atom in cp_candidates(plan.cta_group):
        try:
            make_tiled_copy(plan.dst, plan.src, cta_group=plan.cta_group, shape=atom.shape,
                            multicast=atom.multicast or None)
            return atom
        except PlanError:
            continue
    return plan.atom       # pragma: no cover - the plan itself is legal


def issue_overhead(instructions) -> tuple[int, int]:
    """``(non-UTCCP issue instructions, of which ELECT-loop instructions)`` of an issue-only kernel's SASS.

    Counted: everything but UTCCP, EXIT, NOP and the trailing self-branch. The ELECT loop (ELECT, PLOP3,
    BRA.U.ANY) is what ptxas wraps around every single-thread tcgen05 instruction, in any code.
    """
    ops = [i.split()[0] for i in instructions if i]
    last_exit = max((k for k, o in enumerate(ops) if o == "EXIT"), default=len(ops))
    other = [o for k, o in enumerate(ops[:last_exit]) if not o.startswith(("UTCCP", "NOP", "EXIT"))]
    elect = [o for o in other if o.startswith(_ELECT_LOOP)]
    return len(other), len(elect)


@attrs.frozen
class CopyCost:
    """The static cost of one plan's generated code (see module docstring for what is a model)."""

    atom: str
    instructions: int
    utccp_in_sass: int
    bytes: int
    lower_bound: int
    widest_legal: str
    issue_other: int
    issue_elect: int
    probe_registers: int
    roundtrip_registers: int
    roundtrip_static_shared: int
    model_clocks: int
    model_ns: float

    @property
    def address_per_copy(self) -> float:
        """Non-UTCCP instructions per copy that are not the ELECT loop: the generated address arithmetic."""
        return (self.issue_other - self.issue_elect) / max(self.instructions, 1)


def copy_cost(plan, arch: str = "sm_100a") -> CopyCost:
    """Compile the plan's issue-only probe and round-trip kernels and measure their code statically."""
    widest = widest_legal_atom(plan)
    probe = compile_cuda(probe_source(plan, "cost"), arch=arch)
    instructions = probe.instructions()
    other, elect = issue_overhead(instructions)
    rt = RoundTrip(plan, "cost").compile(arch)
    rt_res = kernel_resources(rt.cubin)["cost_roundtrip"]
    clocks = -(-plan.bytes // SMEM_BYTES_PER_CLOCK)
    return CopyCost(
        atom=plan.atom.name, instructions=len(plan.instructions),
        utccp_in_sass=len(utccp_instructions(instructions)), bytes=plan.bytes,
        lower_bound=-(-plan.bytes // widest.bytes), widest_legal=widest.name,
        issue_other=other, issue_elect=elect,
        probe_registers=kernel_resources(probe.cubin)[probe_entry("cost")]["registers"],
        roundtrip_registers=rt_res["registers"], roundtrip_static_shared=rt_res["static_shared_bytes"],
        model_clocks=clocks, model_ns=round(clocks / ASSUMED_CLOCK_GHZ, 1))


def hand_written_issue_loop(plan, name: str = "hand") -> str:
    """What a kernel author writes by hand for the same copies: a loop over the middle modes, offsets computed
    from strides at run time, the descriptor patched per copy (with pycute's own helper). For comparison with the
    generated code."""
    mid = plan.middle
    shapes, strides = flatten(mid.shape), flatten(mid.stride)
    loops, s_terms, t_terms = [], [], []
    for k, (n, d) in enumerate(zip(shapes, strides)):
        if n == 1:
            continue
        loops.append(f"for (unsigned i{k} = 0; i{k} < {n}u; ++i{k})")
        s_terms.append(f"i{k} * {basis_get(d, 'Smem')}u")
        step = tmem_address(basis_get(d, "TLane"), basis_get(d, "TCol") * plan.src.bits // CELL_BITS)
        t_terms.append(f"i{k} * {step}u")
    first = plan.instructions[0]
    s_expr = " + ".join([f"{first.smem_offset}u"] + s_terms)
    t_expr = " + ".join([f"{first.tmem_offset}u"] + t_terms)
    body = (f"    const unsigned long long desc = pycute_smem_desc(tmpl, (smem + {s_expr}) >> 4);\n"
            f'    asm volatile("{plan.atom.ptx} [%0], %1;" :: "r"(tmem_base + {t_expr}), "l"(desc) : "memory");')
    head = "\n".join("  " + " " * 2 * k + loop for k, loop in enumerate(loops))
    return f"""{emit_helpers([])}
extern "C" __global__ void {name}_probe(unsigned tmem_base) {{
  extern __shared__ __align__(1024) unsigned char buf[];
  const unsigned smem = static_cast<unsigned>(__cvta_generic_to_shared(buf));
  const unsigned long long tmpl = 0x{plan.descriptor.encode():016X}ull;
{head}
  {{
{body}
  }}
}}
"""
