"""CUDA C++ for tcgen05.cp plans: the ``__device__`` function a kernel author composes into a kernel.

The descriptor template is a compile-time constant; each copy patches only its start address (the descriptor's
start field, ``arch.sm100.descriptor.START_ADDRESS``), computed in 16-byte units because the buffer base and every
planned offset are 16-byte aligned (ptxas then shares one shift); the middle iteration is unrolled into
straight-line code with compile-time offsets. No commit or wait is issued: the caller owns the completion
protocol (a comment in the generated code shows the commit line to use).

Each PTX form used gets one small named wrapper behind an include guard, so that several generated functions
compose in one translation unit.
"""
from __future__ import annotations

import re

from ..arch.sm100.cp_forms import PAIR_CTA_MASK, commit_ptx
from ..copy.plan import CopyPlan
from ..errors import CompileError
from ..views import provides
from .constants import start_mask
from .templates import render

__all__ = ["emit_device_function", "helper_name", "helper_guard", "emit_helpers", "commit_asm", "HELPER_GUARD"]

HELPER_GUARD = "PYCUTE_SM100_DESC_HELPER"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def helper_name(atom) -> str:
    """``pycute_tcgen05_cp_64x128b_warpx2_02_13_cg1``: the wrapper for one PTX form."""
    return "pycute_tcgen05_cp_" + re.sub(r"[^0-9A-Za-z]+", "_", atom.name) + f"_cg{atom.cta_group}"


def helper_guard(atom) -> str:
    """The include guard of ``helper_name(atom)``; defining it first lets a test kernel supply its own wrapper."""
    return helper_name(atom).upper()


def emit_helpers(atoms) -> str:
    """The descriptor-patch helper and one wrapper per form, each behind an include guard."""
    out = [render("desc_helper.cuh", start_mask=start_mask()).rstrip("\n")]
    for atom in sorted(set(atoms), key=lambda a: (a.cta_group, a.name)):
        out.append(render("cp_wrapper.cuh", guard=helper_guard(atom), helper=helper_name(atom), ptx=atom.ptx,
                          rows=atom.rows, bits=atom.bits).rstrip("\n"))
    return "\n".join(out)


def commit_asm(cta_group: int, mbarrier: str) -> str:
    """The ``asm`` statement committing the issuing thread's copies to the mbarrier at shared address
    ``mbarrier`` (a C expression); for cta_group 2 it signals both CTAs of the pair."""
    if cta_group == 1:
        return f'asm volatile("{commit_ptx(1)} [%0];" :: "r"({mbarrier}) : "memory");'
    return (f'asm volatile("{commit_ptx(2)} [%0], %1;" :: "r"({mbarrier}), '
            f'"h"((unsigned short){PAIR_CTA_MASK}) : "memory");')


def _commit_comment(cta_group: int) -> str:
    lines = [f"//   {commit_asm(cta_group, 'mbarrier_smem_address')}"]
    if cta_group == 2:
        lines += ["// The even CTA of the pair issues this function and the commit; each CTA copies its own shared "
                  "memory", "// (same offsets) into its own TMEM (same taddr), and both CTAs' mbarriers at that "
                  "offset complete."]
    return "\n".join(lines)


def _summary(plan: CopyPlan) -> str:
    return "\n".join("// " + line if line else "//" for line in plan.explain().splitlines()
                     if not line.startswith("    lane ") and "instructions (tmem" not in line and "... " not in line)


@provides("cuda", CopyPlan)
def emit_device_function(plan: CopyPlan, name: str = "pycute_tcgen05_cp") -> str:
    """``__device__ __forceinline__ void name(const void* smem_buffer, unsigned tmem_base)`` for ``plan``.

    ``smem_buffer`` is the shared buffer's base (aligned as the plan's source tensor says); ``tmem_base`` is the
    TMEM address that tcgen05.alloc returned. Call it from one thread.
    """
    if not _NAME_RE.match(name):
        raise CompileError(f"{name!r} is not a C identifier")
    atom, desc = plan.atom, plan.descriptor
    n = len(plan.instructions)
    copies = []
    for k, inst in enumerate(plan.instructions):
        copies.append(f"  // copy {k + 1} of {n}: TMEM lane +{inst.lane}, column +{inst.column} <- shared "
                      f"+{inst.smem_offset} B")
        copies.append(f"  {helper_name(atom)}(tmem_base + 0x{inst.tmem_offset:08X}u, "
                      f"pycute_smem_desc(kDescTemplate, smem_16B + {inst.smem_offset // 16}u));")
    return render("device_function.cuh", helpers=emit_helpers([atom]), name=name, summary=_summary(plan),
                  commit=_commit_comment(atom.cta_group), swizzle=desc.swizzle.name, lbo=desc.lbo, sbo=desc.sbo,
                  template=f"{desc.encode():016X}", copies="\n".join(copies))
