"""The register-fragment conversion in numpy (docs/fragments.md): ``plan.emulate`` runs the plan's program -- every
``cvt`` (``sim.convert``'s exact rounding), every shuffle round of every warp, every ``prmt`` -- and
``plan.reference`` derives A's registers from the coordinates alone (each of A's elements is the source's element
at its row and permuted column, rounded). The two are independent: a wrong unit, round, lane or selector in the
program makes them differ."""
from __future__ import annotations

import numpy as np

from ..arch.sm90.warp import WARP_THREADS
from ..errors import EmulationError
from ..mma.convert import FragmentConvertPlan, Unit
from ..tensor.coords import fragment_coords
from ..views import provides
from .convert import pack_pair, round_f32

__all__ = ["emulate_convert", "reference_convert", "byte_perm"]


def _registers(plan: FragmentConvertPlan, registers: np.ndarray) -> np.ndarray:
    regs = np.asarray(registers)
    regs = regs.view(np.uint32) if regs.dtype == np.float32 else regs.astype(np.uint32)
    want = (plan.src.threads, plan.src_registers)
    if regs.shape != want:
        raise EmulationError(f"the source is (threads, registers) = {want}, got an array of {regs.shape}")
    return regs


def _unit(plan: FragmentConvertPlan, src: np.ndarray, u: Unit) -> np.ndarray:
    c = plan.conversion
    return pack_pair(src[:, u.hi], src[:, u.lo], c.dst, c.satfinite).astype(np.uint64)


def byte_perm(a: np.ndarray, b: np.ndarray, selector: np.ndarray) -> np.ndarray:
    """``prmt.b32`` in its default mode (PTX #data-movement-and-conversion-instructions-prmt): byte ``i`` of the
    result is byte ``selector`` nibble ``i`` of ``{b, a}`` (0-3 from ``a``, 4-7 from ``b``)."""
    pool = (np.asarray(a, dtype=np.uint64) | (np.asarray(b, dtype=np.uint64) << np.uint64(32)))
    sel = np.asarray(selector, dtype=np.uint64)
    out = np.zeros(pool.shape, dtype=np.uint64)
    for i in range(4):
        k = (sel >> np.uint64(4 * i)) & np.uint64(7)
        out |= ((pool >> (k * np.uint64(8))) & np.uint64(0xFF)) << np.uint64(8 * i)
    return out.astype(np.uint32)


@provides("emulate", FragmentConvertPlan)
def emulate_convert(plan: FragmentConvertPlan, registers: np.ndarray) -> np.ndarray:
    """(threads, A registers) uint32: the plan's program on every thread's source registers."""
    src = _registers(plan, registers)
    bits = np.uint64(plan.conversion.result_bits)
    units = {u: _unit(plan, src, u) for u in plan.units}
    threads = plan.dst.threads
    out = np.zeros((threads, plan.dst_registers), dtype=np.uint64)
    if not plan.rounds:
        for r, regs in enumerate(plan.registers):
            for k, u in enumerate(regs):
                out[:, r] |= units[u] << (np.uint64(k) * bits)
        return out.astype(np.uint32)
    t = np.arange(threads)
    lane, base = t % WARP_THREADS, t - t % WARP_THREADS
    received = []
    for rnd in plan.rounds:
        word = np.zeros(threads, dtype=np.uint64)
        for th in range(threads):
            for j, u in enumerate(rnd.send[lane[th]]):
                word[th] |= units[u][th] << (np.uint64(j) * bits)
        received.append(word[base + np.asarray(rnd.src_lane)[lane]])
    for r, asm in enumerate(plan.assembly):
        out[:, r] = byte_perm(received[asm.a], received[asm.b], np.asarray(asm.selector)[lane])
    return out.astype(np.uint32)


@provides("reference", FragmentConvertPlan)
def reference_convert(plan: FragmentConvertPlan, registers: np.ndarray) -> np.ndarray:
    """(threads, A registers) uint32 from the coordinates: A's element (row, col) is the source's element (row,
    ``permutation[col]``), rounded by the conversion, packed low value first."""
    src = _registers(plan, registers)
    s, d = fragment_coords(plan.src), fragment_coords(plan.dst)
    rows = s.shape[0]
    element = np.zeros(s.shape[0] * s.shape[1], dtype=np.uint32)
    element[(s.row + rows * s.col).ravel()] = src.ravel()
    source = element[d.row + rows * np.asarray(plan.permutation)[d.col]]
    c = plan.conversion
    codes = round_f32(source, c.dst, c.satfinite).astype(np.uint64)
    per = 32 // c.bits
    out = np.zeros((d.threads, d.values // per), dtype=np.uint64)
    for j in range(per):
        out |= codes[:, j::per] << np.uint64(j * c.bits)
    return out.astype(np.uint32)
