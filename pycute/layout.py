"""cuTe layouts: a shape and a congruent stride; their construction, queries, slicing, coalesce and filter.

Semantics follow ``cute/layout.hpp`` and return what the CuTe DSL returns (``tests/parity``). The rest of the
algebra lives beside this module: ``composition`` (composition, complement, inverses, common layouts), ``tiling``
(divides and products) and ``recast``. Each operation is a free function whose docstring states its
post-condition first. Operands are immutable and hashable, so results are memoised: a repeated call on equal
operands is a dictionary lookup. Inputs outside an operation's domain raise ``LayoutError`` naming the operation
and operands; nothing is silently truncated.
"""
from __future__ import annotations

import abc
import functools
from typing import Any, Callable, Sequence, Union, cast
import numbers

import attrs

from .basis import ScaledBasis, as_coordinate
from .errors import LayoutError
from .memo import clear_caches, last_call, memo
from .typing import IntTuple
from .views import svg_of
from .normalize import _canonical, _canonical_shape, _canonicalize, fmt
from .int_tuple import as_int, check_profile, compact_col_major, crd2idx, flatten, has_none, product, tuplify, unflatten

__all__ = ["Layout", "ComposedBase", "make_layout", "size", "cosize", "rank", "depth", "coalesce", "filter",
           "slice_and_offset", "is_layout", "LayoutLike", "LayoutLeft", "LayoutRight", "clear_caches", "lifted",
           "by_mode"]

_memo = memo


@attrs.frozen(init=False, repr=False, eq=False, getstate_setstate=False)
class Layout:
    """A map from coordinates to offsets: ``L(c) = sum(c_i * stride_i)``; prints as cuTe does, ``(4,8):(8,1)``."""

    shape: Any    # IntTuples (pycute.typing.IntTuple) the algebra narrows by rank; stride leaves may be ScaledBasis
    stride: Any
    # The hash, set on first use: operands are hashed on every memoised call, results mostly never.
    _hash: int = attrs.field(init=False, repr=False)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = hash((self.shape, self.stride))
            _set_hash(self, h)
        return h

    def __eq__(self, other) -> bool:
        if type(other) is not Layout:
            return NotImplemented
        return self is other or (self.shape == other.shape and self.stride == other.stride)

    def __reduce__(self):
        return _mk, (self.shape, self.stride)

    def __init__(self, shape: IntTuple | list, stride: IntTuple | list | ScaledBasis | None = None):
        if stride is None:
            if not _canonical(shape, shape):             # (a valid shape is also a valid stride)
                shape = _canonical_shape(shape, "Layout")
            stride = compact_col_major(cast(IntTuple, shape))
        elif not _canonical(shape, stride):
            shape, stride = _canonicalize(shape, stride, "Layout")
        _set_shape(self, shape)
        _set_stride(self, stride)
        _set_hash(self, None)

    # -- queries --------------------------------------------------------------------------------------------
    def size(self) -> int:
        """Number of coordinates in the domain."""
        return product(self.shape)

    def cosize(self) -> int:
        """Extent of the codomain: one past the largest offset (integer strides)."""
        return cosize(self)

    def rank(self) -> int:
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    def depth(self) -> int:
        return depth(self)

    def __len__(self) -> int:
        return self.rank()

    def __getitem__(self, i) -> "Layout":
        """Mode ``i`` as a layout (a rank-1 layout is its own mode 0)."""
        if type(i) is not int:
            i = as_int(i, f"{self!r}: a mode index")
        if isinstance(self.shape, tuple):
            if not -len(self.shape) <= i < len(self.shape):
                raise LayoutError(f"{self!r} has no mode {i!r} (rank {len(self.shape)})")
            return _mk(self.shape[i], self.stride[i])
        if i not in (0, -1):
            raise LayoutError(f"{self!r} has no mode {i!r} (rank 1)")
        return self

    def __iter__(self):
        return (self[i] for i in range(self.rank()))

    def __call__(self, *args: IntTuple | None) -> Any:
        """The offset of a coordinate (int or hierarchical), or, with ``None`` entries, the sliced sub-layout."""
        crd = args[0] if len(args) == 1 else args
        if has_none(crd):
            return slice_and_offset(crd, self)[0]
        return as_coordinate(crd2idx(crd, self.shape, self.stride), self.stride)

    def __repr__(self) -> str:
        return f"{fmt(self.shape)}:{fmt(self.stride)}"

    def _repr_svg_(self) -> str | None:
        """The layout's grid as a picture, in Jupyter (``pycute.draw_layout``)."""
        return svg_of(self)

    __str__ = __repr__


