"""L2 eviction policies (PTX ISA #data-movement-and-conversion-instructions-createpolicy, sm_80, PTX 7.4):
``createpolicy.fractional`` makes a 64-bit policy that the ``.L2::cache_hint`` forms of ``cp.async``, ``cp.async.bulk``
and ``cp.async.bulk.tensor`` take as their last operand. A policy is a hint: it changes no byte that is copied.

The policy's bits are the hardware's own (opaque); the PTX interpreter stands for them with ``CachePolicy.token``,
a value of pycute's that says which policy was made, so that a decoded stream can name the policy each copy used."""
from __future__ import annotations

import struct
from typing import Literal, get_args

import attrs

from ...errors import PlanError

__all__ = ["Eviction", "SecondaryEviction", "CachePolicy", "cache_policy", "policy_of_token", "policy_of_ptx",
           "CACHE_HINT", "CREATEPOLICY_TARGETS"]

#: The primary priority of the ``fraction`` of the accesses, and the secondary one of the rest.
Eviction = Literal["evict_normal", "evict_first", "evict_last", "evict_unchanged"]
SecondaryEviction = Literal["evict_unchanged", "evict_first"]
_PRIMARY: tuple[Eviction, ...] = get_args(Eviction)
_SECONDARY: tuple[SecondaryEviction, ...] = get_args(SecondaryEviction)

#: The qualifier that makes a copy take a policy operand (last, a .b64 register).
CACHE_HINT = ".L2::cache_hint"
#: createpolicy is sm_80 and later (PTX ISA, Target ISA notes).
CREATEPOLICY_TARGETS = ("sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a", "sm_100a", "sm_100f", "sm_103a",
                        "sm_103f", "sm_110a", "sm_110f", "sm_120", "sm_120a")
_TOKEN_TAG = 0x5043 << 48           # "PC": a register holding a policy pycute's interpreter made


def _check_primary(instance: object, attribute: object, value: object) -> None:
    if value not in _PRIMARY:
        raise PlanError(f"cache policy: the primary priority is one of {', '.join(_PRIMARY)}, not {value!r} (PTX ISA, "
                        f"createpolicy)")


def _check_secondary(instance: object, attribute: object, value: object) -> None:
    if value not in _SECONDARY:
        raise PlanError(f"cache policy: the secondary priority is one of {', '.join(_SECONDARY)}, not {value!r} (PTX "
                        f"ISA, createpolicy)")


def _fraction(value: float) -> float:
    """The fraction of accesses the primary priority covers: a number in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"cache policy: the fraction is a number in (0, 1], got {value!r}")
    if not 0.0 < float(value) <= 1.0:
        raise PlanError(f"cache policy: the fraction {value!r} is outside (0, 1] (PTX ISA, createpolicy.fractional)")
    return float(value)


@attrs.frozen
class CachePolicy:
    """``createpolicy.fractional``: ``fraction`` of the accesses get the ``primary`` priority in L2, the rest the
    ``secondary`` one. The common hints are the whole fraction: ``CachePolicy("evict_first")``."""

    primary: Eviction = attrs.field(default="evict_normal", validator=_check_primary)
    fraction: float = attrs.field(default=1.0, converter=_fraction)
    secondary: SecondaryEviction = attrs.field(default="evict_unchanged", validator=_check_secondary)

    @property
    def ptx(self) -> str:
        """The instruction that makes the policy (its operands: the .b64 destination, then the fraction)."""
        second = "" if self.secondary == "evict_unchanged" else f".L2::{self.secondary}"
        return f"createpolicy.fractional.L2::{self.primary}{second}.b64"

    @property
    def fraction_literal(self) -> str:
        """The fraction as PTX's 32-bit float literal (``0f3F800000`` for 1.0): exact, whatever the value."""
        return "0f" + struct.pack(">f", self.fraction).hex().upper()

    @property
    def token(self) -> int:
        """What a register holds after this ``createpolicy`` in pycute's PTX interpreter (not the hardware's bits)."""
        bits = struct.unpack("<I", struct.pack("<f", self.fraction))[0]
        return _TOKEN_TAG | _PRIMARY.index(self.primary) << 40 | _SECONDARY.index(self.secondary) << 36 | bits

    def __str__(self) -> str:
        rest = "" if self.fraction == 1.0 else f" for {self.fraction:g} of the accesses, {self.secondary} for the rest"
        return self.primary + rest


def policy_of_token(token: int) -> CachePolicy:
    """The policy a register holds in pycute's PTX interpreter (the inverse of ``CachePolicy.token``)."""
    if token >> 48 != _TOKEN_TAG >> 48:
        raise PlanError(f"cache policy operand {token:#x} was not made by createpolicy in this interpretation")
    fraction = struct.unpack("<f", struct.pack("<I", token & 0xFFFFFFFF))[0]
    return CachePolicy(_PRIMARY[token >> 40 & 0xF], fraction, _SECONDARY[token >> 36 & 0xF])


def policy_of_ptx(op: str, fraction_bits: int) -> CachePolicy:
    """The policy ``createpolicy.fractional.L2::<primary>{.L2::<secondary>}.b64`` makes with the fraction whose
    32-bit float bits are ``fraction_bits`` (the PTX interpreter's reading of the instruction)."""
    parts = op.split(".")
    if parts[:2] != ["createpolicy", "fractional"] or parts[-1] != "b64":
        raise PlanError(f"{op}: pycute interprets createpolicy.fractional...b64 (the range form names an address "
                        f"window; plans do not use it)")
    names = [p.removeprefix("L2::") for p in parts[2:-1]]
    fraction = struct.unpack("<f", struct.pack("<I", fraction_bits & 0xFFFFFFFF))[0]
    return CachePolicy(names[0], fraction, names[1] if len(names) > 1 else "evict_unchanged")  # type: ignore[arg-type]


def cache_policy(hint: object, who: str) -> CachePolicy | None:
    """A plan's ``cache_hint`` option: None, a priority name (``"evict_first"``: the whole fraction) or a
    ``CachePolicy``; anything else is a TypeError naming ``who``."""
    if hint is None or isinstance(hint, CachePolicy):
        return hint
    if isinstance(hint, str):
        if hint not in _PRIMARY:
            raise PlanError(f"{who}: cache_hint={hint!r}: a hint is one of {', '.join(_PRIMARY)} or a CachePolicy "
                            f"(PTX ISA, createpolicy)")
        return CachePolicy(hint)
    raise TypeError(f"{who}: cache_hint is a priority name or a CachePolicy, got {type(hint).__name__}")
