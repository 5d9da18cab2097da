"""Line information in PTX (``-lineinfo``; PTX ISA #debugging-directives-loc): ``.loc FILE LINE COL[,
function_name LABEL, inlined_at FILE LINE COL]`` before instructions, ``.file`` names, and the function names the
``.debug_str`` section holds. The front end keeps each ``.loc`` as a pseudo-statement so that every instruction knows
its source line and the chain of inlined functions it came from (what calling-convention checks read)."""
from __future__ import annotations

import re

import attrs

__all__ = ["Origin", "LOC", "SECTION", "line_info", "origin", "functions", "demangle"]

#: ``.loc FILE LINE COL[, function_name LABEL, inlined_at FILE LINE COL]``, the five numbers and the label captured.
LOC = re.compile(r"^[ \t]*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:\s*,\s*function_name\s+([\w$]+)\s*,\s*inlined_at\s+(\d+)\s+"
                 r"(\d+)\s+\d+)?[^\n]*", re.M)
SECTION = re.compile(r"^[ \t]*\.section\b[^{]*\{.*?^[ \t]*\}", re.M | re.S)
_FILE = re.compile(r"^[ \t]*\.file\s+(\d+)\s+\"([^\"]*)\"", re.M)


@attrs.frozen
class Origin:
    """Where an instruction came from (``-lineinfo``): its source file and line, and when it was inlined, the
    function it belongs to and the file and line of the call that inlined it."""

    file: str
    line: int
    function: str | None = None
    call_file: str | None = None
    call_line: int | None = None


def demangle(name: str) -> str:
    """A function-local static's name (``_ZZ16blockscaled_gemmE4full`` -> ``full``) or a function's
    (``_Z6load_aPKvjjii`` -> ``load_a``); other names unchanged."""
    m = re.match(r"_ZZ.*E(\d+)(\w+)$", name) or re.match(r"_Z(\d+)(\w+)$", name)
    return m.group(2)[:int(m.group(1))] if m else name


def line_info(ptx: str) -> tuple[dict, dict]:
    """``.file`` numbers -> paths, and ``$L__info_string`` labels -> the (demangled) function names they hold."""
    files = {m.group(1): m.group(2) for m in _FILE.finditer(ptx)}
    names = {}
    for section in SECTION.finditer(ptx):
        parts = re.split(r"([\w$]+):", section.group(0))
        for label, body in zip(parts[1::2], parts[2::2]):
            data = bytes(int(v) for v in re.findall(r"\b\d+\b", body.replace(".b8", " ")))
            names[label] = demangle(data.split(b"\0")[0].decode(errors="replace"))
    return files, names


def origin(text: str, info: tuple[dict, dict]) -> Origin:
    """The ``Origin`` of a ``@loc`` pseudo-statement (what the front end turns a ``.loc`` into)."""
    f, line, fn, cf, cl = text.split()[1:]
    files, names = info
    return Origin(files.get(f, f), int(line), names.get(fn, fn) if fn != "-" else None,
                  files.get(cf, cf) if cf != "-" else None, int(cl) if cl != "-" else None)


def functions(at: Origin | None, frames: dict) -> tuple[str, ...]:
    """The inlined functions an instruction at ``at`` is part of, innermost first: each frame's call site is the
    location of the frame around it (the last ``.loc`` seen there)."""
    out: list[str] = []
    while at is not None and at.function is not None and len(out) < 16:
        out.append(at.function)
        at = frames.get((at.call_file, at.call_line))
    return tuple(out)


