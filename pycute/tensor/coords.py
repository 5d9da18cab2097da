"""Fragment coordinates: which (row, column) of its tile each value of each thread of a register fragment holds.

A fragment's layout maps (thread, value) to a coordinate index of a ``rows x cols`` tile (``row + rows * col``,
CuTe's thread-value convention). Composed with the tile's identity layout (CuTe's ``make_identity_layout``) it
maps (thread, value) straight to (row, col): every mode's stride is a row step (``k@0``) or a column step (``k@1``),
so ``row(t, v) = row(t, 0) + row(0, v)`` -- a per-thread base plus a per-value offset, which is what lets the
generated ``<name>_row(t, v)`` fold to one base and constants in an unrolled loop. ``fragment_coords`` gives that
layout and its tables, so masks, bounds and per-row / per-column vectors are written against coordinates and never
against register indices (docs/fragments.md).
"""
from __future__ import annotations

import functools
from typing import Literal, Protocol, runtime_checkable

import attrs
import numpy as np

from ..basis import ScaledBasis
from ..composition import composition
from ..errors import LayoutError, PlanError
from ..int_tuple import as_int, flatten, product
from ..layout import Layout
from ..modes import make_identity_layout
from .rmem import RegisterFragment
from .values import layout_values

__all__ = ["Axis", "FragmentCoords", "HasRegisterFragment", "fragment_coords", "coord_modes"]

#: A tile axis: rows (coordinate 0) or columns (coordinate 1).
Axis = Literal["row", "col"]
_AXIS = {"row": 0, "col": 1}


@runtime_checkable
class HasRegisterFragment(Protocol):
    """What holds a register fragment besides ``RegisterFragment`` itself: a ``tcgen05.ld`` / ``st`` plan, a wgmma
    plan (its accumulator)."""

    @property
    def fragment_tensor(self) -> RegisterFragment: ...


