"""Reading the calling convention back from generated code: every generated ``__device__`` function is preceded by
one ``// pycute: called by ...`` line (``pycute.arch.convention``), which ``read_conventions`` maps to the
function's name -- what an interpreter running a kernel checks each call site against."""
from __future__ import annotations

import re

from ..arch.convention import CONVENTION_PREFIX, Convention, parse_convention
from ..errors import CompileError

__all__ = ["read_conventions"]

_FUNCTION = re.compile(r"__device__\b[^(]*?(\w+)\s*\(")


def read_conventions(source: str) -> dict[str, Convention]:
    """``{function name: Convention}`` for every generated function of ``source`` (the first definition of an
    overloaded name); a convention line with no function after it is a CompileError."""
    if not isinstance(source, str):
        raise TypeError(f"read_conventions: the source is text, got {type(source).__name__}")
    out: dict[str, Convention] = {}
    pending: Convention | None = None
    for line in source.splitlines():
        text = line.strip()
        if text.startswith(CONVENTION_PREFIX):
            pending = parse_convention(text)
            continue
        m = _FUNCTION.search(text)
        if m and pending is not None:
            out.setdefault(m.group(1), pending)
            pending = None
    if pending is not None:
        raise CompileError(f"a convention line ({pending.comment()}) is followed by no __device__ function")
    return out
