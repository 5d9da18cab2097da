"""Numbers in the kernels' formats: ``decode`` (element codes -> float64 values), ``quantize`` (float64 values ->
the nearest values a format holds, ties to even, rounded once), ``to_codes`` (representable values -> codes) and
``block_quantize`` (a tensor -> MX / NVFP4 elements and their per-block scales).

Every format's numbers come from the facts pycute already holds: the 8-bit and narrower formats from the value of
each of their codes (``pycute.sim.operand.decode``), bf16 and tf32 from their place in an f32 word
(``pycute.dtypes``), f16 and f32 from numpy's IEEE types."""
from __future__ import annotations

import functools

import attrs
import numpy as np

from ..dtypes import BF16_SHIFT, TF32_MASK, DTypeLike, dtype
from ..sim.convert import FORMATS
from ..sim.operand import decode as _decode

__all__ = ["decode", "quantize", "to_codes", "BlockScaled", "block_quantize", "MX_BLOCK", "NVFP4_BLOCK"]

#: Elements per scale factor: OCP MX (ue8m0 scales) and NVFP4 (ue4m3 scales), PTX #tcgen05-block-scaling.
MX_BLOCK, NVFP4_BLOCK = 32, 16
_F32 = np.finfo(np.float32)
#: f32 words: bf16 keeps their top half, tf32 their top 19 bits (PTX #alternate-floating-point-data-formats).
_WORD_PRECISION = {"f32": _F32.nmant + 1, "bf16": _F32.nmant + 1 - BF16_SHIFT,
                   "tf32": _F32.nmant + 1 - (~TF32_MASK & 0xFFFFFFFF).bit_length()}
_NARROW = ("f8e4m3", "f8e5m2", "f6e2m3", "f6e3m2", "f4e2m1", "ue8m0", "ue4m3")
_UNSIGNED = ("ue8m0", "ue4m3")


def _name(fmt: DTypeLike) -> str:
    name = dtype(fmt).name
    if name not in (*_WORD_PRECISION, "f16", *_NARROW):
        raise ValueError(f"{name} is not a float format pycute.testing rounds into (one of f32, tf32, bf16, f16, "
                         f"{', '.join(_NARROW)})")
    return name


def decode(codes: np.ndarray, fmt: DTypeLike) -> np.ndarray:
    """The float64 values of element codes (bit patterns) of ``fmt``; integers ``i8`` / ``u8`` as integers."""
    return _decode(np.asarray(codes), dtype(fmt).name)


@functools.lru_cache(maxsize=None)
def _table(name: str) -> tuple[np.ndarray, np.ndarray, int | None, int | None]:
    """A narrow format's finite non-negative values (ascending, each with its lowest code) and its infinity and
    NaN codes (None where it has none)."""
    codes = np.arange(1 << dtype(name).bits, dtype=np.uint64)
    values = _decode(codes, name)
    keep = np.isfinite(values) & ~np.signbit(values)
    finite, first = np.unique(values[keep], return_index=True)
    inf = next((int(c) for c, v in zip(codes, values) if v == np.inf), None)
    nan = FORMATS[name].nan if name in FORMATS else next((int(c) for c, v in zip(codes, values) if np.isnan(v)), None)
    return finite, codes[keep][first].astype(np.int64), inf, nan


def _round_narrow(x: np.ndarray, name: str, satfinite: bool) -> np.ndarray:
    finite, codes, inf, _ = _table(name)
    a = np.abs(x)
    hi = np.clip(np.searchsorted(finite, a), 1, len(finite) - 1)
    lo_v, hi_v = finite[hi - 1], finite[hi]
    up = (a - lo_v > hi_v - a) | ((a - lo_v == hi_v - a) & (codes[hi] % 2 == 0))
    out = np.where(up, hi_v, lo_v)
    top = finite[-1]
    past = top + (top - finite[-2]) / 2          # half the top spacing past the largest value: ties to the even code
    over = (a > past) | ((a == past) & (codes[-1] % 2 == 1))
    out = np.where(a > top, top, out)
    if not satfinite:
        out = np.where(over, np.inf if inf is not None else np.nan, out)
    if name not in _UNSIGNED:
        out = np.copysign(out, x)                 # an overflow's NaN keeps its sign, as cvt.rn writes it
    return np.where(np.isnan(x), np.nan, out)


def _round_word(x: np.ndarray, precision: int, satfinite: bool) -> np.ndarray:
    """``x`` to ``precision`` significant bits in f32's exponent range, ties to even (exact in float64)."""
    a = np.abs(x)
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    q = np.maximum(e - precision, _F32.minexp - precision + 1)
    out = np.ldexp(np.rint(np.ldexp(a, -q)), q)
    top = np.ldexp(2.0 - np.ldexp(1.0, 1 - precision), _F32.maxexp - 1)
    past = top + np.ldexp(1.0, _F32.maxexp - precision) / 2          # half an ulp of the top binade past it
    out = np.where(a >= past, top if satfinite else np.inf, np.minimum(out, top))
    out = np.where(np.isinf(a), top if satfinite else np.inf, out)
    return np.where(np.isnan(x), np.nan, np.copysign(out, x))


