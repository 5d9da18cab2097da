"""Element types by name and width in bits; the planner needs only widths, codegen needs names."""
from __future__ import annotations

from typing import Union

import attrs

from .errors import PlanError
from .int_tuple import as_int

__all__ = ["DType", "u8", "i8", "f8e4m3", "f8e5m2", "bf16", "f16", "f32", "tf32", "u16", "i16", "u32", "i32",
           "f4e2m1", "f6e2m3", "f6e3m2", "ue8m0", "ue4m3", "DTYPES", "dtype"]


@attrs.frozen(repr=False)
class DType:
    """An element type: ``name`` as written in PTX-facing code, ``bits`` per element."""

    name: str
    bits: int

    def __attrs_post_init__(self):
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TypeError(f"DType: name must be an identifier, got {self.name!r}")
        object.__setattr__(self, "bits", as_int(self.bits, f"DType {self.name}: bits"))
        if not 1 <= self.bits <= 64:
            raise PlanError(f"DType {self.name}: {self.bits} bits per element is not a width in [1, 64]")

    def __repr__(self) -> str:
        return self.name


u8, i8 = DType("u8", 8), DType("i8", 8)
f8e4m3, f8e5m2 = DType("f8e4m3", 8), DType("f8e5m2", 8)
bf16, f16, u16, i16 = DType("bf16", 16), DType("f16", 16), DType("u16", 16), DType("i16", 16)
f32, tf32, u32, i32 = DType("f32", 32), DType("tf32", 32), DType("u32", 32), DType("i32", 32)
# Packed narrow types: the sources of tcgen05.cp's decompression forms (.b4x16_p64, .b6x16_p32).
f4e2m1, f6e2m3, f6e3m2 = DType("f4e2m1", 4), DType("f6e2m3", 6), DType("f6e3m2", 6)
# Block-scale factors of tcgen05.mma ... block_scale: an 8-bit exponent, and an unsigned e4m3 (PTX #tcgen05-block-scaling).
ue8m0, ue4m3 = DType("ue8m0", 8), DType("ue4m3", 8)
# 64-bit elements: what TMA and the bulk copies move besides the narrower types (no tcgen05 form takes them).
u64, i64, f64 = DType("u64", 64), DType("i64", 64), DType("f64", 64)

DTYPES = {t.name: t for t in (u8, i8, f8e4m3, f8e5m2, bf16, f16, u16, i16, f32, tf32, u32, i32,
                              f4e2m1, f6e2m3, f6e3m2, ue8m0, ue4m3, u64, i64, f64)}
_ALIASES = {"uint8": u8, "int8": i8, "float8_e4m3fn": f8e4m3, "float8_e5m2": f8e5m2, "bfloat16": bf16,
            "float16": f16, "half": f16, "float32": f32, "float": f32, "uint16": u16, "int16": i16,
            "uint32": u32, "int32": i32, "uint64": u64, "int64": i64, "float64": f64, "double": f64}


#: A bf16 is the high half of an f32's bits.
BF16_SHIFT = 16
#: tf32 in an f32 word: the sign, 8 exponent and the top 10 mantissa bits (the 13 below are ignored).
TF32_MASK = 0xFFFFE000

#: The element widths a tensor can have: the types above and 64-bit words (PTX ISA "Fundamental Types").
ELEMENT_BITS = (4, 6, 8, 16, 32, 64)


#: A DType or its name, as every dtype parameter takes it.
DTypeLike = Union[DType, str]


def dtype(x: DTypeLike) -> DType:
    """A DType from itself or a name (``"bf16"``, ``"bfloat16"``, ``"uint8"``...)."""
    if isinstance(x, DType):
        return x
    if not isinstance(x, str):
        raise TypeError(f"dtype: expected a DType or a name, got {x!r} ({type(x).__name__})")
    t = DTYPES.get(x) or _ALIASES.get(x)
    if t is None:
        raise PlanError(f"unknown dtype {x!r}; known: {', '.join(sorted(DTYPES))}")
    return t


def element_dtype(x: DTypeLike, where: str) -> DType:
    """``dtype(x)``, refused (PlanError naming ``where``) unless a tensor can hold elements of its width."""
    t = dtype(x)
    if t.bits not in ELEMENT_BITS:
        raise PlanError(f"{where}: {t.name} has {t.bits}-bit elements; a tensor's elements are "
                        f"{', '.join(map(str, ELEMENT_BITS))} bits wide")
    return t
