"""The ``tcgen05.cp`` executor: a bit-exact, strict functional model of the copy and its commit.

Written from the PTX ISA (facts and their tags in docs/ptx-tcgen05.md). Shared memory is a byte array at an explicit
absolute shared-window address, because swizzles XOR absolute address bits (section 6.4). TMEM is 128 lanes x 512
columns of 32-bit cells per CTA; a second CTA models the cta_group::2 pair. What the hardware is not known to
accept, the model refuses with an ``EmulationError`` (or ``DescriptorError`` for a malformed descriptor).

Policies marked [inferred] follow the spec note's inferences (TVM's B200 round trips, CUTLASS usage), not PTX text:
  * base offset must be 0 and LBO mode must be 0 for cp; the 128B-with-32B-atom swizzle is refused for cp;
  * the TMEM column field must be a multiple of 4 (128-bit aligned);
  * an 8-row swizzled core group must stay inside one swizzle period, so no row crosses its swizzle row;
  * cta_group::2 is issued from the even CTA; each CTA copies its own shared memory into its own TMEM.
"""
from __future__ import annotations

from typing import Callable, Iterable

import numpy as np

from ...arch.sm100.tcgen05_cp import (DECOMPRESS_ELEMENTS, FP4_CONTAINER_SHIFT, FP4_DECOMPRESSION, FP6_DECOMPRESSION,
                                      FP6_REFUSAL)
from ...arch.sm100.descriptor import SmemDescriptor
from ...arch.sm100.swizzle_modes import UNIT_BITS, UNIT_BYTES, SwizzleMode
from ...arch.sm100.tmem import CELL_BITS, COLUMNS, LANES, split_address
from ...atoms.tcgen05_cp import Tcgen05CpAtom, Tcgen05CpIssue, parse_cp_ptx
from ...errors import EmulationError, PlanError
from ...int_tuple import as_int
from ..machine import SMEM_WINDOW, CtaState, Machine, tmem_operand

__all__ = ["Tcgen05CpExecutor", "source_units", "expand_fp4", "decode"]

_MASK64 = (1 << 64) - 1


