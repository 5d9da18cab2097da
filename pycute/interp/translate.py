"""Each PTX statement decoded once into Python: an entry becomes one generated module whose functions are its basic
blocks (``def _n12(R, th, m): ...; return 15``), with registers as slots of the thread's list ``R``. A block ends
at a label, after a branch, and around a statement that may wait for other threads (a barrier, an mbarrier wait,
a warp-collective instruction), which is a block of its own so the scheduler can resume a thread right after it.

Every statement must decode: an opcode outside the subset is a CompileError naming it and its PTX line before any
thread runs. A runtime error inside a block names the statement it came from.
"""
from __future__ import annotations

from typing import Any, Callable

import attrs

from ..errors import CompileError, EmulationError
from .cvt import CONVERT_EMITTERS
from .floatops import COMPARE_EMITTERS, FLOAT_EMITTERS
from .front import REG_WIDTH, Entry, Instr
from .intops import INT_EMITTERS
from .operands import SPECIAL_NAMES, Ctx, type_info

__all__ = ["Code", "Program", "KernelCtx", "compile_entry", "emit_inline", "RUNTIME_EMITTERS", "locate"]


@attrs.frozen
class Code:
    """What a runtime emitter writes: ``lines`` and their ``kind``: ``inline`` (falls through), ``wait`` (may
    suspend the thread; ``{here}`` / ``{next}`` in the lines are this statement's and the next one's index),
    ``jump`` (``{target}`` given) or ``end`` (the thread exits)."""

    lines: tuple[str, ...]
    kind: str = "inline"


#: Opcode base -> emitter of the instructions that talk to memory, other threads or agents (filled by
#: ``rtemit``): ``(instr, mods, ctx) -> Code``.
RUNTIME_EMITTERS: dict[str, Callable[[Instr, list[str], Any], Code]] = {}
#: ``(family of an opcode or None, emitter of a decoded family's statement)`` for opcodes no emitter above takes
#: (set by ``rtemit_sync``: the families ``pycute.interp.stream.ISSUE_DECODERS`` decodes).
FAMILY_EMITTER: list = []
_DYNAMIC = {"%clock": "th.clock(32)", "%clock_hi": "(th.clock(64) >> 32)", "%clock64": "th.clock(64)",
            "%globaltimer": "th.clock(64)", "%globaltimer_lo": "th.clock(32)", "%globaltimer_hi": "(th.clock(64) >> 32)"}


class KernelCtx(Ctx):
    """Registers as slots of ``R`` (special registers too: the scheduler fills them per thread), variables at
    fixed addresses, labels as statement indices."""

    def __init__(self, entry: Entry, symbols: dict[str, int]):
        super().__init__()
        self.entry, self.symbols = entry, symbols
        self.call_params = {v.name for v in entry.variables if v.space == "param"}
        self.slots: dict[str, int] = {}
        self.specials: dict[str, int] = {}

    def reg(self, name: str) -> str:
        if name not in self.slots:
            declared = self.entry.registers or self.entry.ranges
            if declared and name not in SPECIAL_NAMES and self.entry.reg_type(name) is None:
                raise CompileError(f"{name} is neither a declared register nor a special register the interpreter "
                                   f"models")
            self.slots[name] = len(self.slots)
        return f"R[{self.slots[name]}]"

    def special(self, name: str) -> str:
        if name in _DYNAMIC:
            return _DYNAMIC[name]
        if name not in SPECIAL_NAMES:
            raise CompileError(f"special register {name} is not modelled")
        self.specials[name] = int(self.reg(name)[2:-1])
        return f"R[{self.specials[name]}]"

    def symbol(self, name: str) -> str:
        if name not in self.symbols:
            raise CompileError(f"PTX names {name!r}, which is neither a register nor a declared variable or "
                               f"parameter of the entry")
        return str(self.symbols[name])

    def reg_bits(self, name: str) -> int | None:
        t = self.entry.reg_type(name)
        return REG_WIDTH[t] if t is not None else None

    def label(self, name: str) -> int:
        if name not in self.entry.labels:
            raise CompileError(f"PTX branch to unknown label {name!r}")
        return self.entry.labels[name]


def emit_inline(ins: Instr, ctx: Ctx) -> list[str] | None:
    """The lines of an arithmetic, logic, comparison, conversion or move (None: not one of those)."""
    base, *mods = ins.op.split(".")
    if base in CONVERT_EMITTERS:
        return CONVERT_EMITTERS[base](ins, mods, ctx)
    if base in COMPARE_EMITTERS:
        return COMPARE_EMITTERS[base](ins, mods, ctx)
    # selp picks one of two bit patterns by a predicate, whatever their type (selp.f32 is the integer form's move)
    is_float = bool(mods) and _is_float(mods[-1]) and base != "selp"
    table = FLOAT_EMITTERS if is_float else INT_EMITTERS
    if base in table:
        return table[base](ins, mods, ctx)
    return None


def _is_float(t: str) -> bool:
    try:
        return type_info(t)[2]
    except CompileError:
        return False


