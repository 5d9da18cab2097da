"""Cluster launch control in a whole-kernel run (sm_100a; PTX ISA #parallel-synchronization-and-communication-
instructions-clusterlaunchcontrol).

With ``run_kernel(resident=k)`` only ``k`` clusters run at once; the others wait to launch, in grid order, and start
as running clusters exit. ``clusterlaunchcontrol.try_cancel`` cancels the next cluster not yet launched (it never
runs) and, asynchronously, writes the 16-byte response -- its first CTA's id, or a failure once none is left -- to
the issuing CTA's shared memory (``.multicast::cluster::all``: every CTA of its cluster's, at the same offset) and
completes those 16 bytes on the mbarrier there, landing as a TMA load does. ``query_cancel`` decodes a response
register (``arch.sm100.clc``'s encoding: ptxas's decode [I]). A request after a CTA received a failed response is
undefined, so an error."""
from __future__ import annotations

import re

import numpy as np

from ..arch.sm100.clc import RESPONSE_BYTES, decode_response, encode_response
from ..errors import CompileError, EmulationError
from ..sim.executors.bulk import CLUSTER_WINDOW
from .translate import RUNTIME_EMITTERS, Code, KernelCtx
from .front import Instr
from .operands import dst, src, vector
from .rtemit_sync import KERNEL_EXECUTORS, _issue

__all__ = ["cancel_next"]


def cancel_next(world) -> tuple[int, int, int] | None:
    """Cancel the next cluster not yet launched: its first CTA's id (None when every cluster has launched)."""
    if not world.pending:
        return None
    cluster = world.pending.popleft()
    for cta in cluster.ctas:
        for th in cta.threads:
            th.state = 2                               # EXITED: it never runs
    world.cancelled.append(cluster)
    return cluster.ctas[0].ctaid


def _try_cancel(cta, th, rec, site, R: list) -> None:
    if cta.clc_failed:
        raise EmulationError(f"{th!r} requests a cancellation after {cta.name} received a failed response (PTX ISA: "
                             f"a further clusterlaunchcontrol.try_cancel is undefined)")
    first = cancel_next(cta.world)
    response = encode_response(first is not None, first or (0, 0, 0))
    data = response.to_bytes(RESPONSE_BYTES, "little")
    dests = cta.cluster.ctas if ".multicast::cluster::all" in rec.ptx else [cta]
    bars = [d.mbarrier_for(rec.mbar % CLUSTER_WINDOW, d) for d in dests]
    op = cta.new_op(th, "clusterlaunchcontrol.try_cancel response", site)
    for d, bar in zip(dests, bars):
        cta.touch(op, th, d, np.arange(rec.response, rec.response + RESPONSE_BYTES, dtype=np.int64), True, bar)

    def land() -> None:
        for d in dests:
            d.smem_view[rec.response:rec.response + RESPONSE_BYTES] = data
            d.clc_failed = d.clc_failed or first is None
    op.apply = land
    cta._in_flight(op, [(bar, RESPONSE_BYTES) for bar in bars])


def _query(ins: Instr, ctx: KernelCtx) -> Code:
    """``query_cancel``: the response register decoded (``is_canceled``, ``get_first_ctaid`` ``.v4`` or one axis)."""
    decode = ctx.helper(decode_response, "clc")
    value = f"{decode}({src(ctx, ins.args[-1], 128)})"
    if ".is_canceled" in ins.op:
        return Code((f"{dst(ctx, ins.args[0])} = {value}[0]",))
    if ".get_first_ctaid.v4" in ins.op:
        regs = vector(ins.args[0])
        return Code((f"_c = {value}[1]",) + tuple(f"{dst(ctx, r)} = _c[{k}]" for k, r in enumerate(regs[:3])
                                                    if r != "_"))
    m = re.search(r"get_first_ctaid::([xyz])", ins.op)
    if m is None:
        raise CompileError(f"{ins.op}: a query_cancel outside is_canceled and get_first_ctaid")
    return Code((f"{dst(ctx, ins.args[0])} = {value}[1][{'xyz'.index(m.group(1))}]",))


def _clusterlaunchcontrol(ins: Instr, mods: list[str], ctx: KernelCtx) -> Code:
    if mods[0] == "try_cancel":
        return _issue(ins, ctx, "clusterlaunchcontrol.try_cancel")
    if mods[0] == "query_cancel":
        return _query(ins, ctx)
    raise CompileError(f"clusterlaunchcontrol.{mods[0]} is outside the interpreted subset")


RUNTIME_EMITTERS["clusterlaunchcontrol"] = _clusterlaunchcontrol
KERNEL_EXECUTORS["clusterlaunchcontrol.try_cancel"] = (_try_cancel, False)
