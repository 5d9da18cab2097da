"""Blackwell's TMA load modes (sm_100a; planned, compiled and emulated, not run: no Blackwell GPU here).

* ``make_im2col_w_copy``: ``.im2col::w`` / ``::w::128`` loads of one row of a convolution's activations: pixels
  along W from a base position (D and H fixed by the coordinates), ``w_offset`` (the tap along W, dilation
  included) moving the window, ``w_halo`` extra pixels after the row (after every 32 pixels for ``::128``), each
  pixel a shared row of one tap's channels.
* ``make_tma_gather4``: ``.tile::gather4`` loads four rows of a 2-D array at one column into four shared rows, or
  ``.tile::scatter4`` stores them (the dst/src order picks the direction).

Both take run-time coordinates (the W base and the channel, the column and the four rows)."""
from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from ...arch.sm100.tma_modes import (GATHER_ROWS, TMA_MODE_TARGETS, W128_GROUP, W128_PIXELS, WHALO_LIMIT,
                                     WOFFSET_LIMIT, WideMode, gather4_ptx, im2col_w_ptx, scatter4_ptx)
from ...arch.sm90.tma import DATA_TYPES, INNER_BOX_ALIGN, MAX_BOX, SMEM_ALIGN, TX_LIMIT
from ...arch.sm90.tma_im2col import MAX_CHANNELS, MAX_PIXELS
from ...atoms.tma import TmaIssue
from ...errors import PlanError
from ...int_tuple import as_int
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...views import view
from ..protocol import ArrayTilePlan, load_or_store
from .conv import ConvProblem
from .im2col import Im2colMapParams, _check_activations, _corners, tile_offsets
from .plan import DTYPE_BYTES, TensorMapParams
from .planner import _swizzle

__all__ = ["Im2colWPlan", "make_im2col_w_copy", "Gather4Plan", "make_tma_gather4"]


def _rows_at_pitch(smem: SmemTensor, rows: int, width: int, mode: Any, elem: int, who: str, where: str) -> int:
    """The tile's one box: ``rows`` rows of ``width`` contiguous elements at the swizzle's row pitch; its byte
    offset from the buffer base (128-byte aligned)."""
    offsets = tile_offsets(smem)
    pitch = mode.row_pitch(width * elem) // elem
    if offsets.shape != (rows, width):
        raise PlanError(f"{who}: the tile is {offsets.shape[0]} x {offsets.shape[1]}; the box is {rows} rows of "
                        f"{width}{where}")
    start = int(offsets[0, 0])
    if not np.array_equal(offsets - start, np.arange(rows)[:, None] * pitch + np.arange(width)[None, :]) or \
            (start * elem) % SMEM_ALIGN:
        raise PlanError(f"{who}: the tile is not {rows} rows of {width} contiguous elements {pitch} apart from a "
                        f"128-byte boundary, the box TMA writes{where}")
    return start * elem


@attrs.frozen(repr=False)
class Im2colWPlan(ArrayTilePlan):
    """An ``.im2col::w`` (``::w::128``) load of one row of pixels into ``smem`` (one pixel a row); the function
    takes the channel, the W base position, then H (D) and N."""

    gmem: GlobalTensor
    smem: SmemTensor
    conv: ConvProblem
    tensor_map: Im2colMapParams
    w_halo: int
    w_offset: int
    smem_offset: int
    ptx: str
    direction: str = attrs.field(default="load", init=False)

    VARIANT: ClassVar[str] = "tma_im2col_w"
    targets: ClassVar[tuple[str, ...]] = TMA_MODE_TARGETS

    @property
    def rows(self) -> int:
        """Shared rows one load fills: the pixels and their halo pixels."""
        if self.tensor_map.mode == "w128":
            return W128_PIXELS + W128_PIXELS // W128_GROUP * self.w_halo
        return self.tensor_map.pixels + self.w_halo

    @property
    def expect_tx(self) -> int:
        return self.rows * self.tensor_map.channels * self.elem_bytes

    def stream(self, smem_base: int, *coords: int) -> list[TmaIssue]:
        """The load for coordinates ``(c, w, h[, d], n)`` (innermost first)."""
        if len(coords) != self.tensor_map.rank:
            raise PlanError(f"im2col::w: {len(coords)} coordinates for a {self.tensor_map.rank}-D map")
        base = self.smem_base(smem_base)
        return [TmaIssue(self.ptx, tuple(as_int(c, "coordinate") for c in coords), base + self.smem_offset, None, None,
                         (self.w_halo, self.w_offset))]

    def cuda(self, name: str = "pycute_im2col_w_copy") -> str:
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m = self.tensor_map
        return "\n".join([f"TMA im2col::{'w::128' if m.mode == 'w128' else 'w'} load plan (sm_100a): {self.gmem!r} -> "
                          f"{self.smem!r}",
                          f"  instruction {self.ptx}",
                          f"  tensor map  {m.dtype} dims {m.global_dims}, W corners {m.lower[0]} .. {m.upper[0]}, "
                          f"traversal {m.element_strides[1]}, {m.channels} channels a pixel",
                          f"  rows        {self.rows} (pixels and wHalo {self.w_halo}); wOffset {self.w_offset}",
                          f"  expect_tx   {self.expect_tx} B"])

    def __repr__(self) -> str:
        return f"Im2colWPlan({self.tensor_map.mode}, {self.rows} rows x {self.tensor_map.channels}, halo {self.w_halo})"


