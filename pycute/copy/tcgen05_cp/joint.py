"""What the planner derives from a copy before it tries any atom: the envelope checks and the joint modes.

Both regions are coalesced and cut at the union of their cumulative extents, so that every resulting mode steps
shared memory by one stride and TMEM by one stride (a lane step or a column step). Broadcast modes are dropped
or refused here; region offsets become a byte offset, a lane and a 32-bit column.
"""
from __future__ import annotations

import attrs

from ...arch.sm100.tcgen05_cp import FP6_REFUSAL
from ...arch.sm100.descriptor import START_ADDRESS
from ...arch.sm100.smem import SMEM_MAX_BYTES
from ...arch.sm100.swizzle_modes import UNIT_BITS, SwizzleMode
from ...arch.sm100.tmem import CELL_BITS, LANES
from ...basis import basis_get
from ...errors import DescriptorError, PlanError
from ...int_tuple import flatten, product_each
from ...layout import Layout, coalesce, merge_modes
from ...tensor.smem import SmemTensor
from ...tensor.tmem import TmemTensor

__all__ = ["JointMode", "Prepared", "prepare", "where", "decompress_refusal"]


@attrs.frozen
class JointMode:
    """``extent`` coordinates that step shared memory by ``smem`` elements and TMEM by ``step`` on one axis
    (lanes in ``Prepared.lane_modes``, column elements in ``Prepared.col_modes``)."""

    extent: int
    smem: int
    step: int


@attrs.frozen
class Prepared:
    """A copy's envelope, checked: the tensors, their joint modes (sorted by TMEM step) and region offsets."""

    src: SmemTensor
    dst: TmemTensor
    lane_modes: tuple          # JointModes stepping TLane
    col_modes: tuple           # JointModes stepping TCol
    replica: Layout | None     # the TMEM tensor's replica, coalesced
    buffer_mode: SwizzleMode   # the descriptor swizzle the buffer's own swizzle needs
    smem_base: int             # bytes from the buffer base
    lane_base: int
    col_base: int              # 32-bit columns from the allocation base
    smem_end: int              # one past the last byte read, from the buffer base

    @property
    def bits(self) -> int:
        return self.src.bits


def where(src: object, dst: object) -> str:
    return f"\n  src: {src!r}\n  dst: {dst!r}"


def decompress_refusal(what: str) -> PlanError:
    return PlanError(f"tcgen05.cp does not copy {what} this way: 6-bit sources need .b8x16.b6x16_p32, and {FP6_REFUSAL}")


def _flat_coalesced(layout: Layout) -> list:
    """``[(extent, stride)]`` of ``coalesce(layout)``."""
    shape, stride = merge_modes(flatten(layout.shape), flatten(layout.stride))
    return list(zip(shape, stride)) if type(shape) is tuple else [(shape, stride)]


