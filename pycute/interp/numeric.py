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
import struct
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


#: Formats whose round-to-nearest arithmetic runs on Python's own doubles (``_fast``).
_FAST = ("f32", "f64")


_D, _Q, _S, _I = (struct.Struct(f) for f in ("<d", "<Q", "<f", "<I"))
_NAN64, _NAN32 = FORMATS["f64"].nan, FORMATS["f32"].nan
_MAN52, _HIDDEN52 = (1 << 52) - 1, 1 << 52


def _f32_bits(r: float, ftz: bool) -> int:
    """A double rounded to nearest even into f32 (the C library's one rounding; an overflow is an infinity; with
    ``ftz`` a subnormal result is a zero of its sign); NaN is the canonical NaN."""
    if r != r:
        return _NAN32
    try:
        bits = _I.unpack(_S.pack(r))[0]
    except OverflowError:
        return 0xFF800000 if r < 0 else 0x7F800000
    if ftz and not bits & 0x7F800000:
        return bits & 0x80000000
    return bits


def _f64_bits(r: float) -> int:
    return _NAN64 if r != r else _Q.unpack(_D.pack(r))[0]


def _fast(op: str, fmt: FloatFormat, ftz: bool) -> Callable[[int, int], int]:
    """``add`` / ``sub`` / ``mul`` to nearest in f32 / f64 on Python's doubles: a double operation is IEEE's, and
    an f32 result rounded from the double one is the correctly rounded f32 result (53 >= 2 * 24 + 2 bits:
    double rounding is innocuous for +, -, *, / and sqrt; S. A. Figueroa, "When is double rounding innocuous?",
    SIGNUM 1995)."""
    calc = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    if fmt.name == "f64":
        unpack, pack = _D.unpack, _Q.pack
        return lambda a, b: _f64_bits(calc(unpack(pack(a))[0], unpack(pack(b))[0]))
    f_unpack, i_pack = _S.unpack, _I.pack

    def run(a: int, b: int) -> int:
        if ftz:
            a = a if a & 0x7F800000 else a & 0x80000000
            b = b if b & 0x7F800000 else b & 0x80000000
        return _f32_bits(calc(f_unpack(i_pack(a))[0], f_unpack(i_pack(b))[0]), ftz)
    return run


def binary(op: str, fmt_name: str, mode: str = "rn", ftz: bool = False, sat: bool = False) -> Callable[[int, int], int]:
    """``add`` / ``sub`` / ``mul`` on two registers' bits."""
    fmt = FORMATS[fmt_name]
    if mode == "rn" and not sat and fmt_name in _FAST:
        return _fast(op, fmt, ftz)

    def run(a: int, b: int) -> int:
        x, y = _inputs(fmt, ftz, a, b)
        if op == "sub":
            y = -y
        value = _mul_exact(x, y) if op == "mul" else _add_exact(x, y, mode)
        return _finish(fmt, value, mode, ftz, sat)
    return run


def _fast_fma64(exact: Callable[[int, int, int], int]) -> Callable[[int, int, int], int]:
    """``fma.rn.f64`` on Python's doubles where the product is exact in a double (normal operands whose
    significands hold at most 53 bits together, a normal product): one double addition rounds the exact sum;
    every other case goes to ``exact``."""
    unpack, pack = _D.unpack, _Q.pack

    def run(a: int, b: int, c: int) -> int:
        ea, eb = (a >> 52) & 0x7FF, (b >> 52) & 0x7FF
        if ea == 0x7FF or eb == 0x7FF or (c >> 52) & 0x7FF == 0x7FF:
            return exact(a, b, c)
        x, y, z = unpack(pack(a))[0], unpack(pack(b))[0], unpack(pack(c))[0]
        if x and y:
            ma, mb = (a & _MAN52) | _HIDDEN52, (b & _MAN52) | _HIDDEN52
            zeros = (ma & -ma).bit_length() + (mb & -mb).bit_length() - 2
            if not ea or not eb or zeros < 53 or not 2 <= ea + eb - 1023 <= 2045:
                return exact(a, b, c)
        return _f64_bits(x * y + z)
    return run


def _fast_fma32(ftz: bool, exact: Callable[[int, int, int], int]) -> Callable[[int, int, int], int]:
    """``fma.rn.f32`` on Python's doubles: the product of two f32 values is exact in a double, the double sum is
    the f32 answer unless it was inexact and landed on a midpoint between two f32 values (double rounding), which
    ``exact`` decides."""
    f_unpack, i_pack = _S.unpack, _I.pack

    def run(a: int, b: int, c: int) -> int:
        if ftz:
            a, b, c = (v if v & 0x7F800000 else v & 0x80000000 for v in (a, b, c))
        x, y, z = f_unpack(i_pack(a))[0], f_unpack(i_pack(b))[0], f_unpack(i_pack(c))[0]
        p = x * y
        r = p + z
        if r - r != 0:                                   # an infinity or NaN: IEEE's own rules decide
            return exact(a, b, c)
        rb = r - p
        if (p - (r - rb)) + (z - rb) and _f32_midpoint(r):       # TwoSum's error: the sum was inexact
            return exact(a, b, c)
        return _f32_bits(r, ftz)
    return run


def _f32_midpoint(r: float) -> bool:
    """Whether the double ``r`` lies halfway between two f32 values (its bits below f32's last place are 1000...)."""
    if r == 0:
        return False
    e = math.frexp(abs(r))[1]
    q = max(e - 24, -149)                                # the f32 quantum's exponent at this magnitude
    scaled = math.ldexp(abs(r), -q)
    return scaled - math.floor(scaled) == 0.5


def fma(fmt_name: str, mode: str = "rn", ftz: bool = False, sat: bool = False) -> Callable[[int, int, int], int]:
    """``fma`` (and ``mad`` with a rounding mode): ``a * b + c`` rounded once."""
    fmt = FORMATS[fmt_name]
    exact = _exact_fma(fmt, mode, ftz, sat)
    if mode == "rn" and not sat and fmt_name == "f64":
        return _fast_fma64(exact)
    if mode == "rn" and not sat and fmt_name == "f32":
        return _fast_fma32(ftz, exact)
    return exact


def _exact_fma(fmt: FloatFormat, mode: str, ftz: bool, sat: bool) -> Callable[[int, int, int], int]:
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
    fast = mode == "rn" and fmt_name in _FAST

    def run(a: int, b: int) -> int:
        x, y = _inputs(fmt, ftz, a, b)
        if fast and y and math.isfinite(x) and math.isfinite(y):
            return _f64_bits(x / y) if fmt_name == "f64" else _f32_bits(x / y, ftz)     # IEEE's (see _fast)
        return _finish(fmt, _quotient(x, y), mode, ftz, False)
    return run


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

    fast = mode == "rn" and fmt_name in _FAST and name in ("sqrt", "rcp")

    def run(a: int) -> int:
        (x,) = _inputs(fmt, ftz, a)
        if fast and (x > 0 or (x and name == "rcp")) and math.isfinite(x):      # IEEE's double sqrt / 1/x (_fast)
            r = math.sqrt(x) if name == "sqrt" else 1.0 / x
            return _f64_bits(r) if fmt_name == "f64" else _f32_bits(r, ftz)
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
