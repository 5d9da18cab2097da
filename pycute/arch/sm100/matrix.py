"""sm_100a's 8-bit ``stmatrix`` / ``ldmatrix`` forms (PTX ISA #warp-level-matrix-store-instruction-stmatrix,
#warp-level-matrix-load-instruction-ldmatrix; the cell maps are CuTe's ``SM100_U8x*_STSM_T``,
``SM100_U8x*_LDSM_T`` and ``SM100_SU*_DU8x16_*_LDSM_N`` traits [NV]; ptxas accepts each for sm_100a and refuses
it for sm_90a; none can run on the H200):

* ``stmatrix.m16n8.trans.b8`` (``.trans`` mandatory): register ``g`` of lane ``t`` holds bytes ``e0..e3`` of a
  16x8 block, rows ``t / 4`` and ``t / 4 + 8``, columns ``2 (t % 4)`` and ``+1`` (e0 the LSB: row ``t / 4``, column
  ``2 (t % 4)``; e1 the next column; e2, e3 eight rows down), stored column by column: column ``c`` is shared row
  ``c`` (16 bytes). That is an 8-bit MMA accumulator's fragment, written transposed.
* ``ldmatrix.m16n16.trans.b8`` (``.x1``, ``.x2``; two registers per 16x16 matrix): the inverse of two such blocks;
  lane ``j`` gives the address of row ``j % 2 + 2 ((j / 4) % 4) + 8 ((j / 2) % 2)`` (CuTe's source layout).
* ``ldmatrix.m8n16`` / ``m16n16 .b8x16.b6x16_p32`` / ``.b4x16_p64``: 16 packed 6- or 4-bit elements per 16-byte
  row (then 32 / 64 bits of padding) unpacked into one byte each, in the register bytes of the plain forms.
"""
from __future__ import annotations

from ..sm90.matrix import MATRIX_NUMS, MatrixForm, MatrixOp

__all__ = ["B8_MATRIX_TARGETS", "UNPACK_FORMATS", "b8_forms", "unpack_forms"]

#: The targets with the 8-bit forms (PTX ISA: sm_100a, sm_100f and their family).
B8_MATRIX_TARGETS = ("sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f")
#: The unpacking loads' source formats: bits per element, packed bytes per 16-byte row (the rest is padding).
UNPACK_FORMATS = {"b6x16_p32": (6, 12), "b4x16_p64": (4, 8)}


def b8_forms(op: MatrixOp) -> tuple[MatrixForm, ...]:
    """``stmatrix.m16n8.x{4,2,1}.trans.b8`` or ``ldmatrix.m16n16.x{2,1}.trans.b8``, widest first."""
    if op == "st":
        return tuple(MatrixForm("st", "m16n8", n, True, "b8", B8_MATRIX_TARGETS, n,
                                "STSM.8.MT168" + ("" if n == 1 else f".{n}")) for n in MATRIX_NUMS)
    return tuple(MatrixForm("ld", "m16n16", n, True, "b8", B8_MATRIX_TARGETS, 2 * n,
                            "LDSM.8.MT1616" + ("" if n == 1 else f".{n}")) for n in (2, 1))


def unpack_forms(fmt: str) -> tuple[MatrixForm, ...]:
    """The unpacking loads of source format ``fmt``: ``m8n16.x{4,2,1}`` and ``m16n16.x{2,1}.trans``."""
    tag = "U6x16P32TO8" if fmt == "b6x16_p32" else "U4x16P64TO8"
    plain = tuple(MatrixForm("ld", "m8n16", n, False, "b8", B8_MATRIX_TARGETS, n,
                             f"LDSM.{tag}.M816" + ("" if n == 1 else f".{n}"), fmt) for n in MATRIX_NUMS)
    trans = tuple(MatrixForm("ld", "m16n16", n, True, "b8", B8_MATRIX_TARGETS, 2 * n,
                             f"LDSM.{tag}.MT1616" + ("" if n == 1 else f".{n}"), fmt) for n in (2, 1))
    return plain + trans
