"""Source for the instructions that touch memory or leave the thread: loads, stores, atomics, address conversions,
branches and exits (PTX ISA #data-movement-and-conversion-instructions, #control-flow-instructions). Each becomes a
call on ``m``, the thread's CTA (``scheduler.Cta``); a vector operand ``{a, b}`` moves consecutive elements."""
from __future__ import annotations

from ..arch.sm80.cache import policy_of_ptx
from ..errors import CompileError
from ..sim.executors.tma import createpolicy_token
from .translate import RUNTIME_EMITTERS, Code, KernelCtx
from .front import Instr
from .operands import MASK, address, dst, signed, src, type_info, vector

__all__ = ["space_of", "register"]

_SPACES = {"global": "global", "shared": "shared", "shared::cta": "shared", "shared::cluster": "cluster",
           "local": "local", "param": "param", "param::entry": "param", "const": "const"}
_VECTORS = {"v2": 2, "v4": 4, "v8": 8}


def space_of(mods: list[str], default: str = "generic") -> str:
    return next((_SPACES[m] for m in mods if m in _SPACES), default)


def _data_space(ctx: KernelCtx, mods: list[str], operand: str) -> str:
    """A load's or store's space: a call's ``.param`` variables live in the thread's local memory (``calls``)."""
    space = space_of(mods)
    name = operand.strip("[] ").split("+")[0].strip()
    return "local" if space == "param" and name in ctx.call_params else space


def register(name: str):
    """Decorator: the emitter of the opcode base ``name``."""
    def add(fn):
        RUNTIME_EMITTERS[name] = fn
        return fn
    return add


_STRONG = ("volatile", "relaxed", "acquire", "release")