def _code(ins: Instr, ctx: KernelCtx) -> Code:
    base, *mods = ins.op.split(".")
    try:
        inline = emit_inline(ins, ctx)
        if inline is not None:
            return Code(tuple(inline))
        if base in RUNTIME_EMITTERS:
            return RUNTIME_EMITTERS[base](ins, mods, ctx)
        if FAMILY_EMITTER and FAMILY_EMITTER[0](ins.op) is not None:     # a family another module decodes
            return FAMILY_EMITTER[1](ins, ctx, FAMILY_EMITTER[0](ins.op))
    except (IndexError, KeyError, ValueError) as e:
        if isinstance(e, CompileError):
            raise CompileError(f"PTX line {ins.line}: {ins.text!r}: {e}") from None
        raise CompileError(f"PTX line {ins.line}: {ins.text!r} is malformed for the interpreter "
                           f"({type(e).__name__}: {e})") from None
    raise CompileError(f"PTX line {ins.line}: instruction outside the interpreted subset: {ins.text!r}")


@attrs.frozen(eq=False)
class Program:
    """A compiled entry: ``nodes[pc]`` runs the block starting at statement ``pc`` and returns the next ``pc``
    (negative: the thread waits or exited); ``slots`` maps register names to slots, ``specials`` special registers
    to theirs; ``lines[k]`` is the statement generated-source line k came from."""

    entry: Entry
    nodes: tuple
    slots: dict
    specials: dict
    lines: dict
    filename: str


def _guarded(ins: Instr, ctx: Ctx, lines: list[str], kind: str) -> list[str]:
    if ins.guard is None:
        return lines
    negate = ins.guard.startswith("!")
    pred = ctx.reg(ins.guard.lstrip("!"))
    if kind == "wait":
        return [f"if {'' if negate else 'not '}{pred}: return {{next}}"] + lines
    return [f"if {'not ' if negate else ''}{pred}:"] + ["    " + line for line in lines]


def _leaders(codes: list[Code], entry: Entry) -> list[int]:
    n = len(codes)
    lead = {0, n} | {i for i in entry.labels.values() if i <= n}
    for i, c in enumerate(codes):
        if c.kind in ("jump", "end", "wait"):
            lead.add(i + 1)
        if c.kind == "wait":
            lead.add(i)
    return sorted(lead)


def _source(entry: Entry, codes: list[Code], ctx: KernelCtx, calls: dict[int, int]) -> tuple[str, dict, list[int]]:
    out: list[str] = []
    where: dict[int, int] = {}
    leaders = _leaders(codes, entry)
    for k, start in enumerate(leaders):
        stop = leaders[k + 1] if k + 1 < len(leaders) else start
        out.append(f"def _n{start}(R, th, m):")
        ended = False
        for i in range(start, stop):
            code = codes[i]
            lines = ([f"m.called(th, {calls[i]})"] if i in calls else []) + list(code.lines)
            for line in _guarded(entry.instrs[i], ctx, lines, code.kind):
                line = line.replace("{here}", str(i)).replace("{next}", str(i + 1))
                out.append("    " + line)
                where[len(out)] = i
            ended = code.kind == "wait" or (code.kind in ("jump", "end") and entry.instrs[i].guard is None)
        if not ended:
            out.append(f"    return {stop}" if start < len(codes) else "    return m.exit(th)")
    return "\n".join(out) + "\n", where, leaders


def compile_entry(entry: Entry, symbols: dict[str, int], calls: dict[int, int] | None = None) -> Program:
    """Decode every statement of ``entry`` (variables and parameters at ``symbols``' addresses) and build its
    blocks; ``calls`` maps statement indices to the generated function whose call they record in ``th.calls``
    (``conventions``)."""
    ctx = KernelCtx(entry, symbols)
    codes = [_code(ins, ctx) for ins in entry.instrs]
    source, where, leaders = _source(entry, codes, ctx, calls or {})
    filename = f"<ptx entry {entry.name}>"
    scope = dict(ctx.namespace)
    exec(compile(source, filename, "exec"), scope)                 # noqa: S102  our own generated blocks
    nodes: list = [None] * (len(codes) + 1)
    for start in leaders:
        nodes[start] = scope[f"_n{start}"]
    return Program(entry, tuple(nodes), dict(ctx.slots), dict(ctx.specials), where, filename)


def locate(program: Program, error: BaseException) -> Instr | None:
    """The statement whose generated code raised ``error`` (None if it did not come from a block)."""
    tb = error.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == program.filename:
            found = program.lines.get(tb.tb_lineno)
        tb = tb.tb_next
    return program.entry.instrs[found] if found is not None else None


def statement_error(program: Program, error: BaseException) -> EmulationError:
    """``error`` re-raised as an EmulationError that names the PTX statement it came from."""
    ins = locate(program, error)
    where = f"PTX line {ins.line}: {ins.text!r}: " if ins is not None else ""
    if isinstance(error, EmulationError):
        return type(error)(f"{where}{error}")
    return EmulationError(f"{where}{type(error).__name__}: {error}")

