"""The tcgen05 shared-memory matrix descriptor (PTX ISA #tcgen05-shared-memory-descriptor, Table 40).

``FIELDS`` is the descriptor's bit layout, written once: encode, decode, the start-address patch and the C that
pycute generates all read it. Verified against PTX Table 40 and CUTLASS ``UMMA::SmemDescriptor``; bits 14-15 and
30-31 belong to no field and must be 0.
"""
from __future__ import annotations

import attrs

from ...errors import DescriptorError
from ...int_tuple import as_int
from .swizzle_modes import SwizzleMode

__all__ = ["DescriptorField", "FIELDS", "START_ADDRESS", "LBO", "SBO", "VERSION", "BASE_OFFSET", "LBO_MODE",
           "FIXED_ZERO", "SWIZZLE", "RESERVED_MASK", "BLACKWELL_VERSION", "SmemDescriptor", "patch_start_address",
           "ADDRESS_MASK"]


@attrs.frozen
class DescriptorField:
    """``width`` bits at ``lo``; a field with ``unit`` 16 holds a byte quantity in 16-byte units
    (``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``)."""

    name: str
    lo: int
    width: int
    unit: int = 1
    mask: int = attrs.field(init=False, repr=False)    # the field's bits in place
    limit: int = attrs.field(init=False, repr=False)   # one past the largest value (bytes for 16-byte-unit fields)

    def __attrs_post_init__(self):
        object.__setattr__(self, "mask", ((1 << self.width) - 1) << self.lo)
        object.__setattr__(self, "limit", self.unit << self.width)

    def get(self, desc: int) -> int:
        return ((desc >> self.lo) & ((1 << self.width) - 1)) * self.unit

    def put(self, value: int) -> int:
        return (value // self.unit) << self.lo


START_ADDRESS = DescriptorField("start_address", 0, 14, 16)
LBO = DescriptorField("lbo", 16, 14, 16)
SBO = DescriptorField("sbo", 32, 14, 16)
VERSION = DescriptorField("version", 46, 3)
BASE_OFFSET = DescriptorField("base_offset", 49, 3)
LBO_MODE = DescriptorField("lbo_mode", 52, 1)
FIXED_ZERO = DescriptorField("fixed_zero", 53, 8)
SWIZZLE = DescriptorField("swizzle", 61, 3)
FIELDS = (START_ADDRESS, LBO, SBO, VERSION, BASE_OFFSET, LBO_MODE, FIXED_ZERO, SWIZZLE)
RESERVED_MASK = ~sum(f.mask for f in FIELDS) & (1 << 64) - 1
BLACKWELL_VERSION = 1                      # bits 46-48 are the fixed constant 0b001
ADDRESS_MASK = START_ADDRESS.mask          # the 14-bit start-address field, in 16-byte units


def _check_bytes(field: DescriptorField, value) -> None:
    if not isinstance(value, int) or value < 0 or value >= field.limit:
        raise DescriptorError(f"descriptor {field.name} {value!r} is outside [0, {field.limit:#x})")
    if value % field.unit:
        raise DescriptorError(f"descriptor {field.name} {value:#x} is not {field.unit}-byte aligned")


@attrs.frozen
class SmemDescriptor:
    """A shared-memory matrix descriptor with byte-valued ``start_address``, ``lbo`` and ``sbo``."""

    start_address: int = 0
    lbo: int = 0
    sbo: int = 0
    swizzle: SwizzleMode = SwizzleMode.NONE
    base_offset: int = 0
    lbo_mode: int = 0

    def __attrs_post_init__(self):
        for name in ("start_address", "lbo", "sbo", "base_offset", "lbo_mode"):
            value = getattr(self, name)
            if type(value) is not int:
                object.__setattr__(self, name, as_int(value, f"SmemDescriptor: {name}"))
        for field in (START_ADDRESS, LBO, SBO):
            _check_bytes(field, getattr(self, field.name))
        if not isinstance(self.swizzle, SwizzleMode):
            raise DescriptorError(f"descriptor swizzle {self.swizzle!r} is not a SwizzleMode")
        if self.base_offset not in range(1 << BASE_OFFSET.width):
            raise DescriptorError(f"descriptor base_offset {self.base_offset!r} is outside [0, 8)")
        if self.lbo_mode not in (0, 1):
            raise DescriptorError(f"descriptor lbo_mode {self.lbo_mode!r} is not 0 or 1")

    def encode(self, start_address: int | None = None) -> int:
        """The 64-bit descriptor value; ``start_address`` overrides the stored one."""
        start = self.start_address if start_address is None else as_int(start_address, "start_address")
        _check_bytes(START_ADDRESS, start)
        return (START_ADDRESS.put(start) | LBO.put(self.lbo) | SBO.put(self.sbo) | VERSION.put(BLACKWELL_VERSION)
                | BASE_OFFSET.put(self.base_offset) | LBO_MODE.put(self.lbo_mode) | SWIZZLE.put(self.swizzle.code))

    @classmethod
    def decode(cls, value: int) -> "SmemDescriptor":
        """Inverse of ``encode``; rejects reserved bits, a wrong fixed field and invalid swizzle codes."""
        value = as_int(value, "SmemDescriptor.decode: the descriptor")
        if not 0 <= value < 1 << 64:
            raise DescriptorError(f"descriptor {value!r} is not a 64-bit unsigned value")
        if VERSION.get(value) != BLACKWELL_VERSION:
            raise DescriptorError(f"descriptor {value:#018x}: bits 46-48 are {VERSION.get(value):#05b}, must be "
                                  f"0b001")
        if FIXED_ZERO.get(value):
            raise DescriptorError(f"descriptor {value:#018x}: bits 53-60 must be 0")
        if value & RESERVED_MASK:
            raise DescriptorError(f"descriptor {value:#018x}: reserved bits 14-15 / 30-31 must be 0")
        code = SWIZZLE.get(value)
        mode = SwizzleMode.from_code(code)
        if mode is None:
            raise DescriptorError(f"descriptor {value:#018x}: swizzle code {code} is invalid (3, 5 and 7 are "
                                  f"reserved)")
        return cls(start_address=START_ADDRESS.get(value), lbo=LBO.get(value), sbo=SBO.get(value), swizzle=mode,
                   base_offset=BASE_OFFSET.get(value), lbo_mode=LBO_MODE.get(value))


def patch_start_address(desc: int, smem_address: int) -> int:
    """``desc`` with its start field replaced by ``smem_address`` (its bits 4-17, as generated code does)."""
    return (desc & ~START_ADDRESS.mask & (1 << 64) - 1) | START_ADDRESS.put(smem_address % START_ADDRESS.limit)
