"""``make_gmma_desc``: the sm_90 shared-memory descriptor of a ``wgmma.mma_async`` A or B tile, derived from its layout
(never from a name).

The canonical layouts are tcgen05's family (PTX #asynchronous-warpgroup-level-canonical-layouts): K-major
``((8,m),(T,2k)):((1T,SBO),(1,LBO))`` unswizzled and ``((8,m),(T,2k)):((sT,SBO),(1,T))`` under an ``s``x16-byte
swizzle, MN-major ``((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))`` unswizzled and ``((T,s,m),(8,k)):((1,T,LBO),(sT,SBO))``
swizzled, T the elements of 16 bytes. So the analysis is ``mma.operand.canonical_fields``'s: LBO and SBO read at the
canonical basis elements, every element one instruction reads (MN x 32 bytes of K) checked against the formula, each
k-step's start advance read from the layout. What differs is the encoding (``arch.sm90.gmma_descriptor``: a 2-bit
layout type, no version) and the rules: only f16 / bf16 operands may be MN-major, and the 128B-with-32B-atom
swizzle does not exist on sm_90.
"""
from __future__ import annotations

import attrs

from ..arch.sm100.mma import Major
from ..arch.sm100.swizzle_modes import UNIT_BYTES, SwizzleMode
from ..arch.sm90.gmma_descriptor import GmmaLayout, GmmaSmemDescriptor
from ..arch.sm90.wgmma import WGMMA_TYPES
from ..errors import DescriptorError, PlanError
from ..int_tuple import as_int
from ..layout import make_layout
from ..tensor.smem import SmemTensor
from ..tensor.stages import SmemStage, smem_stages, stage_offset
from ..views import view
from .operand import SmemOperandShape, canonical_fields, check_alignment, major_of

__all__ = ["GmmaDescriptor", "make_gmma_desc"]

_WHO = "make_gmma_desc"
#: The swizzle modes wgmma reads, by the descriptor's layout label.
_LAYOUT: dict[SwizzleMode, GmmaLayout] = {SwizzleMode.NONE: "none", SwizzleMode.B32: "32B", SwizzleMode.B64: "64B",
                                          SwizzleMode.B128: "128B"}


@attrs.frozen(repr=False)
class GmmaDescriptor(SmemOperandShape):
    """A wgmma operand's descriptor: the fields (start address 0: the buffer's address is added at run time), the
    major-ness, the tile it describes, K per instruction and each k-step's start advance (``k_block_offset``), and
    the tile's run-time indices."""

    descriptor: GmmaSmemDescriptor
    major: Major
    tensor: SmemTensor
    k_per_mma: int               # K elements one instruction reads (32 bytes)
    k_offsets: tuple             # bytes from the tile's first byte to each k-step's start
    stages: tuple[SmemStage, ...] = ()      # the tile's run-time indices; ``tensor`` is their value 0
    _k_word = "k-step"

    def row_offset(self, row: int) -> int:
        """Bytes from the tile's first byte to row ``row`` (a warpgroup's slice of A starts there)."""
        row = as_int(row, "row_offset: row")
        if not 0 <= row < self.mn:
            raise DescriptorError(f"row {row} is outside the tile's {self.mn}")
        return self.tensor.layout(row, 0) * self.tensor.bits // 8

    def encode(self, smem_base: int = 0, k: int = 0, row: int = 0, **values: int) -> int:
        """The 64-bit descriptor of k-step ``k`` from row ``row`` for a buffer at shared-window byte ``smem_base``
        (and each run-time index at its value: ``stage=2``)."""
        return self.descriptor.encode(as_int(smem_base, "smem_base") + self.start_offset + self.row_offset(row)
                                      + self.k_block_offset(k) + stage_offset(self.stages, values, "GMMA descriptor: "))

    def cuda(self, name: str = "pycute_gmma_desc") -> str:
        """``name(unsigned smem, unsigned k, <unsigned stage>...)``: the descriptor of k-step ``k`` for the buffer at
        shared-window address ``smem``, as a ``__device__`` function (nothing to paste)."""
        return view("cuda", self, name)

    def __repr__(self) -> str:
        d = self.descriptor
        staged = "".join(f", {s.name}<{s.extent}> +{s.smem_step} B" for s in self.stages)
        return (f"GmmaDescriptor({self.major}-major {d.layout}, LBO {d.lbo} B, SBO {d.sbo} B{staged}, "
                f"{self.mn}x{self.k} {self.tensor.dtype.name}, {self.k_blocks} k-step(s) of {self.k_per_mma} at "
                f"+{list(self.k_offsets)} B, template {d.encode():#018x})")


def _mode(t: SmemTensor) -> SwizzleMode:
    try:
        return SwizzleMode.of_element_swizzle(t.swizzle, t.dtype)
    except DescriptorError as e:
        raise DescriptorError(f"{_WHO}: {e}; wgmma reads the 32B, 64B and 128B swizzles and none (the 128B-with-32B-"
                              f"atom swizzle is tcgen05's)") from None


def _check_type(t: SmemTensor, maj: Major) -> None:
    name = t.dtype.name
    if name not in WGMMA_TYPES:
        raise DescriptorError(f"{_WHO}: wgmma reads {', '.join(WGMMA_TYPES)} operands, not {name}")
    if maj == "MN" and not WGMMA_TYPES[name].transpose:
        raise DescriptorError(f"{_WHO}: a {name} operand must be K-major: wgmma transposes (imm-trans) only f16 / "
                              f"bf16 (PTX #asynchronous-warpgroup-level-matrix-instructions-wgmma-mma)")


def make_gmma_desc(smem_tensor: SmemTensor, major: Major | None = None) -> GmmaDescriptor:
    """The sm_90 descriptor of an ``(MN, K)`` operand tile in shared memory: K-major or MN-major (f16 / bf16), no
    swizzle or the 32B / 64B / 128B swizzles, a run-time stage index (``tile[..., pc.dynamic("stage")]``).
    ``major`` checks the major-ness the layout's unit stride gives. DescriptorError names the element, mode or rule
    the layout gets wrong."""
    if not isinstance(smem_tensor, SmemTensor):
        raise TypeError(f"{_WHO}: expected a shared-memory tensor (make_smem_tensor), got {smem_tensor!r}")
    t = smem_tensor
    try:
        stages = smem_stages(t, UNIT_BYTES, _WHO)
    except PlanError as e:
        raise DescriptorError(str(e)) from None
    t = t.at(**{d.name: 0 for d in t.dynamic}) if t.dynamic else t
    if t.layout.rank() != 2:
        raise DescriptorError(f"{_WHO}: the tile is (MN, K); {t.layout!r} has rank {t.layout.rank()}")
    layout = make_layout(t.layout[0], t.layout[1])
    maj = major_of(layout, major, _WHO)
    _check_type(t, maj)
    mode = _mode(t)
    check_alignment(t, mode, _WHO)
    lbo, sbo, kmma, offsets = canonical_fields(t, layout, maj, mode, _WHO)
    return GmmaDescriptor(GmmaSmemDescriptor(0, lbo, sbo, _LAYOUT[mode], 0), maj, t, kmma, offsets, stages)
