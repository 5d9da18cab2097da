"""What a copy must produce, computed from the two tensors' layouts alone.

``expected_tmem`` knows nothing of atoms, descriptors or partitions: for every coordinate it reads the element the
shared-memory layout (with its swizzle) names and writes it where the TMEM layout (and every replica) names.
"""
from __future__ import annotations

import numpy as np

from ...arch.sm100.tcgen05_cp import FP4_CONTAINER_SHIFT, FP4_DECOMPRESSION
from ...arch.sm100.tmem import CELL_BITS
from ...errors import PlanError
from ...tensor.smem import SmemTensor
from ...tensor.tmem import TmemTensor
from ...tensor.values import layout_values, smem_element_offsets

__all__ = ["expected_tmem", "fill_pattern"]


def expected_tmem(src: SmemTensor, dst: TmemTensor, smem: np.ndarray, tmem: np.ndarray, tmem_base_col: int,
                  decompress: str | None = None) -> np.ndarray:
    """Write into ``tmem`` (lanes x 512 uint32) what copying ``src`` to ``dst`` must leave there.

    ``smem`` is the buffer's bytes from its base; ``tmem_base_col`` is the allocation's first column. With
    ``decompress`` (``.b8x16.b4x16_p64``) each 4-bit element becomes the TMEM byte ``code << 2``.
    """
    if not isinstance(src, SmemTensor) or not isinstance(dst, TmemTensor):
        raise TypeError(f"expected_tmem: expected a shared-memory and a TMEM tensor, got {type(src).__name__} and "
                        f"{type(dst).__name__}")
    if src.dynamic or dst.dynamic:
        raise PlanError("expected_tmem: the tensors have run-time coordinates; give a value (tensor.at(...))")
    bits = src.bits
    elem = smem_element_offsets(src)
    bit = elem * bits
    word = np.zeros(elem.size, dtype=np.uint64)
    for k in range(max(bits // 8, 1)):
        word |= smem[bit // 8 + k].astype(np.uint64) << np.uint64(8 * k)
    if bits < 8:
        word = (word >> (bit % 8).astype(np.uint64)) & np.uint64((1 << bits) - 1)
    if decompress == FP4_DECOMPRESSION:
        word, bits = word << np.uint64(FP4_CONTAINER_SHIFT), dst.bits
    lanes = dst.lane_offset + layout_values(dst.layout, "TLane")
    cols = dst.col_offset + layout_values(dst.layout, "TCol")
    col32 = tmem_base_col + cols * bits // CELL_BITS
    shift = ((cols * bits) % CELL_BITS).astype(np.uint64)
    mask = (np.uint64((1 << bits) - 1) << shift)
    reps = [0] if dst.replica is None else layout_values(dst.replica, "TLane")
    t64 = tmem.astype(np.uint64)
    for rep in reps:
        ln = lanes + rep
        np.bitwise_and.at(t64, (ln, col32), ~mask & np.uint64(0xFFFFFFFF))
        np.bitwise_or.at(t64, (ln, col32), (word << shift) & np.uint64(0xFFFFFFFF))
    tmem[:] = t64.astype(np.uint32)
    return tmem


def fill_pattern(nbytes: int, seed: int) -> np.ndarray:
    """Distinct-looking bytes for round trips (a seeded generator, so failures reproduce)."""
    return np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