# The slots' own setters: a frozen class refuses setattr, and these are what its __init__ may use.
_set_shape, _set_stride = Layout.shape.__set__, Layout.stride.__set__
_set_hash = Layout._hash.__set__  # type: ignore[attr-defined]  # (an attrs slot, which mypy sees as an int)
_new = object.__new__


def _mk(shape, stride) -> Layout:
    """Construct without validation: for results the algebra has already checked."""
    obj = _new(Layout)
    _set_shape(obj, shape)
    _set_stride(obj, stride)
    _set_hash(obj, None)
    return obj


class ComposedBase(abc.ABC):
    """The base of ``ComposedLayout`` (defined in ``swizzle``): most algebra lifts through it to the inner layout,
    as in cuTe; this module needs only ``inner`` and ``with_inner``."""

    inner: Layout

    @abc.abstractmethod
    def with_inner(self, inner: Layout, extra_offset: Any = 0) -> "ComposedBase":
        """The same composition around another inner layout (and an added offset)."""

    # What size(), rank() and depth() ask of any layout; a composition is shaped like its inner layout.
    @property
    def shape(self) -> Any:
        return self.inner.shape

    def size(self) -> int:
        return self.inner.size()

    def rank(self) -> int:
        return self.inner.rank()

    def _repr_svg_(self) -> str | None:
        """The composed layout's grid as a picture, in Jupyter (``pycute.draw_layout``)."""
        return svg_of(self)


#: What the algebra's layout parameters take: a Layout, a composition (ComposedLayout), or a positive int or shape,
#: read as the compact column-major layout of that shape (CuTe's tilers are such shapes and tuples of layouts).
LayoutLike = Union[Layout, ComposedBase, int, tuple]
#: What the algebra returns: a layout, or a composed one where an operand was.
AnyLayout = Union[Layout, ComposedBase]


def is_layout(x: object) -> bool:
    return isinstance(x, (Layout, ComposedBase))


def _as_layout(x, op) -> Layout:
    """``x`` as a Layout: a Layout, a positive integer ``n`` (``n:1``) or a shape (compact column-major)."""
    if type(x) is Layout:
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        if x < 1:
            raise LayoutError(f"{op}: a size must be positive, got {x}")
        return _mk(int(x), 1)
    if isinstance(x, (tuple, list)):
        return Layout(x)
    raise TypeError(f"{op}: expected a Layout, a positive int or a shape, got {x!r} ({type(x).__name__})")


def _compact_row_major(shape, current=1):
    """Row-major strides of ``shape`` (its last leaf fastest) starting at ``current``; a size-1 mode gets stride 0,
    as CuTe's compact strides do."""
    leaves = flatten(shape)
    strides, acc = [0] * len(leaves), current
    for k in range(len(leaves) - 1, -1, -1):
        strides[k] = 0 if leaves[k] == 1 else acc
        acc *= leaves[k]
    return unflatten(tuple(strides), shape)


