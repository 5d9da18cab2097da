"""The register <-> shared executor: ``st.shared`` / ``ld.shared`` and ``stmatrix`` / ``ldmatrix`` of a whole warp
(PTX ISA #data-movement-and-conversion-instructions-st, -ld, #warp-level-matrix-store-instruction-stmatrix,
#warp-level-matrix-load-instruction-ldmatrix), and the packing conversions (``cvt.rn ...x2.f32``, exact models in
``sim.convert``). Misaligned addresses (undefined in PTX) and accesses outside the CTA's shared memory are refused.
The unpacking loads put each 4- or 6-bit element in the low bits of its byte [I: not run on any GPU pycute has
measured; the 8-bit forms are sm_100a's]."""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from ...arch.sm100.matrix import UNPACK_FORMATS
from ...arch.sm80.cvt import PackConversion
from ...arch.sm90.matrix import ROW_BYTES
from ...atoms.smem_ldst import SmemAtom, SmemIssue, SmemMatrixAtom
from ...errors import EmulationError
from ..convert import pack_pair
from ..machine import Machine, tmem_operand

__all__ = ["SmemLdStExecutor", "decode"]


def _byte_targets(atom: SmemAtom, addresses: np.ndarray) -> np.ndarray:
    """``(32, registers, 4)``: the shared byte each register byte of each lane moves (-1: none, past a narrow
    access)."""
    addresses = np.asarray(addresses, dtype=np.int64)
    if isinstance(atom, SmemMatrixAtom):
        rows = addresses[atom.form.row_lane()]
        if np.any(rows % ROW_BYTES):
            r = int(np.argmax(rows % ROW_BYTES != 0))
            raise EmulationError(f"{atom.ptx}: row {r}'s address {int(rows[r]):#x} is not 16-byte aligned (PTX: "
                                 f"undefined)")
        cells = atom.form.cells()
        return rows[cells[..., 0]] + cells[..., 1]
    if np.any(addresses % atom.width):
        t = int(np.argmax(addresses % atom.width != 0))
        raise EmulationError(f"{atom.ptx}: lane {t}'s address {int(addresses[t]):#x} is not {atom.width}-byte "
                             f"aligned (PTX: undefined)")
    k = np.arange(4 * atom.registers)
    out = np.where(k < atom.width, addresses[:, None] + k[None, :], -1)
    return out.reshape(32, atom.registers, 4)


class SmemLdStExecutor(Machine):
    """Warp-wide register <-> shared moves and the packing conversions, per CTA."""

    def _rel(self, targets: np.ndarray, atom: SmemAtom, cta: int, extent: int = 1) -> np.ndarray:
        c = self.ctas[self._cta(cta)]
        used = targets[targets >= 0]
        if used.size and (used.min() < c.smem_base or used.max() + extent > c.smem_base + c.smem.size):
            raise EmulationError(f"{atom.ptx}: touches shared [{int(used.min()):#x}, {int(used.max()) + extent:#x}), "
                                 f"outside [{c.smem_base:#x}, {c.smem_base + c.smem.size:#x})")
        return np.where(targets >= 0, targets - c.smem_base, -1)

    def smem_store(self, atom: SmemAtom, addresses: np.ndarray, registers: np.ndarray, cta: int = 0) -> None:
        """One warp's store: lane ``t`` gives ``addresses[t]`` and the 32-bit ``registers[t]`` (``atom.registers``
        each; a 1- or 2-byte store writes the low bytes of the first)."""
        if atom.op != "st":
            raise EmulationError(f"{atom.ptx} is a load")
        regs = np.ascontiguousarray(np.asarray(registers, dtype=np.uint32).reshape(32, atom.registers))
        rel = self._rel(_byte_targets(atom, addresses), atom, cta)
        data = regs.view(np.uint8).reshape(32, atom.registers, 4)
        smem = self.ctas[self._cta(cta)].smem
        smem[rel[rel >= 0]] = data[rel >= 0]

    def smem_load(self, atom: SmemAtom, addresses: np.ndarray, cta: int = 0) -> np.ndarray:
        """One warp's load: ``(32, atom.registers)`` uint32 (the unused bytes of a narrow load are 0)."""
        if atom.op != "ld":
            raise EmulationError(f"{atom.ptx} is a store")
        smem = self.ctas[self._cta(cta)].smem
        if isinstance(atom, SmemMatrixAtom) and atom.form.unpack:
            return self._unpack(atom, np.asarray(addresses, dtype=np.int64), cta)
        rel = self._rel(_byte_targets(atom, addresses), atom, cta)
        data = np.zeros(rel.shape, dtype=np.uint8)
        data[rel >= 0] = smem[rel[rel >= 0]]
        return data.reshape(32, -1).view(np.uint32).reshape(32, atom.registers)

    def _unpack(self, atom: SmemMatrixAtom, addresses: np.ndarray, cta: int) -> np.ndarray:
        bits, packed = UNPACK_FORMATS[str(atom.form.unpack)]
        rows = addresses[atom.form.row_lane()]
        if np.any(rows % ROW_BYTES):
            raise EmulationError(f"{atom.ptx}: a row address is not 16-byte aligned (PTX: undefined)")
        rel = self._rel(rows, atom, cta, ROW_BYTES)
        smem = self.ctas[self._cta(cta)].smem
        prefix = smem[rel[:, None] + np.arange(packed)[None, :]]
        stream = np.unpackbits(prefix, axis=1, bitorder="little")[:, :16 * bits].reshape(-1, 16, bits)
        elements = (stream.astype(np.int64) << np.arange(bits)[None, None, :]).sum(axis=2)  # element i: bits [bi, bi+b)
        cells = atom.form.cells()
        data = elements.astype(np.uint8)[cells[..., 0], cells[..., 1]]
        return np.ascontiguousarray(data).reshape(32, -1).view(np.uint32).reshape(32, atom.registers)

    @staticmethod
    def cvt_pack(conversion: PackConversion, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``cvt.rn{.satfinite}.<pair>.f32 d, a, b`` elementwise on f32 bit patterns: ``a`` in the upper half."""
        return pack_pair(a, b, conversion.dst, conversion.satfinite)


_ADDRESS = re.compile(r"^\[.*\]$")


def decode(op: str, args: list, value: Callable[[str], int]) -> SmemIssue:
    """A compiled stmatrix / ldmatrix / st.shared / ld.shared as its issue record: the thread's address operand
    and, for a store, its registers' values."""
    operand = next((a for a in args if _ADDRESS.match(a.strip())), None)
    if operand is None:
        raise EmulationError(f"{op}: no [address] operand in {args}")
    text = operand.strip().replace(" ", "")
    if re.fullmatch(r"\[-?\w+\]", text) and not text.strip("[]").startswith("%"):
        address = value(text.strip("[]")) & 0xFFFFFFFF
    else:
        address = tmem_operand(text, value, op)
    data: tuple[int, ...] = ()
    if op.startswith("st"):
        regs = next(a for a in args if a is not operand).strip().strip("{}")
        data = tuple(value(r.strip()) & 0xFFFFFFFF for r in regs.split(","))
    return SmemIssue(op, address, data)
