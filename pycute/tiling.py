"""Divides and products (``cute/layout.hpp``), as CuTe computes them.

``logical_divide(A, B) = A o (B, complement(B, shape(A)))`` and ``logical_product(A, B) = (A, complement(A,
size(A)*cosize(B)) o B)``; the zipped, tiled and flat forms regroup those rank-2 results by the tiler's profile.
A tiler is a Layout, an int ``n`` (CuTe's ``make_layout(n)``), ``None`` (the whole mode) or a tuple of tilers
applied mode by mode.
"""
from __future__ import annotations

import numbers
from typing import Any, Callable

from .errors import LayoutError
from .typing import IntTuple
from .int_tuple import ceil_div, flatten, product_each
from .layout import (AnyLayout, Layout, LayoutLike, _as_layout, _canonical_shape, _memo, _mk, coalesce, cosize,
                     lifted, make_layout, merge_modes)
from .modes import append
from .composition import _compose_layouts, complement
from .recast import make_ordered_layout

__all__ = ["logical_divide", "zipped_divide", "tiled_divide", "flat_divide", "logical_product", "zipped_product",
           "tiled_product", "flat_product", "blocked_product", "raked_product", "tile_to_shape", "hier_unzip"]


def _tiler(B, op):
    """A tiler checked and normalised: a Layout, a positive int as ``Layout(n)``, None, or a tuple of tilers."""
    if type(B) is Layout or B is None:
        return B
    if isinstance(B, (tuple, list)):
        return tuple([_tiler(b, op) for b in B])
    if isinstance(B, Layout):
        return B
    if not isinstance(B, numbers.Integral) or isinstance(B, bool):
        raise TypeError(f"{op}: a tiler must be a Layout, a positive int, None or a tuple of those, got {B!r}")
    if B < 1:
        raise LayoutError(f"{op}: an int tiler must be a positive size, got {B}")
    return Layout(int(B))


def _modes_of(A: Layout):
    """The top-level modes' shapes and strides (a tuple-shaped layout is unpacked, even a 1-tuple, as the CuTe DSL
    does; a plain one is its own only mode)."""
    return (A.shape, A.stride) if type(A.shape) is tuple else ((A.shape,), (A.stride,))


def _by_mode(op, A: Layout, B: tuple) -> Layout:
    """``op(A_i, B_i)`` as mode i for each entry of ``B``, A's later modes kept."""
    shape, stride = _modes_of(A)
    n = len(B)
    if n > len(shape):
        raise LayoutError(f"{op.__name__.strip('_')}: the tiler {B!r} has more modes than {A!r}")
    rs, rd = [], []
    for i in range(n):
        m = op(_mk(shape[i], stride[i]), B[i])
        rs.append(m.shape)
        rd.append(m.stride)
    return _mk(tuple(rs) + shape[n:], tuple(rd) + stride[n:])


def _logical_divide(A: Layout, B) -> Layout:
    if type(B) is Layout:
        coalesced = merge_modes(flatten(A.shape), flatten(A.stride))[0]
        rest = complement.raw(B, coalesced)
        return _compose_layouts(A, _mk((B.shape, rest.shape), (B.stride, rest.stride)))
    if B is None:
        return A
    return _by_mode(_logical_divide, A, B)


def _logical_product(A: Layout, B) -> Layout:
    if type(B) is Layout:
        rest = _compose_layouts(complement.raw(A, A.size() * cosize(B)), B)
        return _mk((A.shape, rest.shape), (A.stride, rest.stride))
    if B is None:
        return A
    return _by_mode(_logical_product, A, B)


def _checked(A: LayoutLike, B: LayoutLike, op: str) -> tuple[Layout, Any]:
    A = _as_layout(A, op)
    B = _tiler(B, op)
    for d in flatten(B.stride) if type(B) is Layout else ():
        if type(d) is not int:
            raise LayoutError(f"{op}({A!r}, {B!r}): tilers with scaled-basis strides are not supported")
    return A, B


