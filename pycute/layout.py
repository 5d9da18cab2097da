"""cuTe layouts: a shape and a congruent stride, and the layout algebra over them.

Semantics follow ``cute/layout.hpp``. Each operation is a free function whose docstring states its
post-condition first. Operands are immutable and hashable, so results are memoised: a repeated call on equal
operands is a dictionary lookup. Inputs outside an operation's domain raise ``LayoutError`` naming the operation
and operands; nothing is silently truncated.
"""
from __future__ import annotations

import abc
import functools

import attrs

from .basis import ScaledBasis
from .errors import LayoutError
from .int_tuple import (ceil_div, crd2idx, flatten, has_none, is_int, prefix_product, product, slice_,
                        tuplify, zero_nones)

__all__ = [
    "Layout", "ComposedBase", "make_layout", "size", "cosize", "rank", "depth", "coalesce", "filter",
    "composition", "complement", "right_inverse", "left_inverse", "logical_divide", "zipped_divide",
    "tiled_divide", "flat_divide", "logical_product", "zipped_product", "tiled_product", "flat_product",
    "blocked_product", "raked_product", "max_common_vector", "max_common_layout", "upcast", "downcast",
    "recast", "make_ordered_layout", "tile_to_shape", "slice_and_offset", "append", "is_layout", "clear_caches",
    "hier_unzip",
]

_CACHE_SIZE = 8192


