"""Source for the instructions that synchronise or hand work to an asynchronous agent: CTA and cluster barriers,
mbarriers, warp-collective instructions, cp.async groups, bulk groups and the instruction families the executors
model (``pycute.interp.stream.ISSUE_DECODERS``: their statements are decoded at run time by the family's decoder and
executed by the kernel executor registered for the family, ``asyncops.KERNEL_EXECUTORS``)."""
from __future__ import annotations

import re
from typing import Any, Callable

import attrs

from ..errors import CompileError
from .translate import FAMILY_EMITTER, RUNTIME_EMITTERS, Code, KernelCtx
from .front import Instr
from .operands import SPECIAL_NAMES, address, dst, is_register, src, vector
from .rtemit import register, space_of

__all__ = ["IssueSite", "Site", "KERNEL_EXECUTORS"]

#: PTX opcode prefix (an ``ISSUE_DECODERS`` key) -> ``(execute, collective)``, filled by ``asyncops`` and
#: ``tensorcore``: ``execute(cta, thread, record, site, R)`` for an instruction one thread issues, or, ``collective``,
#: ``execute(cta, warp, site, group)`` once every lane of the warp has reached it (``group``: lane -> (thread, site,
#: (its decoded record, its registers), next statement); a load's destination slots are ``site.dests``). A family
#: ``ISSUE_DECODERS`` decodes without an entry here is refused, by name, before the run.
KERNEL_EXECUTORS: dict[str, tuple[Callable[..., Any], bool]] = {}
_TOKEN = re.compile(r"%?[A-Za-z_$][\w$~]*(?:\.[xyz])?")


@attrs.define(eq=False)
class Site:
    """A statement the runtime needs to describe itself: kind, modifiers, destination slots, line and text."""

    kind: str
    mods: tuple[str, ...]
    dests: tuple[int | None, ...]
    line: int
    text: str
    extra: Any = None


class IssueSite(Site):
    """A statement of a decoded family: ``decode(R)`` is the family decoder's record, ``value(R, tok)`` reads any
    other operand (a register, a special register, a variable's address, an immediate, or ``a+b``)."""

    def __init__(self, family: str, ins: Instr, ctx: KernelCtx, dests: tuple[int | None, ...] = ()):
        super().__init__(family, tuple(ins.op.split(".")[1:]), dests, ins.line, ins.text)
        self.op, self.args = ins.op, ins.args
        self.reads: dict[str, tuple[str, int]] = {}
        for tok in _TOKEN.findall(" ".join(ins.args)):
            if tok in SPECIAL_NAMES or is_register(ctx, tok):
                self.reads[tok] = ("reg", int(src(ctx, tok, 64)[2:-1]))
            elif tok in ctx.symbols:
                self.reads[tok] = ("sym", ctx.symbols[tok])

    def value(self, R: list, tok: str) -> int:
        tok = tok.strip().strip("[]").strip()
        if "+" in tok:
            return sum(self.value(R, t) for t in tok.split("+")) & ((1 << 64) - 1)
        hit = self.reads.get(tok)
        if hit is not None:
            return int(R[hit[1]]) if hit[0] == "reg" else hit[1]
        try:
            return int(tok.rstrip("U"), 0) & ((1 << 64) - 1)
        except ValueError:
            raise CompileError(f"PTX line {self.line}: operand {tok!r} of {self.text!r} is not readable") from None

    def decode(self, R: list) -> Any:
        from .stream import ISSUE_DECODERS
        return ISSUE_DECODERS[self.kind](self.op, list(self.args), lambda tok: self.value(R, tok))


def _slot(ctx: KernelCtx, tok: str) -> int | None:
    tok = tok.strip()
    return None if tok == "_" else int(dst(ctx, tok)[2:-1])


def _operand_slots(ctx: KernelCtx, tok: str) -> tuple[int | None, ...]:
    return tuple(_slot(ctx, t) for t in tok.split("|"))


