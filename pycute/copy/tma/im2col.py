"""make_im2col_copy: a CTA's tile of a convolution's implicit-GEMM A matrix (``BM`` output pixels x ``BK`` of the
``taps x C`` columns) from TMA im2col loads (PTX ISA #tensor-im2col-mode).

The map describes the activations (dims C, W, H, D, N innermost first) with the bounding box of the filter's base
positions: lower corner ``-pad``, upper corner ``pad - dilation (filter - 1)`` per spatial dimension (so the box
holds exactly the output positions, ``stride`` apart: the traversal stride); an instruction names the first
output pixel's base position and the tap's offsets ``filter position x dilation``, and loads ``pixels`` pixels of
``channels`` channels, one per shared row, wrapping to the next row, plane and image at the box's end. A K tile
lies inside one tap or covers whole taps, so each instruction's channels are one tap's."""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs
import numpy as np

from ...arch.sm80.cache import CachePolicy, cache_policy
from ...arch.sm90.tma import (DATA_TYPES, GLOBAL_ALIGN, INNER_BOX_ALIGN, MAX_BOX, SMEM_ALIGN, STRIDE_ALIGN,
                              STRIDE_LIMIT, TMA_TARGETS, TX_LIMIT, L2Promotion, OobFill, TmaSwizzle,
                              l2_promotion_code)
from ...arch.sm90.tma_im2col import (CORNER_RANGE, MAX_CHANNELS, MAX_PIXELS, MAX_TRAVERSAL_STRIDE, OFFSET_LIMIT,
                                     im2col_ptx)
from ...atoms.tma import TmaIssue
from ...errors import PlanError
from ...int_tuple import as_int, flatten
from ...tensor.gmem import GlobalTensor
from ...tensor.smem import SmemTensor
from ...tensor.tile import layout_modes
from ...views import view
from ..protocol import ArrayTilePlan
from .conv import ConvProblem
from .params import DTYPE_BYTES, smem_capacity
from .planner import _swizzle
from .rules import check_fill

__all__ = ["Im2colMapParams", "Im2colInstruction", "Im2colPlan", "make_im2col_copy", "tile_offsets"]

Im2colMode = Literal["im2col", "w", "w128"]


@attrs.frozen
class Im2colMapParams:
    """``cuTensorMapEncodeIm2col``'s arguments but the address (``cuTensorMapEncodeIm2colWide``'s for the W
    modes), dimension 0 (the channels) first: ``lower`` and ``upper`` the box's corners per spatial dimension,
    innermost (W) first; ``element_strides`` the traversal strides (1 for C and N)."""

    dtype: str
    data_type: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    lower: tuple[int, ...]
    upper: tuple[int, ...]
    channels: int
    pixels: int
    element_strides: tuple[int, ...]
    swizzle: TmaSwizzle
    l2_promotion: int = 2
    oob_fill: int = 0
    mode: Im2colMode = "im2col"

    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def box_bytes(self) -> int:
        """Bytes one instruction delivers (the W modes' halo pixels aside)."""
        return self.pixels * self.channels * DTYPE_BYTES[self.dtype]

    def encode(self, global_address: int) -> Any:
        """The ``CUtensorMap`` for activations at ``global_address`` through the CUDA driver (CompileError without
        one; the W modes need compute capability 10.0)."""
        from ...compile.runtime import encode_im2col_map
        return encode_im2col_map(self, as_int(global_address, "tensor_map: global_address"))


@attrs.frozen
class Im2colInstruction:
    """One load: the tile's rows from ``m_offset`` (``pixels`` of them), its columns from ``k_offset`` (``channels``)
    and the shared byte offset of that box from the tile's buffer base."""

    m_offset: int
    k_offset: int
    smem_offset: int


