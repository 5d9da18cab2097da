"""The two calls CUDA's device code makes into the runtime: ``vprintf`` (``printf``) and ``__assertfail``
(``assert``). A call's ``.param`` variables live in the thread's local memory (``st.param`` / ``ld.param`` on them
are local accesses); ``printf``'s arguments are read from the buffer its caller packed, each aligned to its size
(ints of 4 bytes, ``l`` / ``ll`` / ``z`` ones and pointers of 8, floats promoted to doubles). What the kernel prints
is collected in order (``KernelRun.printed``) and echoed when the run ends, as a GPU flushes its printf buffer at
the kernel's end; a failed ``assert`` stops the run with CUDA's message. Other calls are refused."""
from __future__ import annotations

import re
import struct

from ..errors import CompileError, EmulationError
from .translate import Code, KernelCtx
from .ctabase import CtaBase
from .front import Instr
from .rtemit import register

__all__ = ["CallsMixin", "format_printf"]

_SPEC = re.compile(r"%([-+ #0]*)(\d+)?(?:\.(\d+))?(hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGaAcsp%])")


def _local(ctx: KernelCtx, name: str) -> int:
    name = name.strip().strip("()").strip()
    if name not in ctx.call_params:
        raise CompileError(f"a call's operand {name!r} is not one of its .param variables")
    return ctx.symbols[name]


@register("call")
def _call(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    args = list(ins.args)
    ret = _local(ctx, args.pop(0)) if args[0].startswith("(") else None
    callee, params = args[0].strip(), [p for p in re.split(r"[(),\s]+", " ".join(args[1:])) if p]
    frames = [_local(ctx, p) for p in params]
    if callee == "vprintf" and len(frames) == 2:
        return Code((f"m.vprintf(th, {frames[0]}, {frames[1]}, {ret})",))
    if callee == "__assertfail" and len(frames) >= 4:
        return Code((f"m.assertfail(th, {frames[0]}, {frames[1]}, {frames[2]}, {frames[3]})",))
    raise CompileError(f"a call to {callee}: the interpreter runs inlined code and printf / assert only (mark "
                       f"device functions __forceinline__)")


def format_printf(fmt: str, read) -> str:
    """``fmt`` with its arguments taken by ``read(nbytes, align)`` (each the next argument's bytes) and strings by
    ``read(0, 8)``'s pointer through ``read.string``."""
    out, at = [], 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[at:m.start()])
        at = m.end()
        flags, width, precision, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        spec = "%" + flags + (width or "") + (f".{precision}" if precision is not None else "")
        if conv in "eEfFgGaA":
            value = struct.unpack("<d", read(8).to_bytes(8, "little"))[0]
            out.append((spec + (conv if conv not in "aA" else "e")) % value)
        elif conv == "s":
            out.append((spec + "s") % read.string(read(8)))
        elif conv == "p":
            out.append((spec + "s") % hex(read(8)))
        elif conv == "c":
            out.append((spec + "c") % chr(read(4) & 0xFF))
        else:
            size = 8 if length in ("l", "ll", "z", "j", "t", "L") else 4
            value = read(size)
            if conv in "di" and value >> (8 * size - 1):
                value -= 1 << (8 * size)
            out.append((spec + {"i": "d", "u": "d"}.get(conv, conv)) % value)
    out.append(fmt[at:])
    return "".join(out)


class CallsMixin(CtaBase):
    """``vprintf`` and ``__assertfail`` (mixed into ``scheduler.Cta``)."""

    def _string(self, th, address: int) -> str:
        data = bytearray()
        while len(data) < 4096:
            byte = self.ld(th, "generic", address + len(data), 1)
            if byte == 0:
                break
            data.append(byte)
        return data.decode(errors="replace")

    def _pointer(self, th, local: int) -> int:
        return int.from_bytes(th.local[local:local + 8], "little")

    def vprintf(self, th, fmt: int, args: int, ret: int | None) -> None:
        address = self._pointer(th, args)
        offset = [0]

        def read(n: int) -> int:
            offset[0] = -(-offset[0] // n) * n
            value = self.ld(th, "generic", address + offset[0], n)
            offset[0] += n
            return value
        read.string = lambda pointer: self._string(th, pointer)          # type: ignore[attr-defined]
        text = format_printf(self._string(th, self._pointer(th, fmt)), read)
        self.world.printed.append(text)
        if ret is not None:
            th.local[ret:ret + 4] = len(text).to_bytes(4, "little")

    def assertfail(self, th, message: int, file: int, line: int, function: int) -> None:
        text = self._string(th, self._pointer(th, message))
        where = self._string(th, self._pointer(th, file))
        number = int.from_bytes(th.local[line:line + 4], "little")
        name = self._string(th, self._pointer(th, function))
        raise EmulationError(f"{where}:{number}: {name}: block {self.ctaid}, thread {th.tid}: Assertion `{text}` "
                             f"failed ({th!r})")
