"""The machine the executors act on: CTAs with their shared memory, TMEM and TMEM allocation map, and the
kernel-wide ``cta_group`` every tcgen05 instruction shares (PTX ISA #tcgen05-cta-group).

Shared memory is a byte array at an explicit absolute shared-window address, because swizzles XOR absolute address
bits (docs/ptx-tcgen05.md section 6.4). TMEM is 128 lanes x 512 columns of 32-bit cells per CTA; a second CTA models
the cta_group::2 pair. What the hardware is not known to accept, the model refuses with an ``EmulationError``.
"""
from __future__ import annotations

import re
from typing import Callable, ClassVar

import numpy as np

from ..arch.sm100.descriptor import START_ADDRESS
from ..arch.sm100.swizzle_modes import UNIT_BYTES
from ..arch.sm100.tmem import COLUMNS, LANES, check_alloc_columns, split_address
from ..errors import CompileError, EmulationError, PlanError
from ..int_tuple import as_int

__all__ = ["Machine", "CtaState", "SMEM_WINDOW", "tmem_operand"]

SMEM_WINDOW = START_ADDRESS.limit   # the descriptor's start field addresses 18 bits of the shared window


def tmem_operand(operand: str, value: Callable[[str], int], what: str) -> int:
    """A ``[reg]`` or ``[reg+imm]`` TMEM address operand's 32-bit value (``value`` reads a register or immediate)."""
    m = re.fullmatch(r"\[(%\w+)(?:\s*\+\s*(-?\w+))?\]", operand)
    if not m:
        raise CompileError(f"{what} address operand {operand!r} is not [reg] or [reg+imm]")
    return (value(m.group(1)) + (value(m.group(2)) if m.group(2) else 0)) & 0xFFFFFFFF


class CtaState:
    """One CTA: its shared memory image, TMEM, TMEM allocation map and uncommitted async copies."""

    def __init__(self, smem_bytes: int, smem_base: int):
        self.smem = np.zeros(smem_bytes, dtype=np.uint8)
        self.smem_base = smem_base
        self.tmem = np.zeros((LANES, COLUMNS), dtype=np.uint32)
        self.allocated = np.zeros(COLUMNS, dtype=bool)
        self.pending: list[tuple[np.ndarray, int, np.ndarray, str]] = []
        # cp.async per thread: copies not yet committed, committed groups (oldest first), mbarrier arrivals
        self.cp_async_pending: dict[int, list[tuple[int, np.ndarray]]] = {}
        self.cp_async_groups: dict[int, list[list[tuple[int, np.ndarray]]]] = {}
        self.arrivals: dict[int, int] = {}
        self.tx_bytes: dict[int, int] = {}

    def __repr__(self) -> str:
        cols = int(self.allocated.sum())
        return (f"CtaState(smem {self.smem.size} B at {self.smem_base:#x}, TMEM {cols} of 512 columns allocated, "
                f"{len(self.pending)} uncommitted cp)")


class Machine:
    """CTAs with shared memory at ``smem_base`` and TMEM, and the state every instruction family shares: the TMEM
    allocation map and the kernel's ``cta_group``. The executors (``pycute.sim.executors``) add the instructions.

    ``fill_tmem`` is the value unallocated-then-allocated TMEM holds (alloc does not clear it; tests use a marker).
    """

    MAX_CTAS: ClassVar[int] = 2
    CTAS_WHY: ClassVar[str] = "one CTA or a cta_group::2 pair"

    def __init__(self, smem_bytes: int = 64 * 1024, smem_base: int = 0, ctas: int = 1, fill_tmem: int = 0):
        smem_bytes, smem_base = as_int(smem_bytes, "smem_bytes"), as_int(smem_base, "smem_base")
        ctas, fill_tmem = as_int(ctas, "ctas"), as_int(fill_tmem, "fill_tmem")
        if not 0 <= fill_tmem < 1 << 32:
            raise EmulationError(f"fill_tmem {fill_tmem:#x} is not a 32-bit TMEM cell value")
        if smem_bytes < 0:
            raise EmulationError(f"smem_bytes {smem_bytes} is negative")
        if smem_base % UNIT_BYTES or smem_base < 0 or smem_base + smem_bytes > SMEM_WINDOW:
            raise EmulationError(f"shared memory [{smem_base:#x}, {smem_base + smem_bytes:#x}) must be 16-byte "
                                 f"aligned and inside the {SMEM_WINDOW:#x}-byte window a descriptor can address")
        if not 1 <= ctas <= self.MAX_CTAS:
            raise EmulationError(f"{type(self).__name__} models 1 to {self.MAX_CTAS} CTAs ({self.CTAS_WHY}), not {ctas}")
        self.ctas = [CtaState(smem_bytes, smem_base) for _ in range(ctas)]
        for c in self.ctas:
            c.tmem[:] = fill_tmem
        self.cta_group: int | None = None

    def __repr__(self) -> str:
        group = f", cta_group::{self.cta_group}" if self.cta_group else ""
        return f"{type(self).__name__}({len(self.ctas)} CTA{'s' if len(self.ctas) > 1 else ''}{group}: {self.ctas!r})"

    # -- set-up -----------------------------------------------------------------------------------------------
    def _cta(self, cta) -> int:
        cta = as_int(cta, "cta")
        if not 0 <= cta < len(self.ctas):
            raise EmulationError(f"CTA {cta} does not exist: the emulator models {len(self.ctas)} CTA(s)")
        return cta

    def write_smem(self, address: int, data: bytes | np.ndarray, cta: int = 0) -> None:
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

    def tmem_image(self, cta: int = 0) -> np.ndarray:
        """A copy of the whole TMEM of ``cta`` (lanes x columns, uint32), for comparisons."""
        return self.ctas[self._cta(cta)].tmem.copy()
