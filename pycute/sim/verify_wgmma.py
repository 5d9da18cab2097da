"""wgmma plans in the emulator against the layouts alone: A's and B's elements written into shared memory through
their tiles' layouts and swizzles (an A in registers packed into each thread's registers through its fragment), D's
starting values into each thread's registers through the accumulator fragment, every warpgroup's stream (the
plan's, or a given one) executed, and D read back through the fragment and compared bit for bit with
``reference_mma`` of the elements over the whole K (plus the starting D when accumulating).

The element values are 0, +-1/2 and +-1 (integers -2..2, u8 0..2) and D starts at multiples of 1/4 in [-4, 4]:
every product is a multiple of 1/4 of magnitude at most 1, so every partial sum of a tile with K <= 500 is exact in
f16 and f32 whatever the order the hardware sums in (and far from the reduced-precision range of fp8
accumulation). Any difference is a wrong element, offset, major or register, not rounding."""
from __future__ import annotations

from typing import Callable

import attrs
import numpy as np

from ..arch.sm90.wgmma import WARPGROUP_THREADS
from ..errors import EmulationError
from ..mma.gmma_operand import GmmaDescriptor
from ..mma.wgmma_plan import WgmmaPlan
from ..tensor.rmem import RegisterFragment
from ..tensor.stages import stage_offset
from ..tensor.values import smem_bytes_needed
from .emulator import Sm90Emulator
from .executors.wgmma import D_BITS, d_codes_of, d_values, pack_fragment, unpack_fragment
from .operand import decode, reference_mma
from .verify_mma import write_tile

__all__ = ["verify_wgmma", "wgmma_exact_codes", "WgmmaOperands", "wgmma_operands", "place_operands", "emulate_wgmma", "expected_d",
           "d_codes", "EXACT_K"]

#: The largest K whose sums stay exact in an f16 accumulator with these values (|sum| <= K + 4, in quarters).
EXACT_K = 500


