"""TMA's other load modes, bit for bit where the PTX ISA defines them: im2col (#tensor-im2col-mode, sm_90), and
Blackwell's im2col::w / ::w::128 and tile::gather4 / scatter4 (#tensor-im2col-w-w128-modes,
#tensor-tiled-scatter4-gather4-modes, sm_100a). Each box lands as rows (a pixel's channels, a gathered row) at the
swizzle's row pitch, through the swizzle of the absolute address, as tile mode does; out-of-bounds elements load as
the map's fill. Where the ISA's text leaves the traversal open the model is marked [inferred] (docs/im2col.md)."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...arch.sm90.tma import NAN_FILL_UNIT, OOB_FILL_NAN
from ...arch.sm100.tma_modes import GATHER_ROWS, W128_GROUP, W128_PIXELS
from ...copy.tma.plan import DTYPE_BYTES
from ...errors import EmulationError
from ..machine import Machine

__all__ = ["TmaModesExecutor", "im2col_pixels"]


def im2col_pixels(params: Any, coords: tuple[int, ...], offsets: tuple[int, ...]) -> list[tuple[int, ...] | None]:
    """The pixels an im2col load reads, in order: ``(n, spatial..., innermost last)`` each, None out of bounds.
    From the first pixel's box position (``coords``, C first and N last), each step moves W by its traversal
    stride; past the box's end (``W + upper``) W returns to the box's lower corner and H steps, and so on to the
    next image; the pixel read is the box position plus the tap's ``offsets``."""
    spatial = len(params.lower)
    extents = params.global_dims[1:1 + spatial]
    images = params.global_dims[-1]
    lo = list(params.lower)
    hi = [e + u for e, u in zip(extents, params.upper)]
    step = params.element_strides[1:1 + spatial]
    pos, n = list(coords[1:1 + spatial]), coords[-1]
    for i in range(spatial):
        if not lo[i] <= pos[i] < hi[i] or (pos[i] - lo[i]) % step[i]:
            raise EmulationError(f"im2col: the first pixel's box position {tuple(pos)} is not a position of the box "
                                 f"[{tuple(lo)}, {tuple(hi)}) stepping {tuple(step)} (PTX: the filter base lies in the "
                                 f"bounding box)")
    out: list[tuple[int, ...] | None] = []
    for _ in range(params.pixels):
        at = [p + o for p, o in zip(pos, offsets)]
        inside = 0 <= n < images and all(0 <= a < e for a, e in zip(at, extents))
        out.append((n, *reversed(at)) if inside else None)
        for i in range(spatial):
            pos[i] += step[i]
            if pos[i] < hi[i]:
                break
            pos[i] = lo[i]
        else:
            n += 1
    return out


