"""The warp-collective matrix moves between registers and shared memory (PTX ISA
#warp-level-matrix-store-instruction-stmatrix, #warp-level-matrix-load-instruction-ldmatrix), as data: each form's
spelling, targets, SASS and where every byte goes.

A form moves ``registers`` 32-bit registers per thread; register ``g`` of every thread together fills the shared
rows ``8 g .. 8 g + 7`` (16 bytes each, 16-byte aligned, anywhere in shared memory), and the address of row ``r`` is
the one lane ``row_lane[r]`` gives. ``cells()[t, g, b]`` is ``(row, byte in the row)`` of byte ``b`` of register
``g`` of lane ``t`` (CuTe's ``SM75_U32x4_LDSM_N`` / ``SM90_U32x4_STSM_N`` and the ``_T`` forms encode the same maps
as thread-value layouts):

* ``m8n8`` (16-bit elements): lane ``t`` holds row ``t / 4``, elements ``2 (t % 4)`` and ``2 (t % 4) + 1`` of each
  8x8 matrix, the lower element in the low half; ``.trans`` stores the matrix's column ``c`` as shared row ``c``.
  Without ``.trans`` the element width does not matter: lane ``t``'s register is the 4 bytes at ``4 (t % 4)`` of
  row ``t / 4``, so pycute uses it for 8- and 32-bit elements too.
"""
from __future__ import annotations

from typing import Literal

import attrs
import numpy as np

from ...errors import PlanError

__all__ = ["MatrixOp", "MatrixForm", "MATRIX_NUMS", "ROW_BYTES", "ROWS_PER_REGISTER", "LDMATRIX_TARGETS",
           "STMATRIX_TARGETS", "m8n8_forms"]

MatrixOp = Literal["st", "ld"]
MATRIX_NUMS = (4, 2, 1)               # .x4, .x2, .x1: matrices per instruction, widest first
ROW_BYTES = 16                        # one matrix row in shared memory, 16-byte aligned
ROWS_PER_REGISTER = 8                 # register g of the warp's 32 lanes fills rows 8g .. 8g+7
#: ldmatrix is sm_75 and later; stmatrix sm_90 and later (PTX ISA target tables).
LDMATRIX_TARGETS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a",
                    "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a")
STMATRIX_TARGETS = ("sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f", "sm_120",
                    "sm_120a")


@attrs.frozen
class MatrixForm:
    """One ``stmatrix`` / ``ldmatrix`` form: ``shape`` (``m8n8``; sm_100a adds ``m16n8``, ``m16n16``, ``m8n16``),
    ``num`` matrices, ``.trans``, the element ``type`` and, for sm_100a's unpacking loads, the packed source
    format."""

    op: MatrixOp
    shape: str
    num: int
    trans: bool
    type: str
    targets: tuple[str, ...]
    registers: int                        # 32-bit registers per lane
    sass: str
    unpack: str | None = None             # "b6x16_p32" / "b4x16_p64": 16 packed elements per 16-byte row

    def __attrs_post_init__(self) -> None:
        if self.num not in MATRIX_NUMS:
            raise PlanError(f"{self.op}matrix takes .x1, .x2 or .x4, not .x{self.num}")

    @property
    def ptx(self) -> str:
        trans = ".trans" if self.trans else ""
        kind = f"b8x16.{self.unpack}" if self.unpack else self.type
        return f"{self.op}matrix.sync.aligned.{self.shape}.x{self.num}{trans}.shared.{kind}"

    @property
    def rows(self) -> int:
        """16-byte shared rows one instruction moves."""
        return ROWS_PER_REGISTER * self.registers

    @property
    def element_bits(self) -> int:
        return 16 if self.type == "b16" else 8

    def cells(self) -> np.ndarray:
        """``(32, registers, 4, 2)``: (row, byte offset in the row) of byte ``b`` of register ``g`` of lane ``t``
        (for an unpacking load the offset counts unpacked 8-bit elements)."""
        return _cells(self.shape, self.trans, self.registers)

    def row_lane(self) -> np.ndarray:
        """``(rows,)``: the lane whose address operand gives each row."""
        return _row_lanes(self.shape, self.rows)


def _cells(shape: str, trans: bool, registers: int) -> np.ndarray:
    t = np.arange(32)[:, None, None]
    g = np.arange(registers)[None, :, None]
    b = np.arange(4)[None, None, :]
    if not trans:                                           # m8n8, m8n16: row t/4, bytes 4(t%4) ..
        row, off = 8 * g + t // 4, 4 * (t % 4) + b
    elif shape == "m8n8":                                   # b16 halves in rows 2(t%4), 2(t%4)+1 at 2(t/4)
        row, off = 8 * g + 2 * (t % 4) + b // 2, 2 * (t // 4) + b % 2
    else:                                                   # b8 (m16n8, m16n16): bytes e0..e3 of a 16x8 block
        row, off = 8 * g + 2 * (t % 4) + b % 2, t // 4 + 8 * (b // 2)
    return np.stack(np.broadcast_arrays(row, off), axis=-1).astype(np.int64)


def _row_lanes(shape: str, rows: int) -> np.ndarray:
    if shape != "m16n16":                                   # lane r gives row r (PTX: addr0..addr7 the first matrix)
        return np.arange(rows)
    j = np.arange(rows)                                     # CuTe SM100_U8x8_LDSM_T: lane j gives this row
    row = j % 2 + 2 * ((j // 4) % 4) + 8 * ((j // 2) % 2) + 16 * (j // 16)
    lanes = np.empty(rows, dtype=np.int64)
    lanes[row] = j
    return lanes


def _sass(op: MatrixOp, num: int, trans: bool) -> str:
    return f"{op.upper()}SM.16.{'MT88' if trans else 'M88'}" + ("" if num == 1 else f".{num}")


def m8n8_forms(op: MatrixOp) -> tuple[MatrixForm, ...]:
    """Every ``m8n8 .b16`` form of ``op``, widest first (non-transposed before transposed)."""
    targets = STMATRIX_TARGETS if op == "st" else LDMATRIX_TARGETS
    return tuple(MatrixForm(op, "m8n8", n, trans, "b16", targets, n, _sass(op, n, trans))
                 for trans in (False, True) for n in MATRIX_NUMS)