def _memo(fn):
    """Memoise an algebra operation on its (hashable) operands; lists fall back to an uncached call."""
    cached = functools.lru_cache(maxsize=_CACHE_SIZE)(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return cached(*args, **kwargs)
        except TypeError as e:
            if "unhashable" not in str(e):
                raise
        return fn(*(tuplify(a) for a in args), **{k: tuplify(v) for k, v in kwargs.items()})

    wrapper.cache_clear = cached.cache_clear
    wrapper.cache_info = cached.cache_info
    _MEMOISED.append(wrapper)
    return wrapper


_MEMOISED = []


def clear_caches() -> None:
    """Forget every memoised algebra result (for cold-path benchmarks)."""
    for fn in _MEMOISED:
        fn.cache_clear()


def _fmt(t) -> str:
    if isinstance(t, tuple):
        return "(" + ",".join(_fmt(e) for e in t) + ")"
    return repr(t) if isinstance(t, ScaledBasis) else str(t)


def _check_profile(shape, stride, where):
    if isinstance(shape, tuple):
        if not isinstance(stride, tuple) or len(shape) != len(stride):
            raise LayoutError(f"{where}: shape {_fmt(shape)} and stride {_fmt(stride)} are not congruent")
        for s, d in zip(shape, stride):
            _check_profile(s, d, where)
        return
    if isinstance(stride, tuple):
        raise LayoutError(f"{where}: shape {_fmt(shape)} and stride {_fmt(stride)} are not congruent")
    if not is_int(shape) or shape < 1:
        raise LayoutError(f"{where}: shape entries must be positive integers, got {shape!r}")
    if not (is_int(stride) or isinstance(stride, ScaledBasis)):
        raise LayoutError(f"{where}: stride entries must be integers or scaled bases, got {stride!r}")


@attrs.frozen(init=False, repr=False)
class Layout:
    """A map from coordinates to offsets: ``L(c) = sum(c_i * stride_i)``; prints as cuTe does, ``(4,8):(8,1)``."""

    shape: object
    stride: object

    def __init__(self, shape, stride=None):
        shape = tuplify(shape)
        stride = prefix_product(shape) if stride is None else tuplify(stride)
        _check_profile(shape, stride, "Layout")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    # -- queries --------------------------------------------------------------------------------------------
    def size(self) -> int:
        """Number of coordinates in the domain."""
        return product(self.shape)

    def cosize(self):
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
        if isinstance(self.shape, tuple):
            return _mk(self.shape[i], self.stride[i])
        if i not in (0, -1):
            raise LayoutError(f"mode {i} of rank-1 layout {self!r}")
        return self

    def __iter__(self):
        return (self[i] for i in range(self.rank()))

    def __call__(self, *args):
        """The offset of a coordinate (int or hierarchical), or, with ``None`` entries, the sliced sub-layout."""
        crd = args[0] if len(args) == 1 else args
        if has_none(crd):
            return slice_and_offset(crd, self)[0]
        return crd2idx(crd, self.shape, self.stride)

    def __repr__(self) -> str:
        return f"{_fmt(self.shape)}:{_fmt(self.stride)}"

    __str__ = __repr__


def _mk(shape, stride) -> Layout:
    """Construct without validation: for results the algebra has already checked."""
    obj = object.__new__(Layout)
    object.__setattr__(obj, "shape", shape)
    object.__setattr__(obj, "stride", stride)
    return obj


class ComposedBase(abc.ABC):
    """The base of ``ComposedLayout`` (defined in ``swizzle``): most algebra lifts through it to the inner layout,
    as in cuTe; this module needs only ``inner`` and ``with_inner``."""

    inner: Layout

    @abc.abstractmethod
    def with_inner(self, inner, extra_offset=0):
        """The same composition around another inner layout (and an added offset)."""


def is_layout(x) -> bool:
    return isinstance(x, (Layout, ComposedBase))


def _as_layout(x, op) -> Layout:
    if isinstance(x, Layout):
        return x
    if is_int(x):
        return _mk(x, 1)
    if isinstance(x, (tuple, list)) and all(is_int(e) for e in flatten(tuplify(x))):
        return Layout(x)
    raise LayoutError(f"{op}: expected a Layout, an int or a shape, got {x!r}")


def make_layout(*args) -> Layout:
    """Either concatenate layouts (each becomes one mode) or build one from ``(shape[, stride])``.

    ``make_layout(A, B)`` has modes A and B; ``make_layout((4,8))`` is ``(4,8):(1,4)`` (column-major).
    """
    if len(args) == 1 and not isinstance(args[0], Layout) and not is_int(args[0]) \
            and not isinstance(args[0], tuple) and hasattr(args[0], "__iter__"):
        args = tuple(args[0])  # a generator or list of layouts
    if args and all(isinstance(a, Layout) for a in args):
        return _mk(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if any(isinstance(a, Layout) for a in args):
        raise LayoutError(f"make_layout: mix of layouts and shapes {args!r}")
    if len(args) == 1:
        return Layout(args[0])
    if len(args) == 2:
        return Layout(args[0], args[1])
    raise LayoutError(f"make_layout: expected layouts or (shape[, stride]), got {args!r}")


def size(x) -> int:
    """Size of a layout's domain, or the product of a shape."""
    if isinstance(x, (Layout, ComposedBase)):
        return x.size()
    return product(tuplify(x))


def cosize(layout):
    """One past the largest offset: ``cosize(L) == L(size(L)-1) + 1`` for non-negative integer strides."""
    layout = _as_layout(layout, "cosize")
    hi = 0
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if isinstance(d, ScaledBasis):
            raise LayoutError(f"cosize: {layout!r} has scaled-basis strides; its codomain is not an interval")
        hi += (s - 1) * abs(d)
    return hi + 1


def rank(x) -> int:
    """Number of top-level modes."""
    if isinstance(x, (Layout, ComposedBase)):
        return x.rank()
    return len(x) if isinstance(x, tuple) else 1


def depth(x) -> int:
    """Nesting depth of the shape: 0 for an int, 1 for a flat tuple."""
    shape = x.shape if isinstance(x, (Layout, ComposedBase)) else x
    if isinstance(shape, tuple):
        return 1 + max((depth(e) for e in shape), default=0)
    return 0


def append(layout: Layout, r: int) -> Layout:
    """``layout`` padded with ``1:0`` modes to rank ``r``."""
    n = layout.rank()
    if n >= r:
        return layout
    shape = layout.shape if isinstance(layout.shape, tuple) else (layout.shape,)
    stride = layout.stride if isinstance(layout.stride, tuple) else (layout.stride,)
    return _mk(shape + (1,) * (r - n), stride + (0,) * (r - n))


def slice_and_offset(crd, layout):
    """``(sub, off)`` with ``layout(c) == sub(c') + off`` where ``c`` fills ``crd``'s ``None`` entries with ``c'``."""
    if isinstance(layout, ComposedBase):
        sub, off = slice_and_offset(crd, layout.inner)
        return layout.with_inner(sub, extra_offset=off), 0
    crd = tuplify(crd)
    shape, stride = slice_(crd, layout.shape), slice_(crd, layout.stride)
    if isinstance(shape, tuple) and len(shape) == 1:
        shape, stride = shape[0], stride[0]
    elif shape == ():
        shape, stride = 1, 0
    return _mk(shape, stride), crd2idx(zero_nones(crd), layout.shape, layout.stride)


# ---------------------------------------------------------------------------------------------------------
# coalesce / filter
# ---------------------------------------------------------------------------------------------------------
def _coalesce_flat(shapes, strides):
    rs, rd = [], []
    for s, d in zip(shapes, strides):
        if s == 1:
            continue
        if rs and rs[-1] * rd[-1] == d:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    return rs, rd


def _from_flat(rs, rd) -> Layout:
    if not rs:
        return _mk(1, 0)
    if len(rs) == 1:
        return _mk(rs[0], rd[0])
    return _mk(tuple(rs), tuple(rd))


def _by_mode(op, layout, profile):
    """Apply ``op(mode_i, profile_i)`` for each entry of ``profile``; later modes are kept as they are."""
    if len(profile) > layout.rank():
        raise LayoutError(f"{op.__name__}: profile {profile!r} has more modes than {layout!r}")
    raw = getattr(op, "__wrapped__", op)   # the per-mode results are not worth memoising on their own
    modes = [raw(layout[i], p) for i, p in enumerate(profile)] + [layout[i] for i in range(len(profile),
                                                                                          layout.rank())]
    return _mk(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


@_memo
def coalesce(layout, profile=None):
    """The flattest layout with the same index map: ``coalesce(L)(i) == L(i)`` for all ``i < size(L)``.

    With a tuple ``profile``, coalesces each mode separately and keeps the top-level rank.
    """
    if type(layout) is not Layout:
        if isinstance(layout, ComposedBase):
            return layout.with_inner(coalesce(layout.inner, profile))
        layout = _as_layout(layout, "coalesce")
    if profile is not None and isinstance(profile, tuple):
        return _by_mode(coalesce, layout, profile)
    shape = layout.shape
    if type(shape) is int:
        return layout if shape != 1 or layout.stride == 0 else _mk(1, 0)
    return _from_flat(*_coalesce_flat(flatten(shape), flatten(layout.stride)))


@_memo
def filter(layout, profile=None):
    """``coalesce(L)`` with stride-0 (broadcast) modes removed: the distinct offsets of ``L``, each once."""
    layout = _as_layout(layout, "filter")
    if isinstance(profile, tuple):
        return _by_mode(filter, layout, profile)
    pairs = [(s, d) for s, d in zip(flatten(layout.shape), flatten(layout.stride)) if s != 1 and d != 0]
    return _from_flat(*_coalesce_flat([s for s, _ in pairs], [d for _, d in pairs]))


# ---------------------------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------------------------
def _compose_leaf(a_shapes, a_strides, s, d, A, B, load):
    """``A o (s:d)`` for a coalesced, flat ``A``: (shape, stride) of the result, coalesced.

    ``load[j]`` accumulates the largest digit this mode adds to A's mode ``j`` (A's mixed-radix coordinate), so
    the caller can prove that B's modes never carry into one another.
    """
    if d == 0:
        return s, 0
    if not is_int(d) or d < 0:
        raise LayoutError(f"composition: right operand {B!r} has stride {d!r}; only non-negative integer "
                          f"strides are supported")
    last = len(a_shapes) - 1
    # Stride division: skip the first d elements' worth of A's modes.
    avail = []                                   # (mode j, extent left or None if unbounded, step, stride)
    rest = d
    for j, (aj, dj) in enumerate(zip(a_shapes, a_strides)):
        if j == last:
            avail.append((j, None, rest, dj * rest))
        elif rest == 1:
            avail.append((j, aj, 1, dj))
        elif aj % rest == 0:
            avail.append((j, aj // rest, rest, dj * rest))
            rest = 1
        elif rest % aj == 0:
            rest //= aj
        else:
            raise LayoutError(f"composition({A!r}, {B!r}): stride divisibility fails: mode of extent {aj} and "
                              f"remaining stride {rest} do not divide one another")
    # Shape selection: take s elements from what remains, mode by mode.
    rs, rd = [], []
    need = s
    for j, ext, step, st in avail:
        if need == 1:
            break
        take = need if ext is None or need <= ext else ext
        if take < need and need % take:
            raise LayoutError(f"composition({A!r}, {B!r}): shape divisibility fails: {need} elements remain "
                              f"but the next mode has extent {ext}, which does not divide {need}")
        if take > 1:
            rs.append(take)
            rd.append(st)
            load[j] = load.get(j, 0) + (take - 1) * step
        need //= take
    rs, rd = _coalesce_flat(rs, rd)
    if not rs:
        return 1, 0
    if len(rs) == 1:
        return rs[0], rd[0]
    return tuple(rs), tuple(rd)


def _compose_tree(a_shapes, a_strides, shape, stride, A, B, load):
    if isinstance(shape, tuple):
        parts = [_compose_tree(a_shapes, a_strides, s, d, A, B, load) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return _compose_leaf(a_shapes, a_strides, shape, stride, A, B, load)


@_memo
def composition(A, B):
    """``R = A o B`` with ``R(i) == A(B(i))`` for every ``i < size(B)``; ``R`` is shaped like ``B``.

    ``B`` may be a Layout, an int ``n`` (meaning ``n:1``), ``None`` (identity), or a tuple tiler applied mode by
    mode. ``A`` may be a Layout, a Swizzle or a ComposedLayout.
    """
    if B is None:
        return A
    if isinstance(A, ComposedBase):
        return A.with_inner(composition(A.inner, B))
    if not isinstance(A, Layout):
        compose = getattr(A, "compose", None)
        if compose is None:
            raise LayoutError(f"composition: left operand {A!r} is not a layout")
        return compose(B)
    if isinstance(B, tuple):
        return _by_mode(composition, A, B)
    if is_int(B):
        B = _mk(B, 1)
    if not isinstance(B, Layout):
        raise LayoutError(f"composition({A!r}, {B!r}): right operand must be a Layout, int, None or tuple")
    a_shapes, a_strides = _coalesce_flat(flatten(A.shape), flatten(A.stride))
    if not a_shapes:
        a_shapes, a_strides = [1], [0]
    load = {}
    shape, stride = _compose_tree(a_shapes, a_strides, B.shape, B.stride, A, B, load)
    # Distributing A over B's modes is exact only if their digits in A's coordinate never carry: a carry out of
    # a bounded mode of a coalesced A always changes the offset (cuTe would return a silently wrong layout).
    for j, digits in load.items():
        if j < len(a_shapes) - 1 and digits >= a_shapes[j]:
            raise LayoutError(f"composition({A!r}, {B!r}): the modes of the right operand overlap in mode {j} "
                              f"(extent {a_shapes[j]}) of the coalesced left operand; their digits would carry "
                              f"and the result would not equal A(B(i))")
    return _mk(shape, stride)


# ---------------------------------------------------------------------------------------------------------
# complement and inverses
# ---------------------------------------------------------------------------------------------------------
def _int_strides(layout, op):
    strides = flatten(layout.stride)
    for d in strides:
        if not is_int(d):
            raise LayoutError(f"{op}: {layout!r} has scaled-basis stride {d!r}; {op} needs integer strides")
    return flatten(layout.shape), strides


def complement(layout, cotarget=None, *, max_idx=None):
    """``C`` with ``make_layout(L, C)`` injective, ``C`` ordered, and covering ``[0, cotarget)``.

    ``cotarget`` (CUTLASS pycute calls it ``max_idx``) defaults to ``cosize(L)``. Raises ``LayoutError`` when
    ``L`` overlaps itself or its strides do not nest: then no layout complement exists, and cuTe's partial
    answer would make divides built on it silently drop elements.
    """
    return _complement(layout, cotarget if max_idx is None else max_idx)


@_memo
def _complement(layout, cotarget):
    layout = _as_layout(layout, "complement")
    shapes, strides = _int_strides(layout, "complement")
    if cotarget is None:
        cotarget = cosize(layout)
    elif not is_int(cotarget):
        cotarget = product(tuplify(cotarget))
    modes = sorted((d, s) for s, d in zip(shapes, strides) if s != 1 and d != 0)
    rs, rd = [], []
    current = 1
    for d, s in modes:
        if d < 0:
            raise LayoutError(f"complement: {layout!r} has negative stride {d}")
        if d % current:
            kind = "is not injective" if d < current else "has strides that do not nest"
            raise LayoutError(f"complement: {layout!r} {kind} (stride {d} against covered extent {current})")
        rs.append(d // current)
        rd.append(current)
        current = s * d
    rs.append(ceil_div(cotarget, current))
    rd.append(current)
    return _from_flat(*_coalesce_flat(rs, rd))


@_memo
def right_inverse(layout):
    """``R`` with ``L(R(i)) == i`` for every ``i < size(R)``, as large as possible."""
    if layout is None:
        return None
    layout = _as_layout(layout, "right_inverse")
    shapes, strides = _coalesce_flat(*_int_strides(layout, "right_inverse"))
    domain_strides = prefix_product(tuple(shapes))
    rs, rd = [], []
    current = 1
    while True:
        for s, d, r in zip(shapes, strides, domain_strides):
            if d == current and s != 1:
                rs.append(s)
                rd.append(r)
                current = s * d
                break
        else:
            break
    return _from_flat(*_coalesce_flat(rs, rd))


@_memo
def left_inverse(layout):
    """``R`` with ``R(L(i)) == i`` for every ``i < size(L)``; ``L`` must be injective."""
    if layout is None:
        return None
    layout = _as_layout(layout, "left_inverse")
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if s > 1 and d == 0:
            raise LayoutError(f"left_inverse: {layout!r} is not injective (a mode of extent {s} has stride 0)")
    return right_inverse(make_layout(layout, complement(layout)))


# ---------------------------------------------------------------------------------------------------------
# divides and products
# ---------------------------------------------------------------------------------------------------------
def _tiler(B, op):
    if is_int(B):
        return _mk(B, 1)
    if isinstance(B, (Layout, tuple)) or B is None:
        return B
    raise LayoutError(f"{op}: tiler must be a Layout, an int, None or a tuple of those, got {B!r}")


def _lifted(fn):
    """Wrap an operation so that a ComposedLayout first operand applies it to its inner layout (cuTe semantics:
    ``op(outer o off o inner, ...) == outer o off o op(inner, ...)``)."""
    @functools.wraps(fn)
    def op(A, *rest):
        if isinstance(A, ComposedBase):
            return A.with_inner(op(A.inner, *rest))
        return fn(A, *rest)
    return op


@_memo
@_lifted
def logical_divide(A, B):
    """``A o (B, complement(B, size(A)))``: mode 0 is the tile ``B`` selects, mode 1 iterates over tiles.

    A tuple tiler divides mode by mode; ``None`` leaves a mode whole.
    """
    B = _tiler(B, "logical_divide")
    if B is None:
        return A
    A = _as_layout(A, "logical_divide")
    if isinstance(B, tuple):
        return _by_mode(logical_divide, A, B)
    return composition(A, make_layout(B, complement(B, size(A))))


@_memo
@_lifted
def logical_product(A, B):
    """``(A, complement(A, size(A)*cosize(B)) o B)``: mode 0 is ``A``, mode 1 repeats it as ``B`` lays out."""
    B = _tiler(B, "logical_product")
    if B is None:
        return A
    A = _as_layout(A, "logical_product")
    if isinstance(B, tuple):
        return _by_mode(logical_product, A, B)
    return make_layout(A, composition(complement(A, size(A) * cosize(B)), B))


def hier_unzip(splitter, A, B):
    """Apply ``splitter`` (a divide or product) mode by mode and gather ``((tile_0,rest_0),(tile_1,rest_1),...)``
    into ``((tile_0,tile_1,..),(rest_0,rest_1,..,A_k..))``; a Layout ``B`` is split whole."""
    if B is None:
        return make_layout(_mk(1, 0), A)
    if isinstance(B, tuple):
        if len(B) > A.rank():
            raise LayoutError(f"{splitter.__name__}: tiler {B!r} has more modes than {A!r}")
        parts = [hier_unzip(splitter, A[i], _tiler(b, splitter.__name__)) for i, b in enumerate(B)]
        tiles = make_layout(*[p[0] for p in parts])
        rests = make_layout(*([p[1] for p in parts] + [A[i] for i in range(len(B), A.rank())]))
        return make_layout(tiles, rests)
    return splitter(A, B)


def _zipped(split, A, B):
    return hier_unzip(split, _as_layout(A, split.__name__), _tiler(B, split.__name__))


def _tiled(zipped):
    return make_layout(zipped[0], *zipped[1])


def _flat(zipped):
    return make_layout(*zipped[0], *zipped[1])


@_memo
@_lifted
def zipped_divide(A, B):
    """``logical_divide`` with tiles gathered: ``((tile modes...), (rest modes...))``."""
    return _zipped(logical_divide, A, B)


@_memo
@_lifted
def tiled_divide(A, B):
    """``((tile modes...), rest_0, rest_1, ...)``."""
    return _tiled(zipped_divide(A, B))


@_memo
@_lifted
def flat_divide(A, B):
    """``(tile_0, tile_1, ..., rest_0, rest_1, ...)``."""
    return _flat(zipped_divide(A, B))


@_memo
@_lifted
def zipped_product(A, B):
    """``logical_product`` with modes gathered: ``((block modes...), (repeat modes...))``."""
    return _zipped(logical_product, A, B)


@_memo
@_lifted
def tiled_product(A, B):
    """``((block modes...), repeat_0, repeat_1, ...)``."""
    return _tiled(zipped_product(A, B))


@_memo
@_lifted
def flat_product(A, B):
    """``(block_0, block_1, ..., repeat_0, repeat_1, ...)``."""
    return _flat(zipped_product(A, B))


def _zip_product(block, tiler, raked):
    block = _as_layout(block, "blocked_product")
    tiler = _as_layout(tiler, "blocked_product")
    r = max(block.rank(), tiler.rank())
    prod = logical_product(append(block, r), append(tiler, r))
    if r == 1:
        return prod if not raked else make_layout(prod[1], prod[0])
    first, second = (prod[1], prod[0]) if raked else (prod[0], prod[1])
    return make_layout(*[make_layout(first[i], second[i]) for i in range(r)])


@_memo
@_lifted
def blocked_product(block, tiler):
    """Mode ``i`` is ``(block_i, tiler_i)``: the block repeated as whole blocks laid out by ``tiler``."""
    return _zip_product(block, tiler, raked=False)


@_memo
@_lifted
def raked_product(block, tiler):
    """Mode ``i`` is ``(tiler_i, block_i)``: the block's elements interleaved (raked) across the repeats."""
    return _zip_product(block, tiler, raked=True)


# ---------------------------------------------------------------------------------------------------------
# common vectors, width changes, ordered layouts
# ---------------------------------------------------------------------------------------------------------
@_memo
def max_common_layout(A, B):
    """``R`` with ``A(R(i)) == i`` and ``B(R(i)) == i`` for every ``i < size(R)``, as large as possible."""
    inv_b = right_inverse(B)
    common = coalesce(composition(A, inv_b))
    first = common[0] if common.rank() > 1 else common
    if first.stride == 1:
        return composition(inv_b, _mk(first.shape, 1))
    return _mk(1, 0)


@_memo
def max_common_vector(A, B) -> int:
    """The largest ``n`` such that the first ``n`` indices map to ``0..n-1`` under both ``A`` and ``B``."""
    return size(max_common_layout(A, B))


def _upcast_leaf(s, d, n, layout):
    if d == 0:
        return s, 0
    if not is_int(d):
        raise LayoutError(f"upcast: {layout!r} has scaled-basis stride {d!r}")
    ad = abs(d)
    if ad >= n:
        if ad % n:
            raise LayoutError(f"upcast({layout!r}, {n}): stride {d} is not a multiple of {n}")
        return s, d // n
    if n % ad or s % (n // ad):
        raise LayoutError(f"upcast({layout!r}, {n}): mode {s}:{d} does not pack into groups of {n}")
    return s // (n // ad), (1 if d > 0 else -1)


def _map_leaves(shape, stride, fn):
    if isinstance(shape, tuple):
        parts = [_map_leaves(s, d, fn) for s, d in zip(shape, stride)]
        return tuple(p[0] for p in parts), tuple(p[1] for p in parts)
    return fn(shape, stride)


@_memo
def upcast(layout, n: int):
    """The layout in units of ``n`` old elements: ``upcast(L, n)(c) == L(c') // n`` for the packed coordinates."""
    if isinstance(layout, ComposedBase):
        raise LayoutError(f"upcast: {layout!r} is a ComposedLayout; upcast its inner layout and swizzle apart")
    layout = _as_layout(layout, "upcast")
    if n == 1:
        return layout
    return _mk(*_map_leaves(layout.shape, layout.stride, lambda s, d: _upcast_leaf(s, d, n, layout)))


@_memo
def downcast(layout, n: int):
    """The layout in units of ``1/n`` old elements: each unit-stride mode grows ``n``-fold, other strides scale."""
    if isinstance(layout, ComposedBase):
        raise LayoutError(f"downcast: {layout!r} is a ComposedLayout; downcast its inner layout and swizzle apart")
    layout = _as_layout(layout, "downcast")
    if n == 1:
        return layout
    strides = flatten(layout.stride)
    if 1 not in strides and -1 not in strides:
        if layout.size() == 1:
            return _mk(n, 1)
        raise LayoutError(f"downcast({layout!r}, {n}): no unit-stride mode to split elements along; the "
                          f"sub-elements would be dropped")

    def leaf(s, d):
        if isinstance(d, int) and abs(d) == 1:
            return s * n, d
        return s, d * n
    return _mk(*_map_leaves(layout.shape, layout.stride, leaf))


def _bits(x, op) -> int:
    bits = getattr(x, "bits", x)
    if not is_int(bits) or bits < 1:
        raise LayoutError(f"{op}: expected a width in bits or a dtype, got {x!r}")
    return bits


def recast(layout, old, new):
    """The same bytes viewed as elements of width ``new`` instead of ``old`` (dtypes or bit counts)."""
    ob, nb = _bits(old, "recast"), _bits(new, "recast")
    if nb == ob:
        return layout
    if nb > ob:
        if nb % ob:
            raise LayoutError(f"recast: {nb} bits is not a multiple of {ob} bits")
        return upcast(layout, nb // ob)
    if ob % nb:
        raise LayoutError(f"recast: {ob} bits is not a multiple of {nb} bits")
    return downcast(layout, ob // nb)


def _order_keys(shape, order, prefix):
    """One sort key per leaf of ``shape``: a leaf's order, refined by position where ``order`` is coarser."""
    if isinstance(shape, tuple):
        if isinstance(order, tuple):
            if len(order) != len(shape):
                raise LayoutError(f"make_ordered_layout: order {order!r} does not match shape {shape!r}")
            keys = []
            for s, o in zip(shape, order):
                keys.extend(_order_keys(s, o, prefix))
            return keys
        keys = []
        for i, s in enumerate(shape):
            keys.extend(_order_keys(s, order, prefix + (i,)))
        return keys
    if isinstance(order, tuple):
        raise LayoutError(f"make_ordered_layout: order {order!r} is finer than shape {shape!r}")
    return [(order,) + prefix]


def _unflatten(flat, profile):
    it = iter(flat)

    def build(p):
        if isinstance(p, tuple):
            return tuple(build(e) for e in p)
        return next(it)
    return build(profile)


@_memo
def make_ordered_layout(shape, order=None):
    """A compact layout whose strides increase in the order given by ``order`` (smallest first)."""
    shape = tuplify(shape)
    order = tuplify(order)
    leaves = flatten(shape)
    if order is None:
        return Layout(shape)
    keys = _order_keys(shape, order, ())
    strides = [0] * len(leaves)
    current = 1
    for i in sorted(range(len(leaves)), key=lambda k: (keys[k], k)):
        strides[i] = current
        current *= leaves[i]
    return Layout(shape, _unflatten(strides, shape))


@_memo
@_lifted
def tile_to_shape(block, target_shape, order=None):
    """``block`` repeated (blocked_product) until it has shape ``target_shape``; each mode coalesced."""
    block = _as_layout(block, "tile_to_shape")
    target_shape = tuplify(target_shape)
    target = target_shape if isinstance(target_shape, tuple) else (target_shape,)
    if block.rank() > len(target):
        raise LayoutError(f"tile_to_shape: {block!r} has more modes than target shape {target_shape!r}")
    block_r = append(block, len(target))
    reps = []
    for i, t in enumerate(target):
        b = size(block_r[i])
        if product(t) % b:
            raise LayoutError(f"tile_to_shape: block mode {i} of size {b} does not divide target extent "
                              f"{product(t)}")
        reps.append(product(t) // b)
    reps = tuple(reps)
    return coalesce(blocked_product(block_r, make_ordered_layout(reps, order)), reps)