class _Major:
    """``make_layout(shape, LayoutLeft)`` (compact column-major) or ``(shape, LayoutRight)`` (row-major)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


LayoutLeft, LayoutRight = _Major("LayoutLeft"), _Major("LayoutRight")


def make_layout(*args: Any) -> Layout:
    """Either concatenate layouts (each becomes one mode) or build one from ``(shape[, stride])``.

    ``make_layout(A, B)`` has modes A and B (one layout gives a rank-1 layout of one mode);
    ``make_layout((4,8))`` is ``(4,8):(1,4)`` (column-major, a size-1 mode gets stride 0);
    ``make_layout((4,8), LayoutRight)`` is ``(4,8):(8,1)``.
    """
    if len(args) == 2 and isinstance(args[1], _Major):
        shape = Layout(args[0]).shape
        return Layout(shape) if args[1] is LayoutLeft else Layout(shape, _compact_row_major(shape))
    for a in args:
        if type(a) is not Layout:
            break
    else:
        if args:
            return _mk(tuple([a.shape for a in args]), tuple([a.stride for a in args]))
    if len(args) == 1 and hasattr(args[0], "__iter__") and not isinstance(args[0], (Layout, str)):
        items = tuple(args[0])           # a list or generator of layouts (CUTLASS pycute's form)
        if items and all(isinstance(a, Layout) for a in items):
            return make_layout(*items)
    if any(isinstance(a, Layout) for a in args):
        raise LayoutError(f"make_layout: mix of layouts and shapes {args!r}")
    if len(args) == 1:
        return Layout(args[0])
    if len(args) == 2:
        return Layout(args[0], args[1])
    raise LayoutError(f"make_layout: expected layouts or (shape[, stride]), got {args!r}")


def size(x: LayoutLike) -> int:
    """Size of a layout's domain, or the product of a shape."""
    if isinstance(x, (Layout, ComposedBase)):
        return x.size()
    return product(_canonical_shape(x, "size"))


def cosize(layout: LayoutLike) -> int:
    """One past the largest offset: ``cosize(L) == L(size(L)-1) + 1`` for non-negative integer strides."""
    layout = _as_layout(layout, "cosize")
    hi = 0
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if isinstance(d, ScaledBasis):
            raise LayoutError(f"cosize: {layout!r} has scaled-basis strides; its codomain is not an interval")
        hi += (s - 1) * abs(d)
    return hi + 1


def rank(x: LayoutLike) -> int:
    """Number of top-level modes."""
    if isinstance(x, (Layout, ComposedBase)):
        return x.rank()
    return len(x) if isinstance(x, tuple) else 1


def depth(x: LayoutLike) -> int:
    """Nesting depth of the shape: 0 for an int, 1 for a flat tuple."""
    shape = x.shape if isinstance(x, (Layout, ComposedBase)) else x
    if isinstance(shape, tuple):
        return 1 + max((depth(e) for e in shape), default=0)
    return 0


@last_call
def slice_and_offset(crd: IntTuple | None, layout: Layout | ComposedBase) -> tuple[Any, Any]:
    """``(sub, off)`` with ``layout(c) == sub(c') + off`` where ``c`` fills ``crd``'s ``None`` entries with ``c'``.

    As in CuTe, ``sub`` keeps the kept modes as a tuple (one kept mode is a one-mode tuple, none is ``():()``), and
    slicing with ``None`` alone keeps the whole layout.
    """
    if isinstance(layout, ComposedBase):
        sub, off = slice_and_offset(crd, layout.inner)
        return layout.with_inner(sub, extra_offset=off), 0
    if type(crd) is not tuple:
        crd = tuplify(crd)
    if crd is None:
        return layout, 0
    shapes: list = []
    strides: list = []
    offset = _slice(crd, layout.shape, layout.stride, shapes, strides)
    return _mk(tuple(shapes), tuple(strides)), offset


def _slice(crd, shape, stride, shapes, strides):
    """Append the modes ``crd`` keeps (its ``None`` entries) to ``shapes``/``strides``; return the offset of the
    coordinates it fixes."""
    if crd is None:
        shapes.append(shape)
        strides.append(stride)
        return 0
    if type(crd) is not tuple:
        return crd2idx.raw(crd, shape, stride)
    if type(shape) is not tuple or len(crd) != len(shape):
        raise LayoutError(f"slice: coordinate {crd} does not match shape {fmt(shape)}")
    offset = 0
    for c, s, d in zip(crd, shape, stride):
        if c is None:
            shapes.append(s)
            strides.append(d)
        elif type(c) is int and type(s) is int:
            offset += c * d
        else:
            offset += _slice(c, s, d, shapes, strides)
    return offset


