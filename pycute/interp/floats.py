"""Floating-point formats as bits, and exact rounding into them (PTX ISA #floating-point-instructions,
#data-movement-and-conversion-instructions-cvt).

A value is rounded once from its exact value ``(-1)^neg * m * 2^e`` (Python integers), so every rounding mode
(``rn`` nearest-even, ``rna`` nearest-away, ``rz``, ``rm``, ``rp``), ``.ftz`` (a subnormal result becomes a zero of
its sign) and ``.satfinite`` (an infinity or an overflow becomes the largest finite value of its sign) is applied
bit-exactly for every format: f64, f32, tf32 (f32 bits with the low 13 cleared), f16, bf16, the fp8 formats e4m3
(no infinity; S.1111.111 is NaN) and e5m2, the fp6 and fp4 formats (no infinity, no NaN) and ue8m0 (exponent only).
A NaN result is the format's canonical NaN: PTX leaves single-precision NaN payloads unspecified (#floating-point-
instructions); f64 keeps the payload of its NaN input where PTX says so (the caller decides).
"""
from __future__ import annotations

import math
import struct
from typing import Literal

import attrs

__all__ = ["FloatFormat", "FORMATS", "decode", "round_exact", "round_up", "from_float", "exact_parts", "Rounding",
           "nearest"]

Rounding = Literal["rn", "rna", "rz", "rm", "rp"]


