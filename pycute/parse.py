"""Parse layouts written in cuTe's notation, as pycute prints them.

``parse_layout("(32,16):(1@TLane,1@TCol)")``, ``parse_layout("Sw<3,3,3> o 0 o (8,64):(64,1)")``; the round trip
``parse_layout(repr(L)) == L`` holds for layouts, scaled-basis strides and swizzled (composed) layouts.
"""
from __future__ import annotations

import re

from .basis import E
from .errors import LayoutError
from .layout import Layout
from .normalize import MAX_DEPTH
from .swizzle import ComposedLayout, Swizzle

__all__ = ["parse_layout"]

_TOKEN = re.compile(r"\s*(?:(\d+)@(\w+)|(-?\d+)|([(),:]))")
_SWIZZLE = re.compile(r"^\s*Sw<\s*(\d+)\s*,\s*(\d+)\s*,\s*(-?\d+)\s*>\s*o\s*(?:(-?\d+)\s*o\s*)?(.*)$", re.S)


def _tokens(text: str):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise LayoutError(f"cannot parse layout {text!r} at {text[pos:pos + 12]!r}")
        if m.group(1):
            out.append(int(m.group(1)) * E(m.group(2)))
        elif m.group(3):
            out.append(int(m.group(3)))
        else:
            out.append(m.group(4))
        pos = m.end()
    return out


def _tree(tokens, i, text, depth=0):
    if i >= len(tokens):
        raise LayoutError(f"layout {text!r} ends early")
    if depth > MAX_DEPTH:
        raise LayoutError(f"layout {text[:40]!r}...: nested deeper than {MAX_DEPTH} levels")
    t = tokens[i]
    if t == "(":
        items = []
        i += 1
        while True:
            item, i = _tree(tokens, i, text, depth + 1)
            items.append(item)
            if i < len(tokens) and tokens[i] == ",":
                i += 1
                continue
            if i < len(tokens) and tokens[i] == ")":
                return tuple(items), i + 1
            raise LayoutError(f"layout {text!r}: expected ',' or ')'")
    if t in (")", ",", ":"):
        raise LayoutError(f"layout {text!r}: unexpected {t!r}")
    return t, i + 1


def parse_layout(text: str):
    """A Layout (or ComposedLayout with a swizzle) from cuTe notation ``shape:stride`` (or a shape alone, with
    compact column-major strides). Text that is not exactly one layout is a LayoutError."""
    if not isinstance(text, str):
        raise TypeError(f"parse_layout: expected text, got {type(text).__name__}")
    m = _SWIZZLE.match(text)
    if m:
        inner = parse_layout(m.group(5))
        try:
            sw = Swizzle(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except TypeError as e:
            raise LayoutError(f"layout {text!r}: {e}") from None
        return ComposedLayout(sw, int(m.group(4) or 0), inner)
    tokens = _tokens(text)
    shape, i = _tree(tokens, 0, text)
    stride = None
    if i < len(tokens) and tokens[i] == ":":
        stride, i = _tree(tokens, i + 1, text)
    if i != len(tokens):
        raise LayoutError(f"layout {text!r}: unexpected text after the layout: {' '.join(map(str, tokens[i:]))!r}")
    try:
        return Layout(shape, stride)
    except TypeError as e:              # e.g. a scaled basis written in a shape
        raise LayoutError(f"layout {text!r}: {e}") from None