def _read_only(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@attrs.frozen(repr=False)
class FragmentCoords:
    """The coordinates of ``fragment``'s values in its ``shape = (rows, cols)`` tile: ``row[t, v]`` and ``col[t, v]``
    (int64, read-only) for thread ``t`` (``0 .. threads - 1``: the fragment's own thread index) and value ``v``
    (register ``v // (32 / bits)``, the ``v % (32 / bits)``-th from the low bits). ``layout`` is the ``(thread,
    value) -> (row, col)`` layout with ``k@0`` / ``k@1`` strides (None when the fragment's map is not one)."""

    fragment: RegisterFragment
    shape: tuple[int, int]
    layout: Layout | None
    row: np.ndarray = attrs.field(eq=False)
    col: np.ndarray = attrs.field(eq=False)

    @property
    def threads(self) -> int:
        return self.fragment.threads

    @property
    def values(self) -> int:
        """Values per thread."""
        return int(self.row.shape[1])

    def of(self, thread: int, value: int) -> tuple[int, int]:
        """The (row, col) value ``value`` of thread ``thread`` holds."""
        t, v = as_int(thread, "of: thread"), as_int(value, "of: value")
        if not (0 <= t < self.threads and 0 <= v < self.values):
            raise PlanError(f"of({t}, {v}): the fragment has threads 0..{self.threads - 1} and values "
                            f"0..{self.values - 1}")
        return int(self.row[t, v]), int(self.col[t, v])

    def table(self, axis: Axis) -> np.ndarray:
        """``row`` or ``col``."""
        return self.row if _axis(axis) == 0 else self.col

    # ---- the per-thread base and the per-value offset -------------------------------------------------------------
    @property
    def separable(self) -> bool:
        """Whether ``row[t, v] == thread_row[t] + value_row[v]`` and likewise for columns (always so when ``layout``
        exists)."""
        return all(np.array_equal(self.table(a), _base(self.table(a))[:, None] + _offset(self.table(a))[None, :])
                   for a in ("row", "col"))

    def _split(self, axis: Axis, part: Literal["thread", "value"]) -> np.ndarray:
        if not self.separable:
            raise PlanError(f"{self.fragment!r}: the coordinates are not a per-thread base plus a per-value offset "
                            f"(read .row / .col)")
        t = self.table(axis)
        return _read_only(_base(t) if part == "thread" else _offset(t))

    @property
    def thread_row(self) -> np.ndarray:
        """``row[t, 0]``: thread ``t``'s base row."""
        return self._split("row", "thread")

    @property
    def thread_col(self) -> np.ndarray:
        return self._split("col", "thread")

    @property
    def value_row(self) -> np.ndarray:
        """``row[t, v] - row[t, 0]``, the same for every thread: value ``v``'s row offset."""
        return self._split("row", "value")

    @property
    def value_col(self) -> np.ndarray:
        return self._split("col", "value")

    # ---- who holds what ---------------------------------------------------------------------------------------------
    def rows_of(self, thread: int) -> tuple[int, ...]:
        """The rows thread ``thread`` holds values of, ascending."""
        return tuple(int(r) for r in np.unique(self.row[self._thread(thread)]))

    def cols_of(self, thread: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.unique(self.col[self._thread(thread)]))

    def threads_of_row(self, row: int) -> tuple[int, ...]:
        """The threads holding values of row ``row`` (the lanes a row reduction combines), ascending."""
        return self._holders(self.row, as_int(row, "threads_of_row: row"), 0)

    def threads_of_col(self, col: int) -> tuple[int, ...]:
        return self._holders(self.col, as_int(col, "threads_of_col: col"), 1)

    def slots(self, axis: Axis) -> tuple[tuple[int, ...], ...]:
        """A thread's values grouped by the line (row for ``"row"``) they lie on: slot ``s`` is the values (ascending)
        whose ``value_row`` is the ``s``-th distinct offset in value order; every thread has the same slots. What a
        per-row state array (a running max, a sum, an LSE) of ``len(slots)`` entries is indexed by."""
        offsets = self._split(axis, "value")
        firsts = list(dict.fromkeys(int(o) for o in offsets))
        return tuple(tuple(int(v) for v in np.flatnonzero(offsets == o)) for o in firsts)

    def _thread(self, thread: int) -> int:
        t = as_int(thread, "thread")
        if not 0 <= t < self.threads:
            raise PlanError(f"thread {t} of a fragment of {self.threads} threads")
        return t

    def _holders(self, table: np.ndarray, line: int, axis: int) -> tuple[int, ...]:
        if not 0 <= line < self.shape[axis]:
            raise PlanError(f"{('row', 'column')[axis]} {line} of a {self.shape[0]} x {self.shape[1]} tile")
        return tuple(int(t) for t in np.flatnonzero((table == line).any(axis=1)))

    def cuda(self, name: str) -> str:
        """The device helpers ``<name>_row(t, v)``, ``<name>_col(t, v)`` (each a per-thread base plus a ``constexpr``
        per-value offset), ``<name>_for_each(t, f)`` (``f(v, row, col)`` for every value, unrolled) and the slot
        helpers (``pycute.codegen.fragment``)."""
        from ..views import view
        return view("cuda", self, name)

    def __repr__(self) -> str:
        lay = f" {self.layout!r}" if self.layout is not None else " (a table, not a layout)"
        return f"FragmentCoords({self.fragment!r}, {self.shape[0]} x {self.shape[1]} tile:{lay})"


def _base(t: np.ndarray) -> np.ndarray:
    return t[:, 0].copy()


def _offset(t: np.ndarray) -> np.ndarray:
    return t[0] - t[0, 0]


def _axis(axis: object) -> int:
    if axis not in _AXIS:
        raise PlanError(f"axis is 'row' or 'col', not {axis!r}")
    return _AXIS[axis]


def _tile_shape(fragment: RegisterFragment) -> tuple[int, int]:
    if fragment.shape is None:
        raise PlanError(f"fragment_coords: {fragment!r} does not say its tile's shape; give it "
                        f"(make_fragment(..., shape=(rows, cols)))")
    modes = fragment.shape if isinstance(fragment.shape, tuple) else (fragment.shape,)
    if len(modes) != 2:
        raise PlanError(f"fragment_coords: the tile {fragment.shape} is not rank 2 (rows, cols)")
    return product(modes[0]), product(modes[1])


def coord_modes(layout: Layout) -> list[tuple[int, int, int]]:
    """The flat modes of a ``(thread | value) -> (row, col)`` layout as ``(size, axis, step)``: axis 0 row, 1
    column, -1 a broadcast (stride 0)."""
    out = []
    for n, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if isinstance(d, ScaledBasis):
            axis, step = d.axis, d.value
            assert isinstance(axis, int)
            out.append((n, axis, step))
        else:
            out.append((n, -1, 0))
    return out


@functools.lru_cache(maxsize=256)
def _coords(fragment: RegisterFragment) -> FragmentCoords:
    rows, cols = _tile_shape(fragment)
    tv = fragment.layout
    if tv is None:
        raise PlanError(f"fragment_coords: {fragment!r} has no (thread, value) layout (make_fragment(..., "
                        f"layout=...), a plan's fragment, wgmma_accumulator)")
    if tv.rank() != 2 or tv[0].size() != fragment.threads:
        raise PlanError(f"fragment_coords: the layout {tv!r} is not (thread, value) over {fragment.threads} threads")
    index = layout_values(tv).reshape(tv[1].size(), fragment.threads).T
    coord: Layout | None
    try:
        coord = composition(make_identity_layout((rows, cols)), tv)
    except LayoutError:                                    # a mode straddling rows unevenly: tables only
        coord = None
    if index.min() < 0 or index.max() >= rows * cols:
        t, v = np.argwhere((index < 0) | (index >= rows * cols))[0]
        raise PlanError(f"fragment_coords: thread {t}'s value {v} is element {int(index[t, v])} of a {rows} x {cols} "
                        f"tile of {rows * cols} elements: not in the tile")
    row, col = index % rows, index // rows
    if coord is not None and not _moves_one_axis(coord, row, col, fragment.threads):
        coord = None
    return FragmentCoords(fragment, (rows, cols), coord, _read_only(row), _read_only(col))


def _moves_one_axis(coord: Layout, row: np.ndarray, col: np.ndarray, threads: int) -> bool:
    """Every mode of ``coord`` steps along one axis (or none), and the layout gives the tables."""
    strides = flatten(coord.stride)
    if any(isinstance(d, ScaledBasis) and len(d.terms) != 1 for d in strides):
        return False
    return (np.array_equal(layout_values(coord, 0).reshape(-1, threads).T, row)
            and np.array_equal(layout_values(coord, 1).reshape(-1, threads).T, col))


def fragment_coords(fragment: RegisterFragment | HasRegisterFragment) -> FragmentCoords:
    """The (row, col) of every value of every thread of ``fragment``: a ``RegisterFragment`` with a layout and a tile
    shape (``wgmma_accumulator``, ``wgmma_a_fragment``, ``make_fragment(dtype, threads, layout, shape)``) or
    anything holding one (``make_tmem_copy``'s plan, a wgmma plan: its accumulator). ``coords.row[t, v]``,
    ``coords.col[t, v]``; ``coords.of(t, v)``; ``coords.cuda(name)`` the device helpers."""
    if isinstance(fragment, HasRegisterFragment) and not isinstance(fragment, RegisterFragment):
        fragment = fragment.fragment_tensor
    if not isinstance(fragment, RegisterFragment):
        raise TypeError(f"fragment_coords: a register fragment (make_fragment, wgmma_accumulator, a tcgen05.ld "
                        f"plan), got {type(fragment).__name__}")
    return _coords(fragment)
