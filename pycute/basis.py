"""Scaled-basis strides: cuTe's ``E<i>`` / ``1@0`` notation, with named axes as well as integer ones.

A stride may be ``k * E(axis)``; a layout with such strides maps into a multi-dimensional codomain, e.g. a TMEM
layout ``(32,16):(1@TLane,1@TCol)`` maps a coordinate to a (lane, column) point. Evaluating a layout sums strides, so
the values form a free module over the integers: a ``ScaledBasis`` is a finite sum of ``coefficient @ axis`` terms.
"""
from __future__ import annotations

import functools
from typing import Any

import attrs

from .errors import LayoutError

__all__ = ["ScaledBasis", "E", "basis_get"]


def _axis_key(axis):
    # Integer axes (cuTe's E<0>, E<1>) sort before named ones; named ones alphabetically.
    return (0, axis, "") if isinstance(axis, int) else (1, 0, axis)


@attrs.frozen(repr=False)
class ScaledBasis:
    """A sum of scaled basis elements, ``terms = ((axis, coefficient), ...)`` sorted by axis, no zero terms."""

    terms: tuple[tuple[int | str, int], ...]

    @staticmethod
    def of(mapping: dict) -> "ScaledBasis | int":
        """Canonical value of ``{axis: coefficient}``: the int 0 when every coefficient is 0."""
        terms = tuple(sorted(((a, c) for a, c in mapping.items() if c != 0), key=lambda t: _axis_key(t[0])))
        return ScaledBasis(terms) if terms else 0

    def as_dict(self) -> dict:
        return dict(self.terms)

    def coeff(self, axis: int | str) -> int:
        """The coefficient on ``axis`` (0 when absent)."""
        for a, c in self.terms:
            if a == axis:
                return c
        return 0

    @property
    def numbered(self) -> bool:
        """True when every axis is numbered (``E(0)``, ``E(1)``, ...), as the coordinates of an identity layout are."""
        return all(type(a) is int for a, _ in self.terms)

    @property
    def axis(self) -> int | str:
        """The axis of a single-term basis value."""
        if len(self.terms) != 1:
            raise LayoutError(f"{self!r} has {len(self.terms)} axes, not one")
        return self.terms[0][0]

    @property
    def value(self) -> int:
        """The coefficient of a single-term basis value."""
        if len(self.terms) != 1:
            raise LayoutError(f"{self!r} has {len(self.terms)} axes, not one")
        return self.terms[0][1]

    def __add__(self, other):
        if isinstance(other, ScaledBasis):
            d = dict(self.terms)
            for a, c in other.terms:
                d[a] = d.get(a, 0) + c
            return ScaledBasis.of(d)
        if isinstance(other, int) and other == 0:
            return self
        raise LayoutError(f"cannot add the integer {other!r} to the scaled-basis value {self!r}")

    __radd__ = __add__

    def __neg__(self):
        return ScaledBasis(tuple((a, -c) for a, c in self.terms))

    def __sub__(self, other):
        return self + (-other)

    def __rsub__(self, other):
        return (-self) + other

    def __mul__(self, k):
        if isinstance(k, int) and not isinstance(k, bool):
            return ScaledBasis(tuple((a, c * k) for a, c in self.terms)) if k != 0 else 0
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, k):
        if not isinstance(k, int) or k == 0 or any(c % k for _, c in self.terms):
            raise LayoutError(f"{self!r} is not divisible by {k!r}")
        return ScaledBasis(tuple((a, c // k) for a, c in self.terms))

    def __abs__(self):
        return ScaledBasis(tuple((a, abs(c)) for a, c in self.terms))

    def __repr__(self):
        parts = [f"{c}@{a}" for a, c in self.terms]
        return parts[0] if len(parts) == 1 else "(" + "+".join(parts) + ")"

    __str__ = __repr__


def E(axis: int | str) -> ScaledBasis:
    """The unit basis element of ``axis`` (an int as in cuTe's ``E<i>``, or a name such as ``"TLane"``)."""
    if not (type(axis) is int and axis >= 0) and not (isinstance(axis, str) and axis.isidentifier()):
        raise TypeError(f"E: the axis is a non-negative int (E<i>) or a name such as 'TLane', got {axis!r}")
    return ScaledBasis(((axis, 1),))


def basis_get(value: object, axis: int | str) -> int:
    """The coordinate of a layout value on ``axis``: an int counts as 0 on every named axis."""
    if isinstance(value, ScaledBasis):
        return value.coeff(axis)
    if value == 0:
        return 0
    raise LayoutError(f"the integer {value!r} has no component on axis {axis!r}")


@functools.lru_cache(maxsize=1024)
def coordinate_rank(stride: Any) -> int | None:
    """For strides on numbered basis axes only (``E(0)``, ``E(1)``, ... as ``make_identity_layout`` makes), the
    number of coordinate modes the layout's values have: such a layout maps an index to a coordinate, which CuTe
    returns as a tuple (its ``ArithmeticTuple``). None for every other stride."""
    leaves, axes = [stride], []   # type: list[Any], list[int]
    while leaves:
        d = leaves.pop()
        if isinstance(d, tuple):
            leaves += d
        elif isinstance(d, ScaledBasis):
            numbered = [a for a, _ in d.terms if type(a) is int]
            if len(numbered) != len(d.terms):
                return None
            axes += numbered
        elif d != 0:
            return None
    return max(axes) + 1 if axes else None


def as_coordinate(value: Any, stride: Any) -> Any:
    """A layout's value at some index: itself, or for a layout whose strides are on numbered axes only the
    coordinate tuple (CuTe's ``ArithmeticTuple``: ``(1, 1)``, not ``1@0 + 1@1``)."""
    if (type(value) is int and value) or (isinstance(value, ScaledBasis) and not value.numbered):
        return value                       # an offset, or a point on named axes (TLane, TCol): no coordinate
    rank = coordinate_rank(stride)
    return value if rank is None else tuple(basis_get(value, i) for i in range(rank))
