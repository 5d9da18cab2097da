"""A tensor's values as arrays: a layout evaluated at every index, and a shared-memory region's element offsets
and footprint (what the oracles, the emulator's checks and the harnesses read).
"""
from __future__ import annotations

import numpy as np

from ..basis import basis_get
from ..errors import PlanError
from ..int_tuple import flatten
from ..layout import Layout
from .smem import SmemTensor

__all__ = ["layout_values", "smem_element_offsets", "smem_bytes_needed"]

def layout_values(layout: Layout, axis: int | str | None = None) -> np.ndarray:
    """``[layout(i) for i in range(size)]`` as int64, vectorised; ``axis`` picks a scaled-basis component."""
    shapes, strides = flatten(layout.shape), flatten(layout.stride)
    idx = np.arange(layout.size(), dtype=np.int64)
    out = np.zeros_like(idx)
    prefix = 1
    for n, d in zip(shapes, strides):
        d = basis_get(d, axis) if axis is not None else d
        out += ((idx // prefix) % n) * d
        prefix *= n
    return out


def smem_element_offsets(src: SmemTensor) -> np.ndarray:
    """The (swizzled) element offset from the buffer base of every element of the region, in logical order."""
    if src.dynamic:
        raise PlanError("the tensor has run-time coordinates; give a value (tensor.at(...))")
    linear = src.offset + layout_values(src.layout)
    return src.swizzle(linear) if src.swizzle is not None else linear


def smem_bytes_needed(src: SmemTensor) -> int:
    """Bytes from the buffer base that cover every element the tensor can name (rounded to its swizzle period)."""
    hi = src.offset + int(layout_values(src.layout).max())
    nbytes = (hi + 1) * src.bits // 8 + 16
    return -(-nbytes // 1024) * 1024