@attrs.frozen
class FloatFormat:
    """``exp_bits`` / ``man_bits`` stored bits and the bias; ``kind``: ``ieee`` (infinities and NaNs), ``fn``
    (e4m3: no infinity, all-ones is NaN), ``finite`` (fp6 / fp4: neither) or ``e8m0`` (unsigned, exponent only,
    0xFF NaN). ``shift`` places the value in its container (tf32: 13 low zero bits)."""

    name: str
    exp_bits: int
    man_bits: int
    kind: str = "ieee"
    signed: bool = True
    shift: int = 0

    @property
    def bias(self) -> int:
        return (1 << (self.exp_bits - 1)) - 1

    @property
    def bits(self) -> int:
        return self.exp_bits + self.man_bits + int(self.signed) + self.shift

    @property
    def sign_bit(self) -> int:
        return 1 << (self.exp_bits + self.man_bits + self.shift) if self.signed else 0

    @property
    def max_code(self) -> int:
        """The magnitude code of the largest finite value."""
        top = (1 << (self.exp_bits + self.man_bits)) - 1
        if self.kind == "ieee":
            return top - (1 << self.man_bits)                      # exponent all ones is Inf / NaN
        return top - 1 if self.kind in ("fn", "e8m0") else top     # fn / e8m0: the all-ones code is NaN

    @property
    def nan(self) -> int:
        """The canonical NaN (PTX: 0x7FFFFFFF for f32, 0x7FFF for f16 and bf16)."""
        if self.kind == "finite":
            return -1
        if self.kind == "e8m0":
            return 0xFF
        return ((1 << (self.exp_bits + self.man_bits)) - 1) << self.shift

    @property
    def inf(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.man_bits << self.shift if self.kind == "ieee" else -1


FORMATS = {f.name: f for f in (
    FloatFormat("f64", 11, 52), FloatFormat("f32", 8, 23), FloatFormat("tf32", 8, 10, shift=13),
    FloatFormat("f16", 5, 10), FloatFormat("bf16", 8, 7), FloatFormat("e4m3", 4, 3, "fn"),
    FloatFormat("e5m2", 5, 2), FloatFormat("e2m3", 2, 3, "finite"), FloatFormat("e3m2", 3, 2, "finite"),
    FloatFormat("e2m1", 2, 1, "finite"), FloatFormat("ue8m0", 8, 0, "e8m0", signed=False))}

_F64 = struct.Struct("<d")
_U64 = struct.Struct("<Q")
_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")
_F16 = struct.Struct("<e")
_U16 = struct.Struct("<H")
_HALF = 2 ** 16 - 1                                  # an f16 register's bits


def decode(bits: int, fmt: FloatFormat) -> float:
    """The value of ``bits`` in ``fmt`` (NaN as Python's NaN)."""
    name = fmt.name
    if name == "f64":
        return _F64.unpack(_U64.pack(bits))[0]
    if name == "f32":                                   # the IEEE formats through the C library's own reading
        return _F32.unpack(_U32.pack(bits & 0xFFFFFFFF))[0]
    if name == "f16":
        return _F16.unpack(_U16.pack(bits & _HALF))[0]
    code = bits >> fmt.shift
    neg = bool(code & (fmt.sign_bit >> fmt.shift)) if fmt.signed else False
    mag = code & ((1 << (fmt.exp_bits + fmt.man_bits)) - 1)
    exp, man = mag >> fmt.man_bits, mag & ((1 << fmt.man_bits) - 1)
    if fmt.kind == "e8m0":
        return math.nan if exp == 0xFF else math.ldexp(1.0, exp - fmt.bias)
    if (fmt.kind == "ieee" and exp == (1 << fmt.exp_bits) - 1) or (fmt.kind == "fn" and mag == (1 << (fmt.exp_bits + fmt.man_bits)) - 1):
        value = math.inf if fmt.kind == "ieee" and man == 0 else math.nan
    elif exp == 0:
        value = math.ldexp(man, 1 - fmt.bias - fmt.man_bits)
    else:
        value = math.ldexp(man + (1 << fmt.man_bits), exp - fmt.bias - fmt.man_bits)
    return -value if neg else value


def exact_parts(x: float) -> tuple[bool, int, int]:
    """``(neg, m, e)`` with ``x == (-1)^neg * m * 2^e`` exactly (``x`` finite)."""
    n, d = x.as_integer_ratio()
    return n < 0 or (n == 0 and math.copysign(1.0, x) < 0), abs(n), 1 - d.bit_length()


def round_up(mode: str, neg: bool, odd: bool, rest: int, half: int) -> bool:
    """Whether a magnitude truncated with remainder ``rest`` (of a unit ``2 * half``) rounds away from zero."""
    if rest == 0:
        return False
    if mode == "rn":
        return rest > half or (rest == half and odd)
    if mode == "rna":
        return rest >= half
    return (mode == "rm" and neg) or (mode == "rp" and not neg)


def _overflow(fmt: FloatFormat, neg: bool, mode: str, satfinite: bool) -> int:
    sign = fmt.sign_bit if neg else 0
    finite = satfinite or fmt.kind != "ieee" or mode == "rz" or (mode == "rm" and not neg) or (mode == "rp" and neg)
    if fmt.kind == "e8m0" and not satfinite:
        return fmt.nan
    return sign | (fmt.max_code << fmt.shift if finite else fmt.inf)


def round_exact(fmt: FloatFormat, neg: bool, m: int, e: int, mode: str = "rn", satfinite: bool = False,
                ftz: bool = False) -> int:
    """The bits of ``(-1)^neg * m * 2^e`` rounded into ``fmt`` by ``mode``."""
    sign = fmt.sign_bit if neg and fmt.signed else 0
    if m == 0:
        return sign
    if neg and not fmt.signed:                    # ue8m0 holds no negative value: saturate to its smallest
        return 0
    p, emin = fmt.man_bits + 1, 1 - fmt.bias
    lead = e + m.bit_length() - 1
    quantum = max(lead, emin) - fmt.man_bits
    if fmt.kind == "e8m0":
        quantum = lead                            # every value is a power of two
    shift = quantum - e
    if shift <= 0:
        n = m << -shift
    else:
        n, rest = m >> shift, m & ((1 << shift) - 1)
        if round_up(mode, neg, bool(n & 1), rest, 1 << (shift - 1)):
            n += 1
    if n.bit_length() > (1 if fmt.kind == "e8m0" else p):
        n, quantum = n >> 1, quantum + 1
    if n == 0:
        return sign
    if fmt.kind == "e8m0":
        code = quantum + fmt.bias
        if code < 0:
            return 0
        return code if code <= fmt.max_code else _overflow(fmt, neg, mode, satfinite)
    if n < (1 << fmt.man_bits):                   # subnormal
        return sign if ftz else sign | (n << fmt.shift)
    code = ((quantum + fmt.man_bits + fmt.bias) << fmt.man_bits) | (n - (1 << fmt.man_bits))
    if code > fmt.max_code:
        return _overflow(fmt, neg, mode, satfinite)
    return sign | (code << fmt.shift)


def nearest(x: float, fmt: FloatFormat) -> int | None:
    """The bits of ``x`` rounded to nearest even into f64, f32 or f16 by the C library (one rounding from the
    double; a finite ``x`` that overflows becomes an infinity); None for other formats. A NaN is the canonical
    NaN."""
    if x != x:
        return fmt.nan
    name = fmt.name
    try:
        if name == "f64":
            return _U64.unpack(_F64.pack(x))[0]
        if name == "f32":
            return _U32.unpack(_F32.pack(x))[0]
        if name == "f16":
            return _U16.unpack(_F16.pack(x))[0]
    except OverflowError:
        return fmt.inf | (fmt.sign_bit if x < 0 else 0)
    return None


def from_float(x: float, fmt: FloatFormat, mode: str = "rn", satfinite: bool = False, ftz: bool = False) -> int:
    """A Python float rounded into ``fmt`` (NaN to the canonical NaN; an infinity saturates under satfinite)."""
    if math.isnan(x):
        if fmt.kind == "finite":
            raise ValueError(f"NaN has no encoding in {fmt.name}")
        return fmt.nan
    if math.isinf(x):
        neg = x < 0
        if satfinite or fmt.kind != "ieee":
            if fmt.kind == "e8m0":
                return 0 if neg else (fmt.max_code if satfinite else fmt.nan)
            return (fmt.sign_bit if neg else 0) | (fmt.max_code << fmt.shift)
        return (fmt.sign_bit if neg else 0) | fmt.inf
    neg, m, e = exact_parts(x)
    return round_exact(fmt, neg, m, e, mode, satfinite, ftz)
