"""MMA plans in the emulator against the layouts alone: A's and B's elements written into shared memory through
their tiles' layouts and swizzles, the SFs into TMEM through the SF tensors' layouts (every replica), the plan's
stream (or a given one) executed, and D compared bit for bit with ``reference_mma`` of the elements over the whole
K. The element codes are chosen so that every product and sum is exact in float32 (small dyadic values, SFs
powers of two), so any difference is a wrong element, scale or offset, not rounding."""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..arch.sm100.mma import MMA_KINDS
from ..basis import basis_get
from ..errors import EmulationError
from ..mma.plan import MmaPlan
from ..mma.tmem_operand import TmemOperand
from ..tensor.smem import SmemTensor
from ..tensor.tmem import TmemTensor
from ..tensor.values import layout_values, smem_bytes_needed, smem_element_offsets
from .emulator import Sm100Emulator
from .operand import decode, reference_mma

__all__ = ["verify_mma", "exact_codes", "exact_sf_codes", "write_tile", "write_sfs", "write_tmem_a", "read_d",
           "sf_power_code"]

_SFA_COLUMN, _SFB_COLUMN = 256, 288     # where the SF tensors go in the emulator's TMEM (D takes columns 0-255)


def exact_codes(dtype: str, bits: int, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Random element codes whose values are multiples of 1/4 with |value| <= 4 (exact products and sums)."""
    if bits == 32:                                   # tf32: f32 bit patterns of quarters (low mantissa bits 0)
        quarters = rng.integers(-16, 17, size=shape).astype(np.float32) / np.float32(4)
        return quarters.view(np.uint32).astype(np.uint64)
    codes = np.arange(1 << bits, dtype=np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        values = decode(codes, dtype)
        ok = np.isfinite(values) & (np.abs(values) <= 4) & (values * 4 == np.round(values * 4))
    return rng.choice(codes[ok], size=shape).astype(np.uint64)


def write_tile(image: np.ndarray, base: int, tile: SmemTensor, codes: np.ndarray) -> None:
    """Element (mn, k) of ``tile`` (logical order mn fastest) at its swizzled place, ``bits`` wide."""
    bits = tile.bits
    flat = codes.T.reshape(-1)                       # (MN, K) -> index mn + MN * k
    offsets = smem_element_offsets(tile) * bits + base * 8
    for b in range(0, bits, 8) if bits >= 8 else [0]:
        byte = (offsets + b) // 8
        if bits >= 8:
            image[byte] = ((flat >> np.uint64(b)) & np.uint64(0xFF)).astype(np.uint8)
        else:                                        # 4-bit codes: the nibble at bit offset % 8
            shift = (offsets % 8).astype(np.uint64)
            np.bitwise_and.at(image, byte, (~(np.uint64(0xF) << shift) & np.uint64(0xFF)).astype(np.uint8))
            np.bitwise_or.at(image, byte, ((flat & np.uint64(0xF)) << shift).astype(np.uint8))


#: SF type -> (exponent bias, mantissa bits below the exponent): UE8M0 is a bare exponent, UE4M3 an unsigned E4M3.
_SF_EXPONENT = {"ue8m0": (127, 0), "ue4m3": (7, 3)}


def sf_power_code(sf_type: str, power: int | np.ndarray) -> int | np.ndarray:
    """The SF code of 2^power (UE8M0 or UE4M3)."""
    bias, shift = _SF_EXPONENT[sf_type]
    return (power + bias) << shift


def exact_sf_codes(sf_type: str, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Random SF codes of powers of two from 2^-2 to 2^2 (exact scaling), UE8M0 or UE4M3."""
    return np.asarray(sf_power_code(sf_type, rng.integers(-2, 3, size=shape))).astype(np.uint8)


def write_sfs(tmem: np.ndarray, sf, column: int, codes: np.ndarray) -> None:
    """SF (row, slot) codes into a CTA's TMEM at ``column`` through the SF tensor's layout and every replica."""
    t = sf.tensor
    lanes = layout_values(t.layout, "TLane")
    byte_cols = layout_values(t.layout, "TCol")
    reps = layout_values(t.replica, "TLane") if t.replica is not None else np.zeros(1, np.int64)
    flat = codes.T.reshape(-1)                       # (rows, slots) -> index row + rows * slot
    for rep in reps:
        for lane, bc, code in zip(lanes + rep, byte_cols + basis_get(t.offset, "TCol"), flat):
            col, shift = column + int(bc) // 4, 8 * (int(bc) % 4)
            tmem[lane, col] = (int(tmem[lane, col]) & ~(0xFF << shift)) | (int(code) << shift)


def write_tmem_a(tmem: np.ndarray, a: TmemTensor, codes: np.ndarray) -> None:
    """(rows, K) element codes into a CTA's TMEM through the TMEM tensor's layout: element (r, k) at its lane and
    column element (``32 / bits`` elements to a 32-bit cell, element 0 in the low bits)."""
    bits = a.bits
    lanes = a.lane_offset + layout_values(a.layout, "TLane")
    bit = (a.col_offset + layout_values(a.layout, "TCol")) * bits
    for lane, b, code in zip(lanes, bit, codes.T.reshape(-1)):        # index r + rows * k
        col, shift = int(b) // 32, int(b) % 32
        keep = ~(((1 << bits) - 1) << shift) & 0xFFFFFFFF
        tmem[lane, col] = (int(tmem[lane, col]) & keep) | (int(code) << shift)


def read_d(tmem: np.ndarray, d: TmemTensor) -> np.ndarray:
    """A CTA's (rows, N) 32-bit D read through its TMEM tensor's layout (the MMA's data path)."""
    lanes = d.lane_offset + layout_values(d.layout, "TLane")
    cols = (d.col_offset + layout_values(d.layout, "TCol")) * d.bits // 32
    rows, n = d.layout[0].size(), d.layout[1].size()
    return tmem[lanes, cols].reshape(n, rows).T


def _load_operands(emu: Sm100Emulator, plan: MmaPlan, a: np.ndarray, b: np.ndarray, b_at: int) -> None:
    """Each CTA's rows of A (shared memory at 0, or TMEM) and its half of B's rows (shared memory at ``b_at``)."""
    group = plan.atom.cta_group
    rows_a, rows_b = a.shape[0] // group, b.shape[0] // group
    for c in range(group):
        image = np.zeros(emu.ctas[c].smem.size, dtype=np.uint8)
        if isinstance(plan.a, TmemOperand):
            write_tmem_a(emu.ctas[c].tmem, plan.a.tensor, a[c * rows_a:(c + 1) * rows_a])
        else:
            write_tile(image, 0, plan.a.tensor, a[c * rows_a:(c + 1) * rows_a])
        write_tile(image, b_at, plan.b.tensor, b[c * rows_b:(c + 1) * rows_b])
        emu.write_smem(0, image, cta=c)


def verify_mma(plan: MmaPlan, seed: int = 0, stream: Callable[..., list] | None = None) -> None:
    """Emulate ``plan`` (or ``stream(smem_a, smem_b, tmem_base, tmem_sfa, tmem_sfb)``) and compare D with the
    reference MMA of the layouts' elements; EmulationError names the first differing element. A cta_group::2
    plan runs on a pair of CTAs: each holds its rows of A, its half of B's rows, its SFA rows and all of SFB."""
    if not isinstance(plan, MmaPlan):
        raise TypeError(f"verify_mma: expected an MmaPlan (make_mma), got {type(plan).__name__}")
    rng = np.random.default_rng(seed)
    m, n, k = plan.shape
    group = plan.atom.cta_group
    a_type, b_type = plan.a.tensor.dtype.name, plan.b.tensor.dtype.name
    a = exact_codes(a_type, plan.a.tensor.bits, rng, (m, k))
    b = exact_codes(b_type, plan.b.tensor.bits, rng, (n, k))
    tmem_a = isinstance(plan.a, TmemOperand)
    a_bytes = 0 if isinstance(plan.a, TmemOperand) else -(-smem_bytes_needed(plan.a.tensor) // 1024) * 1024
    emu = Sm100Emulator(smem_bytes=a_bytes + smem_bytes_needed(plan.b.tensor), fill_tmem=0, ctas=group)
    emu.alloc(512, cta_group=group)
    _load_operands(emu, plan, a, b, a_bytes)
    rows_a = m // group
    a_end = plan.a.column + k * plan.a.tensor.bits // 32 if isinstance(plan.a, TmemOperand) else 0
    sfa_at = max(_SFA_COLUMN, -(-a_end // 32) * 32)
    sfb_at = sfa_at + _SFB_COLUMN - _SFA_COLUMN
    sfa = sfb = None
    sf_type = "ue8m0"
    if plan.sfa is not None and plan.sfb is not None:
        sf_type = next(t for t, v in MMA_KINDS[plan.atom.kind].scale_types.items()
                       if v == plan.idesc.fields["scale_type"])
        slots = plan.sfa.mmas * plan.sfa.scale_vec
        sfa, sfb = exact_sf_codes(sf_type, rng, (m, slots)), exact_sf_codes(sf_type, rng, (n, slots))
        for c in range(group):
            write_sfs(emu.ctas[c].tmem, plan.sfa, sfa_at, sfa[c * rows_a:(c + 1) * rows_a])
            write_sfs(emu.ctas[c].tmem, plan.sfb, sfb_at, sfb)
    issues = (stream or plan.stream)(None if tmem_a else 0, a_bytes, 0, sfa_at, sfb_at)
    for issue in issues:
        emu.mma(issue)
    if plan.sfa is not None and sfa is not None and sfb is not None:
        block = plan.a.k_per_mma // plan.sfa.scale_vec
        want = reference_mma(a, b, a_type, b_type, sfa[:, :k // block], sfb[:, :k // block], sf_type, block)
    else:
        want = reference_mma(a, b, a_type, b_type)
    got = np.concatenate([read_d(emu.ctas[c].tmem, plan.d) for c in range(group)])
    got = got.view(np.float32) if plan.d.dtype.name != "i32" else got.view(np.int32)
    bad = np.argwhere(got != want.astype(got.dtype))
    if bad.size:
        i, j = (int(x) for x in bad[0])
        raise EmulationError(f"D[{i}, {j}] is {got[i, j]!r} after the MMAs, the layouts' elements give "
                             f"{float(want[i, j])!r} ({len(bad)} elements differ)")
