"""CuTe's mode vocabulary: building layouts mode by mode and picking modes out, each a small free function with
its post-condition (``cute/layout.hpp``'s ``append``, ``prepend``, ``group``, ``select``, ``take``, ``get``,
``make_identity_layout``), and ``print_latex``; ``LayoutLeft`` / ``LayoutRight`` live with ``make_layout``."""
from __future__ import annotations

import abc

from .basis import E
from .errors import LayoutError
from .int_tuple import as_int, is_int
from .layout import ComposedBase, Layout, LayoutLike, _as_layout, _mk, make_layout
from .typing import IntTuple

__all__ = ["LayoutBase", "append", "prepend", "group", "select", "take", "get", "make_identity_layout", "latex"]


class LayoutBase(abc.ABC):
    """What CUTLASS's ``pycute`` calls every layout: ``isinstance(x, LayoutBase)`` for a Layout and a
    ComposedLayout."""


LayoutBase.register(Layout)
LayoutBase.register(ComposedBase)  # type: ignore[type-abstract]  # (an ABC registering an ABC)


def _modes(layout: Layout) -> tuple[tuple, tuple]:
    return (layout.shape, layout.stride) if isinstance(layout.shape, tuple) else ((layout.shape,), (layout.stride,))


def _pad(layout: LayoutLike, x: LayoutLike, n: int | None, op: str, front: bool) -> Layout:
    """``layout`` with ``x`` as a new mode at the back (or ``front``), or padded with it to rank ``n``; an int ``x``
    without ``n`` is CUTLASS pycute's pad to rank ``x`` with ``1:0``."""
    layout = _as_layout(layout, op)
    if is_int(x) and n is None:
        return _pad(layout, Layout(1, 0), as_int(x, f"{op}: rank"), op, front)
    x = _as_layout(x, op)
    shape, stride = _modes(layout)
    count = 1 if n is None else as_int(n, f"{op}: n") - len(shape)
    if count <= 0:
        return layout
    pad_shape, pad_stride = (x.shape,) * count, (x.stride,) * count
    if front:
        return _mk(pad_shape + shape, pad_stride + stride)
    return _mk(shape + pad_shape, stride + pad_stride)


def append(layout: LayoutLike, x: LayoutLike, n: int | None = None) -> Layout:
    """CuTe's ``append``: ``layout`` with ``x`` as a new last mode (``rank + 1``); with ``n``, padded with ``x`` to
    rank ``n``. ``append(layout, r)`` with an int is CUTLASS pycute's pad to rank ``r`` with ``1:0``."""
    return _pad(layout, x, n, "append", front=False)


def prepend(layout: LayoutLike, x: LayoutLike, n: int | None = None) -> Layout:
    """CuTe's ``prepend``: ``x`` as a new first mode (with ``n``, padded at the front to rank ``n``)."""
    return _pad(layout, x, n, "prepend", front=True)


def _range(layout: Layout, b, e, op: str) -> tuple[int, int]:
    r = layout.rank()
    b, e = as_int(b, f"{op}: begin"), as_int(e, f"{op}: end")
    if b < 0:
        b += r
    if e < 0:
        e += r + 1
    if not 0 <= b < e <= r:
        raise LayoutError(f"{op}: modes [{b}, {e}) are not a non-empty range of the rank-{r} {layout!r}")
    return b, e


def group(layout: LayoutLike, b: int, e: int) -> Layout:
    """CuTe's ``group<B, E>``: modes ``[b, e)`` become one mode (a tuple, even of one); the function is
    unchanged."""
    layout = _as_layout(layout, "group")
    b, e = _range(layout, b, e, "group")
    shape, stride = _modes(layout)
    return _mk(shape[:b] + (shape[b:e],) + shape[e:], stride[:b] + (stride[b:e],) + stride[e:])


def select(layout: LayoutLike, *modes: int) -> Layout:
    """CuTe's ``select<I...>``: the layout of modes ``modes`` in that order."""
    layout = _as_layout(layout, "select")
    if not modes:
        raise LayoutError("select: name at least one mode")
    return make_layout(*(layout[as_int(i, "select: a mode")] for i in modes))   # a tuple of modes, even of one


def take(layout: LayoutLike, b: int, e: int) -> Layout:
    """CuTe's ``take<B, E>``: modes ``[b, e)`` as a layout of rank ``e - b``."""
    layout = _as_layout(layout, "take")
    b, e = _range(layout, b, e, "take")
    return select(layout, *range(b, e))


def get(layout: LayoutLike, *path: int) -> Layout:
    """CuTe's ``get<I, J, ...>``: the mode at ``path`` (``get(L, 1, 0)`` is mode 0 of mode 1)."""
    out = _as_layout(layout, "get")
    for i in path:
        out = out[as_int(i, "get: a mode")]
    return out


def make_identity_layout(shape: IntTuple) -> Layout:
    """CuTe's ``make_identity_layout``: ``L(c) == c``, mode ``i`` on axis ``E(i)`` (column-major inside a mode), so
    ``L(i)`` is the coordinate tuple of index ``i`` (``(1, 1)`` for ``i = 5`` over ``(4, 8)``), usable as a
    coordinate. Nested modes would need CuTe's multi-index bases (``E<1,0>``): refused."""
    shape = Layout(shape).shape
    modes = shape if isinstance(shape, tuple) else (shape,)
    if any(isinstance(m, tuple) for m in modes):
        raise LayoutError(f"make_identity_layout({shape!r}): nested modes need multi-index bases (E<1,0>), which "
                          f"pycute's ScaledBasis does not represent")
    strides = tuple(E(i) for i in range(len(modes)))       # a size-1 mode keeps its basis, as CuTe's does
    return _mk(modes, strides) if isinstance(shape, tuple) else _mk(shape, strides[0])


def latex(layout: LayoutLike) -> str:
    """The layout as a LaTeX ``tabular`` (CuTe's ``print_latex``: rows and columns labelled by their coordinate,
    each cell its value, coloured by value modulo 8)."""
    layout = _as_layout(layout, "print_latex")
    if layout.rank() > 2:
        raise LayoutError(f"print_latex draws rank-1 and rank-2 layouts; {layout!r} has rank {layout.rank()}")
    rows = layout[0].size() if layout.rank() == 2 else 1
    cols = layout[1].size() if layout.rank() == 2 else layout.size()
    colours = ["red!20", "blue!20", "green!20", "yellow!20", "orange!20", "cyan!20", "magenta!20", "gray!20"]
    lines = [r"\documentclass[convert]{standalone}", r"\usepackage[table]{xcolor}", r"\begin{document}",
             "% " + repr(layout), r"\begin{tabular}{c|" + "c" * cols + "|}", " & " + " & ".join(map(str, range(cols)))
             + r" \\ \hline"]
    for m in range(rows):
        cells = []
        for n in range(cols):
            v = layout(m, n) if layout.rank() == 2 else layout(n)
            cells.append(rf"\cellcolor{{{colours[v % 8] if is_int(v) else 'white'}}}{v}")
        lines.append(f"{m} & " + " & ".join(cells) + r" \\")
    lines += [r"\hline", r"\end{tabular}", r"\end{document}"]
    return "\n".join(lines) + "\n"
