"""``make_umma_desc``: the shared-memory descriptor of a ``tcgen05.mma`` A or B operand tile, derived from its layout.

The tile is ``(MN, K)``. Its major-ness is read from the layout (the mode with unit stride), the swizzle from its
swizzle, and LBO / SBO from the byte offsets of the canonical layout's basis elements
(PTX #tcgen05-canonical-layouts, #tcgen05-leading-dimension-byte-offset, #tcgen05-stride-dimension-byte-offset;
docs/tcgen05-mma-operands.md section 3). Then every element one MMA reads (MN x 32 bytes of K) is checked against
the canonical formula with those fields, and every k-block against the first moved by its start-address advance:
a layout no descriptor describes is refused naming the element and the mode that is off.
"""
from __future__ import annotations

import attrs
import numpy as np

from ..arch.convention import Convention
from ..arch.sm100.descriptor import LBO, SBO, SmemDescriptor
from ..arch.sm100.mma import Major, K_BYTES, MMA_KINDS, TRANSPOSABLE
from ..arch.sm100.swizzle_modes import UNIT_BYTES, SwizzleMode
from ..tensor.values import layout_values
from ..tensor.smem import SmemTensor
from ..tensor.tmem import TmemTensor
from ..errors import DescriptorError, PlanError
from ..tensor.stages import SmemStage, smem_stages, stage_offset
from ..views import view
from ..int_tuple import as_int
from ..layout import Layout, make_layout
from ..swizzle import Swizzle

__all__ = ["OperandShape", "SmemOperandShape", "UmmaDescriptor", "make_umma_desc", "canonical_offsets", "canonical_fields",
           "major_of", "check_alignment", "BASE32B_ATOM_K"]

BASE32B_ATOM_K = 4          # the 128B-with-32B-atom swizzle's atom is 128 B x 4 rows of K (PTX Table 53)


class OperandShape:
    """What every MMA operand (a descriptor, an A in TMEM) answers from its ``tensor`` (MN x K) and ``k_offsets``
    (one per k-block)."""

    __slots__ = ()
    tensor: SmemTensor | TmemTensor
    k_offsets: tuple

    @property
    def mn(self) -> int:
        return self.tensor.layout[0].size()

    @property
    def k(self) -> int:
        return self.tensor.layout[1].size()

    @property
    def k_blocks(self) -> int:
        return len(self.k_offsets)


class SmemOperandShape(OperandShape):
    """An operand tile in shared memory (a tcgen05 or wgmma descriptor's): where it starts in its buffer and where
    each k-block starts in it. ``_k_word`` names a k-block in refusals (wgmma says k-step)."""

    __slots__ = ()
    tensor: SmemTensor
    k_per_mma: int
    _k_word = "k-block"

    @property
    def start_offset(self) -> int:
        """Bytes from the buffer base to the tile's first byte."""
        return self.tensor.offset * self.tensor.bits // 8

    def k_block_offset(self, k: int) -> int:
        """Bytes the start address advances for k-block ``k`` (pre-swizzle, as the descriptor adds it)."""
        k = as_int(k, "k_block_offset: k")
        if not 0 <= k < self.k_blocks:
            raise DescriptorError(f"{self._k_word} {k} is outside the tile's {self.k_blocks} "
                                  f"({self.k} / {self.k_per_mma})")
        return self.k_offsets[k]


