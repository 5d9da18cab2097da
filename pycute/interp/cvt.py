"""``cvt`` and ``mov`` as Python source (PTX ISA #data-movement-and-conversion-instructions-cvt, -mov).

``cvt`` between integers (truncation, sign or zero extension, ``.sat`` clamping), from integers to floats and back
(``.rni`` / ``.rzi`` / ``.rmi`` / ``.rpi``; float-to-integer saturates and a NaN becomes 0, as the ISA says), between
float formats with every rounding mode, ``.ftz``, ``.sat``, ``.satfinite`` and ``.relu``, and the packed forms:
``f16x2`` / ``bf16x2`` from two f32 (``a`` to the upper half), ``e4m3x2`` / ``e5m2x2`` / ``e2m3x2`` / ``e3m2x2`` /
``ue8m0x2`` from two f32 (``a`` to the upper byte) or from a packed f16x2 / bf16x2, ``e2m1x2`` (``a`` to the upper
nibble), and back to ``f16x2`` / ``bf16x2``. Stochastic rounding (``.rs``) and the x4 forms are refused."""
from __future__ import annotations

import math
from typing import Callable

from ..errors import CompileError, EmulationError
from .floats import FORMATS, decode, exact_parts, from_float, nearest, round_exact, round_up

from .front import Instr
from .numeric import flush, relu
from .operands import MASK, Ctx, dst, signed, src, type_info, vector

__all__ = ["CONVERT_EMITTERS", "scalar_convert"]

_INT_ROUNDING = {"rni": "rn", "rzi": "rz", "rmi": "rm", "rpi": "rp"}
_FLOAT_ROUNDING = ("rn", "rz", "rm", "rp", "rna")


def _fmt_name(t: str) -> str | None:
    """The float format of a cvt type (``e4m3x2`` -> ``e4m3``), None for integer types."""
    base = t[:-2] if t.endswith(("x2", "x4")) else t
    return base if base in FORMATS else None


def _to_integer(x: float, mode: str) -> int:
    """``x`` (finite) rounded to an integer by ``mode``."""
    neg, m, e = exact_parts(x)
    if e >= 0:
        n = m << e
    else:
        n, rest = m >> -e, m & ((1 << -e) - 1)
        if round_up(mode, neg, bool(n & 1), rest, 1 << (-e - 1)):
            n += 1
    return -n if neg else n


def _float_to_int(fmt_name: str, dbits: int, dsigned: bool, mode: str, ftz: bool) -> Callable[[int], int]:
    fmt = FORMATS[fmt_name]
    lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dsigned else (0, MASK[dbits])

    def run(a: int) -> int:
        x = decode(flush(a, fmt) if ftz else a, fmt)
        if math.isnan(x) and fmt_name == "f64":
            # An f32 NaN converts to 0 on the GPU, as here; an f64 NaN does not (cvt.rzi.s32.f64 and
            # cvt.rni.s64.f64 gave something else for every NaN on the H100: docs/interpreter.md), and which value
            # is not recorded yet: refuse rather than give a value the GPU does not.
            raise EmulationError(f"cvt of an f64 NaN to {'s' if dsigned else 'u'}{dbits}: the GPU's result is not "
                                 f"0 and not yet known to pycute (docs/interpreter.md, float-to-integer)")
        if math.isnan(x):
            return 0
        n = hi if x == math.inf else lo if x == -math.inf else min(max(_to_integer(x, mode), lo), hi)
        return n & MASK[dbits]
    return run


