"""Width changes and ordered layouts (``cute/layout.hpp``, ``cute/stride.hpp``), as CuTe computes them."""
from __future__ import annotations

from typing import Any

from .basis import ScaledBasis
from .dtypes import DType
from .errors import LayoutError
from .typing import IntTuple
from .int_tuple import as_int, compact_order, flatten, tuplify
from .layout import AnyLayout, ComposedBase, Layout, LayoutLike, _as_layout, _memo, _mk

__all__ = ["upcast", "downcast", "recast", "make_ordered_layout"]


def _map_leaves(shape, stride, fn):
    if type(shape) is tuple:
        parts = [_map_leaves(s, d, fn) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return fn(shape, stride)


def _check(layout: LayoutLike, n: int, op: str) -> Layout:
    if isinstance(layout, ComposedBase):
        raise LayoutError(f"{op}: {layout!r} is a ComposedLayout; {op} its inner layout and swizzle apart")
    layout = _as_layout(layout, op)
    n = as_int(n, f"{op}: the factor")
    if n < 1:
        raise LayoutError(f"{op}({layout!r}, {n!r}): the factor must be a positive integer")
    for d in flatten(layout.stride):
        if isinstance(d, ScaledBasis):
            raise LayoutError(f"{op}: {layout!r} has scaled-basis stride {d!r}")
    return layout


@_memo
def upcast(layout: LayoutLike, n: int) -> AnyLayout:
    """The layout in units of ``n`` old elements: per mode, a stride ``d`` becomes ``ceil(|d| / n)`` (sign kept) and
    a mode with ``|d| < n`` packs ``n / |d|`` elements into one, its size rounded up; stride-0 modes stay. Each
    nonzero stride and ``n`` must divide one another (CuTe's static divisibility condition)."""
    layout = _check(layout, n, "upcast")
    if n == 1:
        return layout

    def leaf(s: int, d: Any) -> tuple:
        if d == 0:
            return s, d
        if abs(d) % n and n % abs(d):
            raise LayoutError(f"upcast({layout!r}, {n}): stride {d} and {n} do not divide one another "
                              f"(CuTe's divisibility condition)")
        return -(-s // -(-n // abs(d))), (1 if d > 0 else -1) * -(-abs(d) // n)
    return _mk(*_map_leaves(layout.shape, layout.stride, leaf))


@_memo
def downcast(layout: LayoutLike, n: int) -> AnyLayout:
    """The layout in units of ``1/n`` old elements: each unit-stride mode (stride 1 or -1) grows ``n``-fold, other
    strides scale by ``n``. The layout needs a stride-1 mode (CuTe: "downcast requires adjacent elements"); a
    stride of -1 alone does not do: its elements' parts would be laid out backwards."""
    layout = _check(layout, n, "downcast")
    if n == 1:
        return layout
    if 1 not in flatten(layout.stride):
        raise LayoutError(f"downcast({layout!r}, {n}): no stride-1 mode to split elements along")
    return _mk(*_map_leaves(layout.shape, layout.stride,
                            lambda s, d: (s * n, d) if d in (1, -1) else (s, d * n)))


def _bits(x, op) -> int:
    bits = as_int(getattr(x, "bits", x), f"{op}: a width in bits")
    if bits < 1:
        raise LayoutError(f"{op}: expected a width in bits or a dtype, got {x!r}")
    return bits


def recast(layout: LayoutLike, old: DType | int, new: DType | int) -> AnyLayout:
    """The same bytes viewed as elements of width ``new`` instead of ``old`` (dtypes or bit counts): an upcast by
    ``new / old`` or a downcast by ``old / new`` (CuTe's ``recast_layout<old, new>``)."""
    ob, nb = _bits(old, "recast"), _bits(new, "recast")
    if nb == ob:
        return layout if isinstance(layout, (Layout, ComposedBase)) else _as_layout(layout, "recast")
    if nb > ob:
        if nb % ob:
            raise LayoutError(f"recast: {nb} bits is not a multiple of {ob} bits")
        return upcast(layout, nb // ob)
    if ob % nb:
        raise LayoutError(f"recast: {ob} bits is not a multiple of {nb} bits")
    return downcast(layout, ob // nb)


@_memo
def make_ordered_layout(shape: IntTuple, order: IntTuple | None = None) -> Layout:
    """A compact layout of ``shape`` whose strides grow in the order ``order`` (congruent to ``shape``; smallest
    first, equal orders share a stride); column-major without an order."""
    shape = tuplify(shape)
    if order is None:
        return Layout(shape)
    return Layout(shape, compact_order(shape, tuplify(order)))
