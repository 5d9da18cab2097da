"""A bit-exact, strict functional model of ``tcgen05.cp`` and the TMEM instructions around it.

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

import numpy as np

from ..arch.sm100.cp_forms import (DECOMPRESS_ELEMENTS, FP4_CONTAINER_SHIFT, FP4_DECOMPRESSION, FP6_DECOMPRESSION,
                                   FP6_REFUSAL)
from ..arch.sm100.descriptor import START_ADDRESS, SmemDescriptor
from ..arch.sm100.ldst_shapes import PACK_BITS
from ..arch.sm100.swizzle_modes import UNIT_BITS, UNIT_BYTES, SwizzleMode
from ..arch.sm100.tmem import CELL_BITS, COLUMNS, LANES, QUADRANT_LANES, check_alloc_columns, lane_quadrant, split_address
from ..atoms.tcgen05_cp import Tcgen05CpAtom, parse_cp_ptx
from ..atoms.tcgen05_ld import TmemLoadAtom
from ..errors import EmulationError, PlanError
from ..int_tuple import as_int

__all__ = ["Sm100Emulator", "CtaState", "source_units", "expand_fp4"]

_SMEM_WINDOW = START_ADDRESS.limit   # the descriptor's start field addresses 18 bits of the shared window


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
    if lin.max() + UNIT_BYTES > _SMEM_WINDOW:
        raise EmulationError(f"{ptx}: source reaches {int(lin.max()) + UNIT_BYTES:#x}, past the 18-bit address field")
    return lin


def expand_fp4(rows: np.ndarray) -> np.ndarray:
    """``.b8x16.b4x16_p64`` on whole 16-byte units: byte i of each unit is element i (bits [4i+3:4i] of bytes 0-7)
    moved to bits [5:2]; bytes 8-15 are ignored (docs/tcgen05-cp-decompression.md sections 2-3)."""
    units = rows.reshape(rows.shape[0], -1, UNIT_BYTES)
    data = units[:, :, :UNIT_BYTES // 2]
    codes = np.stack([data & 0xF, data >> 4], axis=-1).reshape(units.shape[0], units.shape[1], DECOMPRESS_ELEMENTS)
    return (codes << FP4_CONTAINER_SHIFT).astype(np.uint8).reshape(rows.shape)


class CtaState:
    """One CTA: its shared memory image, TMEM, TMEM allocation map and uncommitted async copies."""

    def __init__(self, smem_bytes: int, smem_base: int):
        self.smem = np.zeros(smem_bytes, dtype=np.uint8)
        self.smem_base = smem_base
        self.tmem = np.zeros((LANES, COLUMNS), dtype=np.uint32)
        self.allocated = np.zeros(COLUMNS, dtype=bool)
        self.pending: list[tuple[np.ndarray, int, np.ndarray, str]] = []

    def __repr__(self) -> str:
        cols = int(self.allocated.sum())
        return (f"CtaState(smem {self.smem.size} B at {self.smem_base:#x}, TMEM {cols} of 512 columns allocated, "
                f"{len(self.pending)} uncommitted cp)")


class Sm100Emulator:
    """CTAs with shared memory at ``smem_base`` and TMEM; issue ``cp``, ``commit``, then read back with ``ld``.

    ``fill_tmem`` is the value unallocated-then-allocated TMEM holds (alloc does not clear it; tests use a marker).
    """

    def __init__(self, smem_bytes: int = 64 * 1024, smem_base: int = 0, ctas: int = 1, fill_tmem: int = 0):
        smem_bytes, smem_base = as_int(smem_bytes, "smem_bytes"), as_int(smem_base, "smem_base")
        ctas, fill_tmem = as_int(ctas, "ctas"), as_int(fill_tmem, "fill_tmem")
        if not 0 <= fill_tmem < 1 << 32:
            raise EmulationError(f"fill_tmem {fill_tmem:#x} is not a 32-bit TMEM cell value")
        if smem_bytes < 0:
            raise EmulationError(f"smem_bytes {smem_bytes} is negative")
        if smem_base % UNIT_BYTES or smem_base < 0 or smem_base + smem_bytes > _SMEM_WINDOW:
            raise EmulationError(f"shared memory [{smem_base:#x}, {smem_base + smem_bytes:#x}) must be 16-byte "
                                 f"aligned and inside the {_SMEM_WINDOW:#x}-byte window a descriptor can address")
        if ctas not in (1, 2):
            raise EmulationError(f"the model has 1 CTA or a CTA pair, not {ctas}")
        self.ctas = [CtaState(smem_bytes, smem_base) for _ in range(ctas)]
        for c in self.ctas:
            c.tmem[:] = fill_tmem
        self.cta_group: int | None = None

    def __repr__(self) -> str:
        group = f", cta_group::{self.cta_group}" if self.cta_group else ""
        return f"Sm100Emulator({len(self.ctas)} CTA{'s' if len(self.ctas) > 1 else ''}{group}: {self.ctas!r})"

    # -- set-up -----------------------------------------------------------------------------------------------
    def _cta(self, cta) -> int:
        cta = as_int(cta, "cta")
        if not 0 <= cta < len(self.ctas):
            raise EmulationError(f"CTA {cta} does not exist: the emulator models {len(self.ctas)} CTA(s)")
        return cta

    def write_smem(self, address: int, data, cta: int = 0) -> None:
        """Store bytes at an absolute shared-window address of ``cta``."""
        c = self.ctas[self._cta(cta)]
        address = as_int(address, "write_smem: address")
        data = np.frombuffer(bytes(data), dtype=np.uint8) if not isinstance(data, np.ndarray) else \
            data.view(np.uint8).ravel()
        lo = address - c.smem_base
        if lo < 0 or lo + data.size > c.smem.size:
            raise EmulationError(f"shared-memory write [{address:#x}, {address + data.size:#x}) is outside "
                                 f"[{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        c.smem[lo:lo + data.size] = data

    def _group(self, cta_group: int) -> None:
        if self.cta_group is None:
            self.cta_group = cta_group
        elif self.cta_group != cta_group:
            raise EmulationError(f"cta_group::{cta_group} after cta_group::{self.cta_group}: all tcgen05 "
                                 f"instructions of a kernel must use the same .cta_group (PTX 9.0)")

    def alloc(self, ncols: int, cta_group: int = 1) -> int:
        """``tcgen05.alloc``: first fit, aligned to ``ncols``, in every CTA the group spans; returns the address."""
        try:
            check_alloc_columns(ncols)
        except PlanError as e:
            raise EmulationError(str(e)) from None
        self._group(cta_group)
        targets = self.ctas if cta_group == 2 else self.ctas[:1]
        if cta_group == 2 and len(self.ctas) != 2:
            raise EmulationError("cta_group::2 needs a CTA pair; build the emulator with ctas=2")
        for start in range(0, COLUMNS, ncols):
            if not any(c.allocated[start:start + ncols].any() for c in targets):
                for c in targets:
                    c.allocated[start:start + ncols] = True
                return start
        raise EmulationError(f"no {ncols} free TMEM columns (alloc would block forever)")

    def dealloc(self, taddr: int, ncols: int, cta_group: int = 1) -> None:
        lane, col = split_address(taddr)
        targets = self.ctas if cta_group == 2 else self.ctas[:1]
        for c in targets:
            if not c.allocated[col:col + ncols].all():
                raise EmulationError(f"dealloc of columns [{col}, {col + ncols}) that are not all allocated")
            c.allocated[col:col + ncols] = False

    # -- tcgen05.cp ---------------------------------------------------------------------------------------------
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

    def run(self, stream, cta: int = 0) -> None:
        """Issue a stream of ``(ptx, taddr, desc)`` and commit it."""
        for ptx, taddr, desc in stream:
            self.cp(ptx, taddr, desc, cta)
        self.commit(cta)

    # -- tcgen05.ld / tcgen05.st --------------------------------------------------------------------------------
    def _ldst_cells(self, c: CtaState, atom, warp: int, taddr: int, half_offset) -> np.ndarray:
        """``(32, registers, cells)`` (lane, column) pairs the warp's registers move; refused where PTX says
        the access is illegal or does not define it."""
        warp, taddr = as_int(warp, "warp"), as_int(taddr, f"{atom.ptx} taddr")
        if c.pending:
            raise EmulationError(f"{atom.ptx} before the issued tcgen05.cp were committed and waited for")
        if atom.half_split != (half_offset is not None):
            raise EmulationError(f"{atom.ptx}: immHalfSplitoff is {'required' if atom.half_split else 'not taken'}")
        lane_field, col0 = split_address(taddr)
        quadrant = lane_quadrant(warp)
        if lane_field // QUADRANT_LANES not in (0, quadrant.start // QUADRANT_LANES):
            raise EmulationError(f"warp {warp} may only access lanes {quadrant.start}..{quadrant.stop - 1}; its "
                                 f"address has lane field {lane_field}")
        base = lane_field % QUADRANT_LANES
        if base % atom.lanes:
            raise EmulationError(f"{atom.ptx}: lane base {base} within the quadrant; PTX defines 0"
                                 f"{' and 16' if atom.lanes == 16 else ''} (docs/tcgen05-ld-st.md section 15)")
        out = np.zeros((32, atom.registers, 2 if atom.pack else 1, 2), dtype=np.int64)
        for t in range(32):
            lane_t, col_t = quadrant.start + base, col0
            if half_offset is not None and t >= 16:
                dl, dc = split_address(as_int(half_offset, "immHalfSplitoff"))
                lane_t, col_t = lane_t + dl, col_t + dc
            for j in range(atom.registers):
                for k, (lo, co) in enumerate(atom.cells(t, j)):
                    lane, col = lane_t + lo, col_t + co
                    if lane not in quadrant:
                        raise EmulationError(f"{atom.ptx}: thread {t} would reach lane {lane}, outside warp "
                                             f"{warp}'s quadrant")
                    if col >= COLUMNS or not c.allocated[col]:
                        raise EmulationError(f"{atom.ptx}: column {col} is not allocated")
                    out[t, j, k] = (lane, col)
        return out

    def ld(self, atom, warp: int, taddr: int, cta: int = 0, half_offset: int | None = None) -> np.ndarray:
        """``tcgen05.ld`` by warp ``warp``: a ``(32 threads, registers)`` uint32 array. With pack each register
        is the low halves of its two cells, low half = lower column [I]."""
        c = self.ctas[self._cta(cta)]
        cells = self._ldst_cells(c, atom, warp, taddr, half_offset)
        words = c.tmem[cells[..., 0], cells[..., 1]].astype(np.uint64)
        if atom.pack:
            half = np.uint64((1 << PACK_BITS) - 1)
            return ((words[..., 0] & half) | ((words[..., 1] & half) << np.uint64(PACK_BITS))).astype(np.uint32)
        return words[..., 0].astype(np.uint32)

    def st(self, atom, warp: int, taddr: int, registers, cta: int = 0, half_offset: int | None = None) -> None:
        """``tcgen05.st`` by warp ``warp`` of ``registers`` (32 threads x registers). With unpack each 16-bit half
        goes zero-extended into its cell [I]."""
        c = self.ctas[self._cta(cta)]
        regs = np.asarray(registers, dtype=np.uint64)
        if regs.shape != (32, atom.registers):
            raise EmulationError(f"{atom.ptx}: {regs.shape} registers given, (32, {atom.registers}) expected")
        cells = self._ldst_cells(c, atom, warp, taddr, half_offset)
        if atom.pack:
            half = np.uint64((1 << PACK_BITS) - 1)
            c.tmem[cells[..., 0, 0], cells[..., 0, 1]] = (regs & half).astype(np.uint32)
            c.tmem[cells[..., 1, 0], cells[..., 1, 1]] = (regs >> np.uint64(PACK_BITS)).astype(np.uint32)
        else:
            c.tmem[cells[..., 0, 0], cells[..., 0, 1]] = regs.astype(np.uint32)

    def ld_32x32b(self, warp: int, taddr: int, num: int, cta: int = 0) -> np.ndarray:
        """``tcgen05.ld.32x32b.x<num>``: thread t gets lane ``32*(warp%4)+t``, columns ``col..col+num-1``."""
        return self.ld(TmemLoadAtom("32x32b", num), warp, taddr, cta)

    def tmem_image(self, cta: int = 0) -> np.ndarray:
        """A copy of the whole TMEM of ``cta`` (lanes x columns, uint32), for comparisons."""
        return self.ctas[self._cta(cta)].tmem.copy()
