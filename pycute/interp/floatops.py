"""Floating-point and comparison instructions as Python source: the scalar types f64 / f32 / f16 / bf16 and the
packed f16x2 / bf16x2 / f32x2 (each half or word on its own, PTX ISA #half-precision-floating-point-instructions),
``setp`` / ``set`` / ``slct`` for integers and floats. The arithmetic itself is ``numeric``'s."""
from __future__ import annotations

import math
from typing import Callable

from ..errors import CompileError
from . import numeric
from .floats import FORMATS, decode
from .front import Instr
from .intops import int_compare, selp
from .operands import MASK, Ctx, dst, signed, src, type_info

__all__ = ["FLOAT_EMITTERS", "float_type", "packed"]

_ROUNDINGS = ("rn", "rz", "rm", "rp")
_HALF = 16              # bits of each half of a packed f16x2 / bf16x2 register


def float_type(t: str) -> tuple[str, int, int]:
    """``(format name, lanes, lane bits)`` of a float type suffix (``bf16x2`` -> ("bf16", 2, 16))."""
    base, _, lanes = t.partition("x")
    if base not in FORMATS:
        raise CompileError(f"floating-point type .{t} is outside the interpreted subset")
    width = type_info(base)[0] if base not in ("bf16", "tf32") else (16 if base == "bf16" else 32)
    return base, int(lanes or 1), width


def packed(fn: Callable[..., int], lanes: int, width: int) -> Callable[..., int]:
    """``fn`` applied lane by lane to registers holding ``lanes`` values of ``width`` bits (lowest lane first)."""
    if lanes == 1:
        return fn
    mask = MASK[width]

    def run(*regs: int) -> int:
        out = 0
        for k in range(lanes):
            out |= (fn(*((r >> (k * width)) & mask for r in regs)) & mask) << (k * width)
        return out
    return run


def _mode(mods: list[str], default: str | None = "rn") -> str:
    found = [m for m in mods if m in _ROUNDINGS]
    if not found and default is None:
        raise CompileError(f"a rounding modifier is required ({'/'.join(_ROUNDINGS)})")
    return found[0] if found else str(default)


def _call(ctx: Ctx, ins: Instr, fn: Callable[..., int], bits: int, first: int = 1, count: int | None = None) -> list[str]:
    args = ins.args[first:] if count is None else ins.args[first:first + count]
    call = f"{ctx.helper(fn, 'f')}({', '.join(src(ctx, a, bits) for a in args)})"
    return [f"{dst(ctx, ins.args[0])} = {call}"]


def _arith(op: str) -> Callable[[Instr, list[str], Ctx], list[str]]:
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        name, lanes, width = float_type(mods[-1])
        ftz, sat = "ftz" in mods, "sat" in mods
        fn: Callable[..., int]
        if op in ("fma", "mad"):
            fn = numeric.fma(name, _mode(mods, None if op == "fma" else "rn"), ftz, sat)
            if "relu" in mods:
                fn = _relu(fn, name)
        else:
            fn = numeric.binary(op, name, _mode(mods), ftz, sat)
        return _call(ctx, ins, packed(fn, lanes, width), lanes * width)
    return emit


def _relu(fn: Callable[..., int], name: str) -> Callable[..., int]:
    fmt = FORMATS[name]
    return lambda *a: numeric.relu(fn(*a), fmt)


