"""An im2col plan in the emulator against numpy: the tile of the implicit GEMM's A that the emulated loads leave in
shared memory, read through the tile's layout, equals ``im2col_reference`` of the same activations (the fill where
a tap reads the padding or a row lies past the last output pixel), and the mbarrier receives ``expect_tx``."""
from __future__ import annotations

import numpy as np

from ..arch.sm90.tma import NAN_FILL_UNIT, OOB_FILL_NAN
from ..copy.tma.conv import im2col_reference
from ..copy.tma.im2col import Im2colPlan, tile_offsets
from ..copy.tma.modes100 import Gather4Plan, Im2colWPlan
from ..errors import EmulationError
from ..int_tuple import flatten
from .emulator import Sm90Emulator

__all__ = ["verify_im2col", "verify_im2col_w", "verify_gather4", "activations", "expected_tile", "tile_image"]


def activations(plan: Im2colPlan | Im2colWPlan, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(the activations' bytes from the base, its elements as (N, spatial..., C) unsigned words)``."""
    elem = plan.elem_bytes
    shape, stride = flatten(plan.gmem.layout.shape), flatten(plan.gmem.layout.stride)
    last = sum((n - 1) * d for n, d in zip(shape, stride))
    gmem = rng.integers(0, 256, -(-(last + 1) * elem // 16) * 16, dtype=np.uint8)
    index = np.zeros(tuple(shape), dtype=np.int64)
    for k, (n, d) in enumerate(zip(shape, stride)):
        index += (np.arange(n) * d).reshape([-1 if j == k else 1 for j in range(len(shape))])
    words = gmem.view(f"<u{elem}") if elem > 1 else gmem
    return gmem, words[index]


def expected_tile(plan: Im2colPlan, x: np.ndarray, m_tile: int, k_tile: int) -> np.ndarray:
    """The tile's elements (rows x columns, unsigned words) the loads must leave: A's, or the fill."""
    elem = plan.elem_bytes
    a = im2col_reference(plan.conv, x)
    inside = im2col_reference(plan.conv, np.ones_like(x)).astype(bool)
    fill = np.frombuffer(NAN_FILL_UNIT * (elem // 2), f"<u{elem}")[0] if plan.tensor_map.oob_fill == OOB_FILL_NAN \
        else 0
    a = np.where(inside, a, fill)
    bm, bk = plan.tile_shape
    out = np.full((bm, bk), fill, dtype=a.dtype)
    rows = a[m_tile * bm:(m_tile + 1) * bm, k_tile * bk:(k_tile + 1) * bk]
    out[:rows.shape[0]] = rows
    return out


def tile_image(plan: Im2colPlan | Im2colWPlan | Gather4Plan, smem: np.ndarray, base: int = 0) -> np.ndarray:
    """The tile's elements (rows x columns, unsigned words) read from a shared image through its layout."""
    elem = plan.elem_bytes
    offsets = tile_offsets(plan.smem)
    physical = plan.smem.swizzle(offsets) if plan.smem.swizzle is not None else offsets
    words = smem[base:].view(np.uint8)
    at = physical * elem
    raw = np.stack([words[at + b] for b in range(elem)], axis=-1)
    return raw.copy().view(f"<u{elem}")[..., 0] if elem > 1 else raw[..., 0]


def verify_im2col(plan: Im2colPlan, seed: int = 0) -> None:
    """Emulate the first, the last and a middle tile of A and compare with numpy; EmulationError at the first
    difference."""
    if not isinstance(plan, Im2colPlan):
        raise TypeError(f"verify_im2col: expected an Im2colPlan (make_im2col_copy), got {type(plan).__name__}")
    rng = np.random.default_rng(seed)
    gmem, x = activations(plan, rng)
    offsets = tile_offsets(plan.smem)
    smem_bytes = -(-(int(offsets.max()) + 1) * plan.elem_bytes // 1024) * 1024
    last = (plan.tiles[0] - 1, plan.tiles[1] - 1)
    for m_tile, k_tile in {(0, 0), last, (last[0] // 2, last[1] // 2), (last[0] + 1, 0)}:
        emu = Sm90Emulator(smem_bytes=smem_bytes)
        received = sum(emu.tma_load_im2col(plan.tensor_map, gmem, i.coords, i.im2col or (), i.smem)
                       for i in plan.stream(0, m_tile, k_tile))
        if received != plan.expect_tx:
            raise EmulationError(f"tile ({m_tile}, {k_tile}): the mbarrier receives {received} B, the plan expects "
                                 f"{plan.expect_tx} B")
        got, want = tile_image(plan, emu.ctas[0].smem), expected_tile(plan, x, m_tile, k_tile)
        if not np.array_equal(got, want):
            r, c = (int(v) for v in np.argwhere(got != want)[0])
            raise EmulationError(f"tile ({m_tile}, {k_tile}): A[{m_tile * plan.tile_shape[0] + r}, "
                                 f"{k_tile * plan.tile_shape[1] + c}] is {int(got[r, c]):#x} in shared memory, numpy's "
                                 f"im2col says {int(want[r, c]):#x}")


def _w_positions(plan: Im2colWPlan, w: int) -> list[int]:
    """The W position each shared row holds: the pixels traversal stride apart from ``w`` plus wOffset, with the
    wHalo pixels that continue them after the row (after every 32 for ::w::128) [inferred, docs/im2col.md]."""
    m = plan.tensor_map
    pixels = m.pixels
    group = 32 if m.mode == "w128" else pixels
    ks = [g + k for g in range(0, pixels, group) for k in [*range(group), *(group + j for j in range(plan.w_halo))]]
    return [w + plan.w_offset + k * m.element_strides[1] for k in ks]


def verify_im2col_w(plan: Im2colWPlan, seed: int = 0) -> None:
    """Emulate an im2col::w load at the row's first and a middle base position and compare every shared row with
    the activations' pixel the model names (zeros outside the image or past the box's end)."""
    rng = np.random.default_rng(seed)
    gmem, x = activations(plan, rng)
    m = plan.tensor_map
    offsets = tile_offsets(plan.smem)
    smem_bytes = -(-(int(offsets.max()) + 1) * plan.elem_bytes // 1024) * 1024
    width, end = m.global_dims[1], m.global_dims[1] + m.upper[0] + plan.w_offset
    for w in (m.lower[0], m.lower[0] + 2 * m.element_strides[1]):
        rest = [v // 2 for v in m.global_dims[2:-1]]          # the middle row of the middle plane
        coords = (0, w, *rest, m.global_dims[-1] - 1)
        emu = Sm90Emulator(smem_bytes=smem_bytes)
        received = emu.tma_load_im2col_w(m, gmem, coords, (plan.w_halo, plan.w_offset), plan.smem_offset)
        if received != plan.expect_tx:
            raise EmulationError(f"im2col::w at {coords}: {received} B delivered, the plan expects {plan.expect_tx}")
        got = tile_image(plan, emu.ctas[0].smem)
        for row, pos in enumerate(_w_positions(plan, w)):
            want = x[(coords[-1], *reversed(rest), pos)][:m.channels] if 0 <= pos < min(width, end) else 0
            if not np.array_equal(got[row], np.broadcast_to(want, got[row].shape)):
                raise EmulationError(f"im2col::w at {coords}: shared row {row} (W {pos}) differs from the activations")


def verify_gather4(plan: Gather4Plan, seed: int = 0) -> None:
    """Emulate a gather4 load (scatter4 store) of four rows, one past the array, and compare with the rows."""
    rng = np.random.default_rng(seed)
    m, elem = plan.tensor_map, plan.elem_bytes
    cols, rows = m.global_dims
    nbytes = -(-((rows - 1) * m.global_strides[0] + cols * elem) // 16) * 16
    gmem = rng.integers(0, 256, nbytes, dtype=np.uint8)
    offsets = tile_offsets(plan.smem)
    smem_bytes = -(-(int(offsets.max()) + 1) * elem // 1024) * 1024
    picks = [rows - 1, 0, rows, rows // 2]
    emu = Sm90Emulator(smem_bytes=smem_bytes)
    smem = rng.integers(0, 256, smem_bytes, dtype=np.uint8)
    emu.write_smem(0, smem)
    before = gmem.copy()
    coords = (0, *picks)
    if plan.direction == "load":
        emu.tma_gather4(m, gmem, coords, plan.smem_offset)
    else:
        emu.tma_scatter4(m, gmem, coords, plan.smem_offset)
    words = before.view(f"<u{elem}") if elem > 1 else before
    tile = tile_image(plan, emu.ctas[0].smem if plan.direction == "load" else smem)
    for j, r in enumerate(picks):
        start = r * m.global_strides[0] // elem
        row = words[start:start + m.box[0]] if r < rows else np.zeros(m.box[0], dtype=words.dtype)
        if plan.direction == "load" and not np.array_equal(tile[j, :min(m.box[0], cols)], row[:cols]):
            raise EmulationError(f"gather4: shared row {j} differs from array row {r}")
        if plan.direction == "store" and r < rows:
            after = (gmem.view(f"<u{elem}") if elem > 1 else gmem)[start:start + min(m.box[0], cols)]
            if not np.array_equal(after, tile[j, :min(m.box[0], cols)]):
                raise EmulationError(f"scatter4: array row {r} differs from shared row {j}")