def quantize(x: np.ndarray, fmt: DTypeLike, satfinite: bool = False) -> np.ndarray:
    """The float64 values of ``fmt`` nearest ``x`` (float64), ties to even, rounded once. A value past the largest
    finite one by half its spacing or more becomes infinity, or NaN in a format without one (PTX's ``cvt.rn``), or
    with ``satfinite`` the largest finite value of its sign. A kernel's epilogue rounds its f32 result: quantize to
    ``"f32"`` first to model that (``quantize(quantize(x, "f32"), "bf16")``)."""
    name = _name(fmt)
    a = np.asarray(x, dtype=np.float64)
    if name in _UNSIGNED and bool((a < 0).any()):
        raise ValueError(f"quantize: {name} holds no negative value; got {float(a[a < 0].flat[0])!r}")
    if name in _NARROW:
        return _round_narrow(a, name, satfinite)
    if name == "f16":
        with np.errstate(over="ignore"):
            out = np.where(np.isnan(a), np.nan, a.astype(np.float16).astype(np.float64))
        return np.where(np.isinf(out), np.copysign(float(np.finfo(np.float16).max), a), out) if satfinite else out
    return _round_word(a, _WORD_PRECISION[name], satfinite)


def to_codes(values: np.ndarray, fmt: DTypeLike) -> np.ndarray:
    """The codes (bit patterns: uint8 / uint16 / uint32) of ``values`` that ``fmt`` holds exactly (``quantize``
    first); NaN becomes the format's canonical NaN. A value ``fmt`` does not hold is a ValueError naming it."""
    name = _name(fmt)
    v = np.asarray(values, dtype=np.float64)
    bad = ~np.isnan(v) & (quantize(v, name) != v)
    if bad.any():
        raise ValueError(f"to_codes: {float(v[bad].flat[0])!r} is not a {name} value; quantize it first")
    if name in _NARROW:
        finite, codes, inf, nan = _table(name)
        if bool(np.isnan(v).any()) and nan is None:
            raise ValueError(f"to_codes: {name} has no NaN")
        out = codes[np.clip(np.searchsorted(finite, np.abs(v)), 0, len(finite) - 1)]
        if inf is not None:
            out = np.where(np.isinf(v), inf, out)
        out = np.where(np.isnan(v), nan if nan is not None else 0, out)
        if name not in _UNSIGNED:
            out = np.where(np.signbit(v), out | (1 << (dtype(name).bits - 1)), out)
        return out.astype(np.uint8)
    sign = np.signbit(v)
    if name == "f16":
        nan16 = np.uint16(FORMATS["f16"].nan) | (sign.astype(np.uint16) << np.uint16(15))
        return np.where(np.isnan(v), nan16, v.astype(np.float16).view(np.uint16)).astype(np.uint16)
    bits = np.where(np.isnan(v), np.uint32(0x7FFFFFFF), v.astype(np.float32).view(np.uint32)) | \
        (sign.astype(np.uint32) << np.uint32(31))                        # the canonical f32 NaN, docs/interpreter.md
    if name == "bf16":
        return (bits >> np.uint32(BF16_SHIFT)).astype(np.uint16)
    return bits.astype(np.uint32)


@attrs.frozen
class BlockScaled:
    """A tensor as a block-scaled GEMM operand: ``elements`` (float64 values of ``element`` format) and ``scales``
    (float64 values of ``scale`` format, one per ``block`` elements along the last axis); ``dequantized`` is what
    the tensor core multiplies."""

    elements: np.ndarray
    scales: np.ndarray
    element: str
    scale: str
    block: int

    @property
    def dequantized(self) -> np.ndarray:
        return self.elements * np.repeat(self.scales, self.block, axis=-1)

    def codes(self) -> tuple[np.ndarray, np.ndarray]:
        """(element codes, scale codes): what the kernel's global arrays hold, before any packing."""
        return to_codes(self.elements, self.element), to_codes(self.scales, self.scale)


def block_quantize(x: np.ndarray, element: DTypeLike, scale: DTypeLike = "ue8m0",
                   block: int | None = None) -> BlockScaled:
    """``x`` (rows x K, K a whole number of blocks) split into blocks of ``block`` along K, each scaled into
    ``element``: with ``ue8m0`` scales (OCP MX v1.0 section 6.3, block 32) the scale is 2^(floor(log2(amax)) -
    emax), emax the exponent of ``element``'s largest value; with ``ue4m3`` scales (NVFP4, block 16) it is amax / the
    largest element rounded to ue4m3 (at least its smallest value). Elements are ``x / scale`` rounded with
    ``satfinite``; an all-zero block gets scale 1."""
    el, sf = _name(element), _name(scale)
    if el not in _NARROW or el in _UNSIGNED:
        raise ValueError(f"block_quantize: elements are fp8, fp6 or fp4 (f8e4m3, f8e5m2, f6e2m3, f6e3m2, f4e2m1), "
                         f"not {el}")
    if sf not in _UNSIGNED:
        raise ValueError(f"block_quantize: scales are ue8m0 or ue4m3, not {sf}")
    block = block or (MX_BLOCK if sf == "ue8m0" else NVFP4_BLOCK)
    a = np.asarray(x, dtype=np.float64)
    if a.ndim < 1 or a.shape[-1] % block:
        raise ValueError(f"block_quantize: the last axis ({a.shape[-1] if a.ndim else 'none'}) is not a whole "
                         f"number of {block}-element blocks; pad K with zeros")
    amax = np.abs(a.reshape(*a.shape[:-1], -1, block)).max(axis=-1)
    big = float(_table(el)[0][-1])
    if sf == "ue8m0":
        exp = np.floor(np.log2(np.where(amax > 0, amax, 1.0))) - np.floor(np.log2(big))
        scales = quantize(np.where(amax > 0, np.exp2(exp), 1.0), sf, satfinite=True)
    else:
        smallest = float(_table(sf)[0][1])          # the least nonzero scale
        scales = np.maximum(quantize(np.where(amax > 0, amax / big, 1.0), sf, satfinite=True), smallest)
    elements = quantize(a / np.repeat(scales, block, axis=-1), el, satfinite=True)
    return BlockScaled(elements, scales, el, sf, block)
