"""The arithmetic of a ``WgmmaAccumulation`` (``arch.sm90.wgmma``): one wgmma instruction's D = A B^T + C summed
the way a multi-term adder sums it, in numpy, exactly.

Products of the operands are exact in float64 (at most 11 x 11 significant bits); a block's terms are scaled to the
grid of its largest exponent (a power of two: exact), cut to integers by the term rounding, added as integers
(below 2^53: exact) and scaled back; the sum is cut to ``sum_bits`` below its leading bit where the model says so.
The last step rounds the exact sum (a float64 pair ``hi + lo`` where C is added after the products) into D's type
with the model's rounding, then applies the model's sign of zero and overflow. Infinities and NaNs follow IEEE
through a plain float64 sum (a NaN D's code is ``arch.sm90.wgmma.WGMMA_NAN``, written by ``d_codes_of``)."""
from __future__ import annotations

import numpy as np

from ..arch.sm90.wgmma import WgmmaAccumulation

__all__ = ["dot_sum", "exponents", "round_pair", "EMIN"]

#: The smallest normal exponent of each element type (a subnormal aligns as if it had this exponent).
EMIN = {"f8e4m3": -6, "f8e5m2": -14, "f16": -14, "bf16": -126, "tf32": -126, "f32": -126}
_ZERO = -(1 << 14)                           # the "exponent" of a zero term: below every grid
_DTYPE = {"f32": np.float32, "f16": np.float16}
#: The binade past each D type's largest (its largest finite value is just below it).
_OVERFLOW = {"f32": 2.0 ** 128, "f16": 2.0 ** 16}


def exponents(x: np.ndarray, emin: int) -> np.ndarray:
    """``floor(log2 |x|)``, at least ``emin`` (a subnormal's alignment exponent), as int64; zeros get a value below
    every grid."""
    _, e = np.frexp(np.abs(x))
    return np.where(x == 0, _ZERO, np.maximum(e.astype(np.int64) - 1, emin))


def _cut(x: np.ndarray, mode: str) -> np.ndarray:
    """``x`` (a term on its grid) cut to an integer: toward zero, toward minus infinity or to nearest even."""
    return {"rz": np.trunc, "rd": np.floor, "rn": np.rint}[mode](x)