def _div(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    name, lanes, width = float_type(mods[-1])
    exact = [m for m in mods if m in _ROUNDINGS]
    if not exact and not ({"approx", "full"} & set(mods)):
        raise CompileError(f"{ins.text!r}: div of floats takes .approx, .full or a rounding modifier")
    return _call(ctx, ins, numeric.divide(name, exact[0] if exact else "rn", "ftz" in mods), width)


def _function(name: str) -> Callable[[Instr, list[str], Ctx], list[str]]:
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        fmt, lanes, width = float_type(mods[-1])
        mode = _mode(mods, "rn")
        if name in ("rcp", "sqrt") and "approx" not in mods and not any(m in _ROUNDINGS for m in mods):
            raise CompileError(f"{ins.text!r}: {name} takes .approx or a rounding modifier")
        fn = numeric.unary(name, fmt, mode, "ftz" in mods)
        return _call(ctx, ins, packed(fn, lanes, width), lanes * width)
    return emit


def _minmax(op: str) -> Callable[[Instr, list[str], Ctx], list[str]]:
    def emit(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
        fmt, lanes, width = float_type(mods[-1])
        fn = numeric.minmax(op, fmt, "ftz" in mods, "NaN" in mods, "abs" in mods, "xorsign" in mods)
        if "relu" in mods:
            fn = _relu(fn, fmt)
        return _call(ctx, ins, packed(fn, lanes, width), lanes * width)
    return emit


def _copysign(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    fmt = FORMATS[float_type(mods[-1])[0]]
    a, b = (src(ctx, x, fmt.bits) for x in ins.args[1:3])
    return [f"{dst(ctx, ins.args[0])} = ({b} & {~fmt.sign_bit & MASK[fmt.bits]}) | ({a} & {fmt.sign_bit})"]


def _testp(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    fmt = FORMATS[float_type(mods[-1])[0]]

    def test(a: int) -> bool:
        x = decode(a, fmt)
        normal = x == 0 or (math.isfinite(x) and abs(x) >= math.ldexp(1.0, 1 - fmt.bias))
        return {"finite": math.isfinite(x), "infinite": math.isinf(x), "number": not math.isnan(x),
                "notanumber": math.isnan(x), "normal": normal,
                "subnormal": math.isfinite(x) and not normal}[mods[0]]
    return [f"{dst(ctx, ins.args[0])} = {ctx.helper(test, 'testp')}({src(ctx, ins.args[1], fmt.bits)})"]


def _comparison(ctx: Ctx, cmp: str, t: str, a: str, b: str, ftz: bool) -> str:
    bits, sgn, flt = type_info(t)
    if flt:
        fmt = float_type(t)[0]
        return f"{ctx.helper(numeric.compare(cmp, fmt, ftz), 'cmp')}({src(ctx, a, bits)}, {src(ctx, b, bits)})"
    x, y = src(ctx, a, bits), src(ctx, b, bits)
    if sgn and cmp not in ("eq", "ne"):
        x, y = signed(x, bits), signed(y, bits)
    return int_compare(cmp, x, y)


def _boolop(mods: list[str]) -> str | None:
    return next((m for m in mods if m in ("and", "or", "xor")), None)


def _setp(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    cmp, t, join = mods[0], mods[-1], _boolop(mods)
    targets = [x.strip() for x in ins.args[0].split("|")]
    if t in ("f16x2", "bf16x2"):                    # p from the low halves, q from the high halves
        h = ctx.helper(numeric.compare(cmp, t[:-2], "ftz" in mods), "cmp")
        a, b = src(ctx, ins.args[1], 32), src(ctx, ins.args[2], 32)
        half = MASK[_HALF]
        return [f"{dst(ctx, targets[0])} = {h}({a} & {half}, {b} & {half})",
                f"{dst(ctx, targets[1])} = {h}(({a} >> {_HALF}) & {half}, ({b} >> {_HALF}) & {half})"]
    lines = [f"_t = {_comparison(ctx, cmp, t, ins.args[1], ins.args[2], 'ftz' in mods)}"]
    c = src(ctx, ins.args[3], 1) if join else None
    combine = {"and": "and", "or": "or", "xor": "!="}

    def join_with(expr: str) -> str:
        return f"bool({expr}) {combine[join]} bool({c})" if join else f"bool({expr})"
    lines.append(f"{dst(ctx, targets[0])} = {join_with('_t')}")
    if len(targets) > 1:
        lines.append(f"{dst(ctx, targets[1])} = {join_with('not _t')}")
    return lines


def _set(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    cmp, dtype, stype, join = mods[0], mods[-2], mods[-1], _boolop(mods)
    expr = _comparison(ctx, cmp, stype, ins.args[1], ins.args[2], "ftz" in mods)
    if join:
        expr = f"(bool({expr}) {dict(xor='!=').get(join, join)} bool({src(ctx, ins.args[3], 1)}))"
    true = "0x3F800000" if dtype == "f32" else str(MASK[32])
    return [f"{dst(ctx, ins.args[0])} = {true} if {expr} else 0"]


def _slct(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    dtype, ctype = mods[-2], mods[-1]
    bits = type_info(dtype)[0]
    a, b = (src(ctx, x, bits) for x in ins.args[1:3])
    if ctype == "f32":
        test = f"{ctx.helper(numeric.compare('ge', 'f32', 'ftz' in mods), 'cmp')}({src(ctx, ins.args[3], 32)}, 0)"
    else:
        test = f"{signed(src(ctx, ins.args[3], 32), 32)} >= 0"
    return [f"{dst(ctx, ins.args[0])} = {a} if {test} else {b}"]


FLOAT_EMITTERS: dict[str, Callable[[Instr, list[str], Ctx], list[str]]] = {
    "add": _arith("add"), "sub": _arith("sub"), "mul": _arith("mul"), "fma": _arith("fma"), "mad": _arith("mad"),
    "div": _div, "rcp": _function("rcp"), "sqrt": _function("sqrt"), "rsqrt": _function("rsqrt"),
    "ex2": _function("ex2"), "lg2": _function("lg2"), "sin": _function("sin"), "cos": _function("cos"),
    "tanh": _function("tanh"), "abs": _function("abs"), "neg": _function("neg"), "min": _minmax("min"),
    "max": _minmax("max"), "copysign": _copysign, "testp": _testp,
}
#: Comparisons and selections, for integer and float types alike.
COMPARE_EMITTERS = {"setp": _setp, "set": _set, "slct": _slct, "selp": selp}
