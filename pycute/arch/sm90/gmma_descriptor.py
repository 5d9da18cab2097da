"""The sm_90 shared-memory matrix descriptor ``wgmma.mma_async`` reads A and B through (PTX ISA
#asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor).

``GMMA_FIELDS`` is its bit layout, written once: encode, decode, the emulator and the generated C read it. It is not
the sm_100 descriptor (``arch.sm100.descriptor``): no version bits, no LBO mode, and a 2-bit layout type at bits
62-63 whose codes differ from tcgen05's 3-bit swizzle codes. Bits 14-15, 30-31, 46-48 and 52-61 belong to no field
and are 0. The layouts it describes are the same canonical family as tcgen05's (PTX
#asynchronous-warpgroup-level-canonical-layouts): LBO and SBO mean the same offsets.
"""
from __future__ import annotations

from typing import Literal

import attrs

from ...errors import DescriptorError
from ...int_tuple import as_int
from ..sm100.descriptor import DescriptorField    # the field record; the bit positions below are sm_90's own

__all__ = ["GMMA_START", "GMMA_LBO", "GMMA_SBO", "GMMA_BASE_OFFSET", "GMMA_LAYOUT_TYPE", "GMMA_FIELDS",
           "GMMA_RESERVED_MASK", "GmmaLayout", "GMMA_LAYOUT_CODES", "GmmaSmemDescriptor"]

GMMA_START = DescriptorField("start_address", 0, 14, 16)
GMMA_LBO = DescriptorField("lbo", 16, 14, 16)
GMMA_SBO = DescriptorField("sbo", 32, 14, 16)
GMMA_BASE_OFFSET = DescriptorField("base_offset", 49, 3)
GMMA_LAYOUT_TYPE = DescriptorField("layout_type", 62, 2)
GMMA_FIELDS = (GMMA_START, GMMA_LBO, GMMA_SBO, GMMA_BASE_OFFSET, GMMA_LAYOUT_TYPE)
GMMA_RESERVED_MASK = ~sum(f.mask for f in GMMA_FIELDS) & (1 << 64) - 1

#: The swizzle a descriptor names, by the labels pycute's swizzle modes carry.
GmmaLayout = Literal["none", "32B", "64B", "128B"]
#: Layout type codes (bits 62-63): 0 no swizzle (interleave), 1 128-byte, 2 64-byte, 3 32-byte swizzle.
GMMA_LAYOUT_CODES: dict[GmmaLayout, int] = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
_LAYOUT_OF_CODE: dict[int, GmmaLayout] = {v: k for k, v in GMMA_LAYOUT_CODES.items()}


def _check_bytes(field: DescriptorField, value: int) -> None:
    if value < 0 or value >= field.limit:
        raise DescriptorError(f"sm_90 descriptor {field.name} {value!r} is outside [0, {field.limit:#x})")
    if value % field.unit:
        raise DescriptorError(f"sm_90 descriptor {field.name} {value:#x} is not {field.unit}-byte aligned")


@attrs.frozen
class GmmaSmemDescriptor:
    """A ``wgmma`` matrix descriptor with byte-valued ``start_address``, ``lbo`` and ``sbo``, its ``layout`` (the
    swizzle by label) and the 3-bit ``base_offset``."""

    start_address: int = 0
    lbo: int = 0
    sbo: int = 0
    layout: GmmaLayout = "none"
    base_offset: int = 0

    def __attrs_post_init__(self) -> None:
        for name in ("start_address", "lbo", "sbo", "base_offset"):
            object.__setattr__(self, name, as_int(getattr(self, name), f"GmmaSmemDescriptor: {name}"))
        for field in (GMMA_START, GMMA_LBO, GMMA_SBO):
            _check_bytes(field, getattr(self, field.name))
        if self.layout not in GMMA_LAYOUT_CODES:
            raise DescriptorError(f"sm_90 descriptor layout {self.layout!r} is one of {', '.join(GMMA_LAYOUT_CODES)}")
        if self.base_offset not in range(1 << GMMA_BASE_OFFSET.width):
            raise DescriptorError(f"sm_90 descriptor base_offset {self.base_offset!r} is outside [0, 8)")

    def encode(self, start_address: int | None = None) -> int:
        """The 64-bit value; ``start_address`` overrides the stored one."""
        start = self.start_address if start_address is None else as_int(start_address, "start_address")
        _check_bytes(GMMA_START, start)
        return (GMMA_START.put(start) | GMMA_LBO.put(self.lbo) | GMMA_SBO.put(self.sbo)
                | GMMA_BASE_OFFSET.put(self.base_offset) | GMMA_LAYOUT_TYPE.put(GMMA_LAYOUT_CODES[self.layout]))

    @classmethod
    def decode(cls, value: int) -> "GmmaSmemDescriptor":
        """Inverse of ``encode``; refuses bits outside the fields."""
        value = as_int(value, "GmmaSmemDescriptor.decode: the descriptor")
        if not 0 <= value < 1 << 64:
            raise DescriptorError(f"sm_90 descriptor {value!r} is not a 64-bit unsigned value")
        if value & GMMA_RESERVED_MASK:
            raise DescriptorError(f"sm_90 descriptor {value:#018x}: bits {value & GMMA_RESERVED_MASK:#018x} belong to "
                                  f"no field and must be 0 (PTX #asynchronous-warpgroup-level-matrix-shared-memory-"
                                  f"layout-matrix-descriptor)")
        return cls(GMMA_START.get(value), GMMA_LBO.get(value), GMMA_SBO.get(value),
                   _LAYOUT_OF_CODE[GMMA_LAYOUT_TYPE.get(value)], GMMA_BASE_OFFSET.get(value))
