"""A small interpreter for the PTX that NVRTC emits around generated tcgen05.cp issue code.

It runs one thread through one ``.entry`` (integer moves and arithmetic, shifts, logic, conversions, ``cvta``,
addresses of shared symbols, predicates and branches, ``tcgen05.cp``) and returns the ``(opcode, taddr,
descriptor)`` stream it would issue. This checks the generated *code*, not only the plan: the stream can be
compared with the plan and fed to the emulator. An instruction outside the subset is a CompileError, never skipped.
"""
from __future__ import annotations

import re

from ..errors import CompileError

__all__ = ["run_entry", "GENERIC_SHARED_WINDOW"]

#: Where this model places the shared window in the generic address space (cvta.shared adds it).
GENERIC_SHARED_WINDOW = 0x7F00_0000_0000

_MASK = {8: 0xFF, 16: 0xFFFF, 32: 0xFFFFFFFF, 64: 0xFFFFFFFFFFFFFFFF}
_ENTRY = re.compile(r"\.(?:visible\s+)?\.entry\s+(\w+)\s*\((.*?)\)\s*\{(.*?)\n\}", re.S)
_PARAM = re.compile(r"\.param\s+\.\w+\s+(\w+)")
_SKIP = re.compile(r"^(?:\.reg|\.local|\.shared|\.pragma|\.loc|\.maxntid|\.reqntid|\.minnctapersm|//|\{|\})")
_LABEL = re.compile(r"^([\w$]+):$")


def _width(type_suffix: str) -> int:
    m = re.search(r"(\d+)$", type_suffix)
    return int(m.group(1)) if m else 32


def _signed(v: int, bits: int) -> int:
    v &= _MASK[bits]
    return v - (1 << bits) if v >> (bits - 1) else v


def _parse_entry(ptx: str, name: str | None):
    entries = {m.group(1): m for m in _ENTRY.finditer(ptx)}
    if not entries:
        raise CompileError("no .entry in the PTX")
    if name is None:
        if len(entries) != 1:
            raise CompileError(f"several entries in the PTX ({', '.join(entries)}); name one")
        name = next(iter(entries))
    if name not in entries:
        raise CompileError(f"no .entry {name!r} in the PTX (have {', '.join(entries)})")
    m = entries[name]
    params = _PARAM.findall(m.group(2))
    body = []
    for raw in m.group(3).splitlines():
        line = raw.split("//")[0].strip()
        if not line or _SKIP.match(line):
            continue
        body.extend(s.strip() for s in line.split(";") if s.strip())
    return params, body


def run_entry(ptx: str, params: dict, symbols: dict, entry: str | None = None, max_steps: int = 100_000):
    """Run ``entry`` for one thread. ``params`` maps parameter index or name to its value; ``symbols`` maps
    shared-symbol names to their shared-window addresses. Returns the list of ``tcgen05.cp`` issues."""
    names, body = _parse_entry(ptx, entry)
    values = {}
    for k, n in enumerate(names):
        if k in params:
            values[n] = params[k]
        elif n in params:
            values[n] = params[n]
    labels = {}
    program = []
    for stmt in body:
        lm = _LABEL.match(stmt)
        if lm:
            labels[lm.group(1)] = len(program)
        else:
            program.append(stmt)
    regs: dict[str, int] = {}
    issued = []

    def val(tok: str, bits: int = 64) -> int:
        tok = tok.strip()
        if tok.startswith("%"):
            if tok not in regs:
                raise CompileError(f"PTX reads register {tok} before writing it")
            return regs[tok]
        if tok in symbols:
            return symbols[tok]
        if re.fullmatch(r"-?0[xX][0-9a-fA-F]+[U]?", tok):
            return int(tok.rstrip("U"), 16) & _MASK[bits]
        if re.fullmatch(r"-?\d+[U]?", tok):
            return int(tok.rstrip("U")) & _MASK[bits]
        raise CompileError(f"PTX operand {tok!r} is not a register, symbol or integer")

    pc = 0
    steps = 0
    while pc < len(program):
        steps += 1
        if steps > max_steps:
            raise CompileError(f"PTX interpretation exceeded {max_steps} steps (an unbounded loop?)")
        stmt = program[pc]
        pc += 1
        pred = None
        if stmt.startswith("@"):
            pred, stmt = stmt.split(None, 1)
        op, _, rest = stmt.partition(" ")
        args = [a.strip() for a in _split_args(rest)]
        if pred is not None:
            neg = pred.startswith("@!")
            p = regs.get(pred.lstrip("@!"))
            if p is None:
                raise CompileError(f"PTX predicate {pred} read before it is set")
            if bool(p) == neg:
                continue
        parts = op.split(".")
        base = parts[0]
        bits = _width(parts[-1]) if len(parts) > 1 else 32
        if base == "ret" or base == "exit":
            break
        if base == "bra":
            target = args[0]
            if target not in labels:
                raise CompileError(f"PTX branch to unknown label {target!r}")
            pc = labels[target]
            continue
        if base == "tcgen05" and parts[1] == "cp":
            m = re.fullmatch(r"\[(%\w+)(?:\s*\+\s*(-?\w+))?\]", args[0])
            if not m:
                raise CompileError(f"tcgen05.cp address operand {args[0]!r} is not [reg] or [reg+imm]")
            taddr = (val(m.group(1)) + (val(m.group(2)) if m.group(2) else 0)) & _MASK[32]
            issued.append((op, taddr, val(args[1]) & _MASK[64]))
            continue
        if base == "ld" and "param" in parts:
            m = re.fullmatch(r"\[(\w+)(?:\+(\d+))?\]", args[1])
            if not m or m.group(1) not in values:
                raise CompileError(f"ld.param from {args[1]!r}: no value given for that parameter")
            regs[args[0]] = values[m.group(1)] & _MASK[bits]
            continue
        regs[args[0]] = _alu(base, parts, bits, args, val, stmt)
    return issued


