"""Parse layouts written in CuTe's notation: as pycute prints them, as CuTe C++ prints them and as the CuTe DSL
prints them.

``parse_layout("(32,16):(1@TLane,1@TCol)")``, ``parse_layout("Sw<3,3,3> o 0 o (8,64):(64,1)")``; the round trip
``parse_layout(repr(L)) == L`` holds for layouts, scaled-basis strides and swizzled (composed) layouts. CuTe's
forms read as CuTe means them: static integers ``_8``, the DSL's ``S<3,4,3>``, offsets ``o _0 o``, and a pointer
``smem_ptr[16b](unset)`` -- whose swizzle CuTe applies to *byte* addresses, so on 16-bit elements
``Sw<3,4,3> o smem_ptr[16b]`` is pycute's ``Sw<3,3,3>`` (element offsets: ``M - log2(bytes)``).
"""
from __future__ import annotations

import re
from typing import cast

from .basis import E
from .errors import LayoutError
from .layout import Layout
from .normalize import MAX_DEPTH
from .swizzle import ComposedLayout, Swizzle

__all__ = ["parse_layout"]

_TOKEN = re.compile(r"\s*(?:_?(\d+)@_?(\w+)|_?(-?\d+)|([(),:]))")
_SWIZZLE = re.compile(r"^\s*S(?:w)?<\s*(\d+)\s*,\s*(\d+)\s*,\s*(-?\d+)\s*>\s*o\s*(.*)$", re.S)
_POINTER = re.compile(r"^\s*(?:smem|gmem|rmem)_ptr\[(\d+)b\]\([^)]*\)\s*o\s*(.*)$", re.S)
_OFFSET = re.compile(r"^\s*_?(-?\d+)\s*o\s*(.*)$", re.S)


def _tokens(text: str):
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise LayoutError(f"cannot parse layout {text!r} at {text[pos:pos + 12]!r}")
        if m.group(1):
            axis = m.group(2)
            out.append(int(m.group(1)) * E(int(axis) if axis.isdigit() else axis))
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


def _element_base(text: str, bits: int, base: int, shift: int, pointer_bits: int) -> int:
    """The element-offset ``M`` of a swizzle CuTe states on the byte addresses of ``pointer_bits``-wide elements."""
    if pointer_bits % 8 or pointer_bits & (pointer_bits - 1):
        raise LayoutError(f"layout {text!r}: a {pointer_bits}-bit pointer's byte-address swizzle has no element form "
                          f"pycute writes")
    log_bytes = (pointer_bits // 8).bit_length() - 1
    if base - log_bytes < 0:
        raise LayoutError(f"layout {text!r}: Sw<{bits},{base},{shift}> on the byte addresses of {pointer_bits}-bit "
                          f"elements moves bits inside an element; on element offsets it would be "
                          f"Sw<{bits},{base}-{log_bytes},{shift}>, which is not a swizzle")
    return base - log_bytes


def parse_layout(text: str) -> "Layout | ComposedLayout":
    """A Layout (or ComposedLayout with a swizzle) from cuTe notation ``shape:stride`` (or a shape alone, with
    compact column-major strides). Text that is not exactly one layout is a LayoutError."""
    if not isinstance(text, str):
        raise TypeError(f"parse_layout: expected text, got {type(text).__name__}")
    m = _SWIZZLE.match(text)
    if m:
        bits, base, shift = int(m.group(1)), int(m.group(2)), int(m.group(3))
        rest = m.group(4)
        pointer = _POINTER.match(rest)
        if pointer:                          # CuTe C++: the swizzle acts on the pointer's byte addresses
            base = _element_base(text, bits, base, shift, int(pointer.group(1)))
            rest = pointer.group(2)
        offset, m_off = 0, _OFFSET.match(rest)
        if m_off:
            offset, rest = int(m_off.group(1)), m_off.group(2)
        inner = parse_layout(rest)
        try:
            sw = Swizzle(bits, base, shift)
        except TypeError as e:
            raise LayoutError(f"layout {text!r}: {e}") from None
        return ComposedLayout(sw, offset, cast(Layout, inner))    # a nested swizzle: ComposedLayout refuses it
    pointer = _POINTER.match(text)
    if pointer:
        return parse_layout(pointer.group(2))
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
