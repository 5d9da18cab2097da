"""CUDA C++ for tcgen05.cp plans: the ``__device__`` function a kernel author composes into a kernel.

Calling convention (``issue="warp"``, the default): all 32 lanes of one warp call the function with the same
arguments (e.g. the MMA warp of a GEMM); it elects one lane with ``elect.sync`` and issues every copy from it, as
CuTe does. With ``issue="elected"`` the caller has already chosen the one issuing thread and calls from it alone.

The descriptor is built once per call from the plan's template and the buffer's address; each further copy adds
its offset in 16-byte units to it (one 64-bit add), and TMEM offsets are compile-time constants that ptxas folds
into the UTCCP's address immediate. A run-time coordinate (``dynamic("stage")``) is one more ``unsigned``
parameter after ``tmem_base``: its shared-memory step moves the buffer address before the descriptor is formed and
its TMEM step moves ``tmem_base`` (one multiply-add each). No commit or wait is issued: the caller owns the
completion protocol (``pycute/sm100.cuh`` has its helpers), and a comment in the generated code shows the commit
to use. Each PTX form used gets one small named wrapper behind an include guard, so that several generated
functions compose in one translation unit; built with ``-DPYCUTE_SOFT_TCGEN05`` the wrapper runs the header's
software model instead.
"""
from __future__ import annotations

from typing import Iterable

import re

from ..arch.convention import Convention
from ..arch.sm100.tcgen05_cp import PAIR_CTA_MASK, commit_ptx
from ..arch.sm100.descriptor import START_ADDRESS
from ..copy.tcgen05_cp.plan import IssueMode, Tcgen05CpPlan
from ..errors import CompileError, PlanError
from ..views import provides
from .constants import lane_table
from .common import ABI_VERSION, check_function_name
from .templates import render
from ..atoms.tcgen05_cp import Tcgen05CpAtom

__all__ = ["emit_device_function", "helper_name", "helper_guard", "emit_helpers", "commit_asm", "ISSUE_MODES"]

#: ``issue=`` values: who calls the generated function.
ISSUE_MODES = {
    "warp": ("// Every lane passes the same arguments; one lane, elected by elect.sync, issues every copy. Select the\n"
             "// warp by an index ptxas can prove uniform (pycute_warp_index()), or it adds a copy for a diverged warp.",
             "  if (!pycute_elect_one_sync()) return;\n",
             "if (pycute_elect_one_sync()) "),
    "elected": ("// Call it from the one thread that issues (the caller elected it, e.g. inside its own\n"
                "// if (pycute_elect_one_sync()) block); that thread issues every copy.",
                "", ""),
}


def helper_name(atom: Tcgen05CpAtom, decompress: str | None = None) -> str:
    """``pycute_tcgen05_cp_64x128b_warpx2_02_13_cg1``: the wrapper for one PTX form (``_b4x16_p64`` with
    decompression)."""
    fmt = "_" + decompress.split(".")[-1] if decompress else ""
    return "pycute_tcgen05_cp_" + re.sub(r"[^0-9A-Za-z]+", "_", atom.name) + f"_cg{atom.cta_group}" + fmt


def helper_guard(atom: Tcgen05CpAtom, decompress: str | None = None) -> str:
    """The include guard of ``helper_name(atom)``; defining it first lets a test kernel supply its own wrapper."""
    return helper_name(atom, decompress).upper()


def emit_helpers(atoms: Iterable[Tcgen05CpAtom], decompress: str | None = None) -> str:
    """One wrapper per form, each behind an include guard (the shared helpers are in ``pycute/sm100.cuh``)."""
    return "\n".join(render("cp_wrapper.cuh", guard=helper_guard(atom, decompress),
                            helper=helper_name(atom, decompress),
                            ptx=atom.ptx + (f".{decompress}" if decompress else ""), rows=atom.rows, bits=atom.bits,
                            units=atom.units, replicas=atom.replicas, cta_group=atom.cta_group,
                            lane_table=lane_table(atom), fp4=int(decompress is not None)).rstrip("\n")
                     for atom in sorted(set(atoms), key=lambda a: (a.cta_group, a.name)))


def commit_asm(cta_group: int, mbarrier: str) -> str:
    """The ``asm`` statement committing the issuing thread's copies to the mbarrier at shared address
    ``mbarrier`` (a C expression); for cta_group 2 it signals both CTAs of the pair."""
    if not isinstance(mbarrier, str):
        raise TypeError(f"commit_asm: mbarrier must be a C expression string, not {type(mbarrier).__name__}")
    if cta_group not in (1, 2):
        raise PlanError(f"commit_asm: cta_group must be 1 or 2, not {cta_group!r} (PTX ISA tcgen05.commit)")
    if cta_group == 1:
        return f'asm volatile("{commit_ptx(1)} [%0];" :: "r"({mbarrier}) : "memory");'
    return (f'asm volatile("{commit_ptx(2)} [%0], %1;" :: "r"({mbarrier}), '
            f'"h"((unsigned short){PAIR_CTA_MASK}) : "memory");')


