"""Operands as Python expressions: what the code generator writes for a register, an immediate, a special register,
a variable's address, an address operand ``[base+offset]`` or a vector ``{a, b}``.

A ``Ctx`` decides how a name becomes an expression: the kernel runner gives every register a slot of the thread's
list ``R`` and every variable a fixed address; the single-thread interpreter (``pycute.interp.stream``) reads a dict of
registers and asks the thread for symbols. Registers hold unsigned bit patterns of their width (floats as bits,
predicates as bools).
"""
from __future__ import annotations

import re
from typing import Any

from ..errors import CompileError

__all__ = ["Ctx", "MASK", "type_info", "src", "dst", "vector", "address", "signed", "SPECIAL_NAMES", "is_register"]

MASK = {b: (1 << b) - 1 for b in (1, 8, 16, 32, 64, 128)}
_INT = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9]\d*)U?")
_FLOAT = re.compile(r"0[fFdD][0-9a-fA-F]+")
_DECIMAL_FLOAT = re.compile(r"-?\d+\.\d*(?:[eE][-+]?\d+)?")
#: The special registers (PTX ISA #special-registers) the interpreter models.
SPECIAL_NAMES = frozenset(
    [f"%{r}.{c}" for r in ("tid", "ntid", "ctaid", "nctaid", "clusterid", "nclusterid", "cluster_ctaid",
                           "cluster_nctaid") for c in "xyz"]
    + ["%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid", "%cluster_ctarank", "%cluster_nctarank",
       "%is_explicit_cluster", "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge", "%lanemask_gt",
       "%clock", "%clock_hi", "%clock64", "%globaltimer", "%globaltimer_lo", "%globaltimer_hi",
       "%dynamic_smem_size", "%total_smem_size", "%aggr_smem_size"])


class Ctx:
    """How names become expressions, and the helper objects generated code refers to (``helper``)."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {}
        self._ids: dict[int, str] = {}

    def reg(self, name: str) -> str:
        raise NotImplementedError

    def special(self, name: str) -> str:
        raise NotImplementedError

    def symbol(self, name: str) -> str:
        raise NotImplementedError

    def reg_bits(self, name: str) -> int | None:
        """The declared width of register ``name`` (None: undeclared, any width)."""
        return None

    def helper(self, obj: Any, hint: str = "h") -> str:
        """A name for ``obj`` in the generated code's namespace."""
        key = id(obj)
        if key not in self._ids:
            name = f"_{hint}{len(self._ids)}"
            self._ids[key] = name
            self.namespace[name] = obj
        return self._ids[key]


def type_info(t: str) -> tuple[int, bool, bool]:
    """``(bits, signed, float)`` of a PTX type suffix (``s32`` -> (32, True, False), ``f16x2`` -> 32-bit float)."""
    if t == "pred":
        return 1, False, False
    m = re.fullmatch(r"([subf]|bf|tf|e\dm\d|ue8m0)(\d*)(x\d)?", t)
    if m is None:
        raise CompileError(f"PTX type .{t} is outside the interpreted subset")
    kind, bits, lanes = m.groups()
    if kind in ("bf", "tf"):
        bits = "16" if kind == "bf" else "32"
    width = int(bits) if bits else 8
    if lanes:
        width *= int(lanes[1:])
    return width, kind == "s", kind not in ("s", "u", "b")


def is_register(ctx: Ctx, tok: str) -> bool:
    return tok.startswith("%") or ctx.reg_bits(tok) is not None


def signed(expr: str, bits: int) -> str:
    """``expr`` (an unsigned ``bits``-bit value) read as two's complement."""
    half = 1 << (bits - 1)
    return f"((({expr}) ^ {half}) - {half})"


def src(ctx: Ctx, tok: str, bits: int) -> str:
    """A source operand read as an unsigned ``bits``-bit value (registers are stored that way already)."""
    tok = tok.strip()
    if tok in SPECIAL_NAMES:
        return ctx.special(tok)
    if tok.startswith("!"):
        return f"(not {src(ctx, tok[1:], 1)})"
    if _FLOAT.fullmatch(tok):
        return str(int(tok[2:], 16) & MASK.get(bits, MASK[64]))
    if _INT.fullmatch(tok):
        text = tok.rstrip("U")
        neg = text.startswith("-")
        body = text[1:] if neg else text
        value = int(body, 8) if re.fullmatch(r"0[0-7]+", body) else int(body, 0)
        return str((-value if neg else value) & MASK.get(bits, MASK[64]))
    if _DECIMAL_FLOAT.fullmatch(tok):
        raise CompileError(f"PTX decimal float immediate {tok!r}: NVRTC writes floats as 0f/0d hex")
    if is_register(ctx, tok):
        return ctx.reg(tok)
    m = re.fullmatch(r"([A-Za-z_$][\w$]*)\s*(?:\+\s*(-?\d+))?", tok)
    if m is not None:
        off = int(m.group(2) or 0)
        return f"(({ctx.symbol(m.group(1))} + {off}) & {MASK[64]})" if off else ctx.symbol(m.group(1))
    raise CompileError(f"PTX operand {tok!r} is not a register, immediate or symbol")


def dst(ctx: Ctx, tok: str) -> str:
    """An assignment target (``_``, the sink, writes a throwaway name)."""
    tok = tok.strip()
    if tok == "_":
        return "_"
    if not is_register(ctx, tok):
        raise CompileError(f"PTX destination {tok!r} is not a register")
    return ctx.reg(tok)


def vector(tok: str) -> list[str]:
    """The elements of ``{a, b, ...}`` (a lone operand is a one-element list)."""
    tok = tok.strip()
    if tok.startswith("{") and tok.endswith("}"):
        return [t.strip() for t in tok[1:-1].split(",")]
    return [tok]


def address(ctx: Ctx, tok: str) -> str:
    """The address an operand ``[base]`` / ``[base+imm]`` / ``[symbol+imm]`` / ``[imm]`` names, 64-bit."""
    tok = tok.strip()
    if not (tok.startswith("[") and tok.endswith("]")):
        raise CompileError(f"PTX address operand {tok!r} is not [base+offset]")
    inner = tok[1:-1].replace(" ", "")
    terms = re.findall(r"[+-]?[^+-]+", inner)
    parts = []
    for term in terms:
        neg = term.startswith("-")
        body = term.lstrip("+-")
        expr = src(ctx, ("-" if neg and _INT.fullmatch(body) else "") + body, 64)
        if neg and not _INT.fullmatch(body):
            expr = f"-{expr}"
        parts.append(expr)
    return f"(({' + '.join(parts)}) & {MASK[64]})" if len(parts) > 1 else parts[0]
