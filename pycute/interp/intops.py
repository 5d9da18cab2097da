"""Integer, bit and predicate instructions as Python source (PTX ISA #integer-arithmetic-instructions,
#logic-and-shift-instructions, #comparison-and-selection-instructions). Each emitter takes the instruction, its
modifiers (the opcode's dot-separated parts after the base) and the ``Ctx`` and returns lines that assign the
destination; values are unsigned bit patterns of the type's width, read signed where the type says ``.s``."""
from __future__ import annotations

from typing import Callable

from ..errors import CompileError, EmulationError
from .front import Instr
from .operands import MASK, Ctx, dst, signed, src, type_info

__all__ = ["INT_EMITTERS", "int_compare", "selp"]


def _type(ins: Instr, mods: list[str]) -> tuple[str, int, bool]:
    t = mods[-1] if mods else "b32"
    bits, sgn, flt = type_info(t)
    if flt:
        raise CompileError(f"{ins.text!r}: a floating-point type where an integer one is expected")
    return t, bits, sgn


def _set(ctx: Ctx, d: str, expr: str, bits: int) -> list[str]:
    target = dst(ctx, d)
    return [f"{target} = bool({expr})" if bits == 1 else f"{target} = ({expr}) & {MASK[bits]}"]


def _ops(ctx: Ctx, ins: Instr, bits: int, sgn: bool, first: int = 1) -> list[str]:
    return [signed(src(ctx, a, bits), bits) if sgn else src(ctx, a, bits) for a in ins.args[first:]]


def _lanes16(fn: Callable[[int, int], int], sgn: bool) -> Callable[[int, int], int]:
    """A 16x2 SIMD operation on two 32-bit registers, half by half."""
    def run(a: int, b: int) -> int:
        out = 0
        for shift in (0, 16):
            x, y = (a >> shift) & MASK[16], (b >> shift) & MASK[16]
            if sgn:
                x, y = (x ^ 0x8000) - 0x8000, (y ^ 0x8000) - 0x8000
            out |= (fn(x, y) & MASK[16]) << shift
        return out
    return run


def _add(ins: Instr, mods: list[str], ctx: Ctx, sign: str = "+") -> list[str]:
    t, bits, sgn = _type(ins, mods)
    d = ins.args[0]
    if t.endswith("x2"):
        fn = _lanes16((lambda x, y: x + y) if sign == "+" else (lambda x, y: x - y), t.startswith("s"))
        return _set(ctx, d, f"{ctx.helper(fn, 'simd')}({src(ctx, ins.args[1], 32)}, {src(ctx, ins.args[2], 32)})", 32)
    a, b = _ops(ctx, ins, bits, sgn and "sat" in mods)
    if "sat" in mods:
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return _set(ctx, d, f"min(max({a} {sign} {b}, {lo}), {hi})", bits)
    if "cc" not in mods:
        return _set(ctx, d, f"{a} {sign} {b}", bits)
    carry = f"((_t >> {bits}) & 1)" if sign == "+" else f"int({a} < {b})"
    return [f"_t = {a} {sign} {b}", f"th.cc = {carry}", *_set(ctx, d, "_t", bits)]


def _addc(ins: Instr, mods: list[str], ctx: Ctx, sub: bool = False) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = _ops(ctx, ins, bits, False)
    expr = f"{a} - ({b} + th.cc)" if sub else f"{a} + {b} + th.cc"
    carry = f"int({a} < {b} + th.cc)" if sub else f"((_t >> {bits}) & 1)"
    lines = [f"_t = {expr}"] + ([f"th.cc = {carry}"] if "cc" in mods else [])
    return lines + _set(ctx, ins.args[0], "_t", bits)


def _product(mods: list[str], a: str, b: str, bits: int) -> tuple[str, int]:
    """The part of ``a * b`` that ``.lo`` / ``.hi`` / ``.wide`` keep, and its width."""
    if "wide" in mods:
        return f"({a} * {b})", 2 * bits
    if "hi" in mods:
        return f"(({a} * {b}) >> {bits})", bits
    return f"({a} * {b})", bits


