"""What ``tcgen05.mma`` reads: the operand matrix a shared-memory descriptor addresses, and a numpy reference MMA.

``mma_operand`` walks the descriptor's canonical layout (docs/tcgen05-mma-operands.md section 3) from its fields
alone -- start address, LBO, SBO, swizzle, major-ness -- and XORs absolute address bits (the swizzle anchors on
the address, base offset 0), independent of the layout algebra; ``verify_operand`` compares it element by element
with the tile's own view through its layout and swizzle; ``gmma_operand`` reads wgmma's sm_90 descriptor the same
way. ``reference_mma`` multiplies decoded operands (dense f16 / bf16 / tf32 / f8 / i8, and block-scaled mxf8 and
nvfp4) in float64 for end-to-end checks.
"""
from __future__ import annotations

import numpy as np

from ..arch.sm100.descriptor import SmemDescriptor
from ..arch.sm90.gmma_descriptor import GmmaSmemDescriptor
from ..arch.sm100.swizzle_modes import SwizzleMode
from ..tensor.values import smem_element_offsets
from ..dtypes import TF32_MASK
from ..errors import EmulationError
from ..mma.operand import UmmaDescriptor, canonical_offsets

__all__ = ["mma_operand", "gmma_operand", "gmma_operand_bytes", "operand_bytes", "verify_operand", "decode", "reference_mma"]


