"""Shared-memory tensors: a dtype, a layout in elements (optionally under a ``Swizzle``), and a region of the buffer.

``make_smem_tensor(dtype, layout)`` takes a Layout or ``ComposedLayout(Swizzle, 0, Layout)`` whose offsets are
elements from the buffer base; ``base_align`` is what the caller guarantees of the buffer's address.
"""
from __future__ import annotations

import attrs

from ..dtypes import DType, DTypeLike, element_dtype
from ..errors import PlanError
from ..int_tuple import as_int
from ..layout import Layout
from ..swizzle import ComposedLayout, Swizzle
from .region import DynamicIndex, Region, check_int_strides

__all__ = ["SmemTensor", "make_smem_tensor"]

def _swizzle_and_layout(layout):
    if isinstance(layout, ComposedLayout):
        if not isinstance(layout.outer, Swizzle):
            raise PlanError(f"shared-memory layout {layout!r}: the outer function of a ComposedLayout must be a "
                            f"Swizzle")
        if layout.offset != 0:
            raise PlanError(f"shared-memory layout {layout!r}: the swizzle offset must be 0 (slice the tensor "
                            f"instead)")
        return layout.outer, layout.inner
    if isinstance(layout, Layout):
        return None, layout
    raise PlanError(f"shared-memory layout must be a Layout or ComposedLayout(Swizzle, 0, Layout), got {layout!r}")


@attrs.frozen(repr=False, cache_hash=True)   # a plan-cache key: hashed on every plan request
class SmemTensor(Region):
    """A region of a shared-memory buffer: element ``c`` lives at element ``swizzle(offset + layout(c))``."""

    dtype: DType
    layout: Layout
    swizzle: Swizzle | None = None
    offset: int = 0
    base_align: int = 1024
    dynamic: tuple[DynamicIndex, ...] = ()         # DynamicIndex per run-time coordinate

    KIND = "shared-memory tensor"
    SPACE = "shared"

    def element_offset(self, *crd: int) -> int:
        """The (swizzled) element offset of a coordinate from the buffer base."""
        linear = self.offset + self.layout(*crd)
        return self.swizzle(linear) if self.swizzle is not None else linear

    def __repr__(self) -> str:
        sw = f"{self.swizzle!r} o " if self.swizzle is not None else ""
        return f"smem<{self.dtype.name}>[{sw}{self.offset} o {self.layout!r}]{self._dynamic_repr()}"


def make_smem_tensor(dtype: DTypeLike, layout: Layout | ComposedLayout, base_align: int = 1024) -> SmemTensor:
    """A shared-memory tensor whose buffer base is aligned to ``base_align`` bytes."""
    dt = element_dtype(dtype, "make_smem_tensor")
    sw, inner = _swizzle_and_layout(layout)
    check_int_strides(inner, "shared-memory layout")
    base_align = as_int(base_align, "make_smem_tensor: base_align")
    if base_align < 16 or base_align & (base_align - 1):
        raise PlanError(f"base_align {base_align!r} must be a power of two of at least 16 bytes")
    return SmemTensor(dt, inner, sw, 0, base_align)