class TmaModesExecutor(Machine):
    """im2col, im2col::w, gather4 and scatter4 between a global byte array and a CTA's shared memory."""

    def _rows(self, swizzle: Any, row_elems: int, elem: int, rows: int, smem: int, cta: int) -> np.ndarray:
        """Shared byte indices (into the CTA's image) of ``rows`` box rows of ``row_elems`` elements each."""
        c = self.ctas[self._cta(cta)]
        if smem % 16:
            raise EmulationError(f"TMA: the box's shared address {smem:#x} is not 16-byte aligned")
        pitch = swizzle.row_pitch(row_elems * elem)
        linear = smem + np.arange(rows)[:, None] * pitch + np.arange(row_elems)[None, :] * elem
        sw = swizzle.byte_swizzle
        addresses = (sw(linear) if sw is not None else linear).reshape(-1)
        rel = addresses[:, None] - c.smem_base + np.arange(elem)[None, :]
        if rel.min() < 0 or rel.max() >= c.smem.size:
            raise EmulationError(f"TMA: the box reaches shared memory outside CTA {cta}'s "
                                 f"[{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        return rel

    @staticmethod
    def _gather(gmem: np.ndarray, starts: list[int | None], row_elems: int, first: int, extent: int, elem: int,
                oob_fill: int) -> np.ndarray:
        """Rows of ``row_elems`` elements from global byte offsets ``starts`` (None: out of bounds), elements from
        index ``first`` along a dimension of ``extent`` (past it: out of bounds)."""
        data = np.zeros((len(starts), row_elems, elem), dtype=np.uint8)
        if oob_fill == OOB_FILL_NAN:
            data[:] = np.frombuffer(NAN_FILL_UNIT * (elem // 2), dtype=np.uint8)
        for r, start in enumerate(starts):
            if start is None:
                continue
            for j in range(row_elems):
                if 0 <= first + j < extent:
                    at = start + (first + j) * elem
                    if at + elem > gmem.size:
                        raise EmulationError(f"TMA: an in-bounds element at byte {at} lies past the {gmem.size}-byte "
                                             f"array the tensor map describes")
                    data[r, j] = gmem[at:at + elem]
        return data.reshape(-1, elem)

    def tma_load_im2col(self, params: Any, gmem: np.ndarray, coords: tuple[int, ...], offsets: tuple[int, ...],
                        smem: int, cta: int = 0) -> int:
        """One ``.im2col`` load: ``params.pixels`` pixels of ``params.channels`` channels from channel
        ``coords[0]``; returns the bytes it delivers to the mbarrier."""
        elem = DTYPE_BYTES[params.dtype]
        strides = (elem,) + tuple(params.global_strides)
        starts = [None if p is None else sum(x * s for x, s in zip(reversed(p), strides[1:]))
                  for p in im2col_pixels(params, coords, offsets)]
        data = self._gather(gmem, starts, params.channels, coords[0], params.global_dims[0], elem, params.oob_fill)
        rel = self._rows(params.swizzle, params.channels, elem, params.pixels, smem, cta)
        self.ctas[self._cta(cta)].smem[rel] = data
        return params.box_bytes

    def tma_load_im2col_w(self, params: Any, gmem: np.ndarray, coords: tuple[int, ...], halo_offset: tuple[int, int],
                          smem: int, cta: int = 0) -> int:
        """One ``.im2col::w`` (``params.mode`` ``w``) or ``::w::128`` load [inferred, docs/im2col.md]: pixels along W
        from ``coords``' W plus ``wOffset``, traversal stride apart, D and H fixed; ``wHalo`` more pixels after the
        row (after every 32 for ::128), next to them in shared memory; pixels outside the tensor or past the box's
        end (``W + upper + wOffset``) load the fill. Returns the bytes delivered."""
        halo, offset = halo_offset
        elem = DTYPE_BYTES[params.dtype]
        pixels = W128_PIXELS if params.mode == "w128" else params.pixels
        group = W128_GROUP if params.mode == "w128" else pixels
        step, width = params.element_strides[1], params.global_dims[1]
        end = width + params.upper[0] + offset
        order = [g + k for g in range(0, pixels, group) for k in list(range(group)) + [group + j for j in range(halo)]]
        strides = (elem,) + tuple(params.global_strides)
        starts: list[int | None] = []
        for k in order:
            w = coords[1] + offset + k * step
            rest = coords[2:]
            inside = 0 <= w < min(width, end) and all(0 <= x < n for x, n in zip(rest, params.global_dims[2:]))
            starts.append(sum(x * s for x, s in zip((w, *rest), strides[1:])) if inside else None)
        data = self._gather(gmem, starts, params.channels, coords[0], params.global_dims[0], elem, params.oob_fill)
        rel = self._rows(params.swizzle, params.channels, elem, len(order), smem, cta)
        self.ctas[self._cta(cta)].smem[rel] = data
        return len(order) * params.channels * elem

    def _gather4_rows(self, params: Any, coords: tuple[int, ...]) -> tuple[list[int | None], int, int]:
        if len(coords) != 1 + GATHER_ROWS or params.rank != 2 or params.box[1] != 1:
            raise EmulationError(f"gather4/scatter4: a 2-D map whose box is one row and coordinates (col, row0..row3), "
                                 f"got box {params.box} and {coords}")
        elem = DTYPE_BYTES[params.dtype]
        rows = params.global_dims[1]
        return ([r * params.global_strides[0] if 0 <= r < rows else None for r in coords[1:]], elem, params.box[0])

    def tma_gather4(self, params: Any, gmem: np.ndarray, coords: tuple[int, ...], smem: int, cta: int = 0) -> int:
        """``.tile::gather4``: rows ``coords[1:]`` from column ``coords[0]``, one box row each; the bytes delivered."""
        starts, elem, width = self._gather4_rows(params, coords)
        data = self._gather(gmem, starts, width, coords[0], params.global_dims[0], elem, params.oob_fill)
        self.ctas[self._cta(cta)].smem[self._rows(params.swizzle, width, elem, GATHER_ROWS, smem, cta)] = data
        return GATHER_ROWS * width * elem

    def tma_scatter4(self, params: Any, gmem: np.ndarray, coords: tuple[int, ...], smem: int, cta: int = 0) -> None:
        """``.tile::scatter4``: the box's four rows into rows ``coords[1:]`` from column ``coords[0]``; elements
        outside the array are dropped (a store's 16-byte units whole, as tile mode)."""
        if min(coords) < 0:
            raise EmulationError(f"scatter4 at {coords}: a store's coordinates are non-negative (PTX)")
        starts, elem, width = self._gather4_rows(params, coords)
        rel = self._rows(params.swizzle, width, elem, GATHER_ROWS, smem, cta).reshape(GATHER_ROWS, width, elem)
        image = self.ctas[self._cta(cta)].smem
        limit = -(-params.global_dims[0] * elem // 16) * 16 // elem
        for r, start in enumerate(starts):
            if start is None:
                continue
            for j in range(width):
                if coords[0] + j < limit:
                    at = start + (coords[0] + j) * elem
                    gmem[at:at + elem] = image[rel[r, j]]