def source_units(atom: Tcgen05CpAtom, d: SmemDescriptor, ptx: str = "tcgen05.cp") -> np.ndarray:
    """The shared-window byte address of each 16-byte unit a ``tcgen05.cp`` reads, ``rows x units``, as the
    descriptor walks the K-major canonical layout and then swizzles (PTX #tcgen05-canonical-layouts)."""
    rows, units = atom.rows, atom.units
    pitch = d.swizzle.row_pitch
    unit_stride = d.lbo if d.swizzle is SwizzleMode.NONE else UNIT_BYTES
    r = np.arange(rows)[:, None]
    u = np.arange(units)[None, :]
    lin = d.start_address + (r % 8) * pitch + (r // 8) * d.sbo + u * unit_stride
    if d.swizzle is not SwizzleMode.NONE:
        period = d.swizzle.period
        in_group = min(rows, 8)
        for g in range(-(-rows // 8)):
            g_start = d.start_address + g * d.sbo
            if (g_start % period) + (in_group - 1) * pitch + UNIT_BYTES * units > period:
                raise EmulationError(
                    f"{ptx}: rows {8 * g}..{8 * g + in_group - 1} starting at {g_start:#x} cross a "
                    f"{period}-byte {d.swizzle.name} swizzle period (a row must stay in its swizzle row)")
        sw = d.swizzle.byte_swizzle
        if sw is not None:
            lin = sw(lin)
    if lin.max() + UNIT_BYTES > SMEM_WINDOW:
        raise EmulationError(f"{ptx}: source reaches {int(lin.max()) + UNIT_BYTES:#x}, past the 18-bit address field")
    return lin


def expand_fp4(rows: np.ndarray) -> np.ndarray:
    """``.b8x16.b4x16_p64`` on whole 16-byte units: byte i of each unit is element i (bits [4i+3:4i] of bytes 0-7)
    moved to bits [5:2]; bytes 8-15 are ignored (docs/tcgen05-cp-decompression.md sections 2-3)."""
    units = rows.reshape(rows.shape[0], -1, UNIT_BYTES)
    data = units[:, :, :UNIT_BYTES // 2]
    codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(units.shape[0], units.shape[1], DECOMPRESS_ELEMENTS)
    return (codes << FP4_CONTAINER_SHIFT).astype(np.uint8).reshape(rows.shape)


class Tcgen05CpExecutor(Machine):
    """``tcgen05.cp`` and ``tcgen05.commit`` on a ``Machine`` (the emulator mixes this in)."""

    def cp(self, ptx: str, taddr: int, desc: int, cta: int = 0) -> None:
        """Issue one ``tcgen05.cp`` from ``cta``; its writes land at the next ``commit``."""
        if not isinstance(ptx, str):
            raise TypeError(f"tcgen05.cp: the opcode must be a string, got {ptx!r}")
        cta = self._cta(cta)
        taddr, desc = as_int(taddr, "tcgen05.cp taddr"), as_int(desc, "tcgen05.cp descriptor")
        try:
            atom, fmt = parse_cp_ptx(ptx)
        except PlanError as e:
            raise EmulationError(str(e)) from None
        if fmt == FP6_DECOMPRESSION:
            raise EmulationError(f"{ptx}: {FP6_REFUSAL}")
        self._group(atom.cta_group)
        d = SmemDescriptor.decode(desc)
        if d.base_offset != 0:
            raise EmulationError(f"descriptor base offset {d.base_offset} is not modelled (nonzero base offsets "
                                 f"are undocumented); align the buffer to its swizzle period")
        if d.lbo_mode != 0:
            raise EmulationError("descriptor LBO mode 1 (absolute address) is documented only for tcgen05.mma")
        if d.swizzle is SwizzleMode.B128_BASE32B:
            raise EmulationError("swizzle mode 128B-with-32B-atoms is M/N-major only and unspecified for tcgen05.cp")
        if atom.cta_group == 2:
            if len(self.ctas) != 2:
                raise EmulationError("cta_group::2 needs a CTA pair; build the emulator with ctas=2")
            if cta % 2:
                raise EmulationError("cta_group::2 issued from the odd CTA of the pair is unverified; issue from "
                                     "the even CTA")
            targets = [0, 1]
        else:
            targets = [cta]
        for t in targets:
            self._cp_one(self.ctas[t], atom, taddr, d, ptx, fmt)

    def _cp_one(self, c: CtaState, atom: Tcgen05CpAtom, taddr: int, d: SmemDescriptor, ptx: str,
                fmt: str | None = None) -> None:
        lane0, col0 = split_address(taddr)
        rows, ncols = atom.rows, atom.columns
        if (col0 * CELL_BITS) % UNIT_BITS:
            raise EmulationError(f"{ptx}: TMEM column {col0} is not 128-bit aligned (a multiple of 4)")
        if col0 + ncols > COLUMNS:
            raise EmulationError(f"{ptx}: columns [{col0}, {col0 + ncols}) overflow the {COLUMNS}-column TMEM")
        if not c.allocated[col0:col0 + ncols].all():
            raise EmulationError(f"{ptx}: columns [{col0}, {col0 + ncols}) are not all inside a TMEM allocation")
        pattern = np.array(atom.lane_table, dtype=np.int64)                         # rows x replicas
        lanes = lane0 + pattern
        if lanes.max() >= LANES:
            raise EmulationError(f"{ptx}: lane field {lane0} puts rows at lane {int(lanes.max())}, past the "
                                 f"{LANES}-lane TMEM")
        data = self._read_rows(c, atom, d, ptx)                       # rows x (16*units) bytes
        if fmt == FP4_DECOMPRESSION:
            data = expand_fp4(data)
        words = data.view("<u4").reshape(rows, ncols)
        reps = pattern.shape[1]
        c.pending.append((lanes.reshape(-1), col0, np.repeat(words, reps, axis=0), ptx))

    @staticmethod
    def _read_rows(c: CtaState, atom: Tcgen05CpAtom, d: SmemDescriptor, ptx: str) -> np.ndarray:
        """The source rows as the descriptor walks them: K-major canonical layout, then the swizzle."""
        lin = source_units(atom, d, ptx)
        off = lin - c.smem_base
        if off.min() < 0 or off.max() + UNIT_BYTES > c.smem.size:
            raise EmulationError(f"{ptx}: source bytes [{int(lin.min()):#x}, {int(lin.max()) + UNIT_BYTES:#x}) are "
                                 f"outside shared memory [{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        idx = off[:, :, None] + np.arange(UNIT_BYTES)[None, None, :]
        return np.ascontiguousarray(c.smem[idx].reshape(atom.rows, UNIT_BYTES * atom.units))

    def commit(self, cta: int = 0) -> None:
        """``tcgen05.commit`` + mbarrier wait: the issued copies complete. Unordered copies that write the same
        TMEM cell race (two cp are not pipelined with each other), so that is refused."""
        targets = range(len(self.ctas)) if self.cta_group == 2 else [self._cta(cta)]
        for t in targets:
            c = self.ctas[t]
            written = np.zeros((LANES, COLUMNS), dtype=bool)
            for lanes, col0, words, ptx in c.pending:
                ncols = words.shape[1]
                block = written[lanes, col0:col0 + ncols]
                if block.any() or len(set(lanes.tolist())) != lanes.size:
                    raise EmulationError(f"{ptx}: writes TMEM cells another uncommitted cp also writes (a race)")
                written[lanes, col0:col0 + ncols] = True
            for lanes, col0, words, ptx in c.pending:
                c.tmem[lanes, col0:col0 + words.shape[1]] = words
            c.pending.clear()

    def run(self, stream: Iterable[tuple[str, int, int]], cta: int = 0) -> None:
        """Issue a stream of ``(ptx, taddr, desc)`` and commit it."""
        for ptx, taddr, desc in stream:
            self.cp(ptx, taddr, desc, cta)
        self.commit(cta)


def decode(op: str, args: list, value: Callable[[str], int]) -> Tcgen05CpIssue:
    """A compiled ``tcgen05.cp [taddr], desc`` statement as the issue record a plan streams (``value`` reads a
    register or immediate operand)."""
    return Tcgen05CpIssue(op, tmem_operand(args[0], value, "tcgen05.cp"), value(args[1]) & _MASK64)
