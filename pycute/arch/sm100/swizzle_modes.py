"""The descriptor's swizzle modes (PTX #tcgen05-smem-swizzle-mode, #tcgen05-canonical-layouts) and the cuTe
swizzles they are.

A mode swizzles absolute shared-memory *byte* addresses: ``Sw<b,4,3>`` XORs address bits 7.. into the 16-byte
unit index (bits 4..). On a buffer of ``bits``-wide elements the same permutation of element offsets is
``Sw<b, log2(128 / bits), 3>``; that is the swizzle a shared-memory tensor's layout carries.
"""
from __future__ import annotations

from typing import Literal

import enum

from ...errors import DescriptorError
from ...swizzle import Swizzle
from ..sm90.swizzle import SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B
from ...dtypes import DType

__all__ = ["SwizzleLabel", "SwizzleMode", "UNIT_BYTES", "UNIT_BITS"]

UNIT_BYTES = 16                 # the descriptor's unit: a core-matrix row of 16 bytes
UNIT_BITS = 8 * UNIT_BYTES


#: The swizzle modes by name, as the K-major tile helpers and ``SwizzleMode.from_label`` take them.
SwizzleLabel = Literal["none", "32B", "64B", "128B", "128B_base32B"]


class SwizzleMode(enum.Enum):
    """Descriptor swizzle modes, valued by their PTX code (descriptor bits 61-63)."""

    NONE = 0
    B32 = 6
    B64 = 4
    B128 = 2
    B128_BASE32B = 1

    @property
    def code(self) -> int:
        return self.value

    @property
    def row_pitch(self) -> int:
        """Bytes between consecutive rows of an 8-row core group, K-major (PTX canonical layouts)."""
        return _FACTS[self][0]

    @property
    def period(self) -> int:
        """Bytes after which the swizzle pattern repeats (8 rows): 1024 / 512 / 256 for 128B / 64B / 32B."""
        return 8 * self.row_pitch

    @property
    def byte_swizzle(self) -> Swizzle | None:
        """The cuTe swizzle this mode applies to absolute shared-memory byte addresses."""
        return _FACTS[self][1]

    @property
    def label(self) -> str:
        """``none``, ``32B``, ``64B``, ``128B`` (as kernel authors name the modes)."""
        return _FACTS[self][2]

    def element_swizzle(self, bits: int) -> Swizzle | None:
        """The swizzle of element offsets (``bits``-wide elements) that equals this mode on byte addresses."""
        sw = self.byte_swizzle
        if sw is None:
            return None
        if self is SwizzleMode.B128_BASE32B:
            raise DescriptorError("the 128B-with-32B-atom swizzle is not a swizzle of K-major element offsets")
        return Swizzle(sw.bits, element_base(bits), sw.shift)

    @classmethod
    def from_code(cls, code: int) -> "SwizzleMode | None":
        """The mode of a descriptor code, or None for the reserved codes 3, 5 and 7."""
        return _BY_CODE.get(code)

    @classmethod
    def from_row_pitch(cls, pitch: int) -> "SwizzleMode":
        """The K-major mode whose 8-row core group has rows ``pitch`` bytes apart."""
        return _kmajor_mode("row_pitch", pitch, "no swizzle mode has a {value}-byte row pitch (legal: {pitches})")

    @classmethod
    def from_label(cls, label: str) -> "SwizzleMode":
        return _kmajor_mode("label", label, "unknown swizzle {value!r}; one of {labels}")

    @classmethod
    def of_element_swizzle(cls, swizzle: Swizzle | None, dtype: DType) -> "SwizzleMode":
        """The mode a buffer of ``dtype`` elements swizzled by ``swizzle`` needs; DescriptorError if none is."""
        if swizzle is None or swizzle.bits == 0:
            return SwizzleMode.NONE
        m = element_base(dtype.bits)
        if swizzle.shift < 0:
            raise DescriptorError(f"mirrored swizzle {swizzle!r} (negative shift) is refused: the descriptor's "
                                  f"swizzle XORs the high address bits into the low ones, so this buffer would be "
                                  f"copied wrong silently")
        for mode in _KMAJOR[1:]:
            if swizzle == mode.element_swizzle(dtype.bits):
                return mode
        hint = ""
        if swizzle.base == 4 and dtype.bits > 8 and swizzle.shift == 3:
            hint = (f"; {swizzle!r} is the byte-address form CuTe prints on a {dtype.bits}-bit pointer "
                    f"(Sw<b,4,3> o smem_ptr[{dtype.bits}b]): on {dtype.name} element offsets write "
                    f"Sw<{swizzle.bits},{m},3>, or parse CuTe's text with the pointer")
        raise DescriptorError(f"swizzle family mismatch: {swizzle!r} on {dtype.name} element offsets; tcgen05 "
                              f"descriptors swizzle as Sw<b,{m},3> for b = 1, 2, 3 (32B, 64B, 128B){hint}")

    def __repr__(self) -> str:
        return f"SwizzleMode.{self.name}"


def element_base(bits: int) -> int:
    """``log2(128 / bits)``: the element-offset bit at which a 16-byte unit index starts."""
    return (UNIT_BITS // bits).bit_length() - 1


# mode -> (row pitch in bytes, swizzle of byte addresses, label)
_FACTS = {SwizzleMode.NONE: (16, None, "none"), SwizzleMode.B32: (32, SWIZZLE_32B, "32B"),
          SwizzleMode.B64: (64, SWIZZLE_64B, "64B"), SwizzleMode.B128: (128, SWIZZLE_128B, "128B"),
          SwizzleMode.B128_BASE32B: (128, Swizzle(2, 5, 2), "128B_base32B")}
_BY_CODE = {m.value: m for m in SwizzleMode}
_KMAJOR = (SwizzleMode.NONE, SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128)   # modes tcgen05.cp uses


def _kmajor_mode(attr: str, value, refusal: str) -> SwizzleMode:
    """The K-major mode whose ``attr`` is ``value``, else a DescriptorError from ``refusal`` (which may name the
    value and the legal ``pitches`` or ``labels``)."""
    for mode in _KMAJOR:
        if getattr(mode, attr) == value:
            return mode
    raise DescriptorError(refusal.format(value=value, pitches=", ".join(str(m.row_pitch) for m in _KMAJOR),
                                         labels=", ".join(m.label for m in _KMAJOR)))
