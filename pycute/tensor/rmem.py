"""Register fragments: the values a set of threads holds, as CuTe's thread-value convention has them, a
``(thread, value) -> coordinate index`` layout over the tensor they came from (or go to)."""
from __future__ import annotations

import attrs

from ..dtypes import DType, DTypeLike, element_dtype
from ..errors import PlanError
from ..int_tuple import as_int
from ..layout import Layout
from ..typing import IntTuple

__all__ = ["RegisterFragment", "make_fragment"]

_WARP = 32


@attrs.frozen
class RegisterFragment:
    """What ``threads`` threads (whole warps) hold: ``layout`` maps (thread, value) to the coordinate index of the
    other tensor of a copy; ``None`` lets the planner choose the layout (the plan's ``fragment`` then says it).
    ``shape``, when given, is the shape of the tile the coordinate indices index (checked against the other
    tensor's)."""

    dtype: DType
    threads: int
    layout: Layout | None = None
    shape: IntTuple | None = None

    SPACE = "register"

    @property
    def space(self) -> str:
        return self.SPACE

    @property
    def warps(self) -> int:
        return self.threads // _WARP

    def __repr__(self) -> str:
        layout = f" {self.layout!r}" if self.layout is not None else ""
        of = f" of {self.shape}" if self.shape is not None else ""
        return f"rmem<{self.dtype.name}>[{self.threads} threads{layout}{of}]"


def make_fragment(dtype: DTypeLike, threads: int = 128, layout: Layout | None = None,
                  shape: IntTuple | None = None) -> RegisterFragment:
    """The registers of ``threads`` threads (a multiple of 32), optionally in a given ``(thread, value)`` layout of
    a tile of ``shape``."""
    dt = element_dtype(dtype, "make_fragment")
    threads = as_int(threads, "make_fragment: threads")
    if threads < _WARP or threads % _WARP:
        raise PlanError(f"make_fragment: {threads} threads are not whole warps (a positive multiple of {_WARP})")
    if layout is not None and not isinstance(layout, Layout):
        raise TypeError(f"make_fragment: the layout must be a (thread, value) Layout or None, got {layout!r}")
    return RegisterFragment(dt, threads, layout, shape)