def _mul(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = _ops(ctx, ins, bits, sgn)
    expr, width = _product(mods, a, b, bits)
    return _set(ctx, ins.args[0], expr, width)


def _mad(ins: Instr, mods: list[str], ctx: Ctx, carry_in: bool = False) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = _ops(ctx, ins, bits, sgn)[:2]
    product, width = _product(mods, a, b, bits)
    c = src(ctx, ins.args[3], width)
    expr = f"{product} + ({signed(c, width) if sgn else c})" + (" + th.cc" if carry_in else "")
    if "sat" in mods:
        expr = f"min(max({expr}, {-(1 << (bits - 1))}), {(1 << (bits - 1)) - 1})"
    if "cc" in mods:
        return [f"_t = ({expr}) & {MASK[2 * width]}", f"th.cc = (_t >> {width}) & 1", *_set(ctx, ins.args[0], "_t", width)]
    return _set(ctx, ins.args[0], expr, width)


_MUL24_HI = 16          # mul24.hi keeps bits 47..16 of the 48-bit product


def _mul24(ins: Instr, mods: list[str], ctx: Ctx, add: bool = False) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = (signed(f"({x} & {MASK[24]})", 24) if sgn else f"({x} & {MASK[24]})" for x in
            (src(ctx, ins.args[1], 32), src(ctx, ins.args[2], 32)))
    expr = f"(({a} * {b}) >> {_MUL24_HI})" if "hi" in mods else f"({a} * {b})"
    return _set(ctx, ins.args[0], expr + (f" + {src(ctx, ins.args[3], 32)}" if add else ""), 32)


def _divide(a: int, b: int, rem: bool) -> int:
    if b == 0:
        raise EmulationError("integer division by zero (PTX leaves the result undefined)")
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)         # truncation toward zero
    return a - q * b if rem else q


def _div(ins: Instr, mods: list[str], ctx: Ctx, rem: bool = False) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = _ops(ctx, ins, bits, sgn)
    return _set(ctx, ins.args[0], f"{ctx.helper(_divide, 'div')}({a}, {b}, {rem})", bits)


def _unary(expr: str) -> Callable[[Instr, list[str], Ctx], list[str]]:
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        t, bits, sgn = _type(ins, mods)
        if bits == 1:
            return _set(ctx, ins.args[0], f"not {src(ctx, ins.args[1], 1)}", 1)
        (a,) = _ops(ctx, ins, bits, sgn or expr == "abs")
        return _set(ctx, ins.args[0], expr.replace("abs", f"abs({a})").replace("A", a), bits)
    return emit


def _minmax(ins: Instr, mods: list[str], ctx: Ctx, fn: str = "min") -> list[str]:
    t, bits, sgn = _type(ins, mods)
    if t.endswith("x2"):
        helper = ctx.helper(_lanes16(min if fn == "min" else max, t.startswith("s")), fn)
        return _set(ctx, ins.args[0], f"{helper}({src(ctx, ins.args[1], 32)}, {src(ctx, ins.args[2], 32)})", 32)
    expr = f"{fn}({', '.join(_ops(ctx, ins, bits, sgn))})"
    return _set(ctx, ins.args[0], f"max({expr}, 0)" if "relu" in mods else expr, bits)


def _bits(fn: Callable[..., int]) -> Callable[[Instr, list[str], Ctx], list[str]]:
    """A one-operand bit query (``popc``, ``clz``, ``brev``, ``bfind``) through a helper of (value, width)."""
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        t, bits, sgn = _type(ins, mods)
        width = bits if fn is _brev else 32
        call = f"{ctx.helper(fn, fn.__name__.strip('_'))}({src(ctx, ins.args[1], bits)}, {bits}"
        call += f", {sgn}, {'shiftamt' in mods})" if fn is _bfind else ")"
        return _set(ctx, ins.args[0], call, width)
    return emit


def _popc(a: int, bits: int) -> int:
    return bin(a).count("1")


def _clz(a: int, bits: int) -> int:
    return bits - a.bit_length()


