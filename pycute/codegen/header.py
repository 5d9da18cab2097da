"""``pycute/sm100.cuh``: the protocol helpers a kernel composes around generated copies, rendered from the facts of
``arch.sm100`` and shipped as package data under ``include_dir()``.

The shipped file is this module's output, checked in so that nvcc users find it in the wheel; ``tests/codegen``
asserts it is current, and ``python -m pycute header --write`` rewrites it.
"""
from __future__ import annotations

from pathlib import Path

from ..arch.sm100.cp_forms import PAIR_CTA_MASK, commit_ptx
from ..arch.sm100.descriptor import LBO, SBO, START_ADDRESS, SWIZZLE
from ..arch.sm100.smem import SMEM_MAX_BYTES
from ..arch.sm100.swizzle_modes import UNIT_BYTES, SwizzleMode
from ..arch.sm100.tmem import ALLOC_COLUMNS, CELL_BITS, COLUMNS, LANE_SHIFT, LANES, QUADRANT_LANES
from ..compile.nvrtc import include_dir
from .constants import field_get, swizzle_tables
from .templates import render

__all__ = ["ABI_VERSION", "HEADER_NAME", "LDST_NUMS", "sm100_header", "header_path", "include_dir", "ldst_helper", "write_header"]

#: The C ABI of generated functions and of this header (CHANGELOG.md); bumped when a name or signature changes.
ABI_VERSION = 1
HEADER_NAME = "pycute/sm100.cuh"
#: The ``.num`` of the 32x32b tcgen05.ld/st helpers the header provides.
LDST_NUMS = (1, 2, 4, 8, 16, 32)


def ldst_helper(op: str, num: int) -> str:
    """The header's name for ``tcgen05.<op>.sync.aligned.32x32b.x<num>.b32``."""
    return f"pycute_tcgen05_{op}_32x32b_x{num}"


def _ldst(op: str, num: int) -> str:
    regs = ", ".join(f"%{k}" for k in range(num))
    name = ldst_helper(op, num)
    ptx = f"tcgen05.{op}.sync.aligned.32x32b.x{num}.b32"
    soft_cell = (f"*pycute_soft_cell(img, (taddr >> PYCUTE_TMEM_LANE_SHIFT) + lane, (taddr & 0x{(1 << LANE_SHIFT) - 1:X}u)"
                 f" + j, \"{ptx}\")")
    if op == "ld":
        sig = f"unsigned taddr, unsigned (&r)[{num}]"
        soft = f"r[j] = {soft_cell};"
        outs = ", ".join(f'"=r"(r[{k}])' for k in range(num))
        real = f'asm volatile("{ptx} {{{regs}}}, [%{num}];" : {outs} : "r"(taddr) : "memory");'
    else:
        sig = f"unsigned taddr, const unsigned (&r)[{num}]"
        soft = f"{soft_cell} = r[j];"
        ins = ", ".join(f'"r"(r[{k}])' for k in range(num))
        regs = ", ".join(f"%{k + 1}" for k in range(num))
        real = f'asm volatile("{ptx} [%0], {{{regs}}};" :: "r"(taddr), {ins} : "memory");'
    return "\n".join([
        f"__device__ __forceinline__ void {name}({sig}) {{",
        "#if defined(PYCUTE_SOFT_TCGEN05)",
        f'  pycute_soft_check_quadrant(taddr, "{ptx}");',
        "  pycute_soft_tmem_image* img = pycute_soft_image(pycute_cluster_ctarank());",
        "  unsigned lane;",
        '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));',
        f"  for (unsigned j = 0; j < {num}u; ++j) {soft}",
        "#else",
        f"  {real}",
        "#endif",
        "}"])


def sm100_header() -> str:
    """The text of ``pycute/sm100.cuh``."""
    shift = START_ADDRESS.unit.bit_length() - 1
    return render(
        "sm100_header.cuh", abi=ABI_VERSION, lanes=LANES, columns=COLUMNS, lane_shift=LANE_SHIFT,
        quadrant_lanes=QUADRANT_LANES, alloc_min=ALLOC_COLUMNS[0], pair_mask=PAIR_CTA_MASK,
        pair_mask_bin=f"0b{PAIR_CTA_MASK:b}", smem_max=SMEM_MAX_BYTES, start_lo=START_ADDRESS.lo,
        start_hi=START_ADDRESS.lo + START_ADDRESS.width - 1, start_unit=START_ADDRESS.unit, start_shift=shift,
        start_mask=f"0x{(1 << START_ADDRESS.width) - 1:X}", start_bits=START_ADDRESS.width + shift,
        swizzle_tables=swizzle_tables("pycute_soft"), desc_start=field_get(START_ADDRESS, "desc"),
        desc_lbo=field_get(LBO, "desc"), desc_sbo=field_get(SBO, "desc"), desc_swizzle=field_get(SWIZZLE, "desc"),
        column_mask=f"0x{(1 << LANE_SHIFT) - 1:X}", window_mask=f"0x{START_ADDRESS.limit - 1:X}",
        code_none=SwizzleMode.NONE.code, unit_bytes=UNIT_BYTES, unit_words=UNIT_BYTES * 8 // CELL_BITS,
        commit_1=commit_ptx(1), commit_2=commit_ptx(2),
        ldst_functions="\n".join(_ldst(op, n) for op in ("ld", "st") for n in LDST_NUMS))


def header_path() -> Path:
    """Where the shipped header is: ``include_dir() / "pycute" / "sm100.cuh"``."""
    return include_dir() / HEADER_NAME


def write_header() -> Path:
    """Rewrite the shipped header from the facts (after a change to ``arch.sm100`` or the template)."""
    path = header_path()
    path.write_text(sm100_header(), encoding="utf-8")
    return path