# ---------------------------------------------------------------------------------------------------------
# mode-wise application and ComposedLayout lifting
# ---------------------------------------------------------------------------------------------------------
def by_mode(op: Any, layout: Layout, profile: tuple, keep_rest: bool = True) -> Layout:
    """``op(mode_i, profile_i)`` for each entry of ``profile`` as the modes of the result (CuTe's
    ``transform_layout``); later modes of ``layout`` are appended as they are, or dropped."""
    shape, stride = layout.shape, layout.stride
    if type(shape) is not tuple:
        shape, stride = (shape,), (stride,)
    n = len(profile)
    if n > len(shape):
        raise LayoutError(f"{getattr(op, '__name__', 'op')}: {profile!r} has more modes than {layout!r}")
    raw = getattr(op, "raw", op)       # the per-mode results are not worth memoising on their own
    rs, rd = [], []
    for i in range(n):
        m = raw(_mk(shape[i], stride[i]), profile[i])
        rs.append(m.shape)
        rd.append(m.stride)
    if keep_rest:
        rs.extend(shape[n:])
        rd.extend(stride[n:])
    return _mk(tuple(rs), tuple(rd))


def lifted(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an operation so that a ComposedLayout first operand applies it to its inner layout (cuTe semantics:
    ``op(outer o off o inner, ...) == outer o off o op(inner, ...)``)."""
    @functools.wraps(fn)
    def op(A: Any, *rest: Any, **kwargs: Any) -> Any:
        if isinstance(A, ComposedBase):
            return A.with_inner(op(A.inner, *rest, **kwargs))
        return fn(A, *rest, **kwargs)
    return op


# ---------------------------------------------------------------------------------------------------------
# coalesce / filter
# ---------------------------------------------------------------------------------------------------------
def merge_modes(shapes: Sequence[int], strides: Sequence) -> tuple:
    """CuTe's coalesce of the flat modes ``(shapes, strides)``: size-1 modes vanish and a mode that continues the
    one before it (``shape * stride`` of that one equals its stride) merges into it. Returns ``(shape, stride)``,
    ``(1, 0)`` when nothing of size > 1 remains."""
    rs: list = []
    rd: list = []
    for s, d in zip(shapes, strides):
        if s == 1:
            continue
        if rs and rs[-1] * rd[-1] == d:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    if len(rs) > 1:
        return tuple(rs), tuple(rd)
    return (rs[0], rd[0]) if rs else (1, 0)


@last_call
def coalesce(layout: LayoutLike, profile: IntTuple | None = None) -> AnyLayout:
    """The flattest layout with the same index map: ``coalesce(L)(i) == L(i)`` for all ``i < size(L)``.

    With a tuple ``profile``, coalesces each mode separately (by its sub-profile) and keeps the top-level rank.
    """
    if type(layout) is not Layout:
        if isinstance(layout, ComposedBase):
            return layout.with_inner(coalesce(layout.inner, profile))
        layout = _as_layout(layout, "coalesce")
    if type(profile) is tuple:
        return by_mode(coalesce, layout, profile)
    check_profile(profile, "coalesce")
    shape = layout.shape
    if type(shape) is not tuple:
        return layout if shape != 1 else _mk(1, 0)
    return _mk(*merge_modes(flatten(shape), flatten(layout.stride)))


@last_call
def filter(layout: LayoutLike, profile: IntTuple | None = None) -> AnyLayout:
    """``coalesce(L)`` with stride-0 (broadcast) modes removed: the distinct offsets of ``L``, each once."""
    layout = _as_layout(layout, "filter")
    if type(profile) is tuple:
        return by_mode(filter, layout, profile)
    check_profile(profile, "filter")
    strides = flatten(layout.stride)
    shapes = [1 if d == 0 else s for s, d in zip(flatten(layout.shape), strides)]
    return _mk(*merge_modes(shapes, strides))
