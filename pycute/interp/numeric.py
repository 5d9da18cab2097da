"""Floating-point arithmetic on register bits (PTX ISA #floating-point-instructions, #half-precision-floating-point-
instructions): each operation is computed exactly and rounded once (``floats.round_exact``), so ``add``, ``sub``,
``mul``, ``fma``, ``div.rn`` / ``rz`` / ``rm`` / ``rp``, ``sqrt.rn`` ... ``rcp.rn`` ... are bit-exact with
every rounding mode, ``.ftz`` (subnormal inputs and results become zeros of their sign) and ``.sat`` (clamped to
[0, 1], NaN to +0). ``min`` / ``max`` follow the ISA's NaN rules (the other operand; with ``.NaN`` a NaN).

The approximate instructions (``rcp`` / ``sqrt`` / ``rsqrt`` / ``ex2`` / ``lg2`` / ``sin`` / ``cos`` / ``tanh``
``.approx``, ``div.approx`` and ``div.full``) are modelled as the exact function rounded to nearest: the ISA bounds
their error (e.g. ``rcp.approx.f32`` within 1 ulp) but does not pin their bits, so a result may differ from the
hardware's in the last place; their special values (zeros, infinities, NaN) follow the ISA's tables.
"""
from __future__ import annotations

import math
from typing import Callable

from .floats import FORMATS, FloatFormat, decode, exact_parts, from_float, round_exact

__all__ = ["binary", "fma", "divide", "unary", "minmax", "compare", "flush", "is_nan", "relu", "SCALE"]

#: Bits of headroom an exact quotient or square root carries below the rounding point (one sticky bit decides).
SCALE = 64


def is_nan(bits: int, fmt: FloatFormat) -> bool:
    return math.isnan(decode(bits, fmt))


def flush(bits: int, fmt: FloatFormat) -> int:
    """``.ftz`` on an input: a subnormal becomes a zero of its sign."""
    mag = (bits >> fmt.shift) & ((1 << (fmt.exp_bits + fmt.man_bits)) - 1)
    if mag and mag < (1 << fmt.man_bits):
        return bits & fmt.sign_bit
    return bits


def _finish(fmt: FloatFormat, value: tuple | float, mode: str, ftz: bool, sat: bool) -> int:
    """Bits of an exact value ``(neg, m, e)`` (or a float special: inf / NaN / signed zero) after ``.sat``."""
    if isinstance(value, float):
        if math.isnan(value):
            return 0 if sat else fmt.nan
        bits = from_float(value, fmt, mode)
    else:
        neg, m, e = value
        bits = round_exact(fmt, neg, m, e, mode, ftz=ftz)
    if sat:
        x = decode(bits, fmt)
        if x < 0 or (x == 0 and bits):
            return 0
        if x > 1:
            return from_float(1.0, fmt)
    return bits


def _add_exact(x: float, y: float, mode: str) -> tuple | float:
    if not (math.isfinite(x) and math.isfinite(y)):
        return x + y
    na, ma, ea = exact_parts(x)
    nb, mb, eb = exact_parts(y)
    e = min(ea, eb)
    s = (-ma if na else ma) * (1 << (ea - e)) + (-mb if nb else mb) * (1 << (eb - e))
    if s == 0:                                         # an exact zero: + unless rounding down (IEEE 754 6.3)
        return -0.0 if (na and nb) or (mode == "rm" and (na or nb)) else 0.0
    return s < 0, abs(s), e


def _mul_exact(x: float, y: float) -> tuple | float:
    if not (math.isfinite(x) and math.isfinite(y)):
        return x * y
    na, ma, ea = exact_parts(x)
    nb, mb, eb = exact_parts(y)
    if ma == 0 or mb == 0:
        return -0.0 if na != nb else 0.0
    return na != nb, ma * mb, ea + eb


