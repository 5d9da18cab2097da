"""A tile between a whole global array and a shared-memory region, element by element: the array's modes, the
tile's extent per mode, and every element's tile coordinate and shared byte address in a chosen mode order (what
the per-thread and bulk planners partition)."""
from __future__ import annotations

import numpy as np

from ..errors import PlanError
from ..int_tuple import is_int, product
from ..layout import Layout
from .gmem import GlobalTensor
from .smem import SmemTensor
from .values import smem_element_offsets

__all__ = ["layout_modes", "mode_extents", "whole_array_modes", "contiguous_mode", "tile_elements", "byte_runs"]


def layout_modes(layout: Layout) -> list[tuple]:
    """``[(shape, stride)]`` per top-level mode (a rank-1 layout has one)."""
    shape, stride = layout.shape, layout.stride
    return list(zip(shape, stride)) if isinstance(shape, tuple) else [(shape, stride)]


def mode_extents(layout: Layout) -> tuple[int, ...]:
    """The size of each top-level mode (a rank-1 layout has one)."""
    shape = layout.shape
    return tuple(product(m) for m in (shape if isinstance(shape, tuple) else (shape,)))


def whole_array_modes(gmem: GlobalTensor, who: str) -> list[tuple[int, int]]:
    """``[(extent, stride in elements)]`` per mode of a whole array (offset 0, no run-time index, flat modes)."""
    if gmem.offset != 0 or gmem.dynamic:
        raise PlanError(f"{who}: give the whole array (offset 0, no run-time index); the tile index picks the tile "
                        f"({gmem!r})")
    modes = layout_modes(gmem.layout)
    for k, (n, d) in enumerate(modes):
        if not (is_int(n) and is_int(d)):
            raise PlanError(f"{who}: array mode {k} {n}:{d} is hierarchical; give one extent and one stride per "
                            f"mode (reshape the array) ({gmem!r})")
    return [(int(n), int(d)) for n, d in modes]


def contiguous_mode(modes: list[tuple[int, int]]) -> int | None:
    """The array mode with stride 1 (and more than one element), or None."""
    return next((k for k, (n, d) in enumerate(modes) if d == 1 and n > 1), None)


def tile_elements(smem: SmemTensor, order: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """``(coords, smem_bytes)``: every tile element in colexicographic order over the modes ``order`` (its first
    mode fastest), as its coordinate per mode (``(N, rank)``) and its shared byte address from the buffer base
    (swizzled, the region's offset included). ``smem`` has no run-time index."""
    tile = mode_extents(smem.layout)
    n = product(tile)
    idx = np.arange(n, dtype=np.int64)
    coords = np.zeros((n, len(tile)), dtype=np.int64)
    prefix = 1
    for k in order:
        coords[:, k] = (idx // prefix) % tile[k]
        prefix *= tile[k]
    natural = np.zeros(n, dtype=np.int64)
    prefix = 1
    for k, extent in enumerate(tile):
        natural += coords[:, k] * prefix
        prefix *= extent
    return coords, smem_element_offsets(smem)[natural] * (smem.bits // 8)


def byte_runs(dst: np.ndarray, src: np.ndarray, elem: int) -> list[tuple[int, int, int]]:
    """``[(dst byte, src byte, bytes)]``: the maximal runs, in destination order, over which both addresses of
    consecutive elements advance by ``elem`` (what one flat copy can move)."""
    order = np.argsort(dst, kind="stable")
    d, s = dst[order], src[order]
    cut = np.flatnonzero((np.diff(d) != elem) | (np.diff(s) != elem)) + 1
    starts, ends = np.r_[0, cut], np.r_[cut, d.size]
    return [(int(d[a]), int(s[a]), int(b - a) * elem) for a, b in zip(starts, ends)]