@attrs.frozen(repr=False)
class UmmaDescriptor(SmemOperandShape):
    """An MMA operand's descriptor: the fields (start address 0: the buffer's address is added at run time), the
    major-ness, and the tile it describes; ``k_block_offset(k)`` is k-block ``k``'s start-address advance."""

    descriptor: SmemDescriptor
    major: Major
    tensor: SmemTensor
    k_per_mma: int               # K elements one MMA reads (32 bytes)
    k_offsets: tuple             # bytes from the tile's first byte to each k-block's start
    stages: tuple[SmemStage, ...] = ()      # the tile's run-time indices; ``tensor`` is their value 0

    def encode(self, smem_base: int = 0, k: int = 0, **values: int) -> int:
        """The 64-bit descriptor of k-block ``k`` for a buffer at shared-window byte ``smem_base`` (and each
        run-time index at its value: ``stage=2``)."""
        return self.descriptor.encode(start_address=as_int(smem_base, "smem_base") + self.start_offset
                                      + self.k_block_offset(k) + stage_offset(self.stages, values, "UMMA descriptor: "))

    @property
    def convention(self) -> Convention:
        """Who calls the generated function: any thread (it computes a descriptor, no side effect)."""
        return Convention("any", 1)

    def cuda(self, name: str = "pycute_umma_desc") -> str:
        """``name(unsigned smem, unsigned k, <unsigned stage>...)``: the descriptor of k-block ``k`` for the buffer at
        shared-window address ``smem``, as a ``__device__`` function (nothing to paste)."""
        return view("cuda", self, name)

    def __repr__(self) -> str:
        d = self.descriptor
        staged = "".join(f", {s.name}<{s.extent}> +{s.smem_step} B" for s in self.stages)
        return (f"UmmaDescriptor({self.major}-major {d.swizzle.label}, LBO {d.lbo} B, SBO {d.sbo} B{staged}, "
                f"{self.mn}x{self.k} {self.tensor.dtype.name}, {self.k_blocks} k-block(s) of {self.k_per_mma} at "
                f"+{list(self.k_offsets)} B, template {d.encode():#018x})")