def _inputs(fmt: FloatFormat, ftz: bool, *bits: int) -> list[float]:
    return [decode(flush(b, fmt) if ftz else b, fmt) for b in bits]


def binary(op: str, fmt_name: str, mode: str = "rn", ftz: bool = False, sat: bool = False) -> Callable[[int, int], int]:
    """``add`` / ``sub`` / ``mul`` on two registers' bits."""
    fmt = FORMATS[fmt_name]

    def run(a: int, b: int) -> int:
        x, y = _inputs(fmt, ftz, a, b)
        if op == "sub":
            y = -y
        value = _mul_exact(x, y) if op == "mul" else _add_exact(x, y, mode)
        return _finish(fmt, value, mode, ftz, sat)
    return run


def fma(fmt_name: str, mode: str = "rn", ftz: bool = False, sat: bool = False) -> Callable[[int, int, int], int]:
    """``fma`` (and ``mad`` with a rounding mode): ``a * b + c`` rounded once."""
    fmt = FORMATS[fmt_name]

    def run(a: int, b: int, c: int) -> int:
        x, y, z = _inputs(fmt, ftz, a, b, c)
        if not (math.isfinite(x) and math.isfinite(y)):
            value: tuple | float = x * y + z               # an infinity or NaN decides
        elif not math.isfinite(z):
            value = z
        else:
            product = _mul_exact(x, y)
            if isinstance(product, float):               # a zero product
                value = _add_exact(product, z, mode)
            elif z == 0:
                value = product
            else:
                nz, mz, ez = exact_parts(z)
                e = min(product[2], ez)
                s = (-product[1] if product[0] else product[1]) * (1 << (product[2] - e)) + \
                    (-mz if nz else mz) * (1 << (ez - e))
                value = (s < 0, abs(s), e) if s else (-0.0 if mode == "rm" else 0.0)
        return _finish(fmt, value, mode, ftz, sat)
    return run


def _quotient(x: float, y: float) -> tuple | float:
    if not (math.isfinite(x) and math.isfinite(y)) or x == 0 or y == 0:
        if math.isnan(x) or math.isnan(y) or (x == 0 and y == 0) or (math.isinf(x) and math.isinf(y)):
            return math.nan
        neg = (math.copysign(1, x) < 0) != (math.copysign(1, y) < 0)
        zero = x == 0 or math.isinf(y)
        return (-0.0 if neg else 0.0) if zero else (-math.inf if neg else math.inf)
    na, ma, ea = exact_parts(x)
    nb, mb, eb = exact_parts(y)
    k = max(0, SCALE + mb.bit_length() - ma.bit_length())
    q, r = divmod(ma << k, mb)
    return na != nb, 2 * q + (r != 0), ea - eb - k - 1


