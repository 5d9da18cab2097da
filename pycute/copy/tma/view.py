"""The array as a tensor map sees it: one mode per tensor-map dimension the box can use, and the tile reshaped to
match, before the box is chosen.

* A hierarchical array mode (a mode of shape ``(a, b, ...)`` and as many strides) is its sub-modes, each a
  dimension of its own; the tile's window along the mode becomes a box over them when it lies inside one run of
  the inner sub-modes or covers whole runs, and a tile index moves each sub-mode by a quotient and a remainder.
* An array of more than five modes has contiguous modes merged first (CuTe's coalescing: mode ``j`` continues mode
  ``i`` when its stride is ``i``'s extent times ``i``'s stride), where the tile covers the inner mode wholly or
  spans the outer mode once without crossing into the next run, so that the merged window is the tile's.
* A swizzled tile whose rows are narrower than the swizzle's row holds one pattern row per box row in shared
  memory (``TmaSwizzle.row_pitch``); the tile's layout is read with those rows squeezed together, as the dense run
  the box fills.
"""
from __future__ import annotations

from math import gcd
from typing import Any

import attrs
import numpy as np

from ...arch.sm90.tma import MAX_RANK, TmaSwizzle
from ...composition import composition
from ...errors import PlanError
from ...int_tuple import flatten, is_int
from ...layout import Layout, coalesce, make_layout
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import layout_modes, mode_extents


__all__ = ["IndexTerm", "TmaTileCoord", "ArrayView", "array_view", "squeeze_rows", "NarrowRows", "narrow_rows",
           "tile_coords_of", "check_store_target"]


