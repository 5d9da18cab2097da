"""Cluster launch control (PTX ISA #parallel-synchronization-and-communication-instructions-clusterlaunchcontrol,
PTX 8.6, sm_100 and later), as data.

``clusterlaunchcontrol.try_cancel`` asks, asynchronously, to cancel the launch of a cluster that has not started;
it writes a 16-byte response to shared memory and performs a ``complete_tx`` of those 16 bytes on an mbarrier (the
caller arms it with ``expect_tx``). A success response holds the first CTA id of the cancelled cluster -- no other
success in the grid holds it -- so the running CTA computes that cluster's tiles: a dynamic persistent scheduler
whose work follows the launch order. After a CTA has observed a failed response, a further ``try_cancel`` is
undefined. ``query_cancel`` decodes the response: ``is_canceled`` (a predicate) and ``get_first_ctaid``.

The response is opaque in the PTX ISA. ``RESPONSE_FIELDS`` is the decode ptxas 13 emits for sm_100a (read from the
SASS of the two queries: bit 64 is ``is_canceled``, bits 0-31, 32-47 and 48-63 the first CTA's x, y and z) [I: ptxas's
decode, never run -- no Blackwell GPU was available]; pycute's emulator writes responses in it and its interpreter
decodes them so, which a ptxas of another version could contradict (tests/pipeline re-reads the SASS).
"""
from __future__ import annotations

import attrs

from ...errors import EmulationError
from .targets import TCGEN05_TARGETS

__all__ = ["CLC_TARGETS", "RESPONSE_BYTES", "TRY_CANCEL_PTX", "TRY_CANCEL_MULTICAST_PTX", "QUERY_IS_CANCELED_PTX",
           "QUERY_FIRST_CTAID_PTX", "TRY_CANCEL_SASS", "ResponseField", "RESPONSE_FIELDS", "encode_response",
           "decode_response"]

#: Targets with cluster launch control pycute compiles for (the ``.multicast::cluster::all`` form needs the
#: architecture-specific ``a`` targets).
CLC_TARGETS = TCGEN05_TARGETS
#: The response: 16 bytes, 16-byte aligned, in the issuing CTA's shared memory.
RESPONSE_BYTES = 16

TRY_CANCEL_PTX = "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128"
#: The form that writes the response (and completes the bytes) in every CTA of the issuing cluster.
TRY_CANCEL_MULTICAST_PTX = ("clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes"
                            ".multicast::cluster::all.b128")
QUERY_IS_CANCELED_PTX = "clusterlaunchcontrol.query_cancel.is_canceled.pred.b128"
QUERY_FIRST_CTAID_PTX = "clusterlaunchcontrol.query_cancel.get_first_ctaid.v4.b32.b128"
#: What ptxas 13 assembles try_cancel to on sm_100a (``.SELFCAST``; the multicast form ``.BROADCAST`` [I]).
TRY_CANCEL_SASS = "UGETNEXTWORKID"


@attrs.frozen
class ResponseField:
    """Bits ``[lo, lo + width)`` of the 128-bit response."""

    name: str
    lo: int
    width: int


RESPONSE_FIELDS = (ResponseField("x", 0, 32), ResponseField("y", 32, 16), ResponseField("z", 48, 16),
                   ResponseField("is_canceled", 64, 1))


def encode_response(canceled: bool, ctaid: tuple[int, int, int] = (0, 0, 0)) -> int:
    """The 128-bit response (as an int) of a try_cancel that did (``canceled``, with the cluster's first CTA id) or
    did not cancel a launch, in ptxas's decode."""
    values = {"x": ctaid[0], "y": ctaid[1], "z": ctaid[2], "is_canceled": int(canceled)} if canceled else \
        {"is_canceled": 0}
    out = 0
    for f in RESPONSE_FIELDS:
        v = values.get(f.name, 0)
        if not 0 <= v < 1 << f.width:
            raise EmulationError(f"clusterlaunchcontrol response: {f.name} = {v} does not fit {f.width} bits")
        out |= v << f.lo
    return out


def decode_response(response: int) -> tuple[bool, tuple[int, int, int]]:
    """``(is_canceled, (x, y, z))`` of a 128-bit response, as the two queries decode it."""
    field = {f.name: (response >> f.lo) & ((1 << f.width) - 1) for f in RESPONSE_FIELDS}
    return bool(field["is_canceled"]), (field["x"], field["y"], field["z"])