def _brev(a: int, bits: int) -> int:
    return int(format(a, f"0{bits}b")[::-1], 2)


def _bfind(a: int, bits: int, sgn: bool, shiftamt: bool) -> int:
    if sgn and a >> (bits - 1):
        a = ~a & MASK[bits]                                 # the most significant bit unlike the sign
    if a == 0:
        return MASK[32]
    pos = a.bit_length() - 1
    return bits - 1 - pos if shiftamt else pos


def _bfe(a: int, pos: int, length: int, bits: int, sgn: bool) -> int:
    pos, length = pos & 0xFF, length & 0xFF
    if length == 0:
        return 0
    sbit = (a >> min(pos + length - 1, bits - 1)) & 1 if sgn else 0
    out = 0
    for i in range(bits):
        bit = (a >> (pos + i)) & 1 if i < length and pos + i < bits else sbit
        out |= bit << i
    return out


def _bfi(f: int, b: int, pos: int, length: int, bits: int) -> int:
    pos, length = pos & 0xFF, length & 0xFF
    for i in range(length):
        if pos + i >= bits:
            break
        b = (b & ~(1 << (pos + i))) | (((f >> i) & 1) << (pos + i))
    return b


def _fields(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    base = ins.op.split(".")[0]
    args = [src(ctx, a, bits if k < (1 if base == "bfe" else 2) else 32) for k, a in enumerate(ins.args[1:])]
    call = f"{ctx.helper(_bfe, 'bfe')}({', '.join(args)}, {bits}, {sgn})" if base == "bfe" else \
        f"{ctx.helper(_bfi, 'bfi')}({', '.join(args)}, {bits})"
    return _set(ctx, ins.args[0], call, bits)


def _shift(ins: Instr, mods: list[str], ctx: Ctx, left: bool = True) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a = signed(src(ctx, ins.args[1], bits), bits) if sgn and not left else src(ctx, ins.args[1], bits)
    n = f"min({src(ctx, ins.args[2], 32)}, {bits})"
    return _set(ctx, ins.args[0], f"{a} << {n}" if left else f"{a} >> {n}", bits)


def _shf(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    a, b, c = (src(ctx, x, 32) for x in ins.args[1:4])
    n = f"({c} & 31)" if "wrap" in mods else f"min({c}, 32)"
    pair = f"(({b} << 32) | {a})"
    return _set(ctx, ins.args[0], f"({pair} << {n}) >> 32" if "l" in mods else f"{pair} >> {n}", 32)


def _logic(op: str) -> Callable[[Instr, list[str], Ctx], list[str]]:
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        t, bits, sgn = _type(ins, mods)
        a, b = (src(ctx, x, bits) for x in ins.args[1:3])
        return _set(ctx, ins.args[0], f"{a} {op} {b}", bits)
    return emit


def _lop3(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    d, a, b, c, lut = ins.args[:5]
    x, y, z = (src(ctx, v, 32) for v in (a, b, c))
    table = int(src(ctx, lut, 8))
    terms = [f"({x if i & 4 else '~' + x} & {y if i & 2 else '~' + y} & {z if i & 1 else '~' + z})"
             for i in range(8) if table >> i & 1]
    expr = " | ".join(terms) or "0"
    if "|" not in d:
        return _set(ctx, d, expr, 32)
    r, p = (s.strip() for s in d.split("|"))
    join = {"and": "and", "or": "or"}[mods[0]]
    return [f"_t = ({expr}) & {MASK[32]}", *_set(ctx, r, "_t", 32),
            f"{dst(ctx, p)} = bool(_t != 0) {join} bool({src(ctx, ins.args[5], 1)})"]


def _prmt(a: int, b: int, c: int, mode: str) -> int:
    data = b << 32 | a
    byte = [(data >> (8 * i)) & 0xFF for i in range(8)]
    if mode == "":
        out = 0
        for k in range(4):
            sel = (c >> (4 * k)) & 0xF
            v = byte[sel & 7]
            out |= ((0xFF if v & 0x80 else 0) if sel & 8 else v) << (8 * k)
        return out
    s = c & 3
    table = {"f4e": [(s + k) & 7 for k in range(4)], "b4e": [(s - k) & 7 for k in range(4)],
             "rc8": [s] * 4, "ecl": [max(k, s) for k in range(4)], "ecr": [min(k, s) for k in range(4)],
             "rc16": [2 * (s & 1), 2 * (s & 1) + 1] * 2}[mode]
    return sum(byte[i] << (8 * k) for k, i in enumerate(table))


def _prmt_emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    mode = next((m for m in mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), "")
    a, b, c = (src(ctx, x, 32) for x in ins.args[1:4])
    return _set(ctx, ins.args[0], f"{ctx.helper(_prmt, 'prmt')}({a}, {b}, {c}, {mode!r})", 32)


def int_compare(cmp: str, a: str, b: str) -> str:
    ops = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "lo": "<", "ls": "<=",
           "hi": ">", "hs": ">="}
    if cmp not in ops:
        raise CompileError(f"integer comparison .{cmp} is outside the interpreted subset")
    return f"({a} {ops[cmp]} {b})"


def _sad(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    t, bits, sgn = _type(ins, mods)
    a, b = _ops(ctx, ins, bits, sgn)[:2]
    return _set(ctx, ins.args[0], f"{src(ctx, ins.args[3], bits)} + abs({a} - {b})", bits)


def selp(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    """``selp`` of any type: a choice of bit patterns (PTX ISA #comparison-and-selection-instructions-selp)."""
    t = mods[-1]
    bits = type_info(t)[0]
    a, b = (src(ctx, x, bits) for x in ins.args[1:3])
    return _set(ctx, ins.args[0], f"{a} if {src(ctx, ins.args[3], 1)} else {b}", bits)


def _dp(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    base = ins.op.split(".")[0]
    signs = [m.startswith("s") for m in mods if m in ("u32", "s32")]
    n, width = (4, 8) if base == "dp4a" else (2, 16)
    a, b, c = (src(ctx, x, 32) for x in ins.args[1:4])
    fn = ctx.helper(_dot, "dot")
    return _set(ctx, ins.args[0], f"{fn}({a}, {b}, {n}, {width}, {signs}, {'hi' in mods}) + {signed(c, 32)}", 32)


def _dot(a: int, b: int, n: int, width: int, signs: list[bool], hi: bool) -> int:
    def lane(x: int, k: int, sgn: bool, w: int) -> int:
        v = (x >> (k * w)) & MASK[w]
        return (v ^ (1 << (w - 1))) - (1 << (w - 1)) if sgn else v
    off = 2 if hi else 0
    return sum(lane(a, k, signs[0], width) * lane(b, k + off if n == 2 else k, signs[1], 8 if n == 2 else width)
               for k in range(n))


INT_EMITTERS: dict[str, Callable[[Instr, list[str], Ctx], list[str]]] = {
    "add": _add, "sub": lambda i, m, c: _add(i, m, c, "-"), "addc": _addc,
    "subc": lambda i, m, c: _addc(i, m, c, True), "mul": _mul, "mad": _mad,
    "madc": lambda i, m, c: _mad(i, m, c, True), "mul24": _mul24, "mad24": lambda i, m, c: _mul24(i, m, c, True),
    "div": _div, "rem": lambda i, m, c: _div(i, m, c, True), "abs": _unary("abs"), "neg": _unary("-A"),
    "not": _unary("~A"), "cnot": _unary("A == 0"), "min": _minmax, "max": lambda i, m, c: _minmax(i, m, c, "max"),
    "popc": _bits(_popc), "clz": _bits(_clz), "brev": _bits(_brev), "bfind": _bits(_bfind), "bfe": _fields,
    "bfi": _fields, "shl": _shift, "shr": lambda i, m, c: _shift(i, m, c, False), "shf": _shf,
    "and": _logic("&"), "or": _logic("|"), "xor": _logic("^"), "lop3": _lop3, "prmt": _prmt_emit,
    "dp4a": _dp, "dp2a": _dp, "sad": _sad,
}