@attrs.frozen
class IndexTerm:
    """How a tile index ``t`` of one array mode moves the origin of view mode ``axis``, in its elements:
    ``(t * scale) // divisor``, then ``% modulus`` when ``modulus`` is not 0, times ``factor`` (a sub-mode merged
    behind a mode of ``factor`` elements)."""

    axis: int
    scale: int
    divisor: int = 1
    modulus: int = 0
    factor: int = 1

    def origin(self, t: int) -> int:
        v = t * self.scale // self.divisor
        return (v % self.modulus if self.modulus else v) * self.factor

    @property
    def linear(self) -> bool:
        return self.divisor == 1 and self.modulus == 0

    def behind(self, axis: int, extent: int) -> "IndexTerm":
        """The term on view mode ``axis`` after this one's mode was merged behind a mode of ``extent`` elements."""
        if self.modulus == 0 and self.scale % self.divisor == 0:
            return IndexTerm(axis, self.scale // self.divisor * self.factor * extent)
        return IndexTerm(axis, self.scale, self.divisor, self.modulus, self.factor * extent)


@attrs.frozen
class TmaTileCoord:
    """How tile index ``t`` of global mode ``mode`` moves tensor-map coordinate ``dim``: by ``t * scale``, or for a
    sub-mode of a hierarchical array mode by ``(t * scale) // divisor``, then ``% modulus`` when it is not 0, times
    ``factor``."""

    mode: int
    dim: int
    scale: int
    divisor: int = 1
    modulus: int = 0
    factor: int = 1

    def value(self, t: int) -> int:
        v = t * self.scale // self.divisor
        return (v % self.modulus if self.modulus else v) * self.factor

    def formula(self) -> str:
        """The term as C (and explain()) write it, of the tile index ``t<mode>``."""
        x = f"t{self.mode} * {self.scale}" if self.scale != 1 else f"t{self.mode}"
        if self.divisor != 1:
            x = f"({x}) / {self.divisor}"
        if self.modulus:
            x = f"({x}) % {self.modulus}"
        return f"({x}) * {self.factor}" if self.factor != 1 else x


@attrs.frozen
class ArrayView:
    """The view's modes ``arrays`` (``(extent, stride)`` in elements), the tile with one mode per view mode, how
    each array mode's tile index moves the view's origins, what was done (for ``explain()``) and the bounds on
    tile indices it needs."""

    arrays: tuple[tuple[int, int], ...]
    smem: SmemTensor
    terms: tuple[tuple[IndexTerm, ...], ...]
    notes: tuple[str, ...] = ()
    limits: tuple[tuple[int, int, str], ...] = ()   # (array mode, its largest tile index, why): what merges need
    owners: tuple[int, ...] = ()        # per view mode: the array mode it is, or -2 (a sub-mode, or modes merged)


def _colex(shape: tuple[int, ...]) -> Layout:
    strides, p = [], 1
    for n in shape:
        strides.append(p)
        p *= n
    return Layout(shape, tuple(strides))


def _split_hierarchical(k: int, leaves: list[tuple[int, int]], t: int, tile_mode: Layout,
                        where: str) -> tuple[list[tuple[int, int]], list[Layout], list[tuple[int, int, int, int]]]:
    """Array mode ``k``'s sub-modes, the tile's window over each (its layout), and the index terms ``(sub-mode,
    scale, divisor, modulus)`` of the mode's tile index (the window is ``[t * idx, t * idx + t)``)."""
    leaves = [(n, d) for n, d in leaves if n > 1] or [leaves[0]]
    prefix = [1]
    for n, _ in leaves:
        prefix.append(prefix[-1] * n)
    last = len(leaves) - 1
    inner = next((j for j in range(last, -1, -1) if t % prefix[j] == 0 and
                  (j == last or leaves[j][0] % (t // prefix[j]) == 0)), None)
    if inner is None:
        raise PlanError(f"make_tma_copy: array mode {k} is hierarchical {tuple(n for n, _ in leaves)}; the tile's "
                        f"{t} elements along it neither lie inside one run of its inner sub-modes nor cover whole "
                        f"runs, so no box over its sub-modes is the tile's window{where}")
    extents = [n for n, _ in leaves[:inner]] + [t // prefix[inner]] + [1] * (last - inner)
    window = composition(tile_mode, _colex(tuple(extents)))
    layouts = [Layout(s, d) for s, d in layout_modes(window)] if len(extents) > 1 else [window]
    terms = [(j, t, prefix[j], leaves[j][0] if j < last else 0) for j in range(inner, last + 1)]
    return leaves, layouts, terms


def _merge_limit(arrays: list, tiles: list, terms: list, i: int, j: int, exact: bool
                 ) -> list[tuple[int, int]] | None:
    """Whether view mode ``j`` continues mode ``i`` so that the tile's window over both is one window of the
    merged mode: None if not, else the tile-index bounds ``[(array mode, largest index)]`` that keep it so.
    ``exact``: only where the tile covers mode ``i`` whole (its tile index is then 0 in the array); else also
    where the tile spans mode ``j`` once and its window along ``i`` never crosses a run (the index stays below
    the run's tiles), or mode ``j`` has one element."""
    (ni, di), (nj, dj) = arrays[i], arrays[j]
    on_i = [(mode, x) for mode, ts in enumerate(terms) for x in ts if x.axis == i]
    if i == j or not all(x.linear for _, x in on_i):
        return None
    if nj == 1 and not exact:                   # a one-element mode never moves the merged window
        return []
    if dj != ni * di and nj != 1:               # (a one-element mode's stride is any: it never moves an element)
        return None
    if tiles[i] == ni:
        return None if exact and ni == 1 else [(mode, 0) for mode, _ in on_i]
    if not exact and tiles[j] == 1 and ni % tiles[i] == 0:
        return [(mode, ni // tiles[i] - 1) for mode, _ in on_i]
    return None


def _merge(arrays: list, smem_modes: list, terms: list, owners: list, notes: list, limits: list, exact: bool,
           where: str) -> None:
    """Merge contiguous view modes (in place): with ``exact``, every pair whose inner one the tile covers whole;
    then, while more than five remain, pairs whose tile index along the inner one stays within a run, or
    PlanError. ``limits`` gets ``(array mode, largest tile index, why)`` per bound a merge needs."""
    while exact or len(arrays) > MAX_RANK:
        tiles = [int(m.size()) for m in smem_modes]
        found = next(((i, j, lim) for i in range(len(arrays)) for j in range(len(arrays))
                      for lim in [_merge_limit(arrays, tiles, terms, i, j, exact)] if lim is not None), None)
        if found is None:
            if exact:
                exact = False
                continue
            raise PlanError(f"make_tma_copy: the array has {len(arrays)} modes and a tensor map at most {MAX_RANK}; "
                            f"no two of them merge (a mode continues another when its stride is the other's extent "
                            f"times its stride, and the tile covers the inner one wholly or spans the outer one "
                            f"once){where}")
        i, j, lim = found
        (ni, di), (nj, dj) = arrays[i], arrays[j]
        why = (f"array modes of extents {ni} and {nj} (strides {di}, {dj}) merged into one tensor-map dimension "
               f"of {ni * nj}")
        for mode, bound in lim:
            rule = (f"the tile covers array mode {mode} whole, so only tile index 0 lies in the array"
                    if bound == 0 else f"a tile index along array mode {mode} stays below {bound + 1}")
            limits.append((mode, bound, f"{why}: {rule} (past it the box would read the next run of the merged "
                                        f"dimension, not zeros)"))
        notes.append(why + ("" if not lim else ": " + "; ".join(
            f"tile index t{mode} <= {bound}" for mode, bound in lim)))
        arrays[i] = (ni * nj, di)
        smem_modes[i] = make_layout(smem_modes[i], smem_modes[j]) if tiles[j] > 1 else smem_modes[i]
        owners[i] = -2
        del arrays[j], smem_modes[j], owners[j]
        still = {mode for mode, bound in lim if bound == 0}       # only index 0: its term moves nothing
        for mode, ts in enumerate(terms):
            ts[:] = [x for x in ts if not (mode in still and x.axis == i)]
            ts[:] = [x.behind(i, ni) if x.axis == j else x for x in ts]
            ts[:] = [attrs.evolve(x, axis=x.axis - (x.axis > j)) for x in ts]


def array_view(modes: list[tuple[Any, Any]], smem: SmemTensor, where: str, merge: bool = False) -> ArrayView:
    """The view of an array whose modes are ``modes`` (``(shape, stride)``, hierarchical or not) for the tile
    ``smem`` (one mode per array mode, offsets already checked). A hierarchical mode whose sub-modes coalesce into
    one (each continuing the one inside it: a nested sub-mode a few bytes apart) is that one mode, as TVM's planner
    flattens it; ``merge``: every pair of contiguous modes whose inner one the tile covers whole is one dimension
    too (else only as many as five dimensions need)."""
    tile_modes = [Layout(s, d) for s, d in layout_modes(smem.layout)]
    if len(tile_modes) != len(modes):
        raise PlanError(f"make_tma_copy: the tile has {len(tile_modes)} modes and the array {len(modes)}; mode i of "
                        f"the tile is a window of mode i of the array{where}")
    arrays: list[tuple[int, int]] = []
    smem_modes: list[Layout] = []
    terms: list[list[IndexTerm]] = []
    notes: list[str] = []
    limits: list[tuple[int, int, str]] = []
    owners: list[int] = []
    tiles = mode_extents(smem.layout)
    for k, ((shape, stride), t) in enumerate(zip(modes, tiles)):
        flat = Layout(shape, stride)
        if not is_int(shape) and is_int(coalesce(flat).shape) and int(flat.size()) > 1:
            flat = coalesce(flat)               # its sub-modes one run (CuTe's coalesce); else each its own
        leaves = list(zip(flatten(flat.shape), flatten(flat.stride)))
        if len(leaves) == 1:
            if not is_int(shape):
                notes.append(f"hierarchical array mode {k} {shape} : {stride} is one run of {leaves[0][0]} "
                             f"elements {leaves[0][1]} apart (its sub-modes coalesce)")
            terms.append([IndexTerm(len(arrays), t)])
            arrays.append((int(leaves[0][0]), int(leaves[0][1])))
            smem_modes.append(tile_modes[k])
            owners.append(k)
            continue
        subs, layouts, split = _split_hierarchical(k, [(int(n), int(d)) for n, d in leaves], t, tile_modes[k], where)
        base = len(arrays)
        terms.append([IndexTerm(base + j, s, dv, m) for j, s, dv, m in split])
        arrays += subs
        smem_modes += layouts
        owners += [-2] * len(subs)
        notes.append(f"hierarchical array mode {k} {tuple(n for n, _ in subs)} : {tuple(d for _, d in subs)} is "
                     f"viewed as its {len(subs)} sub-modes")
    _merge(arrays, smem_modes, terms, owners, notes, limits, merge, where)
    layout = make_layout(*smem_modes) if len(smem_modes) > 1 else Layout((smem_modes[0].shape,),
                                                                          (smem_modes[0].stride,))
    view = attrs.evolve(smem, layout=layout)
    return ArrayView(tuple(arrays), view, tuple(tuple(ts) for ts in terms), tuple(notes), tuple(limits),
                     tuple(owners))


def squeeze_rows(layout: Layout, pitch: int) -> tuple[Layout, int] | None:
    """``(the layout with its rows squeezed together, the row's width)`` when ``layout`` (in elements) holds rows
    narrower than ``pitch`` elements at multiples of ``pitch``: every stride below the row's width, or a multiple
    of ``pitch`` (then scaled to the width). None when the rows are not narrower (nothing to squeeze)."""
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    inner = [(int(n), int(d)) for n, d in zip(shapes, strides) if 0 < int(d) < pitch and int(n) > 1]
    width = 1 + sum((n - 1) * d for n, d in inner)
    if not inner or width >= pitch:
        return None
    squeezed = []
    for n, d in zip(shapes, strides):
        n, d = int(n), int(d)
        if n == 1 or 0 < d < width:
            squeezed.append(d if n > 1 else 0)
        elif d % pitch == 0:
            squeezed.append(d // pitch * width)
        else:
            return None
    return Layout(layout.shape, _unflatten(layout.stride, squeezed)), width


def _unflatten(like: Any, values: list[int]) -> Any:
    it = iter(values)

    def build(x: Any) -> Any:
        return tuple(build(y) for y in x) if isinstance(x, tuple) else next(it)
    return build(like)


def tile_coords_of(view: ArrayView, dims: list, where: str) -> list[TmaTileCoord]:
    """How each array mode's tile index moves the map's coordinates: each of its view terms on the dimension of
    the view mode with the largest step (the box's outermost part of that mode), in that dimension's units."""
    out = []
    for mode, terms in enumerate(view.terms):
        for term in terms:
            j = max((k for k, d in enumerate(dims) if d[3] == term.axis), key=lambda k: dims[k][4])
            out.append(_on_dim(mode, j, dims[j][4], term, where))
    return out


def _on_dim(mode: int, dim: int, step: int, term: IndexTerm, where: str) -> TmaTileCoord:
    """The term in units of a dimension that views its mode in ``step``-element parts."""
    need = step // gcd(term.factor, step)           # what the term must be a multiple of before the factor
    if need == 1:
        return TmaTileCoord(mode, dim, term.scale, term.divisor, term.modulus, term.factor * need // step)
    if term.scale % term.divisor == 0:
        scale = term.scale // term.divisor
        if scale % need == 0 and term.modulus % need == 0:
            return TmaTileCoord(mode, dim, scale // need, 1, term.modulus // need, term.factor * need // step)
    raise PlanError(f"make_tma_copy: a tile index of array mode {mode} moves the map's dimension {dim} by "
                    f"((t * {term.scale}) // {term.divisor}) % {term.modulus or 'none'} x {term.factor} elements, not "
                    f"whole steps of {step}{where}")


@attrs.frozen
class NarrowRows:
    """A tile whose rows are narrower than its swizzle's (``row`` elements each, ``pitch`` apart in shared memory),
    read with its rows squeezed together (``smem``), or the tile itself (``row`` None)."""

    smem: SmemTensor
    row: int | None
    pitch: int

    def padded(self, offset: int) -> int:
        """A squeezed element offset as the tile's own (rows ``pitch`` apart)."""
        return offset if self.row is None else offset // self.row * self.pitch + offset % self.row

    def split(self, modes: list, where: str) -> list:
        """The first mode of ``L`` cut at the tile's row (the box's rows are the tile's rows)."""
        if self.row is None:
            return modes
        n, axis, step = modes[0]
        if n == self.row:
            return modes
        if n % self.row:
            raise PlanError(f"make_tma_copy: the tile's rows are {self.row} elements ({self.pitch} apart) but its "
                            f"first run along one array mode is {n}; each box row takes a whole pattern row, so the "
                            f"box row must be the tile's whole row{where}")
        return [(self.row, axis, step), (n // self.row, axis, step * self.row)] + modes[1:]


def narrow_rows(smem: SmemTensor, mode: TmaSwizzle, elem: int) -> NarrowRows:
    """The tile as the box fills it: rows narrower than the swizzle's squeezed together (each keeps a whole
    pattern row in shared memory, ``TmaSwizzle.row_pitch``)."""
    pitch = mode.span // elem if mode.byte_swizzle is not None else 0
    squeezed = squeeze_rows(smem.layout, pitch) if pitch else None
    if squeezed is None or mode.row_pitch(squeezed[1] * elem) == squeezed[1] * elem:
        return NarrowRows(smem, None, pitch)
    return NarrowRows(attrs.evolve(smem, layout=squeezed[0]), squeezed[1], pitch)


def check_store_target(gmem: GlobalTensor, tile: tuple[int, ...], where: str) -> None:
    """A store's window names each array element once. Where two of the tile's elements address one element (a
    stride-0 mode, or modes that overlap within the window) the box writes it twice, and TMA defines no order
    between the elements of a box (PTX ISA #tensor-tiled-mode), so which value lands is not defined: refused,
    naming the two. Windows of a broadcast or overlapping array that address each element once are stores like
    any other (each element goes to its own address)."""
    offsets = np.zeros(1, dtype=np.int64)
    extents: list[int] = []
    for shape, stride in layout_modes(gmem.layout):
        mode = Layout(shape, stride)
        w = min(int(mode.size()), tile[len(extents)])
        extents.append(w)
        along = np.array([int(mode(x)) for x in range(w)], dtype=np.int64)
        offsets = (offsets[None, :] + along[:, None]).reshape(-1)     # this mode slower than the earlier ones
    values, first, counts = np.unique(offsets, return_index=True, return_counts=True)
    if counts.max(initial=1) < 2:
        return
    k = int(np.argmax(counts > 1))
    a, b = (int(x) for x in np.flatnonzero(offsets == values[k])[:2])
    coords = [tuple(int(c) for c in reversed(np.unravel_index(x, tuple(reversed(extents))))) for x in (a, b)]
    strides = [int(d) for d in flatten(gmem.layout.stride)]
    shapes = [int(n) for n in flatten(gmem.layout.shape)]
    what = ("the array has a stride-0 mode (a broadcast view)" if any(d == 0 and n > 1 for n, d in zip(shapes, strides))
            else "the array's modes overlap")
    raise PlanError(f"make_tma_copy: {what}: the tile's elements {coords[0]} and {coords[1]} both address element "
                    f"{int(values[k])} of the array, so a store would write it twice, and TMA orders no two elements "
                    f"of a box: which value lands is not defined (loads of such views are planned; a store whose tile "
                    f"addresses each element once is planned too){where}")