def _scale(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    return np.ldexp(x, np.clip(shift, -2000, 2000).astype(np.int32))


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``s + e == a + b`` exactly, ``s`` the float64 sum (Knuth's TwoSum)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def round_pair(hi: np.ndarray, lo: np.ndarray, d: str, mode: str) -> np.ndarray:
    """The exact value ``hi + lo`` (``|lo|`` at most half an ulp of ``hi`` in float64) rounded into D's type ``d``
    (f32, f16) to nearest even (``rn``) or toward zero (``rz``), as float64."""
    dtype: type = _DTYPE[d]
    with np.errstate(over="ignore"):
        r: np.ndarray = hi.astype(dtype)                                # hi to nearest (one rounding)
    r64 = r.astype(np.float64)
    if mode == "rn":                                # hi halfway between two values of the type: lo breaks the tie
        for toward in (np.inf, -np.inf):
            with np.errstate(over="ignore"):
                nb = np.nextafter(r, dtype(toward))
            mid = (r64 + nb.astype(np.float64)) / 2
            pick = np.isfinite(r64) & np.isfinite(nb) & (hi == mid) & (lo != 0) & ((lo > 0) == (toward > 0))
            r = np.where(pick, nb, r)
        return r.astype(np.float64)
    above = (np.abs(r64) > np.abs(hi)) | ((r64 == hi) & (lo != 0) & ((lo > 0) != (hi > 0)))
    r = np.where(above & (r != 0), np.nextafter(r, dtype(0)), r)
    return r.astype(np.float64)


def _exact_sum(p: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hi, lo)``: the sum of ``c`` and the products along the last axis, to twice float64's precision (cascaded
    TwoSum)."""
    hi, lo = c.copy(), np.zeros_like(c)
    for k in range(p.shape[-1]):
        hi, e = _two_sum(hi, p[..., k])
        lo = lo + e
    return _two_sum(hi, lo)


def dot_sum(a: np.ndarray, b: np.ndarray, c: np.ndarray | None, a_type: str, b_type: str, d: str,
            model: WgmmaAccumulation) -> np.ndarray:
    """One instruction's D elements as float64 values of type ``d``: ``a`` and ``b`` element values (negations
    applied) broadcasting to (..., K) -- an (M, K) A and an (N, K) B as ``a[:, None]``, ``b[None]`` --, ``c`` (...)
    the accumulator's values or None (scale-d 0)."""
    with np.errstate(invalid="ignore"):
        p = a * b                                                       # exact; inf * 0 is NaN
    cc = np.zeros(p.shape[:-1]) if c is None else np.broadcast_to(np.asarray(c, dtype=np.float64), p.shape[:-1])
    special = ~np.isfinite(p).all(axis=-1) | ~np.isfinite(cc)
    if model.exact:
        hi, lo = _exact_sum(np.where(np.isfinite(p), p, 0), np.where(np.isfinite(cc), cc, 0))
    else:
        hi, lo = _aligned_sum(a, b, np.where(np.isfinite(p), p, 0), np.where(np.isfinite(cc), cc, 0), a_type,
                              b_type, d, model)
    out = round_pair(hi, lo, d, model.rounding)
    if model.zero == "positive":                # the adder's zero has no sign: a cancellation or underflow is +0
        out = np.where(out == 0, 0.0, out)
    if model.overflow == "inf":                 # the exponent runs out whatever the rounding (rz included)
        out = np.where(np.abs(hi) >= _OVERFLOW[d], np.copysign(np.inf, hi), out)
    zeros = (p == 0).all(axis=-1) & (cc == 0)                           # IEEE: -0 only if every term is -0
    negative = np.signbit(p).all(axis=-1) & (np.signbit(cc) | (c is None))
    out = np.where(zeros, np.where(negative, -0.0, 0.0), out)
    if special.any():
        with np.errstate(invalid="ignore"):
            ieee = p.sum(axis=-1) + cc
        out = np.where(special, ieee, out)
    return out


def _aligned_sum(a: np.ndarray, b: np.ndarray, p: np.ndarray, c: np.ndarray, a_type: str, b_type: str, d: str,
                 model: WgmmaAccumulation) -> tuple[np.ndarray, np.ndarray]:
    assert model.fraction_bits is not None
    bits = model.fraction_bits
    if model.grid == "exponents":
        e = exponents(a, EMIN[a_type]) + exponents(b, EMIN[b_type])
        e = np.where(p == 0, _ZERO, e)
    else:
        e = exponents(p, -(1 << 12))
    aligned = model.c_term == "aligned"
    acc = c.copy() if aligned else np.zeros_like(c)
    for start in range(0, p.shape[-1], model.block):
        terms, grid = p[..., start:start + model.block], e[..., start:start + model.block].max(axis=-1)
        top = np.maximum(grid, exponents(acc, EMIN[d]))
        shift = bits - top
        total = _cut(_scale(terms, shift[..., None]), model.term_rounding).sum(axis=-1)
        total = total + _cut(_scale(acc, shift), model.term_rounding)
        acc = _scale(total, -shift)
    if model.sum_bits is not None:              # the sum normalised into a register of sum_bits fraction bits
        # its exponent floored at D's smallest normal one, as C's alignment is: the register holds a subnormal C
        # with the bits the alignment left it
        shift = model.sum_bits - exponents(acc, EMIN[d])
        acc = np.where(acc == 0, acc, _scale(np.trunc(_scale(acc, shift)), -shift))
    if aligned:
        return acc, np.zeros_like(acc)
    return _two_sum(acc, c)
