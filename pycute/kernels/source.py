"""A kernel's source from its three parts: the configuration's compile-time constants (a prologue of ``constexpr``
definitions the body reads by name, so that its branches are ``if constexpr`` on them rather than text spliced in),
the plans' generated functions, and the body, real CUDA kept in a ``.cuh`` beside the kernel's Python (an editor and
NVRTC read it as it is). ``handwritten_lines`` counts the body as issue 34 counts hand-written CUDA."""
from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Mapping, Sequence

from ..errors import PlanError

__all__ = ["prologue", "kernel_source", "read_body", "handwritten_lines"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _constant(name: str, value: bool | int | float) -> str:
    if not _NAME.match(name):
        raise PlanError(f"prologue: {name!r} is not a C identifier")
    if isinstance(value, bool):
        return f"constexpr bool {name} = {'true' if value else 'false'};"
    if isinstance(value, int):
        if value < 0:
            return f"constexpr int {name} = {value};"
        return f"constexpr unsigned {name} = {value}u;"
    if isinstance(value, float):
        return f"constexpr float {name} = {value!r}f;"
    raise TypeError(f"prologue: {name} is a bool, an int or a float, got {type(value).__name__}")


def prologue(constants: Mapping[str, bool | int | float], title: str) -> str:
    """``constexpr`` definitions of ``constants`` (a bool as ``bool``, a non-negative int as ``unsigned``, a float as
    ``float``), under a comment naming the configuration ``title``."""
    return "\n".join([f"// {title}: its compile-time constants", *(_constant(k, v) for k, v in constants.items())])


@functools.lru_cache(maxsize=None)
def read_body(path: Path) -> str:
    """The text of a kernel's ``.cuh`` (read once per process)."""
    return path.read_text(encoding="utf-8")


def kernel_source(title: str, constants: Mapping[str, bool | int | float], generated: Sequence[str],
                  body: Path) -> str:
    """The translation unit: the constants, the plans' functions, then the body from ``body``."""
    return "\n".join([prologue(constants, title), *generated, f"// ---- {body.name} ----", read_body(body)])


def handwritten_lines(text: str, entry: str) -> int:
    """The hand-written lines of kernel ``entry`` in ``text``: those between the kernel's braces, blank, comment and
    lone-brace lines not counted (as issue 34 counts them)."""
    m = re.search(r'extern "C" __global__[^{]*?\b' + re.escape(entry) + r"\s*\(", text)
    if m is None:
        raise PlanError(f"handwritten_lines: no extern \"C\" __global__ kernel {entry!r} in the text")
    body = text[m.end():]
    body = body[body.index("{") + 1:]
    depth, end = 1, 0
    for k, ch in enumerate(body):
        depth += (ch == "{") - (ch == "}")
        if depth == 0:
            end = k
            break
    lines = (line.strip() for line in body[:end].splitlines())
    return sum(1 for line in lines if line and not line.startswith("//") and line.strip("{}") != "")