def _cut(modes: list, bounds: list) -> list:
    """Split ``[(n, stride)]`` (cumulative extents dividing ``bounds``) into one piece per bound interval."""
    out = []
    it = iter(modes)
    n, d = next(it)
    start, end = 1, n          # cumulative extent before / after the current mode
    prev = 1
    for b in bounds:
        while b > end:
            n, d = next(it)
            start, end = end, end * n
        out.append((b // prev, d * (prev // start)))
        prev = b
    return out


def _joint_modes(src: SmemTensor, dst: TmemTensor):
    """``[((extent, smem stride), (extent, TMEM stride))]``: both layouts cut at the union of their extents."""
    fs, ft = _flat_coalesced(src.layout), _flat_coalesced(dst.layout)
    cum_s: list[int] = []
    cum_t: list[int] = []
    for modes, cum in ((fs, cum_s), (ft, cum_t)):
        acc = 1
        for n, _ in modes:
            acc *= n
            cum.append(acc)
    bounds = sorted(set(cum_s) | set(cum_t))
    prev = 1
    for b in bounds:
        if b % prev:
            raise PlanError(f"the shared-memory and TMEM layouts split the region incompatibly: cumulative extents "
                            f"{cum_s} and {cum_t} do not nest (union cut at {prev} and {b}){where(src, dst)}")
        prev = b
    return zip(_cut(fs, bounds), _cut(ft, bounds))


def _merge(modes: list) -> tuple:
    """Jointly coalesce JointModes sorted by step: merge where both sides continue contiguously."""
    out: list = []
    for m in modes:
        if out:
            p = out[-1]
            if p.extent * p.step == m.step and p.extent * p.smem == m.smem:
                out[-1] = JointMode(p.extent * m.extent, p.smem, p.step)
                continue
        out.append(m)
    return tuple(out)


def _mode_sizes(layout: Layout) -> tuple:
    return product_each(layout.shape)


def _split_axes(src: SmemTensor, dst: TmemTensor) -> tuple[list, list]:
    """The joint modes as (lane modes, column modes); broadcasts dropped or refused."""
    lane_modes: list = []
    col_modes: list = []
    for (n, s), (_, t) in _joint_modes(src, dst):
        lane, col = basis_get(t, "TLane"), basis_get(t, "TCol")
        if lane == 0 and col == 0:
            if s == 0:
                continue    # the same element for every coordinate of this mode: nothing to copy twice
            raise PlanError(f"{n} shared-memory elements (stride {s}) land in one TMEM cell: the copy is "
                            f"ambiguous{where(src, dst)}")
        if s == 0:
            raise PlanError(f"one shared-memory element is copied to {n} TMEM cells (TMEM stride {t!r}); declare the "
                            f"copies as the TMEM tensor's multicast replica instead{where(src, dst)}")
        if lane and col:
            raise PlanError(f"a mode of {n} elements steps both TMEM lanes and columns ({t!r}){where(src, dst)}")
        if min(lane, col, s) < 0:
            raise PlanError(f"negative strides are not supported (smem {s}, TMEM {t!r}){where(src, dst)}")
        (lane_modes if lane else col_modes).append(JointMode(n, s, lane or col))
    return lane_modes, col_modes


def prepare(src: SmemTensor, dst: TmemTensor) -> Prepared:
    """Check what does not depend on the atom and derive the joint modes and offsets."""
    bits = src.bits
    if bits not in (4, 8, 16, 32):
        raise PlanError(f"{decompress_refusal(f'{src.dtype.name} elements of {bits} bits')}{where(src, dst)}")
    if _mode_sizes(src.layout) != _mode_sizes(dst.layout):
        raise PlanError(f"region shapes differ: src {src.layout.shape!r} (mode sizes {_mode_sizes(src.layout)}) vs "
                        f"dst {dst.layout.shape!r} (mode sizes {_mode_sizes(dst.layout)}){where(src, dst)}")
    try:
        buffer_mode = SwizzleMode.of_element_swizzle(src.swizzle, src.dtype)
    except DescriptorError as e:
        raise PlanError(f"{e}{where(src, dst)}") from None
    if buffer_mode is not SwizzleMode.NONE and src.base_align % buffer_mode.period:
        raise PlanError(f"the buffer base is aligned to {src.base_align} B but the {buffer_mode.name} swizzle repeats "
                        f"every {buffer_mode.period} B; the descriptor (base offset 0) needs a period-aligned base"
                        f"{where(src, dst)}")
    lane_modes, col_modes = _split_axes(src, dst)
    smem_end = _check_footprint(src, dst, buffer_mode)
    if (src.offset * bits) % 8:
        raise PlanError(f"the shared-memory region starts at element {src.offset}, which is not on a byte"
                        f"{where(src, dst)}")
    col_bits = dst.col_offset * bits
    if col_bits % UNIT_BITS:
        raise PlanError(f"TMEM column offset {dst.col_offset} ({col_bits} bits) is not provably 128b-aligned: "
                        f"tcgen05.cp's column address must be a multiple of 4{where(src, dst)}")
    if not 0 <= dst.lane_offset < LANES:
        raise PlanError(f"TMEM lane offset {dst.lane_offset} overflows the 128-lane space{where(src, dst)}")
    replica = coalesce(dst.replica) if dst.replica is not None else None
    return Prepared(src, dst, _merge(sorted(lane_modes, key=lambda m: m.step)),
                    _merge(sorted(col_modes, key=lambda m: m.step)), replica, buffer_mode, src.offset * bits // 8,
                    dst.lane_offset, col_bits // CELL_BITS, smem_end)


def _check_footprint(src: SmemTensor, dst: TmemTensor, mode: SwizzleMode) -> int:
    """One past the last shared-memory byte the copy reads, from the buffer base (a swizzle moves bytes only within
    its period), refused where no buffer base could make every byte addressable."""
    last = src.offset + sum((s - 1) * d for s, d in zip(flatten(src.layout.shape), flatten(src.layout.stride)))
    end = -(-(last + 1) * src.bits // 8)
    if mode is not SwizzleMode.NONE:
        end = -(-end // mode.period) * mode.period
    if end > START_ADDRESS.limit:
        raise PlanError(f"the copy reads shared memory up to byte {end} from the buffer base, but the descriptor's "
                        f"start-address field (bits 4-17 of the address) reaches only {START_ADDRESS.limit} B: "
                        f"the addresses would wrap and re-read other bytes; and an sm_100 CTA has at most "
                        f"{SMEM_MAX_BYTES} B of shared memory{where(src, dst)}")
    if end > SMEM_MAX_BYTES:
        raise PlanError(f"the copy reads shared memory up to byte {end} from the buffer base, beyond the "
                        f"{SMEM_MAX_BYTES} B of shared memory an sm_100 CTA can have{where(src, dst)}")
    return end