def _elem(ins: Instr, mods: list[str]) -> tuple[int, bool, int]:
    """``(bytes, signed, count)`` of a load / store's element type and vector width."""
    bits, sgn, _ = type_info(mods[-1])
    count = next((_VECTORS[m] for m in mods if m in _VECTORS), 1)
    return max(bits // 8, 1), sgn, count


def _widen(ctx: KernelCtx, reg: str, expr: str, nbytes: int, sgn: bool) -> str:
    """A loaded ``nbytes`` value in a wider register: sign-extended for a signed type (PTX ISA #operand-size-
    exceeding-instruction-type-size)."""
    width = ctx.reg_bits(reg)
    if not sgn or width is None or width <= 8 * nbytes:
        return expr
    return f"{signed(expr, 8 * nbytes)} & {MASK[width]}"


@register("ld")
@register("ldu")
def _ld(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    space = _data_space(ctx, mods, ins.args[1])
    nbytes, sgn, count = _elem(ins, mods)
    addr = address(ctx, ins.args[1])
    strong = ", True" if any(m in _STRONG for m in mods) else ""
    if count == 1:
        value = _widen(ctx, ins.args[0], f"m.ld(th, {space!r}, {addr}, {nbytes}{strong})", nbytes, sgn)
        return Code((f"{dst(ctx, ins.args[0])} = {value}",))
    regs = vector(ins.args[0])
    lines = [f"_v = m.ldv(th, {space!r}, {addr}, {nbytes}, {count}{strong})"]
    lines += [f"{dst(ctx, r)} = {_widen(ctx, r, f'_v[{k}]', nbytes, sgn)}" for k, r in enumerate(regs) if r != "_"]
    return Code(tuple(lines))


@register("st")
def _st(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    if "async" in mods:
        return _st_async(ins, mods, ctx)
    space = _data_space(ctx, mods, ins.args[0])
    nbytes, _, count = _elem(ins, mods)
    addr = address(ctx, ins.args[0])
    strong = ", True" if any(m in _STRONG for m in mods) else ""
    if count == 1:
        return Code((f"m.st(th, {space!r}, {addr}, {nbytes}, {src(ctx, ins.args[1], 8 * nbytes)}{strong})",))
    values = ", ".join(src(ctx, v, 8 * nbytes) for v in vector(ins.args[1]))
    return Code((f"m.stv(th, {space!r}, {addr}, {nbytes}, ({values},){strong})",))


def _st_async(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    """``st.async.shared::cluster.mbarrier::complete_tx::bytes{.v2,.v4}.type [a], b, [mbar]``: a remote store that
    completes transaction bytes on the receiver's mbarrier (PTX ISA #data-movement-and-conversion-instructions-
    st-async)."""
    nbytes, _, count = _elem(ins, mods)
    values = ", ".join(src(ctx, v, 8 * nbytes) for v in vector(ins.args[1]))
    return Code((f"m.st_async(th, {address(ctx, ins.args[0])}, {nbytes}, ({values},), "
                 f"{address(ctx, ins.args[2])}, {ins.line})",))


_ATOM_OPS = ("and", "or", "xor", "cas", "exch", "add", "inc", "dec", "min", "max")


@register("atom")
@register("red")
def _atom(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    base = ins.op.split(".")[0]
    op = next((m for m in mods if m in _ATOM_OPS), None)
    if op is None or any(m in _VECTORS for m in mods):
        raise CompileError("an atomic operation of one scalar (and, or, xor, cas, exch, add, inc, dec, min, max)")
    t = mods[-1]
    bits = type_info(t)[0]
    first = 1 if base == "atom" else 0
    addr = address(ctx, ins.args[first])
    operands = [src(ctx, a, bits) for a in ins.args[first + 1:first + (3 if op == "cas" else 2)]]
    call = f"m.atom(th, {space_of(mods)!r}, {op!r}, {t!r}, {addr}, {', '.join(operands)})"
    return Code((f"{dst(ctx, ins.args[0])} = {call}",) if base == "atom" else (call,))


@register("cvta")
def _cvta(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    to = "to" in mods
    space = space_of([m for m in mods if m != "to"], "")
    if not space:
        raise CompileError("cvta names a state space")
    bits = type_info(mods[-1])[0]
    return Code((f"{dst(ctx, ins.args[0])} = m.cvta({space!r}, {to}, {src(ctx, ins.args[1], 64)}) & {MASK[bits]}",))


@register("isspacep")
def _isspacep(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code((f"{dst(ctx, ins.args[0])} = m.isspacep({space_of(mods)!r}, {src(ctx, ins.args[1], 64)})",))


@register("mapa")
def _mapa(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    generic = "shared::cluster" not in mods
    bits = type_info(mods[-1])[0]
    a, b = src(ctx, ins.args[1], bits), src(ctx, ins.args[2], 32)
    return Code((f"{dst(ctx, ins.args[0])} = m.mapa(th, {a}, {b}, {generic}) & {MASK[bits]}",))


@register("getctarank")
def _getctarank(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    generic = "shared::cluster" not in mods
    a = src(ctx, ins.args[1], type_info(mods[-1])[0])
    return Code((f"{dst(ctx, ins.args[0])} = m.getctarank(th, {a}, {generic})",))


@register("bra")
def _bra(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code((f"return {ctx.label(ins.args[0])}",), "jump")


@register("ret")
@register("exit")
def _exit(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code(("return m.exit(th)",), "end")


@register("trap")
@register("brkpt")
def _trap(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code((f"return m.trap(th, {ins.line}, {ins.text!r})",), "end")


def _nothing(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code(("pass",))


# Hints and orderings with no effect on values: every thread's memory operations are performed in program order and
# one at a time, so membar / fence order nothing further (the proxy fences are not checked: docs/interpreter.md).
for _name in ("membar", "fence", "prefetch", "prefetchu", "discard", "applypriority", "griddepcontrol", "pmevent"):
    RUNTIME_EMITTERS[_name] = _nothing


@register("createpolicy")
def _createpolicy(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    """The policy's token (``sim.executors.tma.createpolicy_token``): the copies that take ``.L2::cache_hint`` read
    the policy back from it (a hint: the bytes moved do not depend on it)."""
    policy_of_ptx(ins.op, 0x3F800000)                              # the forms pycute reads back (fractional)
    token = ctx.helper(lambda bits: createpolicy_token(ins.op, [ins.args[0], f"0f{bits:08X}"], lambda t: 0), "policy")
    fraction = src(ctx, ins.args[1], 32) if len(ins.args) == 2 else "0x3F800000"
    return Code((f"{dst(ctx, ins.args[0])} = {token}({fraction})",))


@register("nanosleep")
def _nanosleep(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code(("return m.pause(th, {next})",), "wait")           # lets the other threads run


@register("activemask")
def _activemask(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return Code((f"{dst(ctx, ins.args[0])} = m.activemask(th)",))
