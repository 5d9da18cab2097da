"""Checking user-written shapes and strides once, at the boundary: lists become tuples, integers (numpy's too)
become ints, and anything else is a TypeError or LayoutError naming the entry; nesting deeper than MAX_DEPTH is
refused so that no later recursion can overflow."""
from __future__ import annotations

from .basis import ScaledBasis
from .errors import LayoutError
from .int_tuple import as_int

__all__ = ["MAX_DEPTH", "fmt"]


def fmt(t: object) -> str:
    """An IntTuple as cuTe prints it: ``(4,(2,8))``."""
    if isinstance(t, tuple):
        return "(" + ",".join(fmt(e) for e in t) + ")"
    return repr(t) if isinstance(t, ScaledBasis) else str(t)


MAX_DEPTH = 32     # far deeper than any real layout; refusing deeper input keeps recursion bounded


def _canonical(shape, stride, depth=0) -> bool:
    """True when ``shape``/``stride`` are already congruent tuples of positive ints / int-or-basis strides, nested
    at most MAX_DEPTH deep."""
    if type(shape) is int:
        return shape > 0 and (type(stride) is int or type(stride) is ScaledBasis)
    if type(shape) is not tuple or type(stride) is not tuple or len(shape) != len(stride) or depth >= MAX_DEPTH:
        return False
    for s, d in zip(shape, stride):
        if type(s) is int:
            if s < 1 or not (type(d) is int or type(d) is ScaledBasis):
                return False
        elif not _canonical(s, d, depth + 1):
            return False
    return True


def _canonicalize(shape, stride, where, depth=0):
    """``(shape, stride)`` with lists as tuples and integers as ints, or a LayoutError/TypeError naming the entry."""
    if depth > MAX_DEPTH:
        raise LayoutError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(shape, (tuple, list)):
        if not isinstance(stride, (tuple, list)) or len(shape) != len(stride):
            raise LayoutError(f"{where}: shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
        pairs = [_canonicalize(s, d, where, depth + 1) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    if isinstance(stride, (tuple, list)):
        raise LayoutError(f"{where}: shape {fmt(shape)} and stride {fmt(stride)} are not congruent")
    shape = as_int(shape, f"{where}: a shape entry")
    if shape < 1:
        raise LayoutError(f"{where}: shape entries must be positive integers, got {shape}")
    if type(stride) is not ScaledBasis:
        stride = as_int(stride, f"{where}: a stride entry")
    return shape, stride


def _canonical_shape(shape, where, depth=0):
    if depth > MAX_DEPTH:
        raise LayoutError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(shape, (tuple, list)):
        return tuple(_canonical_shape(s, where, depth + 1) for s in shape)
    shape = as_int(shape, f"{where}: a shape entry")
    if shape < 1:
        raise LayoutError(f"{where}: shape entries must be positive integers, got {shape}")
    return shape


