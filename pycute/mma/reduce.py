"""make_reduction: the max and the sum of an f32 register fragment along its rows (or columns), derived from the
fragment's coordinates (``fragment_coords``; docs/fragments.md).

A row of the tile is spread over a few values of each of a few threads. Which values: the thread's values on that
row (``coords.slots("row")``: the value modes with a row stride). Which threads: the thread modes with a column
stride -- they hold other columns of the same rows -- each a power of two of threads a power of two apart, so the
threads sharing a row are ``t ^ m`` for the masks ``m`` those modes span, all in one warp (``shfl.sync.bfly``,
PTX ISA #data-movement-and-conversion-instructions-shfl-sync). For wgmma's accumulator that is the quad: lanes
``t ^ 1`` and ``t ^ 2``, values ``i`` and ``i ^ 1`` of every 4 on each of the thread's two rows.

The order, which makes the result bit-exact (f32 ``max`` and ``add`` are each rounded once, in this order):

1. in the thread, the slot's values ``x0, x1, ...`` in value order, combined as a pairwise tree: each level combines
   neighbours ``(x0, x1), (x2, x3), ...`` (an odd last one passes to the next level as it is);
2. across the threads, ``x = x op shfl_xor(x, m)`` for each mask ``m`` from the lowest; every thread of the row ends
   with the same bits (``op`` is commutative);
3. with the running state: ``m = max(m, x)`` / ``l = l + x``.

``max`` is PTX's ``max.f32`` (``fmaxf``): a NaN operand gives the other one, and -0 orders below +0.
"""
from __future__ import annotations

from typing import ClassVar, Literal

import attrs
import numpy as np

from ..arch.convention import Convention
from ..arch.sm90.warp import WARP_THREADS
from ..errors import PlanError
from ..tensor.coords import Axis, FragmentCoords, HasRegisterFragment, coord_modes, fragment_coords
from ..tensor.rmem import RegisterFragment
from ..views import view

__all__ = ["ReducePlan", "make_reduction", "ReduceOp", "f32_max"]

#: The two reductions: ``max`` (``fmaxf``, PTX ``max.f32``) and ``sum`` (``add.rn.f32``).
ReduceOp = Literal["max", "sum"]
_OTHER = {"row": "col", "col": "row"}
_WORD = {"row": "row", "col": "column"}
_RULE = "PTX #data-movement-and-conversion-instructions-shfl-sync"


