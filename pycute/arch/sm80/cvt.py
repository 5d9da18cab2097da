"""The packing conversions an epilogue writes its output type with (PTX ISA
#data-movement-and-conversion-instructions-cvt): two f32 sources ``a``, ``b`` become two narrower values in one
register, **the value converted from ``a`` in the upper half, from ``b`` in the lower half** (upper / lower byte for
the 8-bit pairs). Rounding is to nearest, ties to even (``.rn``); ``.satfinite`` clamps what would be infinite to
the largest finite value of the sign and keeps NaN; the 8-bit pairs take ``.satfinite`` always (the PTX syntax has
no form without it). NaN results are canonical: bf16 and f16 ``0x7FFF``, e4m3 and e5m2 ``0x7F`` (CUDA's
``cuda_bf16.hpp`` / ``cuda_fp8.hpp`` emulate the same on the host) [I: the H200 round trips of
``pycute.harness.epilogue`` compare every special value bit for bit]."""
from __future__ import annotations

import attrs

from ...errors import PlanError

__all__ = ["PackConversion", "PACK_CONVERSIONS", "pack_conversion", "PACK_TARGETS", "MOV_PACK_PTX"]

#: bf16x2 / f16x2 from f32: sm_80; e4m3x2 / e5m2x2 from f32: sm_89 (PTX ISA cvt target notes).
PACK_TARGETS = {"bf16": ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a",
                         "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a"),
                "f8": ("sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a", "sm_103f", "sm_110a", "sm_110f",
                       "sm_120", "sm_120a")}
#: Two 16-bit registers into one 32-bit register: the first operand in the low half.
MOV_PACK_PTX = "mov.b32"


@attrs.frozen
class PackConversion:
    """``cvt.rn{.satfinite}.<pair>.f32 d, a, b``: two f32 into ``dst`` values, ``a`` in the upper part of ``d``."""

    dst: str                       # the element type written: "bf16", "f16", "f8e4m3", "f8e5m2"
    pair: str                      # the PTX destination type: "bf16x2", "f16x2", "e4m3x2", "e5m2x2"
    bits: int                      # bits per converted value
    satfinite: bool
    targets: tuple[str, ...]

    @property
    def ptx(self) -> str:
        return f"cvt.rn{'.satfinite' if self.satfinite else ''}.{self.pair}.f32"

    @property
    def result_bits(self) -> int:
        """Bits of ``d``: 32 for the 16-bit pairs, 16 for the 8-bit pairs."""
        return 2 * self.bits


#: Destination type -> (PTX pair, bits, whether .satfinite is mandatory, targets).
PACK_CONVERSIONS = {"bf16": ("bf16x2", 16, False, PACK_TARGETS["bf16"]),
                    "f16": ("f16x2", 16, False, PACK_TARGETS["bf16"]),
                    "f8e4m3": ("e4m3x2", 8, True, PACK_TARGETS["f8"]),
                    "f8e5m2": ("e5m2x2", 8, True, PACK_TARGETS["f8"])}


def pack_conversion(dst: str, satfinite: bool | None = None) -> PackConversion:
    """The conversion from f32 to ``dst``; ``satfinite`` None takes the type's default (on for the 8-bit types, where
    it is mandatory; off for bf16 / f16)."""
    if dst not in PACK_CONVERSIONS:
        raise PlanError(f"f32 converts to {', '.join(PACK_CONVERSIONS)} in a plan (cvt.rn ...x2.f32), not {dst}")
    pair, bits, mandatory, targets = PACK_CONVERSIONS[dst]
    if mandatory and satfinite is False:
        raise PlanError(f"cvt.rn.{pair}.f32 always saturates (.satfinite is mandatory in the PTX syntax); "
                        f"satfinite=False cannot be honoured for {dst}")
    return PackConversion(dst, pair, bits, mandatory or bool(satfinite), targets)
