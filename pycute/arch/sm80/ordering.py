"""Ordering global memory between CTAs (PTX ISA #memory-consistency-model): the forms a reduction across CTAs uses
(the split-K fixup, ``pipeline.split_k``). A CTA's threads store their partials, meet at a barrier, and one thread
arrives with a release-acquire atomic at GPU scope: the barrier orders the other threads' stores before it and the
release is cumulative, so a CTA whose later atomic reads the count acquires every partial stored before each
arrival; its barrier after the atomic extends that to all its threads (#memory-consistency-model,
"causality order"). The partials move through L2 (``.cg``: an SM's L1 is not coherent with other SMs' stores)."""
from __future__ import annotations

__all__ = ["ARRIVE_PTX", "RESET_PTX", "PARTIAL_STORE_PTX", "PARTIAL_LOAD_PTX", "BARRIER_OR_PTX"]

#: One arrival on a counter in global memory, returning the count before it (#parallel-synchronization-and-
#: communication-instructions-atom; ``.acq_rel`` and ``.gpu`` from sm_70).
ARRIVE_PTX = "atom.add.acq_rel.gpu.global.u32"
#: The counter back to zero by the last arrival: no arrival of the launch is left, the next launch is stream-ordered.
RESET_PTX = "st.relaxed.gpu.global.u32"
#: A thread's four f32 partial values, cached in L2 only (#data-movement-and-conversion-instructions-st, -ld).
PARTIAL_STORE_PTX = "st.global.cg.v4.f32"
PARTIAL_LOAD_PTX = "ld.global.cg.v4.f32"
#: A named barrier over ``threads`` threads that also ORs a predicate across them (#parallel-synchronization-and-
#: communication-instructions-bar): how the arriving thread tells its part whether it was last.
BARRIER_OR_PTX = "bar.red.or.pred"