def _float_to_float(src_name: str, dst_name: str, mode: str, flags: set[str], integral: bool) -> Callable[[int], int]:
    sfmt, dfmt = FORMATS[src_name], FORMATS[dst_name]
    ftz, satfinite = "ftz" in flags, "satfinite" in flags
    dfmt_mask = MASK[32] ^ ((1 << dfmt.shift) - 1)

    fast = mode == "rn" and not integral and not flags - {"rn"} and {src_name, dst_name} <= {"f64", "f32", "f16"}

    def run(a: int) -> int:
        x = decode(flush(a, sfmt) if ftz and src_name == "f32" else a, sfmt)
        if fast:                                        # one C-library rounding from the exact double
            return int(nearest(x, dfmt))                # type: ignore[arg-type]
        if dst_name == "tf32" and src_name == "f32" and math.isnan(x):
            # The H200 keeps a NaN's sign, exponent and top ten payload bits (ptxas's sm_90 code masks the low 13;
            # a payload only there comes out as infinity): docs/interpreter.md, "On the H200".
            return a & dfmt_mask
        if integral and math.isfinite(x):
            x = math.copysign(float(_to_integer(x, mode)), x)      # IEEE roundToIntegral keeps the sign
        try:
            bits = from_float(x, dfmt, mode if not integral else "rn", satfinite, ftz and dst_name == "f32")
        except ValueError as e:
            raise EmulationError(f"cvt to {dst_name}: {e} (PTX leaves the result unspecified)") from None
        if "relu" in flags:
            bits = relu(bits, dfmt)
        if "sat" in flags and not math.isnan(y := decode(bits, dfmt)):
            bits = 0 if y < 0 or (y == 0 and bits) else (from_float(1.0, dfmt) if y > 1 else bits)
        elif "sat" in flags:
            bits = 0
        return bits
    return run


def _int_to_float(sbits: int, ssigned: bool, dst_name: str, mode: str, flags: set[str]) -> Callable[[int], int]:
    fmt = FORMATS[dst_name]

    def run(a: int) -> int:
        v = ((a ^ (1 << (sbits - 1))) - (1 << (sbits - 1))) if ssigned else a
        bits = round_exact(fmt, v < 0, abs(v), 0, mode, "satfinite" in flags)
        return relu(bits, fmt) if "relu" in flags else bits
    return run


def scalar_convert(dtype: str, atype: str, flags: set[str]) -> Callable[[int], int]:
    """One value of ``atype`` converted to ``dtype`` under the modifiers ``flags``."""
    dname, aname = _fmt_name(dtype), _fmt_name(atype)
    irnd = next((_INT_ROUNDING[f] for f in flags if f in _INT_ROUNDING), None)
    frnd = next((f for f in flags if f in _FLOAT_ROUNDING), None)
    dbits, dsigned, _ = type_info(dtype) if dname is None else (0, False, True)
    abits, asigned, _ = type_info(atype) if aname is None else (0, False, True)
    if dname is None and aname is not None:
        return _float_to_int(aname, dbits, dsigned, irnd or "rz", "ftz" in flags)
    if dname is not None and aname is None:
        return _int_to_float(abits, asigned, dname, frnd or "rn", flags)
    if dname is not None and aname is not None:
        return _float_to_float(aname, dname, irnd or frnd or "rn", flags, irnd is not None)
    raise CompileError("scalar_convert: integer to integer needs no helper")


def _int_cvt(ins: Instr, dtype: str, atype: str, flags: set[str], ctx: Ctx) -> list[str]:
    dbits, dsigned, _ = type_info(dtype)
    abits, asigned, _ = type_info(atype)
    value = src(ctx, ins.args[1], abits)
    if asigned:
        value = signed(value, abits)
    if "sat" in flags:
        lo, hi = (-(1 << (dbits - 1)), (1 << (dbits - 1)) - 1) if dsigned else (0, MASK[dbits])
        value = f"min(max({value}, {lo}), {hi})"
    return [f"{dst(ctx, ins.args[0])} = {_extend(ctx, ins.args[0], f'({value}) & {MASK[dbits]}', dbits, dsigned)}"]