def make_im2col_w_copy(dst: SmemTensor, src: GlobalTensor, conv: ConvProblem, mode: WideMode = "w",
                       w_halo: int = 0, w_offset: int = 0) -> Im2colWPlan:
    """Plan an ``.im2col::w`` (``mode="w"``: as many pixels as the tile has rows less ``w_halo``) or
    ``::w::128`` load (128 pixels, ``w_halo`` after every 32) of ``conv``'s activations ``src`` into ``dst`` (one
    pixel's channels a row; 64B or 128B swizzle, as the ISA requires)."""
    if not isinstance(dst, SmemTensor) or not isinstance(src, GlobalTensor) or not isinstance(conv, ConvProblem):
        raise TypeError("make_im2col_w_copy: a shared tile, the global activations and a ConvProblem")
    where = f"\n  activations: {src!r}\n  tile: {dst!r}"
    if mode not in WHALO_LIMIT:
        raise PlanError(f"make_im2col_w_copy: mode={mode!r}: 'w' or 'w128'")
    w_halo, w_offset = as_int(w_halo, "w_halo"), as_int(w_offset, "w_offset")
    if not 0 <= w_halo < WHALO_LIMIT[mode] or not 0 <= w_offset < WOFFSET_LIMIT:
        raise PlanError(f"make_im2col_w_copy: wHalo {w_halo} in [0, {WHALO_LIMIT[mode]}) and wOffset {w_offset} in "
                        f"[0, {WOFFSET_LIMIT}) (PTX ISA){where}")
    elem = DTYPE_BYTES[src.dtype.name]
    modes = _check_activations(src, conv, elem, where)
    swizzle = _swizzle(dst, elem, where)
    if swizzle.name not in ("64B", "128B"):
        raise PlanError(f"make_im2col_w_copy: the W modes need the 64B or 128B swizzle, not {swizzle.name} (PTX ISA "
                        f"#tensor-im2col-w-w128-modes){where}")
    rows, channels = tile_offsets(dst).shape
    pixels = W128_PIXELS if mode == "w128" else rows - w_halo
    want = W128_PIXELS + W128_PIXELS // W128_GROUP * w_halo if mode == "w128" else rows
    if rows != want or not 0 < pixels <= MAX_PIXELS or channels > MAX_CHANNELS or \
            (channels * elem) % INNER_BOX_ALIGN or conv.channels % channels:
        raise PlanError(f"make_im2col_w_copy: a {rows} x {channels} tile for {pixels} pixels and {w_halo} halo pixels "
                        f"of whole 16-byte rows of one tap's channels ({conv.channels}){where}")
    lower, upper = _corners(conv, len(conv.spatial) + 2, where)
    params = Im2colMapParams(src.dtype.name, DATA_TYPES[src.dtype.name], tuple(n for n, _ in reversed(modes)),
                             tuple(d * elem for _, d in reversed(modes[:-1])), lower, upper, channels, pixels,
                             (1, *reversed(conv.stride), 1), swizzle, mode=mode)
    offset = _rows_at_pitch(dst, rows, channels, swizzle, elem, "make_im2col_w_copy", where)
    plan = Im2colWPlan(src, dst, conv, params, w_halo, w_offset, offset, im2col_w_ptx(params.rank, mode))
    if plan.expect_tx > TX_LIMIT:
        raise PlanError(f"make_im2col_w_copy: {plan.expect_tx} B exceed an mbarrier phase's count{where}")
    return plan


