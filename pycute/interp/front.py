"""Reading PTX: a module's variables and entries, an entry's parameters, directives, registers and statements.

Braces blocks (``{ .reg .pred p; ... }``, as CUDA's headers and inline ``asm`` write them) are scopes (PTX ISA
#ptx-module-directives-scope): a register or label declared inside one is renamed ``name~k`` (k the block's number),
so two inlined copies of the same block, or a block that shadows an outer name, never collide. Nothing is skipped: a
statement is a declaration, a label or an instruction, and every instruction reaches the interpreter.
"""
from __future__ import annotations

import functools
import re

import attrs

from ..errors import CompileError
from .lineinfo import LOC, SECTION, Origin, demangle, functions, line_info, origin

__all__ = ["Instr", "Param", "Variable", "Entry", "Module", "parse_module", "parse_entry", "demangle", "REG_WIDTH"]

#: Bits of a register of each declared type (``pred`` registers hold 0 or 1).
REG_WIDTH = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
             "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32, "b64": 64, "u64": 64,
             "s64": 64, "f64": 64, "b128": 128}
_TYPE_BYTES = {t: max(w // 8, 1) for t, w in REG_WIDTH.items() if t != "pred"}

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_LINE_DIRECTIVE = re.compile(r"^[ \t]*\.(?:file|version|target|address_size)\b[^\n]*", re.M)
_TARGET = re.compile(r"^[ \t]*\.target\s+([\w,\s]+?)\s*$", re.M)
_TOKENS = re.compile(r'"[^"\n]*"|[{};]|[^{};"]+')
_HEADER = re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b")
_LABEL = re.compile(r"^\s*([A-Za-z_$][\w$]*)\s*:(?!:)")
_IDENT = re.compile(r"(?<![\w$.~])(%?[A-Za-z_$][\w$]*)")
_DECL = re.compile(r"^\.(reg|shared|local|const|global|param)\b")
_VARIABLE = re.compile(r"^(?:\.extern\s+|\.visible\s+|\.weak\s+)*\.(shared|global|const|local|param)\s+(.*?)"
                       r"([A-Za-z_$][\w$]*)\s*(?:\[\s*(\d*)\s*\])?\s*(?:=\s*(.*))?$", re.S)
_ENTRY_DIRECTIVES = ("maxntid", "reqntid", "minnctapersm", "maxnctapersm", "reqnctapercluster", "explicitcluster",
                     "maxclusterrank", "blocksareclusters", "noreturn", "pragma", "maxnreg")


@attrs.frozen
class Instr:
    """One instruction: its PTX line, its text as written, the guard (``%p1`` or ``!%p1``, renamed), the opcode
    with its modifiers and the operands (registers renamed to their scope's names, labels to their block's); with
    line information, its source location and the inlined functions it is part of (innermost first)."""

    line: int
    text: str
    guard: str | None
    op: str
    args: tuple[str, ...]
    origin: "Origin | None" = None
    functions: tuple[str, ...] = ()


@attrs.frozen
class Param:
    """A kernel parameter: its PTX name, element type, bytes and alignment (``.b8 name[128]``: a 128-byte
    by-value parameter such as a ``__grid_constant__`` tensor map)."""

    name: str
    type: str
    size: int
    align: int
    pointer: bool


@attrs.frozen
class Variable:
    """A ``.shared`` / ``.global`` / ``.const`` / ``.local`` variable: bytes (0 for an ``extern`` array), alignment
    and initial bytes (``.global`` / ``.const`` initialisers)."""

    space: str
    name: str
    size: int
    align: int
    init: bytes | None = None
    extern: bool = False


@attrs.frozen
class Entry:
    """An ``.entry``: parameters, performance directives (``{"reqnctapercluster": (2, 1, 1), ...}``), the
    instructions, labels (name -> index of the instruction they precede), register types (explicit names and
    ``%r<100>`` ranges) and the variables declared in its body."""

    name: str
    params: tuple[Param, ...]
    directives: dict
    instrs: tuple[Instr, ...]
    labels: dict
    registers: dict
    ranges: tuple[tuple[str, int, str], ...]
    variables: tuple[Variable, ...]

    def reg_type(self, name: str) -> str | None:
        """The declared type of register ``name`` (None when it is not declared)."""
        if name in self.registers:
            return self.registers[name]
        for prefix, count, t in self.ranges:
            if name.startswith(prefix) and name[len(prefix):].isdigit() and int(name[len(prefix):]) < count:
                return t
        return None


@attrs.frozen
class Module:
    """A PTX module: its target, variables (module scope) and entries by name."""

    target: str
    variables: tuple[Variable, ...]
    entries: dict
    functions: tuple[str, ...]
    has_lines: bool = False


def _clean(ptx: str) -> str:
    """Comments, debug sections and ``.file`` lines blanked, ``.loc`` lines turned into ``@loc`` statements, line
    numbers kept."""
    ptx = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), ptx)
    ptx = SECTION.sub(lambda m: "\n" * m.group(0).count("\n"), ptx)
    ptx = _LINE_DIRECTIVE.sub("", ptx)
    return LOC.sub(lambda m: "@loc " + " ".join(g or "-" for g in m.groups()) + ";", ptx)