def _site(ctx: KernelCtx, ins: Instr, kind: str, mods: list[str], dests: tuple[int | None, ...] = (),
          extra: Any = None) -> str:
    return ctx.helper(Site(kind, tuple(mods), dests, ins.line, ins.text, extra), "site")


def _collective(ctx: KernelCtx, ins: Instr, kind: str, mods: list[str], values: list[str],
                dests: tuple[int | None, ...] = ()) -> Code:
    site = _site(ctx, ins, kind, mods, dests)
    return Code((f"return m.collective(th, {site}, ({', '.join(values)},), {{next}})",), "wait")


@register("bar")
@register("barrier")
def _barrier(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    a = ins.args
    if "warp" in mods:
        return _collective(ctx, ins, "warpsync", mods, [src(ctx, a[0], 32)])
    if "cluster" in mods:
        if "arrive" in mods:
            return Code((f"m.cluster_arrive(th, {'relaxed' not in mods})",))
        return Code(("return m.cluster_wait(th, {next})",), "wait")
    site = _site(ctx, ins, "bar", mods)
    if "red" in mods:
        count = src(ctx, a[2], 32) if len(a) == 4 else "None"
        return Code((f"return m.bar_wait(th, {site}, {src(ctx, a[1], 32)}, {count}, {src(ctx, a[-1], 1)}, "
                     f"{_slot(ctx, a[0])}, {{next}})",), "wait")
    count = src(ctx, a[1], 32) if len(a) > 1 else "None"
    if "arrive" in mods:
        return Code((f"m.bar_arrive(th, {site}, {src(ctx, a[0], 32)}, {count})",))
    return Code((f"return m.bar_wait(th, {site}, {src(ctx, a[0], 32)}, {count}, None, None, {{next}})",), "wait")


@register("mbarrier")
def _mbarrier(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    op, space, a = mods[0], space_of(mods), ins.args
    site = _site(ctx, ins, "mbarrier", mods)
    if op in ("init", "expect_tx", "complete_tx"):
        return Code((f"m.mbar_{op}(th, {site}, {space!r}, {address(ctx, a[0])}, {src(ctx, a[1], 32)})",))
    if op == "inval":
        return Code((f"m.mbar_inval(th, {site}, {space!r}, {address(ctx, a[0])})",))
    if op in ("arrive", "arrive_drop"):
        tx = src(ctx, a[2], 32) if "expect_tx" in mods else "0"
        count = src(ctx, a[2], 32) if len(a) > 2 and "expect_tx" not in mods else "1"
        call = (f"m.mbar_arrive(th, {site}, {space!r}, {address(ctx, a[1])}, {count}, {tx}, "
                f"{'relaxed' not in mods}, {op == 'arrive_drop'}, {'noComplete' in mods})")
        return Code((f"{dst(ctx, a[0])} = {call}",))
    if op in ("test_wait", "try_wait"):
        return Code((f"return m.mbar_wait(th, {site}, {space!r}, {address(ctx, a[1])}, {src(ctx, a[2], 64)}, "
                     f"{'parity' in mods}, {_slot(ctx, a[0])}, {{next}})",), "wait")
    raise CompileError(f"mbarrier.{op} is outside the interpreted subset")


@register("elect")
def _elect(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    return _collective(ctx, ins, "elect", mods, [src(ctx, ins.args[1], 32)], _operand_slots(ctx, ins.args[0]))


@register("shfl")
def _shfl(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    values = [src(ctx, x, 32) for x in ins.args[1:5]]
    return _collective(ctx, ins, "shfl", mods, values, _operand_slots(ctx, ins.args[0]))


@register("vote")
def _vote(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    values = [src(ctx, ins.args[1], 1), src(ctx, ins.args[2], 32)]
    return _collective(ctx, ins, "vote", mods, values, _operand_slots(ctx, ins.args[0]))


@register("match")
def _match(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    bits = 64 if "b64" in mods else 32
    values = [src(ctx, ins.args[1], bits), src(ctx, ins.args[2], 32)]
    return _collective(ctx, ins, "match", mods, values, _operand_slots(ctx, ins.args[0]))


@register("redux")
def _redux(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    values = [src(ctx, ins.args[1], 32), src(ctx, ins.args[2], 32)]
    return _collective(ctx, ins, "redux", mods, values, _operand_slots(ctx, ins.args[0]))


def _family(op: str) -> str | None:
    from .stream import ISSUE_DECODERS
    return next((k for k in ISSUE_DECODERS if op == k or op.startswith(k + ".")), None)


def _issue(ins: Instr, ctx: KernelCtx, family: str) -> Code:
    if family not in KERNEL_EXECUTORS:
        raise CompileError(f"{family} is decoded (pycute.interp.stream.ISSUE_DECODERS) but the whole-kernel run has no "
                           f"executor for it (pycute.interp.rtemit_sync.KERNEL_EXECUTORS)")
    _, collective = KERNEL_EXECUTORS[family]
    loads = collective and ins.args[0].startswith("{")          # a warp's load: the vector it writes
    dests = tuple(_slot(ctx, r) for r in vector(ins.args[0])) if loads else ()
    site = ctx.helper(IssueSite(family, ins, ctx, dests), "issue")
    if not collective:
        return Code((f"m.issue(th, {site}, R)",))
    return Code((f"return m.collective(th, {site}, ({site}.decode(R), R), {{next}})",), "wait")


FAMILY_EMITTER.extend([_family, _issue])


@register("cp")
def _cp(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    op, a = ins.op, ins.args
    family = _family(op)
    if family is not None:
        return _issue(ins, ctx, family)
    if op == "cp.async.commit_group":
        return Code(("m.cp_async_commit(th)",))
    if op == "cp.async.wait_group":
        return Code((f"m.cp_async_wait(th, {src(ctx, a[0], 32)})",))
    if op == "cp.async.wait_all":                    # commit_group, then wait_group 0 (PTX ISA, cp.async.wait_all)
        return Code(("m.cp_async_commit(th)", "m.cp_async_wait(th, 0)"))
    if op.startswith("cp.async.mbarrier.arrive"):
        return Code((f"m.cp_async_arrive(th, {address(ctx, a[0])}, {'noinc' in mods})",))
    if op == "cp.async.bulk.commit_group":
        return Code(("m.bulk_commit(th)",))
    if op.startswith("cp.async.bulk.wait_group"):
        return Code((f"m.bulk_wait(th, {src(ctx, a[0], 32)}, {'read' in mods})",))
    if op.startswith("cp.async.bulk.prefetch"):
        return Code(("pass",))                                    # an L2 hint
    raise CompileError(f"{op} is outside the interpreted subset")


@register("tcgen05")
def _tcgen05(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    family = _family(ins.op)
    if family is not None:
        return _issue(ins, ctx, family)
    op, a = mods[0], ins.args
    group = 2 if "cta_group::2" in mods else 1
    if op in ("alloc", "dealloc"):
        values = [address(ctx, a[0]) if op == "alloc" else src(ctx, a[0], 32), src(ctx, a[1], 32)]
        return _collective(ctx, ins, f"tcgen05.{op}", mods, values)
    if op == "commit":
        mask = src(ctx, a[1], 16) if len(a) > 1 else "None"
        return Code((f"m.tc_commit(th, {_site(ctx, ins, 'commit', mods)}, {group}, {space_of(mods)!r}, "
                     f"{address(ctx, a[0])}, {mask})",))
    if op.startswith(("fence", "wait", "relinquish_alloc_permit")):
        return Code(("pass",))          # ld / st complete at issue here; fences order what runs in order anyway
    raise CompileError(f"tcgen05.{op} is outside the interpreted subset")
