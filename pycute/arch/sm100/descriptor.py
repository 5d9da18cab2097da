"""The tcgen05 shared-memory matrix descriptor (PTX ISA: "Shared memory descriptor", #tcgen05-shared-memory-descriptor).

Bit layout of the 64-bit value (verified against PTX Table 40 and CUTLASS ``UMMA::SmemDescriptor``):

====== ===== ======================================================================
bits   width field
====== ===== ======================================================================
0-13   14    start address >> 4 (shared-window byte address)
16-29  14    leading-dimension byte offset (LBO) >> 4
32-45  14    stride-dimension byte offset (SBO) >> 4
46-48  3     fixed 0b001 (the Blackwell descriptor version)
49-51  3     matrix base offset
52     1     LBO mode (0: relative offset, 1: absolute address)
53-60  8     fixed 0
61-63  3     swizzle: 0 none, 1 128B with 32B atoms, 2 128B, 4 64B, 6 32B (3, 5, 7 invalid)
====== ===== ======================================================================
"""
from __future__ import annotations

import enum

import attrs

from ...errors import DescriptorError
from ...swizzle import Swizzle

__all__ = ["SwizzleMode", "SmemDescriptor", "patch_start_address", "ADDRESS_MASK"]

ADDRESS_MASK = 0x3FFF          # the 14-bit start-address field, in 16-byte units
_FIELD_LIMIT = 1 << 18         # matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4: 18-bit byte quantities


class SwizzleMode(enum.Enum):
    """Descriptor swizzle modes, valued by their PTX code (bits 61-63)."""

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
        return _ROW_PITCH[self]

    @property
    def period(self) -> int:
        """Bytes after which the swizzle pattern repeats (8 rows): 1024 / 512 / 256 for 128B / 64B / 32B."""
        return 8 * _ROW_PITCH[self]

    @property
    def byte_swizzle(self) -> Swizzle | None:
        """The cuTe swizzle this mode applies to absolute shared-memory byte addresses."""
        return _BYTE_SWIZZLE[self]

    @classmethod
    def from_row_pitch(cls, pitch: int) -> "SwizzleMode":
        for mode, p in _ROW_PITCH.items():
            if p == pitch and mode is not SwizzleMode.B128_BASE32B:
                return mode
        raise DescriptorError(f"no swizzle mode has a {pitch}-byte row pitch (legal: 16, 32, 64, 128)")

    def __repr__(self) -> str:
        return f"SwizzleMode.{self.name}"


_ROW_PITCH = {SwizzleMode.NONE: 16, SwizzleMode.B32: 32, SwizzleMode.B64: 64, SwizzleMode.B128: 128,
              SwizzleMode.B128_BASE32B: 128}
_BYTE_SWIZZLE = {SwizzleMode.NONE: None, SwizzleMode.B32: Swizzle(1, 4, 3), SwizzleMode.B64: Swizzle(2, 4, 3),
                 SwizzleMode.B128: Swizzle(3, 4, 3), SwizzleMode.B128_BASE32B: Swizzle(2, 5, 2)}
_BY_CODE = {m.value: m for m in SwizzleMode}


def _check_field(name: str, value: int) -> None:
    if not isinstance(value, int) or value < 0 or value >= _FIELD_LIMIT:
        raise DescriptorError(f"descriptor {name} {value!r} is outside [0, {_FIELD_LIMIT:#x})")
    if value % 16:
        raise DescriptorError(f"descriptor {name} {value:#x} is not 16-byte aligned")


@attrs.frozen
class SmemDescriptor:
    """A shared-memory matrix descriptor with byte-valued ``lbo`` and ``sbo``."""

    start_address: int = 0
    lbo: int = 0
    sbo: int = 0
    swizzle: SwizzleMode = SwizzleMode.NONE
    base_offset: int = 0
    lbo_mode: int = 0

    def __attrs_post_init__(self):
        for name in ("start_address", "lbo", "sbo"):
            _check_field(name, getattr(self, name))
        if not isinstance(self.swizzle, SwizzleMode):
            raise DescriptorError(f"descriptor swizzle {self.swizzle!r} is not a SwizzleMode")
        if self.base_offset not in range(8):
            raise DescriptorError(f"descriptor base_offset {self.base_offset!r} is outside [0, 8)")
        if self.lbo_mode not in (0, 1):
            raise DescriptorError(f"descriptor lbo_mode {self.lbo_mode!r} is not 0 or 1")

    def encode(self, start_address: int | None = None) -> int:
        """The 64-bit descriptor value; ``start_address`` overrides the stored one."""
        start = self.start_address if start_address is None else start_address
        _check_field("start_address", start)
        return ((start >> 4)
                | (self.lbo >> 4) << 16
                | (self.sbo >> 4) << 32
                | 1 << 46
                | self.base_offset << 49
                | self.lbo_mode << 52
                | self.swizzle.code << 61)

    @classmethod
    def decode(cls, value: int) -> "SmemDescriptor":
        """Inverse of ``encode``; rejects reserved bits, a wrong fixed field and invalid swizzle codes."""
        if not isinstance(value, int) or not 0 <= value < 1 << 64:
            raise DescriptorError(f"descriptor {value!r} is not a 64-bit unsigned value")

        def field(lo, n):
            return (value >> lo) & ((1 << n) - 1)
        if field(46, 3) != 1:
            raise DescriptorError(f"descriptor {value:#018x}: bits 46-48 are {field(46, 3):#05b}, must be 0b001")
        if field(53, 8):
            raise DescriptorError(f"descriptor {value:#018x}: bits 53-60 must be 0")
        if field(14, 2) or field(30, 2):
            raise DescriptorError(f"descriptor {value:#018x}: reserved bits 14-15 / 30-31 must be 0")
        code = field(61, 3)
        if code not in _BY_CODE:
            raise DescriptorError(f"descriptor {value:#018x}: swizzle code {code} is invalid (3, 5 and 7 are "
                                  f"reserved)")
        return cls(start_address=field(0, 14) << 4, lbo=field(16, 14) << 4, sbo=field(32, 14) << 4,
                   swizzle=_BY_CODE[code], base_offset=field(49, 3), lbo_mode=field(52, 1))


def patch_start_address(desc: int, smem_address: int) -> int:
    """``desc`` with its 14-bit start field replaced by ``smem_address`` (what generated code does per copy)."""
    return (desc & ~ADDRESS_MASK & 0xFFFFFFFFFFFFFFFF) | ((smem_address >> 4) & ADDRESS_MASK)
