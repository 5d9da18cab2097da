"""Cluster launch control (PTX ISA #parallel-synchronization-and-communication-instructions-clusterlaunchcontrol):
the PTX interpreter's decoder of ``clusterlaunchcontrol.try_cancel`` (an issue record: the response's and the
mbarrier's shared addresses) and its evaluation of ``query_cancel`` on a 128-bit response register, in the response
encoding of ``arch.sm100.clc`` (ptxas's decode [I]); ``pycute.sim.clc`` runs a grid's launch queue on them."""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

from ...arch.sm100.clc import decode_response
from ...errors import EmulationError

__all__ = ["ClcIssue", "decode", "query"]


class ClcIssue(NamedTuple):
    """One ``try_cancel``: its PTX, the response's shared address and the mbarrier's."""

    ptx: str
    response: int
    mbar: int


def decode(op: str, args: list, value: Callable[[str], int]) -> ClcIssue:
    """``clusterlaunchcontrol.try_cancel... [response], [mbar]`` as its issue record."""
    if len(args) != 2:
        raise EmulationError(f"{op}: expected [response], [mbar], got {args}")
    response, mbar = (value(re.sub(r"[\[\]\s]", "", a)) & 0xFFFFFFFF for a in args)
    if response % 16:
        raise EmulationError(f"{op}: the response's shared address {response:#x} is not 16-byte aligned (PTX: the "
                             f"16-byte response is naturally aligned)")
    return ClcIssue(op, response, mbar)


def query(op: str, args: list, value: Callable[[str], int]) -> dict[str, int]:
    """The registers ``clusterlaunchcontrol.query_cancel`` writes: ``is_canceled`` a predicate, ``get_first_ctaid``
    the cancelled cluster's first CTA id (``.v4``: x, y, z and a discarded fourth; ``::x`` etc.: one)."""
    canceled, ctaid = decode_response(value(args[-1].strip()))
    if ".is_canceled" in op:
        return {args[0].strip(): int(canceled)}
    if ".get_first_ctaid.v4" in op:
        regs = [r.strip() for r in args[0].strip("{} ").split(",")]
        return {r: v for r, v in zip(regs, (*ctaid, 0)) if r != "_"}
    m = re.search(r"get_first_ctaid::([xyz])", op)
    if m is None:
        raise EmulationError(f"{op}: a query_cancel outside is_canceled and get_first_ctaid")
    return {args[0].strip(): ctaid["xyz".index(m.group(1))]}