def _read_bits(image: np.ndarray, bit: np.ndarray, bits: int) -> np.ndarray:
    byte = bit // 8
    if byte.min() < 0 or byte.max() + max(bits // 8, 1) > image.size:
        raise EmulationError(f"the operand reads bytes [{int(byte.min())}, {int(byte.max()) + max(bits // 8, 1)}) "
                             f"outside the {image.size}-byte shared-memory image")
    value = np.zeros(bit.shape, dtype=np.uint64)
    for k in range(max(bits // 8, 1)):
        value |= image[byte + k].astype(np.uint64) << np.uint64(8 * k)
    if bits < 8:
        value = (value >> (bit % 8).astype(np.uint64)) & np.uint64((1 << bits) - 1)
    return value


def _canonical_bits(major: str, mode: SwizzleMode, bits: int, lbo: int, sbo: int, start: int, mn: int, k: int,
                    smem_base: int) -> np.ndarray:
    """``(mn, k)`` bit offsets from ``smem_base`` of the canonical layout's elements, the swizzle XORed into
    absolute byte addresses (base offset 0)."""
    m, kk = np.meshgrid(np.arange(mn), np.arange(k), indexing="ij")
    linear = canonical_offsets(major, mode, bits, lbo, sbo, m, kk) + start * 8
    byte = linear // 8
    sw = mode.byte_swizzle
    return ((sw(byte) if sw is not None else byte) - smem_base) * 8 + linear % 8


def _canonical_read(major: str, mode: SwizzleMode, bits: int, lbo: int, sbo: int, start: int, mn: int, k: int,
                    image: np.ndarray, smem_base: int) -> np.ndarray:
    """``(mn, k)`` element bit patterns of the canonical layout with these fields from ``start``, the swizzle XORed
    into absolute byte addresses (base offset 0)."""
    return _read_bits(np.asarray(image, dtype=np.uint8),
                      _canonical_bits(major, mode, bits, lbo, sbo, start, mn, k, smem_base), bits)


def mma_operand(desc: int, major: str, mn: int, k: int, bits: int, image: np.ndarray, smem_base: int = 0) -> np.ndarray:
    """``(mn, k)`` element bit patterns the MMA reads through the 64-bit descriptor ``desc`` from ``image`` (the
    bytes of shared memory from window address ``smem_base``)."""
    physical, linear = operand_bytes(desc, major, mn, k, bits, smem_base)
    return _read_bits(np.asarray(image, dtype=np.uint8), physical * 8 + linear % 8, bits)


def operand_bytes(desc: int, major: str, mn: int, k: int, bits: int, smem_base: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(byte, bit)``: the ``(mn, k)`` byte offsets from ``smem_base`` of the elements the descriptor addresses
    (after the swizzle) and their bit offsets before it (what ``mma_operand`` reads; the whole-kernel run checks
    these bytes for races)."""
    d = SmemDescriptor.decode(desc)
    if d.base_offset or d.lbo_mode:
        raise EmulationError("base offset and absolute-LBO mode are not modelled (docs/tcgen05-mma-operands.md "
                             "section 1: pycute writes 0)")
    m, kk = np.meshgrid(np.arange(mn), np.arange(k), indexing="ij")
    linear = canonical_offsets(major, d.swizzle, bits, d.lbo, d.sbo, m, kk) + d.start_address * 8
    byte = linear // 8
    sw = d.swizzle.byte_swizzle
    return (sw(byte) if sw is not None else byte) - smem_base, linear


def _gmma_fields(desc: int) -> GmmaSmemDescriptor:
    d = GmmaSmemDescriptor.decode(desc)
    if d.base_offset:
        raise EmulationError("a non-zero sm_90 descriptor base offset is not modelled (docs/wgmma.md: pycute "
                             "writes 0 and starts every swizzled tile on its pattern)")
    return d


def gmma_operand(desc: int, major: str, mn: int, k: int, bits: int, image: np.ndarray, smem_base: int = 0
                 ) -> np.ndarray:
    """``(mn, k)`` element bit patterns ``wgmma.mma_async`` reads through the sm_90 descriptor ``desc`` (its fields
    alone: start, LBO, SBO, layout type) from ``image`` (shared memory from window address ``smem_base``)."""
    d = _gmma_fields(desc)
    return _canonical_read(major, SwizzleMode.from_label(d.layout), bits, d.lbo, d.sbo, d.start_address, mn, k,
                           image, smem_base)


def gmma_operand_bytes(desc: int, major: str, mn: int, k: int, bits: int, smem_base: int = 0) -> np.ndarray:
    """The byte offsets from ``smem_base`` of the elements ``gmma_operand`` reads (each element's first byte; the
    whole-kernel run checks them for races)."""
    d = _gmma_fields(desc)
    return (_canonical_bits(major, SwizzleMode.from_label(d.layout), bits, d.lbo, d.sbo, d.start_address, mn, k,
                            smem_base) // 8).reshape(-1)


def verify_operand(udesc: UmmaDescriptor, seed: int = 0, smem_base: int = 0) -> None:
    """For every k-block: the operand the descriptor reads equals the tile's elements through its layout and
    swizzle, bit for bit; EmulationError names the first difference."""
    if not isinstance(udesc, UmmaDescriptor):
        raise TypeError(f"verify_operand: expected a UmmaDescriptor (make_umma_desc), got {type(udesc).__name__}")
    t = udesc.tensor
    if smem_base % max(udesc.descriptor.swizzle.period, 16) and udesc.descriptor.swizzle is not SwizzleMode.NONE:
        raise EmulationError(f"smem_base {smem_base:#x} is not aligned to the swizzle period")
    size = (int(smem_element_offsets(t).max()) + 1) * t.bits // 8 + 4096
    image = np.random.default_rng(seed).integers(0, 256, -(-size // 1024) * 1024, dtype=np.uint8)
    mn, kmma = udesc.mn, udesc.k_per_mma
    elements = smem_element_offsets(t).reshape(udesc.k, mn).T      # (m, k) -> swizzled element offset
    for j in range(udesc.k_blocks):
        got = mma_operand(udesc.encode(smem_base, j), udesc.major, mn, kmma, t.bits, image, smem_base)
        want = _read_bits(image, elements[:, j * kmma:(j + 1) * kmma] * t.bits, t.bits)
        bad = np.argwhere(got != want)
        if bad.size:
            a, b = (int(x) for x in bad[0])
            raise EmulationError(f"k-block {j}: the MMA reads {int(got[a, b]):#x} as element ({a}, {b + j * kmma}); "
                                 f"the tile holds {int(want[a, b]):#x} there")


def _minifloat(code: np.ndarray, exp_bits: int, man_bits: int, bias: int, signed: bool = True,
               finite: bool = False) -> np.ndarray:
    code = code.astype(np.int64)
    man = code & ((1 << man_bits) - 1)
    exp = (code >> man_bits) & ((1 << exp_bits) - 1)
    sign = np.where((code >> (exp_bits + man_bits)) & 1, -1.0, 1.0) if signed else 1.0
    normal = (1 + man / (1 << man_bits)) * np.exp2(exp - bias)
    value = np.where(exp == 0, man / (1 << man_bits) * np.exp2(1 - bias), normal)
    if not finite:
        value = np.where(exp == (1 << exp_bits) - 1, np.where(man == 0, np.inf, np.nan), value)
    return sign * value


def decode(code: np.ndarray, name: str) -> np.ndarray:
    """Element bit patterns of pycute dtype ``name`` as float64 (integers as integers)."""
    c = np.asarray(code, dtype=np.uint64)
    if name in ("f16", "bf16", "tf32", "f32"):
        if name == "f16":
            return c.astype(np.uint16).view(np.float16).astype(np.float64)
        word = (c.astype(np.uint32) << np.uint32(16)) if name == "bf16" else c.astype(np.uint32)
        if name == "tf32":
            word = word & np.uint32(TF32_MASK)           # tf32 keeps 10 mantissa bits
        return word.view(np.float32).astype(np.float64)
    if name == "f8e4m3":                                  # e4m3fn: no infinities, S.1111.111 is NaN
        v = _minifloat(c, 4, 3, 7, finite=True)
        return np.where((c & 0x7F) == 0x7F, np.nan, v)
    if name == "f8e5m2":
        return _minifloat(c, 5, 2, 15)
    if name == "f4e2m1":
        return _minifloat(c, 2, 1, 1, finite=True)
    if name == "f6e2m3":
        return _minifloat(c, 2, 3, 1, finite=True)
    if name == "f6e3m2":
        return _minifloat(c, 3, 2, 3, finite=True)
    if name == "ue8m0":
        return np.where(c == 0xFF, np.nan, np.exp2(c.astype(np.float64) - 127))
    if name == "ue4m3":                                   # unsigned e4m3fn: bit 7 ignored, .1111.111 is NaN
        low = c & np.uint64(0x7F)
        return np.where(low == 0x7F, np.nan, _minifloat(low, 4, 3, 7, signed=False, finite=True))
    if name in ("i8", "u8"):
        return (c.astype(np.int64) - (np.where(c >= 128, 256, 0) if name == "i8" else 0)).astype(np.float64)
    raise EmulationError(f"reference_mma: no decoder for {name!r}")


def reference_mma(a: np.ndarray, b: np.ndarray, a_type: str, b_type: str, sfa: np.ndarray | None = None,
                  sfb: np.ndarray | None = None, sf_type: str = "ue8m0",
                  block: int = 32) -> np.ndarray:
    """``D = (A * SFA) (B * SFB)^T`` in float64: ``a`` (M, K) and ``b`` (N, K) element codes; with block scaling
    ``sfa`` (M, K / block) and ``sfb`` (N, K / block) scale codes of ``sf_type`` (block 32 for mxf8 / mxf4, 16
    for nvfp4)."""
    x, y = decode(a, a_type), decode(b, b_type)
    if (sfa is None) != (sfb is None):
        raise EmulationError("reference_mma: block scaling needs both sfa and sfb (or neither)")
    if sfa is not None and sfb is not None:
        x = x * np.repeat(decode(sfa, sf_type), block, axis=1)
        y = y * np.repeat(decode(sfb, sf_type), block, axis=1)
    return x @ y.T