@attrs.frozen(repr=False)
class ReducePlan:
    """Reductions of ``coords``' fragment along ``axis``: ``slots[s]`` the thread's values on its ``s``-th line
    (row for ``axis="row"``), combined in the thread as a pairwise tree, then across the threads ``t ^ m`` for
    ``m`` in ``masks`` (lowest first)."""

    coords: FragmentCoords
    axis: Axis
    slots: tuple[tuple[int, ...], ...]
    masks: tuple[int, ...]

    VARIANT: ClassVar[str] = "reduce"

    @property
    def fragment(self) -> RegisterFragment:
        return self.coords.fragment

    @property
    def threads_per_line(self) -> int:
        """Threads holding one line (row): 4 for wgmma's accumulator."""
        return 1 << len(self.masks)

    @property
    def convention(self) -> Convention:
        """Every lane of the fragment's warps, converged (``shfl.sync`` with the full mask); no shared operands."""
        return Convention("warps", self.fragment.threads, "none")

    def tree(self, slot: int) -> list[list[int]]:
        """The thread step of slot ``slot`` as levels: level 0 the values, each next level combining neighbours of
        the previous one (indices into it)."""
        levels = [list(self.slots[slot])]
        while len(levels[-1]) > 1:
            levels.append(list(range((len(levels[-1]) + 1) // 2)))
        return levels

    def reference(self, op: ReduceOp, values: np.ndarray, state: np.ndarray | None = None,
                  lanes: bool = True) -> np.ndarray:
        """What the generated functions leave, computed with numpy's f32 arithmetic in the stated order: ``values``
        (threads, values) f32 (or their bits), ``state`` (threads, slots) the running max / sum (None: -inf / 0);
        ``lanes=False`` is ``<name>_<axis>_sum_partial`` (the thread's own values only). (threads, slots) f32."""
        x = np.asarray(values)
        x = x.view(np.float32) if x.dtype == np.uint32 else x.astype(np.float32)
        t = self.fragment.threads
        if x.shape != (t, self.coords.values):
            raise PlanError(f"reference: values of shape (threads={t}, values={self.coords.values}), got {x.shape}")
        combine = f32_max if op == "max" else _f32_add
        part = np.stack([_tree(combine, [x[:, v] for v in vs]) for vs in self.slots], axis=1)
        if lanes:
            part = self.allreduce(op, part)
        if state is None:
            state = np.full(part.shape, -np.inf if op == "max" else 0.0, dtype=np.float32)
        s = np.asarray(state)
        s = s.view(np.float32) if s.dtype == np.uint32 else s.astype(np.float32)
        return combine(s, part)

    def allreduce(self, op: ReduceOp, partial: np.ndarray) -> np.ndarray:
        """``<name>_<axis>_allreduce_<op>``: each thread's (threads, slots) partials combined across the threads of
        its line, mask by mask."""
        combine = f32_max if op == "max" else _f32_add
        x = np.asarray(partial, dtype=np.float32)
        lane = np.arange(self.fragment.threads)
        for m in self.masks:
            x = combine(x, x[lane ^ m])
        return x

    @property
    def partial_convention(self) -> Convention:
        """``_max_partial`` / ``_sum_partial`` use no other thread: any thread, each on its own."""
        return Convention("any", 1, "none")

    def cuda(self, name: str) -> str:
        """``<name>_<axis>_max(frag, m)`` / ``_sum(frag, l)`` (the whole line, combined into the running state),
        ``_max_partial`` / ``_sum_partial`` (the thread's own values only) and ``_allreduce_max(x)`` /
        ``_allreduce_sum(x)`` (a per-thread partial combined across the line's threads, in place), from
        ``pycute.codegen.fragment``."""
        return view("cuda", self, name)

    def explain(self) -> str:
        c, ax = self.coords, self.axis
        lines = [f"reduction along {ax}s of {self.fragment!r} ({c.shape[0]} x {c.shape[1]} tile)",
                 f"  in a thread  {len(self.slots)} {ax}(s), {len(self.slots[0])} value(s) each, a pairwise tree: "
                 + "; ".join(f"slot {s}: values {list(vs)}" for s, vs in enumerate(self.slots[:4]))
                 + (" ..." if len(self.slots) > 4 else ""),
                 f"  across       {self.threads_per_line} thread(s) per {ax}: "
                 + (", ".join(f"shfl.sync.bfly {m}" for m in self.masks) or "none (one thread holds each line)"),
                 "  then         m = max(m, x) / l = l + x"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ReducePlan({self.axis}s of {self.fragment!r}: {len(self.slots)} x {len(self.slots[0])} value(s), "
                f"lanes ^{list(self.masks)})")


def f32_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """PTX ``max.f32`` elementwise: a NaN operand gives the other, -0 orders below +0 (two NaN: NaN)."""
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    a_bits, b_bits = a.view(np.int32), b.view(np.int32)
    pick_a = (a > b) | ((a == b) & (a_bits >= 0)) | np.isnan(b)
    return np.where(np.isnan(a), b, np.where(pick_a, a, b)).astype(np.float32)


def _f32_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return (np.asarray(a, dtype=np.float32) + np.asarray(b, dtype=np.float32)).astype(np.float32)


def _tree(combine, xs: list) -> np.ndarray:
    while len(xs) > 1:
        xs = [combine(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
    return xs[0]


def _masks(coords: FragmentCoords, axis: Axis) -> tuple[int, ...]:
    assert coords.layout is not None
    other = 1 if axis == "row" else 0
    masks, prefix = [], 1
    for n, a, step in coord_modes(coords.layout[0]):
        if n > 1 and a == -1:
            raise PlanError(f"make_reduction: {coords.fragment!r}: threads {prefix} apart hold the same elements (a "
                            f"thread mode of stride 0); a sum would count them twice")
        if n > 1 and a == other:
            if n & (n - 1) or prefix & (prefix - 1):
                raise PlanError(f"make_reduction: {coords.fragment!r}: the threads sharing a {_WORD[axis]} are {n} "
                                f"threads {prefix} apart, not a power of two a power of two apart (shfl.sync.bfly "
                                f"masks; {_RULE})")
            if prefix * n > WARP_THREADS:                # threads 0 and prefix (n - 1) differ in this mode only
                w = _WORD[axis]
                raise PlanError(f"make_reduction: {coords.fragment!r}: {w} {int(coords.table(axis)[0, 0])} is held "
                                f"by threads 0 and {prefix * (n - 1)}, in different warps: a {w} reduction across "
                                f"warps needs shared memory, which is not planned (each {w} must lie within one warp: "
                                f"shfl.sync reaches the lanes of one warp, {_RULE})")
            masks += [prefix << k for k in range(n.bit_length() - 1)]
        prefix *= n
    _check_lines(coords, axis, masks)
    return tuple(masks)


def _check_lines(coords: FragmentCoords, axis: Axis, masks: list[int]) -> None:
    """Each line is held, on one slot, by exactly the threads ``t ^ span(masks)``: no other thread holds it."""
    slots = coords.slots(axis)
    table = coords.table(axis)
    line = np.stack([table[:, vs[0]] for vs in slots], axis=1)          # (threads, slots)
    t = np.arange(coords.threads)
    closed = all(np.array_equal(line[t ^ m], line) for m in masks)
    _, counts = np.unique(line, return_counts=True)
    if not closed or (counts != 1 << len(masks)).any():
        raise PlanError(f"make_reduction: {coords.fragment!r}: the threads holding one {_WORD[axis]} are not the "
                        f"threads that differ in the thread modes along the other axis (a {_WORD[axis]} lies on two "
                        f"slots or in two groups of threads)")


def make_reduction(fragment: RegisterFragment | HasRegisterFragment, axis: Axis = "row") -> ReducePlan:
    """The max / sum along ``axis`` (``"row"`` or ``"col"``) of an f32 fragment (``wgmma_accumulator``, a
    ``tcgen05.ld`` plan, any fragment with a layout over a tile), every line within one warp. PlanError names what
    is refused: another type, a line spread over warps, threads of a line not a power of two a power of two
    apart, duplicated values."""
    coords = fragment_coords(fragment)
    if axis not in _OTHER:
        raise PlanError(f"make_reduction: axis is 'row' or 'col', not {axis!r}")
    if coords.fragment.dtype.name != "f32":
        raise PlanError(f"make_reduction: reductions are of f32 fragments (one value per 32-bit register, f32 max and "
                        f"add), not {coords.fragment.dtype.name}")
    if coords.layout is None:
        raise PlanError(f"make_reduction: {coords.fragment!r}: its (thread, value) -> (row, col) map is not a layout")
    for n, a, _ in coord_modes(coords.layout[1]):
        if n > 1 and a == -1:
            raise PlanError(f"make_reduction: {coords.fragment!r}: a thread holds one element in {n} values (a value "
                            f"mode of stride 0); a sum would count it {n} times")
    return ReducePlan(coords, axis, coords.slots(axis), _masks(coords, axis))