def _tree(text: str) -> list:
    """Items of a PTX text: ``("stmt", line, text)``, ``("label", line, name)`` and
    ``("block", line, header, items)``; braces inside a statement (vectors, initialisers) stay in it."""
    root: list = []
    stack: list = [(root, "", 0)]
    buf, start, line, depth = "", 0, 1, 0

    def flush() -> str:
        nonlocal buf, start
        body, buf = buf, ""
        while (m := _LABEL.match(body)) is not None:
            stack[-1][0].append(("label", start, m.group(1)))
            body = body[m.end():]
            start += body[:len(body) - len(body.lstrip())].count("\n")
        return body.strip()

    for m in _TOKENS.finditer(text):
        tok = m.group(0)
        if not buf.strip() and tok.strip():
            start = line + tok[:len(tok) - len(tok.lstrip())].count("\n")
        line += tok.count("\n")
        if tok == "{" and depth == 0:
            body = flush()
            if body and not _HEADER.match(body):
                buf, depth = body + " {", 1
                continue
            stack.append(([], body, start))
        elif tok == "}" and depth == 0:
            body = flush()
            if body:
                raise CompileError(f"PTX line {start}: statement {body!r} is not terminated by ';'")
            if len(stack) == 1:
                raise CompileError(f"PTX line {line}: '}}' without a matching '{{'")
            items, header, at = stack.pop()
            stack[-1][0].append(("block", at, header, items))
        elif tok == ";" and depth == 0:
            body = flush()
            if body:
                stack[-1][0].append(("stmt", start, body))
        else:
            depth += tok.count("{") - tok.count("}") if tok in "{}" else 0
            buf += tok
    if len(stack) != 1 or flush():
        raise CompileError("PTX ends inside a block or a statement")
    return root


def _int(text: str) -> int:
    text = text.strip()
    if text[:2].lower() in ("0f", "0d"):                  # a float's bits in hexadecimal
        return int(text[2:], 16)
    return int(text, 0) if not re.fullmatch(r"-?0\d+", text) else int(text, 8)


def _variable(text: str) -> Variable | None:
    m = _VARIABLE.match(text)
    if m is None:
        return None
    space, mods, name, count, init = m.groups()
    align = int(a.group(1)) if (a := re.search(r"\.align\s+(\d+)", mods)) else 0
    types = [t for t in re.findall(r"\.(\w+)", mods) if t in _TYPE_BYTES]
    elem = _TYPE_BYTES[types[-1]] if types else 1
    data = None
    if init is not None:
        values = [v for v in re.split(r"[\s,{}]+", init) if v]
        try:
            data = b"".join((_int(v) % (1 << 8 * elem)).to_bytes(elem, "little") for v in values)
        except ValueError:
            raise CompileError(f"PTX variable {name}: initialiser {init.strip()!r} is not integers") from None
    n = 1 if count is None else (int(count) if count else 0)
    if data is not None and len(data) < elem * n:                 # an initialiser may leave the tail to zeros
        data += bytes(elem * n - len(data))
    return Variable(space, name, elem * n, align or elem, data, extern=count == "")


