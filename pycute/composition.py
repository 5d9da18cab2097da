"""Composition, complement, the inverses and the common layouts (``cute/layout.hpp``), as CuTe computes them.

Composition distributes over the right operand's modes and, per mode ``n:r``, divides the stride ``r`` out of the
flattened left operand, then takes ``n`` elements from what is left. Where the CuTe DSL accepts a stride or a size
that does not divide a mode because the right operand's elements stay inside that mode, pycute accepts it too and
returns the same layout. Two of CuTe's answers break the contract ``R(i) == A(B(i))``, and pycute refuses them:
a non-dividing stride whose elements run past the mode, and right-operand modes whose digits in the left operand
carry into one another (see the README's deliberate differences; ``tests/parity`` checks each by evaluation).
"""
from __future__ import annotations

import numbers

from .errors import LayoutError
from .typing import IntTuple
from .int_tuple import ceil_div, compact_col_major, flatten, is_int, product, shape_min, signum
from .layout import AnyLayout, ComposedBase, Layout, LayoutLike, _as_layout, _memo, last_call, _mk, coalesce, merge_modes

__all__ = ["composition", "complement", "right_inverse", "left_inverse", "max_common_layout", "max_common_vector"]


def _leaf(ls, ld, n, r, loads, A, B):
    """``(shape, stride)`` of ``A o n:r`` for the coalesced ``A`` = ``ls:ld`` (the last mode unbounded).

    ``loads[j]`` accumulates the largest digit this leaf adds to A's mode ``j``, for the carry check.
    """
    if r == 0:
        return n, r
    if not is_int(r):
        raise LayoutError(f"composition({A!r}, {B!r}): right operand stride {r!r} is not an integer")
    if len(ls) == 1:
        return n, r * ld[0]
    # Divide the stride out of the bounded modes: per mode, the elements left, their stride, their digit step.
    rest, avail, steps, digit, relaxed = r, [], [], [], None
    for j, (s, d) in enumerate(zip(ls[:-1], ld[:-1])):
        digit.append(rest)
        if s % rest == 0:
            avail.append(s // rest)
            steps.append(d * rest)
            rest = 1
        elif rest % s == 0:
            avail.append(1)
            steps.append(d * s)
            rest //= s
        elif rest < s:                                   # CuTe takes the ceil(s / rest) elements inside the mode
            avail.append(-(-s // rest))
            steps.append(d * rest)
            rest, relaxed = 1, j
        else:
            raise LayoutError(f"composition({A!r}, {B!r}): stride divisibility fails: stride {rest} and a mode of "
                              f"extent {s} do not divide one another")
    # Take n elements from what is left, mode by mode; the last mode is unbounded.
    shapes, need = [], n
    for j, a in enumerate(avail):
        take = shape_min(a, need)
        shapes.append(take)
        loads[j] = loads.get(j, 0) + (take - 1) * digit[j]
        if need % a == 0:
            need //= a
        elif need < a:
            need = 1
        else:
            raise LayoutError(f"composition({A!r}, {B!r}): shape divisibility fails: {need} elements remain but "
                              f"the next mode holds {a}, which does not divide {need}")
        if j == relaxed and need > 1:
            raise LayoutError(f"composition({A!r}, {B!r}): CuTe's answer would be wrong: stride {digit[j]} does not "
                              f"divide the mode of extent {ls[j]}, and {n} elements run past it")
    last = rest * ld[-1]
    shapes.append(need)
    steps.append(last)
    shape, stride = merge_modes(shapes, steps)
    return (1, last) if shape == 1 else (shape, stride)


def _compose(ls, ld, shape, stride, loads, A, B):
    if type(shape) is tuple:
        parts = [_compose(ls, ld, s, d, loads, A, B) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return _leaf(ls, ld, shape, stride, loads, A, B)


def _check_carries(ls, loads, A, B):
    """B's modes each map exactly; together they do only if their digits in A's coordinate never carry from a
    bounded mode into the next (a carry always changes the offset of a coalesced A)."""
    for j, digits in loads.items():
        if j < len(ls) - 1 and digits >= ls[j]:
            raise LayoutError(f"composition({A!r}, {B!r}): CuTe's answer would be wrong: the modes of the right "
                              f"operand overlap in mode {j} (extent {ls[j]}) of the coalesced left operand, so their "
                              f"digits carry and the result would not equal A(B(i))")


def _scaled(stride, k):
    if type(stride) is tuple:
        return tuple([_scaled(d, k) for d in stride])
    return stride * k


def _compose_layouts(A: Layout, B: Layout) -> Layout:
    """``A o B`` for layouts whose operands are already checked (B's strides are integers)."""
    if type(A.shape) is int:                 # one mode: the stride scales B's (the mode is unbounded)
        d = B.stride
        return _mk(B.shape, d * A.stride if type(d) is int else _scaled(d, A.stride))
    shapes, strides = flatten(A.shape), flatten(A.stride)
    if len(shapes) == 1:                     # one mode: the stride scales B's (the mode is unbounded)
        return _mk(B.shape, _scaled(B.stride, strides[0]))
    if shapes[-1] == 1:                      # the last mode is unbounded: keep its stride beyond size 1
        shapes = shapes[:-1] + (2,)
    ls, ld = merge_modes(shapes, strides)
    if type(ls) is not tuple:
        return _mk(B.shape, _scaled(B.stride, ld))
    loads: dict = {}
    shape, stride = _compose(ls, ld, B.shape, B.stride, loads, A, B)
    _check_carries(ls, loads, A, B)
    return _mk(shape, stride)


def _composition(A: Layout, B) -> Layout:
    """``A o B`` for a Layout ``A`` and a checked right operand: a Layout, an int, None or a tuple of those."""
    tB = type(B)
    if tB is Layout:
        return _compose_layouts(A, B)
    if B is None:
        return A
    if tB is tuple:
        shape, stride = (A.shape, A.stride) if type(A.shape) is tuple else ((A.shape,), (A.stride,))
        if len(B) > len(shape):
            raise LayoutError(f"composition: {B!r} has more modes than {A!r}")
        modes = [_composition(_mk(shape[i], stride[i]), b) for i, b in enumerate(B)]
        return _mk(tuple([m.shape for m in modes]), tuple([m.stride for m in modes]))
    return _compose_layouts(A, Layout(B))    # CuTe's make_layout(n): n:1, or 1:0 for n = 1


def _right_operand(B, A):
    """B with lists as tuples, checked: Layouts with integer strides, positive ints, None, tuples of those."""
    if type(B) is Layout:
        if type(B.stride) is int:
            return B
        for d in flatten(B.stride):
            if type(d) is not int:
                raise LayoutError(f"composition({A!r}, {B!r}): right operands with scaled-basis strides are not "
                                  f"supported")
        return B
    if B is None:
        return B
    if isinstance(B, (tuple, list)):
        return tuple([_right_operand(b, A) for b in B])
    if not isinstance(B, numbers.Integral) or isinstance(B, bool):
        raise TypeError(f"composition({A!r}, {B!r}): the right operand must be a Layout, a positive int, None or a "
                        f"tuple of those, got {type(B).__name__}")
    if B < 1:
        raise LayoutError(f"composition({A!r}, {B!r}): an int right operand must be a positive size")
    return int(B)


@_memo
def composition(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``R = A o B`` with ``R(i) == A(B(i))`` for every ``i < size(B)``; ``R`` is shaped like ``B``.

    ``B`` may be a Layout, an int ``n`` (meaning ``n:1``), ``None`` (identity), or a tuple tiler applied to A's
    first modes (modes past the tiler are dropped, as in CuTe). ``A`` may be a Layout, a Swizzle or a
    ComposedLayout.
    """
    if B is None:
        return A
    if type(A) is not Layout:
        if isinstance(A, ComposedBase):
            return A.with_inner(composition(A.inner, B))
        compose = getattr(A, "compose", None)
        if compose is None:
            raise LayoutError(f"composition: left operand {A!r} is not a layout")
        return compose(B)
    return _composition(A, _right_operand(B, A))


# ---------------------------------------------------------------------------------------------------------
# complement and inverses
# ---------------------------------------------------------------------------------------------------------
def _int_strides(layout, op):
    strides = flatten(layout.stride)
    for d in strides:
        if not is_int(d):
            raise LayoutError(f"{op}: {layout!r} has scaled-basis stride {d!r}; {op} needs integer strides")
    return flatten(layout.shape), strides


@last_call
def complement(layout: LayoutLike, cotarget: IntTuple | None = None, *,
               max_idx: IntTuple | None = None) -> Layout:
    """``C`` with ``C(i) != L(j)`` for ``0 < i < size(C)`` and all ``j``, ``C`` ordered, and covering the codomain
    ``[0, cotarget)`` (an int or a shape; default ``cosize(L)``) as far as ``L`` leaves it: CuTe's complement.

    ``max_idx`` is CUTLASS pycute's name for ``cotarget``. A layout that overlaps itself has no complement
    (LayoutError).
    """
    if max_idx is not None:
        cotarget = max_idx
    layout = _as_layout(layout, "complement")
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    # The modes that move (size > 1, stride != 0), by increasing stride; filter() would also merge contiguous
    # ones, which gives the same gaps.
    modes = []
    for s, d in zip(shapes, strides):
        if type(d) is not int:
            raise LayoutError(f"complement: {layout!r} has scaled-basis stride {d!r}; complement needs integer "
                              f"strides")
        if s != 1 and d != 0:
            modes.append((d, s))
    modes.sort()
    cotarget = _cotarget(layout, modes, cotarget)
    if not modes:
        return Layout(product(cotarget))
    if modes[0][0] < 0:
        raise LayoutError(f"complement: {layout!r} has a negative stride")
    result_shape, result_stride, current = [], [], 1
    for d, s in modes:
        gap = d // current
        if gap == 0:
            raise LayoutError(f"complement: {layout!r} is not injective (stride {d} inside the extent {current} it "
                              f"already covers)")
        result_shape.append(gap)
        result_stride.append(current)
        current = d * s
    rest = product(ceil_div(cotarget, current))
    result_shape.append(rest)
    result_stride.append(current if rest > 1 else 0)     # compact_col_major of one int mode
    return _mk(*merge_modes(result_shape, result_stride))


def _cotarget(layout, modes, cotarget):
    """The codomain a complement covers: an int or a shape of positive integers; by default ``cosize(L)``."""
    if cotarget is None:
        return 1 + sum((s - 1) * d for d, s in modes)
    if type(cotarget) is int and cotarget > 0:
        return cotarget
    try:
        target = Layout(cotarget).shape
    except (LayoutError, TypeError):
        target = None
    if target is None:
        raise LayoutError(f"complement({layout!r}, {cotarget!r}): the cotarget must be a positive integer or a "
                          f"shape")
    return target


@_memo
def right_inverse(layout: LayoutLike) -> Layout:
    """``R`` with ``L(R(i)) == i`` for every ``i < size(R)``, as large as possible: the chain of modes whose strides
    follow one another from 1 (absolute values; a negative stride gives a negative step)."""
    if layout is None:
        return None
    layout = _as_layout(layout, "right_inverse")
    shapes, strides = merge_modes(flatten(layout.shape), flatten(layout.stride))
    if type(shapes) is not tuple:
        shapes, strides = (shapes,), (strides,)
    at: dict = {}                                    # |stride| -> the first mode with it
    rstride, prefix = [], 1                          # the coalesced layout's compact column-major strides
    for i, (s, d) in enumerate(zip(shapes, strides)):
        if type(d) is not int:
            raise LayoutError(f"right_inverse: {layout!r} has scaled-basis stride {d!r}; right_inverse needs "
                              f"integer strides")
        at.setdefault(abs(d), i)
        rstride.append(prefix)
        prefix *= s
    rs, rd, current = [], [], 1
    while current in at:
        k = at.pop(current)                          # popped: a mode joins the chain once
        rs.append(shapes[k])
        rd.append(signum(strides[k]) * rstride[k])
        current = shapes[k] * abs(strides[k])
    if not rs:
        return _mk(1, 0)
    return _mk(rs[0], rd[0]) if len(rs) == 1 else _mk(tuple(rs), tuple(rd))


@_memo
def left_inverse(layout: LayoutLike) -> Layout:
    """``R`` with ``L(R(L(i))) == L(i)`` for every ``i < size(L)`` (CuTe's quasi-inverse), so ``R(L(i)) == i`` when
    ``L`` is injective: L's modes sorted by stride, each spanning the codomain up to the next stride with L's own
    domain stride, and the offsets below the smallest stride mapped to 0."""
    if layout is None:
        return None
    layout = _as_layout(layout, "left_inverse")
    shapes, strides = _int_strides(layout, "left_inverse")
    domain = flatten(compact_col_major(layout.shape))
    modes = sorted((d, s, x) for s, d, x in zip(shapes, strides, domain) if s != 1 and d != 0)
    if not modes:
        return _mk(1, 0)
    if modes[0][0] < 0:
        raise LayoutError(f"left_inverse: {layout!r} has a negative stride")
    rs, rd = [modes[0][0]], [0]
    for (d, _, x), (nxt, _, _) in zip(modes, modes[1:]):
        if nxt % d:
            raise LayoutError(f"left_inverse: {layout!r} has strides {d} and {nxt} that do not nest; no layout "
                              f"inverts it")
        rs.append(nxt // d)
        rd.append(x)
    rs.append(modes[-1][1])
    rd.append(modes[-1][2])
    return _mk(*merge_modes(rs, rd))


# ---------------------------------------------------------------------------------------------------------
# common layouts
# ---------------------------------------------------------------------------------------------------------
@_memo
def max_common_layout(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``R`` with ``A(R(i)) == i`` and ``B(R(i)) == i`` for every ``i < size(R)``, as large as possible."""
    A, B = _as_layout(A, "max_common_layout"), _as_layout(B, "max_common_layout")
    inv_b = right_inverse(B)
    common = coalesce.raw(composition(A, inv_b))
    first = common[0] if common.rank() > 1 else common
    if first.stride == 1:
        return composition(inv_b, first)
    return _mk(1, 0)


@_memo
def max_common_vector(A: LayoutLike, B: LayoutLike) -> int:
    """The largest ``n`` such that the first ``n`` indices map to ``0..n-1`` under both ``A`` and ``B``."""
    common = coalesce.raw(composition(A, right_inverse(B)))
    first = common[0] if common.rank() > 1 else common
    return first.shape if first.stride == 1 else 1