def _root(x: float) -> tuple | float:
    if math.isnan(x) or x < 0:
        return math.nan
    if x == 0 or math.isinf(x):
        return x
    _, m, e = exact_parts(x)
    if e % 2:
        m, e = m << 1, e - 1
    k = max(0, SCALE - m.bit_length() // 2)
    n = m << (2 * k)
    s = math.isqrt(n)
    return False, 2 * s + (s * s != n), (e // 2) - k - 1


def divide(fmt_name: str, mode: str = "rn", ftz: bool = False) -> Callable[[int, int], int]:
    """``div.rnd`` (bit-exact), and ``div.full`` / ``div.approx`` modelled as the quotient rounded to nearest."""
    fmt = FORMATS[fmt_name]
    return lambda a, b: _finish(fmt, _quotient(*_inputs(fmt, ftz, a, b)), mode, ftz, False)


def _approx(name: str, x: float) -> tuple | float:
    if name == "rcp":
        return _quotient(1.0, x)
    if name == "sqrt":
        return _root(x)
    if name == "rsqrt":
        if x == 0:
            return math.copysign(math.inf, x)
        return _quotient(1.0, math.sqrt(x)) if x > 0 and math.isfinite(x) else (0.0 if x == math.inf else math.nan)
    if math.isnan(x):
        return math.nan
    if name == "ex2":
        return math.inf if x >= 1024 else (0.0 if x < -1100 else 2.0 ** x)
    if name == "lg2":
        return -math.inf if x == 0 else (math.nan if x < 0 else (math.inf if math.isinf(x) else math.log2(x)))
    if name in ("sin", "cos"):
        return math.nan if math.isinf(x) else (math.sin(x) if name == "sin" else math.cos(x))
    if name == "tanh":
        return math.tanh(x)
    raise ValueError(name)


def unary(name: str, fmt_name: str, mode: str = "rn", ftz: bool = False) -> Callable[[int], int]:
    """``abs`` / ``neg`` (sign bit), ``sqrt.rnd`` / ``rcp.rnd`` (bit-exact) and the ``.approx`` functions."""
    fmt = FORMATS[fmt_name]
    if name == "abs":
        return lambda a: (flush(a, fmt) if ftz else a) & ~fmt.sign_bit
    if name == "neg":
        return lambda a: (flush(a, fmt) if ftz else a) ^ fmt.sign_bit

    def run(a: int) -> int:
        (x,) = _inputs(fmt, ftz, a)
        value = _approx(name, x)
        if isinstance(value, tuple):
            neg, m, e = value
            return round_exact(fmt, neg, m, e, mode, ftz=ftz)
        return _finish(fmt, value, mode, ftz, False)
    return run


def minmax(op: str, fmt_name: str, ftz: bool = False, nan: bool = False, abs_: bool = False,
           xorsign: bool = False) -> Callable[..., int]:
    """``min`` / ``max`` of two or three operands with ``.NaN``, ``.abs`` and ``.xorsign`` (PTX's pseudocode;
    -0 orders below +0)."""
    fmt = FORMATS[fmt_name]

    def two(a: int, b: int) -> int:
        x, y = decode(a, fmt), decode(b, fmt)
        if math.isnan(x) or math.isnan(y):
            if nan or (math.isnan(x) and math.isnan(y)):
                return fmt.nan
            return b if math.isnan(x) else a
        key = (x, -(a >> (fmt.bits - 1) & 1)), (y, -(b >> (fmt.bits - 1) & 1))
        first = key[0] < key[1] if op == "min" else key[0] > key[1]
        return a if first else b

    def run(*ops: int) -> int:
        ops = tuple(flush(o, fmt) if ftz else o for o in ops)
        sign = (ops[0] ^ ops[1]) & fmt.sign_bit
        if abs_:
            ops = tuple(o & ~fmt.sign_bit for o in ops)
        d = two(ops[0], ops[1])
        for o in ops[2:]:
            d = two(d, o)
        if xorsign and not math.isnan(decode(d, fmt)):
            d = (d & ~fmt.sign_bit) | sign
        return d
    return run


_ORDERED = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
            "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}


def compare(cmp: str, fmt_name: str, ftz: bool = False) -> Callable[[int, int], bool]:
    """A float ``setp`` / ``set`` comparison: ordered ones are false with a NaN operand, the ``u`` ones true;
    ``num`` / ``nan`` test that neither / either is NaN."""
    fmt = FORMATS[fmt_name]

    def run(a: int, b: int) -> bool:
        x, y = _inputs(fmt, ftz, a, b)
        unordered = math.isnan(x) or math.isnan(y)
        if cmp == "num":
            return not unordered
        if cmp == "nan":
            return unordered
        if unordered:
            return cmp.endswith("u")
        return _ORDERED[cmp.rstrip("u") if cmp not in _ORDERED else cmp](x, y)
    return run


def relu(bits: int, fmt: FloatFormat) -> int:
    """``.relu``: a negative result becomes +0, a NaN the canonical NaN."""
    if math.isnan(decode(bits, fmt)):
        return fmt.nan
    return 0 if bits & fmt.sign_bit else bits
