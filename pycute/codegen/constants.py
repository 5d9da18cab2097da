"""C spellings of the sm100 facts, derived from the Python tables so that generated code never restates them:
descriptor field decoding, the swizzle modes and each tcgen05.cp form's row -> lane table."""
from __future__ import annotations

from ..arch.sm100.descriptor import DescriptorField
from ..arch.sm100.swizzle_modes import SwizzleMode
from ..atoms.tcgen05_cp import Tcgen05CpAtom

__all__ = ["field_get", "swizzle_tables", "lane_table"]


def field_get(field: DescriptorField, desc: str) -> str:
    """A C expression: the value of ``field`` (in bytes for 16-byte-unit fields) of the 64-bit ``desc``."""
    value = f"unsigned(({desc} >> {field.lo}) & 0x{(1 << field.width) - 1:X}ull)"
    return f"({value} * {field.unit}u)" if field.unit != 1 else value


def swizzle_tables(prefix: str) -> str:
    """Per descriptor swizzle code: the core-group row pitch and the byte swizzle (source mask, shift), as C arrays
    indexed by the code; reserved codes hold a zero pitch."""
    pitch, mask, shift = [0] * 8, [0] * 8, [0] * 8
    for mode in SwizzleMode:
        sw = mode.byte_swizzle
        pitch[mode.code] = mode.row_pitch
        mask[mode.code], shift[mode.code] = (sw.yyy_mask, sw.shift) if sw is not None else (0, 0)

    def array(name: str, values: list, ctype: str = "unsigned") -> str:
        return f"static __device__ const {ctype} {prefix}_{name}[8] = {{{', '.join(f'{v}' for v in values)}}};"
    return "\n".join([array("pitch", pitch), array("swizzle_mask", [f"0x{m:X}u" for m in mask]),
                      array("swizzle_shift", shift, "int")])


def lane_table(atom: Tcgen05CpAtom) -> str:
    """The atom's row -> lanes table, row-major (``rows`` x ``replicas``), as a C initializer list."""
    return "{" + ", ".join(str(lane) for lanes in atom.lane_table for lane in lanes) + "}"
