"""CUDA C++ emission for tcgen05.cp plans: a device function a kernel author calls from one thread.

The descriptor template is a compile-time constant; each copy patches only its 14-bit start address
(``(desc & ~0x3FFF) | ((smem_address >> 4) & 0x3FFF)``, PTX "matrix-descriptor-encode"), computed in 16-byte units
because the buffer base and every planned offset are 16-byte aligned (ptxas then shares one shift); the middle
iteration is unrolled into straight-line code with compile-time offsets. No commit or wait is issued: the caller owns the
completion protocol (a comment in the generated code shows the commit line to use).

Each PTX form used gets one small named wrapper. Defining ``PYCUTE_SOFT_TCGEN05`` before the code replaces the
``asm`` with a call to ``pycute_soft_tcgen05_cp`` (defined by pycute's round-trip kernels), so that everything but
the tcgen05 instruction itself can run on a GPU without tcgen05.
"""
from __future__ import annotations

import re

__all__ = ["emit_device_function", "helper_name", "emit_helpers", "HELPER_GUARD"]

HELPER_GUARD = "PYCUTE_SM100_DESC_HELPER"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MULTICAST_ID = {"": 0, "warpx2::02_13": 1, "warpx2::01_23": 2, "warpx4": 3}


def helper_name(atom) -> str:
    """``pycute_tcgen05_cp_64x128b_warpx2_02_13_cg1``: the wrapper for one PTX form."""
    return "pycute_tcgen05_cp_" + re.sub(r"[^0-9A-Za-z]+", "_", atom.name) + f"_cg{atom.cta_group}"


def emit_helpers(atoms) -> str:
    """The descriptor-patch helper and one wrapper per form, each behind an include guard."""
    out = [f"#ifndef {HELPER_GUARD}",
           f"#define {HELPER_GUARD}",
           "// Patch the 14-bit start-address field (bits 0-13) of a tcgen05 shared-memory matrix descriptor with a",
           "// start address given in 16-byte units (shared-window byte address >> 4); every other field stays as",
           "// encoded in the template: (desc & ~0x3FFF) | ((address >> 4) & 0x3FFF).",
           "__device__ __forceinline__ unsigned long long pycute_smem_desc(unsigned long long desc_template, unsigned start_16B) {",
           "  return (desc_template & ~0x3FFFull) | (unsigned long long)(start_16B & 0x3FFFu);",
           "}",
           "#if defined(PYCUTE_SOFT_TCGEN05)",
           "// Software model of tcgen05.cp (rows, bits per row, multicast id, cta_group), for GPUs without tcgen05.",
           "__device__ void pycute_soft_tcgen05_cp(int rows, int bits, int multicast, int cta_group, unsigned taddr,",
           "                                       unsigned long long desc);",
           "#endif",
           f"#endif  // {HELPER_GUARD}"]
    for atom in sorted(set(atoms), key=lambda a: (a.cta_group, a.name)):
        name = helper_name(atom)
        guard = name.upper()
        out += ["",
                f"#ifndef {guard}",
                f"#define {guard}",
                f"// {atom.ptx}: {atom.rows} rows x {atom.bits} bits from the descriptor's matrix into TMEM at taddr.",
                f"__device__ __forceinline__ void {name}(unsigned taddr, unsigned long long desc) {{",
                "#if defined(PYCUTE_SOFT_TCGEN05)",
                f"  pycute_soft_tcgen05_cp({atom.rows}, {atom.bits}, {_MULTICAST_ID[atom.multicast]}, {atom.cta_group}, "
                "taddr, desc);",
                "#else",
                f'  asm volatile("{atom.ptx} [%0], %1;" :: "r"(taddr), "l"(desc) : "memory");',
                "#endif",
                "}",
                f"#endif  // {guard}"]
    return "\n".join(out)


def _commit_lines(cta_group: int) -> list[str]:
    if cta_group == 1:
        return ['//   asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"',
                '//                :: "r"(mbarrier_smem_address) : "memory");']
    return ['//   asm volatile("tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64"',
            '//                " [%0], %1;" :: "r"(mbarrier_smem_address), "h"((unsigned short)3) : "memory");',
            "// The even CTA of the pair issues this function and the commit; each CTA copies its own shared memory",
            "// (same offsets) into its own TMEM (same taddr), and both CTAs' mbarriers at that offset complete."]


def emit_device_function(plan, name: str = "pycute_tcgen05_cp") -> str:
    """``__device__ __forceinline__ void name(const void* smem_buffer, unsigned tmem_base)`` for ``plan``.

    ``smem_buffer`` is the shared buffer's base (aligned as the plan's source tensor says); ``tmem_base`` is the
    TMEM address that tcgen05.alloc returned. Call it from one thread.
    """
    if not _NAME_RE.match(name):
        from ...errors import CompileError
        raise CompileError(f"{name!r} is not a C identifier")
    atom, desc = plan.atom, plan.descriptor
    template = desc.encode()
    summary = ["// " + line if line else "//" for line in plan.explain().splitlines()
               if not line.startswith("    lane ") and "instructions (tmem" not in line and "... " not in line]
    n = len(plan.instructions)
    lines = [emit_helpers([atom]), "",
             f"// {name}: generated by pycute from this plan:"] + summary + [
        "//",
        "// Issues the copy only, from the calling thread: no commit and no wait. The caller chooses the completion",
        "// protocol; to signal an mbarrier when the copies have completed, issue from the same thread:"] + \
        _commit_lines(atom.cta_group) + [
        f"__device__ __forceinline__ void {name}(const void* smem_buffer, unsigned tmem_base) {{",
        f"  // swizzle {desc.swizzle.name}, LBO {desc.lbo} B, SBO {desc.sbo} B, base offset 0, start address 0",
        f"  constexpr unsigned long long kDescTemplate = 0x{template:016X}ull;",
        "  // The buffer and every offset below are multiples of 16 B, so (smem + offset) >> 4 == smem_16B + offset / 16.",
        "  const unsigned smem_16B = static_cast<unsigned>(__cvta_generic_to_shared(smem_buffer)) >> 4;"]
    helper = helper_name(atom)
    for k, inst in enumerate(plan.instructions):
        where = f"TMEM lane +{inst.lane}, column +{inst.column} <- shared +{inst.smem_offset} B"
        lines.append(f"  // copy {k + 1} of {n}: {where}")
        lines.append(f"  {helper}(tmem_base + 0x{inst.tmem_offset:08X}u, "
                     f"pycute_smem_desc(kDescTemplate, smem_16B + {inst.smem_offset // 16}u));")
    lines.append("}")
    return "\n".join(lines) + "\n"