def _commit_comment(cta_group: int, guard: str) -> str:
    lines = [f"//   {guard}pycute_tcgen05_commit<{cta_group}>(mbarrier_smem_address);   // pycute/sm100.cuh"]
    if cta_group == 2:
        lines += ["// The even CTA of the pair issues this function and the commit; each CTA copies its own shared "
                  "memory", "// (same offsets) into its own TMEM (same taddr), and both CTAs' mbarriers at that "
                  "offset complete."]
    return "\n".join(lines)


def _summary(plan: Tcgen05CpPlan, explain: bool) -> str:
    """The header comment: atom, count, descriptor and run-time coordinates; with ``explain`` the whole
    ``plan.explain()``."""
    if explain:
        return "\n".join("// " + line if line else "//" for line in plan.explain().splitlines())
    a, d, n = plan.atom, plan.descriptor, len(plan.instructions)
    ptx = a.ptx + (f".{plan.decompress}" if plan.decompress else "")
    lines = [f"// {n} x {ptx} ({a.bytes} B each; lower bound over all forms {plan.lower_bound})",
             f"// descriptor: swizzle {d.swizzle.name}, LBO {d.lbo} B, SBO {d.sbo} B, template {d.encode():#018x}",
             f"// src {plan.src!r}", f"// dst {plan.dst!r}"]
    for c in plan.dynamic:
        lines.append(f"// {c.name} in [0, {c.extent}) (checked for every value): +{c.smem_step} B shared memory, "
                     f"+{c.tmem_step:#x} TMEM address per unit")
    return "\n".join(lines)


def _copies(plan: Tcgen05CpPlan, taddr: str) -> str:
    n, helper, unit = len(plan.instructions), helper_name(plan.atom, plan.decompress), START_ADDRESS.unit
    first = plan.instructions[0].smem_offset
    out = []
    for k, inst in enumerate(plan.instructions):
        units = (inst.smem_offset - first) // unit
        desc = "desc" if units == 0 else f"pycute_smem_desc_add(desc, {units})"
        out.append(f"  // copy {k + 1} of {n}: TMEM lane +{inst.lane}, column +{inst.column} <- shared +{inst.smem_offset} B")
        out.append(f"  {helper}({taddr} + 0x{inst.tmem_offset:08X}u, {desc});")
    return "\n".join(out)


def _scaled_sum(first: int, terms) -> str:
    """``first + name * step ...`` as a C expression of unsigned terms (zero steps left out)."""
    parts = [f"{first}u"] if first or not any(step for _, step in terms) else []
    parts += [f"{name} * {step}u" for name, step in terms if step]
    return " + ".join(parts) or "0u"


@provides("cuda", Tcgen05CpPlan)
def emit_device_function(plan: Tcgen05CpPlan, name: str = "pycute_tcgen05_cp", issue: IssueMode = "warp",
                         explain: bool = False) -> str:
    """``__device__ __forceinline__ void name(unsigned smem_buffer, unsigned tmem_base[, unsigned stage...])``, and
    C ABI 1's ``name(const void* smem_buffer, ...)``, which converts the pointer and calls it.

    ``smem_buffer`` is the shared buffer's base as a 32-bit shared address (aligned as the plan's source tensor
    says; every generated function takes shared memory so); ``tmem_base`` is the
    TMEM address that tcgen05.alloc returned; each run-time coordinate of the plan is an ``unsigned`` parameter
    of its name, in the plan's order, whose every value in ``[0, extent)`` the planner checked. ``issue`` is the
    calling convention (``ISSUE_MODES``); ``explain`` puts the whole ``plan.explain()`` in the header comment.
    """
    check_function_name(name)
    if not isinstance(explain, bool):
        raise TypeError(f"explain must be a bool, got {explain!r}")
    if issue not in ISSUE_MODES:
        raise CompileError(f"issue={issue!r}: the calling convention is one of {', '.join(map(repr, ISSUE_MODES))}")
    convention, prologue, guard = ISSUE_MODES[issue]
    atom, desc = plan.atom, plan.descriptor
    first = plan.instructions[0].smem_offset
    start = _scaled_sum(first, [(c.name, c.smem_step) for c in plan.dynamic])
    start = "" if start == "0u" else f" + {start}"
    moving = [(c.name, c.tmem_step) for c in plan.dynamic if c.tmem_step]
    taddr = ""
    if moving:
        taddr = f"  const unsigned taddr = tmem_base + {_scaled_sum(0, moving)};   // the run-time TMEM step\n"
    params = "".join(f", unsigned {c.name}" for c in plan.dynamic)
    caller = plan.convention if issue == "warp" else Convention("elected", 1)
    return render("device_function.cuh", helpers=emit_helpers([atom], plan.decompress), name=name, abi=ABI_VERSION,
                  summary=_summary(plan, explain), convention=convention, convention_line=caller.comment(),
                  args="".join(f", {c.name}" for c in plan.dynamic),
                  commit=_commit_comment(atom.cta_group, guard), prologue=prologue, params=params,
                  template=f"{desc.encode():016X}",
                  start=start, taddr=taddr, copies=_copies(plan, "taddr" if moving else "tmem_base"))