def _split_args(rest: str):
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def _alu(base, parts, bits, args, val, stmt):
    mask = _MASK.get(bits, _MASK[64])
    a = lambda i: val(args[i], bits)  # noqa: E731
    if base == "mov":
        return a(1) & mask
    if base in ("add", "sub", "mul", "and", "or", "xor", "shl", "shr", "min", "max", "div", "rem"):
        x, y = a(1), a(2)
        if base == "add":
            return (x + y) & mask
        if base == "sub":
            return (x - y) & mask
        if base == "mul":
            if "wide" in parts:
                return (x * y) & _MASK[2 * bits]
            return ((x * y) >> bits if "hi" in parts else x * y) & mask
        if base == "and":
            return x & y
        if base == "or":
            return x | y
        if base == "xor":
            return x ^ y
        if base == "shl":
            return (x << min(y, bits)) & mask
        if base == "shr":
            if parts[-1].startswith("s"):
                return (_signed(x, bits) >> min(y, bits)) & mask
            return x >> min(y, bits)
        if base in ("min", "max"):
            sx, sy = (_signed(x, bits), _signed(y, bits)) if parts[-1].startswith("s") else (x, y)
            return (min(sx, sy) if base == "min" else max(sx, sy)) & mask
        if y == 0:
            raise CompileError(f"PTX division by zero in {stmt!r}")
        return (x // y if base == "div" else x % y) & mask
    if base == "mad":
        return (a(1) * a(2) + a(3)) & mask
    if base == "not":
        return ~a(1) & mask
    if base == "neg":
        return -a(1) & mask
    if base == "cvt":
        dst_bits, src_t = _width(parts[-2]), parts[-1]
        x = val(args[1], _width(src_t))
        if src_t.startswith("s"):
            x = _signed(x, _width(src_t))
        return x & _MASK[dst_bits]
    if base == "cvta":
        x = a(1)
        if "to" in parts:
            return (x - GENERIC_SHARED_WINDOW) & mask if "shared" in parts else x
        return (x + GENERIC_SHARED_WINDOW) & mask if "shared" in parts else x
    if base == "setp":
        cmp = parts[1]
        x, y = a(1), a(2)
        if parts[-1].startswith("s"):
            x, y = _signed(x, bits), _signed(y, bits)
        return int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y, "gt": x > y, "ge": x >= y,
                    "lo": x < y, "ls": x <= y, "hi": x > y, "hs": x >= y}[cmp])
    if base == "selp":
        p = val(args[3])
        return a(1) if p else a(2)
    raise CompileError(f"PTX instruction outside the interpreted subset: {stmt!r}")
