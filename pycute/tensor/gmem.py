"""Global-memory tensors: a dtype, a layout in elements from the base pointer, and what the caller guarantees of the
base's alignment. Integer strides only; slicing keeps the offset, as for the other memory spaces."""
from __future__ import annotations

import attrs

from ..dtypes import DType, DTypeLike, element_dtype
from ..errors import PlanError
from ..int_tuple import as_int, flatten, is_int
from ..layout import Layout
from .region import DynamicIndex, Region

__all__ = ["GlobalTensor", "make_global_tensor"]


@attrs.frozen(repr=False, cache_hash=True)
class GlobalTensor(Region):
    """A region of a global-memory array: element ``c`` lives at element ``offset + layout(c)`` from the base
    pointer, which is ``base_align``-byte aligned."""

    dtype: DType
    layout: Layout
    offset: int = 0
    base_align: int = 16
    dynamic: tuple[DynamicIndex, ...] = ()         # DynamicIndex per run-time coordinate

    KIND = "global-memory tensor"
    SPACE = "global"

    def __repr__(self) -> str:
        return f"gmem<{self.dtype.name}>[{self.offset} o {self.layout!r}]{self._dynamic_repr()}"


def make_global_tensor(dtype: DTypeLike, layout: Layout, base_align: int = 16) -> GlobalTensor:
    """A global-memory tensor over a base pointer aligned to ``base_align`` bytes (a power of two)."""
    dt = element_dtype(dtype, "make_global_tensor")
    if not isinstance(layout, Layout):
        raise TypeError(f"make_global_tensor: the layout must be a Layout, got {type(layout).__name__}")
    for d in flatten(layout.stride):
        if not is_int(d):
            raise PlanError(f"global-memory layout {layout!r} has a non-integer stride {d!r}")
    base_align = as_int(base_align, "make_global_tensor: base_align")
    if base_align < 1 or base_align & (base_align - 1):
        raise PlanError(f"make_global_tensor: base_align {base_align} is not a power of two")
    return GlobalTensor(dt, layout, 0, base_align)