def wgmma_exact_codes(dtype: str, bits: int, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Random element codes of 0, +-1/2, +-1 (integers -2..2; u8 0..2)."""
    if dtype in ("i8", "u8"):
        return (rng.integers(0 if dtype == "u8" else -2, 3, size=shape) & 0xFF).astype(np.uint64)
    values = rng.integers(-2, 3, size=shape) / 2.0
    if bits == 32:                                   # tf32: the f32 bit patterns (low mantissa bits 0)
        return values.astype(np.float32).view(np.uint32).astype(np.uint64)
    codes = np.arange(1 << bits, dtype=np.uint64)
    with np.errstate(invalid="ignore", over="ignore"):
        decoded = decode(codes, dtype)
    table = {v: int(np.flatnonzero(decoded == v)[0]) for v in (-1.0, -0.5, 0.0, 0.5, 1.0)}
    return np.vectorize(table.__getitem__, otypes=[np.uint64])(values)


def _d_start(d: str, rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """D's starting codes: multiples of 1/4 in [-4, 4] (integers -16..16)."""
    values = rng.integers(-16, 17, size=shape)
    return d_codes_of(values if d == "i32" else values / 4.0, d)


@attrs.frozen
class WgmmaOperands:
    """One tile's inputs: shared memory's bytes from address 0 (A's tile at ``smem_a``, None for an A in registers;
    B's at ``smem_b``), the element codes ``a`` (M x K) and ``b`` (N x K), an A in registers packed per thread,
    and D's starting codes (M x N) with their registers."""

    image: np.ndarray
    smem_a: int | None
    smem_b: int
    a: np.ndarray
    b: np.ndarray
    a_registers: np.ndarray | None
    d0: np.ndarray
    d0_registers: np.ndarray


def _placed(desc: GmmaDescriptor, values: dict) -> tuple[int, int]:
    """(bytes from the buffer to the tile at the run-time indices' values, bytes the buffer needs)."""
    shift = stage_offset(desc.stages, {s.name: values[s.name] for s in desc.stages if s.name in values},
                         "verify_wgmma: ")
    return shift, -(-(smem_bytes_needed(desc.tensor) + shift) // 1024) * 1024


def wgmma_operands(plan: WgmmaPlan, seed: int = 0, **values: int) -> WgmmaOperands:
    """Random exact operands for ``plan`` at the run-time indices' ``values``, laid out as the plan reads them."""
    rng = np.random.default_rng(seed)
    m, n, k = plan.shape
    if plan.d.dtype.name == "f16" and k > EXACT_K:
        raise EmulationError(f"verify_wgmma: K {k} > {EXACT_K}: f16 sums of these values would not stay exact")
    a = wgmma_exact_codes(plan.atom.a, _bits(plan), rng, (m, k))
    b = wgmma_exact_codes(plan.atom.b, plan.b.tensor.bits, rng, (n, k))
    return place_operands(plan, a, b, _d_start(plan.d.dtype.name, rng, (m, n)), **values)


def place_operands(plan: WgmmaPlan, a: np.ndarray, b: np.ndarray, d0: np.ndarray, **values: int) -> WgmmaOperands:
    """Element codes ``a`` (M x K), ``b`` (N x K) and D's starting codes ``d0`` (M x N) laid out as ``plan`` reads
    them at the run-time indices' ``values``: A's tile from shared byte 0 (or A packed into each thread's
    registers), B's after it, D through the accumulator fragment."""
    b_shift, b_bytes = _placed(plan.b, values)
    a_regs, smem_a, a_shift, a_bytes = None, None, 0, 0
    if isinstance(plan.a, GmmaDescriptor):                  # A's tile at 0, B's after it
        smem_a = 0
        a_shift, a_bytes = _placed(plan.a, values)
    else:
        assert plan.a.layout is not None
        a_regs = pack_fragment(a.T.reshape(-1), plan.a.layout, plan.a.threads, plan.a.dtype.bits)
    image = np.zeros(a_bytes + b_bytes, dtype=np.uint8)
    if isinstance(plan.a, GmmaDescriptor):
        write_tile(image, a_shift, plan.a.tensor, a)
    write_tile(image, a_bytes + b_shift, plan.b.tensor, b)
    d_regs = pack_fragment(d0.T.reshape(-1), plan.fragment, plan.d.threads, D_BITS[plan.d.dtype.name])
    return WgmmaOperands(image, smem_a, a_bytes, a, b, a_regs, d0, d_regs)


def _bits(plan: WgmmaPlan) -> int:
    return plan.a.dtype.bits if isinstance(plan.a, RegisterFragment) else plan.a.tensor.bits


def emulate_wgmma(plan: WgmmaPlan, ops: WgmmaOperands, accumulate: bool,
                  stream: Callable[..., list] | None = None, **values: int) -> np.ndarray:
    """Every warpgroup's stream (``plan.stream`` or ``stream(smem_a, smem_b, scale_d, warpgroup, **values)``) in the
    emulator: the D registers ((threads, registers) uint32) the tile leaves."""
    emu = Sm90Emulator(smem_bytes=max(ops.image.size, 16))
    emu.write_smem(0, ops.image)
    out = ops.d0_registers.copy()
    for g in range(plan.warpgroups):
        rows = slice(WARPGROUP_THREADS * g, WARPGROUP_THREADS * (g + 1))
        d = out[rows]
        for issue in (stream or plan.stream)(ops.smem_a, ops.smem_b, accumulate, g, **values):
            a = None if ops.a_registers is None else ops.a_registers[rows][:, list(issue.a_registers)]
            d = emu.wgmma(issue, d, a)
        out[rows] = d
    return out


def d_codes(plan: WgmmaPlan, registers: np.ndarray) -> np.ndarray:
    """(M, N) D codes from every thread's D registers, through the accumulator fragment."""
    m, n, _ = plan.shape
    return unpack_fragment(registers, plan.fragment, plan.d.threads, D_BITS[plan.d.dtype.name]).reshape(n, m).T


def expected_d(plan: WgmmaPlan, ops: WgmmaOperands, accumulate: bool) -> np.ndarray:
    """(M, N) D codes the layouts' elements give: A B^T (+ the starting D), rounded to D's type."""
    d = plan.d.dtype.name
    prod = reference_mma(ops.a, ops.b, plan.atom.a, plan.atom.b)
    return d_codes_of(prod + d_values(ops.d0, d) if accumulate else prod, d)


def verify_wgmma(plan: WgmmaPlan, seed: int = 0, stream: Callable[..., list] | None = None, **values: int) -> None:
    """Emulate ``plan`` (or ``stream``) overwriting D (scale-d 0, D starting at other values) and accumulating
    into it (scale-d 1), and compare D with the reference MMA of the layouts' elements bit for bit; EmulationError
    names the first differing element. Run-time indices without a value are verified at their first and last."""
    if not isinstance(plan, WgmmaPlan):
        raise TypeError(f"verify_wgmma: expected a WgmmaPlan (make_mma with wgmma_accumulator), got "
                        f"{type(plan).__name__}")
    stages = {s.name: s.extent for d in (plan.a, plan.b) if isinstance(d, GmmaDescriptor) for s in d.stages}
    if set(stages) - set(values):         # unvalued run-time indices: their first and their last value
        for ends in ({n: 0 for n in stages}, {n: e - 1 for n, e in stages.items()}):
            verify_wgmma(plan, seed, stream, **{**ends, **values})
        return
    ops = wgmma_operands(plan, seed, **values)
    for accumulate in (False, True):
        got = d_codes(plan, emulate_wgmma(plan, ops, accumulate, stream, **values))
        want = expected_d(plan, ops, accumulate)
        bad = np.argwhere(got != want)
        if bad.size:
            i, j = (int(x) for x in bad[0])
            how = "accumulating" if accumulate else "overwriting"
            raise EmulationError(f"D[{i}, {j}] is {int(got[i, j]):#x} after the wgmma ({how}), the layouts' "
                                 f"elements give {int(want[i, j]):#x} ({len(bad)} elements differ)")