def _swizzle_mode(tensor: SmemTensor, bits: int) -> SwizzleMode:
    sw = tensor.swizzle
    base32 = SwizzleMode.B128_BASE32B.byte_swizzle
    if sw is not None and sw.bits and base32 is not None:
        unit = (bits // 8).bit_length() - 1 if bits >= 8 else None
        if unit is not None and sw == Swizzle(base32.bits, base32.base - unit, base32.shift):
            return SwizzleMode.B128_BASE32B
    try:
        return SwizzleMode.of_element_swizzle(sw, tensor.dtype)
    except DescriptorError as e:
        raise DescriptorError(f"make_umma_desc: {e}") from None


def major_of(layout: Layout, requested, who: str = "make_umma_desc") -> Major:
    """The major-ness a (MN, K) layout's unit stride gives (checked against ``requested`` when given)."""
    k_unit, mn_unit = layout(0, 1) == 1, layout(1, 0) == 1
    inferred: Major | None = "K" if k_unit and not mn_unit else "MN" if mn_unit and not k_unit else None
    if requested is not None and requested not in ("K", "MN"):
        raise DescriptorError(f"{who}: major is 'K' or 'MN', not {requested!r}")
    if inferred is None:
        raise DescriptorError(f"{who}: no canonical layout: the layout {layout!r} has a unit stride in "
                              f"{'both modes' if k_unit else 'neither mode'} (K-major tiles step K by 1 element, "
                              f"MN-major tiles step MN by 1)")
    if requested is not None and requested != inferred:
        raise DescriptorError(f"{who}: the layout {layout!r} is {inferred}-major, not {requested}-major")
    return inferred


def canonical_offsets(major: str, mode: SwizzleMode, bits: int, lbo: int, sbo: int, m: np.ndarray,
                      k: np.ndarray) -> np.ndarray:
    """Bit offsets of elements (m, k) in the canonical layout with these fields (docs/tcgen05-mma-operands.md
    section 3), before the swizzle."""
    t = 128 // bits                                   # elements per 16-byte unit
    w = mode.row_pitch                                # bytes of one swizzle row (16 without a swizzle)
    if major == "K":
        if mode is SwizzleMode.NONE:
            byte = (m % 8) * 16 + (m // 8) * sbo + (k // t) * lbo
        else:
            byte = (m % 8) * w + (m // 8) * sbo + (k // t) * UNIT_BYTES
        return byte * 8 + (k % t) * bits
    if mode is SwizzleMode.NONE:
        byte = (m // t) * sbo + (k % 8) * 16 + (k // 8) * lbo
        return byte * 8 + (m % t) * bits
    if mode is SwizzleMode.B128_BASE32B:
        per = 128 * 8 // bits
        return ((m // per) * lbo + (k % BASE32B_ATOM_K) * 128 + (k // BASE32B_ATOM_K) * sbo) * 8 + (m % per) * bits
    per = w * 8 // bits                               # MN elements in one swizzle row
    return ((m // per) * lbo + (k % 8) * w + (k // 8) * sbo) * 8 + (m % per) * bits


def _fields(layout: Layout, major: str, mode: SwizzleMode, bits: int, mn: int, kmma: int) -> tuple[int, int]:
    """LBO and SBO in bytes, read from the layout at the canonical layout's basis elements."""
    at = lambda m, k: layout(m, k) * bits // 8       # noqa: E731
    t = 128 // bits
    if major == "K":
        sbo = at(8, 0) if mn > 8 else 8 * mode.row_pitch
        lbo = at(0, t) if mode is SwizzleMode.NONE else UNIT_BYTES
        return lbo, sbo
    if mode is SwizzleMode.NONE:
        return at(0, 8) if kmma > 8 else 8 * 16, at(t, 0) if mn > t else 0
    per = (128 if mode is SwizzleMode.B128_BASE32B else mode.row_pitch) * 8 // bits
    rows = BASE32B_ATOM_K if mode is SwizzleMode.B128_BASE32B else 8
    return at(per, 0) if mn > per else 0, at(0, rows) if kmma > rows else rows * mode.row_pitch


def _check_dtype(major: str, mode: SwizzleMode, name: str, bits: int, kind) -> None:
    if major == "MN" and name not in TRANSPOSABLE and bits < 8:
        raise DescriptorError(f"make_umma_desc: {name} operands cannot be MN-major (fp4/fp6 do not transpose)")
    if major == "MN" and bits == 32 and mode is not SwizzleMode.B128_BASE32B:
        raise DescriptorError(f"make_umma_desc: tf32 MN-major operands need the 128B-with-32B-atom swizzle "
                              f"(Swizzle<2,5,2> on bytes), not {mode.label}: PTX #tcgen05-transpose-negate-mma-kind "
                              f"supports transpose for kind::tf32 only with it")
    if mode is SwizzleMode.B128_BASE32B and (major != "MN" or bits != 32):
        raise DescriptorError("make_umma_desc: the 128B-with-32B-atom swizzle is for tf32 MN-major operands only")
    if kind is not None:
        if kind not in MMA_KINDS:
            raise DescriptorError(f"make_umma_desc: unknown kind {kind!r}")
        if major == "MN" and not MMA_KINDS[kind].transpose:
            raise DescriptorError(f"make_umma_desc: kind::{kind} does not transpose: its operands are K-major")
        if bits < 8 and not MMA_KINDS[kind].packed:
            packed = ", ".join(f"kind::{k}" for k, v in MMA_KINDS.items() if v.packed)
            raise DescriptorError(f"make_umma_desc: kind::{kind} reads {name} elements one to a byte (8-bit "
                                  f"containers, K = 32 per MMA; PTX #tcgen05-kind-shapes), not from a packed {name} "
                                  f"tile; pycute plans packed 4-bit operands for {packed} and does not model the "
                                  f"container layout")


def check_alignment(tensor: SmemTensor, mode: SwizzleMode, who: str = "make_umma_desc") -> None:
    """The tile's swizzle atoms start on the pattern (base offset 0)."""
    if mode is SwizzleMode.NONE:
        return
    period = mode.period
    start = tensor.offset * tensor.bits // 8
    # The atoms' rows must start on the pattern; an offset inside the first row (a K slice) is the k-block
    # advance's own mechanism (the XOR anchors on absolute address bits, base offset 0).
    if tensor.base_align % period or start % period >= mode.row_pitch:
        raise DescriptorError(f"{who}: the tile starts {start} B into a buffer aligned to "
                              f"{tensor.base_align} B; its {mode.label} atoms must start on the {period} B swizzle "
                              f"pattern (pycute writes base offset 0 only: how the hardware applies the others is "
                              f"not settled)")


def canonical_fields(t: SmemTensor, layout: Layout, maj: Major, mode: SwizzleMode, who: str
                     ) -> tuple[int, int, int, tuple[int, ...]]:
    """LBO, SBO (bytes), K per MMA (32 bytes) and each k-block's start offset (bytes from the tile's first) of the
    canonical ``maj``-major ``mode`` layout ``layout`` (the (MN, K) tile ``t``'s), after checking every element one
    MMA reads against the canonical formula and every k-block against the first moved by its start: the analysis
    tcgen05's and wgmma's descriptors share (the same canonical family). DescriptorError names what is off."""
    bits = t.bits
    mn, kk = layout[0].size(), layout[1].size()
    kmma = K_BYTES * 8 // bits
    if kk % kmma or (maj == "K" and mn % 8):
        raise DescriptorError(f"{who}: a {mn}x{kk} tile is not whole MMA operands: K a multiple of {kmma} "
                              f"({K_BYTES} B){' and MN of 8 rows' if maj == 'K' else ''}")
    lbo, sbo = _fields(layout, maj, mode, bits, mn, kmma)
    for name, v, field in (("LBO", lbo, LBO), ("SBO", sbo, SBO)):
        if v < 0 or v % UNIT_BYTES or v >= field.limit:
            raise DescriptorError(f"{who}: {name} {v} B is not a 16-byte multiple below {field.limit} "
                                  f"(the layout's {name} stride is off for a canonical {maj}-major tile)")
    m, k = np.meshgrid(np.arange(mn), np.arange(kk), indexing="ij")
    have = (layout_values(layout) * bits).reshape(kk, mn).T
    want = canonical_offsets(maj, mode, bits, lbo, sbo, m[:, :kmma], k[:, :kmma])
    bad = np.argwhere(have[:, :kmma] != want)
    if bad.size:
        i, j = (int(x) for x in bad[0])
        off = "MN" if j == 0 else "K" if i == 0 else "MN and K"
        raise DescriptorError(f"{who}: element ({i}, {j}) sits at byte {have[i, j] / 8:g} of the tile, but the "
                              f"canonical {maj}-major {mode.label} layout (LBO {lbo} B, SBO {sbo} B) puts it at byte "
                              f"{want[i, j] / 8:g}: the layout's {off} stride is off")
    offsets = []
    for j in range(kk // kmma):
        block = have[:, j * kmma:(j + 1) * kmma]
        start = int(block[0, 0])
        if not np.array_equal(block - start, have[:, :kmma]):
            raise DescriptorError(f"{who}: k-block {j} is not k-block 0 moved by its start address: one "
                                  f"descriptor cannot read it")
        if start % (UNIT_BYTES * 8):
            raise DescriptorError(f"{who}: k-block {j} starts at bit {start}, not on a 16-byte unit")
        begin = t.offset * bits // 8 + start // 8          # from the buffer base
        if maj == "K" and mode is not SwizzleMode.NONE and begin % mode.row_pitch + K_BYTES > mode.row_pitch:
            raise DescriptorError(f"{who}: k-block {j} starts at byte {begin} of the buffer, "
                                  f"{begin % mode.row_pitch} B into a {mode.row_pitch} B swizzle row, and its "
                                  f"{K_BYTES} B would cross it")
        offsets.append(start // 8)
    return lbo, sbo, kmma, tuple(offsets)


def make_umma_desc(smem_tensor: SmemTensor, major: Major | None = None, kind: str | None = None) -> UmmaDescriptor:
    """The descriptor of an ``(MN, K)`` operand tile in shared memory, for every swizzle and both majors; ``major``
    checks the inferred major-ness, ``kind`` the kind's transposition rules. Raises ``DescriptorError`` naming
    the element and mode a layout gets wrong."""
    if not isinstance(smem_tensor, SmemTensor):
        raise TypeError(f"make_umma_desc: expected a shared-memory tensor (make_smem_tensor), got {smem_tensor!r}")
    t = smem_tensor
    try:
        stages = smem_stages(t, UNIT_BYTES, "make_umma_desc")
    except PlanError as e:
        raise DescriptorError(str(e)) from None
    t = t.at(**{d.name: 0 for d in t.dynamic}) if t.dynamic else t
    if t.layout.rank() != 2:
        raise DescriptorError(f"make_umma_desc: the tile is (MN, K); {t.layout!r} has rank {t.layout.rank()}")
    bits = t.bits
    if bits not in (4, 8, 16, 32):
        raise DescriptorError(f"make_umma_desc: {t.dtype.name} ({bits} bits) operands are not addressed by a "
                              f"descriptor this way (8/16/32-bit elements and packed fp4)")
    layout = make_layout(t.layout[0], t.layout[1])
    mode = _swizzle_mode(t, bits)
    maj = major_of(layout, major)
    _check_dtype(maj, mode, t.dtype.name, bits, kind)
    check_alignment(t, mode)
    lbo, sbo, kmma, offsets = canonical_fields(t, layout, maj, mode, "make_umma_desc")
    return UmmaDescriptor(SmemDescriptor(0, lbo, sbo, mode), maj, t, kmma, offsets, stages)
