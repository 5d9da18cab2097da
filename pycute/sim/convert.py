"""Exact models of the packing conversions (``arch.sm80.cvt``): f32 bit patterns to bf16, f16, e4m3 and e5m2 bit
patterns, rounded to nearest with ties to even, as PTX ISA #data-movement-and-conversion-instructions-cvt defines
them. Integer arithmetic on the bits throughout (no float rounding of our own): an f32 is ``S * 2^E`` with a 24-bit
``S``; the result is the nearest multiple of the target's quantum at that magnitude, which is the format's
encoding read as an integer. Subnormal inputs and results are kept (no ``.ftz``); a NaN becomes the canonical NaN
(sign cleared); an infinite or too-large value becomes infinity, or with ``.satfinite`` the largest finite value of
its sign (e4m3 has no infinity: without ``.satfinite`` it becomes NaN). docs/epilogue.md records the H200's answer
for every special value."""
from __future__ import annotations

import attrs
import numpy as np

from ..errors import EmulationError

__all__ = ["FloatFormat", "FORMATS", "round_f32", "pack_pair", "f32_bits"]

_F32_MANTISSA = 23
_F32_EXP_MASK = 0xFF
_F32_ABS = 0x7FFFFFFF
_F32_INF = 0x7F800000


@attrs.frozen
class FloatFormat:
    """A narrow float: exponent and mantissa bits, bias, whether it has infinities, and its canonical NaN."""

    name: str
    exponent: int
    mantissa: int
    bias: int
    inf: bool
    nan: int
    max_finite: int                 # the largest finite encoding (positive)

    @property
    def sign_bit(self) -> int:
        return self.exponent + self.mantissa


FORMATS = {"bf16": FloatFormat("bf16", 8, 7, 127, True, 0x7FFF, 0x7F7F),
           "f16": FloatFormat("f16", 5, 10, 15, True, 0x7FFF, 0x7BFF),
           "f8e4m3": FloatFormat("f8e4m3", 4, 3, 7, False, 0x7F, 0x7E),
           "f8e5m2": FloatFormat("f8e5m2", 5, 2, 15, True, 0x7F, 0x7B)}


def f32_bits(values: np.ndarray) -> np.ndarray:
    """float32 values (or their bits) as uint32 bit patterns."""
    a = np.asarray(values)
    return a.view(np.uint32) if a.dtype == np.float32 else a.astype(np.uint32)


def _round_shift(s: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``round_half_even(s / 2^k)`` for ``k >= 0`` (``s`` below 2^24)."""
    k = np.minimum(k, 40)
    n = s >> k
    rem = s - (n << k)
    half = np.where(k > 0, np.left_shift(np.int64(1), np.maximum(k - 1, 0)), 0)
    up = (k > 0) & ((rem > half) | ((rem == half) & (n & 1 == 1)))
    return n + up


def round_f32(bits: np.ndarray, fmt: str, satfinite: bool = False) -> np.ndarray:
    """The ``fmt`` encodings (uint16) of f32 bit patterns ``bits``, as ``cvt.rn{.satfinite}`` produces them."""
    if fmt not in FORMATS:
        raise EmulationError(f"no conversion model for {fmt!r} (one of {', '.join(FORMATS)})")
    f = FORMATS[fmt]
    x = f32_bits(bits).astype(np.int64)
    sign, absx = x >> 31, x & _F32_ABS
    e = (absx >> _F32_MANTISSA) & _F32_EXP_MASK
    m = absx & ((1 << _F32_MANTISSA) - 1)
    s = np.where(e > 0, m | (1 << _F32_MANTISSA), m)
    ex = np.maximum(e, 1) - 127 - _F32_MANTISSA               # value = s * 2^ex
    _, top = np.frexp(np.maximum(s, 1).astype(np.float64))
    u = top.astype(np.int64) - 1 + ex                          # floor(log2(value)) for s > 0
    q = np.maximum(u - f.mantissa, 1 - f.bias - f.mantissa)    # the quantum's exponent
    k = q - ex
    n = np.where(k >= 0, _round_shift(s, np.maximum(k, 0)), s << np.maximum(-k, 0))
    enc = np.where(n == 0, 0, ((q + f.mantissa + f.bias - 1) << f.mantissa) + n)
    big = (enc > f.max_finite) | (absx == _F32_INF)
    infinite = ((1 << f.exponent) - 1) << f.mantissa
    over = f.max_finite if satfinite else (infinite if f.inf else f.nan)
    enc = np.where(big, over, enc)
    enc = enc | (sign << f.sign_bit)
    enc = np.where(absx > _F32_INF, f.nan, enc)
    return enc.astype(np.uint16)


def pack_pair(a_bits: np.ndarray, b_bits: np.ndarray, fmt: str, satfinite: bool = False) -> np.ndarray:
    """``cvt.rn{.satfinite}.<fmt>x2.f32 d, a, b``: ``a`` converted in the upper half of ``d``, ``b`` in the lower
    (16-bit pairs: a uint32 ``d``; 8-bit pairs: a uint16 ``d``)."""
    hi, lo = round_f32(a_bits, fmt, satfinite), round_f32(b_bits, fmt, satfinite)
    width = FORMATS[fmt].exponent + FORMATS[fmt].mantissa + 1
    out = (hi.astype(np.uint32) << np.uint32(width)) | lo.astype(np.uint32)
    return out if width == 16 else out.astype(np.uint16)