def _param(decl: str) -> Param:
    m = re.match(r"\.param\s+(.*?)([A-Za-z_$][\w$]*)\s*(?:\[\s*(\d+)\s*\])?\s*$", decl.strip(), re.S)
    if m is None:
        raise CompileError(f"PTX parameter {decl.strip()!r} is not a .param declaration")
    mods, name, count = m.groups()
    types = [t for t in re.findall(r"\.(\w+)", mods) if t in _TYPE_BYTES]
    if not types:
        raise CompileError(f"PTX parameter {name}: no type in {decl.strip()!r}")
    elem = _TYPE_BYTES[types[-1]]
    # ".ptr .align n" is the pointee's alignment; a leading ".align n" the parameter's own
    own = re.match(r"\s*\.align\s+(\d+)", mods)
    return Param(name, types[-1], elem * int(count or 1), int(own.group(1)) if own else elem,
                 ".ptr" in mods or types[-1] in ("u64", "b64", "s64"))


def _directives(text: str, name: str) -> dict:
    out: dict = {}
    for m in re.finditer(r"\.(\w+)((?:\s*[\d,\s]+)?)", text):
        key = m.group(1)
        if key not in _ENTRY_DIRECTIVES:
            raise CompileError(f"entry {name!r}: directive .{key} is outside the interpreted subset")
        nums = tuple(int(v) for v in re.findall(r"\d+", m.group(2)))
        out[key] = nums if nums else True
    return out


def _split_args(rest: str) -> tuple[str, ...]:
    out, depth, cur = [], 0, ""
    for ch in rest:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return tuple(out)


class _Scopes:
    """Register and label names of nested blocks: each block's own names get the suffix ``~k``."""

    def __init__(self) -> None:
        self.stack: list[tuple[int, dict]] = [(0, {})]
        self.count = 0
        self.registers: dict[str, str] = {}
        self.ranges: list[tuple[str, int, str]] = []

    def push(self, labels: list[str]) -> None:
        self.count += 1
        self.stack.append((self.count, {n: f"{n}~{self.count}" for n in labels}))

    def declare(self, text: str, line: int) -> None:
        m = re.match(r"\.reg\s+(?:\.v\d\s+)?\.(\w+)\s+(.*)$", text, re.S)
        if m is None or m.group(1) not in REG_WIDTH:
            raise CompileError(f"PTX line {line}: register declaration {text!r} is outside the interpreted subset")
        rtype, k, names = m.group(1), self.stack[-1][0], self.stack[-1][1]
        for decl in (d.strip() for d in m.group(2).split(",")):
            if (r := re.fullmatch(r"(%?[\w$]+)<(\d+)>", decl)) is not None:
                if k:
                    raise CompileError(f"PTX line {line}: a register range {decl} inside a block")
                self.ranges.append((r.group(1), int(r.group(2)), rtype))
                continue
            names[decl] = f"{decl}~{k}" if k else decl
            self.registers[names[decl]] = rtype

    def rename(self, text: str) -> str:
        def sub(m: re.Match) -> str:
            for _, names in reversed(self.stack):
                if m.group(1) in names:
                    return names[m.group(1)]
            return m.group(1)
        return _IDENT.sub(sub, text)