@attrs.frozen(repr=False)
class Im2colPlan(ArrayTilePlan):
    """A validated im2col load of tile ``(m_tile, k_tile)`` of the implicit GEMM's A matrix of ``conv`` into the
    shared tile ``smem`` (mode 0: A's rows, mode 1: its columns): ``instructions`` per tile, each ``pixels x
    channels``; the mbarrier expects ``expect_tx`` bytes (out-of-bounds parts included)."""

    gmem: GlobalTensor
    smem: SmemTensor
    conv: ConvProblem
    tensor_map: Im2colMapParams
    instructions: tuple[Im2colInstruction, ...]
    ptx: str
    cache_hint: CachePolicy | None = None
    direction: str = attrs.field(default="load", init=False)

    VARIANT: ClassVar[str] = "tma_im2col"

    @property
    def rejected(self) -> tuple:
        return ()

    @property
    def lower_bound(self) -> int:
        """One instruction per tap the tile's columns span (a box holds one tap's channels)."""
        return max(1, self.tile_shape[1] // self.conv.channels)

    @property
    def tiles(self) -> tuple[int, int]:
        """Tiles of A per mode (m tiles past the last pixel load zeros; k tiles cover the taps exactly)."""
        return -(-self.conv.m // self.tile_shape[0]), self.conv.k // self.tile_shape[1]

    @property
    def expect_tx(self) -> int:
        return self.tensor_map.box_bytes * len(self.instructions)

    def coords(self, m_tile: int, k_tile: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Every instruction's ``(tensor coordinates (c, w, h, d, n innermost first), im2col offsets)``."""
        m_tile, k_tile = as_int(m_tile, "im2col: m_tile"), as_int(k_tile, "im2col: k_tile")
        if m_tile < 0 or not 0 <= k_tile < self.tiles[1]:
            raise PlanError(f"im2col: tile ({m_tile}, {k_tile}): the m tile is non-negative and the k tile in "
                            f"[0, {self.tiles[1]})")
        conv, bm, bk = self.conv, self.tile_shape[0], self.tile_shape[1]
        out = []
        for i in self.instructions:
            n, pos = conv.pixel(m_tile * bm + i.m_offset)
            tap, c = divmod(k_tile * bk + i.k_offset, conv.channels)
            f = conv.tap(tap)
            base = [o * s - p for o, s, p in zip(pos, conv.stride, conv.padding)]
            offsets = [t * d for t, d in zip(f, conv.dilation)]
            out.append(((c, *reversed(base), n), tuple(reversed(offsets))))
        return out

    def stream(self, smem_base: int, m_tile: int, k_tile: int) -> list[TmaIssue]:
        """``TmaIssue(ptx, coords, smem, im2col=offsets)`` per instruction for the buffer at ``smem_base``."""
        smem_base = self.smem_base(smem_base)
        return [TmaIssue(self.ptx, c, smem_base + i.smem_offset, None, self.cache_hint, o)
                for i, (c, o) in zip(self.instructions, self.coords(m_tile, k_tile))]

    def cuda(self, name: str = "pycute_im2col_copy") -> str:
        """``name(const void* map, unsigned smem, unsigned mbar, int m_tile, int k_tile)`` issuing the tile's
        loads from one elected thread (arm ``mbar`` with ``name_expect_tx`` bytes)."""
        return view("cuda", self, name)

    def verify(self, seed: int = 0) -> None:
        """Emulate the loads of several tiles and compare with a numpy im2col of the same activations."""
        view("verify", self, seed=seed)

    def explain(self) -> str:
        m, conv = self.tensor_map, self.conv
        lines = [f"TMA im2col load plan: {self.gmem!r} -> {self.smem!r}",
                 f"  conv        N {conv.batch}, spatial {conv.spatial}, C {conv.channels}, filter {conv.filter}, "
                 f"padding {conv.padding}, stride {conv.stride}, dilation {conv.dilation} -> output {conv.output}; "
                 f"A is {conv.m} x {conv.k} (k = tap x {conv.channels} + channel)",
                 f"  instruction {self.ptx}",
                 f"  tensor map  {m.dtype} dims {m.global_dims}, strides {m.global_strides} B, corners {m.lower} .. "
                 f"{m.upper} (W first), traversal strides {m.element_strides}, {m.pixels} pixels x {m.channels} "
                 f"channels, swizzle {m.swizzle.name}",
                 f"  count       {len(self.instructions)} per tile of {self.tile_shape}; lower bound {self.lower_bound}",
                 f"  expect_tx   {self.expect_tx} B per tile (full boxes, out-of-bounds parts included)",
                 f"  tiles       {self.tiles} (m, k); rows past A's {conv.m} load zeros"]
        if self.cache_hint is not None:
            lines.append(f"  cache hint  .L2::cache_hint with createpolicy {self.cache_hint}")
        lines += [f"    rows +{i.m_offset}, columns +{i.k_offset}: smem +{i.smem_offset}" for i in self.instructions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Im2colPlan({len(self.instructions)} x {self.tensor_map.pixels} pixels x "
                f"{self.tensor_map.channels} channels, expect_tx {self.expect_tx} B)")


def tile_offsets(smem: SmemTensor) -> np.ndarray:
    """The tile's element offsets from the buffer base before the swizzle, as an array indexed ``[row, column]``."""
    shape, stride = flatten(smem.layout.shape), flatten(smem.layout.stride)
    size = int(np.prod(shape))
    idx = np.arange(size, dtype=np.int64)
    offsets = np.full(size, smem.offset, dtype=np.int64)
    prefix = 1
    for n, d in zip(shape, stride):
        offsets += (idx // prefix) % n * d
        prefix *= n
    rows = int(np.prod(flatten(layout_modes(smem.layout)[0][0])))
    return offsets.reshape(-1, rows).T


def _check_activations(gmem: GlobalTensor, conv: ConvProblem, elem: int, where: str) -> list[tuple[int, int]]:
    """The activations' modes (N, spatial..., C), checked against the problem and the encoder's rules."""
    if gmem.offset != 0 or gmem.dynamic:
        raise PlanError(f"make_im2col_copy: give the whole activations (offset 0, no run-time index){where}")
    modes = [(int(n), int(d)) for n, d in layout_modes(gmem.layout)]
    want = (conv.batch, *conv.spatial, conv.channels)
    if tuple(n for n, _ in modes) != want:
        raise PlanError(f"make_im2col_copy: the activations' extents are {tuple(n for n, _ in modes)}; the problem's "
                        f"(N, {'D, H, W'[-3 * len(conv.spatial) + 1:] if len(conv.spatial) > 1 else 'W'}, C) are "
                        f"{want}{where}")
    if modes[-1][1] != 1:
        raise PlanError(f"make_im2col_copy: the channels are not contiguous (stride {modes[-1][1]}); im2col reads "
                        f"NWC / NHWC / NDHWC activations{where}")
    for k, (n, d) in enumerate(modes[:-1]):
        if n > 1 and ((d * elem) % STRIDE_ALIGN or not 0 < d * elem < STRIDE_LIMIT):
            raise PlanError(f"make_im2col_copy: activations mode {k} has a stride of {d * elem} B; a tensor map stride "
                            f"is a positive multiple of {STRIDE_ALIGN} B below 2^40{where}")
    if gmem.base_align % GLOBAL_ALIGN:
        raise PlanError(f"make_im2col_copy: the activations' base is aligned to {gmem.base_align} B; a tensor map "
                        f"needs {GLOBAL_ALIGN}{where}")
    return modes


def _box(bm: int, bk: int, conv: ConvProblem, mode: TmaSwizzle, elem: int, where: str) -> tuple[int, int]:
    """``(pixels, channels)`` of one instruction: the most pixels dividing the tile's rows, the most channels of
    one tap dividing the tile's columns that a row takes (the swizzle's span, 256)."""
    pixels = next(p for p in range(min(bm, MAX_PIXELS), 0, -1) if bm % p == 0)
    limit = min(MAX_CHANNELS, (mode.span if mode.byte_swizzle is not None else MAX_BOX * elem) // elem, bk,
                conv.channels)
    channels = next((c for c in range(limit, 0, -1) if bk % c == 0 and conv.channels % c == 0 and
                     (c * elem) % INNER_BOX_ALIGN == 0), None)
    if channels is None or (conv.channels % bk and bk % conv.channels):
        raise PlanError(f"make_im2col_copy: the tile's {bk} columns neither lie inside one tap's {conv.channels} "
                        f"channels nor cover whole taps with rows of whole 16-byte units (at most {limit} channels "
                        f"a row){where}")
    return pixels, channels


def _corners(conv: ConvProblem, rank: int, where: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The box's corners (W first): the filter base positions of the output pixels."""
    lower = tuple(-p for p in reversed(conv.padding))
    upper = tuple(p - d * (f - 1) for p, d, f in zip(reversed(conv.padding), reversed(conv.dilation),
                                                      reversed(conv.filter)))
    lo, hi = CORNER_RANGE[rank]
    if not all(lo <= v <= hi for v in lower + upper):
        raise PlanError(f"make_im2col_copy: the box's corners {lower} .. {upper} (padding, filter and dilation) lie "
                        f"outside [{lo}, {hi}], the range a {rank}-D map holds{where}")
    reach = max((f - 1) * d for f, d in zip(conv.filter, conv.dilation))
    if reach > OFFSET_LIMIT[rank]:
        raise PlanError(f"make_im2col_copy: the last tap lies {reach} elements from the first; a {rank}-D im2col "
                        f"offset is at most {OFFSET_LIMIT[rank]}{where}")
    if max(conv.stride) > MAX_TRAVERSAL_STRIDE:
        raise PlanError(f"make_im2col_copy: stride {conv.stride}: a traversal stride is at most "
                        f"{MAX_TRAVERSAL_STRIDE}{where}")
    return lower, upper


def _instructions(smem: SmemTensor, pixels: int, channels: int, mode: TmaSwizzle, elem: int,
                  where: str) -> list[Im2colInstruction]:
    """One box per (row block, column block) of the tile, each ``pixels`` rows at the row pitch with ``channels``
    contiguous elements, starting on a 128-byte boundary."""
    offsets = tile_offsets(smem)
    bm, bk = offsets.shape
    pitch = mode.row_pitch(channels * elem) // elem
    want = np.arange(pixels)[:, None] * pitch + np.arange(channels)[None, :]
    out = []
    for k0 in range(0, bk, channels):
        for m0 in range(0, bm, pixels):
            block = offsets[m0:m0 + pixels, k0:k0 + channels]
            start = int(block[0, 0])
            if not np.array_equal(block - start, want):
                raise PlanError(f"make_im2col_copy: the tile's rows {m0}.. x columns {k0}.. are not {pixels} rows of "
                                f"{channels} contiguous elements {pitch} apart, the box TMA writes (one pixel a "
                                f"row){where}")
            if (start * elem) % SMEM_ALIGN:
                raise PlanError(f"make_im2col_copy: a box would start {start * elem} B into the buffer; TMA boxes start "
                                f"on {SMEM_ALIGN}-byte boundaries{where}")
            out.append(Im2colInstruction(m0, k0, start * elem))
    return out


def make_im2col_copy(dst: SmemTensor, src: GlobalTensor, conv: ConvProblem, oob_fill: OobFill = "zero",
                     l2_promotion: L2Promotion = "128B", cache_hint: str | CachePolicy | None = None) -> Im2colPlan:
    """Plan the im2col loads of one tile of ``conv``'s implicit-GEMM A matrix: ``src`` the whole activations (N,
    spatial..., C, channels contiguous), ``dst`` the shared tile (mode 0 A's rows, mode 1 its columns; the
    swizzle is the tile's, each row one pixel's channels). The generated code takes ``(m_tile, k_tile)``; rows past
    the last output pixel load zeros. PlanError names the rule a problem or tile breaks."""
    if not isinstance(dst, SmemTensor) or not isinstance(src, GlobalTensor) or not isinstance(conv, ConvProblem):
        raise TypeError(f"make_im2col_copy: a shared tile, the global activations and a ConvProblem, got "
                        f"{type(dst).__name__}, {type(src).__name__}, {type(conv).__name__}")
    where = f"\n  activations: {src!r}\n  tile: {dst!r}\n  conv: {conv}"
    if src.dtype != dst.dtype or src.dtype.name not in DATA_TYPES:
        raise PlanError(f"make_im2col_copy: a tensor map of {src.dtype.name} into a {dst.dtype.name} tile{where}")
    elem = DTYPE_BYTES[src.dtype.name]
    rank = len(conv.spatial) + 2
    modes = _check_activations(src, conv, elem, where)
    if len(layout_modes(dst.layout)) != 2 or dst.dynamic:
        raise PlanError(f"make_im2col_copy: the tile has two modes (A's rows, A's columns) and no run-time index{where}")
    mode = _swizzle(dst, elem, where)
    if dst.base_align % max(SMEM_ALIGN, mode.repeat):
        raise PlanError(f"make_im2col_copy: the buffer is aligned to {dst.base_align} B; a {mode.name}-swizzled box "
                        f"needs {max(SMEM_ALIGN, mode.repeat)}{where}")
    bm, bk = tile_offsets(dst).shape
    if conv.k % bk:
        raise PlanError(f"make_im2col_copy: A has {conv.k} columns ({conv.taps} taps x {conv.channels}); the tile's "
                        f"{bk} must divide them{where}")
    pixels, channels = _box(bm, bk, conv, mode, elem, where)
    lower, upper = _corners(conv, rank, where)
    fill = check_fill(oob_fill, "load", src.dtype.name, where)
    dims = tuple(n for n, _ in reversed(modes))
    strides = tuple(d * elem for _, d in reversed(modes[:-1]))
    params = Im2colMapParams(src.dtype.name, DATA_TYPES[src.dtype.name], dims, strides, lower, upper, channels, pixels,
                             (1, *reversed(conv.stride), 1), mode, l2_promotion_code(l2_promotion, "make_im2col_copy"),
                             fill)
    hint = cache_policy(cache_hint, "make_im2col_copy")
    plan = Im2colPlan(src, dst, conv, params, tuple(_instructions(dst, pixels, channels, mode, elem, where)),
                      im2col_ptx(rank, hint is not None), hint)
    if plan.expect_tx > TX_LIMIT:
        raise PlanError(f"make_im2col_copy: one tile is {plan.expect_tx} B; an mbarrier phase counts at most "
                        f"{TX_LIMIT}{where}")
    reach = (int(tile_offsets(dst).max()) + 1) * elem
    capacity, target = smem_capacity(TMA_TARGETS)
    if reach > capacity:
        raise PlanError(f"make_im2col_copy: the tile reaches {reach} B of shared memory from the buffer base; a CTA has "
                        f"at most {capacity} B on {target}{where}")
    return plan