@attrs.frozen(repr=False)
class Gather4Plan(ArrayTilePlan):
    """``.tile::gather4`` (a load) or ``.tile::scatter4`` (a store) of four rows at one column between a 2-D
    array and a four-row shared tile; the function takes the column and the four rows."""

    direction: str
    gmem: GlobalTensor
    smem: SmemTensor
    tensor_map: TensorMapParams
    smem_offset: int
    ptx: str

    VARIANT: ClassVar[str] = "tma_gather4"
    targets: ClassVar[tuple[str, ...]] = TMA_MODE_TARGETS

    @property
    def expect_tx(self) -> int:
        return GATHER_ROWS * self.tensor_map.box_bytes if self.direction == "load" else 0

    def stream(self, smem_base: int, col: int, *rows: int) -> list[TmaIssue]:
        if len(rows) != GATHER_ROWS:
            raise PlanError(f"gather4/scatter4: {len(rows)} rows; the instruction takes {GATHER_ROWS}")
        coords = tuple(as_int(v, "coordinate") for v in (col, *rows))
        return [TmaIssue(self.ptx, coords, self.smem_base(smem_base) + self.smem_offset)]

    def cuda(self, name: str = "pycute_tma_gather4") -> str:
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m = self.tensor_map
        return "\n".join([f"TMA {'gather4 load' if self.direction == 'load' else 'scatter4 store'} plan (sm_100a): "
                          f"{self.src!r} -> {self.dst!r}", f"  instruction {self.ptx}",
                          f"  tensor map  {m.dtype} dims {m.global_dims}, strides {m.global_strides} B, box {m.box}, "
                          f"swizzle {m.swizzle.name}", f"  rows        {GATHER_ROWS} of {m.box[0]} elements"])

    def __repr__(self) -> str:
        return f"Gather4Plan({self.direction}, 4 rows x {self.tensor_map.box[0]})"


def make_tma_gather4(dst: GlobalTensor | SmemTensor, src: GlobalTensor | SmemTensor) -> Gather4Plan:
    """Plan a gather4 load (``src`` a 2-D array, ``dst`` a tile of four rows) or a scatter4 store (the reverse):
    each shared row one array row of the tile's width, from a run-time column."""
    direction, gmem, smem = load_or_store(dst, src, "make_tma_gather4")
    where = f"\n  global: {gmem!r}\n  shared: {smem!r}"
    if gmem.dtype != smem.dtype or gmem.dtype.name not in DATA_TYPES:
        raise PlanError(f"make_tma_gather4: a tensor map of {gmem.dtype.name} and a {smem.dtype.name} tile{where}")
    elem = DTYPE_BYTES[gmem.dtype.name]
    shape, stride = gmem.layout.shape, gmem.layout.stride
    if not isinstance(shape, tuple) or len(shape) != 2 or stride[1] != 1 or (stride[0] * elem) % 16 or gmem.offset:
        raise PlanError(f"make_tma_gather4: gather4 reads a whole 2-D array, rows of contiguous elements 16-byte "
                        f"multiples apart{where}")
    swizzle = _swizzle(smem, elem, where)
    rows, width = tile_offsets(smem).shape
    if rows != GATHER_ROWS or width > MAX_BOX or (width * elem) % INNER_BOX_ALIGN or \
            (swizzle.byte_swizzle is not None and width * elem > swizzle.span):
        raise PlanError(f"make_tma_gather4: the tile is {rows} x {width}; gather4 moves {GATHER_ROWS} rows of at most "
                        f"{MAX_BOX} elements in whole 16-byte units (within the swizzle's row){where}")
    offset = _rows_at_pitch(smem, rows, width, swizzle, elem, "make_tma_gather4", where)
    params = TensorMapParams(gmem.dtype.name, DATA_TYPES[gmem.dtype.name], (int(shape[1]), int(shape[0])),
                             (int(stride[0]) * elem,), (width, 1), (1, 1), swizzle)
    return Gather4Plan(direction, gmem, smem, params, offset, gather4_ptx() if direction == "load" else scatter4_ptx())