def _instr(text: str, line: int, scopes: _Scopes, at: Origin | None, chain: tuple[str, ...]) -> Instr:
    text = " ".join(text.split())
    guard, body = None, text
    if text.startswith("@"):
        guard, body = text.split(None, 1)
        guard = scopes.rename(guard[1:])
    op, _, rest = body.partition(" ")
    return Instr(line, text, guard, op, tuple(scopes.rename(a) for a in _split_args(rest)), at, chain)


def _flatten(items: list, scopes: _Scopes, out: list, labels: dict, variables: list, info: tuple, at: list) -> None:
    for item in items:
        kind, line = item[0], item[1]
        if kind == "stmt" and item[2].startswith("@loc "):
            at[0] = origin(item[2], info)
            at[1][(at[0].file, at[0].line)] = at[0]
        elif kind == "label":
            labels[scopes.rename(item[2])] = len(out)
        elif kind == "block":
            if item[2]:
                raise CompileError(f"PTX line {line}: a nested function header {item[2]!r}")
            scopes.push([i[2] for i in item[3] if i[0] == "label"])
            _flatten(item[3], scopes, out, labels, variables, info, at)
            scopes.stack.pop()
        elif item[2].startswith(".reg"):
            scopes.declare(item[2], line)
        elif item[2].startswith(".pragma"):
            continue
        elif _DECL.match(item[2]):
            var = _variable(item[2])
            if var is None:
                raise CompileError(f"PTX line {line}: declaration {item[2]!r} is outside the interpreted subset")
            variables.append(var)
        else:
            out.append(_instr(item[2], line, scopes, at[0], functions(at[0], at[1])))


def _entry(header: str, items: list, info: tuple) -> Entry:
    m = re.match(r"^(?:\.\w+\s+)*\.entry\s+([\w$]+)\s*(?:\((.*?)\))?(.*)$", header, re.S)
    if m is None:
        raise CompileError(f"PTX entry header {header!r} is not understood")
    name = m.group(1)
    params = tuple(_param(p) for p in (m.group(2) or "").split(",") if p.strip())
    scopes = _Scopes()
    instrs: list = []
    labels: dict = {}
    variables: list = []
    _flatten(items, scopes, instrs, labels, variables, info, [None, {}])
    return Entry(name, params, _directives(m.group(3), name), tuple(instrs), labels, dict(scopes.registers),
                 tuple(scopes.ranges), tuple(variables))


@functools.lru_cache(maxsize=32)
def parse_module(ptx: str) -> Module:
    """A PTX module's target, module-scope variables and entries (each parsed once; cached by text)."""
    if not isinstance(ptx, str):
        raise TypeError(f"PTX must be text, got {type(ptx).__name__}")
    target = m.group(1).split(",")[0].strip() if (m := _TARGET.search(ptx)) else ""
    variables, entries, functions = [], {}, []
    info = line_info(ptx)
    for item in _tree(_clean(ptx)):
        if item[0] == "block":
            kind = _HEADER.match(item[2])
            if kind is None:
                raise CompileError(f"PTX line {item[1]}: a block outside a function")
            if kind.group(1) == "entry":
                e = _entry(item[2], item[3], info)
                entries[e.name] = e
            else:
                functions.append(re.findall(r"([\w$]+)\s*\(", item[2])[-1] if "(" in item[2] else item[2])
        elif item[0] == "stmt":
            if (var := _variable(item[2])) is not None:
                variables.append(var)
    return Module(target, tuple(variables), entries, tuple(functions), bool(info[0]))


def parse_entry(ptx: str, name: str | None) -> tuple[Module, Entry]:
    """The module and its entry ``name`` (None: the only entry)."""
    module = parse_module(ptx)
    if not module.entries:
        raise CompileError("no .entry in the PTX")
    if name is None:
        if len(module.entries) != 1:
            raise CompileError(f"several entries in the PTX ({', '.join(module.entries)}); name one")
        name = next(iter(module.entries))
    if name not in module.entries:
        raise CompileError(f"no .entry {name!r} in the PTX (have {', '.join(module.entries)})")
    return module, module.entries[name]