@_memo
@lifted
def logical_divide(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``A o (B, complement(B, shape(coalesce(A))))``: mode 0 is the tile ``B`` selects, mode 1 iterates over tiles
    (the complement covers A's coalesced shape, as the CuTe DSL computes it).

    A tuple tiler divides mode by mode (later modes stay whole); ``None`` leaves a mode whole.
    """
    return _logical_divide(*_checked(A, B, "logical_divide"))


@_memo
@lifted
def logical_product(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``(A, complement(A, size(A)*cosize(B)) o B)``: mode 0 is ``A``, mode 1 repeats it as ``B`` lays out."""
    return _logical_product(*_checked(A, B, "logical_product"))


def _unzip(layout: Layout, tiler):
    """CuTe's ``tile_unzip``: the (tile, rest) modes found at the tiler's terminals gathered into
    ``((tile_0, tile_1, ...), (rest_0, rest_1, ..., untiled modes...))``."""
    if type(tiler) is not tuple:
        if type(layout.shape) is not tuple or len(layout.shape) != 2:
            raise LayoutError(f"zip: {layout!r} is not a (tile, rest) pair at a terminal of the tiler {tiler!r}")
        return layout
    shape, stride = _modes_of(layout)
    ts, td, rs, rd = [], [], [], []
    for i, t in enumerate(tiler):
        part = _unzip(_mk(shape[i], stride[i]), t)
        ts.append(part.shape[0])
        td.append(part.stride[0])
        rs.append(part.shape[1])
        rd.append(part.stride[1])
    n = len(tiler)
    return _mk((tuple(ts), tuple(rs) + shape[n:]), (tuple(td), tuple(rd) + stride[n:]))


def hier_unzip(splitter: Callable[[Layout, LayoutLike], Layout], A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``splitter`` (a logical divide or product) with its result regrouped by the tiler:
    ``((tile_0, tile_1, ...), (rest_0, rest_1, ...))`` (CUTLASS pycute's name for zip-by-tiler)."""
    A, B = _checked(A, B, getattr(splitter, "__name__", "hier_unzip"))
    return A if B is None else _unzip(splitter(A, B), B)


@_memo
@lifted
def zipped_divide(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``logical_divide`` with tiles gathered: ``((tile modes...), (rest modes...))``."""
    A, B = _checked(A, B, "zipped_divide")
    return A if B is None else _unzip(_logical_divide(A, B), B)


def _regroup(z: Layout, flat_tiles: bool) -> Layout:
    """``((tiles), (rests))`` as ``((tiles), rest_0, rest_1, ...)`` or ``(tile_0, ..., rest_0, ...)``."""
    (tshape, rshape), (tstride, rstride) = z.shape, z.stride
    rs, rd = _modes_of(_mk(rshape, rstride))
    if flat_tiles:
        ts, td = _modes_of(_mk(tshape, tstride))
        return _mk(ts + rs, td + rd)
    return _mk((tshape,) + rs, (tstride,) + rd)


@_memo
@lifted
def tiled_divide(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``((tile modes...), rest_0, rest_1, ...)``."""
    return _regroup(zipped_divide.raw(A, B), False)


@_memo
@lifted
def flat_divide(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``(tile_0, tile_1, ..., rest_0, rest_1, ...)``."""
    return _regroup(zipped_divide.raw(A, B), True)


@_memo
@lifted
def zipped_product(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``logical_product`` with modes gathered: ``((block modes...), (repeat modes...))``."""
    A, B = _checked(A, B, "zipped_product")
    return A if B is None else _unzip(_logical_product(A, B), B)


@_memo
@lifted
def tiled_product(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``((block modes...), repeat_0, repeat_1, ...)``."""
    return _regroup(zipped_product.raw(A, B), False)


@_memo
@lifted
def flat_product(A: LayoutLike, B: LayoutLike) -> AnyLayout:
    """``(block_0, block_1, ..., repeat_0, repeat_1, ...)``."""
    return _regroup(zipped_product.raw(A, B), True)


def _zip(first: Layout, second: Layout, op: str) -> Layout:
    """CuTe's ``zip``: mode ``i`` is ``(first_i, second_i)``; a ``first`` of one plain mode pairs with all of
    ``second`` as one mode, a tuple ``first`` needs a ``second`` of the same rank."""
    if type(first.shape) is not tuple:
        return make_layout(make_layout(first, second))
    if type(second.shape) is not tuple or len(first.shape) != len(second.shape):
        raise LayoutError(f"{op}: cannot zip {first!r} with {second!r} mode by mode (CuTe: unable to compute "
                          f"product)")
    return make_layout(*[make_layout(first[i], second[i]) for i in range(len(first.shape))])


def _rank_product(block, tiler, op):
    block, tiler = _as_layout(block, op), _as_layout(tiler, op)
    r = max(block.rank(), tiler.rank())
    prod = _logical_product(append(block, r), append(tiler, r))
    return prod, r


@_memo
@lifted
def blocked_product(block: LayoutLike, tiler: LayoutLike) -> AnyLayout:
    """Mode ``i`` is ``(block_i, tiler_i)``: the block repeated as whole blocks laid out by ``tiler``; rank
    ``max(rank(block), rank(tiler))`` (the CuTe DSL leaves these modes uncoalesced)."""
    prod, _ = _rank_product(block, tiler, "blocked_product")
    return _zip(prod[0], prod[1], "blocked_product")


@_memo
@lifted
def raked_product(block: LayoutLike, tiler: LayoutLike) -> AnyLayout:
    """Mode ``i`` is ``(tiler_i, block_i)``, coalesced: the block's elements interleaved (raked) across the
    repeats; rank ``max(rank(block), rank(tiler))``."""
    prod, r = _rank_product(block, tiler, "raked_product")
    return coalesce.raw(_zip(prod[1], prod[0], "raked_product"), (1,) * r)


@_memo
@lifted
def tile_to_shape(block: LayoutLike, target_shape: IntTuple, order: IntTuple | None = None) -> AnyLayout:
    """``block`` repeated (``blocked_product``, in mode order ``order``) until its modes have the sizes of
    ``target_shape``'s; each block mode must divide the target's (CuTe's post-condition: the shapes are
    compatible)."""
    block = _as_layout(block, "tile_to_shape")
    target_shape = _canonical_shape(target_shape, "tile_to_shape")
    target = product_each(target_shape)
    if block.rank() > len(target):
        raise LayoutError(f"tile_to_shape: {block!r} has more modes than target shape {target_shape!r}")
    padded = append(block, len(target))
    block_shape = product_each(padded.shape)
    for i, (t, b) in enumerate(zip(target, block_shape)):
        if t % b:
            raise LayoutError(f"tile_to_shape: block mode {i} of size {b} does not divide target extent {t}")
    return blocked_product.raw(padded, make_ordered_layout.raw(ceil_div(target, block_shape), order))
