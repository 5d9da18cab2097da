"""The result of make_pipeline: a ring of shared-memory stages, the roles that fill and drain it, and the barriers
between them -- every count, byte total and phase derived from the roles and the copy plans, never typed.

A pipeline of ``stages`` stages has a *full* barrier per stage (the producer's loads, or its arrivals, complete it:
the consumer may read) and, unless the consumers release by a CTA / cluster barrier, an *empty* barrier per stage
(the consumers' releases complete it: the producer may refill). Fill ``f`` (0, 1, ...) lives in stage ``f % stages``;
its consumers wait for the full barrier's phase ``f // stages`` and the producer's refill ``f + stages`` waits for
the empty barrier's phase ``f // stages``. A role keeps that bookkeeping in one ``pycute_pipeline_state`` (stage
index and phase bit; ``advance()``), started by the generated ``<name>_producer_start`` / ``<name>_consumer_start``:
no caller computes a parity (CUTLASS's ``PipelineState``; PTX ISA
#parallel-synchronization-and-communication-instructions-mbarrier-test-wait-try-wait).
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from ..arch.convention import WARPGROUP_WARPS, Caller, Convention
from ..arch.sm90.mbarrier import ARRIVALS, MBARRIER_BYTES, ArrivalKind
from ..arch.sm90.warp import WARP_THREADS
from ..copy.cp_async.plan import CpAsyncPlan
from ..copy.dsmem.plan import DsmemPlan
from ..copy.tma.plan import TmaPlan
from ..views import view
from .rings import rename_stage, ring_view

__all__ = ["Release", "ProducerKind", "Producer", "Consumer", "BarrierInit", "PipelineFunction", "PipelinePlan",
           "caller_threads"]

#: How consumers give a stage back: ``arrive`` (each consumer arrives on the empty barrier of every CTA whose
#: producer writes the stage), ``commit`` (the MMA thread's ``tcgen05.commit``: one arrival once its MMAs have read
#: the stage), ``sync`` (no empty barrier: a CTA or cluster barrier the kernel runs orders the refill).
Release = Literal["arrive", "commit", "sync"]
#: How the producer fills a stage: ``tma`` (TMA or bulk loads: one thread arms the full barrier with the stage's
#: bytes), ``cp_async`` (every copying thread's ``cp.async.mbarrier.arrive.noinc``), ``dsmem`` (a peer CTA's DSMEM
#: copy; the receiving CTA arms its own barrier), ``arrive`` (threads store to shared memory, fence for the async
#: proxy and arrive), ``commit`` (``tcgen05.commit`` after tcgen05 operations, e.g. an MMA filling an accumulator).
ProducerKind = Literal["tma", "cp_async", "dsmem", "arrive", "commit"]


def caller_threads(caller: Caller, count: int = 1) -> int:
    """Threads that make one call of ``caller`` (``count`` for ``threads``)."""
    return {"warp": WARP_THREADS, "warpgroup": WARPGROUP_WARPS * WARP_THREADS, "threads": count,
            "warps": count * WARP_THREADS}.get(caller, 1)


@attrs.frozen
class Producer:
    """The role that fills stages: its ``kind``, who calls its functions (``caller``), how many callers of that kind
    per CTA (``count``: threads for ``cp_async`` / ``arrive`` with ``threads``), the MMA's ``cta_group`` for a
    ``commit`` producer (2: the even CTA of a pair fills both CTAs' stages) and, for ``dsmem``, which CTA its copies
    land in (rank + ``peer``, modulo the cluster)."""

    kind: ProducerKind
    caller: Caller = "elected"
    count: int = 1
    cta_group: int = 1
    peer: int = 0

    @property
    def arrivals(self) -> int:
        """Arrivals one CTA's producer makes on a full barrier per fill (besides a TMA arm)."""
        if self.kind == "cp_async":
            return self.count
        if self.kind == "arrive":
            return _arrivals(self.caller, self.count)
        return 1 if self.kind == "commit" else 0

    @property
    def convention(self) -> Convention:
        return Convention(self.caller, caller_threads(self.caller, self.count))


#: What fills a stage's full barrier, per producer kind.
_FULL_SIGNALS: dict[ProducerKind, tuple[ArrivalKind, ...]] = {
    "tma": ("expect_tx", "complete_tx"), "dsmem": ("expect_tx", "complete_tx"), "cp_async": ("cp_async",),
    "arrive": ("arrive",), "commit": ("commit",)}


def _signal_words(kind: ArrivalKind) -> str:
    fact = ARRIVALS[kind]
    what = " + ".join(([f"{fact.arrivals} arrival"] if fact.arrivals else []) + (["bytes"] if fact.tx else []))
    return f"{what}{' once the operations complete' if fact.asynchronous else ''} (PTX ISA {fact.section})"


def _arrivals(caller: Caller, count: int) -> int:
    """Arrivals ``count`` callers make when each thread, or one elected lane per warp, arrives."""
    if caller == "threads":
        return count
    return count * (WARPGROUP_WARPS if caller == "warpgroup" else 1)


@attrs.frozen
class Consumer:
    """The role that drains stages: who calls its functions (``caller``: ``elected``, ``warp``, ``warpgroup`` or
    ``threads``), how many such callers per CTA (``count``: 8 warps, 2 warpgroups, 128 threads), how it releases a
    stage (``release``) and, for a ``commit`` release, the MMA's ``cta_group`` (2: the even CTA's MMA consumes the
    stages of both CTAs of the pair and its commit releases both). A ``warp`` or ``warpgroup`` caller releases with
    one elected lane per warp after ``__syncwarp``: one arrival per warp. ``turns`` > 1: that many groups of
    ``count`` callers take the ring's tiles in turn (a ping-pong of warpgroups, each skipping the others' fills):
    a group waits for its turn (named barrier ``turn_barrier`` + its index) before its first wait on a tile and
    passes it on once it has waited for the tile's last stage, so no group waits on a stage more than one phase
    ahead of it (a parity wait tells apart only the last two phases)."""

    caller: Caller = "warp"
    count: int = 1
    release: Release = "arrive"
    cta_group: int = 1
    turns: int = 1
    turn_barrier: int = 8

    @property
    def arrivals(self) -> int:
        """Arrivals one CTA's consumers make per release, on each CTA they release to."""
        if self.release == "commit":
            return 1
        return 0 if self.release == "sync" else _arrivals(self.caller, self.count)

    @property
    def convention(self) -> Convention:
        return Convention(self.caller, caller_threads(self.caller, self.count))


@attrs.frozen
class BarrierInit:
    """One CTA's barrier of a stage: ``mbarrier.init``'s count and the bytes the arm expects per phase."""

    arrivals: int
    tx: int = 0


@attrs.frozen
class PipelineFunction:
    """A generated function: its name, the role that calls it, its calling convention and what it does."""

    name: str
    role: str
    convention: Convention
    does: str


@attrs.frozen(repr=False)
class PipelinePlan:
    """A validated pipeline. ``loads`` are the producer's copy plans, each over the ring's run-time stage index
    (``(name, plan)``); ``full`` / ``empty`` are the barrier initialisations per CTA rank of the cluster (``empty``
    is empty for a ``sync`` release); ``producer_start`` / ``consumer_start`` the phase bits the roles' states start
    at; ``smem_bytes`` where the rings end from the buffer base (they begin at ``start``, after the rings of the
    pipelines it was placed after, whose barriers take ``before`` bytes), within ``capacity`` less ``reserve`` and
    the barriers."""

    name: str
    arch: str
    stages: int
    ctas: int
    producer: Producer
    consumer: Consumer
    loads: tuple[tuple[str, Any], ...]
    full: tuple[BarrierInit, ...]
    empty: tuple[BarrierInit, ...]
    relay: bool
    producer_start: int
    consumer_start: int
    smem_bytes: int
    stage_bytes: tuple[tuple[str, int, int], ...]        # (load, ring offset, bytes per stage) per load
    reserve: int
    capacity: int
    chosen: str                                          # how the stage count was chosen
    rings: tuple[tuple[str, Any], ...] = ()              # (load, its staged tile) for the rings the pipeline laid out
    start: int = 0                                       # where its rings begin (after earlier pipelines' rings)
    before: int = 0                                      # the barrier bytes of the pipelines placed before it

    VARIANT: ClassVar[str] = "pipeline"

    @property
    def barrier_words(self) -> int:
        """64-bit words of the barrier array the functions take (``full[stages]`` then ``empty[stages]``)."""
        return self.stages * (2 if self.empty else 1)

    @property
    def barrier_bytes(self) -> int:
        return self.barrier_words * MBARRIER_BYTES

    @property
    def expect_tx(self) -> int:
        """The bytes the even (or only) CTA's full barrier expects per phase."""
        return self.full[0].tx

    def barrier_names(self) -> tuple[str, ...]:
        """The barrier array's words by name (``mainloop.full[0]``, ..., ``mainloop.empty[0]``, ...): what a
        whole-kernel run names them by (``pycute.interp.run_kernel(barriers=...)``)."""
        kinds = ("full", "empty") if self.empty else ("full",)
        return tuple(f"{self.name}.{k}[{s}]" for k in kinds for s in range(self.stages))

    def leader(self, cta: int) -> int:
        """The CTA that issues a pair's MMA (the even one)."""
        return cta & ~1

    @property
    def multicast(self) -> bool:
        """Whether a load writes every CTA of the cluster (TMA ``.multicast::cluster``)."""
        return any(isinstance(plan, TmaPlan) and plan.multicast is not None for _, plan in self.loads)

    def deliveries(self, cta: int) -> tuple[tuple[int, int, int, int], ...]:
        """``(load, data CTA, barrier CTA, bytes)`` per copy CTA ``cta``'s producer issues per fill: where the data
        lands and which CTA's full barrier counts its bytes (0 for cp.async, which arrives instead). A multicast
        load lands its slice in every CTA, a pair load completes on the even CTA's barrier, a DSMEM copy lands in
        the peer."""
        out = []
        for i, (_, load) in enumerate(self.loads):
            if isinstance(load, CpAsyncPlan):
                out.append((i, cta, cta, 0))
            elif isinstance(load, DsmemPlan):
                peer = (cta + self.producer.peer) % self.ctas
                out.append((i, peer, peer, load.expect_tx))
            elif isinstance(load, TmaPlan) and load.multicast is not None:
                out += [(i, t, t, load.expect_tx // self.ctas) for t in range(self.ctas)]
            elif isinstance(load, TmaPlan) and load.atom.pair:
                out.append((i, cta, self.leader(cta), load.expect_tx // 2))
            else:
                out.append((i, cta, cta, load.expect_tx))
        return tuple(out)

    def producer_ctas(self) -> tuple[int, ...]:
        """The CTAs that run the producer role (a pair's commit producer: the even CTA only)."""
        if self.producer.kind == "commit" and self.producer.cta_group == 2:
            return tuple(range(0, self.ctas, 2))
        return tuple(range(self.ctas))

    def consumer_ctas(self) -> tuple[int, ...]:
        """The CTAs that run the consumer role (a pair's MMA consumer: the even CTA only)."""
        if self.consumer.release == "commit" and self.consumer.cta_group == 2:
            return tuple(range(0, self.ctas, 2))
        return tuple(range(self.ctas))

    def writers(self, cta: int) -> tuple[int, ...]:
        """The CTAs whose producers write CTA ``cta``'s stages."""
        if self.producer.kind in ("arrive", "commit"):
            return tuple(w for w in self.producer_ctas() if cta in self.commit_targets(w))
        return tuple(sorted({w for w in self.producer_ctas() for _, data, _, _ in self.deliveries(w) if data == cta}))

    def readers(self, cta: int) -> tuple[int, ...]:
        """The CTAs whose stages CTA ``cta``'s consumers read (a pair's MMA: both CTAs of the pair)."""
        if self.consumer.release == "commit" and self.consumer.cta_group == 2:
            return (cta, cta + 1)
        return (cta,)

    def release_targets(self, cta: int) -> tuple[int, ...]:
        """The CTAs whose empty barriers a release by CTA ``cta``'s consumers arrives on: the writers of every
        stage it read (none for a ``sync`` release)."""
        if self.consumer.release == "sync":
            return ()
        return tuple(sorted({w for r in self.readers(cta) for w in self.writers(r)}))

    def commit_targets(self, cta: int) -> tuple[int, ...]:
        """The CTAs whose full barriers a ``commit`` / ``arrive`` / ``cp_async`` producer of CTA ``cta`` arrives
        on."""
        if self.producer.kind == "commit" and self.producer.cta_group == 2:
            return (cta, cta + 1)
        return (cta,)

    def load(self, name: str) -> Any:
        """The staged copy plan of load ``name``."""
        for n, plan in self.loads:
            if n == name:
                return plan
        raise KeyError(f"pipeline {self.name!r} has no load {name!r} (its loads: "
                       f"{', '.join(n for n, _ in self.loads) or 'none'})")

    def ring(self, name: str, view: Any = None, index: str | None = None) -> Any:
        """The shared tile load ``name`` fills, over the ring the pipeline laid out (a run-time index ``stage``):
        what the consumers' plans -- a store, an MMA's descriptors -- are planned over. ``view``: another whole
        tile of the same bytes (the 4-bit elements a TMA load moves as bytes, the SF layout a flat bulk copy
        fills), placed and staged as the load's ring (``rings.ring_view``). ``index`` renames the stage index (an
        MMA reading two pipelines' rings, Q's and K's, takes each stage by its own name)."""
        for n, ring in self.rings:
            if n == name:
                out = ring if view is None else ring_view(self.name, name, ring, view)
                return out if index is None else rename_stage(out, index)
        self.load(name)
        raise KeyError(f"pipeline {self.name!r}: load {name!r} came over its own ring; plan over that ring")

    def cuda(self) -> str:
        """The loads' issuing functions (``<name>_<load>``), the pipeline's constants, its state type and its
        functions (``<name>_init``, ``_producer_acquire``, ``_consumer_wait``, ...), each with its convention."""
        return str(view("cuda", self))

    def verify(self, fills: int | None = None) -> Any:
        """Model-check the protocol (``pycute.sim.pipeline.check_pipeline``): every interleaving of the roles over
        ``fills`` fills (default: enough to wrap every stage twice) ends with no deadlock, no stage read before its
        copies landed and none refilled before its release. Returns the check's report."""
        return view("verify", self, fills=fills)

    @property
    def functions(self) -> tuple[PipelineFunction, ...]:
        """The generated functions, each with the role that calls it and its calling convention (data an
        interpreter checks call sites against)."""
        n, p, c = self.name, self.producer, self.consumer
        any_thread = Convention("any", 1, "none")
        elected = Convention("elected", 1)
        out = [PipelineFunction(f"{n}_producer_start", "producer", any_thread, "the producer's first state (phase "
                                f"bit {self.producer_start}: every stage starts free)"),
               PipelineFunction(f"{n}_consumer_start", "consumer", any_thread,
                                f"the consumers' first state (phase bit {self.consumer_start})"),
               PipelineFunction(f"{n}_init", "init", elected, "initialises every barrier with its derived count"),
               PipelineFunction(f"{n}_producer_acquire", "producer", p.convention,
                                ("waits for the stage's release, " if self.empty else "")
                                + ("arms its full barrier with the stage's bytes, " if self.arms else "")
                                + "returns the full barrier's address (the loads' mbar)")]
        if self.fills:
            out.append(PipelineFunction(f"{n}_fill", "producer", p.convention, "the producer's whole fill of its "
                                        "next stage: acquires it, issues every load (one lane), advances the state"))
        if p.kind in ("arrive", "commit"):
            out.append(PipelineFunction(f"{n}_producer_commit", "producer", p.convention,
                                        "signals the stage full (" + ("fence for the async proxy, then arrive"
                                                                      if p.kind == "arrive" else "tcgen05.commit")
                                        + ")"))
        out.append(PipelineFunction(f"{n}_consumer_wait", "consumer", c.convention, "waits until the stage is full"))
        if self.empty:
            out.append(PipelineFunction(f"{n}_consumer_release", "consumer", c.convention,
                                        "releases the stage to the CTA(s) whose producers fill it ("
                                        + ("tcgen05.commit" if c.release == "commit" else "mbarrier arrivals") + ")"))
            out.append(PipelineFunction(f"{n}_consumer_advance", "consumer", c.convention,
                                        "releases the stage and moves the state to the next"))
        if self.relay:
            out.append(PipelineFunction(f"{n}_relay", "relay", c.convention, "in the odd CTA of a pair, called as "
                                        "the consumer is: waits for its own stage to land, then arrives on the even "
                                        "CTA's full barrier"))
        if c.turns > 1:
            out.append(PipelineFunction(f"{n}_turn_wait", "consumer", c.convention, "waits until the previous group "
                                        "has waited for its tile's last stage (group `group`'s turn)"))
            out.append(PipelineFunction(f"{n}_turn_pass", "consumer", c.convention, "gives the turn to the next group "
                                        "(after this group's wait for its tile's last stage)"))
        return tuple(out)

    def signals(self) -> dict[str, tuple[ArrivalKind, ...]]:
        """The kinds of signal each barrier receives (``arch.sm90.mbarrier.ARRIVALS``)."""
        full = _FULL_SIGNALS[self.producer.kind]
        remote = any(t != c for c in self.consumer_ctas() for t in self.release_targets(c))
        empty: tuple[ArrivalKind, ...] = () if not self.empty else ("commit",) if self.consumer.release == "commit" \
            else ("remote_arrive",) if remote else ("arrive",)
        return {"full": full + (("remote_arrive",) if self.relay else ()), "empty": empty}

    @property
    def fills(self) -> bool:
        """Whether ``<name>_fill`` is generated: every load is a TMA load (its map and coordinates the fill's)."""
        return bool(self.loads) and all(isinstance(p, TmaPlan) for _, p in self.loads)

    @property
    def arms(self) -> bool:
        """Whether the producer arms full barriers with expect_tx (TMA, bulk and DSMEM loads)."""
        return self.producer.kind in ("tma", "dsmem")

    def explain(self) -> str:
        p, c = self.producer, self.consumer
        lines = [f"pipeline {self.name!r}: {self.stages} stages ({self.chosen}), {self.arch}"
                 + (f", a cluster of {self.ctas} CTAs" if self.ctas > 1 else "")]
        for load, offset, size in self.stage_bytes:
            lines.append(f"  load {load:<10} {size} B per stage at +{offset} B ({self.load(load)!r})")
        if self.loads:
            earlier = f" + earlier pipelines' barriers {self.before} B" if self.before else ""
            rings = f"rings [{self.start}, {self.smem_bytes}) B after earlier rings" if self.start else \
                f"rings {self.smem_bytes} B"
            lines.append(f"  shared      {rings} + barriers {self.barrier_bytes} B{earlier} + reserve {self.reserve} "
                         f"B = {self.smem_bytes + self.barrier_bytes + self.before + self.reserve} B of {self.capacity} B")
        lines.append(f"  producer    {p.kind}, called by {p.convention.who}" + (
            f" in CTAs {list(self.producer_ctas())}" if len(self.producer_ctas()) < self.ctas else ""))
        lines.append(f"  consumer    releases by {c.release}, called by {c.convention.who} x {c.count}" + (
            f" in CTAs {list(self.consumer_ctas())}" if len(self.consumer_ctas()) < self.ctas else ""))
        for what, inits in (("full", self.full), ("empty", self.empty)):
            for rank, b in enumerate(inits):
                if len(set(inits)) == 1 and rank:
                    break
                who = f"CTA {rank}" if len(set(inits)) > 1 else "every CTA"
                lines.append(f"  {what:<5} [{self.stages}] {who}: {b.arrivals} arrival(s)"
                             + (f" + {b.tx} B" if b.tx else "") + " per phase")
        if not self.empty:
            lines.append("  empty       none: the kernel's CTA / cluster barrier orders each refill after the reads")
        for what, kinds in self.signals().items():
            lines += [f"  {what + ' by':<11} {k}: " + _signal_words(k) for k in kinds]
        for rank in self.consumer_ctas()[:2]:
            if self.release_targets(rank) and self.release_targets(rank) != (rank,):
                lines.append(f"  release     CTA {rank}'s consumers arrive on the empty barriers of CTAs "
                             f"{list(self.release_targets(rank))}")
        if self.relay:
            lines.append("  relay       the odd CTA of each pair waits for its stage and arrives on the even CTA's "
                         "full barrier")
        lines.append(f"  phases      fill f in stage f % {self.stages}; the producer starts at phase bit "
                     f"{self.producer_start} (every stage free), the consumers at {self.consumer_start}; advance() "
                     f"flips the bit after stage {self.stages - 1}")
        lines.append("  functions")
        lines += [f"    {f.name:<28} {f.role:<9} {f.convention.who}: {f.does}" for f in self.functions]
        return "\n".join(lines)

    def __repr__(self) -> str:
        loads = ", ".join(n for n, _ in self.loads)
        return (f"PipelinePlan({self.name!r}, {self.stages} stages, {self.producer.kind} -> {self.consumer.release}"
                f"{', loads ' + loads if loads else ''}, full {self.full[0].arrivals} arrival(s) + "
                f"{self.full[0].tx} B" + (f", empty {self.empty[0].arrivals}" if self.empty else "")
                + (f", {self.ctas} CTAs" if self.ctas > 1 else "") + ")")