def _extend(ctx: Ctx, reg: str, expr: str, bits: int, sgn: bool) -> str:
    """A ``bits``-bit value written to a wider register: sign-extended for a signed type (PTX ISA #operand-size-
    exceeding-instruction-type-size), else zero-extended."""
    width = ctx.reg_bits(reg.strip())
    if not sgn or width is None or width <= bits:
        return expr
    return f"({signed(expr, bits)}) & {MASK[width]}"


def _pack2(conv: Callable[[int], int], in_w: int, out_w: int, pair: bool) -> Callable[..., int]:
    """Two lanes: from two registers (the first to the upper lane) or from one packed register."""
    if pair:
        return lambda a, b: (conv(a) << out_w) | conv(b)
    return lambda a: (conv((a >> in_w) & MASK[in_w]) << out_w) | conv(a & MASK[in_w])


def _lane_width(t: str) -> int:
    name = _fmt_name(t)
    return {"e2m1": 4}.get(str(name), 8) if name not in ("f16", "bf16", "f32") else type_info(str(name))[0]


def _packed_cvt(ins: Instr, dtype: str, atype: str, flags: set[str], ctx: Ctx) -> list[str]:
    if "rs" in flags or dtype.endswith("x4"):
        raise CompileError(f"{ins.text!r}: stochastic rounding and x4 conversions are outside the subset")
    dname, aname = _fmt_name(dtype), _fmt_name(atype)
    if dname is None or aname is None:
        raise CompileError(f"{ins.text!r}: a packed conversion between float formats")
    conv = scalar_convert(dname, aname, flags)
    out_w = _lane_width(dtype)
    pair = not atype.endswith("x2")
    in_w = 32 if pair else _lane_width(atype)
    fn = _pack2(conv, in_w, out_w, pair)
    args = ins.args[1:3] if pair else ins.args[1:2]
    return [f"{dst(ctx, ins.args[0])} = {ctx.helper(fn, 'cvt')}({', '.join(src(ctx, a, 32) for a in args)})"]


def _cvt(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    if len(mods) < 2:
        raise CompileError(f"{ins.text!r}: cvt names a destination and a source type")
    dtype, atype, flags = mods[-2], mods[-1], set(mods[:-2])
    if dtype.endswith("x2") or atype.endswith("x2"):
        return _packed_cvt(ins, dtype, atype, flags, ctx)
    if _fmt_name(dtype) is None and _fmt_name(atype) is None:
        return _int_cvt(ins, dtype, atype, flags, ctx)
    fn = scalar_convert(dtype, atype, flags)
    abits = FORMATS[a].bits if (a := _fmt_name(atype)) else type_info(atype)[0]
    call = f"{ctx.helper(fn, 'cvt')}({src(ctx, ins.args[1], abits)})"
    dbits, dsigned, dflt = type_info(dtype) if _fmt_name(dtype) is None else (32, False, True)
    if not dflt:
        call = _extend(ctx, ins.args[0], call, dbits, dsigned)
    return [f"{dst(ctx, ins.args[0])} = {call}"]


def _mov(ins: Instr, mods: list[str], ctx: Ctx) -> list[str]:
    bits = type_info(mods[-1])[0] if mods else 32
    d, a = ins.args[0], ins.args[1]
    if d.startswith("{"):                                   # unpack: lowest element from the lowest bits
        parts = vector(d)
        w = bits // len(parts)
        value = src(ctx, a, bits)
        return [f"{dst(ctx, p)} = ({value} >> {k * w}) & {MASK[w]}" for k, p in enumerate(parts) if p != "_"]
    if a.startswith("{"):
        parts = vector(a)
        w = bits // len(parts)
        return [f"{dst(ctx, d)} = " + " | ".join(f"({src(ctx, p, w)} << {k * w})" for k, p in enumerate(parts))]
    if bits == 1:
        return [f"{dst(ctx, d)} = bool({src(ctx, a, 1)})"]
    return [f"{dst(ctx, d)} = {src(ctx, a, bits)} & {MASK[bits]}"]


CONVERT_EMITTERS = {"cvt": _cvt, "mov": _mov}
