"""``pycute/sm100.cuh``: the protocol helpers a kernel composes around generated copies, rendered from the facts of
``arch.sm100`` and shipped as package data under ``include_dir()``.

The shipped file is this module's output, checked in so that nvcc users find it in the wheel; ``tests/codegen``
asserts it is current, and ``python -m pycute header --write`` rewrites it.
"""
from __future__ import annotations

from pathlib import Path

from ..arch.sm100.cp_forms import FP4_CONTAINER_SHIFT, PAIR_CTA_MASK, commit_ptx
from ..arch.sm100.descriptor import LBO, SBO, START_ADDRESS, SWIZZLE
from ..arch.sm100.smem import SMEM_MAX_BYTES
from ..arch.sm100.swizzle_modes import UNIT_BYTES, SwizzleMode
from ..arch.sm100.tmem import ALLOC_COLUMNS, CELL_BITS, COLUMNS, LANE_SHIFT, LANES, QUADRANT_LANES
from ..arch.sm100.ldst_shapes import LDST_SHAPES, PACK_BITS
from ..atoms.tcgen05_ld import tmem_ldst_atoms
from ..compile.nvrtc import include_dir
from .constants import field_get, swizzle_tables
from .templates import render

__all__ = ["ABI_VERSION", "HEADER_NAME", "sm100_header", "header_path", "include_dir", "ldst_helper", "write_header"]

#: The C ABI of generated functions and of this header (CHANGELOG.md); bumped when a name or signature changes.
ABI_VERSION = 1
HEADER_NAME = "pycute/sm100.cuh"


def ldst_helper(op: str, num: int, shape: str = "32x32b", pack: bool = False) -> str:
    """The header's wrapper of ``tcgen05.<op>.sync.aligned.<shape>.x<num>[.pack::16b|.unpack::16b].b32``."""
    return f"pycute_tcgen05_{op}_{shape}_x{num}" + ("_pack16" if pack else "")


def _ldst_tables() -> str:
    """Per shape, the (thread, register of one .x1) -> (lane offset, column offset) maps as C arrays."""
    out = []
    for name, s in LDST_SHAPES.items():
        cells = [s.cell(t, j) for t in range(32) for j in range(s.registers)]
        for what, k in (("lane", 0), ("col", 1)):
            out.append(f"static __device__ const unsigned char pycute_ldst_{name}_{what}[32 * {s.registers}] = "
                       f"{{{', '.join(str(c[k]) for c in cells)}}};")
    return "\n".join(out)


def _ldst(atom) -> str:
    """One atom's wrapper: the PTX, or (PYCUTE_SOFT_TCGEN05) the software model with the shape's tables."""
    op, n, shape, form = atom.OP, atom.registers, atom.shape, atom.form
    name = ldst_helper(op, atom.num, shape, atom.pack)
    half = form.half_split
    regs = ", ".join(f"%{k + (0 if op == 'ld' else (2 if half else 1))}" for k in range(n))
    address = '"r"(taddr)' + (', "n"(HALF)' if half else "")
    if op == "ld":
        sig = "unsigned taddr, unsigned* r"
        operands = f'{{{regs}}}, [%{n}]' + (f", %{n + 1}" if half else "")
        constraints = ", ".join(f'"=r"(r[{k}])' for k in range(n)) + " : " + address
    else:
        sig = "unsigned taddr, const unsigned* r"
        operands = "[%0], " + ("%1, " if half else "") + f"{{{regs}}}"
        constraints = ": " + address + ", " + ", ".join(f'"r"(r[{k}])' for k in range(n))
    soft = (f"pycute_soft_tcgen05_ldst({int(op == 'st')}, pycute_ldst_{shape}_lane, pycute_ldst_{shape}_col, "
            f"{form.registers}, {form.columns}, {atom.num}, {int(atom.pack)}, {int(form.lanes)}, "
            f"{'HALF' if half else '0u'}, {int(half)}, taddr, const_cast<unsigned*>(r));")
    return "\n".join([
        "template <unsigned HALF>" if half else "",
        f"__device__ __forceinline__ void {name}({sig}) {{",
        "#if defined(PYCUTE_SOFT_TCGEN05)",
        f"  {soft}",
        "#else",
        f'  asm volatile("{atom.ptx} {operands};" : {constraints} : "memory");',
        "#endif",
        "}"]).lstrip("\n")


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
        commit_1=commit_ptx(1), commit_2=commit_ptx(2), fp4_shift=FP4_CONTAINER_SHIFT, fp4_high=FP4_CONTAINER_SHIFT + 3,
        pack_bits=PACK_BITS, pack_mask=f"0x{(1 << PACK_BITS) - 1:X}",
        ldst_tables=_ldst_tables(),
        ldst_functions="\n".join(_ldst(a) for op in ("ld", "st") for a in tmem_ldst_atoms(op)))


def header_path() -> Path:
    """Where the shipped header is: ``include_dir() / "pycute" / "sm100.cuh"``."""
    return include_dir() / HEADER_NAME


def write_header() -> Path:
    """Rewrite the shipped header from the facts (after a change to ``arch.sm100`` or the template)."""
    path = header_path()
    path.write_text(sm100_header(), encoding="utf-8")
    return path
