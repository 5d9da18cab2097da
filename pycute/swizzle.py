"""cuTe swizzle functors and composed layouts (``cute/swizzle.hpp``, ``cute/layout_composed.hpp``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import numpy as np

#: A swizzle maps an offset, or numpy's arrays of them elementwise, to the same kind.
Offsets = TypeVar("Offsets", int, "np.ndarray")

import attrs

from .basis import ScaledBasis
from .errors import LayoutError
from .typing import IntTuple
from .int_tuple import as_int, has_none, tuplify
from .layout import AnyLayout, ComposedBase, Layout, LayoutLike, _as_layout, slice_and_offset

__all__ = ["Swizzle", "ComposedLayout", "shiftl", "shiftr"]

MAX_SWIZZLE_BITS = 64     # B + M + |S|: the highest address bit a swizzle reads or writes


def _shift(s: int, what: str) -> int:
    """A shift of at most MAX_SWIZZLE_BITS either way: offsets are addresses of that many bits."""
    if type(s) is int and -MAX_SWIZZLE_BITS <= s <= MAX_SWIZZLE_BITS:
        return s
    s = as_int(s, f"{what}: the shift")
    if not -MAX_SWIZZLE_BITS <= s <= MAX_SWIZZLE_BITS:
        raise LayoutError(f"{what}: a shift of {s} bits; offsets are at most {MAX_SWIZZLE_BITS}-bit, so |s| <= "
                          f"{MAX_SWIZZLE_BITS}")
    return s


def shiftr(a: Offsets, s: int) -> Offsets:
    """``a >> s``, or ``a << -s`` for negative ``s`` (``|s|`` at most 64)."""
    s = _shift(s, "shiftr")
    return a >> s if s >= 0 else a << -s


def shiftl(a: Offsets, s: int) -> Offsets:
    """``a << s``, or ``a >> -s`` for negative ``s`` (``|s|`` at most 64)."""
    s = _shift(s, "shiftl")
    return a << s if s >= 0 else a >> -s


@attrs.frozen(repr=False)
class Swizzle:
    """``Sw<B,M,S>``: XOR the ``B`` bits at ``M + max(S,0)`` into the ``B`` bits at ``M - min(S,0)``.

    ``Swizzle(B,M,S)(x) == x ^ ((x & yyy_mask) >> S)`` (a left shift for negative ``S``); an involution.
    """

    bits: int
    base: int
    shift: int

    def __attrs_post_init__(self):
        for name in ("bits", "base", "shift"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"Swizzle: {name}"))
        if self.bits < 0 or self.base < 0:
            raise LayoutError(f"Swizzle({self.bits},{self.base},{self.shift}): B and M must be non-negative")
        if self.bits + self.base + abs(self.shift) > MAX_SWIZZLE_BITS:
            raise LayoutError(f"Swizzle({self.bits},{self.base},{self.shift}) reaches address bit "
                              f"{self.bits + self.base + abs(self.shift)}; swizzles act on offsets below "
                              f"2^{MAX_SWIZZLE_BITS}")
        if self.bits == 0:             # every Sw<0,M,S> is the identity; CuTe spells it Sw<0,4,3>
            object.__setattr__(self, "base", 4)
            object.__setattr__(self, "shift", 3)
        if abs(self.shift) < self.bits:
            raise LayoutError(f"Swizzle({self.bits},{self.base},{self.shift}): |S| must be at least B, or the "
                              f"source and destination bit ranges overlap and the map is not an involution")

    @property
    def yyy_mask(self) -> int:
        """The source bits (XORed into the destination bits)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def zzz_mask(self) -> int:
        """The destination bits."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    yyy_msk = yyy_mask      # CUTLASS pycute's names
    zzz_msk = zzz_mask

    def __call__(self, offset: Offsets) -> Offsets:
        return offset ^ shiftr(offset & self.yyy_mask, self.shift)

    def size(self) -> int:
        """Extent of the domain the swizzle permutes (a power of two)."""
        return 1 << (self.base + abs(self.shift) + self.bits)

    def cosize(self) -> int:
        """A swizzle permutes its domain: the codomain has the same extent."""
        return self.size()

    def compose(self, B: LayoutLike) -> "ComposedLayout":
        """``Swizzle o B`` as a ComposedLayout."""
        return ComposedLayout(self, 0, _as_layout(tuplify(B) if isinstance(B, list) else B, "composition"))

    def __repr__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    __str__ = __repr__


@attrs.frozen(repr=False)
class ComposedLayout(ComposedBase):
    """``outer o offset o inner``: ``CL(c) == outer(offset + inner(c))``; shaped like ``inner``."""

    outer: "Swizzle | Layout"   # a swizzle, or a layout (CuTe composes either)
    offset: Any                 # an integer, or a ScaledBasis offset
    inner: Layout

    def __attrs_post_init__(self):
        if not isinstance(self.inner, Layout):
            object.__setattr__(self, "inner", _as_layout(self.inner, "ComposedLayout"))
        if type(self.offset) is not int and not isinstance(self.offset, ScaledBasis):
            object.__setattr__(self, "offset", as_int(self.offset, "ComposedLayout: the offset"))
        if not isinstance(self.outer, (Swizzle, Layout, ComposedBase)):
            raise TypeError(f"ComposedLayout: outer must be a Swizzle or a layout, got {self.outer!r}")

    @property
    def layoutB(self) -> "Swizzle | Layout":
        """CUTLASS pycute's name for ``outer``."""
        return self.outer

    @property
    def layoutA(self) -> Layout:
        """CUTLASS pycute's name for ``inner``."""
        return self.inner

    @property
    def stride(self) -> Any:
        return self.inner.stride

    def cosize(self) -> int:
        """The codomain's extent: that of ``outer`` (a swizzle's domain, or a layout's cosize)."""
        return self.outer.cosize()

    def __len__(self) -> int:
        return self.inner.rank()

    def __getitem__(self, i):
        return ComposedLayout(self.outer, self.offset, self.inner[i])

    def with_inner(self, inner: Layout, extra_offset: int | ScaledBasis = 0) -> "ComposedLayout":
        return ComposedLayout(self.outer, self.offset + extra_offset, inner)

    def compose(self, B: LayoutLike) -> AnyLayout:
        from .composition import composition
        return self.with_inner(composition(self.inner, B))

    def __call__(self, *args: IntTuple | None) -> Any:
        crd = args[0] if len(args) == 1 else args
        if has_none(crd):
            return slice_and_offset(crd, self)[0]
        return self.outer(self.offset + self.inner(crd))

    def __repr__(self) -> str:
        return f"{self.outer!r} o {self.offset} o {self.inner!r}"

    __str__ = __repr__
